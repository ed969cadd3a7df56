"""Sample a blueprint's KPIs inside their ranges, honouring distributions and dependencies.

Contract (the paper's guardrail): every sampled value ``v`` of a KPI satisfies
``min <= v <= max`` of its blueprint constraint, also after rounding. Randomness comes only from
the ``numpy.random.Generator`` passed in.

Dependencies:

* ``depends_on: X, corr: positive|negative`` -- the KPI's position inside its range follows X's
  position inside X's range (or its mirror image), blended with noise:
  ``u = strength * u_X' + (1 - strength) * U(0, 1)``.
* ``corr_with: X, slope: s`` -- a linear relation in natural units around the range centres,
  ``v = mid + s * (x - mid_X) + noise``, the noise kept inside the range.
* Implicit couplings supplied by the domain (e.g. throughput falls with PRB load) add parents to
  KPIs without a ``corr_with`` relation, when the parent is in the blueprint and no cycle
  results; a KPI with several parents follows their mean position.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from telcoenv.domains.network.models import Blueprint, KPIConstraint

# (child KPI, parent KPI, sign): physics the domain wants respected when a blueprint is silent.
Coupling = tuple[str, str, int]

IMPLICIT_STRENGTH = 0.6


@dataclass(frozen=True, slots=True)
class _Step:
    name: str
    rule: KPIConstraint
    parents: tuple[tuple[str, int], ...]  # (parent, sign) for depends_on-style blending
    strength: float
    digits: int
    grid: tuple[float, ...] | None  # legal values (e.g. 3GPP TTT steps) inside [min, max]


@dataclass(frozen=True, slots=True)
class SamplingPlan:
    """A blueprint's KPIs in dependency order, compiled once and reused for every episode."""

    steps: tuple[_Step, ...]


def _order(
    constraints: Mapping[str, KPIConstraint], edges: Mapping[str, list[tuple[str, int]]]
) -> list[str]:
    """Topological order that keeps the blueprint's order wherever dependencies allow it."""
    done: list[str] = []

    def visit(name: str) -> None:
        if name in done:
            return
        for parent, _ in edges.get(name, ()):
            visit(parent)
        rule = constraints[name]
        if rule.corr_with:
            visit(rule.corr_with)
        done.append(name)

    for name in constraints:
        visit(name)
    return done


def _reaches(
    start: str,
    target: str,
    constraints: Mapping[str, KPIConstraint],
    edges: Mapping[str, list[tuple[str, int]]],
) -> bool:
    stack, seen = [start], set()
    while stack:
        node = stack.pop()
        if node == target:
            return True
        if node in seen:
            continue
        seen.add(node)
        stack.extend(parent for parent, _ in edges.get(node, ()))
        if constraints[node].corr_with:
            stack.append(constraints[node].corr_with)
    return False


def compile_plan(
    blueprint: Blueprint,
    couplings: Sequence[Coupling] = (),
    digits: Callable[[str], int] = lambda name: 4,
    grids: Mapping[str, Sequence[float]] | None = None,
) -> SamplingPlan:
    """Compile the sampling order and parents of a blueprint.

    ``digits(name)`` gives the number of decimals a KPI is stored with; ``grids`` maps a KPI to
    the legal values it must snap to (only those inside the KPI's range are used).
    """
    constraints = blueprint.constraints
    edges: dict[str, list[tuple[str, int]]] = {}
    implicit: set[str] = set()
    for name, rule in constraints.items():
        if rule.depends_on:
            edges[name] = [(rule.depends_on, 1 if rule.corr == "positive" else -1)]
    for child, parent, sign in couplings:
        if child not in constraints or parent not in constraints or child == parent:
            continue
        if constraints[child].corr_with is not None:
            continue  # a declared linear relation is kept exactly
        if _reaches(parent, child, constraints, edges):
            continue  # would close a cycle
        edges.setdefault(child, []).append((parent, sign))
        implicit.add(child)
    steps = tuple(
        _Step(
            name,
            constraints[name],
            tuple(edges.get(name, ())),
            _strength(name, constraints[name], implicit),
            digits(name),
            _grid(constraints[name], (grids or {}).get(name)),
        )
        for name in _order(constraints, edges)
    )
    return SamplingPlan(steps)


def _strength(name: str, rule: KPIConstraint, implicit: set[str]) -> float:
    """A declared dependency keeps its strength; purely implicit parents pull more gently."""
    return IMPLICIT_STRENGTH if name in implicit and not rule.depends_on else rule.strength


def _grid(rule: KPIConstraint, values: Sequence[float] | None) -> tuple[float, ...] | None:
    if values is None:
        return None
    inside = tuple(v for v in values if rule.min <= v <= rule.max)
    return inside or None


def _position(value: float, rule: KPIConstraint) -> float:
    return (value - rule.min) / (rule.max - rule.min)


def _free_value(rule: KPIConstraint, rng: np.random.Generator) -> float:
    if rule.dist == "triangular" and rule.mode is not None:
        return float(rng.triangular(rule.min, rule.mode, rule.max))
    if rule.dist == "mixture":
        high = rng.random() < rule.p_hi
        low_bound, high_bound = (rule.hi_min, rule.hi_max) if high else (rule.lo_min, rule.lo_max)
        return float(rng.uniform(low_bound, high_bound))
    return float(rng.uniform(rule.min, rule.max))


def _linear_value(
    rule: KPIConstraint, parent_value: float, parent_rule: KPIConstraint, rng: np.random.Generator
) -> float:
    centre = (rule.min + rule.max) / 2 + (rule.slope or 0.0) * (
        parent_value - (parent_rule.min + parent_rule.max) / 2
    )
    half = (rule.max - rule.min) / 2
    spread = half * max(
        0.2,
        1 - abs(rule.slope or 0.0) * (parent_rule.max - parent_rule.min) / (rule.max - rule.min),
    )
    low, high = max(rule.min, centre - spread), min(rule.max, centre + spread)
    if low >= high:  # the line leaves the range: stay on the nearest bound
        return min(max(centre, rule.min), rule.max)
    return float(rng.uniform(low, high))


def sample_kpis(
    plan: SamplingPlan, constraints: Mapping[str, KPIConstraint], rng: np.random.Generator
) -> dict[str, float]:
    """Sample every KPI of a plan; values are rounded and guaranteed inside ``[min, max]``."""
    values: dict[str, float] = {}
    for step in plan.steps:
        rule = step.rule
        if rule.corr_with:
            value = _linear_value(rule, values[rule.corr_with], constraints[rule.corr_with], rng)
        elif step.parents:
            target = sum(
                _position(values[p], constraints[p])
                if sign > 0
                else 1 - _position(values[p], constraints[p])
                for p, sign in step.parents
            ) / len(step.parents)
            u = step.strength * target + (1 - step.strength) * float(rng.random())
            value = rule.min + u * (rule.max - rule.min)
        else:
            value = _free_value(rule, rng)
        if step.grid is not None:
            value = min(step.grid, key=lambda legal: abs(legal - value))
        values[step.name] = min(max(round(value, step.digits), rule.min), rule.max)
    return {name: values[name] for name in constraints}
