"""Contract tests of the MCP server, driven by the official SDK's clients.

``telcoenv mcp`` runs in a subprocess, reached over stdio (``stdio_client``, which launches it)
and over streamable HTTP (``streamable_http_client``, against a server on a free local port).
What a client sees is checked against a plain TelcoEnv of the same seed: the tools and their
schemas, every observation, the reward, the metrics and the trace. Skipped when the mcp SDK is
not installed.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp SDK is not installed")

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from pydantic_core import to_jsonable_python

import telcoenv
from telcoenv.cli import main
from telcoenv.integrations.mcp import TelcoMCPEnv
from telcoenv.trace import EpisodeTrace
from tests.conftest import (
    ARABIC,
    REPO_ROOT,
    deep_list,
    gold_actions,
    solving_actions,
    submit,
)

pytestmark = pytest.mark.integration

NETWORK = "beam_misalignment"
CARE = "bill_shock"
SEED = 1
TRANSCRIPT = "telcoenv://episode/transcript"
METRICS = "telcoenv://episode/metrics"

Play = Callable[[ClientSession], Awaitable[Any]]


# --- helpers -------------------------------------------------------------------------------------


def server_args(env: str, *options: str) -> list[str]:
    return ["-m", "telcoenv", "mcp", "--env", env, *options]


def over_stdio(play: Play, env: str = NETWORK, *options: str) -> Any:
    """Launch ``telcoenv mcp`` with the SDK's stdio client and run ``play`` in its session."""
    server = StdioServerParameters(
        command=sys.executable, args=server_args(env, *options), cwd=REPO_ROOT
    )

    async def session() -> Any:
        async with stdio_client(server) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            return await play(client)

    return anyio.run(session)


@asynccontextmanager
async def http_session(url: str) -> AsyncIterator[ClientSession]:
    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        yield client


def local_episode(env: str, seed: int, **kwargs: Any) -> tuple[Any, dict, list[dict]]:
    """A privileged TelcoEnv reset like the server's episode, its reset info and the oracle's
    actions: the gold chain and a submission in the episode's language (with the exact answer
    in customer care)."""
    local = telcoenv.make(env, privileged=True, **kwargs)
    _, info = local.reset(seed=seed)
    privileged, lang = info["privileged"], kwargs.get("lang", "en")
    if privileged.get("gold_answer") is None:
        return local, info, solving_actions(privileged, lang)
    answer = submit(privileged["label"][lang], "ملخص", answer=str(privileged["gold_answer"]))
    return local, info, [*gold_actions(info), answer]


def local_steps(local: Any, actions: list[dict]) -> tuple[list[str], dict[str, Any], float]:
    """Every observation of ``actions`` through ``env.step``, the last info and reward."""
    observations = []
    for action in actions:
        observation, reward, _, _, info = local.step(action)
        observations.append(observation)
    return observations, info, float(reward)


async def played(client: ClientSession, actions: list[dict]) -> list[Any]:
    return [await client.call_tool(a["name"], a["arguments"]) for a in actions]


async def read_json(client: ClientSession, uri: str) -> Any:
    return json.loads((await client.read_resource(uri)).contents[0].text)


def assert_same_episode(results: list[Any], local: Any, actions: list[dict]) -> dict:
    """The MCP results show what ``env.step`` shows for the same actions; the final status."""
    observations, info, reward = local_steps(local, actions)
    assert [r.content[0].text for r in results] == observations
    assert not any(r.is_error for r in results)
    status = results[-1].structured_content
    assert json.loads(results[-1].content[1].text) == status
    assert status["terminated"] and status["reward"] == reward
    assert status["metrics"] == to_jsonable_python(info["metrics"])
    assert status["resolved"] == info["resolved"]
    return status


def error_type(result: Any) -> str:
    """The error type of a refused call (its observation is error JSON or the counterpart's
    words)."""
    assert result.is_error
    return result.structured_content["action"]["error_type"]


# --- stdio ---------------------------------------------------------------------------------------


