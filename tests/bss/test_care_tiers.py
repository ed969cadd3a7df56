"""Difficulty tiers of customer care: what the symptom opening may not say, what stays the same
as in the guided tier, the symptom bank's validation, the customer's follow-up answers, and the
tier through refusals and snapshots."""

from __future__ import annotations

import copy
import re

import pytest

import telcoenv
from telcoenv.agents import OracleAgent, run_episode
from telcoenv.catalog import template_fields
from telcoenv.domains.bss import bss_domain, customer, symptoms
from telcoenv.domains.bss.generator import products
from telcoenv.errors import CatalogError, EpisodeOptionError, UnknownIntentError
from telcoenv.evaluation.report import build_report
from telcoenv.evaluation.runner import RunConfig, build_grid, evaluate
from telcoenv.text import keyword_pattern, normalize
from tests.conftest import make_env, result_store

CARE = bss_domain().catalog
INTENTS = {intent.key: intent for intent in CARE.intents}
BLUEPRINTS = [b for family in CARE.blueprints.values() for b in family]
LANGS = ("en", "ar")
SAMPLES = range(4)
GRID_TIERS = ["guided", "symptom"]


def care_env(intent: str | None = None, **kwargs):
    return make_env(intent, domain="bss", **kwargs)


def _forbidden(opening: bool) -> list[tuple[re.Pattern[str], str]]:
    """The bank's forbidden words (and, for an opening, the travel words), as the loader reads
    them, plus every care intent's label."""
    bank = symptoms.symptom_bank()
    sections = ["forbidden", "forbidden_in_openings"] if opening else ["forbidden"]
    words = [w for s in sections for lang in LANGS for w in bank[s][lang]]
    words += [intent.label.in_lang(lang) for intent in CARE.intents for lang in LANGS]
    return [(keyword_pattern([w]), w) for w in words]


OPENING_WORDS = _forbidden(opening=True)
#: The intents whose guided opening names the cause (charged twice, the payment failed, the
#: add-on, data run out, a roaming pack for a trip abroad).
NAMED_IN_GUIDED = {
    "DUPLICATE_CHARGE",
    "PAYMENT_FAILURE",
    "ADDON_CANCELLATION",
    "DATA_TOPUP",
    "ROAMING_PACK",
}
REPLY_WORDS = _forbidden(opening=False)


def _held(text: str, words: list[tuple[re.Pattern[str], str]]) -> list[str]:
    plain = normalize(text)
    return [word for pattern, word in words if pattern.search(plain)]


def _revealing(intent_key: str, values: dict, answer: str | None) -> list[str]:
    """What the guided opening gives away or the agent must find: the values of the guided
    opening's placeholders but the month, the exact answer, the trip's country, and every plan
    and add-on by id or name."""
    intent = INTENTS[intent_key]
    fields = template_fields(intent.customer.en) - {"period"}
    found = [str(values[f]) for f in fields if values.get(f) is not None]
    found += [answer] if answer else []
    destination = values.get("destination")
    if destination:
        found += [destination, customer.phrases()["destinations_ar"][destination]]
    for product in (*products()["plans"], *products()["addons"]):
        key = "plan_id" if "plan_id" in product else "addon_id"
        found += [product[key], product["name"]["en"], product["name"]["ar"]]
    return found


# --- the opening --------------------------------------------------------------------------------


def test_bss_offers_the_guided_and_the_symptom_tier():
    assert bss_domain().difficulties == ("guided", "symptom")


@pytest.mark.parametrize("lang", LANGS)
def test_a_symptom_opening_never_names_the_cause_or_what_the_agent_must_find(lang):
    env = care_env(difficulty="symptom", lang=lang)
    guided = care_env(lang=lang)
    for blueprint in BLUEPRINTS:
        for index in SAMPLES:
            options = {"blueprint": blueprint.blueprint_id, "sample_index": index}
            opening, info = env.reset(options=options)
            assert env.trace.difficulty == "symptom"
            privileged = info["privileged"]
            key = privileged["intent"]
            values = env.episode.setup.gold_values
            where = (blueprint.blueprint_id, index, opening)
            assert not _held(opening, OPENING_WORDS), (*where, _held(opening, OPENING_WORDS))
            folded = opening.casefold()
            for label in privileged["label"].values():
                assert label.casefold() not in folded, where
            for value in _revealing(key, values, privileged["gold_answer"]):
                assert value.casefold() not in folded, (*where, value)
            assert values["msisdn"] not in opening, where  # still never volunteered
            told = guided.reset(options=options)[0]
            assert opening != told, where
            if key in NAMED_IN_GUIDED:  # the list bites: these guided openings name the cause
                assert _held(told, OPENING_WORDS), told


