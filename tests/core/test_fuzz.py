"""Property tests: whatever an agent sends, step answers with an observation and never raises.

Actions are drawn from a grammar of hostile values (lone surrogates, deep nesting, huge strings,
Python objects, NaN and infinities, numpy values, tool names of both domains, multi-call
messages, JSON text of all of these). After every step: a string observation, counters that
agree with the trace, a trace that serialises, a database unchanged by a refused action, and a
snapshot that reproduces the episode exactly. The same invariants hold for well-formed calls
made with the ids and values the episode showed, which get the write tools past their checks to
their business rules.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter, defaultdict
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine, inspect, text

from telcoenv.domains import get_domain
from telcoenv.env import TelcoEnv
from telcoenv.tooling import canonical_json
from tests.conftest import deep_list


def _core_tools(domain: str) -> list[str]:
    """The core tools of a domain, from its catalogue (the distractors only read)."""
    return sorted(n for n, spec in get_domain(domain).catalog.tools.items() if spec.kind == "core")


TOOLS = {domain: _core_tools(domain) for domain in ("network", "bss")}
#: Tools that return documents (the care policy's pages), whose words are no values to reuse.
DOCUMENTS = frozenset({"search_policy", "read_policy"})
#: Every argument name of those tools and of submit_resolution, and one no tool has.
ARGUMENT_NAMES = sorted(
    {
        argument
        for domain, names in TOOLS.items()
        for name in [*names, "submit_resolution"]
        for argument in get_domain(domain).catalog.tools[name].parameters["properties"]
    }
    | {"x"}
)


hostile_scalars = st.sampled_from(
    [
        float("nan"),
        float("inf"),
        -float("inf"),
        "\udc80",
        "cut emoji \ud83d",
        "\ud83d\ude00",  # a pair written as two code points: valid once joined
        b"bytes",
        bytearray(b"x"),
        frozenset({1}),
        (1, "two"),
        np.int64(7),
        np.float32(2.5),
        np.float64("nan"),
        np.bool_(True),
        np.array([1.5, 2.5]),
        2**80,
        -(2**70),
        "\u202eRLO \u200b zero width \x00 nul",
    ]
) | st.sampled_from(
    [
        object,
        lambda: deep_list(200),
        lambda: "[" * 3000,
        lambda: "x" * 200_000,
        lambda: 10**5000,  # beyond what Python writes as JSON
        lambda: 2**1023 - 1,  # the largest integer an action may hold
    ]
).map(
    lambda make: make()  # built when drawn: short strategy reprs
)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
    | hostile_scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(max_size=10), children, max_size=4)
        | st.tuples(children, children)
    ),
    max_leaves=12,
)


def _tool_calls(domain: str) -> st.SearchStrategy:
    other = "bss" if domain == "network" else "network"
    names = st.sampled_from([*TOOLS[domain], *TOOLS[other][:2], "submit_resolution"])
    arguments = (
        st.dictionaries(st.sampled_from(ARGUMENT_NAMES), json_values, max_size=4)
        | st.text(max_size=30)
        | json_values
    )
    return st.fixed_dictionaries({"name": names | json_values, "arguments": arguments})


def _as_text(value: object) -> str:
    try:
        return json.dumps(value)  # NaN/Infinity and surrogate escapes included
    except (TypeError, ValueError, RecursionError):
        try:
            return repr(value)
        except ValueError:  # holds an integer of over 4,300 digits: as JSON text, unreadable
            return '{"name": "oss_query", "arguments": {"cell_id": 1' + "0" * 5000 + "}}"


def _actions(domain: str) -> st.SearchStrategy:
    calls = _tool_calls(domain)
    return (
        calls
        | calls.map(_as_text)
        | calls.map(lambda c: f"<tool_call>{_as_text(c)}</tool_call>")
        | st.text(max_size=60)
        | json_values
        | st.builds(
            lambda entries: {"role": "assistant", "tool_calls": entries},
            st.lists(calls.map(lambda c: {"function": c}) | json_values, max_size=4),
        )
        | st.builds(lambda: (i for i in range(3)))  # a generator
    )


def _dump(engine, episode_id: str) -> dict[str, list]:
    """Every row of the episode in every table, read through a separate connection."""
    with engine.connect() as connection:
        return {
            table: sorted(
                map(
                    repr,
                    connection.execute(
                        text(f"SELECT * FROM {table} WHERE episode_id = :e"), {"e": episode_id}
                    ),
                )
            )
            for table in inspect(connection).get_table_names()
        }


def _check_step(env: TelcoEnv, result: tuple, max_steps: int) -> None:
    observation, reward, terminated, truncated, info = result
    assert isinstance(observation, str) and observation
    assert 0.0 <= reward <= 1.0 and (reward == 0.0 or terminated or truncated)
    trace = env.trace
    assert info["invalid_actions"] == sum(not record.valid for record in trace.actions)
    assert info["steps"] <= max_steps
    last = trace.actions[-1]
    assert info["action"] == {
        "kind": last.kind,
        "valid": last.valid,
        "error_type": last.error_kind,
    }
    json.loads(trace.model_dump_json())  # whatever was sent, the trace is valid JSON


@contextmanager
def _env_on_a_file(domain: str, tmp_path, max_steps: int, **options: object):
    """An environment whose episodes are kept in a SQLite file, and an engine that reads them
    through a connection of its own (both closed at the end)."""
    url = f"sqlite:///{tmp_path}/fuzz.sqlite"
    env = TelcoEnv(
        None, domain=domain, max_steps=max_steps, embedder=None, database_url=url, **options
    )
    engine = create_engine(url)
    try:
        yield env, engine
    finally:
        env.close()
        engine.dispose()


def _check_snapshot(env: TelcoEnv) -> None:
    """The snapshot takes every action down the same branch: its clone's trace is the same."""
    twin = env.clone()
    assert canonical_json(twin.trace.model_dump(mode="json")) == canonical_json(
        env.trace.model_dump(mode="json")
    )
    twin.close()


