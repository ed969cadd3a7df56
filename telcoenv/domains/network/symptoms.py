"""What users observe: the engineer's words in the ``symptom`` and ``noisy`` difficulty tiers.

The guided statement quotes the KPIs that give the intent away; in the harder tiers the engineer
reports only a user-visible symptom, shared by the several intents of a family (``symptoms.yaml``),
so that the distinguishing evidence is only in tool outputs. The noisy tier adds one confounder,
and the engineer answers follow-up questions (when it started, which users and services, what
changed, whether users still see it) from the episode's facts without naming the cause.

Every function is pure: the caller's seeded generator makes each choice.

>>> family_of("BLER_ANOMALY")
'slow_data'
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from functools import cache
from importlib import resources
from typing import Any

import numpy as np

from telcoenv.catalog import template_fields
from telcoenv.datafiles import parse_yaml
from telcoenv.domains.network.kpis import kpi_definitions
from telcoenv.domains.network.loading import network_catalog
from telcoenv.domains.network.models import Intent
from telcoenv.domains.network.topology import _UNRELATED_ALARMS
from telcoenv.errors import CatalogError, UnknownIntentError
from telcoenv.phrases import bilingual_variants, check_words, name_patterns, pick, placeholders
from telcoenv.specs import LANGUAGES, Language

FILE = "telcoenv/domains/network/symptoms.yaml"
#: The placeholders every phrase may use (filled by the engineer as in engineer.yaml).
FIELDS = frozenset({"place", "time_of_day", "window", "cell_id", "cluster_id"})
#: Each confounder's own placeholder, which every variant of it holds.
CONFOUNDER_FIELDS = {
    "wrong_guess": "guess",
    "unrelated_alarm": "alarm",
    "neighbour_anomaly": "neighbour_id",
}
CONFOUNDER_KINDS = tuple(CONFOUNDER_FIELDS)
#: The engineer's follow-up answers (``status_open`` / ``status_fixed`` answer a "status" question).
FOLLOW_UP_KINDS = ("started", "users", "services", "changed", "status_open", "status_fixed")
#: The kinds of follow-up question the engineer answers (routed by meaning: questions.yaml).
QUESTION_KINDS = ("status", "changed", "services", "users", "started")
MIN_FAMILY_SIZE = 3
MIN_FAMILY_VARIANTS = 6


# --- validation -------------------------------------------------------------------------------


class _Checker:
    """The names no phrase may hold, and the placeholder rule."""

    def __init__(
        self, data: Mapping[str, Any], intents: Sequence[Intent], tools: Iterable[str], file: str
    ) -> None:
        self.file = file
        names: list[tuple[str, str]] = []
        for intent in intents:
            names += [
                (intent.label.in_lang(lang), f"the label of {intent.key}") for lang in LANGUAGES
            ]
            names.append((intent.fault.alarm, f"the alarm of {intent.key}"))
        for key, info in kpi_definitions().kpis.items():
            names += [(info.name.in_lang(lang), f"the name of KPI {key}") for lang in LANGUAGES]
        names += [(alarm, "an alarm name") for alarm in _UNRELATED_ALARMS]
        for tool in tools:
            names += [(tool, "a tool name"), (tool.replace("_", " "), "a tool name")]
        for words in bilingual_variants(data["forbidden"], "forbidden", file).values():
            names += [(word, "a word that names a cause (forbidden)") for word in words]
        self.names = name_patterns(names)

    def phrase(self, text: str, allowed: Collection[str], field: str) -> None:
        placeholders(text, allowed, field, self.file)
        check_words(text, field, self.file, self.names)

    def variants(self, node: Any, allowed: Collection[str], field: str, minimum: int = 1) -> None:
        for lang, texts in bilingual_variants(node, field, self.file, minimum).items():
            for i, text in enumerate(texts):
                self.phrase(text, allowed, f"{field}.{lang}.{i}")


def check_symptoms(
    data: Mapping[str, Any],
    intents: Sequence[Intent],
    *,
    tools: Iterable[str] = (),
    file: str = FILE,
) -> None:
    """Raise a :class:`CatalogError` naming the file, the field and the problem unless ``data``
    (a parsed symptoms.yaml) fits the network ``intents``.

    Every intent is in exactly one family of at least :data:`MIN_FAMILY_SIZE`; every phrase
    exists in both languages, uses only the allowed placeholders and holds no intent label, KPI
    name, alarm name, tool name, forbidden word or digit (case-insensitive).
    """
    if not isinstance(data, Mapping):
        raise CatalogError(file, "", "expected a mapping")
    missing = {"families", "confounders", "follow_ups", "forbidden"} - set(data)
    if missing:
        raise CatalogError(file, "", f"missing section(s) {sorted(missing)}")
    checker = _Checker(data, intents, tools, file)
    families = data["families"]
    if not isinstance(families, Mapping) or not families:
        raise CatalogError(file, "families", "expected a mapping of families")
    known = {intent.key for intent in intents}
    home: dict[str, str] = {}
    for name, family in families.items():
        field = f"families.{name}"
        if not isinstance(family, Mapping) or set(family) != {"intents", *LANGUAGES}:
            raise CatalogError(file, field, f"expected the keys intents, {', '.join(LANGUAGES)}")
        members = family["intents"]
        if not isinstance(members, list) or len(members) < MIN_FAMILY_SIZE:
            raise CatalogError(
                file,
                f"{field}.intents",
                f"at least {MIN_FAMILY_SIZE} intents are needed, so that the symptom never "
                "identifies the intent",
            )
        for key in members:
            if key not in known:
                raise CatalogError(file, f"{field}.intents", f"unknown intent {key!r}")
            if key in home:
                raise CatalogError(
                    file, f"{field}.intents", f"{key} is also in family {home[key]!r}"
                )
            home[key] = name
        checker.variants(
            {lang: family[lang] for lang in LANGUAGES}, FIELDS, field, MIN_FAMILY_VARIANTS
        )
    homeless = sorted(known - set(home))
    if homeless:
        raise CatalogError(file, "families", f"intent(s) {homeless} in no family")

    confounders = data["confounders"]
    if not isinstance(confounders, Mapping) or set(confounders) != set(CONFOUNDER_KINDS):
        raise CatalogError(file, "confounders", f"expected exactly {list(CONFOUNDER_KINDS)}")
    for kind, own in CONFOUNDER_FIELDS.items():
        checker.variants(confounders[kind], FIELDS | {own}, f"confounders.{kind}")
        for lang in LANGUAGES:
            for i, text in enumerate(confounders[kind][lang]):
                if own not in template_fields(text):
                    raise CatalogError(
                        file, f"confounders.{kind}.{lang}.{i}", f"lacks the placeholder {{{own}}}"
                    )

    follow_ups = data["follow_ups"]
    if not isinstance(follow_ups, Mapping) or set(follow_ups) != set(FOLLOW_UP_KINDS):
        raise CatalogError(file, "follow_ups", f"expected exactly {list(FOLLOW_UP_KINDS)}")
    for kind in FOLLOW_UP_KINDS:
        node = follow_ups[kind]
        if isinstance(node, Mapping) and set(node) == set(LANGUAGES):
            checker.variants(node, FIELDS, f"follow_ups.{kind}")
            continue
        if not isinstance(node, Mapping) or set(node) != set(families):
            raise CatalogError(
                file,
                f"follow_ups.{kind}",
                f"expected {{{', '.join(LANGUAGES)}}} or one entry per family {sorted(families)}",
            )
        for name in families:
            checker.variants(node[name], FIELDS, f"follow_ups.{kind}.{name}")


# --- the packaged data --------------------------------------------------------------------------


@cache
def symptom_bank() -> dict[str, Any]:
    """``symptoms.yaml``, parsed and validated against the network catalogue once per process
    (treat it as read-only)."""
    data = parse_yaml(
        resources.files(__package__).joinpath("symptoms.yaml").read_text("utf-8"), "symptoms.yaml"
    )
    catalog = network_catalog()
    check_symptoms(data, catalog.intents, tools=catalog.tools)
    return data


def check_intents(intents: Sequence[Intent]) -> None:
    """Raise a :class:`CatalogError` unless the packaged symptoms fit these intents (for a
    network catalogue other than the packaged one)."""
    check_symptoms(symptom_bank(), intents, tools=network_catalog().tools)


@cache
def _families() -> dict[str, str]:
    return {key: name for name, f in symptom_bank()["families"].items() for key in f["intents"]}


@cache
def _labels() -> dict[str, Any]:
    return {intent.key: intent.label for intent in network_catalog().intents}


def _key(intent: Intent | str) -> str:
    return intent if isinstance(intent, str) else intent.key


# --- what the engineer calls ----------------------------------------------------------------------


def family_of(intent: Intent | str) -> str:
    """The symptom family of an intent (or intent key)."""
    key = _key(intent)
    try:
        return _families()[key]
    except KeyError:
        raise UnknownIntentError(f"intent {key!r} is in no symptom family") from None


def family_members(family: str) -> tuple[str, ...]:
    """The intent keys of a symptom family, in file order."""
    return tuple(symptom_bank()["families"][family]["intents"])


def symptom_statement_part(
    intent: Intent | str, lang: Language, rng: np.random.Generator, fields: Mapping[str, Any]
) -> str:
    """One user-visible symptom of the intent's family in ``lang``, formatted with ``fields``
    (``place``, ``time_of_day``, ``window``, ``cell_id``, ``cluster_id``)."""
    variants = symptom_bank()["families"][family_of(intent)][lang]
    return pick(variants, rng).format_map(fields)


def choose_confounder(
    intent: Intent | str,
    lang: Language,
    rng: np.random.Generator,
    kinds: Sequence[str] = CONFOUNDER_KINDS,
) -> tuple[str, dict[str, str]]:
    """The noisy tier's confounder kind, chosen by ``rng`` among ``kinds``, and the fields only
    this module can fill: for ``wrong_guess``, ``guess`` is the ``lang`` label of another intent
    of the same family (chosen by ``rng``). The engineer adds ``alarm`` (an unrelated alarm of
    the episode) or ``neighbour_id`` (the mildly degraded neighbour) for the other kinds."""
    unknown = [k for k in kinds if k not in CONFOUNDER_FIELDS]
    if unknown or not kinds:
        raise ValueError(f"confounder kinds {list(kinds)}; known: {list(CONFOUNDER_KINDS)}")
    kind = pick(kinds, rng)
    if kind != "wrong_guess":
        return kind, {}
    key = _key(intent)
    others = [k for k in family_members(family_of(key)) if k != key]
    return kind, {"guess": _labels()[pick(others, rng)].in_lang(lang)}


def confounder(
    kind: str, lang: Language, rng: np.random.Generator, fields: Mapping[str, Any]
) -> str:
    """One variant of a confounder in ``lang``, formatted with ``fields`` (the usual ones plus
    the kind's own: ``guess``, ``alarm`` or ``neighbour_id``)."""
    return pick(symptom_bank()["confounders"][kind][lang], rng).format_map(fields)


def follow_up_reply(
    kind: str,
    intent: Intent | str,
    lang: Language,
    rng: np.random.Generator,
    fields: Mapping[str, Any],
    *,
    recovered: bool = False,
) -> str:
    """The engineer's answer to a follow-up question of ``kind`` (one of
    :data:`FOLLOW_UP_KINDS`, or ``status``: ``status_fixed`` when ``recovered`` else
    ``status_open``), for the intent's family, in ``lang``, formatted with ``fields``."""
    if kind == "status":
        kind = "status_fixed" if recovered else "status_open"
    if kind not in FOLLOW_UP_KINDS:
        raise ValueError(f"unknown follow-up kind {kind!r}; known: {list(FOLLOW_UP_KINDS)}")
    node = symptom_bank()["follow_ups"][kind]
    if set(node) != set(LANGUAGES):
        node = node[family_of(intent)]
    return pick(node[lang], rng).format_map(fields)
