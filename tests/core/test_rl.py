"""RL training use: vector envs, snapshots for GRPO groups, async, reward modes and wrappers."""

from __future__ import annotations

import asyncio
import json

import gymnasium
import pytest

import telcoenv  # noqa: F401  (registers the environments)
from telcoenv.agents import OracleAgent, run_episode
from telcoenv.env import TelcoEnv
from telcoenv.errors import EpisodeOptionError
from telcoenv.rewards import Shaping, episode_rewards
from telcoenv.wrappers import (
    ChatMessages,
    RawTextAction,
    ToolBudget,
    TrajectoryRecorder,
    load_trajectories,
    parse_function_tags,
    parse_hermes,
    parse_json_call,
    replay,
)
from tests.conftest import gold_actions, make_env, serving_cell, submit, tool_call

ENV_ID = "telcoenv/PingpongHandovers-v0"


def _oss(cell: str, window: str = "1h") -> dict:
    return tool_call("oss_query", cell_id=cell, window=window)


# --- vector environments ---------------------------------------------------------------------


def _vector_rollout(mode: str, seeds: list[int]) -> list:
    kwargs = {"vector_kwargs": {"shared_memory": False}} if mode == "async" else {}
    envs = gymnasium.make_vec(
        ENV_ID, num_envs=len(seeds), vectorization_mode=mode, embedder=None, **kwargs
    )
    try:
        observations, _ = envs.reset(seed=seeds)
        actions = tuple(_oss("NR-NOPE-1") for _ in seeds)
        stepped, rewards, *_ = envs.step(actions)
        return [observations, stepped, rewards.tolist()]
    finally:
        envs.close()


def test_sync_vector_env_is_deterministic_and_matches_separate_envs():
    seeds = [3, 4, 5]
    first, second = _vector_rollout("sync", seeds), _vector_rollout("sync", seeds)
    assert first == second
    singles = [TelcoEnv("pingpong_handovers", embedder=None).reset(seed=s)[0] for s in seeds]
    assert list(first[0]) == singles
    assert len(set(first[0])) == 3  # different seeds, different episodes


def test_async_vector_env_gives_the_same_batch_as_sync():
    assert _vector_rollout("async", [3, 4]) == _vector_rollout("sync", [3, 4])


def test_async_vector_env_needs_shared_memory_off_and_says_so():
    with pytest.raises(ValueError, match="shared_memory=False"):
        gymnasium.make_vec(ENV_ID, num_envs=2, vectorization_mode="async", embedder=None)


# --- same-state group rollouts ----------------------------------------------------------------


def test_the_same_seed_gives_the_same_episode():
    env = TelcoEnv(None, embedder=None)
    first = env.reset(seed=11)[0], env.trace.start_state
    again = env.reset(seed=11)[0], env.trace.start_state
    assert first == again


def test_clone_and_snapshots_restore_the_same_state_mid_episode():
    env = make_env("pingpong_handovers")
    _, info = env.reset(seed=6)
    env.step(_oss(serving_cell(env)))
    env.step("Which window should I look at?")
    group = [env.clone() for _ in range(3)]
    restored = make_env("pingpong_handovers")
    restored.set_state(json.loads(env.get_state().model_dump_json()))  # through JSON
    for twin in [*group, restored]:
        assert twin.trace.model_dump_json() == env.trace.model_dump_json()
    action = gold_actions(info)[-1]  # the fix
    expected = env.step(action)[0]
    assert all(twin.step(action)[0] == expected for twin in group)
    assert restored.reset()[0] == env.reset()[0]  # later resets continue alike


def test_a_snapshot_only_restores_where_its_episode_can_run():
    env = TelcoEnv("pingpong_handovers", embedder=None)
    env.reset(seed=1)
    with pytest.raises(EpisodeOptionError, match="fixed to"):
        TelcoEnv("beam_misalignment", embedder=None).set_state(env.get_state())
    TelcoEnv(None, embedder=None).set_state(env.get_state())  # the whole taxonomy can


# --- async ------------------------------------------------------------------------------------


def test_areset_and_astep_run_environments_concurrently_with_sync_results():
    async def play(seed: int) -> tuple[str, str]:
        env = TelcoEnv("pingpong_handovers", embedder=None)
        observation, _ = await env.areset(seed=seed)
        stepped = (await env.astep(_oss(serving_cell(env))))[0]
        return observation, stepped

    async def main() -> list[tuple[str, str]]:
        return list(await asyncio.gather(*(play(seed) for seed in range(4))))

    results = asyncio.run(main())
    for seed, (observation, stepped) in enumerate(results):
        env = TelcoEnv("pingpong_handovers", embedder=None)
        assert env.reset(seed=seed)[0] == observation
        assert env.step(_oss(serving_cell(env)))[0] == stepped


# --- reward modes -----------------------------------------------------------------------------