@pytest.mark.slow  # property fuzzing
@pytest.mark.parametrize("domain", ["network", "bss"])
def test_step_never_raises_and_refused_actions_change_nothing(domain, tmp_path):
    max_steps = 8

    @settings(
        max_examples=60,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(seed=st.integers(0, 2**31 - 1), sequence=st.lists(_actions(domain), max_size=6))
    def run(seed: int, sequence: list) -> None:
        _, info = env.reset(seed=seed)
        stored_id = info["database_episode_id"]
        for action in sequence:
            before = _dump(engine, stored_id)
            records_before = len(env.trace.actions)
            result = env.step(action)
            _check_step(env, result, max_steps)
            new = env.trace.actions[records_before:]
            if not any(record.valid for record in new):
                assert _dump(engine, stored_id) == before, "a refused action changed the state"
        _check_snapshot(env)

    with _env_on_a_file(domain, tmp_path, max_steps) as (env, engine):
        run()


@pytest.mark.slow  # property fuzzing
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), sequence=st.lists(_actions("network"), max_size=10))
def test_step_never_raises_in_memory(seed, sequence):
    env = _MEMORY_ENV
    env.reset(seed=seed)
    for action in sequence:
        _check_step(env, env.step(action), 8)


_MEMORY_ENV = TelcoEnv(None, max_steps=8, embedder=None)


def test_canonical_json_is_sorted_compact_utf8_and_takes_what_orjson_refuses():
    value = {"b": [1, 2.5, None, True], "a": {"z": "عربي", "y": -0.125}, "c": 0.1}
    assert canonical_json(value) == ('{"a":{"y":-0.125,"z":"عربي"},"b":[1,2.5,null,true],"c":0.1}')
    assert json.loads(canonical_json(value)) == value
    huge = {"n": 2**80, "m": 1}  # beyond orjson's 64-bit integers: the fallback writes it
    assert canonical_json(huge) == '{"m":1,"n":1208925819614629174706176}'


# --- well-formed calls with the episode's own values ---------------------------------------------


