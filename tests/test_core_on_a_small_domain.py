"""The environment's core mechanics on the small fibre domain of ``tests/plugins``, without
either packaged domain: the episode lifecycle, refused actions, the step budget, approval,
snapshots, rewards recomputed from the trace, and the info contract."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from telcoenv.domains import get_domain, register_domain, unregister_domain
from telcoenv.env import TelcoEnv
from telcoenv.rewards import Shaping, episode_rewards


def _load_plugin():
    """Import the plug-in package from its folder without putting the folder on sys.path:
    its entry point must not be discovered by the other tests of this process."""
    folder = Path(__file__).resolve().parent / "plugins" / "telcoenv_fiber"
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


SUBMIT = {"name": "submit_resolution", "arguments": {"intent": "ONT offline", "summary": "done"}}


def _env(**kwargs) -> tuple[TelcoEnv, list[dict]]:
    env = TelcoEnv("ont_offline", domain="fiber", privileged=True, embedder=None, **kwargs)
    _, info = env.reset(seed=5)
    gold = [
        {"name": c["tool"], "arguments": c["arguments"]} for c in info["privileged"]["gold_chain"]
    ]
    return env, gold


def test_the_gold_chain_resolves_and_scores_the_maximum():
    env, gold = _env()
    for action in gold:
        env.step(action)
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
    shaping = Shaping(invalid_action=-0.5, gold_step=1.0, resolution_bonus=2.0)
    env, gold = _env(reward_mode="shaped", shaping=shaping)
    rewards = [env.step({"name": "nope", "arguments": {}})[1]]
    rewards += [env.step(action)[1] for action in gold]
    _, last, *_, info = env.step(SUBMIT)
    recomputed = episode_rewards(info["trace"], mode="shaped", shaping=shaping)
    # The refused call is in the predicted chain, so SAS is below 1; the bonus is for resolving.
    assert rewards == [-0.5, 1.0, 1.0] and info["metrics"]["sas"] < 1
    assert last == pytest.approx(info["metrics"]["sas"] + 2.0)
    assert recomputed.per_step == pytest.approx([*rewards, last])


def test_the_registered_domain_is_shared_and_its_tools_cannot_see_the_truth():
    assert get_domain("fiber") is fiber_domain()
    env, _ = _env()
    context = env.domain.tool_context(env.episode.setup, lambda: [0], 1)
    assert not hasattr(context, "truth") and not hasattr(context, "gold_values")
