"""Answer accuracy without an LLM judge: whether the submitted text states the gold answer.

What is judged is what the text says, not its form. The gold answer is an id, a number or a
text, and each has its rule. The forms an answer may take beyond its own spelling (a plan's
display names, the phrasings of a payment failure reason) are data: an
:class:`AnswerVocabulary`, which a domain builds from its data files (the BSS domain's
``answer_vocabulary``) and which groups the possible answers by kind.

**An id** (letters and digits joined by ``-`` or ``_``, or letters then digits: ``YOUTH-25``,
``POST-ESSENTIAL``, ``ADD-RM-GCC``, ``INV000123``) is never read as a number. The text must
name it as a whole token (any case, a space for the ``-`` or ``_``) or by one of its names in
the vocabulary, in English or Arabic, and name no other answer of its kind (another plan's id
or name: a list of candidates) nor another id of its shape that the vocabulary does not know (a
near miss such as ``POST-25``). Naming it again (its id and its name) is still one answer. The
numbers of a name (the 25 of "Youth 25", the price next to it) do not count.

**A number**: the text must state one number once units, currency, thousands separators,
Arabic-Indic digits and the other words are removed, compared to the cent (``"SAR 1,234.5"``
equals ``"1234.50"``). Digits inside a word or an id (``INV1234``, ``YOUTH-25``) are none; a
date (``2026-11``) or a range is several numbers, and a text that states two different numbers
matches no number.

**A text** (a payment failure reason) that the vocabulary knows: the text must state one of the
answer's forms and no form of another answer of its kind ("card expired or insufficient funds"
is refused). A form is words in order, in one clause, with at most the kind's ``words_apart``
other words between them, none of them a negation, nor one of the two words before the form
("not", "never", "لم", "ليست"...); ``word*`` is any word that starts with ``word``, and an Arabic
word may carry its proclitics (``بباقة`` is ``باقة``). A text the vocabulary does not know must
equal the gold answer lower-cased, with punctuation and runs of whitespace removed.

>>> plans = AnswerKind("plan", (
...     Answer("YOUTH-25", en=("Youth 25",), ar=("باقة الشباب ٢٥",)),
...     Answer("POST-ESSENTIAL", en=("Postpaid Essential",), ar=("باقة الفاتورة الأساسية",)),
... ))
>>> reasons = AnswerKind("failure_reason", (
...     Answer("card expired", en=("expired", "card* expiry"), ar=("انته* صلاحي*",)),
...     Answer("insufficient funds", en=("insufficient fund*",), ar=("رصيد* غير كاف*",)),
... ), words_apart=3)
>>> care = AnswerVocabulary((plans, reasons))

Ids, in English and Arabic:

>>> [answers_match(text, "YOUTH-25", vocabulary=care) for text in (
...     "youth 25", "I recommend Youth 25 (79 SAR a month)", "أنصحك بباقة الشباب ٢٥")]
[True, True, True]
>>> [answers_match(text, "YOUTH-25", vocabulary=care) for text in (
...     "SENIOR-25", "25 GB", "I recommend POST-25", "YOUTH-25 or Postpaid Essential",
...     "YOUTH-250", "باقة الشباب ٢٥ أو باقة الفاتورة الأساسية")]
[False, False, False, False, False, False]
>>> answers_match("Postpaid Essential", "POST-ESSENTIAL", vocabulary=care)
True

Numbers:

>>> answers_match("SAR 1,234.5", "1234.50"), answers_match("ر.س ١٢٣٫٤", "123.4")
(True, True)
>>> answers_match("The extra charge is 343.80 SAR.", "343.8")
True
>>> answers_match("المبلغ الإضافي ٣٤٣٫٨٠ ريال", "343.8")
True
>>> answers_match("117", "117.2"), answers_match("about 2 or 3", "2")
(False, False)

Texts, in English and Arabic:

>>> [answers_match(text, "card expired", vocabulary=care) for text in (
...     "The card expired.", "Your card has expired", "It failed because the card had expired",
...     "انتهت صلاحية بطاقتك")]
[True, True, True, True]
>>> [answers_match(text, "card expired", vocabulary=care) for text in (
...     "card expired or insufficient funds", "The card has not expired.",
...     "انتهت صلاحية البطاقة أو الرصيد غير كافٍ", "insufficient funds")]
[False, False, False, False]

Without a vocabulary, ids are still whole tokens, numbers are read as above and a text must
equal the gold answer once normalised:

>>> answers_match("Card expired.", "card expired"), answers_match("POST-PLUS", "post plus")
(True, True)
>>> answers_match("SENIOR-25", "YOUTH-25"), answers_match("Your card has expired", "card expired")
(False, False)
"""

