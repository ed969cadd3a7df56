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
