"""The honest customer-care baseline (``care_investigator``): resolves most episodes of both
tiers in both languages without privileged information, names the right intent, asks approval
when the episode requires it, is deterministic, submits within small budgets, reads the
documented openings (and a few paraphrases) with its cues, and never raises on an odd
observation."""

from __future__ import annotations

import itertools
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml

import telcoenv
from telcoenv.agents import AGENTS, CareInvestigatorAgent, load_agent, run_episode
from telcoenv.agents.care_investigator import (
    CUES,
    INTENTS,
    cues_markdown,
    find_country,
    read_opening,
    zone_of,
)
from telcoenv.domains import get_domain
from telcoenv.tooling import RESERVED_SUBMIT
from tests.conftest import REPO_ROOT

CATALOG = get_domain("bss").catalog
SYMPTOMS = REPO_ROOT / "telcoenv" / "domains" / "bss" / "symptoms.yaml"
PRODUCTS = REPO_ROOT / "telcoenv" / "domains" / "bss" / "products.yaml"
DOCS = REPO_ROOT / "docs" / "customer_care.md"
SEEDS = 40  # per tier and language in the quick tests
BILL = "BILL_SHOCK"  # its guided opening says what the bill family says: the bill settles it


class Guarded(dict):
    """An info dict that fails the test if the agent reads privileged information from it."""

    HIDDEN = ("privileged", "trace", "verification", "metrics")

    def __getitem__(self, key: Any) -> Any:
        assert key not in self.HIDDEN, f"the agent read info[{key!r}]"
        return super().__getitem__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        assert key not in self.HIDDEN, f"the agent read info.get({key!r})"
        return super().get(key, default)


class Spy:
    """Passes everything to a care investigator through guarded infos; optionally gives it
    another opening than the customer's."""

    def __init__(self, opening: str | None = None, **options: Any) -> None:
        self.agent, self.opening, self.infos = CareInvestigatorAgent(**options), opening, 0

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        assert "privileged" not in info
        self.infos += 1
        self.agent.reset(observation if self.opening is None else self.opening, Guarded(info))

    def act(self, observation: str, info: dict[str, Any]) -> Any:
        assert "privileged" not in info
        self.infos += 1
        return self.agent.act(observation, Guarded(info))


def _env(**kwargs: Any) -> Any:
    return telcoenv.make("customer_care", embedder=None, privileged=False, **kwargs)


def _diagnosed(info: dict[str, Any], lang: str) -> bool:
    submission = info["trace"].submission
    label = CATALOG.intent(info["trace"].intent).label.in_lang(lang)
    return submission is not None and submission.intent == label