def _harvest(value: object, pool: dict[str, list]) -> None:
    """Every scalar of a call's arguments or a tool's output, under its key: the ids and values
    the next calls can use (at most 20 a key)."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            for key, item in node.items():
                if isinstance(item, dict | list):
                    stack.append(item)
                elif item is not None and item not in pool[key] and len(pool[key]) < 20:
                    pool[key].append(item)


def _value(name: str, schema: dict, pool: dict[str, list]) -> st.SearchStrategy:
    """A value for a parameter: mostly one the episode showed under that name (or, for a
    pattern, under any name), else one of its enum, or one of its type at and beyond its
    bounds or of its pattern."""
    options = [st.sampled_from(pool[name])] * 3 if pool.get(name) else []
    if "enum" in schema:
        options.append(st.sampled_from(schema["enum"]))
    kind = schema.get("type")
    if kind == "object" and schema.get("properties"):
        fields = schema["properties"]
        options.append(
            st.lists(st.sampled_from(sorted(fields)), min_size=1, max_size=2, unique=True).flatmap(
                lambda keys: st.fixed_dictionaries({k: _value(k, fields[k], pool) for k in keys})
            )
        )
    elif kind in ("integer", "number"):
        low, high = schema.get("minimum", -5), schema.get("maximum", 500)
        if "exclusiveMinimum" in schema:
            low = schema["exclusiveMinimum"] + 1
        inside = st.integers(math.ceil(low), math.floor(high))
        if kind == "number":
            inside |= st.floats(low, high).map(lambda x: round(x, 1))
        options += [inside, inside, st.sampled_from([low - 1, low, high, high + 1])]
    elif kind == "boolean":
        options.append(st.booleans())
    elif kind == "string" and "enum" not in schema:
        strings = sorted({v for values in pool.values() for v in values if isinstance(v, str)})
        pattern = schema.get("pattern")
        if pattern:
            # Ids of the right form that the episode showed; made up ones when there are none.
            fitting = [v for v in strings if re.search(pattern, v)]
            options += [st.sampled_from(fitting)] * 2 if fitting else []
            options.append(st.from_regex(pattern, fullmatch=True) if not fitting else st.nothing())
        options.append(st.sampled_from(strings) if strings else st.text(max_size=12))
    return st.one_of(options) if options else json_values


def _arguments(parameters: dict, pool: dict[str, list]) -> st.SearchStrategy:
    """Arguments for a tool: usually every required one and some optional ones; sometimes any."""
    properties = parameters["properties"]
    required = set(parameters.get("required", []))
    values = {name: _value(name, schema, pool) for name, schema in properties.items()}
    usual = st.fixed_dictionaries(
        {n: v for n, v in values.items() if n in required},
        optional={n: v for n, v in values.items() if n not in required},
    )
    return st.one_of(usual, usual, usual, st.fixed_dictionaries({}, optional=values))


@pytest.mark.slow  # property fuzzing
@pytest.mark.parametrize("domain", ["network", "bss"])
def test_well_formed_calls_with_the_episodes_values_keep_every_invariant(domain, tmp_path):
    """Calls an agent could well make: core tools with the ids and values the episode showed
    (the gold chain's arguments, then every output), enums, numbers at and beyond their bounds,
    arguments left out. The write tools then pass their checks often enough to reach the
    business rules (counted below); the invariants are those of the hostile actions."""
    max_steps = 14
    specs = {name: get_domain(domain).catalog.tools[name] for name in TOOLS[domain]}
    outcomes: Counter[tuple[str, bool]] = Counter()

    @settings(
        max_examples=60,
        derandomize=True,  # the same calls every run: the counts below cannot flake
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(seed=st.integers(0, 2**31 - 1), data=st.data())
    def run(seed: int, data: st.DataObject) -> None:
        _, info = env.reset(seed=seed)
        stored_id = info["database_episode_id"]
        pool: dict[str, list] = defaultdict(list)
        gold = info["privileged"]["gold_chain"]
        _harvest([c["arguments"] for c in gold], pool)
        # First some of the gold chain (what an agent on the right track calls: the lookup,
        # the identity check before a change), then anything.
        prefix = [(c["tool"], c["arguments"]) for c in gold[: data.draw(st.integers(1, 3))]]
        for step in range(data.draw(st.integers(1, max_steps - 2), label="calls")):
            if step < len(prefix):
                name, arguments = prefix[step]
            else:
                name = data.draw(st.sampled_from(sorted(specs)), label="tool")
                arguments = data.draw(_arguments(specs[name].parameters, pool), label=name)
            before = _dump(engine, stored_id)
            result = env.step({"name": name, "arguments": arguments})
            _check_step(env, result, max_steps)
            accepted = env.trace.actions[-1].valid
            outcomes[(specs[name].effect, accepted)] += 1
            if accepted and name not in DOCUMENTS:  # the policy's prose is no episode value
                _harvest(json.loads(result[0]), pool)
            else:
                assert _dump(engine, stored_id) == before, "a refused call changed the state"
            if result[2] or result[3]:
                break
        _check_snapshot(env)

    with _env_on_a_file(domain, tmp_path, max_steps, privileged=True) as (env, engine):
        run()
    # Not a vacuous run: the writes got past their checks, and some were refused by them.
    # (Here: 16 of 157 writes got through in bss, where every change waits for the caller's
    # identity check, the gold chain's second call; 67 of 159 in network.)
    assert outcomes[("write", True)] >= 10, outcomes
    assert outcomes[("write", False)] >= 10, outcomes
    assert outcomes[("read", True)] >= 20, outcomes
