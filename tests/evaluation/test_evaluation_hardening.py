"""Evaluation hardening: every failure inside an episode is stored and the run goes on, failed
episodes are retried, a run keeps its configuration (without secrets), two processes split a
run, bad databases are refused naming the file, and unmeasured IRA/RA show as ``-``.

The misbehaving agents are loaded by the runner from ``tests.agents_for_tests``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

import telcoenv
from telcoenv.cli import main
from telcoenv.domains import get_domain
from telcoenv.errors import EpisodeOptionError
from telcoenv.evaluation import processes, runner
from telcoenv.evaluation.report import build_report, render
from telcoenv.evaluation.runner import RunConfig, build_grid, evaluate, run_settings
from telcoenv.evaluation.store import (
    STALE_AFTER_S,
    Owner,
    ResultStore,
    RunMismatchError,
    StoreError,
)
from telcoenv.trace import EpisodeTrace
from tests.conftest import (
    REPO_ROOT,
    evaluate_command,
    first_release_results,
    result_store,
    shared_results_url,
)

AGENTS = "tests.agents_for_tests"
# One intent, one sample, English: two episodes (the two beam-misalignment blueprints).
GRID = build_grid(["beam_misalignment"], samples=1, languages=("en",))


def _config(agent: str, **options: Any) -> RunConfig:
    return RunConfig(agent, options, embedder=None, max_steps=6, episode_timeout=2.0)


@pytest.mark.parametrize(
    ("agent", "workers", "expected"),
    [
        ("CrashAfterTwoSteps", 1, "RuntimeError: connection reset by peer"),
        ("Exiting", 1, "SystemExit: the agent called sys.exit"),
        ("Exiting", 2, "SystemExit: the agent called sys.exit"),
        pytest.param(
            "SwallowingHang", 1, "timeout: episode exceeded 2 s", marks=pytest.mark.slow
        ),  # waits out the 2-second timeout twice
    ],
)
def test_a_failing_agent_fails_its_episodes_with_steps_and_trace_and_the_run_goes_on(
    tmp_path, agent, workers, expected
):
    store, _ = result_store(tmp_path)
    summary = evaluate(store, "r", GRID, _config(f"{AGENTS}:{agent}"), workers=workers)
    assert (summary.stored, summary.failed) == (len(GRID), len(GRID))
    records = store.records(["r"], with_trace=True)
    assert len(records) == len(GRID)
    for record in records:
        assert record["status"] == "failed" and expected in record["error"]
        trace = json.loads(record["trace"])
        assert trace["blueprint_id"] == record["blueprint_id"]  # this episode's, not the last
        if agent == "CrashAfterTwoSteps":
            assert record["steps"] == 2 and len(trace["actions"]) == 2
            assert len(record["predicted_chain"]) == 2 and record["gold_chain"]


def test_a_worker_process_that_dies_fails_its_episode_at_once_and_the_run_goes_on(tmp_path):
    # No episode timeout: nothing would ever give the episode up but its process's death.
    store, _ = result_store(tmp_path)
    config = dataclasses.replace(_config(f"{AGENTS}:Dying"), episode_timeout=0)
    summary = evaluate(store, "r", GRID, config, workers=2)
    assert (summary.stored, summary.failed) == (len(GRID), len(GRID))
    for record in store.records(["r"]):
        assert record["error"] == "the worker process died (exit code 3)"


def test_a_worker_process_that_dies_fails_only_the_episode_it_played(tmp_path):
    # Quick episodes get one more queued behind them in their process: that one is played by
    # another process, not failed with the one that killed it.
    grid = build_grid(["beam_misalignment"], samples=4, languages=("en", "ar"))
    store, _ = result_store(tmp_path)
    config = _config(f"{AGENTS}:DyingInArabic")
    summary = evaluate(store, "r", grid, config, workers=2)
    assert (summary.stored, summary.failed) == (len(grid), len(grid) // 2)
    for record in store.records(["r"]):
        if record["language"] == "ar":
            assert record["error"] == "the worker process died (exit code 3)"
        else:
            assert record["status"] == "ok", record["error"]


@pytest.mark.slow  # waits for the hung worker
def test_a_worker_process_that_hangs_past_its_timeout_is_killed_and_the_run_goes_on(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(processes, "LOST_WORKER_GRACE_S", 1.0)
    store, _ = result_store(tmp_path)
    config = dataclasses.replace(_config(f"{AGENTS}:DeafHang"), episode_timeout=1.0)
    started = time.monotonic()
    summary = evaluate(store, "r", GRID, config, workers=2)
    assert time.monotonic() - started < 30  # not the agent's 60 s
    assert (summary.stored, summary.failed) == (len(GRID), len(GRID))
    for record in store.records(["r"]):
        assert record["error"] == (
            "no result from the worker process after 3 s: "
            "it hangs (an agent's call blocks the episode timeout)"
        )


def test_an_agent_that_cannot_be_made_in_a_worker_fails_each_episode_with_the_reason(tmp_path):
    store, _ = result_store(tmp_path)
    config = _config(f"{AGENTS}:BrokenInWorkers", parent=os.getpid())
    summary = evaluate(store, "r", GRID, config, workers=2)
    assert (summary.stored, summary.failed) == (len(GRID), len(GRID))
    for record in store.records(["r"]):
        assert record["error"] == (
            "the worker process could not start: "
            "ImportError: libcuda.so.1: cannot open shared object file"
        )


def test_a_record_that_does_not_pickle_fails_its_episode_in_a_worker(tmp_path, monkeypatch):
    # Workers are forked: they play with this class as patched here.
    monkeypatch.setattr(runner._Worker, "_usage", lambda self: {"cost": lambda: 0})
    store, _ = result_store(tmp_path)
    summary = evaluate(store, "r", GRID, _config("oracle"), workers=2)
    assert (summary.stored, summary.failed) == (len(GRID), len(GRID))
    for record in store.records(["r"]):
        assert record["error"].startswith("the worker process could not return the episode: ")
        assert "pickle" in record["error"]


def test_a_trace_that_does_not_serialise_fails_the_episode_and_is_kept_by_repr(
    tmp_path, monkeypatch
):
    dump = EpisodeTrace.model_dump_json

    def strict_dump(self: EpisodeTrace, **kwargs: Any) -> str:
        if "fallback" not in kwargs:
            raise TypeError("Unable to serialize unknown type: <class 'Gadget'>")
        return dump(self, **kwargs)

    monkeypatch.setattr(EpisodeTrace, "model_dump_json", strict_dump)
    store, _ = result_store(tmp_path)
    summary = evaluate(store, "r", GRID, _config("oracle"))
    assert (summary.stored, summary.failed) == (len(GRID), len(GRID))
    for record in store.records(["r"], with_trace=True):
        assert "the trace could not be serialised" in record["error"]
        assert record["error"].count("could not be serialised") == 1
        assert record["steps"] >= 3 and json.loads(record["trace"])["actions"]


def test_a_record_the_database_refuses_is_stored_as_the_episodes_failure(tmp_path, monkeypatch):
    store, _ = result_store(tmp_path)
    insert = ResultStore._insert  # what storing one record or several comes down to

    def picky_insert(self: ResultStore, run: str, records: Any, owner: Any) -> None:
        if any(record["status"] == "ok" for record in records):
            raise ValueError("value out of range for column sas")
        insert(self, run, records, owner)

    monkeypatch.setattr(ResultStore, "_insert", picky_insert)
    summary = evaluate(store, "r", GRID, _config("oracle"))
    assert (summary.stored, summary.failed) == (len(GRID), len(GRID))
    for record in store.records(["r"]):
        assert "the result could not be stored: ValueError: value out of range" in record["error"]
        assert record["steps"] >= 3


def test_resume_retries_failed_episodes_unless_told_to_keep_them(tmp_path):
    store, _ = result_store(tmp_path)
    flag = tmp_path / "overloaded"
    flag.touch()
    config = _config(f"{AGENTS}:Flaky", flag=str(flag))
    first = evaluate(store, "r", GRID, config)
    assert first.failed == len(GRID)
    kept = evaluate(store, "r", GRID, config, retry_failed=False)
    assert (kept.stored, kept.skipped) == (0, len(GRID))
    flag.unlink()
    again = evaluate(store, "r", GRID, config)
    assert (again.stored, again.failed, again.retried, again.skipped) == (len(GRID), 0, 2, 0)
    records = store.records(["r"])
    assert len(records) == len(GRID) and all(r["status"] == "ok" for r in records)
    assert evaluate(store, "r", GRID, config).stored == 0  # nothing left to retry


SECRETS = {
    "api_key": "sk-live-123",
    "headers": {"Authorization": "Bearer tok-456", "X-Team": "noc"},
    "base_url": "http://user:hunter2@127.0.0.1:9/v1",
    "hfToken": "hf_789",
}


def _stored_config(path: Path, run: str) -> dict[str, Any]:
    with sqlite3.connect(path) as connection:
        (config,) = connection.execute("SELECT config FROM runs WHERE name = ?", (run,)).fetchone()
    return json.loads(config)


def test_a_run_stores_its_configuration_without_secrets_and_refuses_another(tmp_path):
    store, _ = result_store(tmp_path)
    options = {"log": str(tmp_path / "log"), "temperature": 0.0, "max_tokens": 64, **SECRETS}
    config = _config(f"{AGENTS}:Counting", **options)
    evaluate(store, "r", GRID, config)
    stored = _stored_config(tmp_path / "results.sqlite", "r")
    text = json.dumps(stored)
    assert not any(s in text for s in ("sk-live-123", "tok-456", "hunter2", "hf_789"))
    assert stored["agent_options"]["max_tokens"] == 64  # a setting, not a credential
    assert stored["agent_options"]["headers"] == {"X-Team": "noc"}
    assert stored["agent_options"]["base_url"] == "http://127.0.0.1:9/v1"
    assert stored == run_settings(config, GRID)
    assert {"embedder", "max_steps", "seed", "languages", "intent_list", "telcoenv"} <= set(stored)
    # Other credentials are no other configuration; another seed, language or list setting is.
    rotated = _config(f"{AGENTS}:Counting", **{**options, "api_key": "sk-live-999"})
    assert evaluate(store, "r", GRID, rotated).skipped == len(GRID)
    with pytest.raises(RunMismatchError, match=r"seed: stored 0, now 1\): start a new --run"):
        evaluate(store, "r", GRID, dataclasses.replace(config, seed=1))
    without = build_grid(["beam_misalignment"], samples=1, languages=("en",), conditions=(False,))
    with pytest.raises(RunMismatchError, match=r"intent_list: stored \['with'\], now"):
        evaluate(store, "r", without, config)
    with pytest.raises(
        RunMismatchError, match=r"agent_options\.temperature: stored 0\.0, now 0\.7"
    ):
        evaluate(store, "r", GRID, _config(f"{AGENTS}:Counting", **{**options, "temperature": 0.7}))


def test_a_run_of_the_blueprint_model_is_not_resumed_in_the_network_model(tmp_path):
    """Runs stored before the network model was the default have no world models in their
    configuration: their episodes are the blueprint model's, so resuming one now is refused."""
    store, _ = result_store(tmp_path)
    config = RunConfig("oracle", {}, embedder=None)
    settings = run_settings(config, GRID)
    assert settings["world_models"] == {"network": "physical"}
    del settings["world_models"]
    store.ensure_run("before", "oracle", settings)
    with pytest.raises(RunMismatchError, match=r"world_models: stored None, now \{'network'"):
        evaluate(store, "before", GRID, config)
    assert evaluate(store, "after", GRID, config).stored == len(GRID)


