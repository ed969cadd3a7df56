#!/usr/bin/env bash
# GRPO on telcoenv with verl 0.9 (needs GPUs and verl's vllm extra; not run by the test suite).
# First: python examples/verl/prepare_data.py --out "$DATA"
# Every key below exists in verl 0.9.1's trainer config; tune sizes and the model to your GPUs.
set -euo pipefail
DATA=${1:-telcoenv_verl}
MODEL=${MODEL:-Qwen/Qwen3-4B}
python3 -m verl.trainer.main_ppo \
  algorithm.adv_estimator=grpo \
  data.train_files="$DATA/train.parquet" \
  data.val_files="$DATA/val.parquet" \
  data.return_raw_chat=True \
  data.train_batch_size=32 \
  data.max_prompt_length=8192 \
  data.max_response_length=16384 \
  actor_rollout_ref.model.path="$MODEL" \
  actor_rollout_ref.rollout.name=vllm \
  actor_rollout_ref.rollout.mode=async \
  actor_rollout_ref.rollout.n=8 \
  actor_rollout_ref.rollout.multi_turn.enable=True \
  actor_rollout_ref.rollout.multi_turn.format=hermes \
  actor_rollout_ref.rollout.multi_turn.tool_config_path="$DATA/telcoenv_tools.yaml" \
  actor_rollout_ref.rollout.multi_turn.max_tool_response_length=4096 \
  actor_rollout_ref.rollout.multi_turn.max_parallel_calls=4 \
  actor_rollout_ref.rollout.agent.agent_loop_config_path="$DATA/telcoenv_agent_loop.yaml" \
  actor_rollout_ref.rollout.agent.default_agent_loop=telcoenv_agent \
  trainer.n_gpus_per_node="${GPUS:-8}" \
  trainer.nnodes=1 \
  trainer.total_epochs=1
