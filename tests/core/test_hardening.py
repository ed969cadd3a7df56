"""Issue 12's promises, one targeted test each: hostile agent output becomes a precise error
observation in every slot and through every wrapper (the TRL, verl and OpenEnv adapters: in
``tests/integrations``); numbers are numbers; snapshots replay non-JSON actions exactly; options
are typed; the step budget holds for multi-call messages; step infos share no mutable objects;
no tool can reach the ground truth."""

from __future__ import annotations

import itertools
import json
import types
import warnings

import gymnasium
import numpy as np
import orjson
import pytest
from gymnasium.utils.passive_env_checker import data_shares_objects

import telcoenv
from telcoenv.env import TelcoEnv
from telcoenv.errors import EpisodeOptionError
from telcoenv.snapshot import EnvState
from telcoenv.wrappers import ChatMessages, RawTextAction
from tests.conftest import (
    HOSTILE_ACTIONS,
    deep_list,
    error_of,
    gold_actions,
    make_env,
    network_episode,
    play,
    serving_cell,
    submit,
)


class _BrokenRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


# (value, the error type, words the message must hold) for a value in a tool argument.
BAD_ARGUMENTS = [
    ("\udc80", "invalid_arguments", "lone UTF-16 surrogate"),
    ("ok \ud83d", "invalid_arguments", "lone UTF-16 surrogate"),
    (float("nan"), "invalid_arguments", "is NaN"),
    (float("inf"), "invalid_arguments", "is infinite"),
    (-float("inf"), "invalid_arguments", "is infinite"),
    (np.float64("nan"), "invalid_arguments", "is NaN"),
    (b"bytes", "invalid_arguments", "Python bytes"),
    ({1, 2}, "invalid_arguments", "Python set"),
    ((i for i in range(2)), "invalid_arguments", "Python generator"),
    (_BrokenRepr(), "invalid_arguments", "Python _BrokenRepr"),
    (deep_list(100_000), "invalid_arguments", "deeper than 32 levels"),
    pytest.param(10**400, "invalid_arguments", "an integer of 401 digits", id="int-401-digits"),
    pytest.param(  # json.dumps raised
        -(10**5000), "invalid_arguments", "more than 4,300 digits", id="int-5001-digits"
    ),
]
DOMAINS = {
    "network": ("beam_misalignment", "oss_query", "cell_id"),
    "bss": ("duplicate_charge", "get_customer", "msisdn"),
}


@pytest.fixture(params=sorted(DOMAINS))
def domain_env(request):
    intent, tool, argument = DOMAINS[request.param]
    env = telcoenv.make(intent, embedder=None, max_steps=200).unwrapped
    env.reset(seed=3)
    yield env, tool, argument
    env.close()


@pytest.mark.parametrize(("value", "kind", "words"), BAD_ARGUMENTS)
def test_a_bad_value_in_any_argument_is_refused_naming_the_argument(domain_env, value, kind, words):
    env, tool, argument = domain_env
    for action in (
        {"name": tool, "arguments": {argument: value}},
        {
            "role": "assistant",
            "tool_calls": [{"function": {"name": tool, "arguments": {argument: value}}}],
        },
        {"name": "submit_resolution", "arguments": {"intent": "x", "summary": value}},
    ):
        observation, _, terminated, _, info = env.step(action)
        error = error_of(observation)
        assert (error["type"], info["action"]["valid"], terminated) == (kind, False, False)
        assert words in error["message"] and "argument '" in error["message"]
        record = env.trace.actions[-1]
        assert record.error_kind == kind and record.tool in (tool, "submit_resolution")
    assert env.trace.submission is None
    json.loads(env.trace.model_dump_json())


