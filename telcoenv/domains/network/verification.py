"""Verified resolution: a deterministic check of the network's final state, no LLM judge.

An episode is resolved when

* the root cause is removed: every fault parameter of the intent holds its corrective value
  (for ``config`` faults: the cell matches its approved baseline again; for a PCI fault: the cell
  shares its PCI with no neighbour; faults that only a field team can clear, such as an outage,
  count as removed once escalated in a ticket);
* a ticket exists where the intent requires one;
* nothing unrelated changed: a diff of every configuration row in the database (cells, slices,
  backhaul) against the episode's starting state lists each change outside the fault as
  collateral, whichever way it was made.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from telcoenv.domains.network.dynamics import FIX_TOOLS, key_kpis_recovered
from telcoenv.domains.network.models import Intent
from telcoenv.domains.network.state import ConfigKey, Configuration, NetworkState
from telcoenv.domains.network.topology import Fault


class Verification(BaseModel):
    """The verdict on a finished episode and what it rests on."""

    model_config = ConfigDict(frozen=True)

    resolved: bool
    root_cause_removed: bool
    ticket_required: bool
    ticket_found: bool
    checks: dict[str, bool]
    collateral_changes: list[dict[str, Any]]


def _fault_keys(intent: Intent, state: NetworkState) -> set[ConfigKey]:
    """The (object, parameter) pairs the intent's fix is allowed to touch."""
    target = intent.fault.target
    if target == "config":
        return {(f"cell:{state.serving_id}", name) for name in state.baseline_of(state.serving_id)}
    owner = {
        "cell": f"cell:{state.serving_id}",
        "backhaul": f"backhaul:{state.link_id}",
        "slice": f"slice:{state.fault_slice_id}",
    }[target]
    return {(owner, name) for name in intent.fault.parameters}


def _root_cause_checks(
    intent: Intent,
    state: NetworkState,
    config: Configuration,
    fix: dict[str, Any],
    ticket_found: bool,
) -> dict[str, bool]:
    if not FIX_TOOLS & set(intent.gold_tools):
        # Field work (a coverage survey, a site repair) or an SLA escalation: the network cannot
        # be fixed from the OSS, so handing it over in a ticket removes the cause from our side.
        return {"escalated in a ticket": ticket_found}
    serving = f"cell:{state.serving_id}"
    if intent.fault.target == "config":
        baseline = state.baseline_of(state.serving_id)
        matches = all(config[serving][name] == value for name, value in baseline.items())
        return {"configuration matches the baseline": matches}
    owner = {
        "cell": serving,
        "backhaul": f"backhaul:{state.link_id}",
        "slice": f"slice:{state.fault_slice_id}",
    }[intent.fault.target]
    checks = {}
    for name in intent.fault.parameters:
        if name == "pci":
            pci = config[serving]["pci"]
            checks["PCI unique among neighbours"] = all(
                config[f"cell:{other}"]["pci"] != pci for other in state.cell_ids[1:]
            )
        else:
            checks[f"{name} at {fix[name]}"] = config[owner].get(name) == fix[name]
    return checks


def verify(state: NetworkState, fault: Fault) -> Verification:
    """Check the final state of an episode against its fault and its starting state."""
    intent, fix = fault.intent, fault.fix
    required = intent.resolution.ticket_required
    ticket_found = state.ticket_count() > 0
    config = state.configuration()
    checks = _root_cause_checks(intent, state, config, fix, ticket_found)
    allowed = _fault_keys(intent, state)
    collateral = [
        {"object": key[0], "parameter": key[1], "before": before, "after": after}
        for key, before, after in sorted(state.diff(config), key=lambda item: item[0])
        if key not in allowed
    ]
    root_cause_removed = all(checks.values())
    if FIX_TOOLS & set(intent.gold_tools):  # fixed from the OSS: the KPIs must have recovered
        for name, recovered in key_kpis_recovered(state, fault).items():
            checks[f"{name} recovered"] = recovered
    if required:
        checks["ticket opened"] = ticket_found
    checks["no collateral change"] = not collateral
    return Verification(
        resolved=all(checks.values()),
        root_cause_removed=root_cause_removed,
        ticket_required=required,
        ticket_found=ticket_found,
        checks=checks,
        collateral_changes=collateral,
    )