def test_a_run_in_the_blueprint_model_records_it_and_plays_its_episodes(tmp_path):
    """``world_models`` (``evaluate --network-model``) plays the domain's other model: the run
    records it, its episodes are that model's, and the same run in the default model is
    another configuration."""
    store, _ = result_store(tmp_path)
    blueprint = RunConfig("oracle", {}, embedder=None, world_models={"network": "blueprint"})
    assert run_settings(blueprint, GRID)["world_models"] == {"network": "blueprint"}
    assert evaluate(store, "b", GRID, blueprint).stored == len(GRID)
    with pytest.raises(RunMismatchError, match=r"world_models\.network: stored 'blueprint'"):
        evaluate(store, "b", GRID, RunConfig("oracle", {}, embedder=None))
    spec = GRID[0]
    record = next(r for r in store.records(["b"], with_trace=True) if r["key"] == spec.key)
    played = EpisodeTrace.model_validate_json(record["trace"]).problem_statement
    env = telcoenv.make(
        "troubleshooting", embedder=None, domain=get_domain("network", world_model="blueprint")
    )
    assert played == env.reset(seed=0, options=spec.reset_options())[0]
    with pytest.raises(EpisodeOptionError, match="has no world model 'lookup'"):
        RunConfig("oracle", {}, world_models={"network": "lookup"})
    with pytest.raises(EpisodeOptionError, match="domain 'bss' has no world model"):
        RunConfig("oracle", {}, world_models={"bss": "blueprint"})


