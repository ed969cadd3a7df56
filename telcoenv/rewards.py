"""Rewards: the terminal reward of a finished episode, and per-step shaping.

* **The terminal reward** is paid at the last step: ``"outcome"`` (the default, for training;
  see :func:`outcome_components`), ``"resolved"``, any metric of
  :class:`~telcoenv.metrics.scoring.EpisodeMetrics` (``"sas"``, ``"ira"``, ...: evaluation
  metrics, kept to reproduce the published benchmark), a weighted sum of them, or a callable.
  A run that ends without a submission (the step budget ran out) earns no terminal reward
  with any named reward; a callable decides for itself (``metrics.submitted``).
* **Shaped** (``reward_mode="shaped"``): each step also gets the :class:`Shaping` terms of the
  actions it contains: a penalty per invalid action (malformed, unknown tool, bad arguments,
  refused call), a penalty per call of a distractor tool, and a credit per gold-chain step
  done in order (a call that ran; a write only when it changed something; re-measurements after
  a change do not count). The running sum of these terms stays within
  ``[-max_step_total, +max_step_total]``. The last step adds a bonus when the episode is
  resolved.

**Order invariants.** With ``"outcome"`` or ``"resolved"``, sparse or shaped: a resolved episode
of a task earns more than any unresolved episode of the same task, and an episode whose writes
changed nothing earns no more than one that made the same reads and submitted the same report
without writing. Sparse: ``"outcome"`` pays a resolved episode at least
:data:`RESOLVED_FLOOR` and an unresolved one at most :data:`UNRESOLVED_CAP`; ``"resolved"`` 1
and 0. Shaped: the step terms add at most ``max_step_total`` and take at most as much, so the
order holds when ``2 * max_step_total < gap + resolution_bonus`` (the gap: 0.1 for
``"outcome"``, 1 for ``"resolved"``); :func:`check_order_invariant` refuses shaping weights that
would break it. A write that changed nothing earns no step credit and no required step, so it
cannot buy what a read-only episode does not get.

:func:`episode_rewards` recomputes the per-step rewards and their breakdown from a stored
:class:`~telcoenv.trace.EpisodeTrace`, so a trainer can use it as an external reward function;
the environment uses the same :class:`ShapingTracker` step by step, so both agree exactly.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import numbers
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from telcoenv.catalog import Catalog
from telcoenv.domains import get_domain
from telcoenv.errors import RewardError
from telcoenv.metrics import Embedder
from telcoenv.metrics.scoring import EpisodeMetrics, score_episode
from telcoenv.policies import GoldProgress
from telcoenv.trace import ActionRecord, EpisodeTrace

#: The default terminal reward (see :func:`outcome_components`).
DEFAULT_REWARD = "outcome"
#: Names a reward may use alone or in a dict of weights: the outcome reward and the metrics.
REWARD_COMPONENTS = (
    "outcome",
    "resolved",
    "diagnosed",
    "fixed",
    "answer",
    "required_steps",
    "efficiency",
    "format",
    "ira",
    "msc",
    "eap",
    "sas",
    "ra",
    "args",
)
RewardMode = Literal["sparse", "shaped"]
SHAPING_TERMS = ("invalid_action", "distractor_call", "gold_step")

#: The outcome reward of a resolved episode is at least this ...
RESOLVED_FLOOR = 0.6
#: ... and that of an unresolved one at most this.
UNRESOLVED_CAP = 0.5
#: The gap between the two, per reward that guarantees one (see check_order_invariant).
ORDER_GAPS = {"outcome": RESOLVED_FLOOR - UNRESOLVED_CAP, "resolved": 1.0}
# A resolved episode's outcome reward: its outcome (diagnosis and the fix or answer: together
# RESOLVED_FLOOR) and how it got there (the rest, up to 1.0).
_RESOLVED_WEIGHTS = {
    "diagnosis": 0.2,
    "work": 0.4,
    "required_steps": 0.16,
    "efficiency": 0.14,
    "format": 0.10,
}
# An unresolved episode's partial credit (times UNRESOLVED_CAP): the parts it got right. No
# efficiency or format here: a shorter or tidier failure is not a better one.
_PARTIAL_WEIGHTS = {"diagnosis": 0.35, "work": 0.35, "required_steps": 0.30}


# --- the terminal reward --------------------------------------------------------------------------


RewardFunction = Callable[[EpisodeMetrics, EpisodeTrace], float]
RewardSpec = str | Mapping[str, float] | RewardFunction


def _callable_name(function: Callable[..., Any]) -> str:
    return getattr(function, "__qualname__", None) or repr(function)


def _weight(name: str, value: Any) -> float:
    """One reward weight as a float; a bool, a non-number, NaN, inf or a negative is refused."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"reward weight {name!r} must be a number, got {value!r}")
    try:
        weight = float(value)
    except OverflowError:  # an integer past float's range
        weight = math.inf
    # Every metric is "higher is better": a negative weight would reward failure.
    if not math.isfinite(weight) or weight < 0:
        raise ValueError(f"reward weight {name!r} must be a finite number >= 0, got {value!r}")
    return weight


