"""Exploit policies of the network domain (the red-team audit's, scripted).

They read only what any agent may read: the engineer's statement, tool outputs and the public
catalogue (gold chains, labels, ticket teams and standard corrective values in intents.yaml).
"""

from __future__ import annotations

import re
from abc import abstractmethod
from typing import Any

from telcoenv.agents.heuristic import guess_intent
from telcoenv.audit.exploits import Scripted, decoded, submit

CELL_ID = re.compile(r"\b(?:NR|LTE)-[A-Z]{3}-[A-Z]+-\d+\b")
TEAMS = (
    "field_ops",
    "transport",
    "ran_optimization",
    "capacity_planning",
    "service_assurance",
    "core_slicing",
    "configuration_management",
)
WINDOW = "24h"


class _NetworkScripted(Scripted):
    def cell(self) -> str:
        """The first cell id seen (the statement's, or one the engineer named)."""
        for text in self.seen:
            found = CELL_ID.findall(text)
            if found:
                return found[0]
        return "NR-UNKNOWN-0"

    def start(self, observation: str, info: dict[str, Any]) -> None:
        if not CELL_ID.search(observation):  # the noisy tier: ask which cell
            self.plan.append(
                "Which cell is affected?" if self.language == "en" else "ما الخلية المتأثرة؟"
            )
        self.begin()

    @abstractmethod
    def begin(self) -> None:
        """Fill :attr:`plan` once the cell is known."""

    def ticket(self, team: str) -> dict[str, Any]:
        """A ticket to ``team`` about the cell, with no evidence in it."""
        summary = f"Please check {self.cell()}."
        arguments = {"cell_id": self.cell(), "team": team, "severity": "major", "summary": summary}
        return {"name": "create_ticket", "arguments": arguments}

    def keyword_guess(self) -> Any:
        return guess_intent(" ".join(self.seen))


class SasMimic(_NetworkScripted):
    """The keyword guess of the heuristic baseline, its gold tool names with empty arguments
    (all refused: nothing runs), its label."""

    name = "gold names, no arguments"

    def begin(self) -> None:
        self.plan += [{"name": t, "arguments": {}} for t in guess_intent(self.statement).gold_tools]

    def finish(self) -> dict[str, Any]:
        return submit(self.label(self.keyword_guess()), "Fixed.")


class NoOpFix(_NetworkScripted):
    """The gold chain's tools with arguments that change nothing (the cell's own current
    values written back) and a wrong label: the motions of a fix without one."""

    name = "no-op fix"

    def begin(self) -> None:
        self.plan.append(lambda: {"name": "oss_query", "arguments": self._read()})
        self.plan.append(lambda: {"name": "kpi_timeseries", "arguments": self._series()})
        self.plan.append(lambda: {"name": "optimize_cell", "arguments": self._same_values()})
        self.current: dict[str, Any] = {}

    def observe(self, observation: str) -> None:
        data = decoded(observation)
        if isinstance(data, dict) and isinstance(data.get("configuration"), dict):
            self.current = data["configuration"]

    def _read(self) -> dict[str, Any]:
        return {"cell_id": self.cell(), "window": WINDOW}

    def _series(self) -> dict[str, Any]:
        return {"cell_id": self.cell(), "kpi": "DL", "window": WINDOW}

    def _same_values(self) -> dict[str, Any]:
        tilt = self.current.get("tilt_deg", 6.0)
        return {"cell_id": self.cell(), "changes": {"tilt_deg": tilt}}

    def finish(self) -> dict[str, Any]:
        wrong = "Coverage Hole" if self.language == "en" else "فجوة في التغطية"
        return submit(wrong, "Tuned the cell.")


