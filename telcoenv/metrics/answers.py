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
"""

from __future__ import annotations

import re
import string

_ARABIC_DIGITS = str.maketrans("٠١٢٣٤٥٦٧٨٩۰۱۲۳۴۵۶۷۸۹٫٬", "01234567890123456789.,")
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)$")
_UNITS = re.compile(
    r"(sar|sr|riyals?|ريال|ر\.س|\$|€|£|usd|eur|gb|gib|جيجابايت|جيجا|%)", re.IGNORECASE
)
_PUNCTUATION = re.compile(f"[{re.escape(string.punctuation)}،؛؟«»]")


def _as_number(text: str) -> float | None:
    """The number a text states, or None (more than one number, or none)."""
    cleaned = _UNITS.sub(" ", text.translate(_ARABIC_DIGITS)).replace(",", "")
    cleaned = cleaned.strip().rstrip(".").strip()
    return float(cleaned) if _NUMBER.match(cleaned) else None


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
