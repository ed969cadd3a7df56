"""The symptom bank of the harder difficulty tiers: its validation, its phrases and the
engineer's follow-up answers."""

from __future__ import annotations

import copy
import itertools

import numpy as np
import pytest

from telcoenv.domains.network import engineer, symptoms
from telcoenv.domains.network.kpis import kpi_definitions
from telcoenv.domains.network.loading import network_catalog
from telcoenv.errors import CatalogError, UnknownIntentError

INTENTS = {intent.key: intent for intent in network_catalog().intents}
LANGS = ("en", "ar")


def _fields(lang: str) -> dict[str, str]:
    bank = engineer.phrases()
    return {
        "cell_id": "NR-URB-MACRO-1",
        "cluster_id": "CL-URB-001",
        "place": bank["places"]["urban"][lang][0],
        "time_of_day": bank["times_of_day"]["peak_evening"][lang][0],
        "window": engineer.window_phrase("3h", lang),
    }


CONFOUNDER_VALUES = {"guess": "X", "alarm": "Fan Speed Abnormal", "neighbour_id": "NR-URB-MACRO-2"}


def _giveaways(key: str) -> list[str]:
    """The intent's labels and the names of its evidence KPIs, both languages, casefolded."""
    intent = INTENTS[key]
    names = [intent.label.en, intent.label.ar]
    for info in kpi_definitions().kpis.values():
        if info.family in intent.evidence:
            names += [info.name.en, info.name.ar]
    return [name.casefold() for name in names]


def _check(data: dict) -> None:
    catalog = network_catalog()
    symptoms.check_symptoms(data, catalog.intents, tools=catalog.tools)


def _follow_up_pools(key: str) -> dict[str, dict[str, list[str]]]:
    pools = {}
    for kind, node in symptoms.symptom_bank()["follow_ups"].items():
        pools[kind] = node if set(node) == set(LANGS) else node[symptoms.family_of(key)]
    return pools


# --- validation -----------------------------------------------------------------------------------


def test_the_packaged_bank_is_valid():
    _check(symptoms.symptom_bank())
    symptoms.check_intents(network_catalog().intents)


def test_every_intent_is_in_exactly_one_family_of_three_or_more():
    families = symptoms.symptom_bank()["families"]
    members = [key for family in families.values() for key in family["intents"]]
    assert sorted(members) == sorted(INTENTS)
    assert all(len(family["intents"]) >= symptoms.MIN_FAMILY_SIZE for family in families.values())
    for key in INTENTS:
        assert key in symptoms.family_members(symptoms.family_of(key))


def _set(path: str, value):
    def mutate(data: dict) -> None:
        *parents, last = path.split(".")
        node = data
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return mutate


def _remove_intent(family: str, key: str):
    return lambda data: data["families"][family]["intents"].remove(key)


@pytest.mark.parametrize(
    ("mutate", "field", "words"),
    [
        (
            _set(
                "families.business_service.intents",
                ["SLA_VIOLATION_REPORT", "HQOS_LATENCY_VIOLATION"],
            ),
            "families.business_service.intents",
            "at least 3",
        ),
        (_remove_intent("slow_data", "BLER_ANOMALY"), "families", "BLER_ANOMALY"),
        (
            lambda d: d["families"]["no_service"]["intents"].append("BLER_ANOMALY"),
            "families.no_service.intents",
            "also in family",
        ),
        (
            _set("families.slow_data.en.0", "Latency is through the roof."),
            "families.slow_data.en.0",
            "latency",
        ),
        (
            _set("families.dropped_calls.ar.2", "ارتفع معدل نجاح التسليم في {place}."),
            "families.dropped_calls.ar.2",
            "معدل نجاح التسليم",
        ),
        (
            _set("families.slow_data.en.1", "Users in {place} report {evidence}."),
            "families.slow_data.en.1",
            "evidence",
        ),
        (
            _set("follow_ups.users.no_service.en.0", "People near {neighbour_id}."),
            "follow_ups.users.no_service.en.0",
            "neighbour_id",
        ),
        (
            _set("follow_ups.changed.no_service.en.0", "It looks like a coverage hole to me."),
            "follow_ups.changed.no_service.en.0",
            "coverage hole",
        ),
        (
            _set("families.business_service.ar.0", "العميل يشكو من بطء الشريحة."),
            "families.business_service.ar.0",
            "شريحة",
        ),
        (
            _set("families.slow_data.en.2", "Only 3 users are happy."),
            "families.slow_data.en.2",
            "number",
        ),
        (
            _set("confounders.unrelated_alarm.en.0", "A Cell Unavailable alarm fired."),
            "confounders.unrelated_alarm.en.0",
            "Cell Unavailable",
        ),
        (
            _set("confounders.wrong_guess.ar.1", "لا أعرف السبب."),
            "confounders.wrong_guess.ar.1",
            "{guess}",
        ),
        (lambda d: d["families"]["slow_data"].pop("ar"), "families.slow_data", "intents, en, ar"),
        (
            lambda d: d["follow_ups"]["status_open"].pop("no_service"),
            "follow_ups.status_open",
            "one entry per family",
        ),
        (_set("families.slow_data.en", ["Slow."] * 2), "families.slow_data.en", "variant"),
    ],
)
def test_a_broken_bank_is_rejected_naming_the_field(mutate, field, words):
    data = copy.deepcopy(symptoms.symptom_bank())
    mutate(data)
    with pytest.raises(CatalogError) as info:
        _check(data)
    assert info.value.field == field
    assert words.casefold() in str(info.value).casefold()
    assert info.value.file == symptoms.FILE


