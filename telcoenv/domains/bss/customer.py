"""The simulated customer: bilingual, template-based, deterministic (seeded generator).

The customer opens the conversation with their intent's ``customer`` message (intents.yaml)
and never volunteers their line number. Asked in a plain message, they supply what they know
and the agent cannot look up: the line number, the trip (destination and date), the budget, the
extra data needed, the new email address, and the month or plan named in their opening. They
never reveal an answer the agent has to find (a recommended plan, an amount). Told that the
request is done, or offered more help, they say that is
all, unless they asked for a change and none was made (a kept change sends them a
confirmation): then they say they have not heard of it and restate the request. Asked for
their name and birth date, they give them (an impostor gives their claim); told these do not
match the record, the holder says them again and an impostor insists on the change. Asked to
approve a change, they answer as :mod:`telcoenv.domains.bss.consent` reads it. What a message
asks is
routed by meaning (``questions.yaml``, :mod:`telcoenv.routing`); phrases live in
``customer.yaml``. A message that asks for nothing the customer can give gets the list of what
they know.

In the ``symptom`` difficulty tier the customer opens with what they see instead
(:func:`symptom_opening`, phrases in ``symptoms.yaml``), knows the same facts, also answers
when they noticed it and whether they travelled, and restates the symptom, not the guided
opening, when a message is unclear.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from functools import cache, lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from telcoenv.catalog import template_fields
from telcoenv.datafiles import parse_yaml
from telcoenv.domains.bss import symptoms
from telcoenv.domains.bss.catalogue import products
from telcoenv.domains.bss.generator import answer_vocabulary, arabic_name
from telcoenv.domains.bss.models import CareIntent
from telcoenv.metrics.answers import answers_match
from telcoenv.phrases import pick
from telcoenv.routing import ROUTED_CHARS, QuestionRouter, asks, load_prototypes, split_sentences
from telcoenv.specs import Language
from telcoenv.text import APPROVAL_CHARS, asks_for_approval, keyword_pattern, normalize

# What the customer knows (when the episode has it), in the order a reply gives it.
_ALWAYS_KNOWN = ("msisdn", "identity", "trip", "destination", "budget", "need_gb", "email")
# Known only when the opening names it (the plan to recommend is the agent's job to find).
_NAMED_IN_OPENING = ("period", "plan_id")
# A routed kind as the topic a reply answers: a trip is told as planned or past.
_TOPIC = {"travel": "trip"}
# An operator's internal id asked for ("your customer ID", "رقم الحساب"): the customer knows
# only their line number, and says so.
_INTERNAL_ID = keyword_pattern(
    [
        *("customer id", "customer number", "customer no", "client id", "account id"),
        *("account number", "account no", "identifier", "your id$", "the id$", "معرف"),
        *("رقم العميل", "رقم عميل", "رقم الحساب", "رقم حساب", "اي دي"),
    ]
)


# The agent says the caller's details do not match the record ("could not verify you").
_IDENTITY_REFUSED = keyword_pattern(
    [
        *("could not verify", "couldn't verify", "cannot verify", "can't verify"),
        *("unable to verify", "do not match", "don't match", "does not match", "doesn't match"),
        *("not match our records", "identity could not", "failed verification"),
        *("لا يطابق", "لا تطابق", "لا يتطابق", "تعذر التحقق", "لم نتمكن من التحقق"),
        *("لم اتمكن من التحقق", "لا يمكنني التحقق"),
    ]
)


@cache
def phrases() -> dict[str, Any]:
    """The phrase bank (``customer.yaml``), parsed once per process."""
    text = resources.files(__package__).joinpath("customer.yaml").read_text("utf-8")
    return parse_yaml(text, "customer.yaml")


def knowledge(intent: CareIntent, values: Mapping[str, Any]) -> dict[str, Any]:
    """The facts the customer can give in this episode (topic -> template values)."""
    known: dict[str, Any] = {}
    for topic in _ALWAYS_KNOWN:
        if topic == "identity":  # their own name and birth date (an impostor's claim)
            if values.get("full_name") and values.get("birth_date"):
                known["identity"] = values
        elif topic == "trip":
            if values.get("destination") and values.get("zone"):
                known["trip"] = values
        elif topic == "destination":
            if values.get("destination") and "trip" not in known:
                known["destination"] = values
        elif values.get(topic) is not None:
            known[topic] = values
    opening = template_fields(intent.customer.en)
    for topic in _NAMED_IN_OPENING:
        if topic in opening and values.get(topic) is not None:
            known[topic] = values
    return known


def opening(
    intent: CareIntent, values: Mapping[str, Any], lang: Language, rng: np.random.Generator
) -> str:
    """The customer's first message: a greeting and their intent's opening, filled."""
    greeting = pick(phrases()["greetings"][lang], rng)
    return f"{greeting} {intent.customer.in_lang(lang).format_map(_in_lang(values, lang))}"


def symptom_opening(
    intent: CareIntent, values: Mapping[str, Any], lang: Language, rng: np.random.Generator
) -> tuple[str, str]:
    """The customer's first message in the ``symptom`` tier: the same greeting as the guided
    opening (the same first draw) and their family's phrase (``symptoms.yaml``); and what they
    see and want, which the customer says when a message asks what they need (one that asks
    nothing they can give) and restates whenever a message is unclear."""
    greeting = pick(phrases()["greetings"][lang], rng)
    phrase, seen = symptoms.opening(intent, lang, rng, _in_lang(values, lang))
    return f"{greeting} {phrase}", seen


def _in_lang(values: Mapping[str, Any], lang: Language) -> Mapping[str, Any]:
    """The values as the customer says them: an Arabic speaker names the country, the plan
    (by its Arabic name, never its internal id) and themselves in Arabic; a birth date as
    people say it (``15 March 1988``, ``15/03/1988``)."""
    said = dict(values)
    destination = values.get("destination")
    if lang == "ar" and destination:
        said["destination"] = phrases()["destinations_ar"][destination]
    if lang == "ar" and values.get("plan_id") in _arabic_plan_names():
        said["plan_id"] = _arabic_plan_names()[values["plan_id"]]
    if values.get("full_name") and values.get("birth_date"):
        said |= _identity_forms(values["full_name"], values["birth_date"], lang)
    return said


@cache
def _arabic_plan_names() -> dict[str, str]:
    return {p["plan_id"]: p["name"]["ar"] for p in products()["plans"]}


def _identity_forms(name: str, birth_date: str, lang: Language) -> dict[str, str]:
    born = dt.date.fromisoformat(birth_date)
    month = phrases()["month_names"][lang][born.month - 1]
    return {
        "spoken_name": arabic_name(name) if lang == "ar" else name,
        "birth_long": f"{born.day} {month} {born.year}",
        "birth_dmy": f"{born.day:02d}/{born.month:02d}/{born.year}",
    }


@cache
def question_router() -> QuestionRouter:
    """The customer's router of questions (``questions.yaml``), built once per process."""
    return QuestionRouter(
        load_prototypes(Path(__file__).with_name("questions.yaml")), statements=("done",)
    )


