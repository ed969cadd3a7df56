"""The verifiers adapter, driven the way verifiers drives it: its loader (``vf.load_environment``
finds the ``telcoenv`` taskset, env and harness), its rollouts (``Env.run_episode``) and its eval
(``run_eval``, what ``vf-eval`` runs) against the local stub server of tests/stub_openai.py.

Each rollout is replayed through ``env.step``: the same actions (the model's messages on the
trace) with the same seed and options must give the same reward, metrics and counterpart turns.
Skipped when verifiers is not installed.
"""

from __future__ import annotations

import asyncio
import json
import runpy
import subprocess
import sys
from typing import Any

import pytest

pytest.importorskip("verifiers.v1", reason="verifiers is not installed")

import verifiers.v1 as vf
from pydantic_core import to_jsonable_python
from verifiers.v1.cli.eval.runner import run_eval
from verifiers.v1.configs.cli.eval import EvalConfig
from verifiers.v1.dialects.chat import message_to_wire

import telcoenv
from telcoenv.errors import EpisodeOptionError, UnknownIntentError
from telcoenv.evaluation.runner import build_grid
from telcoenv.integrations.verifiers import TelcoHarness, TelcoTaskData, TelcoVerifiersEnv
from tests.conftest import ARABIC, EXAMPLES, solving_actions
from tests.stub_openai import StubServer

pytestmark = pytest.mark.integration

INTENT = "beam_misalignment"
QUESTION = {"en": "Which cell is affected, and since when?", "ar": "ما الخلية المتأثرة، ومنذ متى؟"}


# --- helpers --------------------------------------------------------------------------------------


def load(agent: dict[str, Any] | None = None, **taskset: Any) -> TelcoVerifiersEnv:
    """verifiers' own loader on the telcoenv taskset."""
    config = {"taskset": {"id": "telcoenv", **taskset}, **({"agent": agent} if agent else {})}
    return vf.load_environment(vf.resolve_env_config(config))


def context(server: StubServer, model: str) -> vf.ModelContext:
    client = vf.EvalClientConfig(base_url=server.base_url, api_key_var="TELCOENV_TEST_NO_KEY")
    return vf.ModelContext(model=model, client=client)


def rollout(
    env: TelcoVerifiersEnv, task: vf.Task, ctx: vf.ModelContext, ok: bool = True
) -> vf.Trace:
    """One episode through verifiers' rollout API; its one trace."""

    async def run() -> vf.Episode:
        async with env.serving():
            return await env.run_episode(task, ctx)

    episode = asyncio.run(run())
    assert episode.ok == ok, episode.errors
    (trace,) = episode.traces
    return trace


def opening(data: TelcoTaskData) -> tuple[str, dict[str, Any]]:
    """The statement and the privileged reset info (the gold chain) of the task's episode."""
    env = telcoenv.make(data.env, **data.env_kwargs, privileged=True)
    statement, info = env.reset(seed=data.seed, options=dict(data.options))
    env.close()
    return statement, info


def replay(trace: vf.Trace) -> dict[str, Any]:
    """The trace's actions through ``env.step`` on the task's environment, reset as the adapter
    resets it: total reward, observations, final info."""
    data = trace.task.data
    env = telcoenv.make(data.env, **data.env_kwargs)
    env.reset(seed=data.seed, options=dict(data.options))
    total, observations, info, ended = 0.0, [], {}, False
    for message in trace.assistant_messages:
        observation, reward, terminated, truncated, info = env.step(message_to_wire(message))
        total += float(reward)
        observations.append(observation)
        ended = terminated or truncated
    if not ended:  # the rollout ended first: telcoenv truncates
        reward, info = env.unwrapped.truncate(trace.info["telcoenv"]["truncation_reason"])
        total += reward
    env.close()
    return {"reward": total, "observations": observations, "info": info}


def assert_same_as_env_step(trace: vf.Trace) -> dict[str, Any]:
    """The rollout's reward, metrics and final info are those of its actions through step."""
    expected = replay(trace)
    info = expected["info"]
    assert trace.rewards["telcoenv"].score == pytest.approx(expected["reward"])
    assert trace.reward == pytest.approx(expected["reward"])
    numbers = {k: v for k, v in info["metrics"].items() if k in trace.metrics}
    assert numbers == {k: trace.metrics[k] for k in numbers}
    assert {"msc", "eap", "sas", "resolved", "steps", "invalid_actions"} <= set(trace.metrics)
    assert trace.metrics["steps"] == info["steps"]
    assert trace.info["telcoenv"]["metrics"] == to_jsonable_python(info["metrics"])
    return expected


