"""What driving the environment as a careless caller found (session 21), one test each: numpy
long doubles, a closed environment, a refused reset, integers past JSON, long values echoed in
error observations, arguments that contradict the environment's id, wrapper constructors,
malformed snapshots, content parts, and parsers that took quadratic time."""

from __future__ import annotations

import copy
import json
import time

import numpy as np
import pytest
from gymnasium.error import ResetNeeded

import telcoenv
from telcoenv.actions import REPLAY_MARKER, message_action
from telcoenv.env import TelcoEnv
from telcoenv.errors import EpisodeOptionError
from telcoenv.options import MAX_INDEX_BITS
from telcoenv.wrappers import RawTextAction, ToolBudget, TrajectoryRecorder
from telcoenv.wrappers.parsers import parse_function_tags, parse_hermes, parse_json_call
from tests.conftest import error_of, serving_cell

BIG = "Z" * 1_000_000


@pytest.fixture
def env() -> TelcoEnv:
    env = TelcoEnv("coverage_hole", embedder=None, max_steps=50)
    env.reset(seed=0)
    yield env
    env.close()


@pytest.mark.parametrize(
    "action",
    [
        {"name": "oss_query", "arguments": {"cell_id": "x", "window": np.longdouble(3)}},
        {"name": "oss_query", "arguments": {"cell_id": np.clongdouble(1 + 2j)}},
        {"name": "oss_query", "arguments": {"cell_id": np.array([np.longdouble(2)])}},
        np.array([1.5], dtype=np.longdouble),
        np.longdouble(2),
    ],
    ids=["argument", "complex-argument", "array-argument", "array", "scalar"],
)
def test_numpy_long_doubles_are_error_observations(env, action):
    # .item() of a long double is a long double: converting it recursed until RecursionError.
    observation, _, terminated, _, info = env.step(action)
    assert error_of(observation)["type"] in ("invalid_arguments", "unsupported_action")
    assert not terminated and info["invalid_actions"] == 1


@pytest.mark.parametrize("intent", ["coverage_hole", "bill_shock"])
def test_a_closed_environment_refuses_steps_until_its_next_reset(intent):
    env = telcoenv.make(intent, embedder=None).unwrapped
    env.reset(seed=4)
    env.close()  # its episode's rows went with the database
    with pytest.raises(ResetNeeded, match="closed"):
        env.step("Which cell is affected?")
    with pytest.raises(ResetNeeded, match="closed"):
        env.truncate("budget")
    assert env.trace is not None and len(env.get_state().actions) == 0  # kept for reading
    statement, _ = env.reset(seed=4)
    assert statement and env.step("hello")[0]


def test_a_refused_reset_leaves_the_generator_as_it_was():
    def statements(refuse: bool) -> list[str]:
        env = TelcoEnv(None, embedder=None)
        env.reset(seed=1)
        if refuse:
            for options in ({"blueprint": "NOPE"}, {"intent": "nope"}, {"lang": "fr"}):
                with pytest.raises(EpisodeOptionError if "lang" in options else KeyError):
                    env.reset(seed=99, options=options)
        return [env.reset()[0] for _ in range(3)]

    assert statements(refuse=True) == statements(refuse=False)


@pytest.mark.parametrize(
    "reset",
    [
        {"seed": 2**MAX_INDEX_BITS},
        {"seed": 10**5000},
        {"seed": -1},
        {"options": {"blueprint": "COV_HOLE_DOWNTOWN", "sample_index": 10**5000}},
    ],
    ids=["seed-2**1023", "seed-5001-digits", "seed-negative", "sample-index-5001-digits"],
)
def test_seeds_and_sample_indexes_past_json_are_refused_naming_them(reset):
    env = TelcoEnv("coverage_hole", embedder=None)
    name = "seed" if "seed" in reset else "sample_index"
    with pytest.raises(EpisodeOptionError, match=f"{name} must be a non-negative integer below"):
        env.reset(**reset)
    statement, _ = env.reset(seed=2**MAX_INDEX_BITS - 1)  # the largest is played
    assert statement


