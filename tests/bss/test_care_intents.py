"""The customer-care intents of the BSS domain live in intents.yaml beside the network ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from telcoenv.catalog import load_tools
from telcoenv.domains.bss.blueprints import load_care_intents
from telcoenv.errors import CatalogError
from tests.conftest import REPO_ROOT, edit_yaml


def test_twelve_care_intents_in_six_groups_with_bss_gold_chains(catalog):
    categories, intents = load_care_intents()
    assert len(intents) == 12 and len(categories) == 6
    assert {i.category for i in intents} == set(categories)
    tools = load_tools(REPO_ROOT / "tools", domain="bss")
    for intent in intents:
        assert intent.gold_tools and all(tools[t].kind == "core" for t in intent.gold_tools)
        writes = [t for t in intent.gold_tools if tools[t].effect == "write"]
        # A question has an exact answer; a request changes the account (or files a dispute).
        assert intent.answer is not None or writes, intent.key
    network = {i.key for i in catalog.intents}
    assert len(network) == 20 and not network & {i.key for i in intents}
    assert not set(catalog.categories) & set(categories)


def _broken(tmp_path, change) -> Path:
    """A copy of intents.yaml in ``tmp_path`` with ``change`` applied to the first care intent."""

    def edit(document: dict) -> None:
        change(next(i for i in document["intents"] if i.get("domain") == "bss"))

    return edit_yaml(REPO_ROOT / "intents.yaml", edit, tmp_path / "intents.yaml")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda i: i["gold_chain"].append({"tool": "oss_query", "arguments": {}}), "unknown tool"),
        (lambda i: i.update(answer="{no_such_fact}"), "unknown template field"),
        (lambda i: i["gold_chain"][1]["arguments"].update(period="{period}x"), "does not match"),
        (lambda i: i.pop("customer"), "customer"),
        (lambda i: i.update(env_name="beam_misalignment"), "duplicate env_name"),
        (  # a change before the caller's identity check: the operator's rule
            lambda i: i["gold_chain"].insert(
                1,
                {
                    "tool": "update_contact",
                    "arguments": {"customer_id": "{customer_id}", "email": "{email}"},
                },
            ),
            r"update_contact changes the account before the caller's identity is checked",
        ),
    ],
)
def test_a_broken_care_intent_names_its_problem(tmp_path, change, message):
    with pytest.raises(CatalogError, match=message):
        load_care_intents(_broken(tmp_path, change))