@pytest.mark.parametrize(
    ("action", "kind", "words"),
    [
        ("hello \udc80", "invalid_text", "lone UTF-16 surrogate"),
        ({"role": "assistant", "content": "\ud800 cut"}, "invalid_text", "message content"),
        ("[" * 100_000, "malformed_json", "too deeply"),
        ('{"a":' * 100_000, "malformed_json", "too deeply"),
        (deep_list(100_000), "unsupported_action", "action type list"),
        (b"bytes", "unsupported_action", "action type bytes"),
        ({"x", "y"}, "unsupported_action", "action type set"),
        ((1, 2), "unsupported_action", "action type tuple"),
        (np.array([1, 2]), "unsupported_action", "action type ndarray"),
        (_BrokenRepr(), "unsupported_action", "action type _BrokenRepr"),
        ({1: "x"}, "unsupported_action", "object keys must be valid text"),
        ({"name": float("nan"), "arguments": {}}, "non_finite_number", "tool name"),
        ({"tool_calls": deep_list(1000)}, "malformed_action", "tool_calls[0] must be an object"),
        (f'{{"name": "x", "arguments": {{"a": 1{"0" * 5000}}}}}', "malformed_json", "4,300 digits"),
    ],
)
def test_a_bad_action_is_one_precise_error_observation(domain_env, action, kind, words):
    env, _, _ = domain_env
    observation, reward, terminated, truncated, info = env.step(action)
    error = error_of(observation)
    assert error["type"] == kind and words in error["message"], error
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert info["invalid_actions"] == 1 and info["steps"] == 1
    record = env.trace.actions[-1]
    assert (record.kind, record.valid, record.error_kind) == ("invalid", False, kind)
    json.dumps(record.raw)  # what was received is kept, as JSON


def test_json_text_with_nan_infinity_and_escaped_surrogates_names_the_argument():
    env = TelcoEnv("beam_misalignment", embedder=None)
    env.reset(seed=0)
    for text, words in [
        ('{"name": "oss_query", "arguments": {"cell_id": "a", "window": Infinity}}', "infinite"),
        ('{"name": "oss_query", "arguments": "{\\"cell_id\\": NaN}"}', "is NaN"),
        ('{"name": "oss_query", "arguments": {"cell_id": "\\udc80"}}', "surrogate"),
    ]:
        error = error_of(env.step(text)[0])
        assert error["type"] == "invalid_arguments" and words in error["message"]
        assert "argument 'cell_id'" in error["message"] or "argument 'window'" in error["message"]


def test_numbers_beyond_a_doubles_range_are_refused_and_the_rest_scored():
    """Python reads and writes no integer of over 4,300 digits (a ValueError, which step raised
    for JSON text and for a Python int alike), and float() overflows past 2**1024 (argument
    accuracy raised at the submission after a refused call held 10**400; found by a semantic
    fuzz campaign)."""
    env, info, cell = network_episode("pci_collision", seed=1)
    huge = "1" + "0" * 5000
    text_arguments = {"name": "oss_query", "arguments": f'{{"cell_id": {huge}}}'}
    error = error_of(env.step(text_arguments)[0])
    assert error["type"] == "malformed_arguments" and "4,300 digits" in error["message"]
    wrapped = RawTextAction(env, parser="hermes")
    observation = wrapped.step(
        f'<tool_call>{{"name": "oss_query", "arguments": {huge}}}</tool_call>'
    )
    assert "error" in json.loads(observation[0])
    # The largest accepted integer reaches the schema, which refuses it for the argument; the
    # refused call is scored with the rest.
    largest = {
        "name": "optimize_cell",
        "arguments": {"cell_id": cell, "changes": {"tilt_deg": 2**1023 - 1}},
    }
    error = error_of(env.step(largest)[0])
    assert error["type"] == "invalid_arguments" and "too large" not in error["message"]
    *_, terminated, _, final = env.step(submit("pci_collision", "a summary"))
    assert terminated and final["metrics"]["args"] is not None and "metrics_error" not in final


