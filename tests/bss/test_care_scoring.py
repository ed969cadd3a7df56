"""Deterministic care scoring: GAIA-normalised exact answers and argument accuracy, checked
against hand-computed values; results stores written before them are migrated, not lost."""

from __future__ import annotations

import json

import pytest

from telcoenv.evaluation.report import build_report, to_markdown
from telcoenv.evaluation.runner import RunConfig, build_grid, evaluate
from telcoenv.evaluation.store import ResultStore
from telcoenv.metrics.answers import answers_match, normalize_text
from telcoenv.metrics.arguments import argument_accuracy, same_value
from telcoenv.trace import ActionRecord, GoldCall
from tests.conftest import first_release_results


@pytest.mark.parametrize(
    ("submitted", "gold"),
    [
        ("117.2", "117.2"),
        ("SAR 117.20", "117.2"),
        ("117.20 SAR", "117.2"),
        ("1,234.5", "1234.5"),
        ("ر.س ١٢٣٫٤", "123.4"),
        ("22.83 GB", "22.83"),
        ("  467.94 ", "467.94"),
        ("$5", "5"),
        ("Card expired.", "card expired"),
        ("CARD   EXPIRED", "card expired"),
        ("post-plus", "POST-PLUS"),
        ("The extra charge is 343.80 SAR.", "343.8"),  # surrounding words removed
        ("159.64 جيجا بايت", "159.64"),  # the spaced Arabic spelling of GB
        ("Invoice INV1234 was charged 343.80", "343.8"),  # digits in an id are no number
    ],
)
def test_equivalent_answers_match(submitted, gold):
    assert answers_match(submitted, gold)


@pytest.mark.parametrize(
    ("submitted", "gold"),
    [
        ("117", "117.2"),
        ("117.21", "117.2"),
        ("234.4", "117.2"),  # the duplicate counted twice
        ("between 2 and 3", "2"),
        ("", "2"),
        ("insufficient funds", "card expired"),
        ("POST-UNLIMITED", "POST-PLUS"),
        ("in 2026-11 it was 343.80", "343.8"),  # a date is numbers too: more than one
        ("117.2 or 234.4", "117.2"),
    ],
)
def test_different_answers_do_not_match(submitted, gold):
    assert not answers_match(submitted, gold)


def test_normalize_text():
    assert normalize_text("  Card, expired!  ") == "card expired"
    assert normalize_text("بطاقة، منتهية؟") == "بطاقة منتهية"


def _record(tool: str, arguments: dict, valid: bool = True, **kw) -> ActionRecord:
    return ActionRecord(
        step=1, kind="tool_call", tool=tool, arguments=arguments, valid=valid, observation="", **kw
    )


def test_argument_accuracy_against_hand_computed_values():
    gold = [
        GoldCall(tool="get_customer", arguments={"msisdn": "9665"}),
        GoldCall(tool="get_bill", arguments={"account_id": "A2", "period": "2026-09"}),
        GoldCall(
            tool="open_care_ticket",
            arguments={"customer_id": "C1", "category": "billing_dispute", "summary": "x"},
            free_text=["summary"],
        ),
    ]
    actions = [
        _record("get_customer", {"msisdn": "9665"}),  # 1
        _record("get_bill", {"account_id": "A2", "period": "2026-13"}, valid=False),
        _record("get_bill", {"account_id": "A2", "period": "2026-10"}),  # 1/2 (the valid one)
        _record("open_care_ticket", {"customer_id": "C1", "category": "other", "summary": "y"}),
    ]  # ticket: customer right, category wrong, summary not compared: 1/2
    assert argument_accuracy(gold, actions) == pytest.approx((1 + 0.5 + 0.5) / 3)
    # an invalid attempt only counts when no valid call of the tool exists
    assert argument_accuracy(gold[:1], [_record("get_customer", {"msisdn": "1"}, False)]) == 0.0
    # the second gold call of a tool is compared with the second valid call
    twice = [gold[0], GoldCall(tool="get_customer", arguments={"msisdn": "7"})]
    calls = [_record("get_customer", {"msisdn": "9665"}), _record("get_customer", {"msisdn": "7"})]
    assert argument_accuracy(twice, calls) == 1.0
    # re-measurements are not calls of the chain; an empty gold chain has no accuracy
    assert argument_accuracy(gold[:1], [_record("get_customer", {}, remeasure=True)]) == 0.0
    assert argument_accuracy([], actions) is None