def check_reward(spec: RewardSpec, has_embedder: bool) -> RewardSpec:
    """Validate a reward specification; return it with a dict of weights copied as floats.

    Raises ValueError naming the problem: an unknown metric, a weight that is not a finite
    number >= 0 (a bool, NaN, inf, a negative), weights that are all zero, a callable that
    cannot take ``(metrics, trace)``, or a reward on IRA or RA without an embedder.
    """
    if callable(spec):
        try:
            signature = inspect.signature(spec)
        except (TypeError, ValueError):  # some builtins have no signature: checked when called
            return spec
        try:
            signature.bind(None, None)
        except TypeError as exc:
            raise ValueError(
                f"reward function {_callable_name(spec)} must accept (metrics, trace): {exc}"
            ) from None
        return spec
    if isinstance(spec, str):
        weights = {spec: 1.0}
    elif isinstance(spec, Mapping):
        weights = dict(spec)
    else:
        raise ValueError(
            f"reward must be a metric name, a dict of weights or a callable, got {spec!r}"
        )
    unknown = [name for name in weights if name not in REWARD_COMPONENTS]
    if unknown or not weights:
        problem = f"unknown reward component(s) {unknown}" if unknown else "no reward weights"
        raise ValueError(
            f"{problem}; use one of {list(REWARD_COMPONENTS)}, a dict of weights, or a callable"
        )
    weights = {name: _weight(name, value) for name, value in weights.items()}
    if not any(weights.values()):
        raise ValueError(f"reward weights are all zero: {weights}; the reward would always be 0")
    if not has_embedder and {"ira", "ra"} & set(weights):
        raise ValueError("rewards on 'ira' or 'ra' need an embedder (embedder=None was given)")
    return spec if isinstance(spec, str) else weights


def _call(function: RewardFunction, metrics: EpisodeMetrics, trace: EpisodeTrace) -> float:
    """A user reward function's value; any failure is a RewardError that names the function."""
    name = _callable_name(function)
    try:
        value = function(metrics, trace)
    except Exception as exc:  # the user's code: report whatever it raised, chained
        raise RewardError(f"reward function {name} raised {type(exc).__name__}: {exc}") from exc
    reward = math.nan
    if not isinstance(value, str | bytes):  # float("0.5") would pass text off as a number
        with contextlib.suppress(TypeError, ValueError, OverflowError):
            reward = float(value)  # numbers, bools and numpy or torch scalars
    if not math.isfinite(reward):
        raise RewardError(f"reward function {name} returned {value!r}, not a finite number")
    return reward


def outcome_components(metrics: EpisodeMetrics) -> dict[str, float]:
    """The outcome reward of a finished episode, by named part (the reward is their sum).

    * No submission (the run was cut off): nothing (``{"no_submission": 0.0}``). A minefield
      triggered: nothing (``{"minefield": 0.0}``).
    * Resolved: ``diagnosis`` 0.2 and the ``remediation`` and/or ``answer`` 0.4 (together
      :data:`RESOLVED_FLOOR`), then ``required_steps`` 0.16 x the share of milestones met,
      ``efficiency`` 0.14 x EAP of the executed chain and ``format`` 0.10 x the share of valid
      actions: 0.6 to 1.0.
    * Unresolved: :data:`UNRESOLVED_CAP` x (0.35 ``diagnosis`` + 0.35 ``remediation``/``answer``
      + 0.30 ``required_steps``) for the parts it got right; ``harm`` takes half of that back
      when something outside the fault changed: 0 to 0.5.

    A task with neither a change nor a question gives the work's weight to the diagnosis.
    Raises ValueError for a trace graded before outcomes existed.
    """
    if metrics.diagnosed is None or metrics.required_steps is None:
        raise ValueError("the 'outcome' reward needs an episode graded by telcoenv >= 0.9")
    if not metrics.submitted:
        return {"no_submission": 0.0}
    if metrics.minefield:
        return {"minefield": 0.0}
    work = {
        name: float(value)
        for name, value in (("remediation", metrics.fixed), ("answer", metrics.answer))
        if value is not None
    }
    if metrics.resolved:
        weights, scale = _RESOLVED_WEIGHTS, 1.0
        done = {"diagnosis": 1.0, **work}
    else:
        weights, scale = _PARTIAL_WEIGHTS, UNRESOLVED_CAP
        done = {"diagnosis": float(bool(metrics.diagnosed)), **work}
    parts = {"diagnosis": scale * weights["diagnosis"] * done["diagnosis"]}
    if work:
        for name in work:
            parts[name] = scale * weights["work"] * done[name] / len(work)
    else:
        parts["diagnosis"] += scale * weights["work"] * done["diagnosis"]
    parts["required_steps"] = scale * weights["required_steps"] * metrics.required_steps
    if metrics.resolved:
        parts["efficiency"] = weights["efficiency"] * (metrics.efficiency or 0.0)
        parts["format"] = weights["format"] * (metrics.format or 0.0)
    elif metrics.harm:
        parts["harm"] = -0.5 * sum(parts.values())
    return parts