def test_a_surrogate_pair_written_as_two_code_points_is_one_valid_character():
    env = TelcoEnv("beam_misalignment", embedder=None)
    env.reset(seed=0)
    observation, *_ = env.step("thanks \ud83d\ude00 which cell?")
    assert "error" not in observation  # the engineer answers
    assert env.trace.actions[-1].raw == "thanks 😀 which cell?"


def test_numpy_scalars_are_the_numbers_they_are_and_the_episode_scores_the_same():
    def play(convert) -> tuple:
        env = make_env("beam_misalignment")
        _, info = env.reset(seed=5)
        for action in gold_actions(info):
            arguments = {k: convert(v) for k, v in action["arguments"].items()}
            if action["name"] == "optimize_cell":
                arguments["changes"] = {k: convert(v) for k, v in arguments["changes"].items()}
            *_, info = env.step({"name": action["name"], "arguments": arguments})
        env.step(submit("Beam Misalignment", "y"))
        return env.trace.verification["resolved"], [a.observation for a in env.trace.actions]

    def numpy_number(value):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return value
        return np.int64(value) if isinstance(value, int) else np.float32(value)

    plain, as_numpy = play(lambda v: v), play(numpy_number)
    assert plain[0] is True and as_numpy == plain


def test_nan_and_out_of_range_numbers_are_refused_by_the_schema_not_a_database_constraint():
    env = make_env("beam_misalignment")
    env.reset(seed=0)
    cell = serving_cell(env)
    for value, words in [(float("nan"), "is NaN"), (99.0, "maximum"), (-1, "minimum")]:
        call = {
            "name": "optimize_cell",
            "arguments": {"cell_id": cell, "changes": {"tilt_deg": value}},
        }
        error = error_of(env.step(call)[0])
        assert error["type"] == "invalid_arguments", error
        assert words in error["message"] and "changes" in error["message"]
        assert "CHECK" not in error["message"] and "constraint" not in error["message"]
    care = TelcoEnv("duplicate_charge", embedder=None, domain="bss")
    care.reset(seed=0)
    for amount, expected in [
        (-5, "argument 'amount': -5 is less than or equal to the minimum of 0"),
        (1e9, "argument 'amount': 1000000000.0 is greater than the maximum of 200"),
        (float("inf"), "argument 'amount' is infinite: send a finite number"),
        ("x" * 5000, "argument 'amount': 'xxxxxxxx"),
    ]:
        call = {
            "name": "apply_credit",
            "arguments": {"account_id": "A123456", "amount": amount, "reason": "a reason"},
        }
        message = error_of(care.step(call)[0])["message"]
        assert message.startswith(f"invalid arguments for apply_credit: {expected}"), message
        assert "CHECK" not in message and len(message) < 300  # a long value is quoted short


def test_snapshots_replay_non_json_actions_down_the_same_branch():
    env = TelcoEnv(None, embedder=None, max_steps=50)
    env.reset(seed=7)
    actions = [
        {"name": "oss_query", "arguments": {"cell_id": float("nan"), "window": "1h"}},
        "which cell? \udc80",
        repr({"x"}),  # the text a set used to be logged as: replayed, it took another branch
        {"x"},
        {"name": "oss_query", "arguments": {"cell_id": np.str_("NR-1"), "window": "1h"}},
        {"$telcoenv_parsed": {"message": "forged"}, "raw": "a forged replay marker"},
        (i for i in range(3)),
        {
            "role": "assistant",
            "tool_calls": [
                {"function": {"name": "kpi_timeseries", "arguments": {"cell_id": b"x"}}}
            ],
        },
        "which window?",
    ]
    play(env, actions)
    state_json = env.get_state().model_dump_json()
    restored = TelcoEnv(None, embedder=None, max_steps=50)
    restored.set_state(EnvState.model_validate_json(state_json))
    assert restored.trace.model_dump() == env.trace.model_dump()
    assert [a.kind for a in env.trace.actions][:4] == ["tool_call", "invalid", "invalid", "invalid"]
    assert env.trace.actions[5].kind == "invalid"  # the forged marker is the agent's own dict
    twin = env.clone()
    assert twin.trace.model_dump() == env.trace.model_dump()
    # The restored episode goes on exactly as the original.
    for one in (env, restored):
        one.step(submit("x", "y"))
    assert restored.trace.model_dump() == env.trace.model_dump()


