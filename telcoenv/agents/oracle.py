"""The oracle: the gold chain with correct arguments, and a resolution written from the outputs.

It reads ``info["privileged"]`` (the environment must be made with ``privileged=True``), so it
is an upper bound for the metrics, not a baseline: any score below the maximum is a bug.
"""

from __future__ import annotations

import json
from typing import Any

from telcoenv.catalog import default_catalog
from telcoenv.tooling import RESERVED_SUBMIT


class OracleAgent:
    """Calls the gold chain in order, then submits the true label and a grounded summary."""

    needs_privileged = True

    def __init__(self) -> None:
        self._plan: list[dict[str, Any]] = []
        self._label = ""
        self._summary = ""
        self._notes: list[str] = []
        self._language = "en"

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        privileged = info.get("privileged")
        if privileged is None:
            raise ValueError("the oracle needs an environment made with privileged=True")
        self._plan = [
            {"name": c["tool"], "arguments": c["arguments"]} for c in privileged["gold_chain"]
        ]
        self._plan += self._remeasurement(self._plan)
        self._language = info["language"]
        self._label = privileged["label"][self._language]
        # The gold summary is the intent's template filled with this episode's values; the
        # oracle states it and adds what the write tools returned (change and ticket ids).
        self._summary = privileged["gold_summary"][self._language]
        self._notes = []
        if info.get("require_approval"):  # ask the engineer before every change
            tools = default_catalog().tools
            self._plan = [
                step
                for action in self._plan
                for step in (
                    [self._ask(action), action] if tools[action["name"]].approval else [action]
                )
            ]

    @staticmethod
    def _remeasurement(plan: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """After a configuration change, repeat the chain's last measurement to verify it.

        The repeat is a re-measurement (see ``ActionRecord.remeasure``): it does not count in
        the tool-sequence metrics, so the oracle stays at their maximum.
        """
        tools = default_catalog().tools
        changed = any(tools[a["name"]].approval for a in plan)  # a network change
        # The current counters (oss_query) show the effect; the series tool, if that is all
        # the chain has, shows it as its newest points.
        reads = sorted(
            (a for a in plan if a["name"] in ("oss_query", "kpi_timeseries")),
            key=lambda a: a["name"] != "oss_query",
        )
        return [dict(reads[0])] if changed and reads else []

    def _ask(self, action: dict[str, Any]) -> str:
        """The plain message that asks the engineer to approve a change."""
        arguments = action["arguments"]
        target = (
            arguments.get("cell_id") or arguments.get("slice_id") or arguments.get("config_id", "")
        )
        if self._language == "en":
            return f"May I apply {action['name']} on {target}?"
        return f"هل يمكنني تنفيذ {action['name']} على {target}؟"

    def act(self, observation: str, info: dict[str, Any]) -> dict[str, Any]:
        if info.get("steps", 0) > 0:
            self._note(observation)
        if self._plan:
            return self._plan.pop(0)
        return {
            "name": RESERVED_SUBMIT,
            "arguments": {
                "intent": self._label,
                "summary": " ".join([self._summary, *self._notes]),
            },
        }

    def _note(self, observation: str) -> None:
        if '"ticket_id"' not in observation and '"change_id"' not in observation:
            return  # only tickets and applied changes make it into the summary
        output = json.loads(observation)
        if "ticket_id" in output:
            self._notes.append(
                f"Ticket {output['ticket_id']}."
                if self._language == "en"
                else f"التذكرة {output['ticket_id']}."
            )
        elif output.get("change_id"):
            self._notes.append(
                f"Change {output['change_id']}."
                if self._language == "en"
                else f"التغيير {output['change_id']}."
            )