def test_sparse_rewards_only_the_last_step_and_reports_the_terminal_term():
    env = make_env("pingpong_handovers")
    observation, info = env.reset(seed=2)
    env.step({"name": "spectrum_license_info", "arguments": {"cell_id": serving_cell(env)}})
    *_, info = env.step({"name": "no_such_tool", "arguments": {}})
    assert info["reward_components"] == {}
    *_, info = env.step(submit("x", "y"))
    # The outcome reward by named part (here a wrong diagnosis: the parts it missed at 0).
    assert set(info["reward_components"]) == {"diagnosis", "remediation", "required_steps"}
    env = make_env("pingpong_handovers", reward="sas")
    env.reset(seed=2)
    *_, info = env.step(submit("x", "y"))
    assert set(info["reward_components"]) == {"terminal"}  # a metric reward: one term


def test_shaped_rewards_follow_the_weights_and_match_the_standalone_function():
    # Unbounded step terms, on a metric reward (no order between resolved and unresolved
    # episodes is promised there, so the bound may be lifted).
    shaping = Shaping(
        invalid_action=-0.5,
        distractor_call=-0.25,
        gold_step=1.0,
        resolution_bonus=3,
        max_step_total=100,
    )
    env = make_env("pingpong_handovers", reward="sas", reward_mode="shaped", shaping=shaping)
    observation, info = env.reset(seed=2)
    gold = gold_actions(info)
    steps = [
        {
            "name": "spectrum_license_info",
            "arguments": {"cell_id": serving_cell(env)},
        },  # distractor
        {"name": "no_such_tool", "arguments": {}},  # invalid
        gold[1],  # the second gold step first: no credit (in order only)
        *gold,  # then the whole chain: 3 credits
    ]
    rewards = []
    for action in steps:
        rewards.append(env.step(action)[1])
    assert rewards[:3] == [-0.25, -0.5, 0.0]
    assert rewards[3:] == [1.0, 1.0, 1.0]
    label = info["privileged"]["label"]["en"]
    _, last, *_, final = env.step(submit(label, "done"))
    components = final["reward_components"]
    assert components["resolution_bonus"] == 3 and final["resolved"]
    assert last == pytest.approx(components["terminal"] + 3)
    recomputed = episode_rewards(final["trace"], reward="sas", mode="shaped", shaping=shaping)
    assert recomputed.per_step == pytest.approx([*rewards, last])
    assert recomputed.components["gold_step"] == 3.0


def test_shaped_rewards_of_multi_call_messages_and_care_distractors_recompute_exactly():
    shaping = Shaping(invalid_action=-0.5, distractor_call=-0.25, gold_step=1.0, max_step_total=9)
    env = make_env("pingpong_handovers", reward="sas", reward_mode="shaped", shaping=shaping)
    _, info = env.reset(seed=2)
    gold = [{"function": action} for action in gold_actions(info)]
    first = env.step({"role": "assistant", "tool_calls": gold[:2]})[1]  # two credits at once
    _, last, *_, final = env.step(submit("x", "y"))
    recomputed = episode_rewards(final["trace"], reward="sas", mode="shaped", shaping=shaping)
    assert first == 2.0 and recomputed.per_step == pytest.approx([first, last])
    care = TelcoEnv("bill_shock", embedder=None, domain="bss", reward_mode="shaped")
    care.reset(seed=0)
    distractor = care.step({"name": "get_store_locations", "arguments": {"city": "Riyadh"}})[1]
    *_, final = care.step(submit("x", "y"))
    recomputed = episode_rewards(final["trace"], mode="shaped")
    assert distractor == -0.02 and recomputed.per_step[0] == -0.02  # the care domain's distractor


def test_bad_reward_settings_fail_at_construction():
    with pytest.raises(EpisodeOptionError, match="reward_mode"):
        TelcoEnv("pingpong_handovers", embedder=None, reward_mode="dense")
    with pytest.raises(EpisodeOptionError, match="shaping"):
        TelcoEnv("pingpong_handovers", embedder=None, shaping={"gold_stepz": 1.0})


# --- wrappers ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ('{"name": "oss_query", "arguments": {"cell_id": "A", "window": "1h"}}', ["oss_query"]),
        ('Sure:\n```json\n{"name": "neighbor_audit", "arguments": {}}\n```', ["neighbor_audit"]),
        ('[{"name": "a", "arguments": {}}, {"function": {"name": "b"}}]', ["a", "b"]),
        ('{"name": "oss_query", "arguments": {broken', ["oss_query"]),
        # Two fences, two calls (a 1.5B model's reply, run s10b); a fence of data is no call.
        ('```json\n{"name": "a", "arguments": {}}\n```\n```json\n{"name": "b"}\n```', ["a", "b"]),
        ('```json\n{"name": "a", "arguments": {}}\n```\nGives:\n```\n{"x": 1}\n```', ["a"]),
    ],
)
def test_the_json_parser_finds_tool_calls(text, names):
    action = parse_json_call(text)
    assert [c["function"]["name"] for c in action["tool_calls"]] == names