def test_stdio_oracle_episode_scores_like_env_step():
    """The default embedder on both sides: IRA and RA agree too."""
    local, info, actions = local_episode(NETWORK, SEED)

    async def play(client: ClientSession) -> tuple:
        tools = (await client.list_tools()).tools
        transcript = await read_json(client, TRANSCRIPT)
        results = await played(client, actions)
        return tools, transcript, results, await read_json(client, TRANSCRIPT), client

    tools, running, results, ended, client = over_stdio(play, NETWORK, "--seed", str(SEED))
    specs = [spec["function"] for spec in info["tools"]]
    assert [t.name for t in tools] == [*(s["name"] for s in specs), "message", "reset"]
    for tool, spec in zip(tools, specs, strict=False):
        assert (tool.input_schema, tool.description) == (spec["parameters"], spec["description"])
    assert client.instructions.startswith(info["instructions"])
    assert local.unwrapped.trace.problem_statement in client.instructions
    status = assert_same_episode(results, local, actions)
    assert status["metrics"]["ira"] == 1.0 and status["resolved"] is True
    # The transcript hides the gold while the episode runs, and is the whole trace at the end.
    assert "gold_chain" not in running and running["actions"] == []
    assert EpisodeTrace.model_validate(ended) == local.unwrapped.trace


def test_stdio_errors_are_tool_results_and_reset_starts_the_next_episode():
    first_id = telcoenv.make(NETWORK, embedder=None).reset(seed=SEED)[1]["episode_id"]
    local, _, actions = local_episode(NETWORK, SEED + 1, embedder=None)

    async def play(client: ClientSession) -> dict:
        out: dict[str, Any] = {"errors": []}
        for name, arguments in [
            ("no_such_tool", {}),
            ("coverage_map", {"area": 7}),
            ("message", {"text": ""}),
            ("message", {"words": "hi"}),
            ("reset", {"seed": -1}),
            ("reset", {"seed": 1, "intent": "x"}),
        ]:
            out["errors"].append(await client.call_tool(name, arguments))
        out["metrics"] = await read_json(client, METRICS)
        out["reply"] = await client.call_tool("message", {"text": "Which cell is it?"})
        out["reset"] = await client.call_tool("reset", {})
        out["episode"] = await played(client, actions)
        out["after_end"] = [
            await client.call_tool("coverage_map", actions[0]["arguments"]),
            await client.call_tool("message", {"text": "Anything else?"}),
        ]
        out["again"] = await client.call_tool("reset", {"seed": SEED})
        with pytest.raises(MCPError, match="unknown resource"):
            await client.read_resource("telcoenv://episode/nothing")
        out["metrics_after"] = await read_json(client, METRICS)
        return out

    out = over_stdio(play, NETWORK, "--seed", str(SEED), "--embedder", "none")
    assert [error_type(r) for r in out["errors"]] == [
        "unknown_tool",
        "invalid_arguments",
        "empty_action",
        "invalid_arguments",
        "invalid_reset",
        "invalid_arguments",
    ]
    assert "seed must be a non-negative integer" in out["errors"][4].content[0].text
    # Refused tool calls and messages count as the episode's steps; the server's own refusals
    # (message and reset arguments) take none.
    assert out["metrics"]["steps"] == 3 and out["metrics"]["episode_id"] == first_id
    assert not out["reply"].is_error and "NR-" in out["reply"].content[0].text
    reset = out["reset"]
    assert not reset.is_error and reset.structured_content["seed"] == SEED + 1
    assert reset.content[0].text == local.unwrapped.trace.problem_statement
    assert reset.structured_content["episode_id"] == local.unwrapped.trace.episode_id
    assert_same_episode(out["episode"], local, actions)
    assert [error_type(r) for r in out["after_end"]] == ["episode_ended", "episode_ended"]
    assert not out["again"].is_error and out["again"].structured_content["episode_id"] == first_id
    assert out["metrics_after"]["steps"] == 0 and out["metrics_after"]["metrics"] is None


