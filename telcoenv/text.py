"""Keyword matching that holds however a counterpart's English or Arabic is written.

Both domains classify the agent's plain messages and check their phrase banks with these: text is
compared casefolded, with Arabic diacritics and tatweel removed and the alef/hamza, ى and ة
spellings folded; a keyword matches at the start of a word (an Arabic word after optional
proclitics).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_DIACRITICS = re.compile("[\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06ed\u0640]")
_FOLD = str.maketrans({"أ": "ا", "إ": "ا", "آ": "ا", "ٱ": "ا", "ى": "ي", "ة": "ه", "’": "'"})
# Arabic proclitics that may precede a keyword: conjunction, preposition, article.
_ARABIC_PREFIX = "(?:[وفبلك]{0,2}(?:ال)?)"


def normalize(text: str) -> str:
    """Casefolded text with Arabic diacritics and tatweel removed and the alef/hamza, ى and ة
    spellings folded, so that keywords match however the Arabic is spelled.

    >>> normalize("تحسّنت") == normalize("تحسنت"), normalize("What’s")
    (True, "what's")
    """
    return _DIACRITICS.sub("", text).translate(_FOLD).casefold()


def _keyword(keyword: str) -> str:
    word = normalize(keyword)
    whole = word.endswith("$")
    word = word.removesuffix("$")
    arabic = bool(word) and "\u0600" <= word[0] <= "\u06ff"
    return (
        r"(?<!\w)"
        + (_ARABIC_PREFIX if arabic else "")
        + re.escape(word)
        + (r"(?!\w)" if whole else "")
    )


def keyword_pattern(keywords: Iterable[str]) -> re.Pattern[str]:
    """One pattern for keywords matched in :func:`normalize`-d text at the start of a word (an
    Arabic word after optional proclitics); a keyword ending in ``$`` must also end a word."""
    return re.compile("|".join(_keyword(k) for k in keywords))