def _play(env: Any, seeds: range, lang: str, **options: Any) -> dict[str, list[int]]:
    """Per intent: [episodes, resolved, diagnosed]."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for seed in seeds:
        _, info = run_episode(env, Spy(**options), seed=seed)
        row = counts[info["trace"].intent]
        row[0] += 1
        row[1] += bool(info["resolved"])
        row[2] += _diagnosed(info, lang)
    return counts


def _rate(counts: dict[str, list[int]], column: int) -> float:
    return sum(row[column] for row in counts.values()) / sum(row[0] for row in counts.values())


def _actions(info: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (a.kind, a.tool, json.dumps(a.arguments, sort_keys=True, ensure_ascii=False))
        for a in info["trace"].actions
    ]


# --- the agent in the registry -------------------------------------------------------------------


def test_it_is_a_registered_honest_care_agent():
    assert AGENTS["care_investigator"] is CareInvestigatorAgent
    agent = load_agent("care_investigator", max_steps=12)
    assert isinstance(agent, CareInvestigatorAgent) and agent.max_steps == 12
    assert agent.needs_privileged is False and agent.domains == ("bss",)
    assert set(INTENTS) == {intent.key for intent in CATALOG.intents}


# --- it resolves, without privileged information -------------------------------------------------


@pytest.mark.parametrize("lang", ["en", "ar"])
@pytest.mark.parametrize("tier", ["guided", "symptom"])
def test_it_resolves_and_diagnoses_both_tiers(tier: str, lang: str):
    """40 episodes of the whole care taxonomy per tier and language, privileged=False, every
    info guarded: at least 85 % resolved and named with the exact label."""
    counts = _play(_env(difficulty=tier, lang=lang), range(SEEDS), lang)
    assert _rate(counts, 1) >= 0.85, dict(counts)
    assert _rate(counts, 2) >= 0.85, dict(counts)


@pytest.mark.parametrize("intent", [i.env_name for i in CATALOG.intents])
def test_every_intent_alone(intent: str):
    """Each care environment of one intent: 3 episodes per tier, alternating languages."""
    solved = 0
    for tier in ("guided", "symptom"):
        for seed in range(3):
            lang = ("en", "ar")[seed % 2]
            env = telcoenv.make(intent, embedder=None, difficulty=tier, lang=lang)
            _, info = run_episode(env, Spy(), seed=seed)
            solved += bool(info["resolved"]) and _diagnosed(info, lang)
    assert solved >= 5, intent


def test_it_asks_approval_before_every_change():
    """With require_approval, every write runs after a plain message that asks for it, and no
    call is refused."""
    env = _env(difficulty="symptom", lang="ar", require_approval=True)
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    writes = 0
    for seed in range(SEEDS):
        _, info = run_episode(env, Spy(), seed=seed)
        counts[info["trace"].intent][0] += 1
        counts[info["trace"].intent][1] += bool(info["resolved"])
        assert info["invalid_actions"] == 0, _actions(info)
        actions = info["trace"].actions
        for before, action in itertools.pairwise(actions):
            if action.kind == "tool_call" and action.tool in {
                "subscribe_addon",
                "cancel_addon",
                "change_plan",
                "update_contact",
            }:
                writes += 1
                assert before.kind == "message", _actions(info)
    assert writes >= 10 and _rate(counts, 1) >= 0.85, dict(counts)


def test_it_is_deterministic():
    for tier in ("guided", "symptom"):
        env = _env(difficulty=tier, lang="en")
        for seed in (3, 11, 17):
            first = _actions(run_episode(env, CareInvestigatorAgent(), seed=seed)[1])
            second = _actions(run_episode(env, CareInvestigatorAgent(), seed=seed)[1])
            assert first == second


@pytest.mark.parametrize("max_steps", [1, 2, 4, 6, 9])
def test_it_submits_within_small_budgets(max_steps: int):
    """The last step of the budget is the submission: never truncated, whatever the budget;
    at 9 steps the whole taxonomy is still resolved (approvals included; the symptom tier's
    opening names a family, so asking what the customer needs costs a step)."""
    env = _env(difficulty="symptom", lang="en", max_steps=max_steps, require_approval=True)
    resolved = 0
    for seed in range(24):
        _, info = run_episode(env, Spy(max_steps=max_steps), seed=seed)
        assert info["trace"].submission is not None and not info["trace"].truncated
        assert info["steps"] <= max_steps
        resolved += bool(info["resolved"])
    if max_steps == 9:
        assert resolved >= 22


def test_it_plays_an_arabic_episode_in_arabic():
    env = _env(difficulty="guided", lang="ar")
    _, info = run_episode(env, Spy(), seed=7)
    messages = [a.raw for a in info["trace"].actions if a.kind == "message"]
    submission = info["trace"].submission
    assert messages and all(re.search(r"[\u0600-\u06FF]", str(m)) for m in messages)
    assert re.search(r"[\u0600-\u06FF]", submission.intent + submission.summary)
    assert info["resolved"] is True


# --- the customer's words ------------------------------------------------------------------------


def _fill(text: str) -> str:
    return text.format(period="2026-08", plan_id="POST-PLUS", email="me12@mail.example.sa")


def test_the_cues_read_every_documented_opening():
    """Every guided opening names its intent (bill shock: its family, which the bill's items
    settle); every symptom opening names its family, and every request its customer gives when
    asked names the intent, or the members that share it (the data settles those)."""
    for intent in CATALOG.intents:
        for lang in ("en", "ar"):
            _, candidates = read_opening("Hello. " + _fill(intent.customer.in_lang(lang)))
            assert intent.key in candidates and len(candidates) <= 2, (intent.key, lang)
            if intent.key != BILL:
                assert candidates == (intent.key,), (intent.key, lang)
    families = yaml.safe_load(SYMPTOMS.read_text(encoding="utf-8"))["families"]
    for family in families.values():
        members, asks = family["intents"], family["asks"]
        for lang in ("en", "ar"):
            for phrase in family[lang]:  # the opening: the whole family
                _, candidates = read_opening(_fill(phrase))
                assert set(candidates) == set(members), phrase
            for member in members:  # what they ask for: the member, or those the data settles
                sharing = {m for m in members if asks[m] == asks[member]}
                for ask in asks[member][lang]:
                    _, candidates = read_opening(_fill(ask))
                    assert set(candidates) == sharing, ask


PARAPHRASES = {
    ("BILL_SHOCK", "DUPLICATE_CHARGE"): [
        "Why is my 2026-08 bill so much higher than normal?",
        "فاتورة شهر 2026-08 طلعت أعلى من العادة بكثير، ليش؟",
    ],
    ("DUPLICATE_CHARGE",): [
        "I got charged two times for 2026-08.",
        "انخصم مني مبلغ فاتورة 2026-08 مرتين",
    ],
    ("PAYMENT_FAILURE",): [
        "My automatic payment was declined. What's the reason?",
        "تم رفض عملية الدفع، ما السبب؟",
    ],
    ("OUTSTANDING_BALANCE",): ["What's my total amount due?", "كم المبلغ المستحق في حسابي؟"],
    ("ROAMING_PACK",): [
        "I'm flying to Japan next month, can I get a roaming bundle?",
        "عندي رحلة إلى فرنسا وأحتاج إنترنت هناك",
    ],
    ("ADDON_CANCELLATION",): [
        "Please remove the 20 GB coupon from my line.",
        "أرجو إيقاف الخدمة الإضافية",
    ],
    ("DATA_TOPUP",): [
        "I've used all my data this month, can you top me up?",
        "بياناتي خلصت، أبي شحن بيانات",
    ],
    ("AVERAGE_DATA_USE",): [
        "What is my average data consumption?",
        "كم معدل استهلاكي للإنترنت شهرياً؟",
    ],
    ("PLAN_RECOMMENDATION",): [
        "What plan would you recommend for my budget?",
        "أبي أرخص باقة تكفي استهلاكي",
    ],
    ("PLAN_CHANGE",): ["I want to upgrade to POST-UNLIMITED.", "أبي أنقل خطي لباقة POST-PLUS"],
    ("FAMILY_DATA",): [
        "How much data did my whole family use in 2026-05?",
        "كم مجموع استهلاك كل الخطوط في 2026-05؟",
    ],
    ("CONTACT_UPDATE",): ["Update my e-mail please.", "أبي أغير إيميلي"],
}


@pytest.mark.parametrize("expected", list(PARAPHRASES), ids=lambda key: "+".join(key))
def test_the_cues_read_words_of_their_own(expected: tuple[str, ...]):
    """Openings in other words than the phrase banks' (written for this test)."""
    for text in PARAPHRASES[expected]:
        assert read_opening(text)[1] == expected, text