def _old_database(path: Path) -> None:
    """A results database as the first release wrote it: no claims, a config with a secret."""
    legacy = {
        "agent": "oracle",
        "agent_options": {"api_key": "sk-old-secret"},
        "seed": 0,
        "embedder": None,
        "max_steps": 6,
        "episode_timeout": 300.0,
    }
    first_release_results(path, legacy)


def test_an_older_database_without_the_configuration_is_migrated_and_resumes(tmp_path):
    path = tmp_path / "old.sqlite"
    _old_database(path)
    store = ResultStore(f"sqlite:///{path}")
    assert "sk-old-secret" not in json.dumps(_stored_config(path, "old"))
    with pytest.raises(RunMismatchError, match="max_steps: stored 6, now 20"):
        evaluate(store, "old", GRID, RunConfig("oracle", {}, embedder=None))
    summary = evaluate(store, "old", GRID, RunConfig("oracle", {}, embedder=None, max_steps=6))
    assert summary.stored == len(GRID)
    assert _stored_config(path, "old")["telcoenv"]  # the full configuration from now on
    with pytest.raises(RunMismatchError, match=r"languages: stored \['en'\], now \['ar'\]"):
        arabic = build_grid(["beam_misalignment"], samples=1, languages=("ar",))
        evaluate(store, "old", arabic, RunConfig("oracle", {}, embedder=None, max_steps=6))


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_claims_are_exclusive_and_those_of_dead_or_silent_processes_expire(tmp_path):
    store, _ = result_store(tmp_path)
    store.ensure_run("r", "oracle", {})
    me = Owner.current()
    alive_elsewhere = Owner("other:1:a", me.host, os.getppid())
    assert store.claim("r", "k1", alive_elsewhere)
    assert not store.claim("r", "k1", me)  # a live process holds it
    killed = Owner("killed:1:b", me.host, _dead_pid())
    assert store.claim("r", "k2", killed)
    assert store.claim("r", "k2", me)  # its process is gone: taken over at once
    remote = Owner("remote:1:c", "another-host", 1)
    assert store.claim("r", "k3", remote)
    assert not store.claim("r", "k3", me)  # another machine, refreshed recently
    with sqlite3.connect(tmp_path / "results.sqlite") as connection:
        connection.execute(
            "UPDATE claims SET heartbeat = ? WHERE key = 'k3'", (time.time() - STALE_AFTER_S - 1,)
        )
    assert store.claim("r", "k3", me)  # silent too long: taken over
    store.release(me)
    assert store.claim("r", "k2", alive_elsewhere)


