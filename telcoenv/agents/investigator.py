"""An investigating baseline: diagnoses from tool outputs with explicit decision rules, then fixes.

It plays the network domain only and never sees privileged information. From the engineer's
statement it takes identifiers alone: the cell id, the cluster id, a slice id and the time window
(never a KPI quote or a keyword), and it asks the engineer in a plain message for the cell or the
window when the statement gives none. Then it investigates:

1. ``oss_query`` on the cell: its KPIs, live configuration, configuration audit, active alarms,
   operational state, slice policies and backhaul.
2. The OSS record is scored against the decision rules (:data:`RULES`). When no rule of the
   *cause* kind holds there (no parameter, state or policy explains the symptoms; typically a
   PCI collision, which only the neighbour plan shows), ``neighbor_audit`` is read and the
   record is scored again. When the cell shows no cause, or a cause without any sign of the
   complaint (the intent's alarm or a symptom), and the cell came from the statement, the agent
   asks the engineer which cell is affected (a statement may name a neighbour in passing, and a
   neighbour may have a problem of its own) and investigates the cell of the answer if it is
   another one.
3. The best-scoring intent's public gold chain (``intents.yaml``) is followed, as the heuristic
   does, with arguments from the tool outputs: the cluster and baseline config ids of the OSS
   record, the slice whose policy the rules flagged, a free PCI from the neighbour audit, and
   the intent's standard corrective values. Reads already made with the same arguments are not
   repeated; the reads of the chain (``coverage_map``, ``neighbor_audit``) add evidence, and the
   diagnosis is scored again before the first change, so a chain read can still change it.
4. After a change the OSS record is read again (a re-measurement, which the sequence metrics do
   not count), and the resolution is submitted with the intent's label in the episode's
   language and a summary of what was measured, changed and re-measured.

Decision rules
--------------
One entry per intent in :data:`RULES` (an :class:`IntentRules`): a *cause* check (the
configuration, state or policy value that produces the fault, or for an SLA breach the breach
itself), the fault's *alarm* (its name in ``intents.yaml``) and a few *symptom* checks on KPI
counters. Each check names a measurement, a comparison, a threshold and why. Thresholds sit
between the healthy value of ``kpis.yaml`` / the standard value of ``intents.yaml`` and the
ranges the blueprints sample, following the healthy-vs-degraded targets and discriminating
signatures of the domain reference (telecom_domain.md 1.3, 3.1, 3.2). An intent scores

* ``CAUSE_WEIGHT`` (6) when its cause check holds,
* ``ALARM_WEIGHT`` (2) when the OSS record of the cell (its cell, site and transport link) shows
  the fault's alarm,
* ``SYMPTOM_WEIGHT`` (1) per symptom check that holds, at most ``SYMPTOM_CAP`` (3) of them,

so that a cause always outweighs another intent's alarm and symptoms together (6 > 2 + 3). The
highest score wins; ties go to the intent with a holding cause, then to the taxonomy order.
Two refinements keep causes apart: a configuration value the audit lists as off the approved
baseline counts as drift (for ``CONFIG_MISMATCH``), not as another intent's cause; and the short
time-to-trigger of ``PINGPONG_HANDOVERS`` does not count when a neighbour relation carries a
large positive offset, which is the too-early-handover cause of ``HO_FAILURE_HOTSPOT``.
``InvestigatorAgent(counters_only=True)`` keeps only the rules on KPI counters (no
configuration, state, policy, PCI plan or alarm), to measure which intents the counters alone
cannot tell apart. docs/evaluation.md prints the whole table (:func:`rules_markdown`).

The agent is deterministic (no random draws), never raises on an odd observation (a tool's error
JSON is retried once, after asking the engineer for the cell when the cell was unknown; anything
unreadable is skipped) and submits before the step budget runs out.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from telcoenv.agents.scripted import Action, GeneratorAgent
from telcoenv.catalog import fill_gold_arguments
from telcoenv.domains import get_domain
from telcoenv.tooling import RESERVED_SUBMIT, canonical_json

# A network intent (telcoenv.domains.network.models.Intent), untyped here: only domains import
# their own models.
NetworkIntent: TypeAlias = Any
Evidence: TypeAlias = dict[str, Any]

CAUSE_WEIGHT = 6
ALARM_WEIGHT = 2
SYMPTOM_WEIGHT = 1
SYMPTOM_CAP = 3
DEFAULT_WINDOW = "3h"  # when neither the statement nor the engineer gives one

CELL_ID = re.compile(r"\b(?:NR|LTE)-[A-Z]{3}-[A-Z]+-\d+\b")
CLUSTER_ID = re.compile(r"\bCL-[A-Z]{3}-\d+\b")
SLICE_ID = re.compile(r"\bSL-[A-Z]+-\d+\b")
_WINDOW_EN = re.compile(r"\blast (?:(\d+) )?(hour|minute|day)s?\b", re.IGNORECASE)
_WINDOW_AR = re.compile(r"آخر (\d+) (ساعة|ساعات|دقيقة|دقائق|يوم|أيام)")
_WINDOW_AR_WORDS = {"الساعتين الماضيتين": "2h", "الساعة الماضية": "1h"}


# --- decision rules ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    """One decision rule: ``measure op threshold`` holds for the evidence, and why it matters.

    ``measure`` names an evidence value (see :func:`read_oss`, :func:`read_neighbours`,
    :func:`read_coverage`); ``a|b`` takes the first of several names present. ``unless`` is a
    check that, when it holds, vetoes this one; ``given`` one that must hold too where its
    measurement is in the record (a setting is a cause only where its mechanism shows).
    """

    measure: str
    op: str
    threshold: Any
    why: str
    unless: Check | None = None
    given: Check | None = None

    @property
    def counter(self) -> bool:
        """Whether it reads KPI counters (not configuration, state, policy, PCI plan, alarms)."""
        return all(name.startswith(_COUNTER_PREFIXES) for name in self.measure.split("|"))

    def found(self, evidence: Evidence) -> tuple[str, Any] | None:
        for name in self.measure.split("|"):
            if name in evidence:
                return name, evidence[name]
        return None

    def holds(self, evidence: Evidence) -> bool:
        found = self.found(evidence)
        if found is None:
            return False
        name, value = found
        if name.startswith("config.") and name[7:] in evidence.get("off_baseline.names", ()):
            return False  # drift from the approved baseline: CONFIG_MISMATCH's evidence
        if not _compare(self.op, value, self.threshold):
            return False
        if self.given is not None and self.given.found(evidence) and not self.given.holds(evidence):
            return False
        return self.unless is None or not self.unless.holds(evidence)

    def describe(self) -> str:
        text = f"{self.measure} {self.op} {_number(self.threshold)}"
        if self.unless is not None:
            text += f", unless {self.unless.measure} {self.unless.op} {self.unless.threshold}"
        if self.given is not None:
            text += f", given {self.given.measure} {self.given.op} {self.given.threshold}"
        return text


_COUNTER_PREFIXES = ("kpi.", "backhaul.kpi.", "slice.kpi.", "coverage.", "neighbours.imbalance")

_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "<": lambda v, t: v < t,
    "<=": lambda v, t: v <= t,
    ">": lambda v, t: v > t,
    ">=": lambda v, t: v >= t,
    "|x| >=": lambda v, t: abs(v) >= t,
    "==": lambda v, t: v == t,
    "!=": lambda v, t: v != t,
    "in": lambda v, t: v in t,
}


def _compare(op: str, value: Any, threshold: Any) -> bool:
    if op in ("==", "!=", "in"):
        return _OPS[op](value, threshold)
    if op == "has":
        return isinstance(value, list | tuple | set | frozenset) and threshold in value
    if op == "has any":
        return isinstance(value, list | tuple | set | frozenset) and bool(
            set(threshold) & set(value)
        )
    numeric = isinstance(value, int | float) and not isinstance(value, bool)
    return numeric and math.isfinite(value) and _OPS[op](value, threshold)


@dataclass(frozen=True)
class IntentRules:
    """The decision rules of one intent: its cause, its alarm and its symptoms."""

    cause: Check
    alarm: str
    symptoms: tuple[Check, ...]
    #: The network model's threshold-crossing alarms of the symptom (shared across causes).
    model_alarms: tuple[str, ...] = ()

    def checks(self) -> list[tuple[str, Check]]:
        names = (self.alarm, *self.model_alarms)
        alarm = Check(
            "alarms", "has any", names, "the fault's alarm (intents.yaml) or its symptom's"
        )
        return [("cause", self.cause), ("alarm", alarm), *(("symptom", s) for s in self.symptoms)]


PRB = "kpi.PRB_util|kpi.prb_util"
BLER = "kpi.BLER|kpi.bler"

#: The decision rules, one entry per intent: measurement, comparison, threshold (in the units
#: the tools quote), and why. "a|b" reads the first of a and b that the record has.
# fmt: off
RULES: dict[str, IntentRules] = {
    "THROUGHPUT_DROP_DL": IntentRules(
        cause=Check("config.prb_reservation_pct", ">", 10,
                    "PRBs held in reservation starve DL scheduling (standard 5 %; fault 15-30 %)",
                    given=Check(PRB, ">=", 60, "reserved PRBs starve only a loaded cell"),
                    unless=Check("kpi.DL_thr_Mbps|kpi.throughput_p50_mbps", ">=", 40,
                                 "users served at 40 Mbps or more are not starved")),
        alarm="Cell Capacity Threshold Crossed",
        symptoms=(
            Check("kpi.DL_thr_Mbps|kpi.throughput_p50_mbps", "<", 20,
                  "DL user throughput far under its healthy 35 Mbps (blueprints 2-22 Mbps)"),
            Check(PRB, ">=", 80, "DL PRB utilisation over 80 % is congestion (reference 1.3)"),
        ),
        model_alarms=("Cell Congestion",),
    ),
    "BLER_ANOMALY": IntentRules(
        cause=Check("config.olla_bler_target_pct", ">", 14,
                    "link adaptation aims above the standard 10 % BLER (fault 18-28 %)",
                    given=Check(BLER, ">=", 10, "a high target shows as a high operating BLER")),
        alarm="MAC Excessive Frame Error Rate",
        symptoms=(
            Check(BLER, ">=", 10, "BLER past the 10 % OLLA target (healthy 5 %; blueprints 6-20)"),
            Check("kpi.DL_thr_Mbps|kpi.throughput_p50_mbps", "<", 20,
                  "retransmissions cut DL throughput under 20 Mbps (healthy 35-40)"),
        ),
        model_alarms=("Radio Link Quality Degraded",),
    ),
    "RLF_SPIKE": IntentRules(
        cause=Check("config.t310_ms", "<=", 200,
                    "T310 far under the standard 1000 ms turns fades into RLFs (fault 50-100 ms)",
                    given=Check("kpi.RLF_rate|kpi.rlf_rate", ">=", 1.0,
                                "a short T310 shows as radio link failures (2x the healthy "
                                "0.5 %)")),
        alarm="Radio Link Failure Rate High",
        symptoms=(
            Check("kpi.RLF_rate|kpi.rlf_rate", ">=", 2,
                  "RLF rate 4x its healthy 0.5 % (blueprints 2.5-8 %)"),
            Check("kpi.t310_expiry_rate", ">=", 5, "T310 expiries 5x their healthy 1 %"),
        ),
        model_alarms=("Radio Link Quality Degraded",),
    ),
    "HQOS_LATENCY_VIOLATION": IntentRules(
        cause=Check("config.hqos_priority_weight_pct", "<", 25,
                    "latency-critical queue weight under the standard 40 % (fault 5-15 %)",
                    given=Check("kpi.latency_ms", ">=", 12,
                                "a light queue weight shows as critical latency"),
                    unless=Check("backhaul.kpi.bh_latency_ms", ">=", 25,
                                 "a congested backhaul explains the cell's latency")),
        alarm="QoS Latency Threshold Crossed",
        symptoms=(
            Check("kpi.latency_ms", ">=", 35,
                  "latency past the 10-25 ms healthy NR band (reference 1.3; blueprints 35-100)"),
        ),
        model_alarms=("QoS Threshold Crossed",),
    ),
    "COVERAGE_HOLE": IntentRules(
        cause=Check("config.tilt_deg", ">=", 10,
                    "downtilt beyond every role's profile of 4-8 deg (fault 11-14 deg)"),
        alarm="Coverage KPI Degraded",
        symptoms=(
            Check("kpi.rsrp_dBm", "<=", -105, "weak RSRP (healthy -85 dBm; a hole < -110 dBm)"),
            Check("kpi.coverage_gap_ratio", ">=", 8,
                  "a share of the cell's area under -110 dBm (blueprints 8-45 %)"),
            Check("coverage.gap_bins_pct", ">=", 8,
                  "coverage-map bins 10 dB under the cell's median (healthy about 2 %)"),
        ),
        model_alarms=("Coverage Degraded",),
    ),
    "OVERSHOOTING_CELL": IntentRules(
        cause=Check("config.tilt_deg", "<=", 2,
                    "almost no downtilt: role profiles are 4-8 deg (fault 0-1.5 deg)"),
        alarm="Inter-Cell Interference Detected",
        symptoms=(
            Check("kpi.distant_serving_ratio", ">=", 10,
                  "UEs served at long range 3x the healthy 3 % (blueprints 10-40 %)"),
            Check("kpi.ta_p95_m", ">=", 500, "TA tail past the healthy 400 m p95"),
            Check("coverage.overlap_bins_pct", ">=", 25,
                  "bins with 3+ servers within 6 dB: an uptilted footprint overlaps"),
        ),
        model_alarms=("Cell Range Exceeded",),
    ),
    "BEAM_MISALIGNMENT": IntentRules(
        cause=Check("config.beam_azimuth_offset_deg", "|x| >=", 10,
                    "SSB beams steered off boresight (standard 0 deg; fault 15-35 deg)"),
        alarm="Antenna Calibration Abnormal",
        symptoms=(
            Check("kpi.ssb_rsrp_var_dB", ">=", 4, "SSB RSRP variation 2x its healthy 2 dB"),
            Check("kpi.bfr_events_per_hr", ">=", 5, "beam failure recoveries over the healthy 2/h"),
            Check("kpi.beam_fail_rate", ">=", 1, "beam failure rate over its healthy 0.4 %"),
            Check("coverage.beam_shift", ">=", 1,
                  "SSB user share centred a beam or more off the middle beams (reference 3.2)"),
        ),
        model_alarms=("Beam Failure Rate High",),
    ),
    "TA_DISTRIBUTION_DRIFT": IntentRules(
        cause=Check("config.cio_db", ">=", 3,
                    "a positive cell offset wins distant UEs (standard 0 dB; fault 4-8 dB)"),
        alarm="Timing Advance Distribution Abnormal",
        symptoms=(
            Check("kpi.ta_drift_index", ">=", 0.2, "TA drift index 4x its healthy 0.05"),
            Check("kpi.ta_p95", ">=", 250, "TA p95 past its healthy 200 m"),
            Check("kpi.distant_serving_ratio", ">=", 8,
                  "UEs served at long range over 2x the healthy 3 %"),
        ),
        model_alarms=("Cell Range Exceeded",),
    ),
    "PINGPONG_HANDOVERS": IntentRules(
        cause=Check("config.ttt_ms", "<", 480,
                    "time-to-trigger under the standard 480 ms lets brief fades trigger handovers "
                    "(blueprints 40-160 ms, with an A3 offset and hysteresis of 0-1.5 dB); with "
                    "a relation's large offset, that is the cause",
                    unless=Check("neighbours.max_cio_db", ">=", 4, "HO_FAILURE_HOTSPOT's cause")),
        alarm="Handover Ping-Pong Ratio High",
        symptoms=(
            Check("kpi.ping_pong_rate", ">=", 10,
                  "ping-pong ratio over 10 % is degraded (reference 1.3; healthy 3 %)"),
            Check("kpi.ho_attempts_per_5min", ">=", 30, "handover attempts 2x the healthy 15"),
        ),
        model_alarms=("Handover Performance Degraded",),
    ),
    "HO_FAILURE_HOTSPOT": IntentRules(
        cause=Check("neighbours.max_cio_db", ">=", 4,
                    "a neighbour relation's offset turns the handover margin toward it negative: "
                    "too-early handovers fail and bounce back (standard 0 dB; fault 6-16 dB)"),
        alarm="Handover Failure Rate High",
        symptoms=(
            Check("kpi.HO_success", "<", 95, "handover success under 95 % is degraded (ref. 1.3)"),
            Check("kpi.ho_fail_rate", ">=", 5, "handover failures 3x their healthy 1.5 %"),
        ),
        model_alarms=("Handover Performance Degraded",),
    ),
    "HIGH_PRB_UTILIZATION": IntentRules(
        cause=Check("config.mlb_enabled", "==", False,
                    "mobility load balancing is off (standard: on), so no load is offloaded",
                    given=Check(PRB, ">=", 70,
                                "without MLB only a cell past the usual 70 % trigger suffers")),
        alarm="Cell Congestion (PRB Threshold)",
        symptoms=(
            Check(PRB, ">=", 85, "PRBs nearly all used (congestion past 80-90 %, reference 1.3)"),
            Check("kpi.sched_latency_p95_ms", ">=", 20, "scheduler delay 2x its healthy 10 ms"),
        ),
        model_alarms=("Cell Congestion",),
    ),
    "LOAD_BALANCING_NEEDED": IntentRules(
        cause=Check("config.mlb_threshold_pct", ">=", 85,
                    "load-balancing trigger too high to fire (standard 70 %; fault 92-99 %)",
                    given=Check(PRB, ">=", 70, "a late trigger matters only past the usual 70 %")),
        alarm="Load Imbalance Detected",
        symptoms=(
            Check("kpi.imbalance_index|neighbours.imbalance_index", ">=", 0.15,
                  "far more load than the neighbours (healthy imbalance index 0.08)"),
            Check("kpi.neighbor_avg_PRB_util", "<=", 65,
                  "the neighbours have spare PRBs (blueprints 25-65 %)"),
        ),
        model_alarms=("Cell Congestion",),
    ),
    "RESOURCE_SCHED_ANOMALY": IntentRules(
        cause=Check("config.scheduler_type", "!=", "PF",
                    "the MAC scheduler is not proportional fair (fault: RR or MAX_CI)",
                    given=Check("kpi.prb_fairness_index", "<=", 0.8,
                                "a scheduler fault shows as unfair PRB shares")),
        alarm="Scheduler Fairness Degraded",
        symptoms=(
            Check("kpi.prb_fairness_index", "<=", 0.8, "fairness index under its healthy 0.92"),
            Check("kpi.prb_allocation_skew", ">=", 12, "PRB allocation skew over its healthy 5 %"),
            Check("kpi.p95_minus_p50_gap_mbps", ">=", 6,
                  "p95-p50 throughput gap over its healthy 4 Mbps"),
        ),
    ),
    "CELL_OUTAGE_DETECTION": IntentRules(
        cause=Check("state", "in", ("DEGRADED", "DOWN"),
                    "the cell is not ENABLED (a hardware or power fault at the site)"),
        alarm="Cell Unavailable",
        symptoms=(
            Check("kpi.availability", "<", 99.5, "availability under 99.5 % (reference 1.3)"),
            Check("kpi.call_setup_fail", ">=", 10, "call setups fail 10x the healthy 0.8 %"),
            Check("kpi.user_drop_rate", ">=", 5, "drops 10x the healthy 0.5 %"),
        ),
        model_alarms=("Cell Unavailable", "Cell Availability Degraded"),
    ),
    "DEGRADED_BACKHAUL": IntentRules(
        cause=Check("backhaul.shaper_pct_of_capacity", "<", 60,
                    "the link's egress shaper throttles it far under its capacity "
                    "(standard 100 %; fault 10-30 %)"),
        alarm="Transmission Link Degraded (IPPM)",
        symptoms=(
            Check("backhaul.kpi.bh_util", ">=", 80,
                  "the shaped transport over 80 % utilised (ref. 3.1 #13)"),
            Check("backhaul.kpi.bh_latency_ms|backhaul.kpi.bh_latency_p95_ms", ">=", 20,
                  "transport RTT over the 20 ms S1/N3 limit (reference 1.3; healthy 10 ms)"),
            Check("backhaul.kpi.bh_packet_loss|backhaul.kpi.bh_loss_burst_rate", ">=", 0.2,
                  "transport loss over its healthy 0.1 %"),
            Check("backhaul.kpi.jitter_p95_ms", ">=", 5, "transport jitter over the 4 ms limit"),
            Check("backhaul.kpi.queue_occupancy", ">=", 50,
                  "transport queue over half full (healthy 20 %): the shaper holds traffic back"),
        ),
        model_alarms=("Transmission Link Degraded",),
    ),
    "SLA_VIOLATION_REPORT": IntentRules(
        cause=Check("kpi.QoS", "<", 95,
                    "QoS compliance under the lowest contracted SLA target (95 %; healthy 99 %): "
                    "the breach itself is what is reported"),
        alarm="SLA Compliance Breach",
        symptoms=(
            Check("kpi.sla_violation_ratio", ">=", 10, "SLA breaches 5x their healthy 2 %"),
        ),
        model_alarms=("QoS Threshold Crossed",),
    ),
    "SLICE_ADMISSION_FAILURE": IntentRules(
        cause=Check("slice.admission_threshold_pct", "<", 85,
                    "a slice admits sessions only up to a low load (standard 95 %; fault 55-75 %)"),
        alarm="Slice Admission Rejects High",
        symptoms=(
            Check("slice.kpi.admission_denial_rate", ">=", 5,
                  "the slice rejects 5x its healthy 1 % of sessions"),
        ),
        model_alarms=("Slice SLA Degraded",),
    ),
    "SLICE_QOS_DEGRADATION": IntentRules(
        cause=Check("slice.priority_level", ">=", 5,
                    "a slice is scheduled at low priority (standard 1-3; fault 6-8)"),
        alarm="Slice QoS Target Missed",
        symptoms=(
            Check("kpi.QoS_class", "<", 95, "QoS-class compliance under target (healthy 99 %)"),
            Check("kpi.slice_violation_ratio|slice.kpi.slice_violation_ratio", ">=", 10,
                  "the slice misses its targets 5x more often than the healthy 2 %"),
        ),
        model_alarms=("Slice SLA Degraded",),
    ),
    "CONFIG_MISMATCH": IntentRules(
        cause=Check("off_baseline", ">=", 1,
                    "live parameters differ from the approved baseline (configuration audit)"),
        alarm="Configuration Baseline Mismatch",
        symptoms=(
            Check("kpi.mismatch_count", ">=", 1, "parameters off baseline (healthy 0)"),
            Check("kpi.param_drift_score", ">=", 0.2, "drift score 4x its healthy 0.05"),
        ),
    ),
    "PCI_COLLISION": IntentRules(
        cause=Check("neighbours.pci_collision", ">=", 1,
                    "a neighbour reuses the cell's PCI (neighbour audit): handovers go astray"),
        alarm="PCI Conflict Detected",
        symptoms=(
            Check("kpi.neighbor_pci_overlap", ">=", 5, "PCI overlap over 2x its healthy 2 %"),
            Check("kpi.HO_success", "<", 95,
                  "handovers to the wrong cell: success under 95 % is degraded (ref. 1.3)"),
        ),
        model_alarms=("Handover Performance Degraded",),
    ),
}
# fmt: on


@dataclass(frozen=True)
class Assessment:
    """How well one intent explains the evidence: its score and the checks that held."""

    intent: str
    score: int
    cause: bool
    held: tuple[tuple[str, Check], ...]


#: The diagnosis of a breach nothing else explains: an SLA breach is reported as such only when
#: no configuration, state or policy cause of another intent holds (with one, that is the fault).
RESIDUAL = "SLA_VIOLATION_REPORT"


def assess(evidence: Evidence, counters_only: bool = False) -> list[Assessment]:
    """Every intent of :data:`RULES` scored on the evidence, best first (see the module doc)."""
    helds: dict[str, list[tuple[str, Check]]] = {}
    for key, rules in RULES.items():
        helds[key] = [
            (kind, check)
            for kind, check in rules.checks()
            if not (counters_only and not check.counter) and check.holds(evidence)
        ]
    explained = any(
        ("cause", RULES[key].cause) in held for key, held in helds.items() if key != RESIDUAL
    )
    if explained:
        helds[RESIDUAL] = [(kind, c) for kind, c in helds[RESIDUAL] if kind != "cause"]
    results = []
    for index, (key, held) in enumerate(helds.items()):
        kinds = [kind for kind, _ in held]
        score = (
            CAUSE_WEIGHT * kinds.count("cause")
            + ALARM_WEIGHT * kinds.count("alarm")
            + SYMPTOM_WEIGHT * min(SYMPTOM_CAP, kinds.count("symptom"))
        )
        results.append((-score, "cause" not in kinds, index, key, tuple(held)))
    results.sort(key=lambda row: row[:3])
    return [Assessment(key, -neg, not no_cause, held) for neg, no_cause, _, key, held in results]


def rules_markdown() -> str:
    """:data:`RULES` as a Markdown table (docs/evaluation.md shows it)."""
    lines = ["| intent | kind | measurement and threshold | why |", "|---|---|---|---|"]
    for key, rules in RULES.items():
        for kind, check in rules.checks():
            if kind == "alarm":
                shown = "alarm " + " or ".join(f"“{name}”" for name in check.threshold)
            else:
                shown = f"`{check.describe()}`"
            cells = [key, kind, shown, check.why]
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


# --- evidence from tool outputs ------------------------------------------------------------------


def _positive(value: Any) -> bool:
    """A finite number above zero (not a bool)."""
    numeric = isinstance(value, int | float) and not isinstance(value, bool)
    return numeric and math.isfinite(value) and value > 0


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _kpi_values(table: Any, prefix: str, evidence: Evidence) -> None:
    for name, quoted in _dict(table).items():
        value = _dict(quoted).get("value")
        if isinstance(value, int | float) and not isinstance(value, bool):
            evidence[prefix + name] = value
            evidence["unit:" + prefix + name] = str(_dict(quoted).get("unit", ""))


def read_oss(output: Mapping[str, Any]) -> Evidence:
    """Evidence from an ``oss_query`` record.

    ``config.<parameter>``, ``state``, ``off_baseline`` (count) and ``off_baseline.names``,
    ``alarms`` (names), ``kpi.<name>``, ``backhaul.<parameter>`` and ``backhaul.kpi.<name>``,
    and per slice the worst policy values: ``slice.admission_threshold_pct`` (lowest),
    ``slice.priority_level`` (highest number, i.e. lowest priority) and ``slice.kpi.<name>``
    (highest), each with the slice it came from (``slice.<name>.id``).
    """
    evidence: Evidence = {}
    cell = _dict(output.get("cell"))
    if "operational_state" in cell:
        evidence["state"] = cell["operational_state"]
    for name, value in _dict(output.get("configuration")).items():
        evidence["config." + name] = value
    off = [str(n) for n in _list(_dict(output.get("config_audit")).get("parameters_off_baseline"))]
    evidence["off_baseline"], evidence["off_baseline.names"] = len(off), off
    evidence["alarms"] = [
        str(alarm.get("name")) for alarm in _list(output.get("active_alarms")) if _dict(alarm)
    ]
    _kpi_values(output.get("kpis"), "kpi.", evidence)
    backhaul = _dict(output.get("backhaul"))
    for name, value in _dict(backhaul.get("configuration")).items():
        evidence["backhaul." + name] = value
    capacity, shaper = backhaul.get("capacity_mbps"), evidence.get("backhaul.bh_shaper_mbps")
    if _positive(capacity):
        evidence["backhaul.capacity_mbps"] = capacity
        if _positive(shaper):
            evidence["backhaul.shaper_pct_of_capacity"] = round(100 * shaper / capacity, 1)
    _kpi_values(backhaul.get("kpis"), "backhaul.kpi.", evidence)
    for network_slice in _list(output.get("slices")):
        network_slice = _dict(network_slice)
        slice_id = str(network_slice.get("slice_id", ""))
        policy = _dict(network_slice.get("policy"))
        values: Evidence = {}
        _kpi_values(network_slice.get("kpis"), "slice.kpi.", values)
        for name in ("admission_threshold_pct", "priority_level"):
            if isinstance(policy.get(name), int | float):
                values["slice." + name] = policy[name]
        for name, value in values.items():
            if name.startswith("unit:"):
                evidence.setdefault(name, value)
                continue
            best = min if name == "slice.admission_threshold_pct" else max
            if name not in evidence or best(value, evidence[name]) != evidence[name]:
                evidence[name], evidence[name + ".id"] = value, slice_id
    return evidence


def read_neighbours(output: Mapping[str, Any]) -> Evidence:
    """Evidence from a ``neighbor_audit``: ``neighbours.pci_collision`` (how many neighbours
    reuse the cell's PCI), ``neighbours.imbalance_index`` and ``neighbours.max_cio_db`` (the
    largest offset of the cell's relations its UEs hand over on, and ``.cell`` its neighbour: an
    offset on a relation nobody uses changes nothing)."""
    findings = [_dict(f) for f in _list(output.get("findings"))]
    evidence: Evidence = {
        "neighbours.pci_collision": sum(f.get("type") == "pci_collision" for f in findings),
        "neighbours.pci_collision.cells": sorted(
            str(cell)
            for f in findings
            if f.get("type") == "pci_collision"
            for cell in _list(f.get("cells"))[1:]
        ),
    }
    imbalance = _dict(output.get("load")).get("imbalance_index")
    if isinstance(imbalance, int | float):
        evidence["neighbours.imbalance_index"] = imbalance
    offsets = [
        (row["cio_db"], str(row.get("cell_id")))
        for row in map(_dict, _list(output.get("neighbours")))
        if isinstance(row.get("cio_db"), int | float)
        and not isinstance(row["cio_db"], bool)
        and _number_or_zero(row.get("ho_attempts_per_hour")) > 0
    ]
    if offsets:
        value, cell = max(offsets, key=lambda item: item[0])
        evidence["neighbours.max_cio_db"], evidence["neighbours.max_cio_db.cell"] = value, cell
    return evidence


def _number_or_zero(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def read_coverage(output: Mapping[str, Any]) -> Evidence:
    """Evidence from a ``coverage_map``: ``coverage.gap_bins_pct``, ``coverage.overlap_bins_pct``
    and ``coverage.beam_shift`` (how many beams the SSB user share is centred off the middle)."""
    evidence: Evidence = {}
    summary = _dict(output.get("summary"))
    for name, key in (
        ("gap_bins_pct", "coverage_gap_bins_pct"),
        ("overlap_bins_pct", "overlap_bins_pct"),
    ):
        if isinstance(summary.get(key), int | float):
            evidence["coverage." + name] = summary[key]
            evidence["unit:coverage." + name] = "%"
    shares = _list(_dict(output.get("ssb_beams")).get("user_share_per_beam"))
    if shares and all(isinstance(s, int | float) for s in shares) and sum(shares) > 0:
        centre = sum(i * s for i, s in enumerate(shares)) / sum(shares)
        evidence["coverage.beam_shift"] = round(abs(centre - (len(shares) - 1) / 2), 2)
    return evidence


# --- identifiers from text -----------------------------------------------------------------------


def find_window(text: str) -> str | None:
    """A time window such as ``"the last 3 hours"`` or ``"آخر 3 ساعات"`` as ``"3h"``.

    >>> find_window("Please look at the last hour."), find_window("خلال آخر 12 ساعة")
    ('1h', '12h')
    >>> find_window("الساعتين الماضيتين"), find_window("in the evening busy hour") is None
    ('2h', True)
    """
    match = _WINDOW_EN.search(text)
    if match:
        amount, unit = int(match.group(1) or 1), match.group(2).lower()
        return f"{amount * 24}h" if unit == "day" else f"{amount}{unit[0]}"
    match = _WINDOW_AR.search(text)
    if match:
        amount, unit = int(match.group(1)), match.group(2)
        if unit in ("يوم", "أيام"):
            return f"{amount * 24}h"
        return f"{amount}{'h' if unit.startswith('ساع') else 'm'}"
    return next((w for phrase, w in _WINDOW_AR_WORDS.items() if phrase in text), None)


@dataclass
class Case:
    """The identifiers of the case: what the statement and the engineer's replies name."""

    cell: str | None = None
    cluster: str | None = None
    slice: str | None = None
    window: str | None = None

    def learn(self, text: str) -> None:
        """Take identifiers (never symptoms) from the engineer's text."""
        for pattern, name in ((CELL_ID, "cell"), (CLUSTER_ID, "cluster"), (SLICE_ID, "slice")):
            match = pattern.search(text)
            if match and getattr(self, name) is None:
                setattr(self, name, match.group(0))
        if self.window is None:
            self.window = find_window(text)


