"""examples/train_trl_grpo.py runs a few GRPO steps on CPU, offline, with rewards from telcoenv."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from tests.conftest import EXAMPLES, REPO_ROOT

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # a training run in a subprocess

pytest.importorskip("trl")
pytest.importorskip("datasets")

SCRIPT = EXAMPLES / "train_trl_grpo.py"
STEP = re.compile(r"^step (\d+): reward=(\d+\.\d+) .*TelcoLoadBalancingNeeded=(\d+\.\d+)", re.M)
ROLLOUT = re.compile(r"^rollout: reward=(\d+\.\d+) tools=", re.M)


def run_example(*arguments: str) -> str:
    """Run the example offline in a subprocess; its standard output (it must succeed)."""
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, str(SCRIPT), *arguments],
        capture_output=True,
        text=True,
        timeout=600,
        env=environment,
        cwd=REPO_ROOT,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_grpo_example_runs_and_prints_rewards() -> None:
    stdout = run_example("--max-steps", "2")
    steps = STEP.findall(stdout)
    assert [int(step) for step, *_ in steps] == [1, 2], stdout
    for _, total, sas in steps:  # SAS in [0, 1], plus resolved_reward in {0, 1}
        assert 0.0 <= float(sas) <= 1.0 and 0.0 <= float(total) <= 2.0
    rollouts = [float(reward) for reward in ROLLOUT.findall(stdout)]
    assert len(rollouts) == 4 and all(0.0 <= reward <= 1.0 for reward in rollouts)


def test_grpo_example_draws_its_episodes_from_a_curriculum() -> None:
    """--curriculum: GRPOTrainer's rollouts play the curriculum's tasks and every one of them
    reaches the curriculum through curriculum_reward (2 steps x 4 rollouts)."""
    stdout = run_example("--max-steps", "2", "--curriculum", "--warmup-steps", "5")
    assert "curriculum_resolved=" in stdout
    [line] = re.findall(r"^curriculum: (.*)$", stdout, re.M)
    row = json.loads(line)
    assert row["intent"] == "load_balancing_needed" and row["episodes"] == 8
    assert row["rung_name"] in ("demonstration", "walkthrough")


def test_grpo_continues_an_sft_adapter_of_a_model_given_by_path(tmp_path) -> None:
    """The GPU recipe's path on the CPU: a model folder (--model) and the LoRA adapter that
    examples/train_sft_cpu.py wrote for it (--adapter), trained further by two GRPO steps and
    saved (--output-dir); only the adapter's weights train."""
    sys.path.insert(0, str(EXAMPLES))
    import _tiny_model
    import train_sft_cpu
    import train_trl_grpo

    from telcoenv.trajectories import write_trajectories

    experts = tmp_path / "experts.jsonl"
    write_trajectories(
        experts, samples=1, domains=("network",), langs=("en",),
        intents=["load_balancing_needed"], agents=["oracle"],
    )  # fmt: skip
    rows = [json.loads(line) for line in experts.read_text("utf-8").splitlines()]
    texts = [json.dumps(row["tools"]) for row in rows]
    texts += [json.dumps(m) for row in rows for m in row["messages"]]
    tokenizer = _tiny_model.build_tokenizer(texts)
    folder = tmp_path / "model"
    _tiny_model.build_model(tokenizer, seed=0).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    sft = tmp_path / "sft"
    argv = ["--model-dir", str(folder), "--trajectories", str(experts), "--out", str(sft)]
    assert train_sft_cpu.main([*argv, "--max-steps", "2", "--rank", "4"]) == 0

    out = tmp_path / "grpo"
    args = train_trl_grpo.parse_args(
        ["--model", str(folder), "--adapter", str(sft / "adapter"), "--max-steps", "2",
         "--max-completion-length", "256", "--output-dir", str(out)]
    )  # fmt: skip
    assert args.warmup_steps == 0  # a real model's warm start is its adapter
    trainer, _ = train_trl_grpo.train(args)
    assert trainer.state.global_step == 2
    trainable = [n for n, p in trainer.model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in name for name in trainable)
    saved = json.loads((out / "adapter_config.json").read_text())
    assert saved["r"] == 4 and (out / "adapter_model.safetensors").exists()


def test_the_recipe_refuses_what_it_cannot_do(capsys) -> None:
    sys.path.insert(0, str(EXAMPLES))
    import train_trl_grpo

    for argv, message in (
        (["--intents", "pci_collision,beam_misalignment"], "--curriculum"),
        (["--adapter", "runs/sft/adapter"], "--model"),
        (["--intents", "pci_collision,beam_misalignment", "--curriculum"], "one --intents"),
    ):
        with pytest.raises(SystemExit):
            train_trl_grpo.parse_args(argv)
        assert message in capsys.readouterr().err