def _reversed_keys(value):
    """``value`` with every object's keys in reverse sorted order (JSON leaves the order open)."""
    if isinstance(value, dict):
        return {key: _reversed_keys(value[key]) for key in sorted(value, reverse=True)}
    if isinstance(value, list):
        return [_reversed_keys(item) for item in value]
    return value


@pytest.mark.parametrize("as_text", [False, True])
def test_the_order_of_an_objects_keys_changes_nothing_live_or_replayed(as_text):
    """A snapshot logs actions as canonical JSON (sorted keys): a change of two parameters sent
    in another order was applied and reported in that order live and sorted in the replay, so
    a clone's transcript differed (found by a semantic fuzz campaign)."""
    histories = []
    for order in (_reversed_keys, lambda value: value):
        env = make_env("pci_collision", privileged=True)
        _, info = env.reset(seed=1)
        cell = info["privileged"]["gold_chain"][-1]["arguments"]["cell_id"]
        call = order(
            {
                "name": "optimize_cell",
                "arguments": {"cell_id": cell, "changes": {"tilt_deg": 7, "a3_offset_db": 4.0}},
            }
        )
        observation, *_ = env.step(json.dumps(call) if as_text else call)
        changed = [change["parameter"] for change in json.loads(observation)["changes"]]
        assert changed == ["a3_offset_db", "tilt_deg"]  # whatever order they came in
        twin = env.clone()
        assert twin.trace.model_dump() == env.trace.model_dump()
        histories.append(env.trace.model_dump(mode="json")["actions"])
    assert histories[0] == histories[1]


@pytest.mark.parametrize(
    "options",
    [
        {"privileged": "no"},
        {"privileged": "false"},
        {"intent_list": 0},
        {"require_approval": 1},
        {"sample_index": True},
        {"sample_index": "3"},
        {"sample_index": -1},
        {"lang": 1},
        {"blueprint": 5},
        {"unknown": 1},
    ],
)
def test_reset_options_are_typed(options):
    env = TelcoEnv("beam_misalignment", embedder=None)
    with pytest.raises(EpisodeOptionError) as error:
        env.reset(seed=0, options=options)
    assert next(iter(options)) in str(error.value)


def test_privileged_as_a_string_never_leaks_the_gold_chain():
    env = TelcoEnv("beam_misalignment", embedder=None)
    with pytest.raises(EpisodeOptionError, match="privileged"):
        env.reset(seed=0, options={"privileged": "no"})
    _, info = env.reset(
        seed=0, options={"privileged": np.bool_(False), "sample_index": np.int64(2)}
    )
    assert "privileged" not in info and env.trace.sample_index == 2


@pytest.mark.parametrize("options", [[("lang", "en")], "lang=en", 3])
def test_reset_options_that_are_not_a_mapping_are_refused(options):
    env = TelcoEnv("beam_misalignment", embedder=None)
    with pytest.raises(EpisodeOptionError, match="must be a dict"):
        env.reset(seed=0, options=options)


@pytest.mark.parametrize("seed", ["1", 1.5, -3])
def test_a_bad_seed_is_an_option_error(seed):
    with pytest.raises(EpisodeOptionError, match="seed"):
        TelcoEnv("beam_misalignment", embedder=None).reset(seed=seed)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"privileged": "no"},
        {"intent_list": "false"},
        {"require_approval": 1},
        {"max_steps": True},
        {"max_steps": "20"},
        {"max_steps": 0},
        {"blueprint": 3},
        {"database_url": 5},
        {"domain": 5},
    ],
)
def test_make_keyword_arguments_are_typed(kwargs):
    with pytest.raises(EpisodeOptionError, match=next(iter(kwargs))):
        telcoenv.make("beam_misalignment", embedder=None, **kwargs)


