#!/usr/bin/env bash
# GRPO on telcoenv with verl 0.9 (needs GPUs and verl's vllm extra; not run by the test suite).
# First: python examples/verl/prepare_data.py --out "$DATA" --curriculum \
#          --intents load_balancing_needed,pci_collision,ho_failure_hotspot,beam_misalignment \
#          --lang en,ar --tool-set core --tool-format compact --embedder none
# Every key below exists in verl 0.9.1's trainer config. The defaults: Qwen2.5-Coder-1.5B-Instruct
# on one GPU, continuing the LoRA adapter of examples/train_sft_cpu.py when ADAPTER names one
# (rank 16, alpha 32) trained on the same MODEL. Sizes are a starting point, not measured.
set -euo pipefail
DATA=${1:-telcoenv_verl}
MODEL=${MODEL:-Qwen/Qwen2.5-Coder-1.5B-Instruct}
LORA=()
if [[ -n "${ADAPTER:-}" ]]; then
  LORA=(actor_rollout_ref.model.lora_rank=16 actor_rollout_ref.model.lora_alpha=32
        actor_rollout_ref.model.lora_adapter_path="$ADAPTER")
fi
python3 -m verl.trainer.main_ppo \
  algorithm.adv_estimator=grpo \
  data.train_files="$DATA/train.parquet" \
  data.val_files="$DATA/val.parquet" \
  data.return_raw_chat=True \
  data.train_batch_size="${BATCH:-16}" \
  data.max_prompt_length=4096 \
  data.max_response_length=8192 \
  actor_rollout_ref.model.path="$MODEL" \
  "${LORA[@]}" \
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
  trainer.n_gpus_per_node="${GPUS:-1}" \
  trainer.nnodes=1 \
  trainer.total_epochs=1
