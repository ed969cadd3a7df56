"""The compact tool format: every tool, short descriptions, minimal schemas, short instructions,
a prompt a small model can afford (measured with the Qwen2.5 tokenizer), the same episodes."""

from __future__ import annotations

import json

import jsonschema
import pytest

import telcoenv
from telcoenv.agents import OracleAgent, run_episode
from telcoenv.domains import get_domain
from telcoenv.errors import EpisodeOptionError
from telcoenv.specs import compact_schema
from telcoenv.tokens import chat_prompt, token_counter
from tests.conftest import make_env

DOMAINS = {"network": "beam_misalignment", "bss": "bill_shock"}


@pytest.fixture(scope="module")
def count():
    return token_counter()


def _first_request(name: str, lang: str, tool_format: str, intent_list: bool = True):
    env = telcoenv.make(
        name, lang=lang, embedder=None, tool_format=tool_format, intent_list=intent_list
    )
    _, info = env.reset(seed=3)
    env.close()
    return info


@pytest.mark.parametrize("domain", DOMAINS)
def test_compact_keeps_every_tool_with_a_summary(domain):
    full = _first_request(DOMAINS[domain], "en", "full")["tools"]
    compact = _first_request(DOMAINS[domain], "en", "compact")["tools"]
    assert [t["function"]["name"] for t in compact] == [t["function"]["name"] for t in full]
    specs = get_domain(domain).catalog.tools
    assert any(spec.kind == "distractor" for spec in specs.values()) or domain == "bss"
    for tool in compact:
        spec = specs[tool["function"]["name"]]
        assert tool["function"]["description"] == spec.summary
        assert len(spec.summary) < len(spec.description)


@pytest.mark.parametrize("domain", DOMAINS)
def test_compact_schemas_accept_every_valid_call(domain):
    """The compact schema only leaves out constraints: what the full schema accepts, it
    accepts too (the environment still checks the full schema)."""
    specs = get_domain(domain).catalog.tools
    for intent in get_domain(domain).catalog.intents:
        env = make_env(intent.env_name, domain=domain)
        _, info = run_episode(env, OracleAgent(), seed=1)
        for action in info["trace"].actions:
            if action.tool is None:
                continue
            spec = specs[action.tool]
            jsonschema.validate(action.arguments, spec.parameters)
            jsonschema.validate(action.arguments, compact_schema(spec.parameters))
        env.close()


def test_compact_schema_of_a_hand_written_spec():
    schema = {
        "type": "object",
        "properties": {
            "window": {"type": "string", "pattern": "^[0-9]+h$", "description": 'e.g. "3h".'},
            "cell_id": {"type": "string", "description": 'Cell id, e.g. "NR-URB-MACRO-000".'},
            "account_id": {
                "type": "string",
                "description": 'Billing account id from get_customer, e.g. "A000000".',
            },
            "msisdn": {"type": "string", "description": "Line number from the customer, digits."},
            "offset": {"type": "number", "description": "Steering from boresight, in degrees."},
            "kpi": {"type": "string", "enum": ["DL", "UL"], "description": "Family."},
            "ttt": {"type": "integer", "enum": [40, 64], "minimum": 0},
            "changes": {
                "type": "object",
                "properties": {"tilt": {"type": "number"}, "pci": {"type": "integer"}},
                "minProperties": 1,
            },
            "detail": {"type": "string", "enum": ["summary", "full"], "default": "summary"},
        },
        "required": ["window"],
        "additionalProperties": False,
    }
    assert compact_schema(schema) == {
        "type": "object",
        "properties": {
            "window": {"type": "string", "description": 'e.g. "3h"'},
            "cell_id": {"type": "string"},  # an id's example is never shown: models copy it
            # ... but where an id comes from is (a tool or the counterpart), without the rest
            "account_id": {"type": "string", "description": "Billing account id from get_customer"},
            "msisdn": {"type": "string", "description": "Line number from the customer"},
            "offset": {"type": "number"},  # "from boresight" names no source
            "kpi": {"enum": ["DL", "UL"]},
            "ttt": {"type": "integer"},
            "changes": {"type": "object", "description": "only those to change: tilt, pci"},
        },  # detail has a default: left out (the output says how to ask for the rest)
        "required": ["window"],
    }


def test_a_nested_objects_names_carry_their_ranges():
    # s11c: with the names alone the 1.5B model set scheduler_type "round_robin" and 100 UEs
    # per TTI; each name now says what it takes.
    changes = {
        "type": "object",
        "properties": {
            "tilt_deg": {"type": "number", "minimum": 0, "maximum": 15},
            "scheduler_type": {"type": "string", "enum": ["PF", "RR", "MAX_CI"]},
            "t310_ms": {"type": "integer", "enum": [0, 50, 100]},
            "ttt_ms": {"type": "integer", "enum": [0, 40, 64, 80, 5120]},
            "mlb_enabled": {"type": "boolean"},
            "offset": {"type": "number", "minimum": -3},  # one bound only: no range shown
            "weight_pct": {"type": "number", "minimum": 0, "maximum": 100},  # as its name says
            "share_pct": {"type": "number", "minimum": 5, "maximum": 100},
        },
    }
    compact = compact_schema({"type": "object", "properties": {"changes": changes}})
    assert compact["properties"]["changes"]["description"] == (
        "only those to change: tilt_deg 0..15, scheduler_type PF|RR|MAX_CI, "
        "t310_ms 0|50|100, ttt_ms 0..5120, mlb_enabled, offset, weight_pct, share_pct 5..100"
    )


