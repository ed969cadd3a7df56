"""What the customer sees: the customer's words in the ``symptom`` difficulty tier of customer care.

The guided opening (intents.yaml ``customer``) may name the cause or the fact the agent must find
("I was charged twice", "the payment failed", "cancel the add-on", a plan, an address). In the
symptom tier the customer opens with words shared by every intent of a family of three or more
(``symptoms.yaml``: the bill, the data the account uses, a change on the account), and says
what they see and want (their family's ``asks``, still never the cause) when the agent asks what
they need; the cause is found in the account data. The planted data, the gold chain, the exact
answer and the verification stay those of the guided tier. The customer answers follow-up
questions (when they noticed, whether they travelled) from what a customer knows of their own
account, never naming the cause.

Every function is pure: the caller's seeded generator makes each choice.

>>> family_of("DUPLICATE_CHARGE")
'bill'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from typing import Any

import numpy as np

from telcoenv.catalog import template_fields
from telcoenv.datafiles import parse_yaml
from telcoenv.domains.bss.blueprints import care_catalog
from telcoenv.domains.bss.models import CareIntent
from telcoenv.errors import CatalogError, UnknownIntentError
from telcoenv.phrases import bilingual_variants, check_words, name_patterns, pick, placeholders
from telcoenv.specs import LANGUAGES, Language

FILE = "telcoenv/domains/bss/symptoms.yaml"
#: The placeholders a phrase may use: the customer's own month and line, where the guided
#: opening of every intent the phrase is said for names them.
FIELDS = frozenset({"period", "msisdn"})
SECTIONS = ("families", "follow_ups", "forbidden", "forbidden_in_openings")
#: The kinds of follow-up question this tier answers, in the order a reply gives them.
QUESTION_KINDS = ("noticed", "travel")
MIN_FAMILY_VARIANTS = 4
MIN_FAMILY_SIZE = 3  # intents of a family: the opening is right for at most a third
MIN_VARIANTS = 2  # of a member's ask and of a follow-up answer


# --- validation -------------------------------------------------------------------------------


class _Checker:
    """The names no phrase may hold, and the placeholder rule."""

    def __init__(self, data: Mapping[str, Any], intents: Sequence[CareIntent], file: str) -> None:
        self.file = file
        self.openings: dict[str, set[str]] = {}
        names: list[tuple[str, str]] = []
        for intent in intents:
            self.openings[intent.key] = template_fields(intent.customer.en) | template_fields(
                intent.customer.ar
            )
            names += [
                (intent.label.in_lang(lang), f"the label of {intent.key}") for lang in LANGUAGES
            ]
        always = [
            (w, "a word that names a cause (forbidden)") for w in self._words(data, "forbidden")
        ]
        unasked = [
            (w, "a word an opening may not hold (forbidden_in_openings)")
            for w in self._words(data, "forbidden_in_openings")
        ]
        self.names = name_patterns(names + always)
        self.opening_names = self.names + name_patterns(unasked)

    def _words(self, data: Mapping[str, Any], section: str) -> list[str]:
        variants = bilingual_variants(data[section], section, self.file)
        return [w for words in variants.values() for w in words]

    def phrase(self, text: str, said_for: Sequence[str], field: str, *, opening: bool) -> None:
        """``text`` may be said by the customer of every intent of ``said_for``."""
        fields = placeholders(text, FIELDS, field, self.file)
        for key in said_for:
            unnamed = fields - self.openings[key]
            if unnamed:
                raise CatalogError(
                    self.file,
                    field,
                    f"placeholder(s) {sorted(unnamed)} not in the guided opening of {key}: "
                    "its customer does not say it",
                )
        check_words(text, field, self.file, self.opening_names if opening else self.names)

    def variants(
        self, node: Any, said_for: Sequence[str], field: str, minimum: int, *, opening: bool
    ) -> None:
        for lang, texts in bilingual_variants(node, field, self.file, minimum).items():
            for i, text in enumerate(texts):
                self.phrase(text, said_for, f"{field}.{lang}.{i}", opening=opening)


def _check_family(
    name: str, family: Any, checker: _Checker, known: set[str], home: dict[str, str], file: str
) -> None:
    field = f"families.{name}"
    if not isinstance(family, Mapping) or not {"intents", *LANGUAGES} <= set(family):
        raise CatalogError(file, field, f"expected the keys intents, {', '.join(LANGUAGES)}")
    extra = set(family) - {"intents", *LANGUAGES, "asks"}
    if extra:
        raise CatalogError(file, field, f"unknown key(s) {sorted(extra)}")
    members = family["intents"]
    if not isinstance(members, list) or not members:
        raise CatalogError(file, f"{field}.intents", "expected a list of intent keys")
    for key in members:
        if key not in known:
            raise CatalogError(file, f"{field}.intents", f"unknown care intent {key!r}")
        if key in home:
            raise CatalogError(file, f"{field}.intents", f"{key} is also in family {home[key]!r}")
        home[key] = name
    if len(members) < MIN_FAMILY_SIZE:
        raise CatalogError(
            file,
            f"{field}.intents",
            f"a family has {MIN_FAMILY_SIZE} intents or more: with fewer, its opening names "
            "the intent",
        )
    if "asks" not in family:
        raise CatalogError(file, f"{field}.asks", "expected what each member asks for")
    checker.variants(
        {lang: family[lang] for lang in LANGUAGES},
        members,
        field,
        MIN_FAMILY_VARIANTS,
        opening=True,
    )
    asks = family["asks"]
    if not isinstance(asks, Mapping) or set(asks) != set(members):
        raise CatalogError(
            file, f"{field}.asks", f"expected one entry per member {sorted(members)}"
        )
    for key in members:
        checker.variants(asks[key], [key], f"{field}.asks.{key}", MIN_VARIANTS, opening=True)


def check_symptoms(
    data: Mapping[str, Any], intents: Sequence[CareIntent], *, file: str = FILE
) -> None:
    """Raise a :class:`CatalogError` naming the file, the field and the problem unless ``data``
    (a parsed symptoms.yaml) fits the care ``intents``.

    Every intent is in exactly one family of three or more, whose ``asks`` has one per member;
    every phrase exists in both languages, uses only the
    allowed placeholders that the guided opening of each intent it is said for names, and holds
    no care intent label, forbidden word or digit (nor, in an opening, a word of
    ``forbidden_in_openings``), case-insensitively.
    """
    if not isinstance(data, Mapping):
        raise CatalogError(file, "", "expected a mapping")
    missing = set(SECTIONS) - set(data)
    if missing:
        raise CatalogError(file, "", f"missing section(s) {sorted(missing)}")
    checker = _Checker(data, intents, file)
    families = data["families"]
    if not isinstance(families, Mapping) or not families:
        raise CatalogError(file, "families", "expected a mapping of families")
    known = {intent.key for intent in intents}
    home: dict[str, str] = {}
    for name, family in families.items():
        _check_family(name, family, checker, known, home, file)
    homeless = sorted(known - set(home))
    if homeless:
        raise CatalogError(file, "families", f"intent(s) {homeless} in no family")

    follow_ups = data["follow_ups"]
    if not isinstance(follow_ups, Mapping) or set(follow_ups) != {"noticed", "not_travelling"}:
        raise CatalogError(file, "follow_ups", "expected exactly ['noticed', 'not_travelling']")
    noticed = follow_ups["noticed"]
    if not isinstance(noticed, Mapping) or set(noticed) != set(families):
        raise CatalogError(
            file, "follow_ups.noticed", f"expected one entry per family {sorted(families)}"
        )
    for name, family in families.items():
        checker.variants(
            noticed[name],
            family["intents"],
            f"follow_ups.noticed.{name}",
            MIN_VARIANTS,
            opening=False,
        )
    checker.variants(
        follow_ups["not_travelling"],
        list(checker.openings),  # said by any customer: no placeholder
        "follow_ups.not_travelling",
        MIN_VARIANTS,
        opening=False,
    )


# --- the packaged data --------------------------------------------------------------------------


@cache
def symptom_bank() -> dict[str, Any]:
    """``symptoms.yaml``, parsed and validated against the packaged care intents once per
    process (treat it as read-only)."""
    text = resources.files(__package__).joinpath("symptoms.yaml").read_text("utf-8")
    data = parse_yaml(text, "symptoms.yaml")
    check_symptoms(data, care_catalog().intents)
    return data


def check_intents(intents: Sequence[CareIntent]) -> None:
    """Raise a :class:`CatalogError` unless the packaged symptoms fit these intents (for a care
    catalogue other than the packaged one)."""
    check_symptoms(symptom_bank(), intents)


@cache
def _families() -> dict[str, str]:
    return {key: name for name, f in symptom_bank()["families"].items() for key in f["intents"]}


def _key(intent: CareIntent | str) -> str:
    return intent if isinstance(intent, str) else intent.key


# --- what the customer says -----------------------------------------------------------------------


def family_of(intent: CareIntent | str) -> str:
    """The symptom family of a care intent (or intent key)."""
    key = _key(intent)
    try:
        return _families()[key]
    except KeyError:
        raise UnknownIntentError(
            f"care intent {key!r} is in no symptom family of {FILE}: add it to one to play "
            "the symptom tier"
        ) from None


def family_members(family: str) -> tuple[str, ...]:
    """The intent keys of a symptom family, in file order."""
    return tuple(symptom_bank()["families"][family]["intents"])


def opening(
    intent: CareIntent | str, lang: Language, rng: np.random.Generator, values: Mapping[str, Any]
) -> tuple[str, str]:
    """What the customer says in ``lang``, formatted with ``values`` (``period``, ``msisdn``):
    a phrase of the intent's family (the opening, which names the family only) and the
    intent's own request (what they see and want, said when asked what they need)."""
    key = _key(intent)
    family = symptom_bank()["families"][family_of(key)]
    phrase = pick(family[lang], rng).format_map(values)
    return phrase, pick(family["asks"][key][lang], rng).format_map(values)


def noticed(
    intent: CareIntent | str, lang: Language, rng: np.random.Generator, values: Mapping[str, Any]
) -> str:
    """When the customer noticed it: an answer of the intent's family, formatted with ``values``."""
    pool = symptom_bank()["follow_ups"]["noticed"][family_of(intent)][lang]
    return pick(pool, rng).format_map(values)


def not_travelling(lang: Language, rng: np.random.Generator) -> str:
    """A customer without a trip, asked whether they travelled."""
    return pick(symptom_bank()["follow_ups"]["not_travelling"][lang], rng)