def test_an_opening_without_a_cue_is_asked_again():
    """Told only "Hello.", the agent asks the customer to say what they need, and reads the
    request they restate (both tiers, both languages)."""
    for tier, lang in (("guided", "en"), ("symptom", "ar")):
        counts = _play(_env(difficulty=tier, lang=lang), range(24), lang, opening="Hello.")
        assert _rate(counts, 1) >= 0.85 and _rate(counts, 2) >= 0.85, dict(counts)


def test_its_zones_are_the_catalogues():
    """The geography rule gives every destination of products.yaml its zone, and the Arabic
    names the customer uses are read."""
    destinations = yaml.safe_load(PRODUCTS.read_text(encoding="utf-8"))["destinations"]
    for country, zone in destinations.items():
        assert find_country(f"I am going to {country} soon.") == country
        assert zone_of(country) == zone, country
    assert find_country("سأسافر إلى ألمانيا بتاريخ 2027-01-26.") == "Germany"
    assert find_country("الرحلة إلى الولايات المتحدة وأغادر في 2026-12-02.") == "United States"
    assert find_country("سأسافر إلى عُمان بتاريخ 2026-12-02.") == "Oman"


def test_the_docs_show_the_cues():
    assert cues_markdown() in DOCS.read_text(encoding="utf-8")
    assert len(CUES) == cues_markdown().count("\n") - 1


# --- odd observations ----------------------------------------------------------------------------


ODD = [
    None,
    "",
    "{",
    "[1, 2]",
    '{"error": {"type": "not_found", "message": "unknown msisdn"}}',
    '{"customer": 5, "accounts": "none"}',
    '{"invoices": [{"amount": "many"}, null, 3]}',
    "x" * 100_000,
    "My number is 966512345678.",
    '{"payments": [{"status": "failed"}], "credit_notes": [{"amount": null}]}',
]


@pytest.mark.parametrize("opening", ["", "Hello.", None, "I was charged twice for 2026-08."])
def test_it_never_raises_on_odd_observations(opening: Any):
    agent = CareInvestigatorAgent(max_steps=20)
    agent.reset(opening, {"language": "xx", "require_approval": "yes"})
    for step in range(30):
        action = agent.act(ODD[step % len(ODD)], {"steps": step})
        assert isinstance(action, dict | str)
        if isinstance(action, dict) and action["name"] == RESERVED_SUBMIT:
            assert action["arguments"]["intent"] and action["arguments"]["summary"]
            break
    else:
        pytest.fail("no submission within the budget")
    agent.reset("Hi", "not a dict")  # type: ignore[arg-type]
    assert agent.act("?", "not a dict")  # type: ignore[arg-type]


# --- the measurement -----------------------------------------------------------------------------


@pytest.mark.slow
def test_the_measured_rates():
    """100 seeds per tier and language (docs/customer_care.md prints the table): at least
    90 % resolved and diagnosed per tier and language, and 80 % per intent."""
    for tier in ("guided", "symptom"):
        for lang in ("en", "ar"):
            counts = _play(_env(difficulty=tier, lang=lang), range(100), lang)
            assert _rate(counts, 1) >= 0.90 and _rate(counts, 2) >= 0.90, (tier, lang)
            for intent, (n, resolved, diagnosed) in counts.items():
                assert resolved >= 0.8 * n and diagnosed >= 0.8 * n, (tier, lang, intent)


def test_the_module_docstring_states_a_rule_per_family():
    text = Path(CareInvestigatorAgent.__module__.replace(".", "/") + ".py")
    doc = (REPO_ROOT / text).read_text(encoding="utf-8")
    for words in (
        "Bill higher than usual",
        "Latest bill unpaid",
        "Data that will not cover",
        "The line's products",
        "Data use",
        "Contact details",
    ):
        assert f"**{words}" in doc, words