def test_compact_optimize_cell_gives_every_range_of_the_full_spec():
    spec = get_domain("network").catalog.tools["optimize_cell"]
    full = spec.parameters["properties"]["changes"]["properties"]
    text = spec.compact().parameters["properties"]["changes"]["description"]
    for name, schema in full.items():
        low, high = schema.get("minimum"), schema.get("maximum")
        if "enum" in schema:
            if isinstance(schema["enum"][0], str):
                assert f"{name} {'|'.join(schema['enum'])}" in text
                continue
            low, high = min(schema["enum"]), max(schema["enum"])
        if low is not None and (low, high) != (0, 100):
            assert f"{name} {low}..{high}" in text


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("lang", ["en", "ar"])
@pytest.mark.parametrize("intent_list", [True, False])
def test_compact_instructions_and_tools_fit_2400_tokens(count, domain, lang, intent_list):
    compact = _first_request(DOMAINS[domain], lang, "compact", intent_list)
    full = _first_request(DOMAINS[domain], lang, "full", intent_list)

    def budget(info) -> int:
        tools = "".join(json.dumps(t, ensure_ascii=False) for t in info["tools"])
        return count(info["messages"][0]["content"]) + count(tools)

    assert budget(compact) <= 2400
    assert budget(full) > 1.8 * budget(compact)
    assert count(chat_prompt(compact["messages"], compact["tools"])) <= 2500


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("Beam misalignment on NR-URB-MACRO-000 since 3h.", 20),
        ("انحراف اتجاه الحزمة", 8),
        ("<|im_start|>system\nhello<|im_end|>", 5),
        ("<tool_call>\n{}\n</tool_call>", 4),
        (
            "Cell NR-URB-MACRO-123 shows DL throughput of 6 Mbps at 85% PRB load in the last "
            "3h; investigate.",
            36,
        ),
        (
            "مرحباً، معكم الفريق الميداني للمجموعة CL-IND-010: هناك خلل ما في صالة المغادرة في "
            "المطار في منتصف النهار تقريباً. العدادات: 0.48، 8.9 ديسيبل",
            63,
        ),
    ],
)
def test_the_tokenizer_counts_as_qwen25_does(count, text, tokens):
    """The counts a llama.cpp server running Qwen2.5-Coder-1.5B-Instruct (GGUF) gave for these
    texts (its /tokenize endpoint; it also agreed on whole first requests, 2,086 to 4,894
    tokens), and a lossless round trip in both scripts."""
    from telcoenv.tokens import _tokenizer

    assert count(text) == tokens
    tokenizer = _tokenizer()
    assert tokenizer.decode(tokenizer.encode(text).ids, skip_special_tokens=False) == text


@pytest.mark.parametrize("domain", DOMAINS)
def test_compact_episodes_score_as_full_ones(domain):
    """The format changes what the model reads, never how a call is run or scored."""
    outcomes = []
    for tool_format in ("full", "compact"):
        env = make_env(DOMAINS[domain], domain=domain, tool_format=tool_format)
        _, info = run_episode(env, OracleAgent(), seed=5)
        observations = [a.observation for a in info["trace"].actions]
        outcomes.append((info["metrics"], info["resolved"], observations))
        env.close()
    assert outcomes[0] == outcomes[1]


def test_a_call_outside_the_full_schema_is_still_refused():
    env = make_env("beam_misalignment", tool_format="compact")
    env.reset(seed=0)
    observation, *_ = env.step(
        {"name": "oss_query", "arguments": {"cell_id": "x", "window": "three hours"}}
    )
    assert json.loads(observation)["error"]["type"] == "invalid_arguments"


@pytest.mark.parametrize("bad", ["short", 1, None])
def test_a_bad_tool_format_is_named(bad):
    with pytest.raises(EpisodeOptionError, match="tool_format"):
        telcoenv.make("beam_misalignment", embedder=None, tool_format=bad)


def test_compact_care_tools_say_where_each_id_comes_from():
    """A small model invented "1234567890" for customer_id when the compact schema named no
    source; every id a care tool takes (but get_customer's own lookup key) now names one."""
    tools = _first_request("bill_shock", "en", "compact")["tools"]
    ids = {"customer_id", "account_id", "msisdn", "plan_id", "addon_id", "subscription_id"}
    seen = 0
    for tool in tools:
        function = tool["function"]
        for name, schema in function["parameters"].get("properties", {}).items():
            if name in ids and (function["name"], name) != ("get_customer", "customer_id"):
                assert " from " in schema.get("description", ""), (function["name"], name)
                assert "e.g." not in schema["description"]
                seen += 1
    assert seen >= 15