# --- phrases -------------------------------------------------------------------------------------

PHRASES: dict[str, dict[str, str]] = {
    "en": {
        "ask_cell": "Which cell id and cluster are affected?",
        "ask_window": "Over what time window should I check the counters?",
        "approve": "May I apply {tool} on {target}?",
        "diagnosis": "{root_cause} Evidence: {evidence}. Corrective action: {corrective_action}",
        "steps": "Steps taken: we {actions}.",
        "remeasured": "Re-measured after the change: {items}.",
        "unchanged": "Re-measured after the change: the OSS record of {cell_id} was read again.",
        "follow_up": "Follow-up: monitor {cell_id} through the next busy period and roll back if "
        "the KPIs do not recover.",
        "change": "Change {id}.",
        "ticket": "Ticket {id}.",
        "kpi": "{name} at {value}",
        "parameter": "{name} = {value}",
        "alarm": "active alarm “{name}”",
        "state": "operational state {value}",
        "off_baseline": "{count} parameter(s) off the approved baseline ({names})",
        "pci": "PCI shared with {cells}",
        "relation": "an offset of {value} dB on the relation to {cell}",
        "on_slice": "{text} on {slice_id}",
        "nothing": "no decisive measurement",
        "and": " and ",
        "comma": ", ",
    },
    "ar": {
        "ask_cell": "ما معرف الخلية المتأثرة وما مجموعتها؟",
        "ask_window": "ما الفترة الزمنية التي أراجع فيها العدادات؟",
        "approve": "هل يمكنني تنفيذ {tool} على {target}؟",
        "diagnosis": "{root_cause} الأدلة: {evidence}. الإجراء التصحيحي: {corrective_action}",
        "steps": "الخطوات المنفذة: {actions}.",
        "remeasured": "إعادة القياس بعد التغيير: {items}.",
        "unchanged": "إعادة القياس بعد التغيير: أعدنا قراءة سجل OSS للخلية {cell_id}.",
        "follow_up": "المتابعة: مراقبة الخلية {cell_id} خلال فترة الذروة القادمة والتراجع عن "
        "التغيير إن لم تتعافَ المؤشرات.",
        "change": "التغيير {id}.",
        "ticket": "التذكرة {id}.",
        "kpi": "{name} عند {value}",
        "parameter": "{name} = {value}",
        "alarm": "إنذار نشط “{name}”",
        "state": "الحالة التشغيلية {value}",
        "off_baseline": "{count} من المعاملات خارج الإعداد المرجعي المعتمد ({names})",
        "pci": "معرف PCI مشترك مع {cells}",
        "relation": "إزاحة {value} ديسيبل على علاقة الجوار مع {cell}",
        "on_slice": "{text} على الشريحة {slice_id}",
        "nothing": "لا يوجد قياس حاسم",
        "and": " و",
        "comma": "، ",
    },
}
ACTIONS: dict[str, dict[str, str]] = {
    "oss_query": {
        "en": "reviewed the OSS record of {cell_id} over {window}",
        "ar": "راجعنا سجل OSS للخلية {cell_id} خلال {window}",
    },
    "kpi_timeseries": {
        "en": "analysed the {kpi} time series",
        "ar": "حللنا السلسلة الزمنية لمؤشرات {kpi}",
    },
    "coverage_map": {
        "en": "inspected the coverage map of {area}",
        "ar": "فحصنا خريطة التغطية للمنطقة {area}",
    },
    "neighbor_audit": {
        "en": "audited the neighbour relations of {cell_id}",
        "ar": "دققنا علاقات الجوار للخلية {cell_id}",
    },
    "optimize_cell": {
        "en": "applied {changes} on {cell_id}",
        "ar": "طبقنا {changes} على الخلية {cell_id}",
    },
    "optimize_slice": {
        "en": "updated the policy of slice {slice_id} ({changes})",
        "ar": "حدّثنا سياسة الشريحة {slice_id} ({changes})",
    },
    "push_config": {
        "en": "pushed the approved baseline {config_id} back to the cell",
        "ar": "أعدنا دفع الإعداد المرجعي المعتمد {config_id} إلى الخلية",
    },
    "create_ticket": {
        "en": "opened a {severity} ticket for the {team} team",
        "ar": "فتحنا تذكرة بأولوية {severity} لفريق {team}",
    },
}
UNITS_AR = {
    "Mbps": "ميجابت/ث",
    "ms": "مللي ثانية",
    "dB": "ديسيبل",
    "dBm": "ديسيبل ميلي واط",
    "m": "متر",
    "km": "كم",
    "h": "ساعة",
    "per hour": "في الساعة",
    "per min": "في الدقيقة",
    "per 5 min": "كل 5 دقائق",
}


