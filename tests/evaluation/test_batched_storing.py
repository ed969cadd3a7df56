"""Finished episodes are stored several to a transaction (``ResultStore.add_many``, the runner's
``_Keeper``): the same records as one at a time, an episode stored already is left out, a record
the database refuses fails only its own episode, and an interrupted run stores what waited."""

from __future__ import annotations

import os
from typing import Any

import pytest

from telcoenv.evaluation import runner
from telcoenv.evaluation.runner import RunConfig, build_grid, evaluate
from telcoenv.evaluation.store import Owner, ResultStore
from tests.conftest import result_store, shared_results_url

GRID = build_grid(["beam_misalignment", "pci_collision"], samples=2, languages=("en", "ar"))
_VOLATILE = ("duration_s", "agent_usage", "finished_at")
CONFIG = RunConfig("oracle", {}, embedder=None)


def _records(store: ResultStore, run: str) -> dict[str, dict[str, Any]]:
    return {
        r["key"]: {k: v for k, v in r.items() if k not in _VOLATILE}
        for r in store.records([run], with_trace=True)
    }


def _transactions(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of records of every storing transaction from now on."""
    sizes: list[int] = []
    insert = ResultStore._insert

    def counted(self: ResultStore, run: str, records: Any, owner: Any) -> None:
        insert(self, run, records, owner)
        sizes.append(len(records))

    monkeypatch.setattr(ResultStore, "_insert", counted)
    return sizes


@pytest.fixture(scope="module")
def one_at_a_time(tmp_path_factory) -> dict[str, dict[str, Any]]:
    """The grid's records stored one per transaction (as before batches)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runner, "STORE_BATCH", 1)
        sizes = _transactions(patch)
        store, _ = result_store(tmp_path_factory.mktemp("one"))
        evaluate(store, "r", GRID, CONFIG, workers=2)
    assert sizes == [1] * len(GRID)
    return _records(store, "r")


@pytest.mark.parametrize("workers", [1, 2])
def test_batches_store_the_records_one_at_a_time_stores(
    tmp_path, monkeypatch, one_at_a_time, workers
):
    monkeypatch.setattr(runner, "STORE_BATCH", 3)
    monkeypatch.setattr(runner, "STORE_WAIT_S", 60.0)  # only full batches, then the rest
    sizes = _transactions(monkeypatch)
    store, _ = result_store(tmp_path)
    summary = evaluate(store, "r", GRID, CONFIG, workers=workers)
    assert (summary.stored, summary.failed) == (len(GRID), 0)
    assert _records(store, "r") == one_at_a_time
    assert sum(sizes) == len(GRID) and all(size >= 3 for size in sizes[:-1])
    assert len(sizes) < len(GRID)
    with store.engine.connect() as connection:  # every claim dropped with its record
        assert connection.exec_driver_sql("SELECT count(*) FROM claims").scalar() == 0


def test_a_record_that_waited_too_long_is_stored_without_the_others(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "STORE_WAIT_S", 0.0)  # no record waits for another
    sizes = _transactions(monkeypatch)
    store, _ = result_store(tmp_path)
    evaluate(store, "r", GRID, CONFIG, workers=1)  # in this process: one episode at a time
    assert sizes == [1] * len(GRID)


def _played(tmp_path) -> list[dict[str, Any]]:
    store, _ = result_store(tmp_path, "played.sqlite")
    evaluate(store, "r", GRID[:3], CONFIG)
    return store.records(["r"], with_trace=True)


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_add_many_leaves_out_what_is_stored_already_and_replaces_failures(
    request, tmp_path, database
):
    first, second, third = ({**r, "run": "x"} for r in _played(tmp_path))
    store = ResultStore(shared_results_url(request, database, tmp_path))
    run = f"many-{os.urandom(4).hex()}"  # a PostgreSQL database outlives the test
    store.ensure_run(run, "oracle", {})
    owner = Owner.current()
    assert store.claim_many(run, [second["key"], third["key"]], owner)
    store.add(run, first)
    store.add(run, {**third, "status": "failed", "error": "boom"})
    assert store.add_many(run, [first, second, third], owner) == [False, True, True]
    records = {r["key"]: r for r in store.records([run])}
    assert len(records) == 3 and {r["status"] for r in records.values()} == {"ok"}
    assert store.add_many(run, [second, third], owner) == [False, False]
    with store.engine.connect() as connection:
        claims = connection.exec_driver_sql(f"SELECT count(*) FROM claims WHERE run = '{run}'")
        assert claims.scalar() == 0


def test_a_record_the_database_refuses_fails_only_its_own_episode_of_a_batch(tmp_path, monkeypatch):
    records = _played(tmp_path)
    refused = records[1]["key"]
    insert = ResultStore._insert

    def picky(self: ResultStore, run: str, batch: Any, owner: Any) -> None:
        if any(r["key"] == refused and r["status"] == "ok" for r in batch):
            raise ValueError("value out of range for column sas")
        insert(self, run, batch, owner)

    monkeypatch.setattr(ResultStore, "_insert", picky)
    store, _ = result_store(tmp_path)
    store.ensure_run("r", "oracle", {})
    finished = [(spec, dict(r)) for spec, r in zip(GRID, records, strict=False)]
    kept = runner._store_many(store, "r", finished, Owner.current())
    assert [r["status"] for r in kept] == ["ok", "failed", "ok"]
    stored = {r["key"]: r for r in store.records(["r"])}
    assert stored[refused]["status"] == "failed"
    assert "the result could not be stored: ValueError" in stored[refused]["error"]
    assert [stored[r["key"]]["status"] for r in records] == ["ok", "failed", "ok"]


def test_an_interrupted_run_stores_the_records_waiting_to_be_stored(
    tmp_path, monkeypatch, one_at_a_time
):
    monkeypatch.setattr(runner, "STORE_BATCH", 1000)
    monkeypatch.setattr(runner, "STORE_WAIT_S", 60.0)  # nothing is stored before the end
    store, _ = result_store(tmp_path)
    calls = []

    def interrupt(done: int, pending: int) -> None:
        calls.append(done)
        if len(calls) == 4:  # one episode played per call in this process
            raise KeyboardInterrupt

    first = evaluate(store, "r", GRID, CONFIG, workers=1, progress=interrupt)
    assert first.interrupted and calls == [0, 0, 0, 0]
    assert first.stored == len(store.records(["r"])) >= 3
    second = evaluate(store, "r", GRID, CONFIG, workers=1)
    assert second.stored == len(GRID) - first.stored
    assert _records(store, "r") == one_at_a_time