def test_the_opening_is_shared_by_the_family():
    """Without asks, every member of a family can open with the same words; with asks, the
    family's words are shared and only the member's question differs."""
    bank = symptoms.symptom_bank()
    seen: dict[str, set[str]] = {}
    env = care_env(difficulty="symptom", lang="en")
    for blueprint in BLUEPRINTS:
        family = bank["families"][symptoms.family_of(blueprint.intent)]
        for index in range(12):
            opening, _ = env.reset(
                options={"blueprint": blueprint.blueprint_id, "sample_index": index}
            )
            phrase = next(p for p in family["en"] if _fits_start(opening, p))
            seen.setdefault(symptoms.family_of(blueprint.intent), set()).add(phrase)
    for name, family in bank["families"].items():
        assert seen[name] and seen[name] <= set(family["en"]), name


def _fits_start(opening: str, template: str) -> bool:
    pattern = re.sub(r"\\\{[a-z_]+\\\}", ".+?", re.escape(template))
    return re.search(pattern, opening) is not None


@pytest.mark.parametrize("blueprint", BLUEPRINTS, ids=str)
def test_the_tier_changes_the_opening_and_nothing_else(blueprint):
    """Same blueprint and sample: the same data, values, gold chain, answer and customer
    knowledge; only the words of the opening differ (the greeting, drawn first, is the same)."""
    for lang in LANGS:
        for index in (0, 3):
            options = {"blueprint": blueprint.blueprint_id, "sample_index": index, "lang": lang}
            runs = {}
            for tier in ("guided", "symptom"):
                env = care_env(difficulty=tier)
                opening, info = env.reset(options=options)
                setup = env.episode.setup
                runs[tier] = (opening, info["privileged"], setup, env.trace)
            (g_open, g_priv, g_setup, g_trace), (s_open, s_priv, s_setup, s_trace) = (
                runs["guided"],
                runs["symptom"],
            )
            assert s_open != g_open
            greeting = _greeting(g_open, lang)
            assert s_open.startswith(f"{greeting} ")  # drawn first, the same in both tiers
            for key in ("gold_chain", "gold_answer", "values", "customer_knows", "facts"):
                assert s_priv[key] == g_priv[key], key
            assert s_setup.gold_values == g_setup.gold_values
            assert s_setup.gold_answer == g_setup.gold_answer
            # The planted data, row for row (each under its own row id: the environments
            # share the process's database).
            assert _rows(s_setup.truth) == _rows(g_setup.truth)
            assert s_setup.truth.facts == g_setup.truth.facts
            assert s_trace.start_state == g_trace.start_state
            assert s_trace.episode_id == g_trace.episode_id


def _rows(data) -> dict[str, list[tuple]]:
    return {table: [row[1:] for row in rows] for table, rows in data.rows.items()}


def _greeting(opening: str, lang: str) -> str:
    return next(g for g in customer.phrases()["greetings"][lang] if opening.startswith(f"{g} "))


def test_the_guided_opening_is_the_intents_own_and_the_default():
    for tier in ({}, {"difficulty": "guided"}):
        env = care_env(lang="en", **tier)
        for intent in CARE.intents:
            opening, _ = env.reset(options={"intent": intent.key, "sample_index": 2})
            assert env.trace.difficulty == "guided"
            expected = intent.customer.en.format_map(env.episode.setup.gold_values)
            assert opening in {f"{g} {expected}" for g in customer.phrases()["greetings"]["en"]}


# --- the oracle -----------------------------------------------------------------------------------


