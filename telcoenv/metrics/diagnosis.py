"""Whether a submitted diagnosis names the gold intent: by one of its names, or by meaning.

An agent ends an episode with ``submit_resolution(intent=...)``: free text, in English or
Arabic, naming the problem. :func:`match_diagnosis` judges it among the intents of the gold
intent's domain, in two steps (the rules, with examples, are in docs/verification.md, "How a
diagnosis is judged"):

1. **Names.** The text and every intent's *name forms* (its key, its English and Arabic labels
   and its ``synonyms`` in intents.yaml) are compared as words (:func:`name_words`): casefolded,
   Arabic spellings folded, punctuation and the articles a/an/the dropped. The text names an
   intent when it contains one of its forms as whole words (an Arabic form may carry the
   proclitics و ف ب ل ك and the article ال, an English form's last word a plural s). A form
   inside a longer form found in the text does not count ("duplicate charge" in "billing dispute
   duplicate charge"), nor one a negation rules out ("not a coverage hole", "ليست فجوة تغطية").
   One intent named: that intent. Two or more: a list, refused (``ambiguous``), whatever else
   the text says; a guess that lists candidates names none of them.
2. **Meaning**, only when the text contains no form, has three words at least (fillers such as
   "The problem is" aside) and an embedder is given. The text is embedded, and so is every
   name of the domain's intents in the text's language; an intent's similarity is that of its
   nearest name. The nearest intent counts when it leads the second by at least ``margin``
   (:data:`DEFAULT_MARGIN`). A text that a list separator or a clause break splits ("... or
   ...", "..., ...", "... أو ...") is judged part by part too: parts nearest to different
   intents are a list (``ambiguous``).

The forms of a catalogue are indexed once (:class:`DiagnosisMatcher`; :func:`match_diagnosis`
keeps the matchers of the last catalogues it saw), so a match by name costs microseconds.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from telcoenv.embeddings import Embedder
from telcoenv.errors import UnknownIntentError
from telcoenv.metrics.semantic import _vectors
from telcoenv.specs import IntentModel, Language
from telcoenv.text import language_of, normalize

#: How a diagnosis was judged: by a form of one intent (``label``, ``key``, ``synonym``), by
#: meaning (``embedder``), or not at all: no form and no decision by meaning (``none``), forms
#: of two or more intents (``ambiguous``), only forms the text rules out (``negated``).
MatchKind = Literal["label", "key", "synonym", "embedder", "none", "ambiguous", "negated"]

#: How far the nearest intent must lead the second, in cosine, to count by meaning. Measured
#: with the multilingual embedder (USE-m v3) on 192 paraphrases of the 32 intents, 32 vague
#: guesses and 512 two-item lists (docs/verification.md): the smallest lead above every lead of
#: a list or of a paraphrase nearest to another intent. It accepts few paraphrases (14 of 192):
#: that embedder cannot tell more apart safely, and a wrong acceptance is worse than a refusal.
DEFAULT_MARGIN = 0.32


class DiagnosisMatch(BaseModel):
    """The verdict on a submitted diagnosis.

    ``intent`` is the intent the text names (the gold one or another), ``named`` every intent
    it names (two or more for ``ambiguous``), ``form`` the name found, as the catalogue writes
    it; ``similarity`` and ``margin`` (the nearest intent's cosine and its lead over the
    second) are set when the embedder was asked.
    """

    model_config = ConfigDict(frozen=True)

    matched: bool
    how: MatchKind
    intent: str | None = None
    named: tuple[str, ...] = ()
    form: str | None = None
    similarity: float | None = None
    margin: float | None = None


# --- words --------------------------------------------------------------------------------------

# A word, or a clause end (a negation does not reach past one); other punctuation only separates.
_WORD_OR_CLAUSE = re.compile(r"\w+|[.,;:!?\n\u060c\u061b\u061f]")
_ARTICLES = frozenset({"a", "an", "the"})
_BREAK = "|"
_PROCLITICS = "وفبلك"
_ARABIC_ARTICLE = "ال"


def name_words(text: str) -> tuple[str, ...]:
    """The words of ``text`` as diagnoses are compared: :func:`telcoenv.text.normalize`-d,
    apostrophes dropped, other punctuation a word break (``|`` where a clause ends), the
    English articles left out.

    >>> name_words("The problem: a Ping-Pong handover")
    ('problem', '|', 'ping', 'pong', 'handover')
    >>> name_words("إنقطاع الخلية")
    ('انقطاع', 'الخليه')
    """
    return tuple(
        word if word[0].isalnum() or word[0] == "_" else _BREAK
        for word in _WORD_OR_CLAUSE.findall(normalize(text).replace("'", ""))
        if word not in _ARTICLES
    )


def _arabic(word: str) -> bool:
    return "\u0600" <= word[0] <= "\u06ff"


def _bare(word: str) -> str:
    """An Arabic word without its article (so that a form matches with or without it)."""
    return word[2:] if word.startswith(_ARABIC_ARTICLE) and len(word) > 3 else word


def _singular(word: str) -> str:
    """An English word without a plural s (``outages`` -> ``outage``)."""
    if len(word) > 3 and word.endswith("es") and word[-3] in "sxz":
        return word[:-2]
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


# Cached: the words of diagnoses repeat, and a match costs a few dictionary look-ups per word.
@lru_cache(maxsize=8192)
def _variants(word: str) -> frozenset[str]:
    """What a word of the text may be: itself, and an Arabic word without up to two proclitics
    and its article."""
    if not _arabic(word):
        return frozenset({word})
    found = {word}
    for cut in (1, 2):
        if len(word) > cut + 2 and all(letter in _PROCLITICS for letter in word[:cut]):
            found.add(word[cut:])
    return frozenset(found | {_bare(w) for w in found})


@lru_cache(maxsize=8192)
def _firsts(word: str) -> tuple[str, ...]:
    """What a word of the text may be as the first word of a form: its variants, or an English
    word as it is and without a plural s (a form of one word)."""
    if _arabic(word):
        return tuple(sorted(_variants(word)))
    single = _singular(word)
    return (word,) if single == word else (word, single)


@lru_cache(maxsize=8192)
def _last(word: str) -> str:
    """A word of the text as the last word of a form: an English one without a plural s."""
    return word if _arabic(word) else _singular(word)


def form_key(form: str) -> tuple[str, ...]:
    """What two name forms share when they are the same name: their words, an Arabic first
    word without its article, an English last word without a plural s. The catalogue refuses
    two intents whose forms have the same key."""
    words = [w for w in name_words(form) if w != _BREAK]
    if words and _arabic(words[0]):
        words[0] = _bare(words[0])
    if words and not _arabic(words[-1]):
        words[-1] = _singular(words[-1])
    return tuple(words)


# Words that rule out the form they stand before (up to three words before it, in its clause) or
# after ("... ruled out"). Arabic ones are matched without their proclitics (وليس).
_NEGATIONS = frozenset(
    {
        *("not", "no", "non", "never", "without", "nor", "neither", "isnt", "wasnt", "arent"),
        *("excluding", "excluded", "exclude", "ruled", "than", "instead", "unlikely"),
        *("ليس", "ليست", "لا", "لم", "لن", "غير", "عدم", "بدون", "دون", "استبعاد", "بدلا", "بدل"),
    }
)
_NEGATED_AFTER = frozenset(
    {
        ("ruled", "out"),
        ("is", "ruled"),
        ("was", "ruled"),
        ("has", "been", "ruled"),
        ("excluded",),
        ("is", "excluded"),
        ("unlikely",),
        ("is", "unlikely"),
        ("is", "not"),
        ("isnt",),
        ("was", "not"),
        ("wasnt",),
        ("مستبعد",),
        ("مستبعده",),
        ("غير", "وارد"),
        ("تم", "استبعاده"),
        ("تم", "استبعادها"),
    }
)
_NEGATION_REACH = 3

# Words around a diagnosis that say nothing of it: not read by meaning.
_LEADING = """problem is|issue is|diagnosis is|root cause is|cause is|intent is|problem with|
issue with|problem in|issue in|problem|issue|diagnosis|diagnosed|root cause|cause|intent|
identified|detected|suspected|it is|its|this is|most likely|likely|probably|possibly|looks like|
seems to be|المشكلة هي|المشكلة في|المشكلة|مشكلة في|مشكلة|التشخيص هو|التشخيص|السبب الجذري هو|
السبب الجذري|السبب هو|السبب|نوع المشكلة|يبدو أنها|يبدو أنه|على الأرجح|غالبا|ربما|هي|هو"""
_TRAILING = "issue|problem|detected|suspected|confirmed|مشكلة"


def _phrases(text: str) -> tuple[tuple[str, ...], ...]:
    """``|``-separated phrases as words, longest first ("problem is" before "problem")."""
    phrases = {name_words(phrase) for phrase in text.replace("\n", "").split("|")}
    return tuple(sorted(phrases, key=len, reverse=True))


_LEADING_FILLERS = _phrases(_LEADING)
_TRAILING_FILLERS = _phrases(_TRAILING)
# A text shorter than this (fillers aside) that is none of the names is too vague to be judged
# by meaning ("Capacity issue", "Handover problem"): the catalogue lists the short names.
_MEANING_MIN_WORDS = 3


def _filler(words: list[str], fillers: tuple[tuple[str, ...], ...], leading: bool) -> int:
    """The length of the filler ``words`` starts (or ends) with and is more than, else 0."""
    for filler in fillers:
        size = len(filler)
        if len(words) > size and tuple(words[:size] if leading else words[-size:]) == filler:
            return size
    return 0


def _filler_bounds(words: Sequence[str]) -> tuple[int, int]:
    """Where the words that name something start and end, past the leading and trailing
    fillers and clause breaks."""
    start, end = 0, len(words)
    while start < end:
        if words[start] == _BREAK:
            start += 1
        elif words[end - 1] == _BREAK:
            end -= 1
        elif lead := _filler(words[start:end], _LEADING_FILLERS, leading=True):
            start += lead
        elif trail := _filler(words[start:end], _TRAILING_FILLERS, leading=False):
            end -= trail
        else:
            break
    return start, end


def strip_fillers(words: Sequence[str]) -> tuple[str, ...]:
    """``words`` without the leading and trailing words that name no problem ("The problem is",
    "Diagnosis:", "المشكلة هي", "... issue") nor clause breaks.

    >>> strip_fillers(name_words("Diagnosis: the problem is likely a PCI collision."))
    ('pci', 'collision')
    """
    start, end = _filler_bounds(words)
    return tuple(words[start:end])


# Words that separate the items of a list: the text judged by meaning is judged part by part too.
_SEPARATORS = frozenset({_BREAK, "or", "and", "vs", "versus", "either", "او", "ام"})
_SEPARATOR_MARKS = frozenset({"/", "&", "+", "-", "–", "—"})


def _meaning_texts(submitted: str) -> tuple[str, list[str]]:
    """The text the embedder reads, as written but without its fillers (whole pieces between
    spaces), and its parts where a list separator or a clause break splits it."""
    pieces = [(piece, name_words(piece)) for piece in submitted.split()]
    words = [word for _, piece_words in pieces for word in piece_words]
    start, end = _filler_bounds(words)
    kept: list[tuple[str, tuple[str, ...]]] = []
    position = 0
    for piece, piece_words in pieces:
        first, position = position, position + len(piece_words)
        if (position > start and first < end) or (not piece_words and start < first < end):
            kept.append((piece, piece_words))
    parts: list[list[str]] = [[]]
    for piece, piece_words in kept:
        if piece in _SEPARATOR_MARKS or (piece_words and set(piece_words) <= _SEPARATORS):
            parts.append([])
            continue
        parts[-1].append(piece)
        if piece_words and piece_words[-1] == _BREAK:
            parts.append([])
    texts = [" ".join(part) for part in parts if any(name_words(" ".join(part)))]
    return " ".join(piece for piece, _ in kept), texts


# --- the forms of a catalogue -------------------------------------------------------------------

_KIND_ORDER: dict[str, int] = {"label": 0, "key": 1, "synonym": 2}


@dataclass(frozen=True)
class _Form:
    intent: str
    kind: MatchKind
    text: str  # as written in the catalogue


@dataclass(frozen=True)
class _Found:
    start: int
    end: int  # exclusive, in words
    form: _Form


def name_forms(intent: IntentModel) -> list[tuple[str, MatchKind]]:
    """Every name of an intent with its kind: its labels, its key, its synonyms."""
    forms: list[tuple[str, MatchKind]] = [(intent.label.en, "label"), (intent.label.ar, "label")]
    forms.append((intent.key, "key"))
    forms += [(synonym, "synonym") for synonym in (*intent.synonyms.en, *intent.synonyms.ar)]
    return forms


class _Index:
    """The forms of one domain's intents by their :func:`form_key`, and the lengths of the
    forms that start with each first word (longest first)."""

    def __init__(self, intents: Sequence[IntentModel]) -> None:
        self.forms: dict[tuple[str, ...], _Form] = {}
        lengths: dict[str, set[int]] = {}
        for intent in intents:
            for text, kind in name_forms(intent):  # a label before a synonym of the same words
                words = form_key(text)
                if words and words not in self.forms:
                    self.forms[words] = _Form(intent.key, kind, text)
                    lengths.setdefault(words[0], set()).add(len(words))
        self.lengths = {first: sorted(sizes, reverse=True) for first, sizes in lengths.items()}

    def find(self, words: Sequence[str]) -> list[_Found]:
        """The longest form that starts at each word of ``words``, in order."""
        last = [_last(word) for word in words]
        found = []
        for start, word in enumerate(words):
            best: _Found | None = None
            for first in _firsts(word):
                for size in self.lengths.get(first, ()):
                    end = start + size
                    if best is not None and size <= best.end - best.start:
                        break
                    if end > len(words):
                        continue
                    if size == 1:
                        key: tuple[str, ...] = (first,)
                    else:
                        key = (first, *words[start + 1 : end - 1], last[end - 1])
                    form = self.forms.get(key)
                    if form is not None:
                        best = _Found(start, end, form)
                        break
            if best is not None:
                found.append(best)
        return found


def _outermost(found: list[_Found]) -> list[_Found]:
    """The forms found (in order of their start, one per start) that lie inside no longer one."""
    kept: list[_Found] = []
    reach = 0
    for item in found:
        if item.end > reach:  # a form that starts later and ends no later lies inside
            kept.append(item)
            reach = item.end
    return kept


def _negated(found: _Found, words: Sequence[str], after_previous: int) -> bool:
    """Whether a negation in the form's clause rules it out: one of the few words just before
    it (after the previous form found), or a phrase just after it ("... ruled out")."""
    for index in range(found.start - 1, max(after_previous, found.start - _NEGATION_REACH) - 1, -1):
        if words[index] == _BREAK:
            break
        if _variants(words[index]) & _NEGATIONS:
            return True
    after = tuple(words[found.end : found.end + _NEGATION_REACH])
    return any(after[:size] in _NEGATED_AFTER for size in range(1, len(after) + 1))


# --- matching -----------------------------------------------------------------------------------


def _domain(intent: IntentModel) -> str:
    return str(getattr(intent, "domain", "network"))


class DiagnosisMatcher:
    """The name forms of a catalogue's intents, indexed once per domain; :meth:`match` judges a
    submitted diagnosis (see :func:`match_diagnosis`)."""

    def __init__(self, intents: Iterable[IntentModel]) -> None:
        self.intents = tuple(intents)
        self._domain_of = {intent.key: _domain(intent) for intent in self.intents}
        domains = {_domain(intent) for intent in self.intents}
        self._peers = {
            domain: tuple(i for i in self.intents if _domain(i) == domain) for domain in domains
        }
        self._indexes = {domain: _Index(peers) for domain, peers in self._peers.items()}

    def match(
        self,
        submitted: str,
        gold_key: str,
        *,
        embedder: Embedder | None = None,
        margin: float = DEFAULT_MARGIN,
        lang: Language | None = None,
    ) -> DiagnosisMatch:
        domain = self._domain_of.get(gold_key)
        if domain is None:
            valid = ", ".join(self._domain_of)
            raise UnknownIntentError(f"unknown intent {gold_key!r}; valid intents: {valid}")
        words = name_words(submitted)
        outer = _outermost(self._indexes[domain].find(words))
        kept = [
            found
            for previous, found in zip([None, *outer], outer, strict=False)
            if not _negated(found, words, previous.end if previous else 0)
        ]
        named = tuple(dict.fromkeys(found.form.intent for found in kept))
        if len(named) > 1:
            return DiagnosisMatch(matched=False, how="ambiguous", named=named)
        if named:
            best = min(kept, key=lambda found: _KIND_ORDER[found.form.kind])
            return DiagnosisMatch(
                matched=named[0] == gold_key,
                how=best.form.kind,
                intent=named[0],
                named=named,
                form=best.form.text,
            )
        if outer:  # every form found is ruled out
            return DiagnosisMatch(matched=False, how="negated")
        if embedder is None or len(strip_fillers(words)) < _MEANING_MIN_WORDS:
            return DiagnosisMatch(matched=False, how="none")
        return self._by_meaning(submitted, gold_key, domain, embedder, margin, lang)

    def _by_meaning(
        self,
        submitted: str,
        gold_key: str,
        domain: str,
        embedder: Embedder,
        margin: float,
        lang: Language | None,
    ) -> DiagnosisMatch:
        peers = self._peers[domain]
        if len(peers) < 2:  # nothing to be ahead of
            return DiagnosisMatch(matched=False, how="none")
        text, parts = _meaning_texts(submitted)
        language = lang or language_of(text)
        names = [
            (intent.label.in_lang(language), *intent.synonyms.in_lang(language)) for intent in peers
        ]
        anchors = _anchor_vectors(embedder, tuple(name for group in names for name in group))
        starts = np.cumsum([0, *(len(group) for group in names[:-1])])
        queries = [text, *parts] if len(parts) > 1 else [text]
        # Each intent's cosine: that of its nearest name, for the text and each of its parts.
        cosines = np.maximum.reduceat(_vectors(embedder, queries) @ anchors.T, starts, axis=1)
        nearest = [peers[int(i)].key for i in cosines.argmax(axis=1)]
        second, first = np.sort(cosines[0])[-2:]
        similarity, lead = float(first), float(first - second)
        if len(set(nearest)) > 1:  # a list whose items name different intents
            named = tuple(dict.fromkeys(nearest))
            return DiagnosisMatch(
                matched=False, how="ambiguous", named=named, similarity=similarity, margin=lead
            )
        if lead < margin:
            return DiagnosisMatch(matched=False, how="none", similarity=similarity, margin=lead)
        return DiagnosisMatch(
            matched=nearest[0] == gold_key,
            how="embedder",
            intent=nearest[0],
            named=(nearest[0],),
            similarity=similarity,
            margin=lead,
        )


# The vectors of a domain's names per embedder name: embedded once, not per episode.
_ANCHORS: OrderedDict[tuple[str, tuple[str, ...]], np.ndarray] = OrderedDict()
_ANCHORS_LIMIT = 32
_ANCHORS_LOCK = threading.Lock()


def _anchor_vectors(embedder: Embedder, names: tuple[str, ...]) -> np.ndarray:
    key = (str(getattr(embedder, "name", type(embedder).__name__)), names)
    with _ANCHORS_LOCK:
        if key in _ANCHORS:
            _ANCHORS.move_to_end(key)
            return _ANCHORS[key]
    vectors = _vectors(embedder, list(names))
    with _ANCHORS_LOCK:
        _ANCHORS[key] = vectors
        while len(_ANCHORS) > _ANCHORS_LIMIT:
            _ANCHORS.popitem(last=False)
    return vectors


# The matchers of the last catalogues match_diagnosis saw, by the identity of their intents
# (the intents are kept with it, so an id is not reused while its entry lives).
_MATCHERS: OrderedDict[tuple[int, ...], DiagnosisMatcher] = OrderedDict()
_MATCHERS_LIMIT = 8


def matcher_for(intents: Sequence[IntentModel]) -> DiagnosisMatcher:
    """The :class:`DiagnosisMatcher` of ``intents``, indexed at its first use."""
    key = tuple(map(id, intents))
    matcher = _MATCHERS.get(key)
    if matcher is None:
        matcher = _MATCHERS[key] = DiagnosisMatcher(intents)
        while len(_MATCHERS) > _MATCHERS_LIMIT:
            _MATCHERS.popitem(last=False)
    return matcher


def match_diagnosis(
    submitted: str,
    gold_key: str,
    intents: Sequence[IntentModel],
    *,
    embedder: Embedder | None = None,
    margin: float = DEFAULT_MARGIN,
    lang: Language | None = None,
) -> DiagnosisMatch:
    """Whether ``submitted`` names the intent ``gold_key``, among the intents of its domain in
    ``intents`` (see the module docstring for the rules).

    ``embedder``: judge a text that contains no name form by meaning (none: such a text is
    refused); ``margin``: how far the nearest label must lead the second; ``lang``: the language
    of the labels it is compared with (default: Arabic when the text has Arabic letters).

    >>> from telcoenv.domains.network.loading import network_catalog
    >>> intents = network_catalog().intents
    >>> match_diagnosis("Cell outage on NR-URB-MACRO-101", "CELL_OUTAGE_DETECTION", intents).how
    'synonym'
    >>> match_diagnosis("Coverage Hole, Cell Outage Detection", "COVERAGE_HOLE", intents).how
    'ambiguous'
    """
    return matcher_for(intents).match(
        submitted, gold_key, embedder=embedder, margin=margin, lang=lang
    )
