"""Grading: the outcome of a finished episode, from the domain's verdict and the trace.

The domain checks the final state (``Domain.verify``): whether the fault is removed (``fixed``),
whether the exact answer was given (``answered``) and what changed outside the fault
(``collateral_changes``), with the intent's domain-specific minefields. Grading adds what every
domain shares and decides ``resolved``:

* **submitted**: a valid ``submit_resolution`` ended the episode. A run cut off by the step
  budget (or any other limit) is never resolved, whatever its state: closing the case is part
  of the task.
* **diagnosed**: the submitted intent names the episode's intent, by its label, key, a
  documented synonym or (with an embedder) as the unambiguous nearest label
  (:mod:`telcoenv.metrics.diagnosis`). A list of intents names none.
* **milestones** and **minefields**: the intent's required and forbidden events
  (:mod:`telcoenv.events`), declared in ``intents.yaml``.
* **efficiency** (EAP of the executed chain) and **format** (the share of valid actions).

An episode is resolved when it was submitted, diagnosed, fixed (where the task asks for a
change), answered (where the counterpart asked a question), changed nothing outside the fault and
triggered no minefield. The :class:`~telcoenv.trace.Outcome` says which part failed, in words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from telcoenv.domains import answer_vocabulary
from telcoenv.errors import EmbedderUnavailableError
from telcoenv.metrics.answers import answers_match
from telcoenv.metrics.sequence import eap, lcs_length
from telcoenv.trace import ActionRecord, EpisodeTrace, Outcome

#: Record kinds that are the agent's own actions (messages are always valid; actions after the
#: end are not part of the episode).
_COUNTED = frozenset({"tool_call", "submit", "invalid"})


def action_format(actions: Sequence[ActionRecord]) -> float:
    """The share of the agent's actions (tool calls, submissions, unparsable actions) that were
    valid; 1.0 when it took none."""
    counted = [a for a in actions if a.kind in _COUNTED]
    if not counted:
        return 1.0
    return sum(a.valid for a in counted) / len(counted)


def effective_chain(trace: EpisodeTrace) -> list[str]:
    """The executed chain without the writes that changed nothing (a write of the value
    already there, a dry run): the steps that did something."""
    return [
        a.tool
        for a in trace.actions
        if a.kind == "tool_call"
        and a.tool is not None
        and a.valid
        and not a.remeasure
        and a.changed is not False
    ]


def gold_steps_done(trace: EpisodeTrace) -> float:
    """The share of the gold chain's steps done in its order by calls that did something (the
    default milestones of an intent that declares none)."""
    gold = trace.gold_tools
    return lcs_length(effective_chain(trace), gold) / len(gold) if gold else 1.0


def _fixed(verdict: Mapping[str, Any]) -> bool | None:
    """The domain's "fault removed" (a domain that reports only ``resolved``: that)."""
    if "fixed" in verdict:
        return verdict["fixed"]
    return verdict.get("resolved")


def _answered(trace: EpisodeTrace, verdict: Mapping[str, Any]) -> bool | None:
    """The domain's judgement of the answer; a domain that gives none: the answer matcher's
    (``None``: no question was asked)."""
    for key in ("answered", "answer_correct"):
        if verdict.get(key) is not None:
            return bool(verdict[key])
    if trace.gold_answer is None:
        return None
    submitted = trace.submission.answer if trace.submission is not None else None
    return submitted is not None and answers_match(
        submitted, trace.gold_answer, vocabulary=answer_vocabulary(trace.domain)
    )


