"""Exact-match answer accuracy with GAIA-style normalisation (no LLM judge).

An answer is compared with the gold answer after normalisation, as in the GAIA scorer that
Telco-GAIA uses: when the gold answer is a number, the submitted text must be the same number
once currency symbols and units, thousands separators, Arabic-Indic digits and surrounding text
are removed (compared to the cent: ``"SAR 1,234.5"`` equals ``"1234.50"``); otherwise both texts
are compared lower-cased, with punctuation and runs of whitespace removed (``"Card expired."``
equals ``"card  expired"``).

>>> answers_match("SAR 1,234.5", "1234.50"), answers_match("ر.س ١٢٣٫٤", "123.4")
(True, True)
>>> answers_match("Card expired.", "card expired"), answers_match("POST-PLUS", "post plus")
(True, True)
>>> answers_match("117", "117.2"), answers_match("about 2 or 3", "2")
(False, False)
>>> answers_match("The extra charge is 343.80 SAR.", "343.8")
True

A number is one that stands alone: digits inside a word (an id such as ``INV1234``) are none,
while a date (``2026-11``) or a range is more than one, and a text that states more than one
number matches no number.
"""

from __future__ import annotations

import re
import string

_ARABIC_DIGITS = str.maketrans("٠١٢٣٤٥٦٧٨٩۰۱۲۳۴۵۶۷۸۹٫٬", "01234567890123456789.,")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)")
# Digits that stand alone (not in a word such as an id); a date or a range counts as several.
_STANDALONE = re.compile(r"(?<![\w.])" + _NUMBER.pattern + r"(?![\w])")
_UNITS = re.compile(
    r"(sar|sr|riyals?|ريال|ر\.س|\$|€|£|usd|eur|gb|gib|جيجابايت|جيجا|%)", re.IGNORECASE
)
_PUNCTUATION = re.compile(f"[{re.escape(string.punctuation)}،؛؟«»]")


def _as_number(text: str) -> float | None:
    """The one number a text states, its words, units and currency removed (None: no number,
    or more than one)."""
    cleaned = _UNITS.sub(" ", text.translate(_ARABIC_DIGITS))
    cleaned = re.sub(r"(?<=\d),(?=\d{3})", "", cleaned)  # thousands separators
    numbers = [number.rstrip(".") for number in _STANDALONE.findall(cleaned)]
    if len(numbers) != 1:
        return None
    return float(numbers[0])


def normalize_text(text: str) -> str:
    """Lower case, punctuation removed, whitespace runs collapsed."""
    return " ".join(_PUNCTUATION.sub(" ", text.lower()).split())


def answers_match(submitted: str, gold: str) -> bool:
    """Whether ``submitted`` states the gold answer (see the module docstring)."""
    gold_number = _as_number(gold)
    if gold_number is not None:
        number = _as_number(submitted)
        return number is not None and round(number, 2) == round(gold_number, 2)
    return normalize_text(submitted) == normalize_text(gold)
