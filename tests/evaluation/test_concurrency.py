"""Many episodes in flight (``evaluate(..., concurrency=N)``, ``telcoenv evaluate --concurrency``):
the same stored records as one episode at a time, in this process, in worker processes and on
Ray; timeouts, failures and a broken server per episode; a worker process that dies; the agents
it refuses; the CLI flag; Ctrl-C. The OpenAI agent runs its real async client against the stub
server on loopback; the other agents are defined here and loaded as ``module:factory``."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

from telcoenv.agents import OracleAgent
from telcoenv.agents.openai_agent import OpenAIAgent
from telcoenv.cli import main
from telcoenv.errors import TelcoEnvError
from telcoenv.evaluation.runner import RunConfig, build_grid, evaluate
from telcoenv.evaluation.store import ResultStore
from tests.conftest import REPO_ROOT, result_store
from tests.embedders import HashEmbedder
from tests.stub_openai import StubServer, conversation_error

HERE = "tests.evaluation.test_concurrency"
# Both domains and languages: 16 episodes (the network episodes read a cell, then submit).
GRID = build_grid(["beam_misalignment", "bill_shock"], samples=2, languages=("en", "ar"))
# Two network intents in both languages, for the scripted agents below: 10 episodes.
SMALL = build_grid(["coverage_hole", "pci_collision"], samples=1, languages=("en", "ar"))
# What differs between two runs of the same episodes: when and how fast they ran.
TIMING = ("run", "duration_s", "finished_at")


class AsyncOracle(OracleAgent):
    """The oracle, yielding to the other episodes in flight before each action."""

    async def aact(self, observation: str, info: dict[str, Any]) -> Any:
        await asyncio.sleep(0)
        return self.act(observation, info)


class FailingInArabic(AsyncOracle):
    """The oracle in English; in Arabic its model server fails at the first action."""

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        super().reset(observation, info)
        self.arabic = info["language"] == "ar"

    def act(self, observation: str, info: dict[str, Any]) -> Any:
        if self.arabic:
            raise RuntimeError("the model server returned HTTP 500")
        return super().act(observation, info)


class HangingInArabic(FailingInArabic):
    """The oracle in English; in Arabic it waits for a reply that never comes."""

    async def aact(self, observation: str, info: dict[str, Any]) -> Any:
        if self.arabic:
            await asyncio.sleep(60)
        return await super().aact(observation, info)


class DyingInArabic(FailingInArabic):
    """The oracle in English; in Arabic its process dies (a crash in native code)."""

    async def aact(self, observation: str, info: dict[str, Any]) -> Any:
        if self.arabic:
            os._exit(3)
        return await super().aact(observation, info)


@pytest.fixture(scope="module")
def server():
    stub = StubServer()
    yield stub
    stub.close()


def _openai(server: StubServer, model: str = "thorough", **options: Any) -> RunConfig:
    agent_options = {"model": model, "base_url": server.base_url, "timeout": 5.0, **options}
    return RunConfig("openai", agent_options, embedder=HashEmbedder())


def _untimed(record: dict[str, Any]) -> dict[str, Any]:
    """A record without its timing; an error without its traceback (the frames of the code that
    ran the episode, which awaits the agent or not)."""
    kept = {k: v for k, v in record.items() if k not in TIMING}
    if kept["agent_usage"]:
        kept["agent_usage"] = {k: v for k, v in kept["agent_usage"].items() if k != "seconds"}
    if kept["error"]:
        kept["error"] = kept["error"].splitlines()[0]
    return kept


def _stored(store: ResultStore, run: str) -> dict[str, dict[str, Any]]:
    return {r["key"]: _untimed(r) for r in store.records([run], with_trace=True)}


def _runs(tmp_path, grid, config: RunConfig, **in_flight: Any):
    """The records of ``grid`` played one at a time, then as ``in_flight`` says."""
    store, _ = result_store(tmp_path)
    alone = evaluate(store, "alone", grid, config)
    together = evaluate(store, "together", grid, config, **in_flight)
    assert alone.stored == together.stored == len(grid)
    return _stored(store, "alone"), _stored(store, "together")


@pytest.mark.parametrize(("concurrency", "workers"), [(8, 1), (3, 2)])
def test_episodes_in_flight_store_what_one_at_a_time_stores(tmp_path, server, concurrency, workers):
    alone, together = _runs(
        tmp_path, GRID, _openai(server), concurrency=concurrency, workers=workers
    )
    assert together == alone
    assert all(r["status"] == "ok" and r["ira"] is not None for r in alone.values())
    reads = [r["predicted_chain"] for r in alone.values() if r["agent_usage"]["requests"] == 4]
    assert reads and all(chain == ["oss_query"] * 3 for chain in reads)  # then a submission
    assert all(conversation_error(r["messages"]) is None for r in server.requests)


def test_the_privileged_oracle_in_flight_scores_as_it_does_alone(tmp_path):
    config = RunConfig(f"{HERE}:AsyncOracle", {}, embedder=None)
    alone, together = _runs(tmp_path, SMALL, config, concurrency=4)
    assert together == alone
    assert all(r["sas"] == 1.0 and r["resolved"] for r in together.values())


def test_a_failing_episode_is_stored_as_failed_and_the_others_go_on(tmp_path):
    config = RunConfig(f"{HERE}:FailingInArabic", {}, embedder=None)
    alone, together = _runs(tmp_path, SMALL, config, concurrency=4)
    assert together == alone
    for record in together.values():
        if record["language"] == "ar":
            assert record["status"] == "failed" and record["trace"] is not None
            assert record["error"] == "RuntimeError: the model server returned HTTP 500"
        else:
            assert record["status"] == "ok" and record["sas"] == 1.0


def test_an_episode_past_its_timeout_fails_alone(tmp_path):
    store, _ = result_store(tmp_path)
    config = RunConfig(f"{HERE}:HangingInArabic", {}, embedder=None, episode_timeout=0.5)
    summary = evaluate(store, "r", SMALL, config, concurrency=len(SMALL))
    assert (summary.stored, summary.failed) == (len(SMALL), len(SMALL) // 2)
    for record in store.records(["r"], with_trace=True):
        if record["language"] == "ar":
            assert record["error"] == "timeout: episode exceeded 0.5 s"
            assert record["steps"] == 0 and record["trace"] is not None
        else:
            assert record["status"] == "ok" and record["sas"] == 1.0


@pytest.mark.parametrize(
    ("model", "base_url", "expected"),
    [
        ("unauthorized", None, "refused the request: HTTP 401"),
        ("scripted", "http://127.0.0.1:9/v1", "cannot reach http://127.0.0.1:9/v1 after 1"),
    ],
)
def test_a_broken_server_fails_every_episode_and_the_run_ends(
    tmp_path, server, model, base_url, expected
):
    store, _ = result_store(tmp_path)
    options = {"max_retries": 0} if base_url is None else {"base_url": base_url, "max_retries": 0}
    summary = evaluate(store, "r", GRID, _openai(server, model, **options), concurrency=8)
    assert (summary.stored, summary.failed) == (len(GRID), len(GRID))
    assert all(expected in r["error"] for r in store.records(["r"]))


def test_a_worker_process_that_dies_fails_its_episodes_in_flight_and_is_replaced(tmp_path):
    store, _ = result_store(tmp_path)
    config = RunConfig(f"{HERE}:DyingInArabic", {}, embedder=None)
    summary = evaluate(store, "r", SMALL, config, concurrency=2, workers=2)
    assert summary.stored == len(SMALL)
    records = store.records(["r"])
    assert all(r["status"] == "failed" for r in records if r["language"] == "ar")
    # An English episode in flight in the same process when it died fails with it.
    for record in records:
        assert record["status"] == "ok" or "worker process died (exit code 3)" in record["error"]
    assert any(r["status"] == "ok" for r in records)  # the replaced processes go on


def test_agents_without_aact_and_bad_values_are_refused_at_once(tmp_path):
    store, _ = result_store(tmp_path)
    with pytest.raises(TelcoEnvError, match="concurrency 4 needs an agent with an async aact"):
        evaluate(store, "r", SMALL, RunConfig("oracle", {}, embedder=None), concurrency=4)
    with pytest.raises(TelcoEnvError, match="concurrency must be at least 1, got 0"):
        evaluate(store, "r", SMALL, RunConfig("oracle", {}, embedder=None), concurrency=0)
    assert store.runs() == []  # refused before the run was stored


def test_copies_share_one_async_client_and_keep_their_own_conversations(server):
    agent = OpenAIAgent("scripted", base_url=server.base_url)
    copies = agent.copies(3)
    assert len({id(copy) for copy in copies}) == 3
    assert len({id(copy._client(asynchronous=True)) for copy in copies}) == 1
    copies[0].messages.append({"role": "user", "content": "only mine"})
    assert copies[1].messages == [] and agent._async_client is None
    asyncio.run(copies[0].aclose())


def _evaluate_argv(db: str, *extra: str) -> list[str]:
    return [
        *("evaluate", "--intents", "coverage_hole", "--samples", "1", "--lang", "en"),
        *("--embedder", "none", "--quiet", "--db", db, *extra),
    ]


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--agent", "openai", "--concurrency", "0"], "--concurrency must be at least 1, got 0"),
        (["--agent", "openai", "--concurrency", "-3"], "--concurrency must be at least 1, got -3"),
        (["--agent", "oracle", "--concurrency", "4"], "concurrency 4 needs an agent with an"),
    ],
)
def test_the_cli_refuses_a_bad_concurrency_in_one_line(capsys, tmp_path, extra, expected):
    assert main(_evaluate_argv(f"sqlite:///{tmp_path / 'r.sqlite'}", *extra)) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("telcoenv: error: ") and expected in lines[0]


def test_the_cli_runs_episodes_in_flight(capsys, tmp_path, server):
    store, url = result_store(tmp_path)
    options = f'{{"model": "scripted", "base_url": "{server.base_url}"}}'
    argv = _evaluate_argv(url, "--agent", "openai", "--agent-options", options, "--run", "r")
    assert main([*argv, "--concurrency", "4", "--workers", "2"]) == 0
    assert "3 episodes stored now (0 failed)" in capsys.readouterr().out
    assert all(r["status"] == "ok" for r in store.records(["r"]))


@pytest.mark.slow  # a local Ray instance
def test_ray_actors_run_episodes_in_flight_and_store_the_same(tmp_path, server):
    pytest.importorskip("ray")
    alone, together = _runs(
        tmp_path, GRID, _openai(server), concurrency=4, workers=2, backend="ray"
    )
    assert together == alone


@pytest.mark.slow  # a telcoenv subprocess
def test_ctrl_c_stops_episodes_in_flight_keeping_what_was_stored(tmp_path):
    slow = StubServer(latency=0.2)
    store, url = result_store(tmp_path)
    options = f'{{"model": "thorough", "base_url": "{slow.base_url}"}}'
    command = [
        *(sys.executable, "-m", "telcoenv", "evaluate", "--agent", "openai"),
        *("--agent-options", options, "--intents", "beam_misalignment", "--samples", "30"),
        *("--embedder", "none", "--quiet", "--db", url, "--run", "r", "--concurrency", "4"),
    ]
    try:
        process = subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            text=True,
            # A runner started in the background ignores SIGINT; give the CLI the default.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and (
            "r" not in store.runs() or len(store.done_keys("r")) < 3
        ):
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=60)
    finally:
        slow.close()
    assert process.returncode == 130 and "everything finished so far is saved" in output
    records = store.records(["r"])
    assert 3 <= len(records) < 120 and all(r["status"] == "ok" for r in records)
