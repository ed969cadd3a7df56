"""Bilingual phrase banks (what the engineer and the customer say): a variant chosen by the
episode's generator, and the checks a bank's phrases pass when its file is loaded.

>>> import numpy as np
>>> pick(["a", "b", "c"], np.random.default_rng(0))
'c'
>>> bilingual_variants({"en": ["Hi"], "ar": ["مرحباً"]}, "greeting", "bank.yaml")
{'en': ['Hi'], 'ar': ['مرحباً']}
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from telcoenv import splits
from telcoenv.catalog import template_fields
from telcoenv.errors import CatalogError
from telcoenv.specs import LANGUAGES
from telcoenv.text import keyword_pattern, normalize

#: A name no phrase may hold: its pattern, the name, and why it is refused.
NamePattern = tuple[re.Pattern[str], str, str]

T = TypeVar("T")
_PLACEHOLDER = re.compile(r"\{[^{}]*\}")
_DIGIT = re.compile(r"\d")


def pick(options: Sequence[T], rng: np.random.Generator) -> T:
    """One of ``options``, chosen by the episode's seeded generator (one draw), among the
    current split's entries (:func:`telcoenv.splits.split_options`; all of them outside a
    split environment)."""
    options = splits.split_options(options, splits.current())
    return options[int(rng.integers(len(options)))]


def bilingual_variants(node: Any, field: str, file: str, minimum: int = 1) -> dict[str, list[str]]:
    """``node`` as ``{language: variants}``, or a :class:`CatalogError` naming ``field``: every
    language, each with at least ``minimum`` distinct, non-empty strings."""
    if not isinstance(node, Mapping) or set(node) != set(LANGUAGES):
        raise CatalogError(file, field, f"expected exactly the languages {list(LANGUAGES)}")
    for lang in LANGUAGES:
        variants = node[lang]
        if not isinstance(variants, list) or not all(isinstance(v, str) for v in variants):
            raise CatalogError(file, f"{field}.{lang}", "expected a list of strings")
        if len(variants) < minimum:
            raise CatalogError(
                file, f"{field}.{lang}", f"{len(variants)} variant(s); at least {minimum} needed"
            )
        if len(set(variants)) != len(variants):
            raise CatalogError(file, f"{field}.{lang}", "a variant is repeated")
        if not all(normalize(v).removesuffix("$").strip() for v in variants):
            raise CatalogError(file, f"{field}.{lang}", "an empty string")
    return dict(node)


def name_patterns(names: Iterable[tuple[str | None, str]]) -> list[NamePattern]:
    """The patterns of ``(name, why it is refused)`` pairs; empty names are skipped."""
    return [(keyword_pattern([name]), name, why) for name, why in names if name and name.strip()]


def placeholders(text: str, allowed: Collection[str], field: str, file: str) -> set[str]:
    """The placeholders of the template ``text``, or a :class:`CatalogError` when it is
    malformed or uses one outside ``allowed``."""
    try:
        fields = template_fields(text)
    except ValueError as exc:
        raise CatalogError(file, field, f"malformed template {text!r}: {exc}") from exc
    if fields - set(allowed):
        raise CatalogError(
            file,
            field,
            f"placeholder(s) {sorted(fields - set(allowed))} not allowed; "
            f"allowed: {sorted(allowed)}",
        )
    return fields


def check_words(text: str, field: str, file: str, names: Sequence[NamePattern]) -> None:
    """A :class:`CatalogError` when ``text``, its placeholders left out, holds a digit (a phrase
    may not carry a value of its own) or one of ``names`` (case-insensitive)."""
    plain = normalize(_PLACEHOLDER.sub(" ", text))
    if _DIGIT.search(plain):
        raise CatalogError(file, field, f"{text!r} holds a number")
    for pattern, name, why in names:
        if pattern.search(plain):
            raise CatalogError(file, field, f"{text!r} holds {name!r}, {why}")