# --- phrases --------------------------------------------------------------------------------------


@pytest.mark.parametrize("lang", LANGS)
def test_every_phrase_formats_with_the_allowed_fields(lang):
    bank = symptoms.symptom_bank()
    fields = _fields(lang)
    texts = [t for family in bank["families"].values() for t in family[lang]]
    for node in bank["follow_ups"].values():
        pools = [node] if set(node) == set(LANGS) else node.values()
        texts += [t for pool in pools for t in pool[lang]]
    for text in texts:
        rendered = text.format(**fields)
        assert "{" not in rendered and "}" not in rendered
    for kind in symptoms.CONFOUNDER_KINDS:
        for text in bank["confounders"][kind][lang]:
            rendered = text.format(**fields, **CONFOUNDER_VALUES)
            assert "{" not in rendered and "}" not in rendered


def test_families_have_enough_variants():
    for family in symptoms.symptom_bank()["families"].values():
        assert all(len(family[lang]) >= symptoms.MIN_FAMILY_VARIANTS for lang in LANGS)


@pytest.mark.parametrize("key", sorted(INTENTS))
@pytest.mark.parametrize("lang", LANGS)
def test_no_symptom_or_confounder_names_the_intent_or_its_kpis(key, lang):
    bank = symptoms.symptom_bank()
    giveaways = _giveaways(key)
    fields = _fields(lang)
    texts = list(bank["families"][symptoms.family_of(key)][lang])
    for kind in symptoms.CONFOUNDER_KINDS:
        texts += bank["confounders"][kind][lang]
    for text in texts:
        plain = text.casefold()
        assert not [name for name in giveaways if name in plain], text
    # Rendered, with the guess drawn for this intent (the label of another intent).
    for seed in range(30):
        rng = np.random.default_rng(seed)
        statement = symptoms.symptom_statement_part(key, lang, rng, fields)
        kind, extra = symptoms.choose_confounder(key, lang, rng)
        extra = {**CONFOUNDER_VALUES, **extra}
        statement += " " + symptoms.confounder(kind, lang, rng, {**fields, **extra})
        assert not [name for name in giveaways if name in statement.casefold()], statement


@pytest.mark.parametrize("key", sorted(INTENTS))
def test_the_wrong_guess_names_another_intent_of_the_family(key):
    family = symptoms.family_members(symptoms.family_of(key))
    labels = {INTENTS[k].label.en: k for k in family}
    guessed = set()
    for seed in range(60):
        rng = np.random.default_rng(seed)
        kind, extra = symptoms.choose_confounder(key, "en", rng, kinds=("wrong_guess",))
        assert kind == "wrong_guess"
        guessed.add(labels[extra["guess"]])
    assert guessed == set(family) - {key}
    _, extra = symptoms.choose_confounder(key, "ar", np.random.default_rng(0), ("wrong_guess",))
    assert extra["guess"] in {INTENTS[k].label.ar for k in family if k != key}


def test_the_other_confounders_leave_their_field_to_the_engineer():
    kinds = set()
    for seed in range(40):
        kind, extra = symptoms.choose_confounder("COVERAGE_HOLE", "en", np.random.default_rng(seed))
        kinds.add(kind)
        assert set(extra) == ({"guess"} if kind == "wrong_guess" else set())
    assert kinds == set(symptoms.CONFOUNDER_KINDS)
    text = symptoms.confounder(
        "unrelated_alarm",
        "ar",
        np.random.default_rng(1),
        {**_fields("ar"), "alarm": "Fan Speed Abnormal"},
    )
    assert "Fan Speed Abnormal" in text


def test_choices_come_from_the_generator_only():
    def run(seed: int) -> list[str]:
        rng = np.random.default_rng(seed)
        fields = _fields("en")
        kind, extra = symptoms.choose_confounder("RLF_SPIKE", "en", rng)
        return [
            symptoms.symptom_statement_part("RLF_SPIKE", "en", rng, fields),
            symptoms.confounder(kind, "en", rng, {**fields, **CONFOUNDER_VALUES, **extra}),
            symptoms.follow_up_reply("users", "RLF_SPIKE", "en", rng, fields),
        ]

    assert run(7) == run(7)
    assert len({tuple(run(seed)) for seed in range(20)}) > 1


