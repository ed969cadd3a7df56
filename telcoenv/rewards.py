"""Reward modes: sparse terminal (default) or shaped, with the same arithmetic inside and outside
the environment.

* **Sparse**: every step gets 0 except the last, which gets the terminal reward: a metric, a
  weighted sum of metrics or a callable (``reward=`` of :class:`~telcoenv.env.TelcoEnv`).
* **Shaped**: each step also gets the :class:`Shaping` terms of the actions it contains: a penalty
  per invalid action (malformed, unknown tool, bad arguments, refused call), a penalty per call of
  a distractor tool, and a credit per gold-chain step matched in order (a call of the next gold
  tool; re-measurements after a change do not count). The last step adds a bonus when the
  verified resolution holds.

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
from telcoenv.trace import ActionRecord, EpisodeTrace

#: Metric names a weighted reward may combine.
REWARD_COMPONENTS = ("ira", "msc", "eap", "sas", "ra", "resolved", "args", "answer")
RewardMode = Literal["sparse", "shaped"]
SHAPING_TERMS = ("invalid_action", "distractor_call", "gold_step")


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


def reward_from(spec: RewardSpec, metrics: EpisodeMetrics, trace: EpisodeTrace) -> float:
    """The reward of a finished episode: one metric, a weighted sum, or a user callable.

    A callable that raises, or returns something other than a finite number, raises
    :class:`~telcoenv.errors.RewardError` naming it. A metric that does not apply to the
    episode raises ValueError.
    """
    if callable(spec):
        return _call(spec, metrics, trace)
    weights = {spec: 1.0} if isinstance(spec, str) else spec
    return float(sum(weight * metrics.component(name) for name, weight in weights.items()))


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
    gold_step: _Credit = 0.1  # per gold-chain step matched in order
    resolution_bonus: _Credit = 0.5  # at the end, when the verified resolution holds


class ShapingTracker:
    """Shaping terms of an episode, fed the action records of one step at a time."""

    def __init__(self, gold_tools: list[str], distractors: Iterable[str], shaping: Shaping):
        self.gold, self.next_gold = gold_tools, 0
        self.distractors = frozenset(distractors)
        self.shaping = shaping

    def step(self, records: Iterable[ActionRecord]) -> dict[str, float]:
        """The weighted terms of the actions taken in one step (only non-zero terms)."""
        counts = dict.fromkeys(SHAPING_TERMS, 0)
        for record in records:
            if not record.valid and record.kind != "after_end":
                counts["invalid_action"] += 1
            if record.kind != "tool_call" or record.tool is None:
                continue
            if record.tool in self.distractors:
                counts["distractor_call"] += 1
            matches = self.next_gold < len(self.gold) and record.tool == self.gold[self.next_gold]
            if record.valid and not record.remeasure and matches:
                counts["gold_step"] += 1
                self.next_gold += 1
        return {
            term: count * getattr(self.shaping, term) for term, count in counts.items() if count
        }


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


def terminal_components(
    reward: float, resolved: bool | None, mode: RewardMode, shaping: Shaping
) -> dict[str, float]:
    """The reward terms of the last step: the terminal reward and, shaped, the bonus."""
    components = {"terminal": reward}
    if mode == "shaped" and resolved:
        components["resolution_bonus"] = shaping.resolution_bonus
    return components


def episode_rewards(
    trace: EpisodeTrace,
    *,
    reward: RewardSpec = "sas",
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
        per_step.append(sum(terms.values()))
        for term, value in terms.items():
            totals[term] = totals.get(term, 0.0) + value
    metrics = score_episode(trace, embedder)
    resolved = (trace.verification or {}).get("resolved")
    final = terminal_components(reward_from(reward, metrics, trace), resolved, mode, weights)
    for term, value in final.items():
        totals[term] = totals.get(term, 0.0) + value
    if per_step:
        per_step[-1] += sum(final.values())
    return EpisodeRewards(mode=mode, total=sum(per_step), per_step=per_step, components=totals)