def _stored_record(key: str) -> dict[str, Any]:
    return {
        "key": key, "intent": "beam_misalignment", "category": "c", "blueprint_id": "b",
        "sample_index": 0, "language": "en", "intent_list": True, "status": "ok",
        "predicted_chain": [], "gold_chain": [], "steps": 1, "duration_s": 0.1,
    }  # fmt: skip


@pytest.mark.parametrize("stored_before_reading", ["claims", "episodes"])
@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_an_episode_stored_while_another_process_claims_it_is_not_claimed_again(
    request, tmp_path, database, stored_before_reading
):
    """The race CI once hit: process B reads that k1 is not stored, process A stores k1 and
    drops its claim, B reads that k1 is not claimed and plays it a second time. Here A stores
    k1 just before B reads one table or the other: B must not claim k1 either way (on SQLite
    A's store waits for B's claim to end; PostgreSQL's stores do not wait)."""
    url = shared_results_url(request, database, tmp_path)
    run = f"race-{os.urandom(4).hex()}"  # a PostgreSQL database outlives the test
    first, second = ResultStore(url), ResultStore(url)
    first.ensure_run(run, "oracle", {})
    owner_a, owner_b = Owner("a:1:a", "host-a", 1), Owner("b:1:b", "host-b", 2)
    assert first.claim(run, "k1", owner_a)
    stored: list[bool] = []
    writer = threading.Thread(
        target=lambda: stored.append(first.add(run, _stored_record("k1"), owner_a))
    )

    @event.listens_for(second.engine, "before_cursor_execute")
    def store_meanwhile(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        if f"FROM {stored_before_reading}" in statement and writer.ident is None:  # once
            writer.start()
            writer.join(timeout=0.5)  # on SQLite A waits for B's transaction

    assert second.claim_many(run, ["k1"], owner_b) == []
    writer.join()
    assert stored == [True]
    assert [r["key"] for r in second.records([run])] == ["k1"]
    assert second.claim_many(run, ["k1"], owner_b) == []  # stored: nobody claims it


@pytest.mark.slow  # two telcoenv subprocesses
@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_two_processes_on_one_run_split_it_and_never_compute_an_episode_twice(
    request, tmp_path, database
):
    url = shared_results_url(request, database, tmp_path)
    run = f"shared-{os.urandom(4).hex()}"  # a PostgreSQL database outlives the test
    log = tmp_path / "started.log"
    grid = build_grid(["coverage_hole", "pci_collision"], samples=3, languages=("en",))
    options = ("--agent-options", json.dumps({"log": str(log)}), "--lang", "en")
    command = evaluate_command(url, run, f"{AGENTS}:Counting", *options, samples=3)
    processes = [
        subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=300)[0] for p in processes]
    assert [p.returncode for p in processes] == [0, 0], outputs
    started = log.read_text().split()
    assert len(started) == len(set(started)) == len(grid), "an episode was computed twice"
    stored_now = [int(re.search(r"(\d+) episodes stored now", out).group(1)) for out in outputs]
    assert sum(stored_now) == len(grid) and min(stored_now) > 0, outputs
    records = ResultStore(url).records([run])
    assert len({r["key"] for r in records}) == len(records) == len(grid)


