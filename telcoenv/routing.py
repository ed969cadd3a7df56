"""Which facts a plain message asks the counterpart for, by meaning.

Real models ask in many ways ("Could you share the impacted sector's identifier?", "منذ متى
تلاحظون ذلك؟"); keyword lists miss most of them and fire on statements ("I checked the cell").
A :class:`QuestionRouter` embeds each sentence of a message with the multilingual embedder the
library ships (offline, deterministic) and compares it with bilingual prototype questions per
kind of fact; a kind's keywords in the sentence (``telcoenv.text`` matching, both scripts) add
:data:`KEYWORD_BONUS` to its score, because the embedder knows colloquial Arabic less well
than the words do. A sentence goes to the kind it scores best on, if that score is high enough
and not below the ``other`` prototypes' (statements, thanks, diagnoses). A sentence that has
neither the form of a question nor of a request (:func:`asks`) asks for nothing, however close
its words: "Your line 9665... is active and on Postpaid Plus." read out to a customer is about
their line, but no question for its number. A message that asks for nothing the counterpart
knows is answered with the list of what it can tell.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from functools import cached_property
from pathlib import Path

import numpy as np

from telcoenv.datafiles import parse_yaml
from telcoenv.embeddings import Embedder, multilingual_embedder
from telcoenv.errors import CatalogError
from telcoenv.specs import LANGUAGES
from telcoenv.text import keyword_pattern, normalize, without_marks

OTHER = "other"
#: What a kind's keyword in a sentence adds to the sentence's similarity to that kind.
KEYWORD_BONUS = 0.05
#: A sentence also asks a second kind that scores at most this much below its best one.
RUNNER_UP = 0.03
#: A message is read up to here: a question fits many times over, and a megabyte of agent
#: output costs no more than a paragraph.
ROUTED_CHARS = 2_000
#: At most this many sentences of a message are routed (the first ones).
ROUTED_SENTENCES = 8
# A sentence ends at ? ؟ ! . ; or a line break (a dot between digits or letters is no end).
_SENTENCE_END = re.compile(r"(?<=[?؟!;\n])|(?<=\.)(?=\s|$)")
_CLAUSE_END = re.compile(r"[,،]\s")
# "and" / "و" joining two requests ("your line number and your new email"; Arabic writes و
# joined to the next word, so a split can also cut a word that starts with و).
_CONJUNCTION = re.compile(r"\s+and\s+|\s+و\s*", re.IGNORECASE)
_WORD = re.compile(r"\w+")

# What makes a sentence a question or a request (matched in normalize()-d text): a question
# mark, a request's words anywhere, or a question word or imperative that opens the sentence or
# one of its clauses (after a comma, or after "OK", "thanks", "hi" ...). Read-outs of an
# account made up most sentences routed as questions before (46 of 70 written for the purpose).
_REQUEST_WORDS = keyword_pattern(
    [
        *("please", "pls$", "plz$", "kindly", "could you", "can you", "would you", "will you"),
        *("may i have", "may i get", "may i know", "can i have", "can i get", "could i have"),
        *("could i get", "let me know", "let us know", "tell me", "give me", "send me"),
        # Whole words: "the details you provided" and "it is confirmed" ask nothing.
        *("share with me", "share your", "provide$", "confirm$", "need your", "need the"),
        *("need to know", "like to know", "mind sharing"),
        *("لو سمحت", "لو تكرمت", "من فضلك", "فضلا", "رجاء", "الرجاء", "يرجي", "ارجو", "نرجو"),
        *("ممكن", "بامكانك", "هل", "زودني", "زودنا", "اعطني", "اعطيني", "عطني", "شاركني"),
        *("اخبرني", "خبرني", "نحتاج", "احتاج"),
    ]
)
_OPENING_WORDS = keyword_pattern(
    [
        f"{word}$"
        for word in (
            *("what", "what's", "whats", "which", "when", "where", "who", "whom", "whose", "why"),
            *("how", "do", "does", "did", "is", "are", "was", "were", "can", "could", "would"),
            *("will", "shall", "should", "may", "might", "have", "has", "provide", "share"),
            *("give", "tell", "send", "confirm", "enter", "type", "write", "specify", "verify"),
            *("state", "need", "ما", "ماذا", "متي", "اين", "وين", "فين", "كيف", "كم", "اي"),
            *("ايش", "وش", "شو", "لماذا", "ليش", "لمن", "ارسل", "شارك", "اكد", "قل", "قولي"),
            *("حدد", "اذكر", "اكتب", "ادخل", "تقدر", "تقدرين", "ودي", "محتاج", "ابغي", "ابي"),
            *("نبي", "نبغي", "عطنا", "علمني"),
        )
    ]
)
# The greetings and acknowledgements that may open a question before its question word ("OK,
# what is ...", "Thanks which month ..."); after any other clause, "which" and "when" are
# relative ("..., which is lower than usual.").
_LEAD_IN = re.compile(
    r"^(?:(?:ok|okay|great|thanks|thank you|sure|alright|also|so|now|first|hi|hello)\b"
    r"[\s!.,،]*)+"
)
_FIRST_WORD = re.compile(r"\w[\w']*")
# "it" / "them" as the object of a request ("send it to me"; not "when did it start?"),
# "إياه", "به", and a pronoun joined to a verb of request ("أرسله", "اكتبها"; other words
# that end in ه are not told apart from it, since normalize() folds ة into ه).
_PRONOUN = re.compile(
    r"\b(?:provide|send|give|share|tell|confirm|enter|type|write|spell)\s+(?:me\s+|us\s+)?"
    r"(?:it|them)\b|\b(?:it|them)\s+(?:to|with)\s+(?:me|us)\b"
    r"|(?<!\w)(?:ايا|ب|ارسل|ابعث|اعطني|شارك|اكتب|اكد|قدم)(?:ه|ها|هم)(?!\w)"
)
# "ما زلت / ما زال / لا يزال" (still ...) opens statements: "ما" is no question word there.
_STILL = re.compile(r"^ما\s+(?:[يتن]?زال|زل)")


class QuestionRouter:
    """Routes messages to kinds of fact by similarity to prototype questions.

    Args:
        prototypes: per kind, per language (and ``keywords``: words of either language that
            name the fact), example questions; ``other`` lists what is no question for the
            counterpart.
        embedder: a factory of the sentence embedder (called at the first message).
        threshold: the least similarity of a sentence to its kind's prototypes.
        top: a kind's score is the mean of its ``top`` best similarities to the sentence.
        statements: the kinds a sentence that is no question or request can route to (the
            customer's wrap-up, "Your email has been updated."); every other kind needs one.
    """

    def __init__(
        self,
        prototypes: Mapping[str, Mapping[str, Sequence[str]]],
        embedder: Callable[[], Embedder] = multilingual_embedder,
        threshold: float = 0.4,
        top: int = 2,
        statements: Collection[str] = (),
    ) -> None:
        if OTHER not in prototypes:
            raise ValueError(f"the prototypes need an {OTHER!r} kind")
        unknown = set(statements) - set(prototypes)
        if unknown:
            raise ValueError(f"statement kinds without prototypes: {sorted(unknown)}")
        self.kinds = [kind for kind in prototypes if kind != OTHER]
        self.statements = frozenset(statements)
        self._labels = [k for k, by_lang in prototypes.items() for q in _all(by_lang)]
        self._texts = [without_marks(q) for by_lang in prototypes.values() for q in _all(by_lang)]
        self._keywords = {
            kind: keyword_pattern(by_lang["keywords"])
            for kind, by_lang in prototypes.items()
            if by_lang.get("keywords")
        }
        self._embedder_factory = embedder
        self.threshold, self.top = threshold, top

    @cached_property
    def _embedder(self) -> Embedder:
        return self._embedder_factory()

    @cached_property
    def _prototype_vectors(self) -> np.ndarray:
        return self._embedder.encode(self._texts)

    def warm(self) -> None:
        """Encode the prototype questions now (about a second, once per process), so that the
        first message routed does not pay for it inside a timed episode."""
        self._prototype_vectors  # noqa: B018 - the cached property is the work

    def route(self, message: str) -> list[str]:
        """The kinds ``message`` asks for, best first (each once; none: nothing it knows)."""
        sentences = split_sentences(message)
        # A request often ends a sentence after a comma ("To update your email, please give me
        # your line number."): its clauses may add kinds, after those of the whole sentences.
        clauses = [(i, c) for i, s in enumerate(sentences) for c in split_clauses(s)]
        # Two requests joined by "and" ("your line number and your new email address"): the
        # parts of a sentence that asks something add the kinds they name.
        conjuncts = [
            (i, c) for i, s in enumerate(sentences) for c in split_clauses(s, _CONJUNCTION)
        ]
        if not sentences:
            return []
        parts = [*enumerate(sentences), *clauses, *conjuncts]  # (its sentence, text)
        texts = [_with_antecedent(sentences, i) for i in range(len(sentences))]
        texts += [text for _, text in parts[len(sentences) :]]
        vectors = self._embedder.encode([without_marks(t) for t in texts])
        rows = list(vectors @ self._prototype_vectors.T)
        normalized = [normalize(text) for text in texts]
        # A clause or part has the form of its sentence ("..., which is lower than usual." is
        # no question; "your new email" after "Please give me your number and" is a request).
        form = [_asks(text) for text in normalized[: len(sentences)]]
        asked = [
            self._asked(row, text, asks_form=form[sentence])
            for (sentence, _), text, row in zip(parts, normalized, rows, strict=True)
        ]
        named = [
            [(kind, score) for kind, score in kinds if self._names(kind, text)]
            for (sentence, _), text, kinds in zip(
                conjuncts,
                normalized[len(sentences) + len(clauses) :],
                asked[len(sentences) + len(clauses) :],
                strict=True,
            )
            if asked[sentence]  # a statement's parts ask nothing
        ]
        first = _best(asked[: len(sentences)])
        more = _best(asked[len(sentences) : len(sentences) + len(clauses)] + named)
        ranked = sorted(first, key=lambda k: (-first[k], k))
        return ranked + sorted(set(more) - set(ranked), key=lambda k: (-more[k], k))

    def _asked(self, row: np.ndarray, text: str, asks_form: bool) -> list[tuple[str, float]]:
        """The kinds one sentence asks: its best kind, and a runner-up within
        :data:`RUNNER_UP` of it ("To update your email, please give me your line number.");
        none when a statement scores higher or the best is below the threshold. A sentence
        without the form of a question or request (``asks_form``) asks only statement kinds."""
        means = self._scores(row, text)
        other = means.pop(OTHER)
        best = max(means.values())
        if best < max(self.threshold, other):
            return []
        floor = max(self.threshold, other, best - RUNNER_UP)
        return [
            (kind, score)
            for kind, score in means.items()
            if score >= floor and (asks_form or kind in self.statements)
        ]

    def _names(self, kind: str, text: str) -> bool:
        """Whether ``text`` has one of ``kind``'s keywords."""
        pattern = self._keywords.get(kind)
        return pattern is not None and pattern.search(text) is not None

    def _scores(self, row: np.ndarray, text: str) -> dict[str, float]:
        """Every kind's score for one sentence (``other`` included)."""
        scores: dict[str, list[float]] = {}
        for label, value in zip(self._labels, row.tolist(), strict=True):
            scores.setdefault(label, []).append(value)
        means = {k: float(np.mean(sorted(v)[-self.top :])) for k, v in scores.items()}
        for kind, pattern in self._keywords.items():
            if pattern.search(text):
                means[kind] += KEYWORD_BONUS
        return means


def asks(sentence: str) -> bool:
    """Whether a sentence has the form of a question or a request: a question mark, a
    request's words ("please", "could you", "من فضلك", "هل" ...), or a question word or
    imperative opening it or one of its clauses ("which month", "OK, what is", "provide",
    "وش", "كم" ...). "Your bill for 2026-08 is 412.50 SAR." has none.

    >>> asks("Which month is the bill for"), asks("Your line is active and postpaid.")
    (True, False)
    >>> asks("ممكن رقم جوالك"), asks("خطك فعال ومفوتر."), asks("ما زلت أراجع الفاتورة.")
    (True, False, False)
    """
    return _asks(normalize(sentence))


def _asks(text: str) -> bool:
    if "?" in text or "؟" in text or _REQUEST_WORDS.search(text):
        return True
    opening = _LEAD_IN.sub("", text.strip())
    first = _FIRST_WORD.search(opening)
    if first is None or _STILL.match(opening):
        return False
    return _OPENING_WORDS.fullmatch(first.group()) is not None


def _with_antecedent(sentences: list[str], index: int) -> str:
    """A sentence as it is routed: a request whose object is a pronoun ("Please provide it to
    me.", "أعطني إياه") with the sentence before it, which names what "it" is (alone, that
    request was routed to the plan a model never asked about)."""
    sentence = sentences[index]
    if index and _PRONOUN.search(normalize(sentence)) and asks(sentence):
        return f"{sentences[index - 1]} {sentence}"
    return sentence


def split_sentences(message: str) -> list[str]:
    """The sentences of a message that have words, in order (at most
    :data:`ROUTED_SENTENCES`, from its first :data:`ROUTED_CHARS` characters)."""
    text = message[:ROUTED_CHARS]
    parts = (part.strip() for part in _SENTENCE_END.split(text))
    return [part for part in parts if _WORD.search(part)][:ROUTED_SENTENCES]


def split_clauses(sentence: str, end: re.Pattern[str] = _CLAUSE_END) -> list[str]:
    """A sentence's comma-separated clauses (or parts between ``end``) of at least two words
    (none without a comma)."""
    parts = [part.strip() for part in end.split(sentence)]
    clauses = [part for part in parts if len(_WORD.findall(part)) >= 2]
    return clauses if len(parts) > 1 else []


def load_prototypes(path: Path) -> dict[str, dict[str, list[str]]]:
    """A domain's prototype questions (``kinds: {kind: {en: [...], ar: [...]}}``), checked:
    every kind has questions in every language, and ``other`` is there."""
    document = parse_yaml(path.read_text(encoding="utf-8"), str(path))
    kinds = (document or {}).get("kinds")
    if not isinstance(kinds, dict) or OTHER not in kinds:
        raise CatalogError(str(path), "kinds", f"a mapping of kinds with {OTHER!r} is required")
    for kind, by_lang in kinds.items():
        for lang in LANGUAGES:
            questions = (by_lang or {}).get(lang)
            if not questions or not all(isinstance(q, str) and q.strip() for q in questions):
                raise CatalogError(str(path), f"kinds.{kind}.{lang}", "non-empty questions needed")
        keywords = (by_lang or {}).get("keywords", [])
        if not isinstance(keywords, list) or not all(isinstance(k, str) and k for k in keywords):
            raise CatalogError(str(path), f"kinds.{kind}.keywords", "a list of words needed")
    return kinds


def _best(asked: Sequence[list[tuple[str, float]]]) -> dict[str, float]:
    """Each kind's best score over some texts' asked kinds."""
    scores: dict[str, float] = {}
    for kinds in asked:
        for kind, score in kinds:
            scores[kind] = max(score, scores.get(kind, -1.0))
    return scores


def _all(by_lang: Mapping[str, Sequence[str]]) -> list[str]:
    return [question for lang in LANGUAGES for question in by_lang[lang]]
