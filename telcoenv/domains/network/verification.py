"""Verified resolution: a deterministic check of the network's final state, no LLM judge.

The fault is **fixed** when

* the root cause is removed: every fault parameter of the intent holds its corrective value
  (for ``config`` faults: the cell matches its approved baseline again; for a PCI fault: the cell
  shares its PCI with no neighbour; faults that only another team can clear, such as an outage,
  count as removed once escalated in a ticket to the intent's team that names the affected cell
  or its site);
* for an intent fixed from the OSS, the complaint's KPIs recovered;
* where the intent requires a ticket, one to the intent's team names the affected cell.

Nothing unrelated may change: a diff of every configuration row in the database (cells, slices,
backhaul) against the episode's starting state lists each change outside the fault as
collateral, whichever way it was made, and so does a ticket to a team the intent does not hand
anything to (a ticket to every team is no escalation, and each one costs another team's time).
Whether the episode is *resolved* is decided by :mod:`telcoenv.grading`: submitted, the
diagnosis right (for every intent), fixed, no collateral.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict

from telcoenv.domains.network.dynamics import FIX_TOOLS, key_kpis_recovered
from telcoenv.domains.network.models import Intent, in_band
from telcoenv.domains.network.simulation import degraded_neighbours, recovery
from telcoenv.domains.network.state import ConfigKey, Configuration, NetworkState
from telcoenv.domains.network.topology import Fault, fault_owner, owner_cell, relation_cells


class Verification(BaseModel):
    """The verdict on a finished episode's final state and what it rests on."""

    model_config = ConfigDict(frozen=True)

    resolved: bool  # fixed, and nothing outside the fault changed (the state's part)
    fixed: bool
    root_cause_removed: bool
    ticket_required: bool
    ticket_found: bool
    checks: dict[str, bool]
    collateral_changes: list[dict[str, Any]]


def _fault_keys(intent: Intent, state: NetworkState, fix: dict[str, Any]) -> set[ConfigKey]:
    """The (object, parameter) pairs the intent's fix is allowed to touch."""
    target = intent.fault.target
    if target == "config":
        return {(f"cell:{state.serving_id}", name) for name in state.baseline_of(state.serving_id)}
    if target == "relation":
        return {(s.owner, s.parameter) for s in state.fix_settings(target, fix)}
    owner = fault_owner(target, state.serving_id, state.link_id, state.fault_slice_id)
    return {(owner, name) for name in intent.fault.parameters}


def ticket_only(intent: Intent) -> bool:
    """Whether the intent's fix is a ticket to another team alone (no configuration change)."""
    return not FIX_TOOLS & set(intent.gold_tools)


def _mentions(text: str, name: str) -> bool:
    """``name`` as a whole id in ``text`` (S0880 is not named by S08801)."""
    return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text, re.IGNORECASE) is not None


def _names_the_cell(ticket: dict[str, Any], state: NetworkState) -> bool:
    """A ticket for the serving cell: its cell id, or with none its summary names the cell or its
    site (a ticket for a neighbour is for the wrong object)."""
    if ticket["cell_id"]:
        return ticket["cell_id"] == state.serving_id
    names = (state.serving_id, state.initial.serving.site_id)
    return any(_mentions(ticket["summary"], name) for name in names)


def _escalation_check(intent: Intent, state: NetworkState) -> dict[str, bool]:
    """A ticket to the intent's team about the affected cell: what hands the case over."""
    team = intent.resolution.ticket.team if intent.resolution.ticket else None
    found = any(
        (team is None or ticket["team"] == team) and _names_the_cell(ticket, state)
        for ticket in state.tickets()
    )
    return {f"escalated to {team or 'a team'} in a ticket on {state.serving_id}": found}