def asked_topics(message: str) -> list[str]:
    """The topics a plain message asks about, by meaning (``noticed`` included, which only the
    symptom tier answers), and ``approval`` when it asks to approve a change
    (:func:`telcoenv.text.asks_for_approval`: a statement or a negation is no request)."""
    return list(_topics(message))


# An episode asks twice per message (does it ask for approval? what to answer?): routing it
# once halves the cost of a message.
@lru_cache(maxsize=256)
def _topics(message: str) -> tuple[str, ...]:
    topics = tuple(_TOPIC.get(kind, kind) for kind in question_router().route(message))
    return (*topics, "approval") if asks_for_approval(message) else topics


def reply(
    intent: CareIntent,
    values: Mapping[str, Any],
    message: str,
    lang: Language,
    rng: np.random.Generator,
    *,
    ended: bool,
    seen: str | None = None,
    waiting: bool = False,
    unanswered: bool = False,
    explained: bool = False,
    objection: str | None = None,
) -> str:
    """The customer's answer to a plain message from the agent; ``seen`` is the symptom the
    customer opened with in the ``symptom`` tier (``None``: the guided tier); ``waiting``: a
    change they asked for has not been made (told it is done, they say they have not heard);
    ``unanswered``: no message has given the answer to their question (told "anything else?",
    or told something that asks nothing, they ask it again); ``explained``: this message
    gives that answer (they thank the agent); ``objection``: why they do not approve the change
    the message asks them to (:mod:`telcoenv.domains.bss.consent`; None: they agree)."""
    bank = phrases()
    values = _in_lang(values, lang)
    if ended:
        return pick(bank["closing"][lang], rng)
    restated = intent.customer.in_lang(lang).format_map(values) if seen is None else seen
    if objection is not None:  # given only for a message that asks for approval
        return _objected(objection, values, restated, lang, rng)
    if _IDENTITY_REFUSED.search(normalize(message[:ROUTED_CHARS])):
        if values.get("impostor"):  # they cannot give the birth date on record: they insist
            return pick(bank["identity_refused"]["impostor"][lang], rng)
        again = pick(bank["answers"]["identity"][lang], rng).format_map(values)
        return f"{pick(bank['identity_refused']['holder'][lang], rng)} {again}"
    asked = asked_topics(message)
    known = knowledge(intent, values)
    if "request" in asked:  # what they need: their request, and what else the message asks
        return _restated(intent, values, restated, asked, known, message, lang, rng, seen)
    if seen is not None:
        kinds = [k for k in symptoms.QUESTION_KINDS if _TOPIC.get(k, k) in asked]
        if kinds:
            return _follow_up(intent, values, kinds, asked, known, lang, rng)
    if "noticed" in asked:  # the guided opening already says what the customer sees
        asked.remove("noticed")
    wrapped_up = "done" in asked  # "it is done" / "anything else?": answered if nothing else is
    if wrapped_up:
        asked.remove("done")
    if "trip" in asked and "destination" in known:  # a past trip: where they were
        asked.append("destination")
    info = [t for t in (*_ALWAYS_KNOWN, *_NAMED_IN_OPENING) if t in asked and t in known]
    if "approval" in asked and info:
        info.append("approval")
    if info:
        return " ".join(_answer(t, message, lang, rng).format_map(values) for t in info)
    # Asked to approve a change, they consent, whatever else the message seemed to ask that they
    # cannot tell ("May I apply this change?" also routes to the plan): the change is approved,
    # so the reply must say so (it said "I'm not sure" while the change went through).
    if "approval" in asked:
        return pick(bank["answers"]["approval"][lang], rng)
    if asked:  # asked for something they cannot tell
        return _with_facts(pick(bank["unknown"][lang], rng), known, lang, rng)
    if wrapped_up and waiting:
        return f"{pick(bank['not_yet'][lang], rng)} {restated}"
    if wrapped_up and unanswered:
        return f"{pick(bank['unanswered'][lang], rng)} {restated}"
    if wrapped_up:
        return pick(bank["satisfied"][lang], rng)
    if explained:
        return pick(bank["explained"][lang], rng)
    if unanswered and _states(message):  # a read-out or a wrong guess: the question again
        return f"{pick(bank['unanswered'][lang], rng)} {restated}"
    return _with_facts(pick(bank["unclear"][lang], rng).format(opening=restated), known, lang, rng)