def test_the_family_of_an_unknown_intent_is_an_error():
    with pytest.raises(UnknownIntentError):
        symptoms.family_of("NOT_AN_INTENT")
    assert symptoms.family_of(INTENTS["PCI_COLLISION"]) == "dropped_calls"


# --- follow-up questions and answers --------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ("Is it fixed now?", "status"),
        ("Do users still see the problem?", "status"),
        ("Are customers still complaining after the change?", "status"),
        ("Did that work?", "status"),
        ("When did it start?", "started"),
        ("Since when has this been happening?", "started"),
        ("How long has this been going on?", "started"),
        ("Which users are affected?", "users"),
        ("Who is affected?", "users"),
        ("Who's complaining?", "users"),
        ("Which services are affected?", "services"),
        ("What apps do they use?", "services"),
        ("Is it voice or data?", "services"),
        ("What changed recently?", "changed"),
        ("Has anything changed?", "changed"),
        ("Any maintenance lately?", "changed"),
        ("Was there any recent work in the area?", "changed"),
        ("هل تم حل المشكلة؟", "status"),
        ("هل ما زال المستخدمون يعانون؟", "status"),
        ("وهل تحسّنت الخدمة الآن؟", "status"),
        ("متى بدأت المشكلة؟", "started"),
        ("منذ متى والمشكلة قائمة؟", "started"),
        ("أي المستخدمين متأثرون؟", "users"),
        ("من هم المتضررون؟", "users"),
        ("أي الخدمات تأثرت؟", "services"),
        ("هل المشكلة في الصوت أم البيانات؟", "services"),
        ("ما الذي تغيّر مؤخراً؟", "changed"),
        ("هل كانت هناك أعمال صيانة؟", "changed"),
    ],
)
def test_follow_up_questions_are_classified(message, kind):
    assert engineer.asked_kinds(message) == [kind]


@pytest.mark.parametrize(
    "message",
    [
        "Thanks, I will look at the KPIs.",
        "I checked the whole area and will report back.",
        "OK.",
        "شكراً، سأراجع المؤشرات.",
        "سأفتح تذكرة للفريق الميداني.",
    ],
)
def test_unrelated_messages_are_not_follow_up_questions(message):
    assert engineer.asked_kinds(message) == ["report"]  # asks nothing: acknowledged


@pytest.mark.parametrize(
    "message",
    [
        "Do you know the weather there?",
        "هل تعرف حالة الطقس هناك؟",
        "",
    ],
)
def test_questions_the_engineer_cannot_answer_are_other(message):
    assert engineer.asked_kinds(message) == ["other"]


@pytest.mark.parametrize("key", sorted(INTENTS))
@pytest.mark.parametrize("lang", LANGS)
def test_follow_up_replies_never_name_the_intent(key, lang):
    giveaways = _giveaways(key)
    fields = _fields(lang)
    for pool in _follow_up_pools(key).values():
        for text in pool[lang]:
            rendered = text.format(**fields).casefold()
            assert not [name for name in giveaways if name in rendered], text
    for kind, seed in itertools.product(symptoms.FOLLOW_UP_KINDS, range(5)):
        reply = symptoms.follow_up_reply(kind, key, lang, np.random.default_rng(seed), fields)
        assert not [name for name in giveaways if name in reply.casefold()], reply


def test_a_status_question_is_answered_by_whether_the_fix_recovered():
    fields = _fields("en")
    pools = _follow_up_pools("BLER_ANOMALY")
    expected = {text.format(**fields) for text in pools["status_fixed"]["en"]}
    for seed in range(10):
        rng = np.random.default_rng(seed)
        reply = symptoms.follow_up_reply(
            "status", "BLER_ANOMALY", "en", rng, fields, recovered=True
        )
        assert reply in expected
    open_ = {text.format(**fields) for text in pools["status_open"]["en"]}
    reply = symptoms.follow_up_reply(
        "status", "BLER_ANOMALY", "en", np.random.default_rng(0), fields
    )
    assert reply in open_
    with pytest.raises(ValueError, match="unknown follow-up kind"):
        symptoms.follow_up_reply("weather", "BLER_ANOMALY", "en", np.random.default_rng(0), fields)


def test_the_intents_of_a_family_share_their_answers():
    """No answer pool differs within a family, so that a follow-up never tells them apart."""
    for family in symptoms.symptom_bank()["families"].values():
        pools = [_follow_up_pools(key) for key in family["intents"]]
        assert all(pool == pools[0] for pool in pools)