from __future__ import annotations

import re
import string
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property

from telcoenv.text import ARABIC_DIGITS, normalize

_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)")
# Digits that stand alone (not in a word such as an id); a date or a range counts as several.
_STANDALONE = re.compile(r"(?<![\w.])" + _NUMBER.pattern + r"(?![\w])")
_UNITS = re.compile(
    r"(sar|sr|riyals?|ريال|ر\.س|\$|€|£|usd|eur|gb|gib|جيجابايت|جيجا|%)", re.IGNORECASE
)
_PUNCTUATION = re.compile(f"[{re.escape(string.punctuation)}،؛؟«»]")

# An id as a gold answer: a letter first, then letters and digits joined by - or _, with a
# separator or a digit (YOUTH-25, POST-ESSENTIAL, INV000123; "card" is a word).
_ID = re.compile(r"(?=[A-Za-z])(?=.*[-_0-9])[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*")
# An id in a text is a whole token: no Latin letter, digit, - or _ glued to it (an Arabic
# proclitic may be: "وPOST-PLUS").
_BEFORE_ID = r"(?<![A-Za-z0-9_-])"
_AFTER_ID = r"(?![A-Za-z0-9_]|-[A-Za-z0-9])"
# An id written in a text (its digits are no number), any case.
_ID_TOKEN = re.compile(_BEFORE_ID + r"[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)+" + _AFTER_ID)
# Ids a text may name besides the gold one, by the gold id's shape: with a separator, written in
# capitals (a hyphenated word such as "top-up" is none); letters then digits, the same letters.
_SEPARATED_ID = re.compile(_BEFORE_ID + r"[A-Z][A-Z0-9]*(?:[-_][A-Z0-9]+)+" + _AFTER_ID)

# Clause breaks: a form's words are in one clause. The rest of the punctuation separates words.
_BREAK = "\x00"
_BREAKS = re.compile(r"[.,;:!?،؛؟()\[\]{}\n]")
_SEPARATORS = re.compile(r"[^\w\x00]+|_")
_SCRIPTS = re.compile(r"(?<=[\u0600-\u06ff])(?=[A-Za-z0-9])|(?<=[A-Za-z0-9])(?=[\u0600-\u06ff])")
_NEGATIONS = frozenset(
    {"not", "no", "never", "neither", "nor", "without", "cannot"}
    | {"لا", "لم", "لن", "ليس", "ليست", "غير", "بدون", "دون"}
)
_BEFORE = 2  # words before a form that must not negate it
# Arabic proclitics a word may carry: conjunction, preposition, article (as in telcoenv.text).
_ARABIC_PREFIX = "(?:[وفبلك]{0,2}(?:ال)?)"


def _words(text: str) -> list[str]:
    """The words of ``text`` as forms are matched: normalised (case, Arabic spellings and
    digits), "n't" as "not", apostrophes dropped, clause breaks kept as :data:`_BREAK`."""
    text = normalize(text.translate(ARABIC_DIGITS))
    text = re.sub(r"n't\b", " not", text).replace("'", "").replace("`", "")
    text = _SCRIPTS.sub(" ", text)  # "وPrepaid": the Arabic "and" glued to a Latin word
    return _SEPARATORS.sub(" ", _BREAKS.sub(f" {_BREAK} ", text)).split()


