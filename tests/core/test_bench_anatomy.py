"""benchmarks/bench_anatomy.py reaches into the environment (it records the SQL statements of a
run and times functions by replacing them), so a change of those internals could break it
unseen: it runs here on a few episodes. Its figures are not checked, only that it measures."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT


@pytest.mark.slow  # a subprocess that loads the embedding model
def test_the_anatomy_benchmark_runs_and_its_parts_are_measured():
    command = ["benchmarks/bench_anatomy.py", "--episodes", "3", "--rounds", "1", "--json"]
    done = subprocess.run(
        [sys.executable, *command],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    parts = ["scenario_ms", "state_load_ms", "tool_bodies_ms", "verification_ms", "scoring_ms"]
    parts += ["generation_ms", "sql_ms", "sql_of_reset_ms", "episode_ms", "clocked_episode_ms"]
    parts += ["encoding_ms", "window_features_ms", "dense_head_ms", "episode_with_embedder_ms"]
    assert all(figures[name] > 0 for name in parts), figures
    # The recorded statements are an episode's: the reset's inserts and the tools' reads.
    assert figures["sql_statements_per_episode"] > 10
    assert figures["sql_of_reset_ms"] < figures["sql_ms"]
    assert figures["tool_steps_per_episode"] >= 1
