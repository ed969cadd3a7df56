"""Batch evaluation: the grid, the results store, resume after SIGKILL, failures, reports."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from telcoenv.agents import UnknownAgentError, load_agent
from telcoenv.cli import main
from telcoenv.errors import UnknownIntentError
from telcoenv.evaluation.report import build_report, render
from telcoenv.evaluation.runner import RunConfig, build_grid, evaluate
from telcoenv.evaluation.store import ResultStore, StoreError
from tests.conftest import REPO_ROOT, evaluate_command, result_store, shared_results_url

SLOW_ORACLE = "tests.agents_for_tests:SlowOracle"


def test_grid_size_and_keys():
    grid = build_grid("all", samples=30, languages=("en", "ar"), conditions=(True, False))
    assert len(grid) == 49 * 30 * 2 * 2
    assert len({spec.key for spec in grid}) == len(grid)
    small = build_grid(["beam_misalignment", "PCI_COLLISION"], samples=2, languages=("ar",))
    assert len(small) == (2 + 3) * 2
    with pytest.raises(UnknownIntentError, match="unknown intent 'beam'"):
        build_grid(["beam"])


@pytest.mark.slow  # IRA and RA with the real multilingual model
def test_oracle_run_scores_the_maximum_and_resumes(tmp_path):
    store, _ = result_store(tmp_path)
    grid = build_grid(["coverage_hole", "slice_qos_degradation"], samples=3)
    config = RunConfig("oracle", {})
    first = evaluate(store, "oracle", grid, config)
    assert (first.stored, first.failed, first.skipped) == (len(grid), 0, 0)
    records = store.records(["oracle"])
    assert all(r["sas"] == 1.0 and r["ira"] == pytest.approx(1.0) for r in records)
    assert all(r["ra"] > 0.95 for r in records)
    again = evaluate(store, "oracle", grid, config)
    assert (again.stored, again.skipped) == (0, len(grid))
    assert len(store.records(["oracle"])) == len(grid)


@pytest.mark.slow  # waits out an episode timeout
def test_agent_failures_are_recorded_and_the_run_goes_on(tmp_path):
    store, _ = result_store(tmp_path)
    grid = build_grid(["coverage_hole"], samples=1, languages=("en",))
    for agent, expected in [
        ("Crashing", "HTTP 500"),
        ("Garbage", "unsupported_action"),
        ("Hanging", "timeout"),
    ]:
        config = RunConfig(
            f"tests.agents_for_tests:{agent}", {}, embedder=None, episode_timeout=1.0, max_steps=3
        )
        summary = evaluate(store, agent, grid, config)
        assert summary.stored == len(grid)
        records = store.records([agent], with_trace=True)
        if agent == "Garbage":  # garbage is an invalid action each step: truncated, scored
            assert all(r["status"] == "ok" and r["steps"] == 3 for r in records)
            trace = json.loads(records[0]["trace"])
            assert trace["actions"][0]["error_kind"] == expected
        else:
            assert all(r["status"] == "failed" and expected in r["error"] for r in records)


def test_bad_inputs_fail_at_once(tmp_path):
    with pytest.raises(StoreError, match="malformed database URL"):
        ResultStore("notaurl://")
    with pytest.raises(UnknownAgentError, match="unknown agent 'gpt-7'"):
        load_agent("gpt-7")
    with pytest.raises(UnknownAgentError, match=r"cannot load agent 'nosuch\.module:x'"):
        load_agent("nosuch.module:x")
    assert (
        main(
            [
                "evaluate",
                "--agent",
                "oracle",
                "--intents",
                "nope",
                "--db",
                f"sqlite:///{tmp_path / 'x.sqlite'}",
            ]
        )
        == 2
    )


@pytest.mark.slow  # subprocesses
@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_sigkill_in_the_middle_loses_nothing_and_resume_completes(request, tmp_path, database):
    url = shared_results_url(request, database, tmp_path)
    store, run = ResultStore(url), f"killed-{os.urandom(4).hex()}"
    grid = build_grid(["coverage_hole", "pci_collision"], samples=4)
    process = subprocess.Popen(
        evaluate_command(url, run, SLOW_ORACLE),
        cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if len(store.done_keys(run) if run in store.runs() else ()) >= 5:
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    stored = store.done_keys(run)
    assert 5 <= len(stored) < len(grid), "the kill must land in the middle of the run"
    before = {r["key"]: r["sas"] for r in store.records([run])}
    subprocess.run(
        evaluate_command(url, run, SLOW_ORACLE),
        cwd=REPO_ROOT,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    records = store.records([run])
    assert len(records) == len(grid) and len({r["key"] for r in records}) == len(grid)
    assert all(before[r["key"]] == r["sas"] for r in records if r["key"] in before)
    assert all(r["sas"] == 1.0 for r in records)


@pytest.mark.slow  # subprocesses
def test_two_processes_on_one_run_store_each_episode_once(tmp_path):
    store, url = result_store(tmp_path)
    command = evaluate_command(url, "shared", "oracle")
    processes = [
        subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.DEVNULL) for _ in range(2)
    ]
    assert [p.wait() for p in processes] == [0, 0]
    keys = [r["key"] for r in store.records(["shared"])]
    assert (
        len(keys)
        == len(set(keys))
        == len(build_grid(["coverage_hole", "pci_collision"], samples=4))
    )


def _run_under_way(
    store: ResultStore, url: str, run: str, stored: int, **popen: Any
) -> subprocess.Popen:
    """``telcoenv evaluate`` of the slow oracle with 2 workers in a subprocess, on a grid long
    enough (about 10 s) that it is still running once ``stored`` episodes are stored."""
    process = subprocess.Popen(
        evaluate_command(url, run, SLOW_ORACLE, "--workers", "2", samples=30),
        cwd=REPO_ROOT,
        **popen,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (
        run not in store.runs() or len(store.done_keys(run)) < stored
    ):
        time.sleep(0.05)
    return process


def _children(pid: int) -> list[int]:
    return [
        int(child)
        for child in os.listdir("/proc")
        if child.isdigit() and _status(int(child)).get("PPid") == str(pid)
    ]


def _status(pid: int) -> dict[str, str]:
    """/proc/PID/status as a dict (empty once the process is gone)."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return {}
    return dict(line.split(":\t", 1) for line in lines if ":\t" in line)


