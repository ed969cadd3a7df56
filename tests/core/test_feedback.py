"""Errors a model can act on (issue 15, item 4, in part): every error observation keeps its JSON
type and message and adds one sentence, in the episode's language, saying what to do next."""

from __future__ import annotations

import json

import pytest

from telcoenv.feedback import NEXT_STEPS
from tests.conftest import ARABIC, HOSTILE_ACTIONS, make_env, tool_call


@pytest.mark.parametrize("lang", ["en", "ar"])
def test_an_empty_reply_is_refused_with_what_to_do_and_counted(lang):
    env = make_env("beam_misalignment", lang=lang)
    env.reset(seed=1)
    for empty in ({"role": "assistant", "content": ""}, {"content": "   "}, "", "\n"):
        observation, _, terminated, truncated, info = env.step(empty)
        error = json.loads(observation)["error"]
        assert error["type"] == "empty_action" and not (terminated or truncated)
        assert "submit_resolution" in error["next"]
        assert bool(ARABIC.search(error["next"])) == (lang == "ar")
    assert info["invalid_actions"] == 4


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