def test_numpy_scalars_are_accepted_as_make_arguments():
    env = telcoenv.make(
        "beam_misalignment", embedder=None, max_steps=np.int64(5), privileged=np.bool_(True)
    )
    _, info = env.reset(seed=np.int64(4))
    assert env.unwrapped.max_steps == 5 and "privileged" in info


def test_every_call_of_a_multi_call_message_takes_a_step_of_the_budget():
    env = make_env("beam_misalignment", max_steps=3)
    _, info = env.reset(seed=0)
    call = gold_actions(info)[0]
    message = {
        "role": "assistant",
        "tool_calls": [{"function": call}] * 4 + [{"function": submit("x", "y")}],
    }
    observation, _, terminated, truncated, info = env.step(message)
    assert (terminated, truncated, info["steps"], info["tool_calls"]) == (False, True, 3, 3)
    refused = [a for a in env.trace.actions if a.error_kind == "step_budget_exhausted"]
    assert [a.tool for a in refused] == [call["name"], "submit_resolution"]
    assert env.trace.submission is None
    assert {a.step for a in env.trace.actions} == {1}  # one action: its records share a step
    outputs = json.loads(observation)
    assert len(outputs) == 5 and "steps are used up" in outputs[-1]["output"]["error"]["message"]


def test_a_multi_call_message_within_the_budget_counts_each_call():
    env = make_env("beam_misalignment", max_steps=10)
    _, info = env.reset(seed=0)
    calls = [{"function": c} for c in gold_actions(info)[:2]]
    *_, info = env.step({"role": "assistant", "tool_calls": calls})
    assert info["steps"] == 2 and info["tool_calls"] == 2
    *_, truncated, info = env.step("which cell?")
    assert info["steps"] == 3 and not truncated


def _collect(env: gymnasium.Env) -> list[dict]:
    infos = []
    _, info = env.reset(seed=0)
    infos.append(info)
    for action in [
        *gold_actions(info),
        submit("x", "y"),
        "after the end",
        "again",
    ]:
        infos.append(env.step(action)[-1])
    return infos


def test_consecutive_infos_share_no_mutable_object():
    env = make_env("beam_misalignment")
    infos = _collect(env)
    for previous, current in itertools.pairwise(infos):
        assert not data_shares_objects(previous, current)
    second_reset = env.reset(seed=0)[1]
    assert second_reset["tools"] is not infos[0]["tools"]
    assert second_reset["tools"][0] is not infos[0]["tools"][0]
    second_reset["tools"][0]["function"]["name"] = "changed by the caller"
    assert env.reset(seed=0)[1]["tools"][0]["function"]["name"] != "changed by the caller"


def test_the_trace_returned_at_the_end_is_not_changed_by_later_steps():
    env = make_env("beam_misalignment")
    infos = _collect(env)
    final = infos[-3]
    assert final["trace"].terminated and final["trace"].actions[-1].kind == "submit"
    assert infos[-1]["trace"].actions[-1].kind == "after_end"
    assert len(infos[-1]["trace"].actions) == len(final["trace"].actions) + 2


def test_the_gymnasium_checker_sees_no_shared_info():
    from gymnasium.utils.env_checker import check_env

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(TelcoEnv("beam_misalignment", embedder=None), skip_render_check=True)
    assert not [w for w in caught if "share" in str(w.message)]


# --- wrappers (the trainer adapters' hardening is tested in tests/integrations) ---------------