@pytest.mark.slow  # a subprocess
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_the_worker_processes_of_a_killed_run_stop_within_seconds(tmp_path):
    store, url = result_store(tmp_path)
    process = _run_under_way(
        store, url, "killed", 1, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    workers = _children(process.pid)
    assert len(workers) == 2  # playing
    process.send_signal(signal.SIGKILL)  # no chance to stop them itself
    process.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(
        _status(pid).get("State", "Z").split()[0] not in "ZX" for pid in workers
    ):
        time.sleep(0.1)
    assert all(_status(pid).get("State", "Z").split()[0] in "ZX" for pid in workers)


@pytest.mark.slow  # a subprocess
def test_ctrl_c_stops_cleanly_with_what_finished_saved(tmp_path):
    store, url = result_store(tmp_path)
    process = _run_under_way(
        store,
        url,
        "interrupted",
        3,
        stdout=subprocess.PIPE,
        text=True,
        # A runner started in the background (``make test &``) ignores SIGINT, and a child
        # inherits that; give the CLI the default disposition, as in a terminal.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=60)
    assert process.returncode == 130 and "everything finished so far is saved" in output
    saved = len(store.done_keys("interrupted"))
    assert saved >= 3
    records = store.records(["interrupted"])
    assert all(r["status"] == "ok" for r in records)


@pytest.mark.slow  # IRA and RA with the real multilingual model
def test_reports_side_by_side(tmp_path):
    store, url = result_store(tmp_path)
    grid = build_grid(["beam_misalignment", "config_mismatch"], samples=2, conditions=(True, False))
    evaluate(store, "oracle", grid, RunConfig("oracle", {}))
    evaluate(store, "random", grid, RunConfig("random", {"seed": 1}))
    report = build_report({run: store.records([run]) for run in ("oracle", "random")})
    oracle, rand = report["runs"]["oracle"], report["runs"]["random"]
    assert oracle["sequence"]["en"]["sas"] == 1.0 and oracle["reliability"]["ar"]["brs"] == 1.0
    assert oracle["ira"]["without_list"]["en"] == pytest.approx(1.0)
    assert rand["sequence"]["en"]["sas"] < 0.5
    assert set(oracle["per_category"]) == {"coverage_interference", "configuration_optimization"}
    markdown = render(report, "md")
    assert "| oracle | 1.000 | 1.000 | 1.000 | 1.000 |" in markdown
    assert "random" in render(report, "csv") and json.loads(render(report, "json"))
    out = tmp_path / "report"
    assert (
        main(["report", "--db", url, "--run", "oracle", "--run", "random", "--out", str(out)]) == 0
    )
    assert {p.name for p in out.iterdir()} >= {
        "report.md",
        "report.csv",
        "report.json",
        "metrics.png",
        "per_intent_oracle.png",
    }
    assert main(["report", "--db", url, "--run", "nope"]) == 2


def test_show_and_list(capsys):
    assert main(["show", "beam_misalignment"]) == 0
    assert "coverage_map -> optimize_cell -> create_ticket" in capsys.readouterr().out
    assert main(["show", "DL_DROP_URBAN_PEAK"]) == 0
    assert "DL_thr_Mbps" in capsys.readouterr().out
    assert main(["show", "oss_query"]) == 0
    assert json.loads(capsys.readouterr().out)["function"]["name"] == "oss_query"
    assert main(["show", "nothing"]) == 2
    assert "nothing named 'nothing'" in capsys.readouterr().err
    assert main(["list"]) == 0 and "telcoenv/Troubleshooting-v0" in capsys.readouterr().out
    assert os.environ.get("HF_HUB_OFFLINE", "1") == "1"


@pytest.mark.slow  # a local Ray instance
def test_ray_backend_on_a_local_instance_matches_local_workers(tmp_path):
    pytest.importorskip("ray")
    store, _ = result_store(tmp_path)
    grid = build_grid(["pci_collision"], samples=2, languages=("en", "ar"))
    config = RunConfig("heuristic", {}, embedder=None)
    ray_run = evaluate(store, "ray", grid, config, workers=2, backend="ray")
    local_run = evaluate(store, "local", grid, config, workers=1)
    assert ray_run.stored == local_run.stored == len(grid)

    def scores(run):
        return {r["key"]: (r["sas"], r["predicted_chain"]) for r in store.records([run])}

    assert scores("ray") == scores("local")
    with pytest.raises(Exception, match="unknown backend 'spark'"):
        evaluate(store, "x", grid, config, backend="spark")