def test_corrupted_foreign_and_missing_databases_are_refused_naming_the_file(tmp_path):
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(os.urandom(4096))
    with pytest.raises(StoreError, match=rf"{junk}: corrupted, or not a SQLite file"):
        ResultStore(f"sqlite:///{junk}")
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as connection:
        connection.execute("CREATE TABLE invoices (id INTEGER, amount REAL)")
    with pytest.raises(
        StoreError, match=rf"{foreign} is not a telcoenv results database .*invoices"
    ):
        ResultStore(f"sqlite:///{foreign}")
    with sqlite3.connect(foreign) as connection:  # nothing was added to it
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
    assert tables == {"invoices"}
    odd = tmp_path / "odd.sqlite"
    with sqlite3.connect(odd) as connection:
        connection.execute("CREATE TABLE episodes (id INTEGER, what TEXT)")
    with pytest.raises(StoreError, match=r"its table episodes has no column .*blueprint_id"):
        ResultStore(f"sqlite:///{odd}")
    missing = tmp_path / "missing.sqlite"
    with pytest.raises(StoreError, match=rf"no results database at {missing}"):
        ResultStore(f"sqlite:///{missing}", create=False)
    assert not missing.exists()


def test_named_intents_take_gymnasium_ids_and_stay_in_their_domain():
    assert build_grid(["telcoenv/BeamMisalignment-v0"], samples=1) == build_grid(
        ["beam_misalignment"], samples=1
    )
    assert build_grid(["BeamMisalignment-v0", "BEAM_MISALIGNMENT"], samples=1) == build_grid(
        ["beam_misalignment"], samples=1
    )
    care = build_grid(["telcoenv/CustomerCare-v0"], samples=1, languages=("en",))
    assert care == build_grid("all", samples=1, languages=("en",), domain="bss")
    with pytest.raises(EpisodeOptionError, match="belongs to the network domain, not to bss"):
        build_grid(["beam_misalignment"], domain="bss")
    with pytest.raises(EpisodeOptionError, match="no intents given"):
        build_grid([])
    with pytest.raises(EpisodeOptionError, match="no languages given"):
        build_grid(["beam_misalignment"], languages=())
    with pytest.raises(EpisodeOptionError, match="no intent-list conditions given"):
        build_grid(["beam_misalignment"], conditions=())