class BlindFix(_NetworkScripted):
    """No diagnosis: push the cell's baseline, apply every recommendation of
    ``recommend_param_change``, restore any slice policy that looks off, ticket every team,
    submit a fixed label."""

    name = "blind fix"

    def begin(self) -> None:
        self.recommended: dict[str, Any] = {}
        self.slices: list[dict[str, Any]] = []
        self.plan += [
            lambda: {"name": "push_config", "arguments": {"config_id": self._baseline()}},
            lambda: {"name": "oss_query", "arguments": {"cell_id": self.cell(), "window": WINDOW}},
            lambda: {"name": "recommend_param_change", "arguments": {"cell_id": self.cell()}},
            lambda: self._apply(),
            *(lambda: self._slice_fix() for _ in range(2)),
            *(lambda team=team: self.ticket(team) for team in TEAMS),
        ]

    def _baseline(self) -> str:
        return f"CFG-{self.cell()}-BASELINE"

    def observe(self, observation: str) -> None:
        data = decoded(observation)
        if not isinstance(data, dict):
            return
        for item in data.get("recommendations", []) or []:
            if isinstance(item, dict) and "parameter" in item:
                self.recommended[item["parameter"]] = item.get("recommended")
        if isinstance(data.get("slices"), list):
            self.slices = [s for s in data["slices"] if isinstance(s, dict)]

    def _apply(self) -> dict[str, Any] | None:
        if not self.recommended:
            return None
        return {
            "name": "optimize_cell",
            "arguments": {"cell_id": self.cell(), "changes": dict(self.recommended)},
        }

    def _slice_fix(self) -> dict[str, Any] | None:
        while self.slices:
            entry = self.slices.pop(0)
            policy = entry.get("policy") or {}
            fix = {}
            if policy.get("admission_threshold_pct", 95) < 95:
                fix["admission_threshold_pct"] = 95
            if policy.get("priority_level", 1) > 5:
                fix["priority_level"] = 1 if entry.get("service_type") == "URLLC" else 3
            if fix:
                return {
                    "name": "optimize_slice",
                    "arguments": {"slice_id": entry.get("slice_id"), "policy": fix},
                }
        return None

    def finish(self) -> dict[str, Any]:
        label = "Configuration Mismatch" if self.language == "en" else "عدم تطابق الإعدادات"
        return submit(label, "Restored the recommended configuration and escalated.")


class BlindFixLabelRule(BlindFix):
    """The blind fix with a one-line rule for the label: a cell DOWN or DEGRADED in the OSS is
    an outage, an opening that says "SLA" is an SLA report, anything else a coverage hole."""

    name = "blind fix + label rule"

    def begin(self) -> None:
        super().begin()
        self.down = False

    def observe(self, observation: str) -> None:
        super().observe(observation)
        data = decoded(observation)
        cell = data.get("cell") if isinstance(data, dict) else None
        if isinstance(cell, dict) and cell.get("operational_state") in ("DOWN", "DEGRADED"):
            self.down = True

    def finish(self) -> dict[str, Any]:
        key = (
            "CELL_OUTAGE_DETECTION"
            if self.down
            else "SLA_VIOLATION_REPORT"
            if "sla" in self.statement.casefold()
            else "COVERAGE_HOLE"
        )
        return submit(self.label(self.catalog.intent(key)), "Restored and escalated.")


class TicketEveryTeam(_NetworkScripted):
    """A ticket to each of the seven teams on the cell, and the keyword guess's label."""

    name = "ticket every team"

    def begin(self) -> None:
        self.plan += [lambda team=team: self.ticket(team) for team in TEAMS]

    def finish(self) -> dict[str, Any]:
        return submit(self.label(self.keyword_guess()), "Escalated.")


class TicketAndLabel(_NetworkScripted):
    """No investigation: one ticket to the team of the keyword guess's intent (public in
    intents.yaml) and its label."""

    name = "ticket + label"

    def begin(self) -> None:
        def ticket() -> dict[str, Any]:
            ticket_spec = self.keyword_guess().resolution.ticket
            return self.ticket(ticket_spec.team if ticket_spec else "field_ops")

        self.plan.append(ticket)

    def finish(self) -> dict[str, Any]:
        return submit(self.label(self.keyword_guess()), "Escalated to the owning team.")


#: The network's exploit policies, by name (each a zero-argument factory).
EXPLOITS = {
    cls.name: cls
    for cls in (SasMimic, NoOpFix, BlindFix, BlindFixLabelRule, TicketEveryTeam, TicketAndLabel)
}
