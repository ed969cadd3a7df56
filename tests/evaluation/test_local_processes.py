"""The local worker processes of ``evaluate(..., workers=N)`` (telcoenv.evaluation.processes):
one more episode queued behind a process's running one only while its episodes are quick."""

from __future__ import annotations

import time

import pytest

from telcoenv.evaluation import processes
from telcoenv.evaluation.processes import LocalProcesses
from telcoenv.evaluation.runner import RunConfig, build_grid

SPECS = build_grid(["beam_misalignment"], samples=2, languages=("en",))


def _first_records(pool: LocalProcesses, count: int) -> list:
    finished: list = []
    deadline = time.monotonic() + 60
    while len(finished) < count and time.monotonic() < deadline:
        finished += pool.wait()
    return finished


QUICK_S = processes.QUICK_S


@pytest.mark.parametrize("quick_s, capacity", [(QUICK_S, 2), (0.0, 1)])
def test_a_process_gets_an_episode_queued_behind_its_running_one_only_while_they_are_quick(
    monkeypatch, quick_s, capacity
):
    monkeypatch.setattr(processes, "QUICK_S", quick_s)
    pool = LocalProcesses(RunConfig("oracle", {}), workers=1)
    try:
        assert pool.capacity == 1  # nothing known of its episodes yet: one at a time
        pool.submit(SPECS[0])
        [(spec, record)] = _first_records(pool, 1)
        assert spec == SPECS[0] and record["status"] == "ok"
        assert record["duration_s"] < QUICK_S  # an oracle episode
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