def _root_cause_checks(
    intent: Intent, state: NetworkState, config: Configuration, fix: dict[str, Any]
) -> dict[str, bool]:
    if ticket_only(intent):
        # Field work (a coverage survey, a site repair) or an SLA escalation: the network cannot
        # be fixed from the OSS, so handing it to the right team removes the cause from our side.
        return _escalation_check(intent, state)
    serving = f"cell:{state.serving_id}"
    if intent.fault.target == "config":
        baseline = state.baseline_of(state.serving_id)
        matches = all(config[serving][name] == value for name, value in baseline.items())
        return {"configuration matches the baseline": matches}
    checks = {}
    if "pci" in intent.fault.parameters:
        pci = config[serving]["pci"]
        checks["PCI unique among neighbours"] = all(
            config[f"cell:{other}"]["pci"] != pci for other in state.cell_ids[1:]
        )
    for setting in state.fix_settings(intent.fault.target, fix):
        if setting.name == "pci":
            continue
        # A relation's value is named with its neighbour: neighbour_cio_db[NR-...].
        label = setting.name
        if setting.owner.startswith("relation:"):
            label += f"[{relation_cells(setting.owner.removeprefix('relation:'))[1]}]"
        current = config[setting.owner].get(setting.parameter)
        if state.model is not None:  # judged by effect: a band, not one value
            band = _band(state, intent.fault.parameters[setting.name], setting.value)
            checks[f"{label} in {band}"] = in_band(current, band)
        else:
            checks[f"{label} at {setting.value}"] = current == setting.value
    return checks


#: A shaper lets the link's traffic through from this share of its capacity.
LINK_SHARE = 0.9


def _band(state: NetworkState, parameter: Any, fix: Any) -> list[Any]:
    """What counts as the cause removed: the intent's ``accept`` band (a [min, max] range or
    choices), a shaper from :data:`LINK_SHARE` of the line rate, else the corrective value."""
    if parameter.healthy == "$link_capacity":
        return [LINK_SHARE * state.backhaul().capacity_mbps, None]
    return list(parameter.accept) if parameter.accept is not None else [fix]


#: The team of a ticket opened without one: the NOC's own queue, a record costing no other
#: team anything.
OWN_QUEUE = "noc"


def _stray_tickets(intent: Intent, state: NetworkState) -> list[dict[str, Any]]:
    """Tickets to another team that the intent hands nothing to: collateral (a ticket to every
    team is no escalation, and each one costs that team's time)."""
    team = intent.resolution.ticket.team if intent.resolution.ticket else None
    return [
        {
            "object": f"ticket:{t['ticket_id']}",
            "parameter": "team",
            "before": None,
            "after": t["team"],
        }
        for t in state.tickets()
        if t["team"] not in (team, OWN_QUEUE)
    ]


def verify(state: NetworkState, fault: Fault) -> Verification:
    """Check the final state of an episode against its fault and its starting state."""
    intent, fix = fault.intent, fault.fix
    required = intent.resolution.ticket_required
    ticket_found = state.ticket_count() > 0
    config = state.configuration()
    checks = _root_cause_checks(intent, state, config, fix)
    allowed = _fault_keys(intent, state, fix)
    collateral = [
        {"object": key[0], "parameter": key[1], "before": before, "after": after}
        for key, before, after in sorted(state.diff(config), key=lambda item: item[0])
        if key not in allowed
    ] + _stray_tickets(intent, state)
    root_cause_removed = all(checks.values())
    if not ticket_only(intent):  # fixed from the OSS: the KPIs must have recovered
        recovered = recovery(state, fault) if state.model else key_kpis_recovered(state, fault)
        for name, back in recovered.items():
            checks[f"{name} recovered"] = back
    if state.model is not None:  # harm by mechanism: the changes' effect on the neighbours
        checks["no neighbour degraded"] = not degraded_neighbours(state)
    if required:  # to the intent's team about the affected cell, as for a ticket-only intent
        checks["ticket opened"] = all(_escalation_check(intent, state).values())
    fixed = all(checks.values())
    checks["no collateral change"] = not collateral
    return Verification(
        resolved=all(checks.values()),
        fixed=fixed,
        root_cause_removed=root_cause_removed,
        ticket_required=required,
        ticket_found=ticket_found,
        checks=checks,
        collateral_changes=collateral,
    )


def unrelated_changes(state: NetworkState, fault: Fault) -> list[str]:
    """Cells changed that the engineer did not report: every cell but the serving one, except,
    for a PCI collision, the PCI of the neighbour that shares it (re-planning either side
    clears the collision)."""
    serving = state.serving_id
    partner = {
        f"cell:{cell.cell_id}"
        for cell in state.initial.neighbours
        if "pci" in fault.intent.fault.parameters and cell.pci == state.initial.serving.pci
    }
    changed = set()
    for (owner, name), _, _ in state.diff():
        cell_id = owner_cell(owner)
        if cell_id is None or cell_id == serving:
            continue
        if owner in partner and name == "pci":
            continue
        changed.add(cell_id)
    return sorted(changed)
