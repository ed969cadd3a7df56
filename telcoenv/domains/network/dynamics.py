"""How the network's KPIs respond to configuration changes: the closed loop's causal model.

The starting state reproduces the blueprint sample. After every change the model recomputes the
serving cell's sampled KPIs from two quantities:

* **fault severity** ``s`` in [0, 1]: how much of the injected root cause is still there (1 as
  injected; 0 once every fault parameter holds its corrective value, the configuration matches
  its baseline again, or the PCI is unique). Each symptom KPI moves on the line between its
  healthy value and its sampled value: ``v = healthy + s * (sampled - healthy)``. Faults that
  only a field team can clear keep ``s = 1``. A KPI the fault does not cause (the intent's
  ``fault.context_kpis``: geometry, load, neighbours, environment) is no symptom: the fix leaves
  it as sampled.
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
from collections.abc import Collection
from typing import Any

from telcoenv.domains.network.kpis import kpi_definitions
from telcoenv.domains.network.parameters import (
    KPI_TO_CELL_PARAMETER,
    KPI_TO_SLICE_POLICY,
    change_schemas,
)
from telcoenv.domains.network.state import Configuration, NetworkState
from telcoenv.domains.network.topology import Fault, owner_cell

FIX_TOOLS = frozenset({"optimize_cell", "optimize_slice", "push_config"})
CHANGE_DELAY = dt.timedelta(minutes=15)  # time for a change to take effect and be measured


def parameter_distance(name: str, value: Any, target: Any) -> float:
    """How far a parameter is from a target, normalised by its legal range (0 when equal)."""
    if value == target:
        return 0.0
    schema = change_schemas().get(name, {})
    categorical = isinstance(value, bool) or not isinstance(value, int | float)
    if categorical or "enum" in schema or not isinstance(target, int | float):
        return 1.0
    span = float(schema.get("maximum", 1) - schema.get("minimum", 0)) or 1.0
    return min(1.0, abs(float(value) - float(target)) / span)


def severity(state: NetworkState, fault: Fault, config: Configuration) -> float:
    """Share of the injected root cause still present (see the module docstring)."""
    intent = fault.intent
    if not FIX_TOOLS & set(intent.gold_tools):
        return 1.0
    serving = f"cell:{state.serving_id}"
    if intent.fault.target == "config":
        baseline = state.baseline_of(state.serving_id)
        drifted = [n for n, v in baseline.items() if config[serving][n] != v]
        return min(1.0, len(drifted) / max(1, fault.start_drift))
    remaining = 0.0
    if "pci" in intent.fault.parameters:
        pci = config[serving]["pci"]
        shared = any(config[f"cell:{other}"]["pci"] == pci for other in state.cell_ids[1:])
        remaining = float(shared)
    for setting in state.fix_settings(intent.fault.target, fault.fix):
        owner, name, target = setting.owner, setting.parameter, setting.value
        if name == "pci":
            continue
        current = config[owner].get(name)
        initial = parameter_distance(name, state.start[owner].get(name, current), target)
        if initial == 0.0:
            continue
        remaining = max(remaining, min(1.0, parameter_distance(name, current, target) / initial))
    return remaining


def harm(state: NetworkState, fault: Fault, config: Configuration) -> dict[str, float]:
    """Per changed cell, how far changes outside the fault moved its configuration."""
    faulty = set(fault.intent.fault.parameters)
    serving_key = f"cell:{state.serving_id}"
    if fault.intent.fault.target == "config":
        faulty |= set(state.baseline_of(state.serving_id))
    totals: dict[str, float] = {}
    settings = state.fix_settings(fault.intent.fault.target, fault.fix)
    fixed = {(setting.owner, setting.parameter) for setting in settings}
    for (owner, name), before, after in state.diff(config):
        cell_id = owner_cell(owner)
        if (owner, name) in fixed or cell_id is None:
            continue
        if f"cell:{cell_id}" == serving_key and name in faulty:
            continue
        totals[cell_id] = totals.get(cell_id, 0.0) + parameter_distance(name, after, before)
    return {cell_id: min(1.0, total) for cell_id, total in totals.items()}


def healthy_target(name: str, sampled: float, context: Collection[str] = ()) -> float:
    """Where a KPI returns when its cause is removed: the KPI definition's healthy value, unless the
    sample is already at least as good or the KPI is one the fault does not cause (``context``,
    the intent's ``fault.context_kpis``): then it is context, not a symptom, and stays."""
    if name in context:
        return sampled
    info = kpi_definitions().kpis[name]
    if info.healthy is None or info.worse == "none":
        return sampled
    better = sampled <= info.healthy if info.worse == "higher" else sampled >= info.healthy
    return sampled if better else info.healthy


def key_kpis_recovered(state: NetworkState, fault: Fault, count: int = 2) -> dict[str, bool]:
    """Whether the sample's key symptom KPIs are back within a quarter of their degradation."""
    from telcoenv.domains.network.engineer import ranked_evidence

    result = {}
    context = fault.intent.fault.context_kpis
    for name in ranked_evidence(fault.sampled, fault.intent.evidence, context)[:count]:
        sampled, healthy = fault.sampled[name], healthy_target(name, fault.sampled[name], context)
        current = state.kpi_value(state.serving_id, name)
        assert current is not None, name  # every sampled KPI is recorded at the start
        result[name] = abs(current - healthy) <= 0.25 * abs(sampled - healthy) + 1e-9
    return result


def _serving_kpis(fault: Fault, current: dict[str, float], s: float, h: float) -> dict[str, float]:
    definitions = kpi_definitions()
    context = fault.intent.fault.context_kpis
    kpis = dict(current)
    for name, sampled in fault.sampled.items():
        info = definitions.kpis[name]
        target = healthy_target(name, sampled, context)
        value = target + s * (sampled - target)
        # Harm worsens a context KPI too (an extreme tilt costs RSRP wherever it came from).
        gap = abs(sampled - healthy_target(name, sampled))
        if info.worse == "higher":
            value += h * gap
        elif info.worse == "lower":
            value -= h * gap
        if sampled >= 0:  # shares, rates and counts stay physical: >= 0, percentages <= 100 %
            value = max(0.0, value)
            if info.unit == "percent":
                value = min(value, 100.0 / info.scale)
        kpis[name] = round(value, definitions.digits(name))
    return kpis


def _read_out(kpis: dict[str, float], config: Configuration, state: NetworkState) -> None:
    """Set the KPIs that read a setting out (``ttt_ms``, ``pci_self``, a slice's policy
    priority) to the setting as it is now: they are counters of the configuration, not of the
    fault, and stayed at the faulty value after a fix."""
    cell, slice_ = config[f"cell:{state.serving_id}"], config[f"slice:{state.fault_slice_id}"]
    for kpi, parameter in KPI_TO_CELL_PARAMETER.items():
        if kpi in kpis:
            kpis[kpi] = float(cell[parameter])
    for kpi, parameter in KPI_TO_SLICE_POLICY.items():
        if kpi in kpis:
            kpis[kpi] = float(slice_[parameter])


def recompute(state: NetworkState, fault: Fault) -> None:
    """Recompute the KPIs after a change and record them as a new regime of samples."""
    config = state.configuration()
    s, h = severity(state, fault, config), harm(state, fault, config)
    current = state.latest_kpis()  # every measured object's KPIs now, in one query
    kpis = _serving_kpis(fault, current[state.serving_id], s, h.get(state.serving_id, 0))
    _read_out(kpis, config, state)
    samples = {state.serving_id: kpis}
    # The fault slice's and the link's KPIs that the sample set move with the serving cell.
    initial = state.initial
    for owner, start in (
        (state.fault_slice_id, initial.slices[state.fault_slice_id].kpis),
        (state.link_id, initial.backhaul.kpis),
    ):
        samples[owner] = {name: kpis.get(name, value) for name, value in start.items()}
    # Record only what moved: a regime carries the other KPIs forward (see kpi_history).
    for owner, values in samples.items():
        previous = current.get(owner, {})
        samples[owner] = {n: v for n, v in values.items() if previous.get(n) != v}
    for cell in state.initial.neighbours:
        damage = h.get(cell.cell_id, 0.0)
        # A harmed neighbour loses quality and takes more load; one no longer harmed recovers.
        load_now = current.get(cell.cell_id, {}).get("PRB_util", cell.load)
        if damage > 0 or load_now != cell.load:
            start = state.kpi_history(cell.cell_id)[0][1]
            load = round(min(0.99, cell.load * (1 + 0.5 * damage)), 2)
            measured = {**start, "PRB_util": load}
            for name in ("sinr_dB", "rsrq_dB"):
                if name in measured:
                    measured[name] = round(start[name] - 6 * damage, 1)
            samples[cell.cell_id] = measured
            state.set_load(cell.cell_id, load)
    state.record_kpis(samples, state.now)
    state.now += CHANGE_DELAY
