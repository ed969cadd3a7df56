"""Property test: whatever an agent sends, step answers with an observation and never raises."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from telcoenv.env import TelcoEnv

TOOLS = [
    "oss_query",
    "kpi_timeseries",
    "coverage_map",
    "optimize_cell",
    "optimize_slice",
    "push_config",
    "create_ticket",
    "submit_resolution",
    "neighbor_audit",
    "kpi_etimeseries",
]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)
tool_calls = st.fixed_dictionaries(
    {
        "name": st.sampled_from(TOOLS) | st.text(max_size=15),
        "arguments": st.dictionaries(
            st.sampled_from(
                [
                    "cell_id",
                    "window",
                    "kpi",
                    "changes",
                    "area",
                    "resolution",
                    "policy",
                    "intent",
                    "summary",
                    "config_id",
                    "severity",
                    "x",
                ]
            ),
            json_values,
            max_size=5,
        )
        | st.text(max_size=30)
        | json_values,
    }
)
actions = (
    tool_calls
    | tool_calls.map(json.dumps)
    | st.text(max_size=60)
    | json_values
    | st.builds(
        lambda calls: {"role": "assistant", "tool_calls": calls},
        st.lists(tool_calls.map(lambda c: {"function": c}) | json_values, max_size=3),
    )
)

ENV = TelcoEnv(None, max_steps=8, embedder=None)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), sequence=st.lists(actions, min_size=1, max_size=10))
def test_step_never_raises(seed, sequence):
    ENV.reset(seed=seed)
    for action in sequence:
        observation, reward, terminated, truncated, info = ENV.step(action)
        assert isinstance(observation, str) and observation
        assert 0.0 <= reward <= 1.0 and (reward == 0.0 or terminated or truncated)
        assert info["invalid_actions"] <= info["steps"] + 10
    ENV.trace.model_dump_json()  # whatever was sent, the trace serialises


def test_canonical_json_is_sorted_compact_utf8_and_takes_what_orjson_refuses():
    import json

    from telcoenv.tooling import canonical_json

    value = {"b": [1, 2.5, None, True], "a": {"z": "عربي", "y": -0.125}, "c": 0.1}
    assert canonical_json(value) == ('{"a":{"y":-0.125,"z":"عربي"},"b":[1,2.5,null,true],"c":0.1}')
    assert json.loads(canonical_json(value)) == value
    huge = {"n": 2**80, "m": 1}  # beyond orjson's 64-bit integers: the fallback writes it
    assert canonical_json(huge) == '{"m":1,"n":1208925819614629174706176}'