def _as_number(text: str) -> float | None:
    """The number a text states, its words, units, currency and ids removed (None: no number,
    or two different ones)."""
    cleaned = _UNITS.sub(" ", text.translate(ARABIC_DIGITS))
    cleaned = re.sub(r"(?<=\d),(?=\d{3})", "", cleaned)  # thousands separators
    cleaned = _ID_TOKEN.sub(" ", cleaned)
    numbers = {round(float(n.rstrip(".")), 2) for n in _STANDALONE.findall(cleaned)}
    return numbers.pop() if len(numbers) == 1 else None


def normalize_text(text: str) -> str:
    """Lower case, punctuation removed, whitespace runs collapsed."""
    return " ".join(_PUNCTUATION.sub(" ", text.lower()).split())


def is_id(text: str) -> bool:
    """Whether ``text`` is an id (see the module docstring): never read as a number.

    >>> is_id("YOUTH-25"), is_id("INV000123"), is_id("card expired"), is_id("343.8")
    (True, True, False, False)
    """
    return _ID.fullmatch(text.strip()) is not None


# --- the vocabulary ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """One possible answer: its value as the gold answer states it (an id or a stored text) and
    the other forms that state it, in English and Arabic (names, phrasings)."""

    value: str
    en: tuple[str, ...] = ()
    ar: tuple[str, ...] = ()

    @property
    def forms(self) -> tuple[str, ...]:
        return (*self.en, *self.ar)


@dataclass(frozen=True)
class AnswerKind:
    """The possible answers of one kind (plans, add-ons, payment failure reasons): a text that
    names two of them names none. ``words_apart``: other words allowed between two words of a
    form (0 for names, which are said as they are)."""

    name: str
    answers: tuple[Answer, ...]
    words_apart: int = 0

    def __post_init__(self) -> None:
        if self.words_apart < 0:
            raise ValueError(f"answer kind {self.name!r}: words_apart must not be negative")
        values = [normalize_text(a.value) for a in self.answers]
        if len(set(values)) != len(values):
            raise ValueError(f"answer kind {self.name!r}: an answer is listed twice")
        for answer in self.answers:
            if not answer.value.strip() or not all(_form_words(f) for f in answer.forms):
                raise ValueError(f"answer kind {self.name!r}: an empty answer or form")


@dataclass(frozen=True)
class _Mention:
    answer: str  # the answer's value
    kind: str


def _form_words(form: str) -> list[re.Pattern[str]]:
    """One pattern per word of a form (``word*``: a word that starts with it)."""
    patterns = []
    for raw in form.split():
        stem = raw.endswith("*")
        pieces = [w for w in _words(raw.removesuffix("*")) if w != _BREAK]
        for position, piece in enumerate(pieces):
            arabic = "\u0600" <= piece[0] <= "\u06ff"
            whole = "" if stem and position == len(pieces) - 1 else "$"
            prefix = _ARABIC_PREFIX if arabic else ""
            patterns.append(re.compile(prefix + re.escape(piece) + whole))
    return patterns


def _id_pattern(value: str) -> re.Pattern[str]:
    """An id as a whole token, any case, a space for its - or _ (``YOUTH 25``, ``youth-25``)."""
    parts = [re.escape(p) for p in re.split(r"[-_]", value.strip())]
    joined = r"(?:\s*[-_]\s*|\s+)".join(parts)
    return re.compile(_BEFORE_ID + joined + _AFTER_ID, re.IGNORECASE)


def _occurrences(
    form: Sequence[re.Pattern[str]], words: Sequence[str], apart: int
) -> Iterator[tuple[int, ...]]:
    """The positions of each occurrence of ``form`` in ``words``: its words in order, in one
    clause, at most ``apart`` words apart, no negation between them."""

    def rest(k: int, previous: int) -> tuple[int, ...] | None:
        if k == len(form):
            return ()
        for j in range(previous + 1, min(len(words), previous + 2 + apart)):
            if form[k].match(words[j]) and (found := rest(k + 1, j)) is not None:
                return (j, *found)
            if words[j] == _BREAK or words[j] in _NEGATIONS:
                return None  # a form stays in its clause, and no negation is skipped
        return None

    for i, word in enumerate(words):
        if form[0].match(word) and (found := rest(1, i)) is not None:
            yield (i, *found)


def _negated_before(words: Sequence[str], start: int, own: Collection[int] = ()) -> bool:
    """Whether a negation is among the two words before ``start`` in its clause (a negation
    that is a word of a stated form, as in "do not honour", negates nothing after it)."""
    for position in range(start - 1, max(-1, start - 1 - _BEFORE), -1):
        if words[position] == _BREAK:
            return False
        if words[position] in _NEGATIONS and position not in own:
            return True
    return False


@dataclass(frozen=True)
class AnswerVocabulary:
    """The possible answers of a domain's questions, by kind, each with the forms that state it
    (see the module docstring). Built from the domain's data files."""

    kinds: tuple[AnswerKind, ...] = ()

    def __post_init__(self) -> None:
        names = [k.name for k in self.kinds]
        if len(set(names)) != len(names):
            raise ValueError(f"answer kinds are listed twice: {names}")

    def kind(self, name: str) -> AnswerKind:
        """The kind called ``name`` (KeyError: none)."""
        for kind in self.kinds:
            if kind.name == name:
                return kind
        raise KeyError(f"no answer kind {name!r}; kinds: {[k.name for k in self.kinds]}")

    def find(self, gold: str) -> tuple[AnswerKind, Answer] | None:
        """The kind and the answer whose value (or a name, for an id) is ``gold``."""
        return self._by_name.get(normalize_text(gold))

    @cached_property
    def _by_name(self) -> dict[str, tuple[AnswerKind, Answer]]:
        """Every answer by its normalised value and, for an id, names: the first in the kinds'
        and answers' order where two share one (built once: every scored answer looks it up)."""
        index: dict[str, tuple[AnswerKind, Answer]] = {}
        for kind in self.kinds:
            for answer in kind.answers:
                names = [f for f in answer.forms if "*" not in f] if is_id(answer.value) else []
                for name in (answer.value, *names):
                    index.setdefault(normalize_text(name), (kind, answer))
        return index

    @cached_property
    def _ids(self) -> list[tuple[re.Pattern[str], _Mention]]:
        return [
            (_id_pattern(a.value), _Mention(a.value, k.name))
            for k in self.kinds
            for a in k.answers
            if is_id(a.value)
        ]

    @cached_property
    def _forms(self) -> dict[str, list[tuple[list[re.Pattern[str]], _Mention]]]:
        """Per kind, every form's patterns (an id's are its names; a text is a form of its own)."""
        return {
            kind.name: [
                (_form_words(text), _Mention(answer.value, kind.name))
                for answer in kind.answers
                for text in (answer.forms if is_id(answer.value) else (answer.value, *answer.forms))
            ]
            for kind in self.kinds
        }

    def id_spans(self, text: str) -> list[tuple[int, int, _Mention]]:
        """Where ``text`` names an id of the vocabulary, and which."""
        return [
            (m.start(), m.end(), mention)
            for pattern, mention in self._ids
            for m in pattern.finditer(text)
        ]

    def named(self, text: str, kind: str) -> set[str]:
        """The answers of the kind called ``kind`` that ``text`` names: by id, or by a stated
        form (not negated)."""
        text = text.translate(ARABIC_DIGITS)
        ids = {m.answer for *_, m in self.id_spans(text) if m.kind == kind}
        return ids | self.stated(_words(text), self.kind(kind))

    def _found(self, words: Sequence[str], kind: AnswerKind) -> list[tuple[frozenset[int], str]]:
        """Every occurrence of a form of ``kind`` in ``words``: its positions and its answer."""
        return [
            (frozenset(positions), mention.answer)
            for patterns, mention in self._forms[kind.name]
            for positions in _occurrences(patterns, words, kind.words_apart)
        ]

    def form_words(self, words: Sequence[str], kind: AnswerKind) -> frozenset[int]:
        """The positions of ``words`` that belong to a stated form of ``kind`` (a negation among
        them, as the "غير" of "غير المحدودة", unlimited, negates nothing after it)."""
        return frozenset().union(*(positions for positions, _ in self._found(words, kind)))

    def stated(self, words: Sequence[str], kind: AnswerKind) -> set[str]:
        """The answers of ``kind`` whose forms ``words`` state, not negated; a form inside
        another answer's longer one is not stated by it (the "Postpaid" of "Postpaid Plus")."""
        found = self._found(words, kind)
        own = frozenset().union(*(positions for positions, _ in found))
        found = [(p, a) for p, a in found if not _negated_before(words, min(p), own)]
        return {
            answer
            for positions, answer in found
            if not any(positions < other and answer != by for other, by in found)
        }


