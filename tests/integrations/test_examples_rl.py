"""The RL examples run (short settings) and print what they promise."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import EXAMPLES
from tests.stub_openai import StubServer

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # each example runs in a subprocess


def _run(script: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_random_agent_runs_a_vector_env():
    out = _run("random_agent.py", "--num-envs", "3", "--steps", "25", "--seed", "1")
    assert "3 episodes started" in out
    assert out.count("episode over") >= 3 and "mean return" in out


def test_evaluate_openai_compatible_against_a_loopback_server():
    server = StubServer()
    try:
        out = _run(
            "evaluate_openai_compatible.py",
            "--model",
            "scripted",
            "--base-url",
            server.base_url,
            "--intents",
            "beam_misalignment",
            "--samples",
            "3",
        )
    finally:
        server.close()
    lines = [line for line in out.splitlines() if line.startswith("beam_misalignment #")]
    assert len(lines) == 3 and all("oss_query > " not in line or "SAS" in line for line in lines)
    # The scripted model reads the cell the engineer names (seed 2 names it; seeds 0 and 1
    # name the cluster and the place only, and it submits at once).
    assert "chain oss_query" in lines[2] and "(no tool call)" in lines[0]
    assert out.splitlines()[-1].startswith("MEAN")