def test_parsers_leave_plain_text_as_a_message_and_split_hermes_blocks():
    assert parse_json_call("What is the cell id?") == "What is the cell id?"
    assert parse_hermes("No tools needed.") == "No tools needed."
    action = parse_hermes(
        'Checking. <tool_call>{"name": "a", "arguments": {"x": 1}}</tool_call>'
        "<tool_call>not json</tool_call>"
    )
    assert action["content"] == "Checking."
    assert [c["function"]["name"] for c in action["tool_calls"]] == ["a", ""]


def test_the_function_tag_parser_reads_both_element_forms():
    """Qwen2.5-Coder-1.5B wrote every call of two Arabic episodes as ``<function .../>``
    elements inside ``<tools>``, which were then lost as messages to the engineer."""
    written = (
        '<tools>\n  <function name="kpi_timeseries" arguments=\'{"cell_id": "C-1", '
        '"window": "4h"}\'/>\n  <function name="traffic_forecast" '
        'arguments=\'{"cell_id": "C-1"}\'/>\n</tools>'
    )
    action = parse_function_tags(written)
    assert action["content"] is None
    assert [c["function"] for c in action["tool_calls"]] == [
        {"name": "kpi_timeseries", "arguments": {"cell_id": "C-1", "window": "4h"}},
        {"name": "traffic_forecast", "arguments": {"cell_id": "C-1"}},
    ]
    action = parse_function_tags('Looking. <function=oss_query>{"cell_id": "C-1"}</function>')
    assert action["content"] == "Looking."
    assert action["tool_calls"][0]["function"] == {
        "name": "oss_query",
        "arguments": {"cell_id": "C-1"},
    }
    # Undecodable arguments stay raw (the environment names the problem); no element: a message.
    broken = parse_function_tags('<function name="oss_query" arguments="{oops"/>')
    assert broken["tool_calls"][0]["function"]["arguments"] == "{oops"
    assert parse_function_tags("Use the <function> field.") == "Use the <function> field."


def test_raw_text_and_chat_wrappers_keep_the_conversation_in_openai_format():
    env = TelcoEnv("pingpong_handovers", embedder=None)
    wrapped = RawTextAction(ChatMessages(env), parser="hermes")
    messages, _ = wrapped.reset(seed=3)
    assert [m["role"] for m in messages] == ["system", "user"]
    call = json.dumps(_oss(serving_cell(env)))
    messages, *_ = wrapped.step(f"Let me look. <tool_call>{call}</tool_call>")
    assistant, tool = messages[-2:]
    assert assistant["tool_calls"][0]["id"] == tool["tool_call_id"] == "call_1_0"
    assert json.loads(tool["content"])["cell"]["cell_id"] == serving_cell(env)
    messages, *_ = wrapped.step('<tool_call>{"name": "oss_query", "arguments": {oops}</tool_call>')
    assert json.loads(messages[-1]["content"])["error"]["type"] == "malformed_arguments"
    messages, *_ = wrapped.step("Which cell is it?")
    assert (
        messages[-2:]
        == [
            {"role": "assistant", "content": "Which cell is it?"},
            messages[-1],
        ]
        and messages[-1]["role"] == "user"
    )


def test_recorded_trajectories_load_back_and_replay_to_the_same_metrics(tmp_path):
    path = tmp_path / "runs" / "trajectories.jsonl"
    recorder = TrajectoryRecorder(make_env("config_mismatch", reward_mode="shaped"), path)
    for seed in (1, 2):
        run_episode(recorder, OracleAgent(), seed=seed)
    recorder.reset(seed=3)
    recorder.step("Hello?")
    recorder.close()  # the unfinished episode is written too
    records = load_trajectories(path)
    assert [r["finished"] for r in records] == [True, True, False]
    first = records[0]
    assert first["messages"][0]["role"] == "system" and first["tools"]
    assert first["reward"] == pytest.approx(sum(first["rewards"]))
    assert first["resolved"] is True
    for record in records[:2]:
        fresh = make_env("config_mismatch", reward_mode="shaped")
        assert replay(record, fresh) == record["metrics"]


def test_the_tool_budget_truncates_and_scores_the_episode():
    env = ToolBudget(TelcoEnv("pingpong_handovers", embedder=None), max_tool_calls=2)
    env.reset(seed=1)
    cell = serving_cell(env)
    assert env.step(_oss(cell))[3] is False
    _, reward, terminated, truncated, info = env.step(_oss(cell, "2h"))
    assert (terminated, truncated) == (False, True)
    assert info["truncation_reason"] == "tool budget of 2 calls used"
    # Cut off before a submission: verified and scored, but no terminal reward.
    assert reward == 0.0 and info["reward_components"] == {"no_submission": 0.0}
    assert info["metrics"]["sas"] > 0 and info["resolved"] is False
    with pytest.raises(ValueError, match="positive"):
        ToolBudget(TelcoEnv("pingpong_handovers", embedder=None), max_tool_calls=0)
