"""Blueprint reliability: GPC-0, GPC-1, SD and BRS over the samples of one blueprint.

Definitions (TelcoAgent-Metrics; the SD and Levenshtein forms as documented in the reference):

* ``GPC-0 = (1/N) sum_i 1[P_i == G_i]`` -- exact gold-path consistency;
* ``GPC-1 = (1/N) sum_i 1[Lev(P_i, G_i) <= 1]`` -- near match, token-level edit distance <= 1;
* ``SD = mean_{i<j} Lev(P_i, P_j) / max(|P_i|, |P_j|)`` -- dispersion of the predicted chains;
* ``BRS = a1 * GPC-0 + a2 * GPC-1 + a3 * (1 - SD)`` with ``a1 + a2 + a3 = 1``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence
from itertools import combinations
from statistics import fmean
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict

from telcoenv.metrics.sequence import levenshtein

Chain = Sequence[str]


class BRSWeights(NamedTuple):
    """Weights of GPC-0, GPC-1 and (1 - SD) in BRS; they must sum to 1."""

    gpc0: float
    gpc1: float
    stability: float


#: Named weight sets: equal thirds (default) and the (0.5, 0.3, 0.2) of the published
#: re-implementation.
BRS_WEIGHTS = {"equal": BRSWeights(1 / 3, 1 / 3, 1 / 3), "paper": BRSWeights(0.5, 0.3, 0.2)}


def brs_weights(weights: str | Sequence[float] = "equal") -> BRSWeights:
    """Resolve a weight set by name or from three numbers summing to 1 (each in [0, 1])."""
    if isinstance(weights, str):
        if weights not in BRS_WEIGHTS:
            raise ValueError(f"unknown BRS weights {weights!r}; named sets: {sorted(BRS_WEIGHTS)}")
        return BRS_WEIGHTS[weights]
    values = tuple(float(w) for w in weights)
    if len(values) != 3 or any(w < 0 or w > 1 for w in values) or abs(sum(values) - 1) > 1e-9:
        raise ValueError(
            f"BRS weights must be three numbers in [0, 1] summing to 1, got {weights!r}"
        )
    return BRSWeights(*values)


def _pairs(predicted: Sequence[Chain], gold: Sequence[Chain]) -> list[tuple[Chain, Chain]]:
    if len(predicted) != len(gold):
        raise ValueError(f"{len(predicted)} predicted chains but {len(gold)} gold chains")
    if not predicted:
        raise ValueError("a blueprint needs at least one sample")
    return list(zip(predicted, gold, strict=True))


def gpc0(predicted: Sequence[Chain], gold: Sequence[Chain]) -> float:
    """Share of samples whose predicted chain equals its gold chain exactly.

    >>> gpc0([["a", "b"], ["a"]], [["a", "b"], ["a", "b"]])
    0.5
    """
    return fmean(list(p) == list(g) for p, g in _pairs(predicted, gold))


def gpc1(predicted: Sequence[Chain], gold: Sequence[Chain]) -> float:
    """Share of samples within token-level Levenshtein distance 1 of their gold chain.

    >>> gpc1([["a", "b"], ["a"], ["c"]], [["a", "b"], ["a", "b"], ["a", "b"]])
    0.6666666666666666
    """
    return fmean(levenshtein(p, g) <= 1 for p, g in _pairs(predicted, gold))


def sd(predicted: Sequence[Chain]) -> float:
    """Mean pairwise normalised Levenshtein distance between the predicted chains.

    ``Lev(P_i, P_j) / max(|P_i|, |P_j|)`` over all pairs ``i < j`` (two empty chains are at
    distance 0). A single sample has no pair and no dispersion: SD = 0.

    >>> sd([["a", "b"], ["a", "b"], ["a", "c"]])
    0.3333333333333333
    """
    if not predicted:
        raise ValueError("a blueprint needs at least one sample")
    distances = [
        levenshtein(p, q) / max(len(p), len(q)) if (p or q) else 0.0
        for p, q in combinations(predicted, 2)
    ]
    return fmean(distances) if distances else 0.0


def brs(
    gpc0_value: float, gpc1_value: float, sd_value: float, weights: str | Sequence[float] = "equal"
) -> float:
    """Blueprint Reliability Score ``a1*GPC-0 + a2*GPC-1 + a3*(1 - SD)``.

    >>> brs(1.0, 1.0, 0.0)
    1.0
    >>> round(brs(0.5, 1.0, 0.25, "paper"), 6)
    0.7
    """
    a = brs_weights(weights)
    return a.gpc0 * gpc0_value + a.gpc1 * gpc1_value + a.stability * (1 - sd_value)


class BlueprintReliability(BaseModel):
    """Reliability of one group (a blueprint, optionally per language)."""

    model_config = ConfigDict(frozen=True)

    group: tuple[Hashable, ...]
    samples: int
    gpc0: float
    gpc1: float
    sd: float
    brs: float


class ReliabilityReport(BaseModel):
    """Per-group scores and their means (the paper's blueprint-level table)."""

    model_config = ConfigDict(frozen=True)

    weights: BRSWeights
    groups: list[BlueprintReliability]
    mean_gpc0: float
    mean_gpc1: float
    mean_sd: float
    mean_brs: float


class ChainRecord(NamedTuple):
    """What reliability needs of one episode: its group and its predicted and gold chains."""

    blueprint_id: str
    language: str
    predicted: Chain
    gold: Chain


def reliability(
    records: Iterable[ChainRecord | object],
    *,
    by_language: bool = True,
    weights: str | Sequence[float] = "equal",
) -> ReliabilityReport:
    """Group episode records by blueprint (and language) and score each group.

    ``records`` are :class:`ChainRecord` tuples or any objects with ``blueprint_id``,
    ``language``, and ``predicted_chain``/``gold_tools`` (an ``EpisodeTrace``) or
    ``predicted``/``gold`` attributes. Means are unweighted over the groups.
    """
    resolved = brs_weights(weights)
    grouped: dict[tuple[Hashable, ...], list[tuple[Chain, Chain]]] = defaultdict(list)
    for record in records:
        predicted = getattr(record, "predicted_chain", None)
        predicted = getattr(record, "predicted", predicted)
        gold = getattr(record, "gold", None) or getattr(record, "gold_tools", None)
        if predicted is None or gold is None:
            raise TypeError(f"cannot read predicted and gold chains from {type(record).__name__}")
        key = (record.blueprint_id, record.language) if by_language else (record.blueprint_id,)
        grouped[key].append((list(predicted), list(gold)))
    if not grouped:
        raise ValueError("reliability needs at least one record")
    groups = []
    for key in sorted(grouped, key=repr):
        predicted, gold = zip(*grouped[key], strict=True)
        g0, g1, dispersion = gpc0(predicted, gold), gpc1(predicted, gold), sd(predicted)
        groups.append(
            BlueprintReliability(
                group=key,
                samples=len(predicted),
                gpc0=g0,
                gpc1=g1,
                sd=dispersion,
                brs=brs(g0, g1, dispersion, resolved),
            )
        )
    return ReliabilityReport(
        weights=resolved,
        groups=groups,
        mean_gpc0=fmean(g.gpc0 for g in groups),
        mean_gpc1=fmean(g.gpc1 for g in groups),
        mean_sd=fmean(g.sd for g in groups),
        mean_brs=fmean(g.brs for g in groups),
    )