def test_reports_show_ira_and_ra_without_an_embedder_as_dashes(tmp_path, capsys):
    store, url = result_store(tmp_path)
    evaluate(store, "plain", GRID, RunConfig("oracle", {}, embedder=None))
    evaluate(store, "broken", GRID, _config(f"{AGENTS}:Exiting"))
    report = build_report({run: store.records([run]) for run in ("plain", "broken")})
    for run in ("plain", "broken"):
        values = report["runs"][run]
        assert values["ira"]["with_list"]["en"] is None and values["ra"]["en"] is None
        assert values["per_intent"]["BEAM_MISALIGNMENT"]["ira"] is None
    assert report["runs"]["plain"]["sequence"]["en"]["sas"] == 1.0
    assert "| plain | - | - | - | - |" in render(report, "md")
    assert "| plain | - | - | 1.000 | - |" in render(report, "md")  # RA EN, AR; resolved EN
    assert json.loads(render(report, "json"))["runs"]["plain"]["ira"]["with_list"]["en"] is None
    assert "plain,ira,,en,with_list,ira,\r\n" in render(report, "csv")
    # With an embedder, a failed episode scores 0 and is counted.
    scored = [
        {"status": "ok", "embedder": "use", "ira": 1.0, "ra": 0.5, **_cell()},
        {"status": "failed", "embedder": "use", "ira": None, "ra": None, **_cell()},
    ]
    values = build_report({"x": scored})["runs"]["x"]
    assert values["ira"]["with_list"]["en"] == 0.5 and values["ra"]["en"] == 0.25
    assert main(["report", "--db", url, "--run", "plain"]) == 0
    assert "| plain | - | - | - | - |" in capsys.readouterr().out


def _cell() -> dict[str, Any]:
    return {
        "language": "en",
        "intent_list": True,
        "intent": "BEAM_MISALIGNMENT",
        "category": "coverage_interference",
        "blueprint_id": "B",
        "predicted_chain": [],
        "gold_chain": [],
    }


def test_a_counterparts_one_time_warm_up_is_not_counted_against_an_episode(monkeypatch, tmp_path):
    """The first message to the customer encoded the router's prototype questions (about a
    second, once per process) inside the episode's timeout: with a short --timeout every care
    episode that messaged the customer failed, the oracle's included (the alarm interrupted
    the encoding, so the next episode started it again)."""
    from functools import cached_property

    from telcoenv.domains.bss import customer
    from telcoenv.routing import QuestionRouter

    encode = QuestionRouter.__dict__["_prototype_vectors"].func

    def slow(self: QuestionRouter) -> Any:
        time.sleep(1.5)  # a loaded machine's warm-up, past the timeout below
        return encode(self)

    vectors = cached_property(slow)
    vectors.__set_name__(QuestionRouter, "_prototype_vectors")
    monkeypatch.setattr(QuestionRouter, "_prototype_vectors", vectors)
    customer.question_router.cache_clear()
    customer._topics.cache_clear()  # messages routed before would not be routed again
    try:
        store = ResultStore(f"sqlite:///{tmp_path / 'results.sqlite'}")
        grid = build_grid(["contact_update"], samples=1, languages=["en"])
        config = RunConfig("oracle", {}, embedder=None, episode_timeout=1.0)
        summary = evaluate(store, "warm", grid, config)
    finally:
        customer.question_router.cache_clear()  # no slow router left for other tests
        customer._topics.cache_clear()
    assert (summary.stored, summary.failed) == (len(grid), 0)