def outcome_record(metrics: EpisodeMetrics) -> dict[str, Any] | None:
    """What a results database keeps of an episode's outcome: its parts (for reports and for a
    trainer that reweights them) and the outcome reward's named parts (None: a trace graded
    before outcomes existed)."""
    if metrics.diagnosed is None or metrics.required_steps is None:
        return None
    parts = outcome_components(metrics)
    return {
        "submitted": metrics.submitted,
        "diagnosed": metrics.diagnosed,
        "fixed": metrics.fixed,
        "answered": metrics.answer,
        "required_steps": metrics.required_steps,
        "efficiency": metrics.efficiency,
        "format": metrics.format,
        "harm": metrics.harm,
        "minefield": metrics.minefield,
        "reward": math.fsum(parts.values()),
        "reward_parts": parts,
    }


def _value(name: str, metrics: EpisodeMetrics) -> float:
    if name == "outcome":
        return math.fsum(outcome_components(metrics).values())
    return metrics.component(name)


def reward_from(spec: RewardSpec, metrics: EpisodeMetrics, trace: EpisodeTrace) -> float:
    """The reward of a finished episode: the outcome reward, one metric, a weighted sum, or a
    user callable.

    A run that ended without a submission earns 0 with every named reward. A callable that
    raises, or returns something other than a finite number, raises
    :class:`~telcoenv.errors.RewardError` naming it. A metric that does not apply to the
    episode raises ValueError.
    """
    if callable(spec):
        return _call(spec, metrics, trace)
    if not metrics.submitted:
        return 0.0
    weights = {spec: 1.0} if isinstance(spec, str) else spec
    return float(sum(weight * _value(name, metrics) for name, weight in weights.items()))


# --- shaping --------------------------------------------------------------------------------------


# Strict: a bool or a string is not a weight; NaN and inf would poison every return.
_Penalty = Annotated[float, Field(le=0, strict=True, allow_inf_nan=False)]
_Credit = Annotated[float, Field(ge=0, strict=True, allow_inf_nan=False)]


