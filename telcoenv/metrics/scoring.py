"""Score an episode trace: IRA, MSC, EAP, SAS, RA, argument and answer accuracy, and turn the
scores as metrics (the reward built from them is :mod:`telcoenv.rewards`).

Scoring is a pure function of the trace (:func:`score_episode`), so a stored episode can be
re-scored later without the environment. :func:`score_episodes` batches the texts of many
episodes into one encoding call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from telcoenv.domains import answer_vocabulary
from telcoenv.embeddings import Embedder, get_embedder
from telcoenv.metrics.answers import answers_match
from telcoenv.metrics.arguments import argument_accuracy
from telcoenv.metrics.semantic import similarities
from telcoenv.metrics.sequence import eap, msc, sas
from telcoenv.trace import ChainKind, EpisodeTrace


class EpisodeMetrics(BaseModel):
    """The TelcoAgent-Metrics of one episode.

    ``ira`` and ``ra`` are ``None`` when no embedder was used; ``ra`` also when the episode has
    no reference summary (customer care, which is scored by its exact answer instead). ``args``
    is the argument accuracy of the gold calls (:mod:`telcoenv.metrics.arguments`); ``answer``
    whether the submitted answer matches the gold answer (:mod:`telcoenv.metrics.answers`),
    ``None`` when the counterpart asked no question. The predicted chain is the ``chain`` that
    MSC/EAP/SAS compared with the gold chain: ``executed`` (the calls that ran; the closed
    loop's default) or ``attempted`` (every attempt: the published open-loop definition).

    The outcome parts (:class:`~telcoenv.trace.Outcome`) are ``None`` for a trace graded before
    telcoenv had them: ``diagnosed``, ``fixed`` (``None`` also when the task changes nothing),
    ``required_steps`` (the share of the intent's milestones met), ``efficiency`` (EAP of the
    executed chain), ``format`` (the share of valid actions), ``harm`` (something outside the
    fault changed) and ``minefield`` (a forbidden event happened).
    """

    model_config = ConfigDict(frozen=True)

    ira: float | None
    msc: float
    eap: float
    sas: float
    ra: float | None
    resolved: bool | None  # verified resolution of the final state (None: not verified)
    args: float | None = None
    answer: bool | None = None
    predicted_chain: list[str]
    gold_chain: list[str]
    embedder: str | None
    language: str
    intent_list: bool
    submitted: bool
    chain: ChainKind = "executed"
    diagnosed: bool | None = None
    fixed: bool | None = None
    required_steps: float | None = None
    efficiency: float | None = None
    format: float | None = None
    harm: bool | None = None
    minefield: bool | None = None

    def component(self, name: str) -> float:
        value = getattr(self, name)
        if isinstance(value, bool):
            return 1.0 if value else 0.0
        if value is None:
            if name in ("ira", "ra") and self.embedder is None:
                raise ValueError(f"metric {name!r} needs an embedder; none was configured")
            raise ValueError(f"metric {name!r} does not apply to this episode")
        return float(value)


def _sequence_metrics(trace: EpisodeTrace, chain: ChainKind) -> dict[str, Any]:
    predicted, gold = trace.chain(chain), trace.gold_tools
    return {
        "msc": msc(predicted, gold),
        "eap": eap(predicted, gold),
        "sas": sas(predicted, gold),
        "predicted_chain": predicted,
        "gold_chain": gold,
        "chain": chain,
        "language": trace.language,
        "intent_list": trace.intent_list,
        "args": argument_accuracy(trace.gold_chain, trace.actions),
        "answer": _answer(trace) if trace.outcome is None else trace.outcome.answered,
        **_outcome_metrics(trace),
    }


def _outcome_metrics(trace: EpisodeTrace) -> dict[str, Any]:
    """The outcome parts of a graded trace; an older trace has only its verdict's resolved."""
    outcome = trace.outcome
    if outcome is None:
        return {
            "submitted": trace.submission is not None,
            "resolved": (trace.verification or {}).get("resolved"),
        }
    return {
        "submitted": outcome.submitted,
        "resolved": outcome.resolved,
        "diagnosed": outcome.diagnosed,
        "fixed": outcome.fixed,
        "required_steps": outcome.required_steps,
        "efficiency": outcome.efficiency,
        "format": outcome.format,
        "harm": outcome.collateral > 0,
        "minefield": any(outcome.minefields.values()),
    }


def _answer(trace: EpisodeTrace) -> bool | None:
    if trace.gold_answer is None:
        return None
    submitted = trace.submission.answer if trace.submission is not None else None
    return submitted is not None and answers_match(
        submitted, trace.gold_answer, vocabulary=answer_vocabulary(trace.domain)
    )


def text_pairs(trace: EpisodeTrace) -> list[tuple[str, str]]:
    """The (prediction, reference) texts of IRA and, when there is a reference summary, RA for
    one episode, in its language."""
    lang = trace.language
    submission = trace.submission
    pairs = [(submission.intent if submission else "", trace.gold_label[lang])]
    if lang in trace.gold_summary:
        pairs.append((submission.summary if submission else "", trace.gold_summary[lang]))
    return pairs


def score_episodes(
    traces: Sequence[EpisodeTrace],
    embedder: str | Embedder | None = "multilingual",
    chain: ChainKind = "executed",
) -> list[EpisodeMetrics]:
    """Score many traces; all intent and summary texts are embedded in one batch.

    IRA compares the submitted intent with the gold label, RA the submitted summary with the
    gold summary, both in the episode's language. An episode without a submission scores 0 on
    both. With ``embedder=None`` only the sequence metrics are computed. ``chain`` is the
    predicted chain MSC/EAP/SAS compare (see :class:`EpisodeMetrics`).
    """
    if embedder is None:
        return [
            EpisodeMetrics(ira=None, ra=None, embedder=None, **_sequence_metrics(t, chain))
            for t in traces
        ]
    resolved = get_embedder(embedder)
    per_trace = [text_pairs(trace) for trace in traces]
    scores = iter(similarities([pair for pairs in per_trace for pair in pairs], resolved))
    metrics = []
    for trace, pairs in zip(traces, per_trace, strict=True):
        ira = next(scores)
        ra = next(scores) if len(pairs) > 1 else None
        metrics.append(
            EpisodeMetrics(
                ira=ira, ra=ra, embedder=resolved.name, **_sequence_metrics(trace, chain)
            )
        )
    return metrics


def score_episode(
    trace: EpisodeTrace,
    embedder: str | Embedder | None = "multilingual",
    chain: ChainKind = "executed",
) -> EpisodeMetrics:
    """Score one stored episode trace without running the environment."""
    return score_episodes([trace], embedder, chain)[0]
