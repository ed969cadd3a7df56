"""A keyword baseline: reads only the problem statement, guesses the intent, follows its chain.

It plays the network domain only: its keywords, argument patterns and fixes are those of the
network's troubleshooting intents, whose catalogue it reads through the domain registry.
No privileged information is used: the intent is guessed from keywords of the statement (English
or Arabic); the tool arguments come from the statement (cell, cluster, window), from the outputs of
earlier calls (baseline config id, neighbour PCIs, slices) and from the public taxonomy
(``intents.yaml``: the guessed intent's chain and its standard corrective values). When the
statement names no cell, the agent asks the engineer first.
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeAlias

from telcoenv.catalog import fill_gold_arguments
from telcoenv.domains import get_domain
from telcoenv.tooling import RESERVED_SUBMIT

# A network intent (telcoenv.domains.network.models.Intent), untyped here: only domains import
# their own models.
NetworkIntent: TypeAlias = Any

# Keywords per intent, English and Arabic; a match counts once per keyword.
KEYWORDS: dict[str, tuple[str, ...]] = {
    "THROUGHPUT_DROP_DL": ("download", "slow", "throughput", "speed", "سرع", "التنزيل", "إنتاجية"),
    "BLER_ANOMALY": ("bler", "error", "retransmi", "block error", "أخطاء", "إعادة الإرسال"),
    "RLF_SPIKE": ("radio link", "rlf", "drop", "t310", "الوصلة الراديوية", "انقطاع"),
    "HQOS_LATENCY_VIOLATION": ("latency", "delay", "lag", "ms", "تأخير", "زمن"),
    "COVERAGE_HOLE": ("no signal", "coverage", "dead", "weak signal", "تغطية", "إشارة"),
    "OVERSHOOTING_CELL": ("far", "overshoot", "distant", "footprint", "kilomet", "بعيد"),
    "BEAM_MISALIGNMENT": ("beam", "ssb", "sides", "edge", "حزم", "الحزمة"),
    "TA_DISTRIBUTION_DRIFT": ("timing advance", "ta ", "distance", "drift", "تقدم التوقيت", "TA"),
    "PINGPONG_HANDOVERS": ("back and forth", "ping", "bounce", "ذهاباً", "إياباً", "ping-pong"),
    "HO_FAILURE_HOTSPOT": (
        "handover fail",
        "handovers fail",
        "hand over",
        "فشل التسليم",
        "التسليم",
    ),
    "HIGH_PRB_UTILIZATION": ("prb", "congest", "full", "capacity", "PRB", "ازدحام", "السعة"),
    "LOAD_BALANCING_NEEDED": ("neighbour", "neighbor", "idle", "imbalance", "المجاورة", "خامل"),
    "RESOURCE_SCHED_ANOMALY": ("fair", "unfair", "skew", "scheduler", "عادل", "المجدول"),
    "CELL_OUTAGE_DETECTION": (
        "down",
        "outage",
        "unavailable",
        "no service",
        "availability",
        "متاح",
        "خارج الخدمة",
        "إتاحة",
    ),
    "DEGRADED_BACKHAUL": ("backhaul", "transport", "link", "jitter", "loss", "النقل", "الربط"),
    "SLA_VIOLATION_REPORT": ("sla", "contract", "customer", "compliance", "اتفاقية", "العميل"),
    "SLICE_ADMISSION_FAILURE": ("slice", "reject", "admission", "sessions", "الشريحة", "رفض"),
    "SLICE_QOS_DEGRADATION": ("slice", "qos", "class", "urllc", "embb", "الشريحة", "جودة"),
    "CONFIG_MISMATCH": (
        "baseline",
        "parameter",
        "drift",
        "maintenance",
        "config",
        "المعاملات",
        "الصيانة",
    ),
    "PCI_COLLISION": ("pci", "new site", "wrong cell", "integration", "الموقع الجديد", "PCI"),
}
CELL_ID = re.compile(r"\b(?:NR|LTE)-[A-Z]{3}-[A-Z]+-\d+\b")
CLUSTER_ID = re.compile(r"\bCL-[A-Z]{3}-\d+\b")
WINDOW_EN = re.compile(r"last (\d+) (hour|minute)s?|last (hour)")


def guess_intent(statement: str) -> NetworkIntent:
    """The intent whose keywords the statement matches most (ties: taxonomy order)."""
    text = statement.casefold()
    scores = {
        key: sum(word.casefold() in text for word in words) for key, words in KEYWORDS.items()
    }
    best = max(scores.values())
    return next(i for i in get_domain("network").catalog.intents if scores[i.key] == best)


def _window(statement: str) -> str:
    match = WINDOW_EN.search(statement)
    if match and match.group(1):
        return f"{match.group(1)}{'h' if match.group(2) == 'hour' else 'm'}"
    if match:
        return "1h"
    arabic = re.search(r"آخر (\d+) (ساعة|ساعات|دقيقة|دقائق)", statement)
    if arabic:
        return f"{arabic.group(1)}{'h' if arabic.group(2).startswith('ساع') else 'm'}"
    return "1h" if "الساعة الماضية" in statement else "3h"


class _Unread(dict):
    """Template values where a name the heuristic never read (the hotspot's ``neighbour_id``:
    it reads no neighbour audit) is blank: its calls and summary then say less, and the
    environment answers a blank argument with an error observation, instead of the agent
    raising a KeyError mid-episode."""

    def __missing__(self, name: str) -> str:
        return ""


class HeuristicAgent:
    """Keyword intent guess, then the guessed intent's gold chain, then a templated summary
    (network episodes only)."""

    needs_privileged = False
    domains = ("network",)  # its keywords and chains are the network intents'

    def __init__(self) -> None:
        self._intent: NetworkIntent | None = None
        self._values: dict[str, Any] = {}
        self._plan: list[Any] = []
        self._asked = False
        self._language = "en"

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        self._language = info.get("language", "en")
        self._intent = guess_intent(observation)
        self._values = {"window": _window(observation), "slice_id": "SL-EMBB-01"}
        if "urllc" in observation.casefold():
            self._values["slice_id"] = "SL-URLLC-01"
        self._learn(observation)
        self._plan = list(self._intent.gold_chain)
        self._asked = False

    def _learn(self, text: str) -> None:
        for pattern, key in ((CELL_ID, "cell_id"), (CLUSTER_ID, "cluster_id")):
            match = pattern.search(text)
            if match and key not in self._values:
                self._values[key] = match.group(0)
        if text.startswith("{"):
            try:
                output = json.loads(text)
            except json.JSONDecodeError:
                return
            if isinstance(output, dict):
                self._learn_output(output)

    def _learn_output(self, output: dict[str, Any]) -> None:
        if "baseline_config_id" in output:
            self._values["config_id"] = output["baseline_config_id"]
        cell = output.get("cell", {})
        if cell.get("cluster_id"):
            self._values.setdefault("cluster_id", cell["cluster_id"])
        if "neighbours" in output and "pci" in output:
            used = {output["pci"], *(n["pci"] for n in output["neighbours"])}
            self._values["free_pci"] = next(p for p in range(1008) if p not in used)
        backhaul = output.get("backhaul")
        if isinstance(backhaul, dict) and isinstance(backhaul.get("capacity_mbps"), int | float):
            self._values["link_capacity"] = backhaul["capacity_mbps"]

    def _fix(self) -> dict[str, Any]:
        assert self._intent is not None
        fix = {}
        for name, parameter in self._intent.fault.parameters.items():
            if name == "operational_state":
                continue
            if parameter.healthy == "$free_pci":
                fix[name] = self._values.get("free_pci", 1)
            elif parameter.healthy == "$link_capacity":
                fix[name] = self._values.get("link_capacity", 1000)
            else:
                fix[name] = parameter.healthy
        return fix

    def act(self, observation: str, info: dict[str, Any]) -> Any:
        assert self._intent is not None
        self._learn(observation)
        if "cell_id" not in self._values:
            if self._asked:  # the engineer did not say: give up on tools
                self._plan = []
            else:
                self._asked = True
                return "Which cell id and cluster are affected?"
        self._values.setdefault("cluster_id", self._values.get("cell_id", ""))
        if self._plan:
            step = self._plan.pop(0)
            return {
                "name": step.tool,
                "arguments": fill_gold_arguments(step.arguments, self._template_values()),
            }
        return {
            "name": RESERVED_SUBMIT,
            "arguments": {
                "intent": self._intent.label.in_lang(self._language),
                "summary": self._summary(),
            },
        }

    def _template_values(self) -> dict[str, Any]:
        assert self._intent is not None
        ticket = self._intent.resolution.ticket
        values = _Unread(
            {
                **self._values,
                "fix": self._fix(),
                "ticket_severity": ticket.severity if ticket else "minor",
                "ticket_team": ticket.team if ticket else "ran_optimization",
            }
        )
        values["changes"] = ", ".join(f"{k} → {v}" for k, v in values["fix"].items())
        values["ticket_summary"] = self._intent.resolution.root_cause.en.format_map(values)
        return values

    def _summary(self) -> str:
        assert self._intent is not None
        values = self._template_values()
        resolution = self._intent.resolution
        return (
            resolution.root_cause.in_lang(self._language).format_map(values)
            + " "
            + resolution.corrective_action.in_lang(self._language).format_map(values)
        )