_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def _restated(
    intent: CareIntent,
    values: Mapping[str, Any],
    restated: str,
    asked: list[str],
    known: Mapping[str, Any],
    message: str,
    lang: Language,
    rng: np.random.Generator,
    seen: str | None,
) -> str:
    """Asked what they need: the request (in the symptom tier, what they see and want), then
    the answers to the facts the message also asks for."""
    others = [topic for topic in asked if topic != "request"]
    kinds = [k for k in symptoms.QUESTION_KINDS if _TOPIC.get(k, k) in others]
    if seen is not None and kinds:
        more = _follow_up(intent, values, kinds, others, known, lang, rng)
    else:
        facts = [t for t in (*_ALWAYS_KNOWN, *_NAMED_IN_OPENING) if t in others and t in known]
        more = " ".join(_answer(t, message, lang, rng).format_map(values) for t in facts)
    return f"{restated} {more}".strip()


def _objected(
    objection: str,
    values: Mapping[str, Any],
    restated: str,
    lang: Language,
    rng: np.random.Generator,
) -> str:
    """The customer's no to a request for approval: why, and what they asked for when the
    change is not it."""
    said = pick(phrases()["objections"][objection][lang], rng).format_map(values)
    wrong_change = objection.startswith("other_") or objection == "no_change"
    return f"{said} {restated}" if wrong_change else said


