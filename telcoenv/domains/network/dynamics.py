"""How the network's KPIs respond to configuration changes: the closed loop's causal model.

The starting state reproduces the blueprint sample. After every change the model recomputes the
serving cell's sampled KPIs from two quantities:

* **fault severity** ``s`` in [0, 1]: how much of the injected root cause is still there (1 as
  injected; 0 once every fault parameter holds its corrective value, the configuration matches
  its baseline again, or the PCI is unique). Each symptom KPI moves on the line between its
  healthy value and its sampled value: ``v = healthy + s * (sampled - healthy)``. Faults that
  only a field team can clear keep ``s = 1``.
* **harm** ``h`` in [0, 1] per cell: changes to parameters outside the fault, each weighted by
  how far it moved relative to the parameter's legal range. Harm pushes the cell's KPIs in their
  "worse" direction (``v += h * |sampled - healthy|``), so an extreme tilt on the serving cell or
  on a neighbour degrades it.

Every recomputation opens a new KPI *regime* at the current time: KPI time series show the old
values before the change and the new ones after it, so an agent can re-measure and see the
effect.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from telcoenv.domains.network.kpis import kpi_catalogue
from telcoenv.domains.network.state import NetworkState, change_schemas

FIX_TOOLS = frozenset({"optimize_cell", "optimize_slice", "push_config"})
CHANGE_DELAY = dt.timedelta(minutes=15)  # time for a change to take effect and be measured


def _distance(name: str, value: Any, target: Any) -> float:
    """How far a parameter is from a target, normalised by its legal range (0 when equal)."""
    if value == target:
        return 0.0
    schema = change_schemas().get(name, {})
    categorical = isinstance(value, bool) or not isinstance(value, int | float)
    if categorical or "enum" in schema or not isinstance(target, int | float):
        return 1.0
    span = float(schema.get("maximum", 1) - schema.get("minimum", 0)) or 1.0
    return min(1.0, abs(float(value) - float(target)) / span)


def severity(state: NetworkState) -> float:
    """Share of the injected root cause still present (see the module docstring)."""
    intent = state.intent
    if intent is None or not FIX_TOOLS & set(intent.gold_tools):
        return 1.0
    serving = state.serving
    if intent.fault.target == "config":
        _, baseline = state.baselines[state.baseline_id(serving.cell_id)]
        drifted = [n for n, v in baseline.items() if serving.config.get(n) != v]
        start = max(1, state.start_drift)
        return min(1.0, len(drifted) / start)
    owner = {
        "cell": f"cell:{serving.cell_id}",
        "backhaul": f"backhaul:{state.backhaul.link_id}",
        "slice": f"slice:{state.fault_slice_id}",
    }[intent.fault.target]
    remaining = 0.0
    for name in intent.fault.parameters:
        if name == "pci":
            remaining = max(remaining, float(any(n.pci == serving.pci for n in state.neighbours)))
            continue
        key = (owner, name)
        target, current = state.fix.get(name), state.current(key)
        initial = _distance(name, state.original.get(key, current), target)
        if initial == 0.0:
            continue
        remaining = max(remaining, min(1.0, _distance(name, current, target) / initial))
    return remaining


def harm(state: NetworkState) -> dict[str, float]:
    """Per changed cell, how far changes outside the fault moved its configuration."""
    fault = set(state.intent.fault.parameters) if state.intent is not None else set()
    serving_key = f"cell:{state.serving.cell_id}"
    if state.intent is not None and state.intent.fault.target == "config":
        _, baseline = state.baselines[state.baseline_id(state.serving.cell_id)]
        fault |= set(baseline)
    totals: dict[str, float] = {}
    for key, before in state.original.items():
        owner, name = key
        if not owner.startswith("cell:") or (owner == serving_key and name in fault):
            continue
        cell_id = owner[5:]
        totals[cell_id] = totals.get(cell_id, 0.0) + _distance(name, state.current(key), before)
    return {cell_id: min(1.0, total) for cell_id, total in totals.items()}


def healthy_target(name: str, sampled: float) -> float:
    """Where a KPI returns when its cause is removed: the catalogue's healthy value, unless the
    sample is already at least as good (then the KPI is context, not a symptom, and stays)."""
    info = kpi_catalogue().kpis[name]
    if info.healthy is None or info.worse == "none":
        return sampled
    better = sampled <= info.healthy if info.worse == "higher" else sampled >= info.healthy
    return sampled if better else info.healthy


def key_kpis_recovered(state: NetworkState, count: int = 2) -> dict[str, bool]:
    """Whether the sample's key symptom KPIs are back within a quarter of their degradation."""
    from telcoenv.domains.network.engineer import ranked_evidence

    assert state.intent is not None
    result = {}
    for name in ranked_evidence(state.sampled, state.intent.evidence)[:count]:
        sampled, healthy = state.sampled[name], healthy_target(name, state.sampled[name])
        current = state.serving.kpis[name]
        result[name] = abs(current - healthy) <= 0.25 * abs(sampled - healthy) + 1e-9
    return result


def recompute(state: NetworkState) -> None:
    """Update the KPIs after a change and open a new regime in the KPI time series."""
    catalogue = kpi_catalogue()
    s, h = severity(state), harm(state)
    serving = state.serving
    kpis = dict(serving.kpis)
    for name, sampled in state.sampled.items():
        info = catalogue.kpis[name]
        healthy = healthy_target(name, sampled)
        value = healthy + s * (sampled - healthy)
        gap = abs(sampled - healthy)
        if info.worse == "higher":
            value += h.get(serving.cell_id, 0.0) * gap
        elif info.worse == "lower":
            value -= h.get(serving.cell_id, 0.0) * gap
        if sampled >= 0:  # shares, rates and counts stay physical: >= 0, percentages <= 100 %
            value = max(0.0, value)
            if info.unit == "percent":
                value = min(value, 100.0 / info.scale)
        kpis[name] = round(value, catalogue.digits(name))
    serving.measured = kpis
    for cell in state.neighbours:
        if h.get(cell.cell_id, 0.0) > 0:  # a harmed neighbour loses quality, takes more load
            cell.load = round(min(0.99, cell.load * (1 + 0.5 * h[cell.cell_id])), 2)
            measured = dict(cell.kpis)
            measured["PRB_util"] = cell.load
            for name in ("sinr_dB", "rsrq_dB"):
                if name in measured:
                    measured[name] = round(measured[name] - 6 * h[cell.cell_id], 1)
            cell.measured = measured
    state.now += CHANGE_DELAY
    state.regimes.append((state.now - CHANGE_DELAY, dict(serving.kpis)))