@pytest.mark.parametrize(
    "action",
    [
        {"name": BIG, "arguments": {}},
        {"name": "oss_query", "arguments": {"cell_id": BIG, "window": "1h"}},
        {"name": "oss_query", "arguments": {"cell_id": "x", "window": "1h", BIG: 1}},
        {"name": "kpi_timeseries", "arguments": {"cell_id": BIG, "kpi": "DL", "window": "1h"}},
        {"name": "push_config", "arguments": {"config_id": BIG}},
    ],
    ids=["tool-name", "cell-id", "argument-name", "kpi-cell-id", "config-id"],
)
def test_a_long_value_is_quoted_short_in_error_observations(env, action):
    observation = env.step(action)[0]
    message = error_of(observation)["message"]
    assert len(observation) < 2_000, message[:200]
    assert "(1000000 characters)" in message


def test_the_same_short_quote_in_customer_care():
    env = TelcoEnv(None, domain="bss", embedder=None)
    env.reset(seed=0)
    observation = env.step({"name": "get_customer", "arguments": {"msisdn": BIG}})[0]
    assert len(observation) < 2_000


@pytest.mark.parametrize(
    ("name", "kwargs", "words"),
    [
        ("coverage_hole", {"intent": "bler_anomaly"}, "fixed to intent 'COVERAGE_HOLE'"),
        ("customer_care", {"domain": "network"}, "fixed to domain 'bss'"),
        ("troubleshooting", {"domain": ""}, "unknown domain ''"),
        ("coverage_hole", {"render_mode": ["ansi"]}, "render_mode must be one of"),
        ("coverage_hole", {"reward": {"sas": 10**400}}, "must be a finite number"),
    ],
)
def test_make_refuses_arguments_that_contradict_the_id_or_are_malformed(name, kwargs, words):
    with pytest.raises(EpisodeOptionError, match=words):
        telcoenv.make(name, embedder=None, **kwargs)


def test_make_accepts_the_arguments_its_id_already_fixes():
    for name, kwargs in [
        ("coverage_hole", {"intent": "coverage_hole"}),
        ("coverage_hole", {"intent": "COVERAGE_HOLE"}),
        ("customer_care", {"domain": "bss"}),
    ]:
        telcoenv.make(name, embedder=None, **kwargs).close()


def test_a_refused_first_reset_leaves_the_environment_usable():
    # Gymnasium's passive checker marked the reset as checked though it raised, and every
    # later step then failed inside it.
    env = telcoenv.make("troubleshooting", embedder=None)
    with pytest.raises(KeyError):
        env.reset(seed=0, options={"intent": "no_such_intent"})
    env.reset(seed=0)
    assert env.step("Which cell is affected?")[0]


@pytest.mark.parametrize(
    ("wrap", "error"),
    [
        (lambda env, tmp: RawTextAction(env, parser=None), TypeError),
        (lambda env, tmp: RawTextAction(env, parser=5), TypeError),
        (lambda env, tmp: TrajectoryRecorder(env, tmp), ValueError),
        (lambda env, tmp: TrajectoryRecorder(env, ""), ValueError),
        (lambda env, tmp: ToolBudget(env, True), ValueError),
        (lambda env, tmp: ToolBudget(env, 0), ValueError),
    ],
    ids=[
        "parser-none",
        "parser-int",
        "recorder-folder",
        "recorder-empty",
        "budget-bool",
        "budget-0",
    ],
)
def test_wrapper_constructors_refuse_what_would_fail_later_in_step(tmp_path, wrap, error):
    with pytest.raises(error):
        wrap(telcoenv.make("coverage_hole", embedder=None), tmp_path)


def test_a_numpy_tool_budget_is_an_integer():
    env = ToolBudget(telcoenv.make("coverage_hole", embedder=None), np.int64(3))
    assert env.max_tool_calls == 3 and type(env.max_tool_calls) is int


