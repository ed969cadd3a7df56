"""The SON advisor behind ``recommend_param_change`` in the network model: rules over a cell's
counters and configuration, as an optimisation tool runs them.

It sees what the OSS shows (the cell's KPIs, its configuration and its relations' offsets, its
neighbours' PCIs, the site's link) and nothing else: not the fault, not the model. Each rule
fires on a symptom and proposes a change in the usual engineering step, with its reason and the
counter it read;
candidates come ranked by how far that counter is past the rule's threshold. Symptoms that
several causes share make it wrong at times, as such tools are: a congested cell gets a load
balancing proposal whatever congests it, a handover failure storm a hysteresis change whether
the cause is a timer, an offset or a PCI. The agent is told to check them against the KPIs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from telcoenv.domains.network.parameters import legal_values


@dataclass(frozen=True)
class Rule:
    """Fire when ``kpi`` is past ``threshold`` (``above``: higher is worse) and the
    configuration allows ``when``; propose ``change(value)`` for ``parameter``."""

    kpi: str
    threshold: float
    above: bool
    parameter: str
    when: Callable[[Any], bool]
    change: Callable[[Any], Any]
    reason: str


def _snap(parameter: str, value: float) -> Any:
    """The legal value nearest ``value`` (TTT and T310 take 3GPP's enumerations)."""
    legal = legal_values(parameter)
    if legal and not isinstance(legal[0], str | bool):
        return min(legal, key=lambda v: (abs(float(v) - value), v))
    return value


RULES: tuple[Rule, ...] = (
    Rule("ping_pong_rate", 8.0, True, "ttt_ms", lambda v: v < 480,
         lambda v: _snap("ttt_ms", max(2 * v, 320)),
         "ping-pong above 8 %: lengthen time-to-trigger"),
    Rule("ping_pong_rate", 8.0, True, "hysteresis_db", lambda v: v < 3,
         lambda v: v + 1.0, "ping-pong above 8 %: more handover hysteresis"),
    Rule("ping_pong_rate", 8.0, True, "a3_offset_db", lambda v: v < 2,
         lambda v: 3.0, "ping-pong above 8 % with an A3 offset under 2 dB: the standard 3 dB"),
    Rule("ho_fail_rate", 8.0, True, "hysteresis_db", lambda v: v > 1,
         lambda v: v - 0.5, "handover failures above 8 %: hand over earlier"),
    Rule("RLF_rate", 0.02, True, "t310_ms", lambda v: v < 500,
         lambda v: 1000, "radio link failures above 2 % with a short T310"),
    Rule("BLER", 0.11, True, "olla_bler_target_pct", lambda v: v > 12,
         lambda v: 10, "initial BLER above 11 %: the standard 10 % link-adaptation target"),
    Rule("PRB_util", 0.85, True, "mlb_enabled", lambda v: v is False,
         lambda v: True, "PRB load above 85 % with load balancing off"),
    Rule("PRB_util", 0.85, True, "mlb_threshold_pct", lambda v: v > 80,
         lambda v: 70, "PRB load above 85 %: balance load from 70 %"),
    Rule("PRB_util", 0.75, True, "prb_reservation_pct", lambda v: v > 10,
         lambda v: 5, "PRB load above 75 % with PRBs held in reservation"),
    Rule("prb_fairness_index", 0.7, False, "scheduler_type", lambda v: v == "MAX_CI",
         lambda v: "PF", "PRB fairness below 0.7 under max C/I"),
    Rule("latency_ms", 30.0, True, "hqos_priority_weight_pct", lambda v: v < 30,
         lambda v: 40, "latency above 30 ms with a light HQoS weight"),
    Rule("distant_serving_ratio", 8.0, True, "tilt_deg", lambda v: v < 4,
         lambda v: min(v + 4.0, 15.0), "users served far beyond the neighbours: downtilt"),
    Rule("coverage_gap_ratio", 15.0, True, "tilt_deg", lambda v: v > 9,
         lambda v: max(v - 5.0, 0.0), "coverage gaps above 15 % with a steep tilt: uptilt"),
    Rule("ta_drift_index", 0.15, True, "cio_db", lambda v: v > 2,
         lambda v: 0, "timing advance drifting out with a positive CIO"),
    Rule("dominance_ratio", 0.6, False, "beam_azimuth_offset_deg", lambda v: abs(v) > 10,
         lambda v: 0, "weak dominance with the SSB beams steered off boresight"),
)  # fmt: skip


def recommend(
    kpis: Mapping[str, float],
    config: Mapping[str, Any],
    pci_shared: bool,
    free_pci: int,
    link: Mapping[str, Any] | None,
    link_kpis: Mapping[str, float],
    relation_offsets: Mapping[str, float] | None = None,
) -> list[dict[str, Any]]:
    """Candidate changes for a cell, most urgent first (see the module docstring);
    ``relation_offsets``: the offset of the cell's relation to each neighbour, by its id."""
    found: list[tuple[float, dict[str, Any]]] = []
    for rule in RULES:
        value = kpis.get(rule.kpi)
        current = config.get(rule.parameter)
        if value is None or current is None or not rule.when(current):
            continue
        excess = (value - rule.threshold) if rule.above else (rule.threshold - value)
        if excess <= 0:
            continue
        recommended = rule.change(current)
        if recommended == current:
            continue
        found.append(
            (
                excess / max(abs(rule.threshold), 1e-9),
                {
                    "parameter": rule.parameter,
                    "current": current,
                    "recommended": recommended,
                    "rationale": rule.reason,
                    "evidence": {rule.kpi: round(value, 3)},
                },
            )
        )
    found += _relation_candidates(kpis, relation_offsets or {})
    if pci_shared:
        found.append(
            (
                1.0,
                {
                    "parameter": "pci",
                    "current": config.get("pci"),
                    "recommended": free_pci,
                    "rationale": "PCI shared with a neighbour",
                    "evidence": {"neighbour_pci_conflict": True},
                },
            )
        )
    if link is not None and link_kpis.get("bh_util", 0.0) > 80.0:
        shaper, capacity = link["config"]["bh_shaper_mbps"], link["capacity_mbps"]
        if shaper < capacity:
            found.append(
                (
                    (link_kpis["bh_util"] - 80.0) / 80.0,
                    {
                        "parameter": "bh_shaper_mbps",
                        "current": shaper,
                        "recommended": capacity,
                        "rationale": "backhaul above 80 % behind a shaper below line rate",
                        "evidence": {"bh_util": round(link_kpis["bh_util"], 1)},
                    },
                )
            )
    found.sort(key=lambda item: -item[0])
    return [candidate for _, candidate in found]


#: Handover failures past this share (%) with a relation's offset above this (dB): the relation
#: hands UEs over early (its tuned few dB stay below).
RELATION_FAILURES_PCT, RELATION_OFFSET_DB = 8.0, 3.0


def _relation_candidates(
    kpis: Mapping[str, float], offsets: Mapping[str, float]
) -> list[tuple[float, dict[str, Any]]]:
    """A neutral offset for each relation whose large positive one may hand UEs over early,
    when the cell's handovers fail."""
    failures = kpis.get("ho_fail_rate")
    if failures is None or failures <= RELATION_FAILURES_PCT:
        return []
    urgency = (failures - RELATION_FAILURES_PCT) / RELATION_FAILURES_PCT
    return [
        (
            urgency,
            {
                "parameter": "neighbour_cio_db",
                "neighbour_id": neighbour,
                "current": offset,
                "recommended": 0.0,
                "rationale": "handover failures above 8 % with a large offset toward this "
                "neighbour: neutral offset",
                "evidence": {"ho_fail_rate": round(failures, 3)},
            },
        )
        for neighbour, offset in sorted(offsets.items())
        if offset > RELATION_OFFSET_DB
    ]
