"""The OpenAI-compatible agent against a chat-completions stub server on loopback."""

from __future__ import annotations

import pytest

from telcoenv.agents import load_agent, run_episode
from telcoenv.agents.openai_agent import ModelServerError
from telcoenv.env import TelcoEnv
from telcoenv.evaluation.runner import RunConfig, build_grid, evaluate
from tests.conftest import result_store
from tests.stub_openai import StubServer


@pytest.fixture
def server():
    stub = StubServer()
    yield stub
    stub.close()


def _agent(server: StubServer, model: str, **options):
    return load_agent(
        "openai",
        model=model,
        base_url=server.base_url,
        api_key="sk-test",
        timeout=1.0,
        backoff=0.01,
        prompt_price=0.5,
        completion_price=1.5,
        **options,
    )


def test_tool_calling_episode_with_usage(server):
    env = TelcoEnv("beam_misalignment", embedder=None)
    agent = _agent(server, "scripted")
    reward, info = run_episode(env, agent, seed=4)
    assert info["trace"].predicted_chain in (["oss_query"], [])
    assert info["trace"].submission.intent == "Beam Misalignment"
    request = server.requests[0]
    assert request["model"] == "scripted" and request["tool_choice"] == "auto"
    assert {t["function"]["name"] for t in request["tools"]} >= {"oss_query", "submit_resolution"}
    assert request["messages"][0]["role"] == "system"
    if len(server.requests) > 1:  # the tool result went back to the model with its call id
        tool_message = server.requests[1]["messages"][-1]
        assert tool_message["role"] in ("tool", "user")
    usage = agent.usage
    assert usage["requests"] == len(server.requests) and usage["completion_tokens"] == 20 * len(
        server.requests
    )
    expected = (usage["prompt_tokens"] * 0.5 + usage["completion_tokens"] * 1.5) / 1000
    assert usage["cost"] == pytest.approx(expected)


def test_transient_errors_are_retried(server):
    env = TelcoEnv("beam_misalignment", embedder=None)
    agent = _agent(server, "flaky")
    _, info = run_episode(env, agent, seed=4)
    assert info["trace"].terminated
    assert agent.usage["retries"] >= 2


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("unauthorized", "refused the request: HTTP 401"),
        ("slow", "failed after 2 attempts"),
        ("garbage", "response is not JSON"),
    ],
)
def test_failures_raise_a_clear_error(server, model, message):
    env = TelcoEnv("beam_misalignment", embedder=None)
    agent = _agent(server, model, max_retries=1)
    with pytest.raises(ModelServerError, match=message):
        run_episode(env, agent, seed=0)


def test_evaluate_stores_usage_and_failures(server, tmp_path):
    store, _ = result_store(tmp_path)
    grid = build_grid(["beam_misalignment"], samples=1, languages=("en",))
    options = {"model": "scripted", "base_url": server.base_url, "timeout": 2.0}
    evaluate(store, "stub", grid, RunConfig("openai", options, embedder=None))
    records = store.records(["stub"])
    assert all(r["status"] == "ok" and r["agent_usage"]["requests"] >= 1 for r in records)
    bad = {**options, "model": "unauthorized"}
    evaluate(store, "bad", grid, RunConfig("openai", bad, embedder=None))
    assert all(r["status"] == "failed" and "HTTP 401" in r["error"] for r in store.records(["bad"]))


def test_a_model_is_required(monkeypatch):
    monkeypatch.delenv("TELCOENV_MODEL", raising=False)
    with pytest.raises(Exception, match="needs a model"):
        load_agent("openai")
