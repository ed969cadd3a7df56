"""The environment's core mechanics on the small fibre domain of ``tests/plugins``, without
either packaged domain: the episode lifecycle, refused actions, the step budget, approval,
snapshots, rewards recomputed from the trace, and the info contract."""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest
from gymnasium.error import ResetNeeded

from telcoenv.domains import get_domain, register_domain, unregister_domain
from telcoenv.env import TelcoEnv
from telcoenv.errors import EpisodeOptionError, TelcoEnvError, UnknownIntentError
from telcoenv.policies import ApprovalGate, Remeasurements, StepBudget
from telcoenv.rewards import Shaping, episode_rewards
from telcoenv.tooling import ToolRegistry, ToolResult
from telcoenv.wrappers import ToolBudget
from tests.conftest import PLUGINS, gold_actions, make_env, play, submit


def _load_plugin():
    """Import the plug-in package from its folder without putting the folder on sys.path:
    its entry point must not be discovered by the other tests of this process."""
    folder = PLUGINS / "telcoenv_fiber"
    spec = importlib.util.spec_from_file_location(
        "telcoenv_fiber", folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["telcoenv_fiber"] = module
    spec.loader.exec_module(module)
    return module


fiber_domain = _load_plugin().fiber_domain


@pytest.fixture(autouse=True, scope="module")
def _fiber_registered():
    """The domain exists for this module's tests only (others count the packaged domains)."""
    register_domain("fiber", fiber_domain)
    yield
    unregister_domain("fiber")


SUBMIT = submit("ONT offline", "done")


def _env(**kwargs) -> tuple[TelcoEnv, list[dict]]:
    env = make_env("ont_offline", domain="fiber", **kwargs)
    _, info = env.reset(seed=5)
    return env, gold_actions(info)


def test_the_gold_chain_resolves_and_scores_the_maximum():
    env, gold = _env()
    play(env, gold)
    _, reward, terminated, truncated, info = env.step(SUBMIT)
    assert (terminated, truncated, info["resolved"], reward) == (True, False, True, 1.0)
    assert info["predicted_chain"] == ["ont_status", "reboot_ont"]
    assert info["metrics"]["args"] == 1.0 and info["metrics"]["ra"] is None


def test_a_refused_call_changes_nothing_and_is_counted():
    env, gold = _env()
    ont = gold[0]["arguments"]["ont_id"]
    before = dict(env.episode.setup.state.onts[ont])
    for action in (
        {"name": "reboot_ont", "arguments": {"ont_id": "ONT-12"}},  # breaks the spec's pattern
        {"name": "reboot_ont", "arguments": {"ont_id": float("nan")}},
        {"name": "oss_query", "arguments": {}},  # another domain's tool
    ):
        observation, *_, info = env.step(action)
        assert "error" in json.loads(observation)
    assert env.episode.setup.state.onts[ont] == before and info["invalid_actions"] == 3


def test_the_budget_truncates_and_approval_gates_the_change():
    env, gold = _env(max_steps=3, require_approval=True)
    env.step(gold[0])
    observation, *_ = env.step(gold[1])  # a write without approval is refused
    assert json.loads(observation)["error"]["type"] == "approval_required"
    observation, _, terminated, truncated, info = env.step("May I reboot it?")
    assert observation == "Yes, go ahead." and truncated and not terminated
    assert info["resolved"] is False and info["steps"] == 3


def test_a_clone_continues_exactly_like_the_original():
    env, gold = _env()
    env.step(gold[0])
    env.step({"name": "reboot_ont", "arguments": {"ont_id": b"bytes"}})
    twin = env.clone()
    for one in (env, twin):
        one.step(gold[1])
        one.step(SUBMIT)
    assert twin.trace.model_dump() == env.trace.model_dump()


def test_shaped_rewards_recompute_from_the_trace():
    shaping = Shaping(invalid_action=-0.5, gold_step=1.0, resolution_bonus=2.0, max_step_total=9)
    env, gold = _env(reward="sas", reward_mode="shaped", shaping=shaping)
    rewards = [env.step({"name": "nope", "arguments": {}})[1]]
    rewards += [env.step(action)[1] for action in gold]
    _, last, *_, info = env.step(SUBMIT)
    recomputed = episode_rewards(info["trace"], reward="sas", mode="shaped", shaping=shaping)
    # The refused call is no step of the plan: SAS is 1; the bonus is for resolving.
    assert rewards == [-0.5, 1.0, 1.0] and info["metrics"]["sas"] == 1
    assert last == pytest.approx(info["metrics"]["sas"] + 2.0)
    assert recomputed.per_step == pytest.approx([*rewards, last])


def test_the_registered_domain_is_shared_and_its_tools_cannot_see_the_truth():
    assert get_domain("fiber") is fiber_domain()
    env, _ = _env()
    context = env.domain.tool_context(env.episode.setup, lambda: [0], 1)
    assert not hasattr(context, "truth") and not hasattr(context, "gold_values")


def test_the_rules_each_hold_on_their_own():
    budget = StepBudget(2)
    budget.take()
    assert not budget.exhausted and "2 steps" in budget.refusal()
    budget.take()
    assert budget.exhausted

    specs = fiber_domain().catalog.tools
    gate = ApprovalGate(required=True, counterpart="subscriber")
    refusal = gate.refusal("reboot_ont", specs["reboot_ont"])
    assert refusal is not None and refusal.error_kind == "approval_required"
    assert "ask the subscriber" in refusal.error
    assert gate.refusal("ont_status", specs["ont_status"]) is None  # reads need no approval
    gate.heard(False)  # a message that asks for no approval
    assert gate.refusal("reboot_ont", specs["reboot_ont"]) is not None
    gate.heard(True)  # a yes, in a domain that does not read what a request describes
    assert gate.refusal("reboot_ont", specs["reboot_ont"]) is None
    gate.ran(specs["reboot_ont"], ToolResult({"status": "online"}))
    assert gate.refusal("reboot_ont", specs["reboot_ont"]) is not None  # one approval per change
    assert (
        ApprovalGate(required=False, counterpart="x").refusal("reboot_ont", specs["reboot_ont"])
        is None
    )

    seen = Remeasurements()
    read, write = specs["ont_status"], specs["reboot_ont"]
    ok = ToolResult({"status": "offline"})
    assert seen.ran("ont_status", {"ont_id": "ONT-0001"}, read, ok) is False
    assert seen.ran("ont_status", {"ont_id": "ONT-0001"}, read, ok) is False  # no change yet
    assert seen.ran("reboot_ont", {"ont_id": "ONT-0001"}, write, ok) is False
    assert seen.ran("ont_status", {"ont_id": "ONT-0001"}, read, ok) is True
    assert seen.ran("ont_status", {"ont_id": "ONT-0002"}, read, ok) is False  # not read before
    failed = ToolResult(None, "not_found", "no such ONT")
    assert seen.ran("ont_status", {"ont_id": "ONT-0001"}, read, failed) is False


def test_a_read_after_the_fix_remeasures_and_stays_out_of_the_chain():
    env, gold = _env()
    play(env, (*gold, gold[0]))
    *_, info = env.step(SUBMIT)
    remeasured = [record.remeasure for record in info["trace"].actions]
    assert remeasured == [False, False, True, False]
    assert info["predicted_chain"] == ["ont_status", "reboot_ont"] and info["resolved"]


def test_calls_past_the_budget_in_one_message_are_refused_and_truncate():
    env, gold = _env(max_steps=2)
    message = {"tool_calls": [{"function": call} for call in (gold[0], gold[0], gold[1])]}
    observation, _, terminated, truncated, info = env.step(message)
    outputs = json.loads(observation)
    assert [o["output"].get("error", {}).get("type") for o in outputs] == [
        None,
        None,
        "step_budget_exhausted",
    ]
    assert truncated and not terminated and info["steps"] == 2 and info["resolved"] is False
    assert env.episode.setup.state.onts[gold[1]["arguments"]["ont_id"]]["status"] == "offline"


def test_the_episode_is_the_same_for_the_same_seed_and_snapshots_cross_processes():
    env, gold = _env()
    again, _ = _env()
    assert env.trace.problem_statement == again.trace.problem_statement
    other = TelcoEnv("ont_offline", domain="fiber", embedder=None)
    statements = {other.reset(seed=seed)[0] for seed in range(6)}
    assert len(statements) > 1  # the seed draws the scenario
    env.step(gold[0])
    env.step("Is the light still red?")
    state = json.loads(env.get_state().model_dump_json())  # as it would cross a process
    restored = make_env("ont_offline", domain="fiber")
    restored.set_state(state)
    for one in (env, restored):
        one.step(gold[1])
        one.step(SUBMIT)
    assert restored.trace.model_dump() == env.trace.model_dump()


def test_after_the_end_nothing_changes_what_was_returned():
    env, gold = _env()
    play(env, gold)
    *_, final = env.step(SUBMIT)
    kept = final["trace"].model_dump()
    observation, reward, terminated, *_ = env.step(gold[1])
    assert json.loads(observation)["error"]["type"] == "episode_ended" and reward == 0.0
    assert env.step("thanks!")[0] == "Thanks, bye." and terminated
    assert (
        final["trace"].model_dump() == kept and len(env.trace.actions) == len(kept["actions"]) + 2
    )


def test_a_wrapper_limit_truncates_through_the_env_and_render_shows_the_transcript():
    env = ToolBudget(
        TelcoEnv("ont_offline", domain="fiber", embedder=None, render_mode="ansi"),
        max_tool_calls=1,
    )
    statement, _ = env.reset(seed=2)
    ont = statement.split()[-1].rstrip(".")
    *_, terminated, truncated, info = env.step({"name": "ont_status", "arguments": {"ont_id": ont}})
    assert truncated and not terminated and "tool budget" in info["truncation_reason"]
    lines = env.render().splitlines()
    assert lines[0].startswith("[subscriber] My internet is down")
    assert lines[1] == f'[agent:tool_call] ont_status {{"ont_id":"{ont}"}}'
    with pytest.raises(ResetNeeded):
        env.unwrapped.truncate("again")


def test_bad_settings_and_options_raise_at_the_edge():
    with pytest.raises(ResetNeeded):
        TelcoEnv("ont_offline", domain="fiber", embedder=None).step("hello")
    for kwargs in ({"max_steps": 0}, {"privileged": "yes"}, {"lang": "fr"}, {"reward_mode": "x"}):
        with pytest.raises(EpisodeOptionError):
            TelcoEnv("ont_offline", domain="fiber", embedder=None, **kwargs)
    env = TelcoEnv("ont_offline", domain="fiber", embedder=None)
    for options in ({"colour": "red"}, {"sample_index": -1}, {"intent_list": 1}, ["lang"]):
        with pytest.raises(EpisodeOptionError):
            env.reset(seed=1, options=options)
    with pytest.raises(UnknownIntentError, match="NOPE"):
        env.reset(options={"blueprint": "NOPE"})


def test_a_tool_registry_refuses_a_second_implementation_of_a_name():
    tools = ToolRegistry()

    @tools.tool
    def ping(context: object) -> dict:
        return {"pong": True}

    with pytest.raises(TelcoEnvError, match="'ping' is implemented twice"):
        tools.tool(ping)
    assert dict(tools) == {"ping": ping}


def test_a_domain_of_another_world_model_is_built_once_and_a_model_it_lacks_is_refused():
    network = get_domain("network")
    blueprint = get_domain("network", world_model="blueprint")
    assert (network.world_model, blueprint.world_model) == ("physical", "blueprint")
    assert get_domain("network", world_model="blueprint") is blueprint
    assert get_domain("network", world_model="physical") is network
    with pytest.raises(EpisodeOptionError, match=r"no world model 'lookup'; its models: \["):
        get_domain("network", world_model="lookup")
    with pytest.raises(EpisodeOptionError, match=r"domain 'fiber' has no world model 'x'$"):
        get_domain("fiber", world_model="x")
