"""The local worker processes of ``evaluate(..., workers=N)`` (telcoenv.evaluation.processes):
one more episode queued behind a process's running one only while its episodes are quick, and
whatever the episodes do (finish, fail, kill their process), each is stored once, as it ended."""

from __future__ import annotations

import time

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from telcoenv.evaluation import processes
from telcoenv.evaluation.processes import LocalProcesses
from telcoenv.evaluation.runner import RunConfig, build_grid, evaluate
from telcoenv.evaluation.store import ResultStore

SPECS = build_grid(["beam_misalignment"], samples=2, languages=("en",))


def _first_records(pool: LocalProcesses, count: int) -> list:
    finished: list = []
    deadline = time.monotonic() + 60
    while len(finished) < count and time.monotonic() < deadline:
        finished += pool.wait()
    return finished


# Quick: a bound no oracle episode reaches, even the first of a process on a loaded machine
# (the model's first load once made it 1.3-1.6 s against the 1 s of QUICK_S); slow: none.
@pytest.mark.parametrize("quick_s, capacity", [(60.0, 2), (0.0, 1)])
def test_a_process_gets_an_episode_queued_behind_its_running_one_only_while_they_are_quick(
    monkeypatch, quick_s, capacity
):
    monkeypatch.setattr(processes, "QUICK_S", quick_s)
    pool = LocalProcesses(RunConfig("oracle", {}, embedder=None), workers=1)
    try:
        assert pool.capacity == 1  # nothing known of its episodes yet: one at a time
        pool.submit(SPECS[0])
        [(spec, record)] = _first_records(pool, 1)
        assert spec == SPECS[0] and record["status"] == "ok"
        assert 0.0 < record["duration_s"] < 60.0  # an oracle episode
        assert pool.capacity == capacity
        for spec in SPECS[1 : 1 + capacity]:
            pool.submit(spec)
        assert pool.busy == capacity
        finished = _first_records(pool, capacity)
        assert [spec for spec, _ in finished] == SPECS[1 : 1 + capacity]
        assert pool.busy == 0
    finally:
        pool.close()
    assert not any(worker.process.is_alive() for worker in pool.processes)


# One sample of three intents in both languages: 12 episodes, one per blueprint and language.
MIXED = build_grid(["beam_misalignment", "coverage_hole", "pci_collision"], samples=1)
FATES = st.sampled_from(["ok", "raise", "die"])
ERRORS = {"raise": "RuntimeError: planned failure", "die": "the worker process died (exit code 3)"}


@pytest.mark.slow  # processes started and killed
@settings(max_examples=6, deadline=None, derandomize=True)
@given(st.lists(FATES, min_size=len(MIXED), max_size=len(MIXED)), st.sampled_from([2, 3]))
@example(fates=["die"] * len(MIXED), workers=2)
@example(fates=["ok", "die"] * (len(MIXED) // 2), workers=2)
def test_every_episode_is_stored_once_as_it_ended_whatever_kills_its_process(
    tmp_path_factory, fates, workers
):
    plan = {f"{s.blueprint_id}/{s.language}": fate for s, fate in zip(MIXED, fates, strict=True)}
    assert len(plan) == len(MIXED)
    store = ResultStore(f"sqlite:///{tmp_path_factory.mktemp('fates') / 'r.sqlite'}")
    config = RunConfig("tests.agents_for_tests:Planned", {"plan": plan}, embedder=None)
    summary = evaluate(store, "r", MIXED, config, workers=workers)
    assert (summary.stored, summary.failed) == (len(MIXED), len(MIXED) - fates.count("ok"))
    records = store.records(["r"])
    assert sorted(r["key"] for r in records) == sorted(s.key for s in MIXED)
    for record in records:
        fate = plan[f"{record['blueprint_id']}/{record['language']}"]
        if fate == "ok":
            assert record["status"] == "ok", record["error"]
        else:
            assert record["status"] == "failed" and ERRORS[fate] in record["error"]


def test_the_spawn_start_method_plays_the_same_episodes(tmp_path, monkeypatch):
    # macOS and Windows spawn: what a process runs must pickle, and it imports everything anew.
    real = processes.multiprocessing.get_context
    monkeypatch.setattr(processes.multiprocessing, "get_context", lambda _=None: real("spawn"))
    records = {}
    for name, workers in (("spawned", 2), ("here", 1)):
        store = ResultStore(f"sqlite:///{tmp_path / name}.sqlite")
        config = RunConfig("oracle", {}, embedder=None)
        summary = evaluate(store, name, SPECS, config, workers=workers)
        assert (summary.stored, summary.failed) == (len(SPECS), 0)
        stored = store.records([name], with_trace=True)
        records[name] = {r["key"]: (r["sas"], r["trace"]) for r in stored}
    assert records["spawned"] == records["here"]