@pytest.mark.parametrize("blueprint", BLUEPRINTS, ids=str)
def test_the_oracle_solves_every_care_blueprint_in_the_symptom_tier(blueprint):
    env = care_env(difficulty="symptom")
    intent = CARE.intent(blueprint.intent)
    for lang in LANGS:
        for index in range(2):
            options = {"blueprint": blueprint.blueprint_id, "sample_index": index, "lang": lang}
            info = run_episode(env, OracleAgent(), options=options)[1]
            metrics = info["metrics"]
            assert info["resolved"] is True, info["verification"]
            assert metrics["sas"] == metrics["msc"] == metrics["eap"] == metrics["args"] == 1.0
            assert metrics["answer"] is (True if intent.answer else None)
            assert env.trace.difficulty == "symptom"


# --- the bank -------------------------------------------------------------------------------------


def _check(data: dict) -> None:
    symptoms.check_symptoms(data, CARE.intents)


def test_the_packaged_bank_is_valid_and_every_care_intent_is_in_one_family():
    _check(symptoms.symptom_bank())
    symptoms.check_intents(CARE.intents)
    families = symptoms.symptom_bank()["families"]
    members = [key for family in families.values() for key in family["intents"]]
    assert sorted(members) == sorted(INTENTS)
    for name, family in families.items():
        assert len(family["intents"]) >= 3, name  # the opening is right for a third at most
        assert set(family["asks"]) == set(family["intents"]), name
        for key in family["intents"]:
            assert symptoms.family_of(key) == name
    assert symptoms.family_members("bill") == (
        "BILL_SHOCK",
        "DUPLICATE_CHARGE",
        "PAYMENT_FAILURE",
        "OUTSTANDING_BALANCE",
    )
    with pytest.raises(UnknownIntentError, match="no symptom family"):
        symptoms.family_of("PAYMENT_FAILURE_TICKET")


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


def _delete(path: str):
    def mutate(data: dict) -> None:
        *parents, last = path.split(".")
        node = data
        for part in parents:
            node = node[part]
        del node[last]

    return mutate