# --- matching ------------------------------------------------------------------------------------


def _negated_at(text: str, start: int, own: Collection[int] = ()) -> bool:
    """Whether a negation is among the two words before character ``start``, in its clause
    (``own``: positions of the text's words that belong to a stated form, negating nothing)."""
    before = _words(text[:start])
    return _negated_before(before, len(before), own)


def _other_ids(text: str, gold: str, own: Collection[int] = ()) -> bool:
    """Whether ``text`` (the known ids blanked) names an id of the gold id's shape, not negated."""
    if re.search(r"[-_]", gold):
        pattern = _SEPARATED_ID
    else:
        letters = re.match(r"[A-Za-z]+", gold)
        prefix = re.escape(letters.group() if letters else "")
        pattern = re.compile(
            _BEFORE_ID + prefix + r"[A-Za-z0-9]*\d[A-Za-z0-9]*" + _AFTER_ID, re.IGNORECASE
        )
    return any(not _negated_at(text, m.start(), own) for m in pattern.finditer(text))


def _names_answer(
    submitted: str, gold: str, found: tuple[AnswerKind, Answer] | None, vocabulary: AnswerVocabulary
) -> bool:
    """An id, or a text the vocabulary knows: the answers of the gold's kind the text states
    must be the gold one alone, and (an id) no unknown id of its shape may be named."""
    kind, value = (found[0], found[1].value) if found else (None, gold)
    submitted = submitted.translate(ARABIC_DIGITS)  # YOUTH-٢٥; one character for one
    spans = vocabulary.id_spans(submitted)
    if is_id(gold) and not any(m.answer == value for *_, m in spans):
        spans += [
            (m.start(), m.end(), _Mention(value, "")) for m in _id_pattern(gold).finditer(submitted)
        ]
    words = _words(submitted)
    own = vocabulary.form_words(words, kind) if kind is not None else frozenset()
    stated = {
        mention.answer
        for start, _, mention in spans
        if (mention.answer == value or (kind and mention.kind == kind.name))
        and not _negated_at(submitted, start, own)
    }
    if kind is not None:
        stated |= vocabulary.stated(words, kind)
    if stated != {value}:
        return False
    if not is_id(gold):
        return True
    blanked = list(submitted)
    for start, end, mention in spans:
        if found or mention.answer == value:  # an unknown gold's kind: other ids are candidates
            blanked[start:end] = " " * (end - start)
    blanked_text = "".join(blanked)
    blanked_own = vocabulary.form_words(_words(blanked_text), kind) if kind else frozenset()
    return not _other_ids(blanked_text, gold, blanked_own)


def answers_match(submitted: str, gold: str, *, vocabulary: AnswerVocabulary | None = None) -> bool:
    """Whether ``submitted`` states the gold answer (see the module docstring); ``vocabulary``:
    the domain's possible answers and their forms (without one, an id must be named by its own
    spelling and a text must equal the gold answer once normalised)."""
    found = vocabulary.find(gold) if vocabulary is not None else None
    if is_id(gold) or found is not None:
        if found is not None and normalize_text(submitted) == normalize_text(found[1].value):
            return True
        return _names_answer(submitted, gold, found, vocabulary or AnswerVocabulary())
    gold_number = _as_number(gold)
    if gold_number is not None:
        return _as_number(submitted) == gold_number
    return normalize_text(submitted) == normalize_text(gold)