def window_phrase(window: str, lang: str) -> str:
    """``"3h"`` as "the last 3 hours" / "آخر 3 ساعات".

    >>> window_phrase("3h", "en"), window_phrase("1h", "en"), window_phrase("24h", "ar")
    ('the last 3 hours', 'the last hour', 'آخر 24 ساعة')
    """
    match = re.fullmatch(r"(\d+)([mhd])", window)
    if match is None:
        return window
    amount, unit = int(match.group(1)), match.group(2)
    if unit == "d":
        amount, unit = amount * 24, "h"
    if lang == "ar":
        noun = ("ساعة" if amount > 10 else "ساعات") if unit == "h" else "دقيقة"
        return "الساعة الماضية" if (amount, unit) == (1, "h") else f"آخر {amount} {noun}"
    noun = "hour" if unit == "h" else "minute"
    return f"the last {noun}" if amount == 1 else f"the last {amount} {noun}s"


def _number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _changes_text(fix: Mapping[str, Any]) -> str:
    """``tilt_deg → 4``, a relation's ``neighbour_cio_db[NR-URB-MACRO-412] → 0``."""
    parts = []
    for name, value in fix.items():
        if isinstance(value, Mapping):
            parts += [f"{name}[{key}] → {item}" for key, item in value.items()]
        else:
            parts.append(f"{name} → {value}")
    return ", ".join(parts) or "no parameter change"


