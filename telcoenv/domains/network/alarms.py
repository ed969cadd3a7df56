"""Alarms as the network model raises them: threshold-crossing alarms on PM counters.

An element raises an alarm when a counter crosses its threshold (a quality-of-service alarm of
ITU-T X.733, a threshold crossing of TS 28.532's performance assurance). Its name says which
symptom crossed, never which cause: a short time-to-trigger, a negative cell offset and a PCI
collision all raise "Handover Performance Degraded", and a cell that is loaded for no fault
raises "Cell Congestion" too. An alarm is missing where no threshold is crossed (a scheduler
that starves cell-edge users crosses none) and where the operator has not activated threshold
alarms on the faulty object (the blueprint's ``alarm: false``); neighbours raise their own
(true but unrelated) alarms, and the site housekeeping alarms of the generated network stay.

When an alarm was raised follows from the model: a crossing the fault caused is raised at the
first 15-minute reporting period after the onset; a crossing also present without the fault is
a standing alarm raised days before.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from telcoenv.domains.network.topology import Alarm, baseline_id, new_alarm_id

#: A counter's reporting period (ROP): a crossing is seen at the end of one.
REPORTING_PERIOD = dt.timedelta(minutes=15)


@dataclass(frozen=True)
class Threshold:
    """An alarm on ``counter`` of a cell, the backhaul link or the fault's slice (raised on the
    serving cell, which carries the slice): raw units, as in kpis.yaml."""

    alarm: str
    severity: Literal["critical", "major", "minor"]
    on: Literal["cell", "link", "slice"]
    counter: str
    op: Literal["<", ">"]
    value: float

    def crossed(self, counters: dict[str, float]) -> bool:
        value = counters.get(self.counter)
        if value is None or not math.isfinite(value):
            return False
        return value < self.value if self.op == "<" else value > self.value


# fmt: off
#: The threshold-crossing alarms, in the order an object raises them; one alarm per name.
THRESHOLDS: tuple[Threshold, ...] = (
    Threshold("Cell Unavailable", "critical", "cell", "availability", "<", 50.0),
    Threshold("Cell Availability Degraded", "major", "cell", "availability", "<", 99.5),
    Threshold("Radio Link Quality Degraded", "major", "cell", "BLER", ">", 0.15),
    Threshold("Radio Link Quality Degraded", "major", "cell", "RLF_rate", ">", 0.02),
    Threshold("Coverage Degraded", "major", "cell", "coverage_gap_ratio", ">", 8.0),
    Threshold("Cell Range Exceeded", "minor", "cell", "distant_serving_ratio", ">", 10.0),
    Threshold("Beam Failure Rate High", "minor", "cell", "beam_fail_rate", ">", 1.0),
    Threshold("Handover Performance Degraded", "major", "cell", "HO_success", "<", 0.95),
    Threshold("Handover Performance Degraded", "major", "cell", "ping_pong_rate", ">", 10.0),
    Threshold("Cell Congestion", "major", "cell", "PRB_util", ">", 0.85),
    Threshold("QoS Threshold Crossed", "major", "cell", "latency_ms", ">", 35.0),
    Threshold("QoS Threshold Crossed", "major", "cell", "sla_violation_ratio", ">", 10.0),
    Threshold("Transmission Link Degraded", "major", "link", "bh_latency_ms", ">", 20.0),
    Threshold("Transmission Link Degraded", "major", "link", "bh_packet_loss", ">", 0.2),
    Threshold("Slice SLA Degraded", "major", "slice", "admission_denial_rate", ">", 5.0),
    Threshold("Slice SLA Degraded", "major", "slice", "slice_violation_ratio", ">", 10.0),
)
# fmt: on
#: The alarm of the handover counters (which come from the UE tracks).
HANDOVER_ALARM = "Handover Performance Degraded"
#: A configuration audit's alarm: live parameters differ from the approved baseline.
BASELINE_MISMATCH = "Configuration Baseline Mismatch"
#: Every name an alarm of the model can have.
NAMES: tuple[str, ...] = (*dict.fromkeys(t.alarm for t in THRESHOLDS), BASELINE_MISMATCH)


def crossings(counters: dict[str, float], on: str) -> dict[str, str]:
    """The alarms ``counters`` of an object of kind ``on`` raise: name to severity."""
    raised: dict[str, str] = {}
    for threshold in THRESHOLDS:
        if threshold.on == on and threshold.alarm not in raised and threshold.crossed(counters):
            if threshold.alarm == "Cell Availability Degraded" and "Cell Unavailable" in raised:
                continue
            raised[threshold.alarm] = threshold.severity
    return raised


def raise_alarms(
    initial: Any,
    model: Any,
    fault_object: str,
    activated: bool,
    rng: np.random.Generator,
) -> list[Alarm]:
    """The alarms of the episode's start, from the model's counters now with and without the
    fault; ``fault_object`` (the serving cell or the link) raises none unless ``activated``."""
    now, onset = initial.now, model.timeline.onset
    config, normal = model.epochs[-1].config, model.epochs[0].config
    first_period = _ceil(onset, REPORTING_PERIOD) + REPORTING_PERIOD
    serving = initial.serving.cell_id
    simulation, scale = model.simulation, model.timeline.scale_at(now)
    objects = [(cell.cell_id, cell.cell_id, "cell") for cell in initial.cells]
    objects += [(initial.backhaul.link_id, initial.backhaul.link_id, "link")]
    objects += [(initial.fault_slice_id, serving, "slice")]
    alarms: list[Alarm] = []
    for object_id, source, kind in objects:
        if source == fault_object and not activated:
            continue
        now_raised = crossings(model.kpis(object_id, config, now), kind)
        if not now_raised:
            continue
        # Without the fault (the tracks only where a handover alarm asks: they cost most).
        tracks = HANDOVER_ALARM in now_raised
        before = crossings(simulation.kpis(object_id, normal, scale, False, tracks), kind)
        for name, severity in now_raised.items():
            if name in before:  # a standing condition, raised days ago
                hours = float(rng.uniform(20.0, 120.0))
                when = _ceil(now - dt.timedelta(hours=hours), REPORTING_PERIOD)
            else:
                when = min(first_period, now)
            alarms.append(_alarm(source, name, severity, when, rng, [*initial.alarms, *alarms]))
    for cell in initial.cells:
        if cell.cell_id == fault_object and not activated:
            continue
        _, baseline = initial.baselines[baseline_id(cell.cell_id)]
        if any(cell.config.get(name) != value for name, value in baseline.items()):
            taken = [*initial.alarms, *alarms]
            alarms.append(_alarm(cell.cell_id, BASELINE_MISMATCH, "minor", onset, rng, taken))
    return alarms


def _alarm(
    source: str, name: str, severity: str, when: dt.datetime, rng: Any, taken: list[Alarm]
) -> Alarm:
    stamp = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    return Alarm(new_alarm_id(rng, taken), source, name, severity, stamp)


def _ceil(when: dt.datetime, period: dt.timedelta) -> dt.datetime:
    """``when`` rounded up to a multiple of ``period`` since midnight."""
    midnight = when.replace(hour=0, minute=0, second=0, microsecond=0)
    periods = math.ceil((when - midnight) / period)
    return midnight + periods * period
