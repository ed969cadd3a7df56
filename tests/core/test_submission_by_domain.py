"""Each domain's agents see exactly the submit_resolution fields that apply to them, and a
refused submission says what the tool takes and the limit it broke (issue 15, item 2)."""

from __future__ import annotations

import json

import pytest

from telcoenv.errors import CatalogError
from tests.conftest import error_of, load_network_copy, make_env, submit


def _submit_fields(info: dict) -> list[str]:
    (spec,) = [t for t in info["tools"] if t["function"]["name"] == "submit_resolution"]
    return list(spec["function"]["parameters"]["properties"])


def test_network_agents_are_not_offered_the_care_answer():
    env = make_env("beam_misalignment")
    _, info = env.reset(seed=1)
    assert _submit_fields(info) == ["intent", "summary"]
    assert "answer" not in json.dumps(info["tools"][-1])
    refused = error_of(env.step(submit("Beam Misalignment", "fixed", answer="42"))[0])
    assert refused["type"] == "invalid_arguments"
    assert "'answer' was unexpected" in refused["message"]
    assert "this tool takes: intent, summary" in refused["message"]
    _, care = make_env("bill_shock", domain="bss").reset(seed=1)
    assert _submit_fields(care) == ["intent", "summary", "answer"]


def test_a_too_long_value_is_quoted_short_with_its_limit():
    env = make_env("bill_shock", domain="bss")
    env.reset(seed=2)
    message = error_of(env.step(submit("Bill shock", "s", answer="9" * 606))[0])["message"]
    assert "at most 200 allowed" in message and "606 characters" in message
    assert "9" * 61 not in message  # a 60-character prefix at most


def test_a_spec_may_only_restrict_parameters_it_has(data_copy):
    path = data_copy / "tools" / "submit_resolution.json"
    spec = json.loads(path.read_text(encoding="utf-8"))
    spec["x-telcoenv"]["domain_fields"] = {"verdict": ["bss"]}
    path.write_text(json.dumps(spec), encoding="utf-8")
    with pytest.raises(CatalogError, match=r"domain_fields.*verdict"):
        load_network_copy(data_copy)
