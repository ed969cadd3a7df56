"""A domain from another package plugs in through the ``telcoenv.domains`` entry point.

``tests/plugins`` holds ``telcoenv_fiber`` (a small home-fibre domain: its own intents and
blueprint as data, two tools with JSON specs, a subscriber as counterpart, a dict state) and the
``telcoenv_fiber-0.1.0.dist-info`` metadata that declares its entry point, which is exactly what
``pip install`` of such a package leaves on ``sys.path``. Nothing in ``telcoenv/`` names it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import PLUGINS, REPO_ROOT


def _python(code: str, *args: str) -> str:
    """Run ``code`` in a fresh interpreter that has the plug-in's folder on its path."""
    env = {**os.environ, "PYTHONPATH": str(PLUGINS)}
    done = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(PLUGINS)}
    code = "import sys; from telcoenv.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=300
    )


def test_the_core_does_not_name_the_plugin():
    core = REPO_ROOT / "telcoenv"
    assert not [p for p in core.rglob("*.py") if "fiber" in p.read_text(encoding="utf-8")]


@pytest.mark.slow  # telcoenv subprocesses
def test_make_check_env_and_an_episode_through_the_entry_point():
    out = _python(
        """
import json, telcoenv
from gymnasium.utils.env_checker import check_env
from telcoenv.domains import domain_names
names = [e.id for e in telcoenv.list_envs() if e.domain == "fiber"]
env = telcoenv.make("ont_offline", privileged=True, embedder=None)
check_env(telcoenv.make("fiber_access", embedder=None).unwrapped, skip_render_check=True)
_, info = env.reset(seed=3)
for call in info["privileged"]["gold_chain"]:
    env.step({"name": call["tool"], "arguments": call["arguments"]})
*_, info = env.step({"name": "submit_resolution",
                     "arguments": {"intent": "ONT offline", "summary": "rebooted"}})
print(json.dumps({"domains": list(domain_names()), "ids": names, "resolved": info["resolved"],
                  "sas": info["metrics"]["sas"], "start": env.unwrapped.trace.start_state}))
"""
    )
    result = json.loads(out)
    assert result["domains"] == ["network", "bss", "fiber"]
    assert result["ids"] == ["telcoenv/OntOffline-v0", "telcoenv/FiberAccess-v0"]
    assert result["resolved"] is True and result["sas"] == 1.0
    assert len(result["start"]["onts"]) == 3  # the trace keeps the domain's starting state


@pytest.mark.slow  # telcoenv subprocesses
def test_evaluate_and_report_run_the_plugin_domain(tmp_path):
    db = f"sqlite:///{tmp_path}/fiber.sqlite"
    grid = ["--samples", "2", "--lang", "en,ar", "--embedder", "none", "--db", db, "--quiet"]
    done = _cli("evaluate", "--agent", "oracle", "--domain", "fiber", "--run", "fib", *grid)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "4 episodes stored now (0 failed)" in done.stdout
    named = _cli(
        "evaluate",
        "--agent",
        "oracle",
        "--intents",
        "telcoenv/OntOffline-v0",
        "--run",
        "by-id",
        *grid,
    )
    assert named.returncode == 0, named.stderr[-2000:]
    report = _cli("report", "--db", db, "--run", "fib", "--format", "json")
    assert report.returncode == 0, report.stderr[-2000:]
    tables = json.loads(report.stdout)["runs"]["fib"]["domains"]["fiber"]
    assert {lang: row["n"] for lang, row in tables.items()} == {"en": 2, "ar": 2}
    assert all(row["resolved"] == 1.0 and row["sas"] == 1.0 for row in tables.values())
    shown = _cli("show", "ont_offline")
    assert shown.returncode == 0 and "ont_status -> reboot_ont" in shown.stdout


@pytest.mark.slow  # telcoenv subprocesses
def test_an_unknown_domain_names_the_known_ones():
    done = _cli("evaluate", "--agent", "oracle", "--domain", "fibre", "--samples", "1")
    assert done.returncode == 2 and "fiber" in done.stderr and "Traceback" not in done.stderr