@pytest.mark.parametrize(
    ("mutate", "field", "words"),
    [
        (_delete("families.data_use"), "families", "AVERAGE_DATA_USE"),
        (
            lambda d: d["families"]["account_change"]["intents"].append("BILL_SHOCK"),
            "families.account_change.intents",
            "also in family",
        ),
        (
            lambda d: d["families"]["account_change"]["intents"].append("SIM_SWAP"),
            "families.account_change.intents",
            "unknown care intent",
        ),
        (
            lambda d: d["families"]["data_use"]["intents"].remove("PLAN_RECOMMENDATION"),
            "families.data_use.intents",
            "3 intents or more",
        ),
        (
            _set("families.bill.en.0", "I was charged twice."),
            "families.bill.en.0",
            "twice",
        ),
        (
            _set("families.bill.ar.1", "فاتورتي فيها رسوم تجوال."),
            "families.bill.ar.1",
            "تجوال",
        ),
        (
            _set("families.bill.asks.PAYMENT_FAILURE.en.0", "Why did the payment fail?"),
            "families.bill.asks.PAYMENT_FAILURE.en.0",
            "fail",
        ),
        (
            _set("families.account_change.asks.PLAN_CHANGE.en.1", "I want a Plan Change."),
            "families.account_change.asks.PLAN_CHANGE.en.1",
            "plan change",
        ),
        (
            _set("families.bill.en.2", "I was abroad and the bill went up."),
            "families.bill.en.2",
            "forbidden_in_openings",
        ),
        (
            _set("families.bill.asks.BILL_SHOCK.en.3", "What is {roaming_charge} on my bill?"),
            "families.bill.asks.BILL_SHOCK.en.3",
            "not allowed",
        ),
        (
            _set("families.bill.en.0", "My bill for {period} is wrong."),
            "families.bill.en.0",
            "not in the guided opening of PAYMENT_FAILURE",
        ),
        (
            _set("families.bill.en.4", "My bill is 300 SAR higher."),
            "families.bill.en.4",
            "number",
        ),
        (_delete("families.data_use.asks"), "families.data_use.asks", "what each member"),
        (
            _delete("families.bill.asks.OUTSTANDING_BALANCE"),
            "families.bill.asks",
            "one entry per member",
        ),
        (_delete("families.account_change.ar"), "families.account_change", "intents, en, ar"),
        (
            _set("families.account_change.en", ["My line.", "Change."]),
            "families.account_change.en",
            "at least 4",
        ),
        (_delete("forbidden"), "", "missing section"),
        (_delete("follow_ups.noticed.data_use"), "follow_ups.noticed", "one entry per family"),
        (
            _set("follow_ups.not_travelling.en.0", "No, and my card expired."),
            "follow_ups.not_travelling.en.0",
            "card",
        ),
        (
            _set("follow_ups.noticed.bill.en.1", "When the bill for {period} came."),
            "follow_ups.noticed.bill.en.1",
            "not in the guided opening",
        ),
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


def test_a_travel_word_is_allowed_in_a_follow_up_answer():
    data = copy.deepcopy(symptoms.symptom_bank())
    data["follow_ups"]["not_travelling"]["en"][0] = "No, I haven't been abroad."
    _check(data)


# --- the customer ---------------------------------------------------------------------------------


def _fits(text: str, variants: list[str]) -> bool:
    patterns = [re.sub(r"\\\{[a-z_]+\\\}", ".+", re.escape(v)) for v in variants]
    return any(re.fullmatch(pattern, text) for pattern in patterns)


@pytest.mark.parametrize("lang", LANGS)
def test_the_customer_says_when_they_noticed_and_whether_they_travelled(lang):
    bank = symptoms.symptom_bank()["follow_ups"]
    noticed = {"en": "When did you notice it?", "ar": "متى لاحظت ذلك؟"}[lang]
    travel = {"en": "Were you travelling abroad?", "ar": "هل سافرت إلى الخارج؟"}[lang]
    for key in ("BILL_SHOCK", "DUPLICATE_CHARGE"):
        env = care_env(key, difficulty="symptom", lang=lang)
        _, info = env.reset(seed=4)
        values = env.episode.setup.gold_values
        when = env.step(noticed)[0]
        assert _fits(when, bank["noticed"]["bill"][lang]), when
        trip = env.step(travel)[0]
        if key == "BILL_SHOCK":  # back from a trip: where they were, never the charge
            country = values["destination"]
            if lang == "ar":
                country = customer.phrases()["destinations_ar"][country]
            assert country in trip, trip
        else:
            assert _fits(trip, bank["not_travelling"][lang]), trip
        for reply in (when, trip):
            assert not _held(reply, REPLY_WORDS), (reply, _held(reply, REPLY_WORDS))
            assert info["privileged"]["gold_answer"] not in reply


def test_the_customer_still_gives_what_they_know_and_restates_the_symptom():
    env = care_env("plan_change", difficulty="symptom")
    opening, info = env.reset(seed=1)
    plan = info["privileged"]["values"]["plan_id"]
    assert plan not in opening
    assert plan in env.step("Which plan do you want?")[0]  # named when asked
    unclear = env.step("The weather is nice today.")[0]
    guided = INTENTS["PLAN_CHANGE"].customer.en.format_map(env.episode.setup.gold_values)
    family = opening.removeprefix(_greeting(opening, "en")).strip()
    asks = symptoms.symptom_bank()["families"]["account_change"]["asks"]["PLAN_CHANGE"]["en"]
    # Asked nothing they can give, they say what they want (never the opening's words alone,
    # never the guided opening, which names the plan).
    assert any(ask in unclear for ask in asks), unclear
    assert family not in unclear and guided not in unclear
    env = care_env("roaming_pack", difficulty="symptom")
    _, info = env.reset(seed=3)
    start = next(c for c in info["privileged"]["gold_chain"] if c["tool"] == "subscribe_addon")
    reply = env.step("Where are you travelling, and when do you leave?")[0]
    assert start["arguments"]["start_date"] in reply
    env = care_env("contact_update", difficulty="symptom")
    opening, info = env.reset(seed=2)
    email = env.episode.setup.gold_values["email"]
    assert email not in opening and email in env.step("What is the new email address?")[0]


def test_the_guided_customer_keeps_todays_answers():
    """The follow-up answers belong to the symptom tier: a guided customer without a trip still
    cannot say when (a trip question, as before)."""
    env = care_env("duplicate_charge")
    env.reset(seed=4)
    reply = env.step("Were you travelling abroad?")[0]
    assert any(reply.startswith(unknown) for unknown in customer.phrases()["unknown"]["en"])
    assert "my line number" in reply  # and what they can tell instead


# --- the tier through the environment ------------------------------------------------------------


def test_tiers_the_domain_does_not_offer_are_refused_naming_the_tiers():
    with pytest.raises(EpisodeOptionError) as info:
        telcoenv.make("customer_care", difficulty="noisy", embedder=None)
    assert "'guided', 'symptom'" in str(info.value) and "bss" in str(info.value)
    env = care_env()
    with pytest.raises(EpisodeOptionError, match="reset option 'difficulty'"):
        env.reset(options={"difficulty": "noisy"})
    opening, _ = env.reset(seed=5, options={"difficulty": "symptom"})
    assert env.trace.difficulty == "symptom"


def test_a_snapshot_and_a_clone_keep_the_tier():
    env = care_env("bill_shock", difficulty="symptom")
    env.reset(seed=2)
    env.step("When did you notice it?")
    twin = env.clone()
    assert twin.trace.model_dump() == env.trace.model_dump()
    assert twin.trace.difficulty == "symptom"
    other = care_env("bill_shock")  # a guided env restores a symptom episode as symptom
    other.set_state(env.get_state())
    assert other.trace.difficulty == "symptom"
    assert other.trace.problem_statement == env.trace.problem_statement
    question = "Were you travelling abroad?"
    assert other.step(question)[0] == env.step(question)[0] == twin.step(question)[0]


def test_a_care_grid_plays_and_reports_the_symptom_tier(tmp_path):
    store, _ = result_store(tmp_path)
    grid = build_grid(
        ["bill_shock", "duplicate_charge"], 1, ["en"], domain="bss", difficulties=GRID_TIERS
    )
    config = RunConfig(agent="oracle", agent_options={}, embedder=None)
    assert evaluate(store, "oracle", grid, config).stored == len(grid) == 2 * 2 * 2
    records = store.records(["oracle"])
    assert {r["difficulty"] for r in records} == set(GRID_TIERS)
    assert all(r["resolved"] for r in records)
    report = build_report({"oracle": records})
    assert list(report["runs"]) == ["oracle [guided]", "oracle [symptom]"]


@pytest.mark.parametrize(
    ("lang", "question"),
    [
        ("en", "What seems to be the problem?"),
        ("en", "Could you describe the issue you're having?"),
        ("ar", "وش المشكلة بالضبط؟"),
        ("ar", "كيف أقدر أساعدك؟"),
    ],
)
def test_asked_what_they_need_the_customer_states_their_request(lang, question):
    """The symptom opening names a family; asked what they need, the customer says what they
    see and want (their member's request), in their language, and still no cause."""
    for intent in ("payment_failure", "outstanding_balance", "plan_change", "contact_update"):
        env = care_env(intent, difficulty="symptom", lang=lang)
        opening, _ = env.reset(seed=2)
        asks = symptoms.symptom_bank()["families"][symptoms.family_of(intent.upper())]["asks"]
        own = asks[intent.upper()][lang]
        reply = env.step(question)[0]
        values = env.episode.setup.gold_values
        assert any(_fits(reply.strip(), [ask]) or ask.format_map(values) in reply for ask in own)
        assert not _held(reply, REPLY_WORDS), reply


def test_asked_what_they_need_and_a_fact_they_answer_both():
    env = care_env("contact_update", difficulty="symptom")
    env.reset(seed=0)
    reply = env.step("How can I help you today? And what is your mobile number?")[0]
    own = symptoms.symptom_bank()["families"]["account_change"]["asks"]["CONTACT_UPDATE"]["en"]
    msisdn = env.episode.setup.gold_values["msisdn"]
    assert any(ask in reply for ask in own) and msisdn in reply