def tool_call_reply(index: int, action: dict[str, Any]) -> dict[str, Any]:
    """A tool-call action as a model's reply."""
    call = {"name": action["name"], "arguments": json.dumps(action["arguments"])}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": f"call_{index}", "type": "function", "function": call}],
    }


# --- loading --------------------------------------------------------------------------------------


def test_import_telcoenv_stays_free_of_verifiers():
    code = "import sys, telcoenv; print('verifiers' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_loader_finds_the_telcoenv_plugin_and_its_grid():
    env = load(envs=[INTENT, "bill_shock"], samples=2, lang="ar", seed=7)
    assert isinstance(env, TelcoVerifiersEnv)
    (harness,) = env.config.agent_harnesses().values()
    assert isinstance(vf.load_harness(harness), TelcoHarness)
    tasks = list(env.taskset)
    grid = build_grid([INTENT, "bill_shock"], samples=2, languages=["ar"])
    assert [t.data.id for t in tasks] == [spec.key for spec in grid]
    assert {t.data.seed for t in tasks} == {7}
    assert {t.data.env for t in tasks} == {
        "telcoenv/BeamMisalignment-v0",
        "telcoenv/BillShock-v0",
    }
    assert all("Arabic" in t.data.system_prompt for t in tasks)
    # An env server rebuilds each task from its JSON: the data says all the episode needs.
    assert all(TelcoTaskData.model_validate_json(t.data.model_dump_json()) == t.data for t in tasks)
    assert telcoenv.TelcoTaskset is type(env.taskset)


def test_bad_arguments_fail_before_any_rollout():
    with pytest.raises(UnknownIntentError, match="no_such_intent"):
        list(load(envs="no_such_intent").taskset)
    with pytest.raises(EpisodeOptionError, match="max_steps"):
        list(load(envs=INTENT, env_kwargs={"max_steps": 0}).taskset)
    with pytest.raises(ValueError, match="subprocess"):
        load(envs=INTENT, agent={"runtime": {"type": "docker", "image": "python:3.11"}})


# --- rollouts -------------------------------------------------------------------------------------


@pytest.mark.parametrize("lang", ["en", "ar"])
def test_a_rollout_is_the_episode_env_step_plays(lang: str):
    """A question to the engineer, then the oracle's calls: the engineer's answer is the next
    user turn, and reward, metrics and turns are env.step's."""
    env = load(envs=INTENT, lang=lang)
    task = next(iter(env.taskset))
    statement, info = opening(task.data)
    replies = [{"role": "assistant", "content": QUESTION[lang]}]
    replies += [
        tool_call_reply(i, a) for i, a in enumerate(solving_actions(info["privileged"], lang))
    ]
    server = StubServer(replays={"oracle": replies})
    try:
        trace = rollout(env, task, context(server, "replay:oracle"))
        first = server.requests[0]
    finally:
        server.close()
    # The model saw what reset gives: the instructions, the statement and the tool specs.
    assert first["messages"] == info["messages"] and first["tools"] == info["tools"]
    expected = assert_same_as_env_step(trace)
    # Resolved without the optional re-measurement: 0.96 of the outcome reward.
    assert expected["reward"] == pytest.approx(0.96) and trace.metrics["resolved"] == 1.0
    assert trace.stop_condition == "telcoenv_terminated"
    users = [m.content for m in trace.messages if m.role == "user"]
    answer = expected["observations"][0]  # the engineer's reply to the question
    assert users == [statement, answer]
    if lang == "ar":
        assert ARABIC.search(statement) and ARABIC.search(answer)
    # The model saw each call's observation (the submission ends the episode before its result
    # is sent), in one conversation that verifiers recorded unforked.
    tool_results = [m.content for m in trace.tool_messages]
    assert tool_results == expected["observations"][1:-1]
    assert trace.num_branches == 1


def test_a_malformed_tool_call_is_an_error_turn():
    env = load(envs=INTENT)
    task = next(iter(env.taskset))
    server = StubServer()
    try:
        trace = rollout(env, task, context(server, "malformed"))
    finally:
        server.close()
    errors = [json.loads(m.content)["error"]["type"] for m in trace.tool_messages]
    assert errors == ["malformed_arguments", "unknown_tool"]
    assert trace.metrics["invalid_actions"] == 2
    assert trace.stop_condition == "telcoenv_terminated"
    assert_same_as_env_step(trace)