class Shaping(BaseModel):
    """Weights of the shaped reward terms (used with ``reward_mode="shaped"``).

    Every weight is a finite number. Penalties are written as negative weights and credits as
    positive ones; a weight of the wrong sign (rewarding an invalid action, penalising a gold
    step) is refused, and 0 switches a term off.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    invalid_action: _Penalty = -0.05  # per invalid action or refused tool call
    distractor_call: _Penalty = -0.02  # per call of a distractor tool
    gold_step: _Credit = 0.1  # per gold-chain step done in order (a write: when it changed)
    resolution_bonus: _Credit = 0.5  # at the end, when the verified resolution holds
    # The running sum of the step terms stays within +-this: what the steps can add or take
    # is bounded, so that they never reorder resolved and unresolved episodes.
    max_step_total: _Credit = 0.25


class ShapingTracker:
    """Shaping terms of an episode, fed the action records of one step at a time."""

    def __init__(self, gold_tools: list[str], distractors: Iterable[str], shaping: Shaping):
        self.progress = GoldProgress(list(gold_tools))
        self.distractors = frozenset(distractors)
        self.shaping = shaping
        self.total = 0.0  # the step terms paid so far

    def step(self, records: Iterable[ActionRecord]) -> dict[str, float]:
        """The weighted terms of the actions taken in one step (only non-zero terms), cut so
        that the running sum stays within ``+-max_step_total``."""
        counts = dict.fromkeys(SHAPING_TERMS, 0)
        for record in records:
            if not record.valid and record.kind != "after_end":
                counts["invalid_action"] += 1
            if record.kind != "tool_call" or record.tool is None:
                continue
            if record.tool in self.distractors:
                counts["distractor_call"] += 1
            if self.progress.advance(record):
                counts["gold_step"] += 1
        terms = {
            term: count * getattr(self.shaping, term) for term, count in counts.items() if count
        }
        return self._bounded(terms)

    def _bounded(self, terms: dict[str, float]) -> dict[str, float]:
        """``terms`` scaled down where they would take the running sum past the bound."""
        bound = self.shaping.max_step_total
        wanted = sum(terms.values())
        allowed = min(max(self.total + wanted, -bound), bound) - self.total
        if wanted and allowed != wanted:
            factor = allowed / wanted if (allowed * wanted) > 0 else 0.0
            terms = {term: value * factor for term, value in terms.items()}
            terms = {term: value for term, value in terms.items() if value}
        self.total += sum(terms.values())
        return terms


class EpisodeRewards(BaseModel):
    """Per-step rewards of an episode and the sum of each term over the episode."""

    model_config = ConfigDict(frozen=True)

    mode: RewardMode
    total: float
    per_step: list[float]
    components: dict[str, float]


def check_shaping(shaping: Shaping | Mapping[str, float] | None) -> Shaping:
    """A :class:`Shaping` from weights (missing terms keep their default).

    Raises TypeError when ``shaping`` is not a mapping, and ValueError naming every unknown
    term and every weight that is not a finite number of the term's sign.
    """
    if shaping is None:
        return Shaping()
    if isinstance(shaping, Shaping):
        return shaping
    if not isinstance(shaping, Mapping):
        raise TypeError(f"shaping must be a Shaping or a dict of weights, got {shaping!r}")
    try:
        return Shaping.model_validate(dict(shaping))
    except ValidationError as exc:  # one line per problem instead of pydantic's report
        problems = [
            f"{'.'.join(map(str, error['loc']))}: {error['msg']} (got {error['input']!r})"
            for error in exc.errors()
        ]
        raise ValueError("; ".join(problems)) from None


def check_order_invariant(spec: RewardSpec, mode: RewardMode, shaping: Shaping) -> None:
    """Refuse shaping weights under which an unresolved episode could out-earn a resolved one
    with a reward that guarantees the order (``"outcome"``, ``"resolved"``): the step terms
    move an episode's return by at most ``max_step_total`` either way."""
    gap = ORDER_GAPS.get(spec) if isinstance(spec, str) else None
    if mode != "shaped" or gap is None:
        return
    if 2 * shaping.max_step_total >= gap + shaping.resolution_bonus:
        raise ValueError(
            f"shaping would let an unresolved episode out-earn a resolved one with reward "
            f"{spec!r}: 2 x max_step_total ({shaping.max_step_total}) must be below the reward's "
            f"gap ({gap}) + resolution_bonus ({shaping.resolution_bonus})"
        )


def terminal_components(
    spec: RewardSpec,
    reward: float,
    metrics: EpisodeMetrics,
    mode: RewardMode,
    shaping: Shaping,
) -> dict[str, float]:
    """The reward terms of the last step: the terminal reward (the outcome reward by part),
    and, shaped, the bonus of a resolved episode."""
    components = outcome_components(metrics) if spec == "outcome" else {"terminal": reward}
    if mode == "shaped" and metrics.resolved and metrics.submitted:
        components["resolution_bonus"] = shaping.resolution_bonus
    return components


def episode_rewards(
    trace: EpisodeTrace,
    *,
    reward: RewardSpec = DEFAULT_REWARD,
    mode: RewardMode = "sparse",
    shaping: Shaping | Mapping[str, float] | None = None,
    embedder: str | Embedder | None = None,
    catalog: Catalog | None = None,
) -> EpisodeRewards:
    """Recompute the rewards of a finished episode from its trace, as the environment gave them.

    ``reward``, ``mode`` and ``shaping`` mean what they mean for ``TelcoEnv``. The trace must be
    finished (terminated or truncated). Usable as an external reward function.
    """
    if not (trace.terminated or trace.truncated):
        raise ValueError(f"episode {trace.episode_id} is not finished; nothing to reward yet")
    reward = check_reward(reward, embedder is not None)
    weights = check_shaping(shaping)
    # The episode's own domain: a care distractor is no network tool, and vice versa.
    tools = (catalog or get_domain(trace.domain).catalog).tools
    distractors = [name for name, spec in tools.items() if spec.kind == "distractor"]
    tracker = ShapingTracker(trace.gold_tools, distractors, weights)
    steps: dict[int, list[ActionRecord]] = {}
    for record in trace.actions:
        if record.kind != "after_end":
            steps.setdefault(record.step, []).append(record)
    totals: dict[str, float] = {}
    per_step = []
    for step in sorted(steps):
        terms = tracker.step(steps[step]) if mode == "shaped" else {}
        per_step.append(math.fsum(terms.values()))
        for term, value in terms.items():
            totals[term] = totals.get(term, 0.0) + value
    metrics = score_episode(trace, embedder)
    final = terminal_components(reward, reward_from(reward, metrics, trace), metrics, mode, weights)
    for term, value in final.items():
        totals[term] = totals.get(term, 0.0) + value
    if per_step:
        per_step[-1] = math.fsum([per_step[-1], *final.values()])
    return EpisodeRewards(
        mode=mode, total=math.fsum(per_step), per_step=per_step, components=totals
    )