@pytest.fixture
def snapshot(env) -> dict:
    env.step({"name": "oss_query", "arguments": {"cell_id": float("nan")}})  # a parsed entry
    state = env.get_state().model_dump(mode="json")
    assert REPLAY_MARKER in state["actions"][0]
    return state


@pytest.mark.parametrize(
    ("edit", "error", "words"),
    [
        (lambda s: s["actions"].__setitem__(0, {REPLAY_MARKER: {}}), ValueError, "exactly one"),
        (
            lambda s: s["actions"][0][REPLAY_MARKER]["calls"][0].pop("arguments"),
            ValueError,
            "arguments",
        ),
        (lambda s: s["actions"][0].pop("raw"), ValueError, "raw"),
        (lambda s: s["start"]["options"].update(difficulty="hard"), EpisodeOptionError, "hard"),
        (lambda s: s["start"].update(seed=-1), EpisodeOptionError, "seed"),
        (lambda s: s["start"].update(np_random={"a": 1}), EpisodeOptionError, "np_random"),
    ],
    ids=["marker-empty", "call-without-arguments", "no-raw", "difficulty", "seed", "generator"],
)
def test_a_malformed_snapshot_is_refused_before_anything_is_replayed(
    env, snapshot, edit, error, words
):
    state = copy.deepcopy(snapshot)
    edit(state)
    with pytest.raises(error, match=words):
        env.set_state(state)
    env.set_state(snapshot)  # the good one still restores
    assert env.get_state().model_dump(mode="json") == snapshot


def test_content_parts_are_a_message_and_json_text_in_a_message_is_not_a_call(env):
    asked = {"role": "assistant", "content": [{"type": "text", "text": "Which cell is affected?"}]}
    observation, _, _, _, info = env.step(asked)
    assert info["action"]["kind"] == "message" and serving_cell(env) in observation
    only_an_image = {"role": "assistant", "content": [{"type": "image_url", "image_url": {}}]}
    assert env.step(only_an_image)[4]["action"]["error_type"] == "empty_action"
    submission = json.dumps({"name": "submit_resolution", "arguments": {"intent": "x"}})
    info = env.step(message_action(submission))[4]
    assert info["action"]["kind"] != "submit" and env.trace.submission is None


@pytest.mark.parametrize(
    ("parse", "text"),
    [
        (parse_json_call, "```" + " " * 200_000 + "x"),
        (parse_json_call, "```json" + " " * 200_000 + "x"),
        (parse_hermes, "<tool_call>x" + " " * 200_000 + "y"),
        (parse_function_tags, "<function=a>" * 20_000),
        (parse_function_tags, '<function name="a" arguments=\'' * 20_000),
    ],
    ids=["fence", "json-fence", "hermes", "function-tags", "function-attributes"],
)
def test_parsers_take_linear_time_on_unclosed_blocks(parse, text):
    started = time.perf_counter()
    parse(text)
    # A sanity bound; it takes milliseconds (quadratic: minutes for the fences).
    assert time.perf_counter() - started < 2.0


def test_the_parsers_still_read_what_they_read():
    fenced = '```json\n{"name": "oss_query", "arguments": {"a": 1}}\n```'
    assert parse_json_call(fenced)["tool_calls"][0]["function"]["arguments"] == {"a": 1}
    hermes = parse_hermes('hi <tool_call>\n{"name": "x", "arguments": {}}\n</tool_call> bye')
    assert hermes["content"] == "hi  bye" and hermes["tool_calls"][0]["function"]["name"] == "x"
    tags = parse_function_tags(
        '<tools><function=x>{"a": 1}</function><function name="y" arguments=\'{"b": 2}\'/></tools>'
    )
    assert [c["function"]["arguments"] for c in tags["tool_calls"]] == [{"a": 1}, {"b": 2}]