class _Fields(dict):
    """Template fields that leave an unknown ``{name}`` in place instead of raising."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def _join(items: list[str], lang: str) -> str:
    phrases = PHRASES[lang]
    if len(items) <= 1:
        return "".join(items)
    return phrases["comma"].join(items[:-1]) + phrases["and"] + items[-1]


# --- the agent -----------------------------------------------------------------------------------


@dataclass
class _Call:
    tool: str
    arguments: dict[str, Any]
    output: dict[str, Any] | None
    remeasure: bool


class InvestigatorAgent(GeneratorAgent):
    """Reads the OSS (and the neighbour plan when needed), scores every intent with the decision
    rules, follows the winner's chain with measured arguments, re-measures, and submits."""

    needs_privileged = False
    domains = ("network",)  # its decision rules and chains are the network intents'

    def __init__(self, max_steps: int = 20, counters_only: bool = False) -> None:
        self.max_steps = max_steps
        self.counters_only = counters_only
        self.diagnosis: list[Assessment] = []
        self._language = "en"
        self._policy: Generator[Action, str, None] | None = None
        self._started = False
        self._evidence: Evidence = {}

    @property
    def evidence(self) -> Evidence:
        """What the episode's reads measured before any change (see :func:`read_oss`)."""
        return dict(self._evidence)

    # --- protocol ------------------------------------------------------------------------------

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        language = info.get("language")
        self._language = language if language in PHRASES else "en"
        self._approval = info.get("require_approval") is True
        catalog = get_domain("network").catalog
        self._intents: dict[str, NetworkIntent] = {i.key: i for i in catalog.intents}
        self._tools = catalog.tools
        self._case = Case()
        self._case.learn(observation if isinstance(observation, str) else "")
        self._evidence: Evidence = {}
        self._after: Evidence = {}
        self._calls: list[_Call] = []
        self._reads: set[str] = set()
        self._oss_arguments: dict[str, Any] | None = None
        self._pcis: tuple[int, list[int]] | None = None
        self._cluster: str | None = None
        self._config_id = ""
        self._changed = False
        self._asked_cell = False
        self._error: dict[str, Any] = {}
        self._intent: NetworkIntent | None = None
        self.diagnosis = []
        self._start_play()

    # --- the investigation ---------------------------------------------------------------------

    def _play(self) -> Generator[Action, str, None]:
        case = self._case
        if case.cell is None:
            self._asked_cell = True
            case.learn((yield self._phrase("ask_cell")))
        if case.window is None:
            case.window = find_window((yield self._phrase("ask_window"))) or DEFAULT_WINDOW
        if case.cell is None and case.cluster is not None:
            # The coverage map of the cluster names the cell it is drawn around.
            output = yield from self._read(
                "coverage_map", {"area": case.cluster, "resolution": "100m"}
            )
            serving = _dict(_dict(output).get("ssb_beams")).get("cell_id")
            if isinstance(serving, str):
                case.cell = serving
        if case.cell is None:
            return  # nothing to investigate: submit
        yield from self._investigate()
        if not self._complaint_shows() and not self._asked_cell:
            # Nothing at this cell explains the complaint: is it the cell the engineer means
            # (a statement may name a neighbour in passing)?
            self._asked_cell = True
            reply = yield self._phrase("ask_cell")
            found = CELL_ID.search(reply if isinstance(reply, str) else "")
            if found and found.group(0) != case.cell:
                case.cell = found.group(0)
                self._evidence, self._pcis = {}, None
                yield from self._investigate()
        yield from self._follow()

    def _investigate(self) -> Generator[Action, str, None]:
        """The OSS record of the cell, and its neighbour audit when no cause shows in it."""
        cell = self._case.cell
        yield from self._read("oss_query", {"cell_id": cell, "window": self._case.window})
        best = self._decide()
        if not best.cause or best.intent == RESIDUAL:  # nothing in the record explains it: PCIs?
            yield from self._read("neighbor_audit", {"cell_id": self._case.cell})
            self._decide()

    def _complaint_shows(self) -> bool:
        """Whether the best diagnosis has a cause and a sign of the complaint (its alarm or a
        symptom) at this cell; a cause alone may be a neighbour's own problem, and a breach
        nothing here explains may be a neighbour's complaint."""
        best = self.diagnosis[0] if self.diagnosis else None
        if best is None or best.intent == RESIDUAL:  # a breach with no cause here: whose is it?
            return False
        return best.cause and any(k != "cause" for k, _ in best.held)

    def _decide(self) -> Assessment:
        self.diagnosis = assess(self._evidence, self.counters_only)
        best = self.diagnosis[0]
        self._intent = self._intents.get(best.intent)
        return best

    def _follow(self) -> Generator[Action, str, None]:
        """The chosen intent's gold chain; before the first change the diagnosis is scored
        again, and a different winner's chain is followed instead (twice at most)."""
        switches = 0
        while self._intent is not None:
            intent, switched = self._intent, False
            for step in intent.gold_chain:
                spec = self._tools.get(step.tool)
                change = bool(spec is not None and spec.approval)
                if change and not self._changed:
                    self._decide()
                    if self._intent is not intent and switches < 2:
                        switches, switched = switches + 1, True
                        break
                    self._intent = intent  # no more switching: finish the chain under way
                arguments = fill_gold_arguments(step.arguments, self._values(intent))
                if change:
                    yield from self._change(step.tool, arguments)
                elif step.tool == "create_ticket":
                    yield from self._call(step.tool, arguments)
                elif self._key(step.tool, arguments) not in self._reads:
                    yield from self._read(step.tool, arguments)
            if not switched:
                return

    def _call(self, tool: str, arguments: dict[str, Any]) -> Generator[Action, str, Any]:
        """One tool call; returns its output (None for an error or anything unreadable)."""
        observation = yield {"name": tool, "arguments": arguments}
        output: Any = None
        with contextlib.suppress(TypeError, ValueError):
            output = json.loads(observation)
        output = output if isinstance(output, dict) else None
        error = output.get("error") if output is not None else None
        if error is not None:
            self._error = _dict(error)
            output = None
        remeasure = self._changed and self._key(tool, arguments) in self._reads
        self._calls.append(_Call(tool, dict(arguments), output, remeasure))
        if output is not None:
            self._learn(tool, arguments, output)
        return output

    def _read(self, tool: str, arguments: dict[str, Any]) -> Generator[Action, str, Any]:
        """A read, retried once after an error: with the cell the engineer names when the tool
        did not know the cell, with a plain window when the window was refused, else as it was."""
        self._error = {}
        output = yield from self._call(tool, arguments)
        if output is not None:
            return output
        kind, message = self._error.get("type"), str(self._error.get("message", ""))
        arguments = dict(arguments)
        if kind == "not_found" and "cell_id" in arguments and not self._asked_cell:
            self._asked_cell = True
            reply = yield self._phrase("ask_cell")
            found = CELL_ID.search(reply if isinstance(reply, str) else "")
            if found:
                self._case.cell = arguments["cell_id"] = found.group(0)
        elif "window" in arguments and "window" in message:
            self._case.window = arguments["window"] = "1h"
        return (yield from self._call(tool, arguments))

    def _change(self, tool: str, arguments: dict[str, Any]) -> Generator[Action, str, None]:
        """A change, after the engineer's approval when the episode requires it; then the OSS
        record is read again to see its effect."""
        if self._approval:
            yield self._approval_request(tool, arguments)
        self._error = {}
        output = yield from self._call(tool, arguments)
        if output is None and self._error.get("type") == "approval_required":
            self._approval = True
            yield self._approval_request(tool, arguments)
            output = yield from self._call(tool, arguments)
        if output is not None and output.get("status") == "applied":
            self._changed = True
            if self._oss_arguments is not None:
                yield from self._call("oss_query", self._oss_arguments)

    def _learn(self, tool: str, arguments: dict[str, Any], output: dict[str, Any]) -> None:
        if tool in ("oss_query", "neighbor_audit", "coverage_map", "kpi_timeseries"):
            if self._changed:
                if tool == "oss_query":
                    self._after = read_oss(output)
                return
            self._reads.add(self._key(tool, arguments))
        if tool == "oss_query":
            self._evidence.update(read_oss(output))
            self._oss_arguments = dict(arguments)
            cell = _dict(output.get("cell"))
            if isinstance(cell.get("cluster_id"), str):
                self._cluster = cell["cluster_id"]
            if isinstance(output.get("baseline_config_id"), str):
                self._config_id = output["baseline_config_id"]
        elif tool == "neighbor_audit":
            self._evidence.update(read_neighbours(output))
            pcis = [_dict(n).get("pci") for n in _list(output.get("neighbours"))]
            own = output.get("pci")
            if isinstance(own, int) and all(isinstance(p, int) for p in pcis):
                self._pcis = (own, pcis)
        elif tool == "coverage_map":
            self._evidence.update(read_coverage(output))

    @staticmethod
    def _key(tool: str, arguments: dict[str, Any]) -> str:
        return tool + canonical_json(arguments)

    # --- arguments -----------------------------------------------------------------------------

    def _free_pci(self) -> int:
        """The lowest PCI unused around the cell and outside the mod-3 group of its two nearest
        neighbours (``$free_pci`` in intents.yaml)."""
        own, neighbours = self._pcis or (None, [])
        used = {own, *neighbours}
        avoid = {pci % 3 for pci in neighbours[:2]}
        candidates = [p for p in range(1008) if p not in used]
        preferred = [p for p in candidates if p % 3 not in avoid]
        return (preferred or candidates)[0]

    def _fix(self, intent: NetworkIntent) -> dict[str, Any]:
        """The intent's standard corrective values (intents.yaml): a free PCI and the link's
        capacity where the taxonomy says so; a relation's on the relation with the largest
        offset the neighbour audit showed."""
        fix: dict[str, Any] = {}
        if intent.fault.target == "relation":
            neighbour = self._evidence.get("neighbours.max_cio_db.cell")
            return {
                name: {neighbour: parameter.healthy}
                for name, parameter in intent.fault.parameters.items()
                if neighbour is not None
            }
        for name, parameter in intent.fault.parameters.items():
            if name == "operational_state":
                continue
            if parameter.healthy == "$free_pci":
                fix[name] = self._free_pci()
            elif parameter.healthy == "$link_capacity":  # the link's line rate, from the OSS
                fix[name] = self._evidence.get("backhaul.capacity_mbps", 1000)
            else:
                fix[name] = parameter.healthy
        return fix

    def _slice_id(self, intent: NetworkIntent) -> str:
        """The slice the rules flagged for this intent, else the one the engineer named."""
        measure = {"SLICE_ADMISSION_FAILURE": "slice.admission_threshold_pct"}.get(
            intent.key, "slice.priority_level"
        )
        for name in (measure, "slice.kpi.slice_violation_ratio", "slice.kpi.admission_denial_rate"):
            if name + ".id" in self._evidence:
                return str(self._evidence[name + ".id"])
        return self._case.slice or "SL-EMBB-01"

    def _values(self, intent: NetworkIntent) -> dict[str, Any]:
        """The values that fill the chain's argument templates (see intents.yaml)."""
        case, ticket = self._case, intent.resolution.ticket
        fix = self._fix(intent)
        values = _Fields(
            cell_id=case.cell or "",
            cluster_id=self._cluster or case.cluster or case.cell or "",
            window=case.window or DEFAULT_WINDOW,
            slice_id=self._slice_id(intent),
            config_id=self._config_id,
            fix=fix,
            changes=_changes_text(fix),
            ticket_severity=ticket.severity if ticket else "minor",
            ticket_team=ticket.team if ticket else "ran_optimization",
        )
        values["ticket_summary"] = self._report(intent, "en", values, closing=False)
        return values

    # --- messages and the resolution -----------------------------------------------------------

    def _phrase(self, name: str, **fields: Any) -> str:
        return PHRASES[self._language][name].format(**fields)

    def _approval_request(self, tool: str, arguments: dict[str, Any]) -> str:
        target = next(
            (arguments[k] for k in ("cell_id", "slice_id", "config_id") if k in arguments), ""
        )
        return self._phrase("approve", tool=tool, target=target)

    def _submit(self) -> dict[str, Any]:
        if self._intent is None and self._evidence:
            self._decide()
        intent = self._intent or self._intents.get(
            self.diagnosis[0].intent if self.diagnosis else "", next(iter(self._intents.values()))
        )
        try:
            summary = self._report(intent, self._language, self._values(intent), closing=True)
        except Exception:  # a summary is always sent, even from an odd episode
            summary = intent.resolution.root_cause.in_lang(self._language)
        return {
            "name": RESERVED_SUBMIT,
            "arguments": {"intent": intent.label.in_lang(self._language), "summary": summary},
        }

    def _held(self, intent: NetworkIntent) -> list[tuple[str, Check]]:
        for assessment in self.diagnosis:
            if assessment.intent == intent.key:
                return list(assessment.held)
        return []

    def _evidence_text(self, kind: str, check: Check, lang: str) -> str:
        phrases, evidence = PHRASES[lang], self._evidence
        if kind == "alarm":  # the name the OSS record shows
            shown = [n for n in check.threshold if n in evidence.get("alarms", ())]
            return phrases["alarm"].format(name=shown[0] if shown else check.threshold[0])
        found = check.found(evidence)
        if found is None:
            return ""
        name, value = found
        if name == "state":
            return phrases["state"].format(value=value)
        if name == "off_baseline":
            names = ", ".join(evidence.get("off_baseline.names", ()))
            return phrases["off_baseline"].format(count=value, names=names)
        if name == "neighbours.pci_collision":
            cells = ", ".join(evidence.get("neighbours.pci_collision.cells", ()))
            return phrases["pci"].format(cells=cells)
        if name == "neighbours.max_cio_db":
            cell = evidence.get("neighbours.max_cio_db.cell", "")
            return phrases["relation"].format(value=_number(value), cell=cell)
        short = name.rsplit(".", 1)[-1]
        if "unit:" + name in evidence:
            text = phrases["kpi"].format(name=short, value=self._quote(name, value, lang))
        else:
            text = phrases["parameter"].format(name=short, value=_number(value))
        if name.startswith("slice.") and name + ".id" in evidence:
            text = phrases["on_slice"].format(text=text, slice_id=evidence[name + ".id"])
        return text

    def _quote(self, name: str, value: Any, lang: str, evidence: Evidence | None = None) -> str:
        unit = (evidence or self._evidence).get("unit:" + name, "")
        unit = UNITS_AR.get(unit, unit) if lang == "ar" else unit
        number = _number(value)
        return number + unit if unit in ("%", "") else f"{number} {unit}"

    def _remeasured(self, intent: NetworkIntent, lang: str, cell_id: str) -> str:
        if not self._changed:
            return ""
        items = []
        for _, check in self._held(intent):
            found = check.found(self._evidence)
            if found is None or not found[0].startswith(("kpi.", "backhaul.kpi.")):
                continue
            name, before = found
            after = self._after.get(name)
            if after is not None:
                items.append(
                    f"{name.rsplit('.', 1)[-1]} {self._quote(name, before, lang)} → "
                    f"{self._quote(name, after, lang, self._after)}"
                )
        if not items:
            return PHRASES[lang]["unchanged"].format(cell_id=cell_id)
        return PHRASES[lang]["remeasured"].format(items=_join(items, lang))

    def _actions(self, values: Mapping[str, Any], lang: str) -> list[str]:
        done = []
        for call in self._calls:
            if call.output is None or call.remeasure or call.tool not in ACTIONS:
                continue
            fields = _Fields(values)
            fields.update(call.arguments)
            fields["window"] = window_phrase(str(fields.get("window", "")), lang)
            fields["severity"] = call.arguments.get("severity", "")
            fields["team"] = call.arguments.get("team", "")
            if call.tool == "optimize_cell" or call.tool == "optimize_slice":
                changes = call.arguments.get("changes") or call.arguments.get("policy") or {}
                fields["changes"] = ", ".join(f"{k} → {v}" for k, v in _dict(changes).items())
            done.append(ACTIONS[call.tool][lang].format_map(fields))
        return done

    def _report(
        self, intent: NetworkIntent, lang: str, values: Mapping[str, Any], *, closing: bool
    ) -> str:
        """The resolution summary (or, without ``closing``, the ticket text) in ``lang``."""
        fields = _Fields(values)
        fields["window"] = window_phrase(str(values.get("window", "")), lang)
        resolution = intent.resolution
        items = [self._evidence_text(kind, check, lang) for kind, check in self._held(intent)]
        items = [item for item in items if item] or [PHRASES[lang]["nothing"]]
        text = PHRASES[lang]["diagnosis"].format(
            root_cause=resolution.root_cause.in_lang(lang).format_map(fields),
            evidence=_join(items, lang),
            corrective_action=resolution.corrective_action.in_lang(lang).format_map(fields),
        )
        if not closing:
            return text
        parts = [text]
        actions = self._actions(values, lang)
        if actions:
            parts.append(PHRASES[lang]["steps"].format(actions=_join(actions, lang)))
        parts.append(self._remeasured(intent, lang, fields["cell_id"]))
        parts.append(PHRASES[lang]["follow_up"].format(cell_id=fields["cell_id"]))
        for call in self._calls:
            output = call.output or {}
            if call.tool == "create_ticket" and "ticket_id" in output:
                parts.append(PHRASES[lang]["ticket"].format(id=output["ticket_id"]))
            elif output.get("change_id"):
                parts.append(PHRASES[lang]["change"].format(id=output["change_id"]))
        return " ".join(part for part in parts if part)
