"""The simulated customer: bilingual, template-based, deterministic (seeded generator).

The customer opens the conversation with their intent's ``customer`` message (intents.yaml)
and never volunteers their line number. Asked in a plain message, they supply what they know
and the agent cannot look up: the line number, the trip (destination and date), the budget, the
extra data needed, the new email address, and the month or plan named in their opening. They
never reveal an answer the agent has to find (a recommended plan, an amount). Asked for a
change, they consent. Phrases and the keywords that recognise a question live in
``customer.yaml``; only the first ``CLASSIFIED_CHARS`` characters of a message are read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from typing import Any

import numpy as np
import yaml

from telcoenv.catalog import template_fields
from telcoenv.domains.bss.models import CareIntent
from telcoenv.specs import Language

# What the customer knows (when the episode has it), in the order a reply gives it.
_ALWAYS_KNOWN = ("msisdn", "trip", "destination", "budget", "need_gb", "email")
# Known only when the opening names it (the plan to recommend is the agent's job to find).
_NAMED_IN_OPENING = ("period", "plan_id")
#: How much of a plain message is read for its topics: a real question fits many times over,
#: and a megabyte of agent output costs no more than a sentence.
CLASSIFIED_CHARS = 4_000


@cache
def phrases() -> dict[str, Any]:
    """The phrase bank (``customer.yaml``), parsed once per process."""
    text = resources.files(__package__).joinpath("customer.yaml").read_text("utf-8")
    return yaml.safe_load(text)


def _pick(options: Sequence[str], rng: np.random.Generator) -> str:
    return options[int(rng.integers(len(options)))]


def knowledge(intent: CareIntent, values: Mapping[str, Any]) -> dict[str, Any]:
    """The facts the customer can give in this episode (topic -> template values)."""
    known: dict[str, Any] = {}
    for topic in _ALWAYS_KNOWN:
        if topic == "trip":
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
    greeting = _pick(phrases()["greetings"][lang], rng)
    return f"{greeting} {intent.customer.in_lang(lang).format_map(_in_lang(values, lang))}"


def _in_lang(values: Mapping[str, Any], lang: Language) -> Mapping[str, Any]:
    """The values as the customer says them (an Arabic speaker names the country in Arabic)."""
    destination = values.get("destination")
    if lang == "ar" and destination:
        return {**values, "destination": phrases()["destinations_ar"][destination]}
    return values


def asked_topics(message: str) -> list[str]:
    """The topics a plain message asks about (``approval`` included), by keyword.

    Only the first :data:`CLASSIFIED_CHARS` characters are read, so a message of any size is
    answered in constant time (a keyword after them does not count).
    """
    # Padded so that keywords with a leading or trailing space match at the edges too. Plain
    # substring tests: on a few thousand characters they beat one alternation regex per topic.
    text = f" {message[:CLASSIFIED_CHARS].lower()} "
    return [
        topic
        for topic, keywords in phrases()["topics"].items()
        if any(keyword in text for keyword in keywords)
    ]


def reply(
    intent: CareIntent,
    values: Mapping[str, Any],
    message: str,
    lang: Language,
    rng: np.random.Generator,
    *,
    ended: bool,
) -> str:
    """The customer's answer to a plain message from the agent."""
    bank = phrases()
    values = _in_lang(values, lang)
    if ended:
        return _pick(bank["closing"][lang], rng)
    asked = asked_topics(message)
    known = knowledge(intent, values)
    if "trip" in asked and "destination" in known:  # a past trip: where they were
        asked.append("destination")
    info = [t for t in (*_ALWAYS_KNOWN, *_NAMED_IN_OPENING) if t in asked and t in known]
    if "approval" in asked and info:
        info.append("approval")
    if info:
        return " ".join(_pick(bank["answers"][t][lang], rng).format_map(values) for t in info)
    if any(topic != "approval" for topic in asked):  # asked for something they cannot tell
        return _pick(bank["unknown"][lang], rng)
    if asked:
        return _pick(bank["answers"]["approval"][lang], rng)
    restated = intent.customer.in_lang(lang).format_map(values)
    return _pick(bank["unclear"][lang], rng).format(opening=restated)