def _states(message: str) -> bool:
    """Whether ``message`` has sentences and none of them asks anything."""
    sentences = split_sentences(message)
    return bool(sentences) and not any(map(asks, sentences))


def gives_answer(answer: str, message: str) -> bool:
    """Whether ``message`` states the answer to the customer's question: its amount (``267.0``
    as "267", "267.00 SAR" or "1,267.5"), else its words ("card expired", "POST-PLUS")."""
    message = message[:APPROVAL_CHARS]  # as much as a request is read
    try:
        amount = float(answer)
    except ValueError:  # an id or a stored text, in any of its forms ("Your card has expired")
        return normalize(answer) in normalize(message) or answers_match(
            message, answer, vocabulary=answer_vocabulary()
        )
    said = (float(n.replace(",", "")) for n in _NUMBER.findall(message))
    return any(abs(value - amount) < 0.005 for value in said)


def _answer(topic: str, message: str, lang: Language, rng: np.random.Generator) -> str:
    """One answer's template; the line number asked for as an internal id says it is no id."""
    if topic == "msisdn" and _INTERNAL_ID.search(normalize(message[:ROUTED_CHARS])):
        return pick(phrases()["line_not_id"][lang], rng)
    return pick(phrases()["answers"][topic][lang], rng)


def _with_facts(
    text: str, known: Mapping[str, Any], lang: Language, rng: np.random.Generator
) -> str:
    """``text`` and the list of what the customer can give (nothing to add: ``text``)."""
    names = [phrases()["facts"][topic][lang] for topic in known]
    if not names:
        return text
    joined = names[0] if len(names) == 1 else _joined(names, lang)
    return f"{text} {pick(phrases()['can_tell'][lang], rng).format(facts=joined)}"


def _joined(names: list[str], lang: Language) -> str:
    last = " و" if lang == "ar" else " and "
    return ("، " if lang == "ar" else ", ").join(names[:-1]) + last + names[-1]


def _follow_up(
    intent: CareIntent,
    values: Mapping[str, Any],
    kinds: list[str],
    asked: list[str],
    known: Mapping[str, Any],
    lang: Language,
    rng: np.random.Generator,
) -> str:
    """The symptom tier's answer to a follow-up question (when they noticed it, whether they
    travelled), then to whatever else the message asks that the customer knows. A trip is the
    customer's own fact (the one they plan, or the one they came back from), never the cause."""
    answers = phrases()["answers"]
    parts = []
    if "noticed" in kinds:
        parts.append(symptoms.noticed(intent, lang, rng, values))
    if "travel" in kinds:
        if "trip" in known or "destination" in known:
            topic = "trip" if "trip" in known else "destination"
            parts.append(pick(answers[topic][lang], rng).format_map(values))
        else:
            parts.append(symptoms.not_travelling(lang, rng))
    # "when" and "date" also ask for a trip: answered above, or not a trip question at all.
    info = [
        t
        for t in (*_ALWAYS_KNOWN, *_NAMED_IN_OPENING)
        if t in asked and t in known and t not in ("trip", "destination")
    ]
    if "approval" in asked and info:
        info.append("approval")
    parts += [pick(answers[t][lang], rng).format_map(values) for t in info]
    return " ".join(parts)