def test_same_value_compares_numbers_to_the_cent_and_containers_deeply():
    assert same_value(15, 15.0) and same_value(0.1 + 0.2, 0.3)
    assert not same_value(15, 15.01) and not same_value("15", 15)
    assert not same_value(True, 1) and same_value(True, True)
    assert same_value({"tilt_deg": 6, "p": [1, 2.0]}, {"tilt_deg": 6.0, "p": [1.0, 2]})
    assert not same_value({"tilt_deg": 6}, {"tilt_deg": 6, "extra": 1})


def test_an_older_results_database_is_migrated_and_keeps_its_rows(tmp_path):
    path = tmp_path / "old.sqlite"
    episode = (1, "old", "B|0|en|with", "BEAM_MISALIGNMENT", "coverage_interference", "B", 0)
    episode += ("en", 1, "ok", None, 1.0, 1.0, 1.0, 1.0, 0.9, None, '["oss_query"]')
    episode += ('["oss_query"]', 3, 0.1, None, None, "2026-11-01T00:00:00Z")
    first_release_results(path, {}, [episode])
    store = ResultStore(f"sqlite:///{path}")
    (old,) = store.records(["old"])
    assert old["msc"] == 1.0 and old["domain"] is None and old["resolved"] is None
    grid = build_grid(["bill_shock"], samples=1, languages=["en"])
    summary = evaluate(
        store, "new", grid, RunConfig(agent="oracle", agent_options={}, embedder=None)
    )
    assert summary.stored == len(grid) == 2
    new = store.records(["new"])
    assert all(r["domain"] == "bss" and r["answer"] is True and r["resolved"] for r in new)
    report = build_report({"old": store.records(["old"]), "new": new})
    assert (
        report["runs"]["old"]["care"] == {}
        and report["runs"]["old"]["sequence"]["en"]["msc"] == 1.0
    )
    assert report["runs"]["new"]["care"]["en"]["answer"] == 1.0
    assert "## Customer care (BSS)" in to_markdown(report)


def test_the_grid_covers_a_domain_or_both():
    care = build_grid("all", samples=1, languages=["en"], domain="bss")
    assert {spec.domain for spec in care} == {"bss"} and len(care) == 26
    both = build_grid("all", samples=1, languages=["en"], domain="all")
    assert len(both) == 49 + 26
    named = build_grid(["beam_misalignment", "family_data"], samples=1, languages=["en"])
    assert {spec.domain for spec in named} == {"network", "bss"}


def test_every_question_has_an_answer_no_agent_could_guess():
    """A month in which no line of the family was measured made the gold answer the text
    "None" (3 of these 800 episodes), which an agent submitted without reading anything."""
    import telcoenv

    env = telcoenv.make("family_data", embedder=None, privileged=True)
    for options in ({"blueprint": "family_data_small_family"}, None):
        for seed in range(400):
            _, info = env.reset(seed=seed, options=options)
            answer = info["privileged"]["gold_answer"]
            assert answer not in ("None", "", None) and float(answer) >= 0, (seed, options)


def test_an_add_on_listed_active_is_active_today():
    """Planted from the 5th of the month, two packs of three had ended before today and were
    still listed active; the addon_cancellation gold chain cancelled one."""
    import telcoenv
    from telcoenv.domains.bss.generator import TODAY

    env = telcoenv.make("addon_cancellation", embedder=None, privileged=True)
    checked = 0
    for seed in range(60):
        _, info = env.reset(seed=seed)
        msisdn = info["privileged"]["gold_chain"][0]["arguments"]["msisdn"]
        observation, *_ = env.step({"name": "get_customer", "arguments": {"msisdn": msisdn}})
        for account in json.loads(observation)["accounts"]:
            for line in account["lines"]:
                for addon in line.get("active_addons", []):
                    assert addon["start_date"] <= TODAY <= addon["end_date"], (seed, addon)
                    checked += 1
    assert checked >= 60
