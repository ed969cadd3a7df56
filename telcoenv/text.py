"""Keyword matching that holds however a counterpart's English or Arabic is written.

Both domains classify the agent's plain messages and check their phrase banks with these: text is
compared casefolded, with Arabic diacritics and tatweel removed and the alef/hamza, ى and ة
spellings folded; a keyword matches at the start of a word (an Arabic word after optional
proclitics).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from typing import Literal

_DIACRITICS = re.compile("[\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06ed\u0640]")
_FOLD = str.maketrans({"أ": "ا", "إ": "ا", "آ": "ا", "ٱ": "ا", "ى": "ي", "ة": "ه", "’": "'"})
#: A number written in a text (not inside a word or an id): ``12``, ``139.46``.
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?")
#: Arabic-Indic and Persian digits, the Arabic decimal and thousands separators, as ASCII.
ARABIC_DIGITS = str.maketrans("٠١٢٣٤٥٦٧٨٩۰۱۲۳۴۵۶۷۸۹٫٬", "01234567890123456789.,")
# Arabic proclitics that may precede a keyword: conjunction, preposition, article.
_ARABIC_PREFIX = "(?:[وفبلك]{0,2}(?:ال)?)"


def language_of(text: str) -> Literal["en", "ar"]:
    """``"ar"`` when the text has an Arabic letter, else ``"en"``.

    >>> language_of("فاتورة 2026-09"), language_of("my bill")
    ('ar', 'en')
    """
    return "ar" if any("\u0600" <= ch <= "\u06ff" for ch in text) else "en"


def normalize(text: str) -> str:
    """Casefolded text with Arabic diacritics and tatweel removed and the alef/hamza, ى and ة
    spellings folded, so that keywords match however the Arabic is spelled.

    >>> normalize("تحسّنت") == normalize("تحسنت"), normalize("What’s")
    (True, "what's")
    """
    return _DIACRITICS.sub("", text).translate(_FOLD).casefold()


def without_marks(text: str) -> str:
    """The text with Arabic diacritics and tatweel removed (nothing else changed).

    >>> without_marks("عُنوانُ بَريدِكَ")
    'عنوان بريدك'
    """
    return _DIACRITICS.sub("", text)


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


# --- requests for approval ------------------------------------------------------------------------

# A request: a question or ask whose answer is a yes or no for the speaker to act.
_REQUEST = keyword_pattern(
    [
        # Whole words at the end ($): "could i" must not match "could indicate".
        *(
            f"{phrase}$"
            for phrase in (
                *("may i", "can i", "could i", "shall i", "should i", "may we", "can we"),
                *("shall we", "should we", "ok to", "okay to", "ok if", "okay if", "alright to"),
                *("all right to", "is it ok", "is that ok", "is this ok", "is it okay"),
                *("is that okay", "is this okay", "do you want me", "would you like me"),
                *("do you agree", "do you approve", "would you approve", "please approve"),
                *("your approval", "your permission", "your go-ahead", "your go ahead"),
                *("your ok", "need approval", "request approval", "requesting approval"),
                *("approval to", "approval for", "permission to", "i'd like to"),
                "i would like to",
            )
        ),
        *("approve?", "approve it?", "go ahead?"),
        *("هل يمكنني", "هل يمكننا", "هل استطيع", "هل تسمح", "هل تسمحون", "هل توافق"),
        *("هل توافقون", "هل تريد", "هل تريدين", "هل تود", "هل ترغب", "هل اتابع", "هل نتابع"),
        *("هل اطبق", "هل انفذ", "هل اضيف", "هل الغي", "هل اغير", "هل اعدل", "موافقتك"),
        *("موافقتكم", "اذنك", "اطلب الموافقه", "يرجي الموافقه", "الرجاء الموافقه", "اود ان"),
        "ارغب في",
    ]
)
# What a change is called: the verb or noun the request must name.
_CHANGE = keyword_pattern(
    [
        *("apply", "change", "push", "set ", "modify", "adjust", "update", "reconfigur"),
        *("optimi", "re-tilt", "retilt", "tilt", "roll back", "rollback", "restore", "revert"),
        # "add$": "additional charges" names no change.
        *("proceed", "go ahead", "implement", "execute", "fix", "add$", "subscribe", "cancel"),
        *("remove", "switch", "move", "credit", "refund", "activate", "open a ticket"),
        *("raise", "create a ticket", "book", "lower", "increase", "decrease", "reduce"),
        *("enable", "disable", "turn on", "turn off", "re-enable", "reset", "reboot", "restart"),
        *("tweak", "correct", "realign", "re-align", "re-aim", "rotate", "shift", "reassign"),
        *("release", "free up", "lift", "bump", "retune", "re-tune", "tune"),
        # A ticket or a dispute opened ("open a billing dispute", "file a complaint").
        *("open a", "file a", "lodge a", "افتح", "نفتح", "فتح", "اعتراض"),
        # A payment taken or a card replaced ("may I explain the charge?" is no change).
        *("retry", "take a payment", "take the payment", "collect", "charge your", "replace"),
        *("pay the", "pay your", "سداد", "تحصيل", "خصم المبلغ", "استبدال"),
        *("تطبيق", "اطبق", "نطبق", "تعديل", "اعدل", "تغيير", "اغير", "تنفيذ", "انفذ", "المتابعه"),
        *("اتابع", "نتابع", "اصلاح", "ضبط", "اضبط", "اعاده", "استعاده", "اضافه", "اضيف"),
        *("اشترك", "اشتراك", "الغاء", "الغي", "نقل", "تحديث", "احدث", "تفعيل", "افعل"),
        *("استرداد", "تذكره", "رصيد", "خفض", "اخفض", "رفع", "ارفع", "زياده", "ازيد", "تقليل"),
        *("اقلل", "تمكين", "تعطيل", "تشغيل", "ايقاف", "تصحيح", "اصحح", "محاذاه", "تحرير"),
    ]
)
# A negation just before the change ("don't apply", "no need to change", "لا تطبق").
_NEGATED = re.compile(
    r"(?:\bnot|n't|\bno need to|\bnever|\bwithout|(?<!\w)لا|(?<!\w)لن|(?<!\w)لم|(?<!\w)دون|بدون)"
    r"\s+(?:\S+\s+){0,2}$"
)
#: How much of a message is read (a real request fits many times over).
APPROVAL_CHARS = 4_000


def asks_for_approval(message: str) -> bool:
    """Whether a plain message asks the counterpart to approve a change: a request or question
    (``may I``, ``is that OK``, ``do you want me to``, ``هل يمكنني``, ``موافقتك``...) that names a
    change (``apply``, ``push``, ``cancel``, ``تطبيق``, ``إلغاء``...) not negated just before it.
    A statement ("the fault has been confirmed", "I applied it") or a negation ("don't apply
    anything yet") is not a request.

    >>> asks_for_approval("May I apply this change?"), asks_for_approval("It has been confirmed.")
    (True, False)
    >>> asks_for_approval("هل يمكنني تطبيق التعديل؟"), asks_for_approval("لا أريد تطبيق أي تغيير")
    (True, False)
    """
    text = normalize(message[:APPROVAL_CHARS])
    if not _REQUEST.search(text):
        return False
    return any(
        not _NEGATED.search(text[max(0, found.start() - 40) : found.start()])
        for found in _CHANGE.finditer(text)
    )


# --- a tool handed over to the counterpart ------------------------------------------------------

# "please call ... <tool>", "you should run ... <tool>", "please provide the output of the
# <tool> function call", "please correct the arguments in the <tool> function call", "يرجى
# استدعاء ... <tool>": a request to the counterpart (not "I will call <tool>", the agent's own
# plan) naming a tool. A 1.5B model asked the engineer to run its
# tools for 8 steps of one episode; the engineer has none.
_ASKS_TO_RUN = (
    r"(?:\bplease\s+|\byou\s+(?:can|could|should|need\s+to|must|may)\s+|"
    r"\bcan\s+you\s+|\bcould\s+you\s+|(?:يرجى|الرجاء|رجاءً|من\s+فضلك)\s+|^\s*)"
    r"(?:call|run|use|invoke|execute|(?:provide|share|give\s+me|send\s+me|show\s+me)"
    r"\s+(?:me\s+)?(?:with\s+)?the\s+(?:output|result|results|response)\s+of|"
    r"(?:correct|fix|adjust|change)\s+the\s+(?:arguments?|parameters?)\s+(?:in|of|for)|"
    r"استدع\w*|شغ\w*|استخدم\w*)"
)
_HANDED_OVER = re.compile(
    _ASKS_TO_RUN + r"\b[^.\n]{0,40}?\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b", re.MULTILINE
)
# The same request for a tool it does not name: "please call the tool with the following
# arguments: {...}" (9 of 18 replies of one episode of run s11a, each answered as a question
# about the time window).
_HANDED_OVER_UNNAMED = re.compile(
    _ASKS_TO_RUN + r"\s+(?:the|this|that|these|a)\s+(?:following\s+)?(?:tools?|functions?|api)\b"
    r"|" + _ASKS_TO_RUN + r"\s+(?:ال)?(?:أداة|أدوات|دالة)",
    re.MULTILINE,
)


def handed_over_tool(message: str, tool_names: Collection[str]) -> str | None:
    """The agent's tool that ``message`` asks the counterpart to call or to give the output of
    ("Please call the tool `kpi_timeseries` ...", "Please provide the output of the
    `neighbor_audit` function call"), ``""`` for a tool it does not name ("please call the
    tool with the following arguments"), or ``None``; the agent's own plan ("I will call
    kpi_timeseries") hands nothing over. Read up to :data:`APPROVAL_CHARS`, as a request is.

    >>> handed_over_tool("Please run `kpi_timeseries` for the cell.", {"kpi_timeseries"})
    'kpi_timeseries'
    >>> handed_over_tool("I will call kpi_timeseries now.", {"kpi_timeseries"}) is None
    True
    >>> handed_over_tool("Please call the tool with these arguments: {}", {"kpi_timeseries"})
    ''
    """
    text = message[:APPROVAL_CHARS].casefold()
    for match in _HANDED_OVER.finditer(text):
        if match.group(1) in tool_names:
            return match.group(1)
    return "" if _HANDED_OVER_UNNAMED.search(text) else None
