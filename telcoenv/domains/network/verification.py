"""Verified resolution: a deterministic check of the network's final state, no LLM judge.

An episode is resolved when

* the root cause is removed: every fault parameter of the intent holds its corrective value
  (for ``config`` faults: the cell matches its approved baseline again; for a PCI fault: the cell
  shares its PCI with no neighbour; faults that only a field team can clear, such as an outage,
  count as removed once escalated in a ticket);
* a ticket exists where the intent requires one;
* nothing unrelated changed: a diff of every configuration (cells, slices, backhaul) against the
  episode's starting snapshot lists each change outside the fault as collateral.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from telcoenv.domains.network.dynamics import FIX_TOOLS, key_kpis_recovered
from telcoenv.domains.network.state import NetworkState
from telcoenv.specs import Intent


class Verification(BaseModel):
    """The verdict on a finished episode and what it rests on."""

    model_config = ConfigDict(frozen=True)

    resolved: bool
    root_cause_removed: bool
    ticket_required: bool
    ticket_found: bool
    checks: dict[str, bool]
    collateral_changes: list[dict[str, Any]]


def _fault_keys(intent: Intent, state: NetworkState) -> set[tuple[str, str]]:
    """The (object, parameter) pairs the intent's fix is allowed to touch."""
    target = intent.fault.target
    if target == "config":
        _, baseline = state.baselines[state.baseline_id(state.serving.cell_id)]
        return {(f"cell:{state.serving.cell_id}", name) for name in baseline}
    owner = {
        "cell": f"cell:{state.serving.cell_id}",
        "backhaul": f"backhaul:{state.backhaul.link_id}",
        "slice": f"slice:{state.fault_slice_id}",
    }[target]
    return {(owner, name) for name in intent.fault.parameters}


def _root_cause_checks(
    intent: Intent, state: NetworkState, fix: dict[str, Any], ticket_found: bool
) -> dict[str, bool]:
    if not FIX_TOOLS & set(intent.gold_tools):
        # Field work (a coverage survey, a site repair) or an SLA escalation: the network cannot
        # be fixed from the OSS, so handing it over in a ticket removes the cause from our side.
        return {"escalated in a ticket": ticket_found}
    if intent.fault.target == "config":
        _, baseline = state.baselines[state.baseline_id(state.serving.cell_id)]
        return {
            "configuration matches the baseline": all(
                state.serving.config.get(name) == value for name, value in baseline.items()
            )
        }
    current = {
        "cell": {**state.serving.config, "pci": state.serving.pci},
        "backhaul": state.backhaul.config,
        "slice": state.slices[state.fault_slice_id].policy,
    }[intent.fault.target]
    checks = {}
    for name, parameter in intent.fault.parameters.items():
        if name == "pci":
            checks["PCI unique among neighbours"] = all(
                n.pci != state.serving.pci for n in state.neighbours
            )
        else:
            checks[f"{name} at {parameter.healthy}"] = current.get(name) == fix[name]
    return checks


def verify(intent: Intent, state: NetworkState, fix: dict[str, Any]) -> Verification:
    """Check the final state of an episode against its intent and its starting configuration."""
    required = intent.resolution.ticket_required
    ticket_found = bool(state.tickets)
    checks = _root_cause_checks(intent, state, fix, ticket_found)
    allowed = _fault_keys(intent, state)
    collateral = [
        {"object": key[0], "parameter": key[1], "before": before, "after": state.current(key)}
        for key, before in sorted(state.original.items(), key=lambda item: item[0])
        if state.current(key) != before and key not in allowed
    ]
    root_cause_removed = all(checks.values())
    if FIX_TOOLS & set(intent.gold_tools):  # fixed from the OSS: the KPIs must have recovered
        for name, recovered in key_kpis_recovered(state).items():
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