def test_a_verifiers_limit_truncates_the_episode():
    """max_turns ends the rollout before submit_resolution: telcoenv truncates the episode."""
    env = load(envs=INTENT, agent={"max_turns": 1})
    task = next(iter(env.taskset))
    _, info = opening(task.data)
    replies = [tool_call_reply(i, a) for i, a in enumerate(solving_actions(info["privileged"]))]
    server = StubServer(replays={"limited": replies})
    try:
        trace = rollout(env, task, context(server, "replay:limited"))
    finally:
        server.close()
    assert trace.stop_condition == "max_turns"
    final = trace.info["telcoenv"]
    assert final["truncated"] and final["truncation_reason"] == "verifiers: max_turns"
    assert_same_as_env_step(trace)


def test_a_failed_model_call_fails_the_rollout_and_truncates_the_episode():
    env = load(envs=INTENT)
    task = next(iter(env.taskset))
    server = StubServer()
    try:
        trace = rollout(env, task, context(server, "unauthorized"), ok=False)
    finally:
        server.close()
    assert trace.stop_condition == "provider_error" and "401" in trace.errors[0].message
    assert trace.info["telcoenv"]["truncation_reason"] == "verifiers: provider_error"
    assert_same_as_env_step(trace)


def test_a_model_turn_that_fails_in_verifiers_is_not_silently_sampled_again():
    """A completion verifiers' interception cannot decode (tool arguments nested 5,000 deep)
    fails the rollout; a retrying client took the policy's next completion in its place, and
    the trace then held a call the environment never played."""
    env = load(envs=INTENT)
    task = next(iter(env.taskset))
    deep = tool_call_reply(0, {"name": "oss_query", "arguments": {}})
    deep["tool_calls"][0]["function"]["arguments"] = "[" * 5000 + "]" * 5000
    submit = {"name": "submit_resolution", "arguments": {"intent": "x", "summary": "y"}}
    replies = [deep, tool_call_reply(1, submit)]
    server = StubServer(replays={"deep": replies})
    try:
        trace = rollout(env, task, context(server, "replay:deep"), ok=False)
    finally:
        server.close()
    assert len(server.requests) == 1
    assert trace.info["telcoenv"]["tool_calls"] == 0 and trace.reward == 0.0


# --- evaluation -----------------------------------------------------------------------------------


def test_a_multi_sample_evaluation_runs(tmp_path):
    """verifiers' eval over both domains, 2 samples per blueprint, episodes in flight at once."""
    server = StubServer()
    taskset = {"id": "telcoenv", "envs": [INTENT, "bill_shock"], "samples": 2, "lang": ["en"]}
    config = EvalConfig(
        env={"taskset": taskset},
        model="scripted",
        client=vf.EvalClientConfig(base_url=server.base_url, api_key_var="TELCOENV_TEST_NO_KEY"),
        push=False,
        rich=None,
        output_dir=tmp_path,
    )
    try:
        episodes = asyncio.run(run_eval(config))
    finally:
        server.close()
    assert len(episodes) == len(build_grid([INTENT, "bill_shock"], samples=2, languages=["en"]))
    assert all(episode.ok for episode in episodes)
    for episode in episodes:
        (trace,) = episode.traces
        assert trace.stop_condition == "telcoenv_terminated"
        assert_same_as_env_step(trace)
    (traces,) = tmp_path.glob("*/traces.jsonl")
    assert len(traces.read_text(encoding="utf-8").splitlines()) == len(episodes)


def test_the_example_runs(tmp_path, capsys, monkeypatch):
    server = StubServer()
    argv = ["evaluate_verifiers.py", "--model", "scripted", "--base-url", server.base_url]
    argv += ["--envs", INTENT, "--samples", "1", "--lang", "en,ar", "--output-dir", str(tmp_path)]
    monkeypatch.setattr(sys, "argv", argv)
    try:
        runpy.run_path(str(EXAMPLES / "evaluate_verifiers.py"), run_name="__main__")
    finally:
        server.close()
    out = capsys.readouterr().out
    assert "BEAM_INDOOR_GRID|0|ar|with: reward" in out and "MEAN {'reward':" in out
    assert f"traces: {tmp_path}" in out
