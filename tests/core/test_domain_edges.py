"""Edges of the domain registry: a network intent without engineer phrases fails at load, a
report puts each domain's episodes in the table its domain declares, and the packaged
taxonomies register at import under the names their domains give."""

from __future__ import annotations

import dataclasses

import pytest

from telcoenv.domains import BUILTIN_TAXONOMIES, get_domain
from telcoenv.domains.network import NetworkDomain
from telcoenv.errors import CatalogError
from telcoenv.evaluation.report import run_report, to_markdown
from telcoenv.registration import list_envs


def test_a_network_intent_without_symptom_phrases_fails_at_load():
    catalog = get_domain("network").catalog
    extra = catalog.intents[0].model_copy(update={"key": "NEW_INTENT", "env_name": "new_intent"})
    blueprints = {**catalog.blueprints, "NEW_INTENT": catalog.blueprints[catalog.intents[0].key]}
    bigger = dataclasses.replace(catalog, intents=(*catalog.intents, extra), blueprints=blueprints)
    with pytest.raises(CatalogError, match=r"symptoms\.NEW_INTENT.*\['en', 'ar'\]"):
        NetworkDomain(bigger)


def _record(domain: str | None, sas: float, lang: str = "en") -> dict:
    return {
        "domain": domain,
        "status": "done",
        "language": lang,
        "intent_list": True,
        "intent": f"{domain}-intent",
        "category": "c",
        "blueprint_id": "b",
        "predicted_chain": ["t"],
        "gold_chain": ["t"],
        "embedder": None,
        "ira": None,
        "ra": None,
        "msc": sas,
        "eap": sas,
        "sas": sas,
        "args": None,
        "answer": None,
        "resolved": True,
    }


def test_each_domain_feeds_the_table_it_declares():
    records = [
        _record(None, 1.0),  # recorded before domains were stored: the default domain
        _record("network", 0.5),
        _record("bss", 0.25, "ar"),
        _record("not_installed_here", 0.75),
    ]
    report = run_report(records)
    assert report["sequence"]["en"]["sas"] == pytest.approx(0.75)  # the two network episodes
    assert report["care"] == {
        "ar": {
            "n": 1,
            **dict.fromkeys(("msc", "eap", "sas"), 0.25),
            "args": None,
            "answer": None,
            "resolved": 1.0,
        }
    }
    assert list(report["domains"]) == ["not_installed_here"]
    assert report["domains"]["not_installed_here"]["en"]["sas"] == 0.75
    markdown = to_markdown({"weights": "equal", "runs": {"run": report}})
    assert "## Customer care (BSS)" in markdown and "## Domain not_installed_here" in markdown


def test_the_packaged_taxonomies_match_their_domains_and_register_at_import():
    import gymnasium

    import telcoenv  # noqa: F401  (registers the packaged environments)

    for name, taxonomy in BUILTIN_TAXONOMIES.items():
        assert get_domain(name).taxonomy_env == taxonomy
        assert f"telcoenv/{taxonomy}-v0" in gymnasium.registry
    names = {entry.name: entry for entry in list_envs()}
    assert names["troubleshooting"].domain == "network"
    assert names["customer_care"].domain == "bss"