@pytest.mark.parametrize("wrap", ["json", "hermes", "chat"])
@pytest.mark.parametrize("domain", ["network", "bss"])
def test_wrappers_answer_every_hostile_action(wrap, domain):
    base = TelcoEnv(None, domain=domain, embedder=None, max_steps=100)
    env = ChatMessages(base) if wrap == "chat" else RawTextAction(base, wrap)
    env.reset(seed=1)
    for action in HOSTILE_ACTIONS:
        observation, *_ = env.step(action)
        assert observation
    if wrap == "chat":
        messages = env.step("which cell?")[0]
        orjson.dumps(messages)  # strict UTF-8: valid chat data for any server
        calls = [m for m in messages if m.get("tool_calls")]
        answered = {m["tool_call_id"] for m in messages if m["role"] == "tool"}
        assert calls and {c["id"] for m in calls for c in m["tool_calls"]} == answered


@pytest.mark.slow
def test_a_snapshot_with_non_json_actions_restores_identically_in_another_process(tmp_path):
    import os
    import subprocess
    import sys

    env = TelcoEnv("beam_misalignment", embedder=None, max_steps=30)
    env.reset(seed=11)
    for action in [
        {"name": "oss_query", "arguments": {"cell_id": float("nan"), "window": "1h"}},
        "which cell? \udc80",
        {"x"},
        {"name": "oss_query", "arguments": {"cell_id": np.float32(2), "window": np.str_("1h")}},
        "which window?",
    ]:
        env.step(action)
    path = tmp_path / "state.json"
    path.write_text(env.get_state().model_dump_json(), encoding="utf-8")
    script = (
        "import sys; from telcoenv.env import TelcoEnv; from telcoenv.snapshot import EnvState\n"
        "env = TelcoEnv('beam_misalignment', embedder=None, max_steps=30)\n"
        "env.set_state(EnvState.model_validate_json(open(sys.argv[1]).read()))\n"
        "sys.stdout.write(env.trace.model_dump_json())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(path)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "123"},
    )
    assert done.stdout == env.trace.model_dump_json()


def _reachable(root: object) -> list[object]:
    """Every object a tool can reach from its context by attributes and container items (our
    own classes and plain containers; functions, modules and classes are not entered, so the
    causal-model hook behind ``after_change`` counts as opaque)."""
    seen: dict[int, object] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        opaque = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.ModuleType)
        if id(node) in seen or isinstance(node, (*opaque, type)):
            continue
        seen[id(node)] = node
        if isinstance(node, dict):
            stack.extend([*node.keys(), *node.values()])
        elif isinstance(node, list | tuple | set | frozenset):
            stack.extend(node)
        elif type(node).__module__.startswith("telcoenv"):
            stack.extend(vars(node).values() if hasattr(node, "__dict__") else [])
            for name in getattr(type(node), "__slots__", ()):
                if hasattr(node, name):
                    stack.append(getattr(node, name))
    return list(seen.values())


@pytest.mark.parametrize("domain", ["network", "bss"])
def test_no_tool_can_reach_the_ground_truth(domain):
    from telcoenv.domains import EpisodeSetup
    from telcoenv.domains.bss.generator import BssData
    from telcoenv.domains.bss.models import CareIntent
    from telcoenv.domains.network.models import Intent
    from telcoenv.domains.network.topology import Fault
    from telcoenv.trace import EpisodeTrace

    env = TelcoEnv(None, domain=domain, embedder=None)
    forbidden = (EpisodeSetup, EpisodeTrace, Fault, BssData, Intent, CareIntent)
    for seed in range(12):  # intents of every kind of fault
        env.reset(seed=seed)
        setup = env.episode.setup  # the test looks behind the curtain the tools cannot
        context = env.domain.tool_context(setup, lambda: [0], 1)
        reached = _reachable(context)
        leaks = [type(o).__name__ for o in reached if isinstance(o, forbidden)]
        assert not leaks, leaks
        gold = {
            id(setup.gold_values),
            id(setup.truth),
            *(id(v) for v in setup.gold_values.values()),
        }
        shared = [o for o in reached if id(o) in gold and o is not None]
        assert not [o for o in shared if not isinstance(o, str | int | float)], shared