def grade(
    trace: EpisodeTrace,
    verdict: Mapping[str, Any],
    intents: Sequence[Any],
    *,
    milestones: Mapping[str, bool] | None = None,
    required: Sequence[str] = (),
    minefields: Mapping[str, bool] | None = None,
    embedder: Any = None,
) -> Outcome:
    """The outcome of a finished episode (``trace`` ended; ``verdict`` from ``Domain.verify``).

    ``intents`` are the domain's intents (the diagnosis is judged among them); ``milestones``
    and ``minefields`` the intent's events as :mod:`telcoenv.events` evaluated them (``None``:
    the intent declares no milestone, and the gold chain's steps done stand for them), and
    ``required`` the names of the milestones a resolution needs.
    """
    submission = trace.submission
    submitted = submission is not None and trace.terminated
    if submission is not None:
        try:  # WIP: the diagnosis module is being written; exact labels until it lands
            from telcoenv.metrics.diagnosis import match_diagnosis
        except ImportError:
            match_diagnosis = None
        if match_diagnosis is None:
            from telcoenv.text import normalize

            gold = next(i for i in intents if i.key == trace.intent)
            names = {normalize(n).strip() for n in (gold.label.en, gold.label.ar, gold.key)}
            diagnosed = normalize(submission.intent).strip() in names
            diagnosis = "label" if diagnosed else "none"
        else:
            try:
                match = match_diagnosis(submission.intent, trace.intent, intents, embedder=embedder)
            except EmbedderUnavailableError:  # judged on its words alone; never dies
                match = match_diagnosis(submission.intent, trace.intent, intents)
            diagnosed, diagnosis = match.matched, match.how
    else:
        diagnosed, diagnosis = False, "no submission"
    fixed, answered = _fixed(verdict), _answered(trace, verdict)
    collateral = len(verdict.get("collateral_changes", ()))
    met = dict(milestones or {})
    triggered = {**dict(minefields or {}), **dict(verdict.get("minefields", {}))}
    share = sum(met.values()) / len(met) if met else gold_steps_done(trace)
    reasons = _unresolved_because(
        trace, verdict, submitted, diagnosed, diagnosis, fixed, answered, collateral, triggered
    )
    reasons += [f"milestone not met: {name}" for name in required if not met.get(name)]
    return Outcome(
        submitted=submitted,
        diagnosed=diagnosed,
        diagnosis=diagnosis,
        fixed=fixed,
        answered=answered,
        collateral=collateral,
        milestones=met,
        required=[name for name in required if name in met],
        minefields=triggered,
        required_steps=share,
        efficiency=eap(trace.executed_chain, trace.gold_tools),
        format=action_format(trace.actions),
        resolved=not reasons,
        unresolved_because=reasons,
    )


def with_diagnosis(outcome: Outcome, match: Any) -> Outcome:
    """``outcome`` with its diagnosis judged again (by meaning, where the words named no intent:
    ``telcoenv evaluate``'s scoring process, which holds the embedder) and resolved with it."""
    reasons = [r for r in outcome.unresolved_because if not r.startswith("diagnosis:")]
    if not match.matched:
        return outcome
    return outcome.model_copy(
        update={
            "diagnosed": True,
            "diagnosis": match.how,
            "resolved": not reasons,
            "unresolved_because": reasons,
        }
    )


def needs_meaning(outcome: Outcome | None, submitted: str | None) -> bool:
    """Whether a diagnosis is left for the embedder: submitted, and naming no intent by its
    words (a list or a negation is decided by words alone)."""
    return outcome is not None and submitted is not None and outcome.diagnosis == "none"


def failed_checks(verdict: Mapping[str, Any]) -> list[str]:
    """The names of a verdict's failed checks (a dict of name -> passed, or a list of
    ``{"name", "passed"}``), the collateral check left out (harm is reported apart)."""
    checks = verdict.get("checks") or {}
    pairs = (
        checks.items()
        if isinstance(checks, Mapping)
        else ((c.get("name", "?"), c.get("passed")) for c in checks if isinstance(c, Mapping))
    )
    return [str(name) for name, passed in pairs if not passed and name != NO_COLLATERAL]


#: The name of the network verdict's check that nothing outside the fault changed.
NO_COLLATERAL = "no collateral change"


def _unresolved_because(
    trace: EpisodeTrace,
    verdict: Mapping[str, Any],
    submitted: bool,
    diagnosed: bool,
    diagnosis: str,
    fixed: bool | None,
    answered: bool | None,
    collateral: int,
    minefields: Mapping[str, bool],
) -> list[str]:
    """Why the episode is not resolved, one reason per failed part (empty: resolved)."""
    reasons = []
    if not submitted:
        reasons.append(
            "no submission: the episode ended without submit_resolution (a truncated run earns "
            "no terminal reward)"
        )
    elif not diagnosed:
        said = trace.submission.intent if trace.submission else ""
        what = (
            "names more than one intent"
            if diagnosis == "ambiguous"
            else "does not name the episode's intent"
        )
        reasons.append(f"diagnosis: the submitted intent {said[:80]!r} {what}")
    if fixed is False:
        failed = [name for name in failed_checks(verdict) if name != "answer"]
        detail = f" ({'; '.join(failed)})" if failed else ""
        reasons.append(f"not fixed: the final state does not show the fault removed{detail}")
    if answered is False:
        reasons.append("answer: the submitted answer is not the one the data gives")
    if collateral:
        reasons.append(f"harm: {collateral} change(s) outside the fault")
    reasons += [f"minefield: {name}" for name, hit in minefields.items() if hit]
    return reasons