# --- streamable HTTP -----------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def care_url() -> Iterator[str]:
    """A customer-care server in Arabic over streamable HTTP; its URL."""
    port = free_port()
    options = ("--lang", "ar", "--embedder", "none", "--transport", "http", "--port", str(port))
    process = subprocess.Popen(
        [sys.executable, *server_args(CARE, *options)], cwd=REPO_ROOT, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            assert process.poll() is None, process.communicate()[1].decode()
            assert time.monotonic() < deadline, "the MCP server did not start"
            time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/mcp"
    process.terminate()
    process.wait(timeout=10)


def test_http_customer_care_in_arabic(care_url):
    local, info, actions = local_episode(CARE, SEED, lang="ar", embedder=None)

    async def play() -> tuple:
        async with http_session(care_url) as client:
            tools = (await client.list_tools()).tools
            reset = await client.call_tool("reset", {"seed": SEED})
            reply = await client.call_tool("message", {"text": "ما هو رقم هاتفك؟"})
            refused = await client.call_tool("get_bill", {"account_id": 3})
        async with http_session(care_url) as other:  # a second session: the same episode
            seen = {**await read_json(other, METRICS), "instructions": other.instructions}
            results = await played(other, actions)
        return tools, reset, reply, refused, seen, results

    tools, reset, reply, refused, seen, results = anyio.run(play)
    specs = {spec["function"]["name"]: spec["function"] for spec in info["tools"]}
    assert {t.name for t in tools} == {*specs, "message", "reset"}
    assert all(t.input_schema == specs[t.name]["parameters"] for t in tools if t.name in specs)
    assert "customer" in next(t for t in tools if t.name == "message").description
    assert ARABIC.search(reset.content[0].text) and ARABIC.search(reply.content[0].text)
    assert error_type(refused) == "invalid_arguments"
    assert seen["episode_id"] == reset.structured_content["episode_id"] and seen["steps"] == 2
    assert seen["instructions"].endswith(reset.content[0].text)  # the reset episode's opening
    # The same actions after the same message and refusal: the same scores as env.step.
    local_steps(local, [{"role": "assistant", "content": "ما هو رقم هاتفك؟"}])
    local_steps(local, [{"name": "get_bill", "arguments": {"account_id": 3}}])
    assert_same_episode(results, local, actions)


# --- the command line ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--env", "no_such_env", "--embedder", "none"], "no_such_env"),
        (["--transport", "http", "--port", "70000"], "--port must be a TCP port"),
    ],
)
def test_cli_mistakes_are_one_line(argv, message, capsys):
    assert main(["mcp", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("telcoenv: error:") and message in err and err.count("\n") == 1


def test_cli_without_the_sdk_says_what_to_install(monkeypatch, capsys):
    for name in [n for n in sys.modules if n.split(".")[0] == "mcp"]:
        monkeypatch.setitem(sys.modules, name, None)  # importing it fails as if not installed
    monkeypatch.delitem(sys.modules, "telcoenv.integrations.mcp", raising=False)
    assert main(["mcp", "--env", NETWORK]) == 2
    err = capsys.readouterr().err
    assert err == "telcoenv: error: telcoenv mcp needs the mcp SDK: pip install 'telcoenv[mcp]'\n"


# --- in process ----------------------------------------------------------------------------------


def test_hostile_arguments_are_refused_and_everything_still_serialises():
    """What a JSON client can send that no model should: each is an isError result, and the
    results and resources still serialise for the wire."""
    episodes = TelcoMCPEnv(NETWORK, embedder=None)
    calls = [
        ("message", {"text": "\udc80"}),
        ("\udc80", {}),
        ("coverage_map", {"area": "\udc80", "resolution": "100m"}),
        ("coverage_map", {"area": float("nan"), "resolution": "100m"}),
        ("oss_query", {"cell_id": deep_list(5000)}),
        ("submit_resolution", {"intent": ["x"], "summary": None}),
        ("reset", {"seed": True}),
        ("message", {"text": "hello", "to": "someone else"}),
    ]
    for name, arguments in calls:
        result = episodes.call_tool(name, arguments)
        assert result.is_error, name
        result.model_dump_json()
    for resource in episodes.resources():
        episodes.read_resource(resource.uri).model_dump_json()
    assert episodes.call_tool("reset", {"seed": None}).structured_content["seed"] == 1
    episodes.close()


def test_a_numpy_seed_is_a_plain_integer_in_the_episode_status():
    import numpy as np

    episodes = TelcoMCPEnv("beam_misalignment", seed=np.int64(5), embedder=None)
    result = episodes.call_tool("message", {"text": "Which cell is affected?"})
    assert not result.is_error
    status = episodes.call_tool("reset", {}).structured_content
    assert status["seed"] == 6 and type(status["seed"]) is int
    json.loads(episodes.read_resource("telcoenv://episode/metrics").text)
