"""Errors a model can act on (issue 15, item 4, in part): every error observation keeps its JSON
type and message and adds one sentence, in the episode's language, saying what to do next."""

from __future__ import annotations

import json

import pytest

from telcoenv.feedback import NEXT_STEPS, silence_reply
from tests.conftest import ARABIC, HOSTILE_ACTIONS, make_env, tool_call


@pytest.mark.parametrize("lang", ["en", "ar"])
@pytest.mark.parametrize("domain", ["network", "bss"])
def test_an_empty_reply_is_answered_in_words_with_what_to_do_and_counted(lang, domain):
    """A model that went silent gets a conversation turn from the counterpart (not a JSON
    error it cannot act on), saying nothing came and what to do; the action is counted."""
    env = make_env("beam_misalignment" if domain == "network" else "bill_shock", domain=domain)
    env.reset(seed=1, options={"lang": lang})
    counterpart = env.unwrapped.domain.counterpart
    for empty in ({"role": "assistant", "content": ""}, {"content": "   "}, "", "\n"):
        observation, _, terminated, truncated, info = env.step(empty)
        assert observation == silence_reply(lang, counterpart) and not (terminated or truncated)
        assert not observation.startswith("{") and "submit_resolution" in observation
        assert bool(ARABIC.search(observation)) == (lang == "ar")
        record = env.trace.actions[-1]
        assert (record.kind, record.valid, record.error_kind) == ("invalid", False, "empty_action")
        assert info["action"]["error_type"] == "empty_action"
    assert info["invalid_actions"] == 4


@pytest.mark.parametrize("lang", ["en", "ar"])
@pytest.mark.parametrize(
    ("env_name", "domain", "call", "tool"),
    [
        (
            "bill_shock",
            "bss",
            {"name": "get_bill", "arguments": {"account_id": "A000000", "period": "2026-08"}},
            "get_customer",
        ),
        (
            "beam_misalignment",
            "network",
            {"name": "oss_query", "arguments": {"cell_id": "NR-URB-MACRO-000", "window": "1h"}},
            "oss_query",
        ),
    ],
)
def test_an_unknown_id_names_the_tool_that_lists_the_valid_ones(lang, env_name, domain, call, tool):
    env = make_env(env_name, domain=domain, lang=lang)
    env.reset(seed=1)
    error = json.loads(env.step(call)[0])["error"]
    assert error["type"] == "not_found" and tool in error["next"]
    assert bool(ARABIC.search(error["next"])) == (lang == "ar")


@pytest.mark.parametrize(
    ("intent", "domain"), [("coverage_hole", "network"), ("bill_shock", "bss")]
)
def test_every_error_says_what_to_do_next(intent, domain):
    env = make_env(intent, domain=domain, lang="ar", require_approval=True)
    env.reset(seed=4)
    actions = [
        *HOSTILE_ACTIONS,
        tool_call("no_such_tool"),
        tool_call("get_customer", customer_id="C999999"),
        tool_call("neighbor_audit", cell_id="NR-URB-MACRO-999"),
    ]
    errors = {}
    for action in actions:
        observation = env.step(action)[0]
        if observation.startswith("{") and '"error"' in observation:
            error = json.loads(observation)["error"]
            errors[error["type"]] = error
            assert error["message"]
            if error["type"] in NEXT_STEPS:
                assert ARABIC.search(error["next"]), error
    assert {"unknown_tool", "not_found"} <= set(errors)
    who = "المهندس" if domain == "network" else "العميل"  # the counterpart, named in Arabic
    assert who in errors["not_found"]["next"]
