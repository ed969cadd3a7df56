"""Contract tests of the OpenEnv adapter, called the way openenv-core calls it.

Directly (``reset`` / ``step`` / ``state``), and through the served FastAPI app in-process with
Starlette's TestClient: HTTP ``/reset``, ``/step``, ``/schema``, and WebSocket ``/ws`` sessions
(the protocol of openenv-core's ``EnvClient``, which is also driven here over an in-process
socket). No network, no docker. Skipped when openenv-core is not installed.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip("openenv.core.env_server", reason="openenv-core is not installed")

from fastapi.testclient import TestClient  # installed with openenv-core
from pydantic import ValidationError

import telcoenv
from telcoenv.errors import EpisodeOptionError, UnknownEnvironmentError
from telcoenv.integrations.openenv import (
    TelcoAction,
    TelcoEnvClient,
    TelcoObservation,
    TelcoOpenEnv,
    TelcoState,
    create_telcoenv_app,
)
from tests.conftest import deep_list, solving_actions

pytestmark = pytest.mark.integration

INTENT = "beam_misalignment"
SEED = 3


# --- helpers -------------------------------------------------------------------------------------


def as_openenv(action: dict[str, Any]) -> dict[str, Any]:
    """A TelcoEnv tool-call dict as TelcoAction JSON."""
    return {"tool_name": action["name"], "arguments": action["arguments"]}


def local_run(seed: int, actions: list[dict[str, Any]], **kwargs: Any) -> list[tuple]:
    """(observation, reward, terminated, truncated) of each step of a plain TelcoEnv."""
    env = telcoenv.make(kwargs.pop("env_id", INTENT), embedder=None, **kwargs)
    statement, _ = env.reset(seed=seed)
    out: list[tuple] = [(statement, None, False, False)]
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        out.append((obs, float(reward), terminated, truncated, info.get("metrics")))
    env.close()
    return out


def ws_call(ws: Any, message_type: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"type": message_type}
    if data is not None:
        message["data"] = data
    ws.send_text(json.dumps(message))
    return json.loads(ws.receive_text())


@pytest.fixture(scope="module")
def client() -> TestClient:
    app = create_telcoenv_app(INTENT, embedder=None, privileged=True, max_concurrent_envs=3)
    with TestClient(app) as test_client:
        yield test_client


@pytest.fixture
def env() -> TelcoOpenEnv:
    environment = TelcoOpenEnv(INTENT, embedder=None, privileged=True)
    yield environment
    environment.close()


# --- direct calls --------------------------------------------------------------------------------


def test_reset_observation_carries_statement_tools_and_instructions(env):
    observation = env.reset(seed=SEED)
    local_statement, local_info = telcoenv.make(INTENT, embedder=None).reset(seed=SEED)
    assert isinstance(observation, TelcoObservation)
    assert observation.text == local_statement
    assert observation.done is False and observation.reward is None
    assert observation.instructions == local_info["instructions"]
    names = {tool["function"]["name"] for tool in observation.tools}
    assert names == set(env.telco_env.domain.catalog.tools)
    assert observation.messages[-1] == {"role": "user", "content": local_statement}
    assert observation.episode_id == local_info["episode_id"]
    assert observation.metadata["tools"] == observation.tools  # in-process extras
    state = env.state
    assert isinstance(state, TelcoState)
    assert (state.episode_id, state.step_count, state.done) == (local_info["episode_id"], 0, False)
    assert state.env_id == "telcoenv/BeamMisalignment-v0" and state.seed == SEED


def test_reset_takes_a_caller_episode_id_and_reset_options():
    environment = TelcoOpenEnv("troubleshooting", embedder=None)
    observation = environment.reset(seed=1, episode_id="run-7", intent=INTENT, lang="ar")
    assert observation.episode_id == "run-7" and environment.state.episode_id == "run-7"
    assert observation.lang == "ar" and environment.state.lang == "ar"
    assert environment.state.telco_episode_id.startswith("ep-")
    same = environment.reset(seed=1, options={"intent": INTENT, "lang": "ar"})
    assert same.text == observation.text  # keywords and options are the same reset options
    with pytest.raises(EpisodeOptionError, match="unknown reset option"):
        environment.reset(seed=1, bogus=True)
    environment.close()


def test_step_tool_call_returns_tool_json_and_counts(env):
    env.reset(seed=SEED)
    cell = env.telco_env.trace.start_state["serving_cell"]["cell_id"]
    arguments = {"cell_id": cell, "window": "6h"}
    observation = env.step(TelcoAction(tool_name="oss_query", arguments=arguments))
    assert isinstance(json.loads(observation.text), dict) and observation.error is None
    assert observation.done is False and observation.reward == 0.0
    assert observation.action_status == {"kind": "tool_call", "valid": True, "error_type": None}
    assert observation.counts["tool_calls"] == 1 and env.state.step_count == 1
    # Arguments as JSON text, as LLMs emit them, are the same call.
    again = env.step(TelcoAction(tool_name="oss_query", arguments=json.dumps(arguments)))
    assert again.error is None and env.state.step_count == 2


def test_agent_errors_are_observations_not_exceptions(env):
    env.reset(seed=SEED)
    unknown = env.step(TelcoAction(tool_name="no_such_tool"))
    assert unknown.error["type"] == "unknown_tool" and "no_such_tool" in unknown.text
    assert unknown.done is False
    bad = env.step(TelcoAction(tool_name="oss_query", arguments={"cell": 1}))
    assert bad.error is not None and json.loads(bad.text)["error"]["type"] == bad.error["type"]
    broken = env.step(TelcoAction(tool_name="oss_query", arguments="{not json"))
    assert broken.error["type"] == "malformed_arguments"
    empty = env.step(TelcoAction(message="   "))
    assert empty.error is not None
    assert env.state.invalid_actions == 4 and env.state.step_count == 4


def test_message_goes_to_the_engineer(env):
    env.reset(seed=SEED)
    reply = env.step(TelcoAction(message='{"this": "is text, not a tool call"}'))
    assert reply.error is None and reply.action_status["kind"] == "message"
    assert reply.messages[0]["role"] == "user" and reply.counts["engineer_messages"] == 1


def test_action_model_requires_exactly_one_kind():
    with pytest.raises(ValidationError):
        TelcoAction()
    with pytest.raises(ValidationError):
        TelcoAction(tool_name="oss_query", message="hello")
    with pytest.raises(ValidationError):
        TelcoAction(message="hello", arguments={"a": 1})
    with pytest.raises(ValidationError):
        TelcoAction.model_validate({"tool_name": "x", "extra_field": 1})  # OpenEnv forbids extras
    assert TelcoAction(message="hi").to_telco() == {"role": "assistant", "content": "hi"}


def test_submit_ends_with_the_local_reward_and_metrics(env):
    observation = env.reset(seed=SEED)
    actions = solving_actions(observation.privileged)
    for action in actions:
        observation = env.step(TelcoAction.model_validate(as_openenv(action)))
    expected = local_run(SEED, actions)[-1]
    assert observation.done is True and observation.terminated is True
    assert observation.reward == expected[1] and observation.reward > 0
    assert observation.metrics == expected[4] and observation.resolved is True
    assert env.state.done and env.state.total_reward == observation.reward
    after = env.step(TelcoAction(tool_name="oss_query", arguments={}))
    assert after.done is True and after.reward == 0.0 and after.error["type"] == "episode_ended"


def test_max_steps_truncates_with_metrics():
    environment = TelcoOpenEnv(INTENT, embedder=None, max_steps=2)
    environment.reset(seed=SEED)
    environment.step(TelcoAction(message="Which cluster?"))
    last = environment.step(TelcoAction(message="Thanks"))
    assert last.done and last.truncated and not last.terminated and last.metrics is not None
    environment.close()


def test_step_before_reset_is_an_error_observation():
    environment = TelcoOpenEnv(INTENT, embedder=None)
    observation = environment.step(TelcoAction(message="hello"))
    assert observation.done is True and observation.error["type"] == "reset_needed"
    assert environment.state.episode_id is None and environment.state.step_count == 0
    environment.close()
    environment.close()  # idempotent


def test_concurrency_flag_and_metadata(env):
    assert TelcoOpenEnv.SUPPORTS_CONCURRENT_SESSIONS is True
    metadata = env.get_metadata()
    assert metadata.name == "telcoenv/BeamMisalignment-v0"
    assert metadata.version == telcoenv.__version__


def test_instances_share_no_episode_state():
    first, second = (TelcoOpenEnv(INTENT, embedder=None) for _ in range(2))
    first.reset(seed=1)
    second.reset(seed=2)
    first.step(TelcoAction(message="Which cell?"))
    assert (first.state.step_count, second.state.step_count) == (1, 0)
    assert first.telco_env.trace is not second.telco_env.trace
    first.close()
    second.close()


def test_app_factory_fails_fast_on_bad_arguments():
    with pytest.raises(UnknownEnvironmentError):
        create_telcoenv_app("no_such_env")
    with pytest.raises(EpisodeOptionError):
        create_telcoenv_app(INTENT, embedder=None, max_steps=0)


# --- served app: HTTP ----------------------------------------------------------------------------


def test_http_health_schema_metadata(client):
    assert client.get("/health").json()["status"] == "healthy"
    schema = client.get("/schema").json()
    assert {"tool_name", "arguments", "message"} <= set(schema["action"]["properties"])
    assert {"text", "tools", "metrics"} <= set(schema["observation"]["properties"])
    assert client.get("/metadata").json()["name"] == "telcoenv/BeamMisalignment-v0"


def test_http_reset_and_stateless_step(client):
    response = client.post("/reset", json={"seed": SEED})
    assert response.status_code == 200
    body = response.json()
    assert body["done"] is False and body["reward"] is None
    assert body["observation"]["text"] == local_run(SEED, [])[0][0]
    assert body["observation"]["tools"]
    # openenv-core's HTTP /step builds a fresh environment per request: no episode to step in.
    step = client.post("/step", json={"action": {"tool_name": "oss_query", "arguments": {}}})
    assert step.status_code == 200
    assert step.json()["observation"]["error"]["type"] == "reset_needed"
    invalid = client.post("/step", json={"action": {"tool": "oss_query"}})
    assert invalid.status_code == 422  # structural validation, as OpenEnv does


# --- served app: WebSocket sessions --------------------------------------------------------------


def test_ws_episode_matches_the_local_env(client):
    with client.websocket_connect("/ws") as ws:
        reset = ws_call(ws, "reset", {"seed": SEED})
        assert reset["type"] == "observation"
        observation = reset["data"]["observation"]
        actions = solving_actions(observation["privileged"])
        local = local_run(SEED, actions)
        assert observation["text"] == local[0][0] and observation["tools"]
        for action, expected in zip(actions, local[1:], strict=True):
            data = ws_call(ws, "step", as_openenv(action))["data"]
            assert data["observation"]["text"] == expected[0]
            assert (data["reward"], data["done"]) == (expected[1], expected[2] or expected[3])
        assert data["done"] is True and data["reward"] > 0
        assert data["observation"]["metrics"] == local[-1][4]
        assert data["observation"]["resolved"] is True
        state = ws_call(ws, "state")["data"]
        assert state["step_count"] == len(actions) and state["done"] is True
        assert state["total_reward"] == data["reward"]


def test_ws_invalid_tool_is_an_observation_not_a_server_error(client):
    with client.websocket_connect("/ws") as ws:
        ws_call(ws, "reset", {"seed": SEED})
        response = ws_call(ws, "step", {"tool_name": "no_such_tool", "arguments": {"x": 1}})
        assert response["type"] == "observation"
        observation = response["data"]["observation"]
        assert observation["error"]["type"] == "unknown_tool"
        assert "no_such_tool" in observation["text"] and response["data"]["done"] is False
        # A structurally invalid action is OpenEnv's validation error; the session goes on.
        for structural in ({"tool_name": "oss_query", "message": "both"}, {"tool_name": 5}, {}):
            bad = ws_call(ws, "step", structural)
            assert bad["type"] == "error" and bad["data"]["code"] == "VALIDATION_ERROR"
        bad_reset = ws_call(ws, "reset", {"seed": SEED, "bogus": 1})
        assert (
            bad_reset["type"] == "error" and "unknown reset option" in bad_reset["data"]["message"]
        )
        assert ws_call(ws, "step", {"message": "Which cell?"})["type"] == "observation"


def test_ws_reset_options_pass_through(client):
    with client.websocket_connect("/ws") as ws:
        data = ws_call(ws, "reset", {"seed": 0, "episode_id": "e-1", "lang": "ar"})["data"]
        assert data["observation"]["lang"] == "ar" and data["observation"]["episode_id"] == "e-1"
        again = ws_call(ws, "reset", {"seed": 0, "lang": "ar", "sample_index": 2})["data"]
        other = ws_call(ws, "reset", {"seed": 99, "lang": "ar", "sample_index": 2})["data"]
        assert again["observation"]["text"] == other["observation"]["text"]  # fixed by the sample


def test_ws_sessions_do_not_share_state(client):
    seeds = (1, 2)
    actions = [{"role": "assistant", "content": "Which cell is it?"}]
    local = {seed: local_run(seed, [*actions, *actions]) for seed in seeds}
    with client.websocket_connect("/ws") as first, client.websocket_connect("/ws") as second:
        sockets = dict(zip(seeds, (first, second), strict=True))
        for seed, ws in sockets.items():
            text = ws_call(ws, "reset", {"seed": seed})["data"]["observation"]["text"]
            assert text == local[seed][0][0]
        assert local[1][0][0] != local[2][0][0]
        # Interleaved steps give each session exactly its own sequential episode.
        for step in (1, 2):
            for seed, ws in sockets.items():
                data = ws_call(ws, "step", {"message": actions[0]["content"]})["data"]
                assert data["observation"]["text"] == local[seed][step][0]
        ws_call(first, "step", {"message": "one more"})
        assert ws_call(first, "state")["data"]["step_count"] == 3
        assert ws_call(second, "state")["data"]["step_count"] == 2
        first_id = ws_call(first, "state")["data"]["episode_id"]
        assert first_id != ws_call(second, "state")["data"]["episode_id"]


def test_ws_capacity_is_bounded():
    app = create_telcoenv_app(INTENT, embedder=None, max_concurrent_envs=1)
    with TestClient(app) as test_client, test_client.websocket_connect("/ws") as first:
        ws_call(first, "reset", {"seed": 0})
        with test_client.websocket_connect("/ws") as second:
            refused = ws_call(second, "reset", {"seed": 0})
        assert refused["type"] == "error" and refused["data"]["code"] == "CAPACITY_REACHED"
        assert ws_call(first, "state")["data"]["step_count"] == 0


# --- openenv-core's EnvClient over an in-process socket ------------------------------------------


class _InProcessSocket:
    """What EnvClient needs of a websockets connection, over a TestClient WebSocket session."""

    def __init__(self, session: Any) -> None:
        self._session = session

    async def send(self, text: str) -> None:
        self._session.send_text(text)

    async def recv(self) -> str:
        return self._session.receive_text()

    async def close(self) -> None:
        return None


def test_env_client_round_trip(client):
    with client.websocket_connect("/ws") as session:
        remote = TelcoEnvClient(base_url="http://testserver")
        remote._ws = _InProcessSocket(session)  # in place of connect(): no network

        async def episode() -> tuple[list, Any]:
            results = [await remote.reset(seed=SEED)]
            for action in solving_actions(results[0].observation.privileged):
                results.append(await remote.step(TelcoAction.model_validate(as_openenv(action))))
            return results, await remote.state()

        results, state = asyncio.run(episode())
    first, last = results[0], results[-1]
    assert isinstance(first.observation, TelcoObservation) and first.done is False
    assert first.observation.text == local_run(SEED, [])[0][0]
    local = local_run(SEED, solving_actions(first.observation.privileged))
    assert [r.observation.text for r in results] == [step[0] for step in local]
    assert last.done is True and last.reward == local[-1][1] and last.reward > 0
    assert last.observation.metrics == local[-1][4]
    assert isinstance(state, TelcoState) and state.step_count == len(results) - 1


def test_openenv_step_answers_anything_with_an_observation():
    env = TelcoOpenEnv("beam_misalignment", embedder=None)
    env.reset(seed=0)
    for action in ({"tool_name": 3}, {"bogus": True}, "\udc80", {1, 2}, None, deep_list(2000)):
        observation = env.step(action)
        assert observation.error is not None and observation.text


@pytest.mark.parametrize("body", [{"seed": 1, "bogus": 2}, {"seed": 1, "lang": "xx"}])
def test_an_http_reset_with_a_bad_option_is_a_client_error_naming_it(client, body) -> None:
    response = client.post("/reset", json=body)
    assert response.status_code == 422
    assert ("bogus" in response.text) or ("lang must be one of" in response.text)
    assert client.post("/reset", json={"seed": 1}).status_code == 200


def test_a_session_whose_first_reset_failed_plays_after_a_good_one() -> None:
    env = TelcoOpenEnv("troubleshooting", embedder=None)
    with pytest.raises(EpisodeOptionError):
        env.reset(seed="abc")
    env.reset(seed=1)
    observation = env.step(TelcoAction(message="Which cell is affected?"))
    assert observation.text and not observation.done
