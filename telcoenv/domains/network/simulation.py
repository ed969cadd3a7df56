"""The model behind one episode's network: built from the generated network, read by the tools.

:func:`simulate` describes the generated cluster (:mod:`telcoenv.domains.network.topology`) to
the network model (:mod:`telcoenv.domains.network.model`) and calibrates it to the blueprint's
sample: the serving cell's level KPIs (RSRP, SINR, PRB load, users) are the sampled ones where
the blueprint samples them, else typical values of the area and role; each neighbour's load is
its drawn one. Everything else each counter shows, at the report and at any other moment, is
the model's: :class:`Simulation` runs it once per configuration and demand level and keeps the
results, so reading a KPI again costs nothing.

The fault began at the timeline's onset; before it the cells ran with their normal
configuration (the fault's cause absent: the corrective values set, the failed unit working).
A KPI series point at time ``t`` is the model's value for the configuration in force at ``t``
at that moment's demand, with the sampling noise of a 15-minute counter.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from telcoenv.domains.network import counters, layout, slicing, transport
from telcoenv.domains.network.kpis import kpi_definitions
from telcoenv.domains.network.model import (
    Evaluation,
    Outage,
    Plan,
    Targets,
    World,
    built_world,
    evaluate,
    mobility_of,
    tracks_of,
)
from telcoenv.domains.network.parameters import KPI_TO_CELL_PARAMETER, KPI_TO_SLICE_POLICY
from telcoenv.domains.network.timeline import Timeline
from telcoenv.domains.network.topology import fault_relation, fix_settings, relation_id

Configuration = Mapping[str, Mapping[str, Any]]

#: Typical serving-cell levels where the blueprint samples none: median RSRP (dBm) and SINR (dB)
#: per area, users per role.
TYPICAL_RSRP = {
    "urban": -96.0,
    "suburban": -98.0,
    "rural": -102.0,
    "indoor": -90.0,
    "stadium": -92.0,
}
TYPICAL_SINR = {"urban": 11.0, "suburban": 12.0, "rural": 13.0, "indoor": 14.0, "stadium": 7.0}
TYPICAL_USERS = {"macro": 200.0, "micro": 120.0, "pico": 60.0}
#: What a slice's sessions typically ask of its max share, where the blueprint does not say.
TYPICAL_SLICE_OFFERED = (0.3, 0.6)
#: Slice demand per service: requests per minute (typical range), session minutes and Mbps.
SLICE_DEMAND = {"eMBB": ((30.0, 55.0), 1.0, 4.0), "URLLC": ((15.0, 40.0), 1.0, 1.0)}


def _key(config: Configuration) -> tuple[Any, ...]:
    return tuple((owner, tuple(params.items())) for owner, params in sorted(config.items()))


def _static_key(config: Configuration) -> tuple[Any, ...]:
    """The key of what a run without the tracks reads: the relations' offsets act on the
    tracks' handovers only, so configurations that differ in them share one run."""
    return tuple(
        (owner, tuple(params.items()))
        for owner, params in sorted(config.items())
        if not owner.startswith("relation:")
    )


def freeze(config: Configuration) -> dict[str, dict[str, Any]]:
    """A private copy of a configuration (the caller may change its own)."""
    return {owner: dict(params) for owner, params in config.items()}


@dataclass(frozen=True)
class Epoch:
    """A stretch of time with one configuration: the normal one before the onset, the faulty
    one after it, then each change the agent made."""

    begin: dt.datetime
    config: dict[str, dict[str, Any]]
    faulty: bool  # the fault's physical cause (a failed unit, a flapping link) is present


#: Model runs kept per world: an agent that tries configuration after configuration, or a
#: series at every hour's demand, does not grow an episode's memory past this.
RUNS_KEPT = 64


class Simulation:
    """The episode's model with its results kept per configuration and demand level."""

    def __init__(
        self,
        world: World,
        normal_world: World,
        timeline: Timeline,
        memo: dict[str, Any] | None = None,
    ) -> None:
        self.world, self.normal_world, self.timeline = world, normal_world, timeline
        self._same = (
            world.operational == normal_world.operational and world.outage == normal_world.outage
        )
        # Model runs by configuration (and demand level): shared by every episode on this world.
        self._memo = {} if memo is None else memo
        self._evaluations: dict[tuple[Any, ...], Evaluation] = self._memo.setdefault("runs", {})
        self._moves: dict[tuple[Any, ...], Any] = self._memo.setdefault("moves", {})
        self.index = {cell_id: i for i, cell_id in enumerate(world.cell_ids)}

    def _world(self, faulty: bool) -> World:
        return self.world if faulty else self.normal_world

    def _faulty(self, faulty: bool) -> bool:
        # A fault that is all configuration leaves the world as it is: one cache for both.
        return faulty or self._same

    def evaluation(
        self, config: Configuration, scale: float = 1.0, faulty: bool = True
    ) -> Evaluation:
        faulty = self._faulty(faulty)
        key = (_static_key(config), round(scale, 4), faulty)
        found = self._evaluations.get(key)
        if found is None:
            found = self._evaluations[key] = evaluate(self._world(faulty), config, scale)
            if len(self._evaluations) > RUNS_KEPT:  # the oldest go (about 40 KB each)
                with contextlib.suppress(RuntimeError, StopIteration):  # another thread's turn
                    self._evaluations.pop(next(iter(self._evaluations)), None)
        return found

    def moves(self, config: Configuration, faulty: bool = True) -> Any:
        faulty = self._faulty(faulty)
        key = (_key(config), faulty)
        found = self._moves.get(key)
        if found is None:
            world = self._world(faulty)
            if "tracks" not in self._memo:  # made when handovers are first needed
                self._memo["tracks"] = tracks_of(self.world)
            ev = self.evaluation(config, 1.0, faulty)
            found = self._moves[key] = mobility_of(world, self._memo["tracks"], ev, config)
        return found

    def kpis(
        self,
        object_id: str,
        config: Configuration,
        scale: float = 1.0,
        faulty: bool = True,
        handovers: bool = True,
    ) -> dict[str, float]:
        """An object's counters (a cell, the serving site's link, a slice)."""
        world = self._world(faulty)
        ev = self.evaluation(config, scale, faulty)
        if object_id == world.link_id:
            return counters.link_counters(ev)
        if object_id in world.slice_ids:
            return counters.slice_counters(ev, world.slice_ids.index(object_id))
        cell = self.index[object_id]
        moves = self.moves(config, faulty) if handovers else None
        return counters.cell_counters(world, ev, moves, cell, config[f"cell:{object_id}"])


# --- building it from the generated network -----------------------------------------------


def _first(sampled: Mapping[str, float], *names: str) -> float | None:
    return next((float(sampled[n]) for n in names if n in sampled), None)


def plan_of(
    initial: Any,
    blueprint: Any,
    sampled: Mapping[str, float],
    rng: np.random.Generator,
    tall: bool = False,
) -> Plan:
    """The model's description of an episode's cluster (``initial``: the InitialNetwork);
    ``tall``: the serving site stands well above its neighbours (what lets an uptilted cell
    overshoot them)."""
    context = blueprint.context
    cells = initial.cells
    state = initial.serving.operational_state
    outage = Outage()
    if state == "DOWN":
        outage = Outage(float(rng.uniform(0.95, 1.0)), 1.0)
    elif state == "DEGRADED":
        availability = _first(sampled, "availability")
        down = (
            1.0 - availability / 100.0 if availability is not None else float(rng.uniform(0.1, 0.5))
        )
        outage = Outage(min(max(down, 0.0), 0.95), float(rng.uniform(2.0, 6.0)))
    # The link stays up (no flaps): loss bursts come from traffic hitting a shaper.
    link = transport.Link(initial.backhaul.capacity_mbps, initial.backhaul.capacity_mbps, 40.0)
    slice_ids = tuple(sorted(initial.slices))
    demands = []
    for slice_id in slice_ids:
        service = initial.slices[slice_id].service_type
        (low, high), minutes, mbps = SLICE_DEMAND[service]
        requests = float(rng.uniform(low, high))
        if slice_id == initial.fault_slice_id:
            requests = _first(sampled, "slice_requests_per_min") or requests
        demands.append(slicing.SliceDemand(service, requests, minutes, mbps))
    n = len(cells)
    high_prio = _first(sampled, "qci_high_prio_share")
    best_effort = _first(sampled, "qci_best_effort_share")
    highs = rng.uniform(12.0, 30.0, n)
    efforts = rng.uniform(55.0, 75.0, n)
    if high_prio is not None:
        highs[0] = high_prio
    if best_effort is not None:
        efforts[0] = best_effort
    base = layout.ROLES[context.cell_role].height_m
    if (context.area, context.cell_role) == ("rural", "macro"):
        base = layout.RURAL_MACRO_HEIGHT_M
    heights = base * rng.uniform(0.85, 1.2, n)  # masts and rooftops differ
    if tall:
        heights[0] = base * 1.8
    return Plan(
        heights_m=tuple(heights.tolist()),
        area=context.area,
        role=context.cell_role,
        cell_ids=tuple(c.cell_id for c in cells),
        positions_m=tuple((c.position_km[0] * 1000.0, c.position_km[1] * 1000.0) for c in cells),
        operational=tuple(c.operational_state for c in cells),
        link_id=initial.backhaul.link_id,
        link=link,
        slice_ids=slice_ids,
        slice_demand=tuple(demands),
        outage=outage,
        sla_threshold=_first(sampled, "sla_threshold") or float(rng.uniform(0.95, 0.99)),
        qci_high_pct=tuple(highs.tolist()),
        qci_best_effort_pct=tuple(efforts.tolist()),
    )


def targets_of(
    initial: Any, blueprint: Any, sampled: Mapping[str, float], rng: np.random.Generator
) -> Targets:
    """What the episode's world is calibrated to: the sample's levels, where it has them (a
    coverage gap sets the clutter loss instead of the median RSRP)."""
    context = blueprint.context
    jitter = rng.normal(0.0, 1.0, 3)
    gap = _first(sampled, "coverage_gap_ratio")
    rsrp = _first(sampled, "rsrp_dBm")
    if rsrp is None:
        rsrp = TYPICAL_RSRP[context.area] + 3.0 * float(jitter[0])
    sinr = _first(sampled, "sinr_dB")
    users = _first(sampled, "users")
    load = _first(sampled, "PRB_util", "prb_util")
    offered = []
    for slice_id in sorted(initial.slices):
        share = float(rng.uniform(*TYPICAL_SLICE_OFFERED))
        utilisation = _first(sampled, "slice_utilization")
        if slice_id == initial.fault_slice_id and utilisation is not None:
            share = utilisation / 100.0
        offered.append(share)
    return Targets(
        rsrp_dbm=None if gap is not None else rsrp,
        coverage_gap_pct=gap,
        sinr_db=sinr if sinr is not None else TYPICAL_SINR[context.area] + 2.0 * float(jitter[1]),
        users=users
        if users is not None
        else TYPICAL_USERS[context.cell_role] * float(np.exp(0.2 * jitter[2])),
        slice_offered=tuple(offered),
        link_util=_link_util(initial),
        qos=_breached_qos(sampled),
        prb_util=(
            load if load is not None else initial.serving.load,
            *(c.load for c in initial.neighbours),
        ),
    )


#: The QoS compliance an SLA breach is calibrated to, at least and at most: below half the
#: intervals the cell is past saturation, its users' throughput a fraction of a Mbps (the
#: SLA blueprints' compliance, under 60 %, and violation ratio, 15-50 %, meet at 50-60 %;
#: a little above the edge, as calibration lands within a few points).
BREACHED_QOS = (0.55, 0.9)


def _breached_qos(sampled: Mapping[str, float]) -> float | None:
    """The serving cell's QoS compliance the world is calibrated to, where the sample has it
    under the SLA threshold (None: as the model has it)."""
    qos = _first(sampled, "QoS")
    threshold = _first(sampled, "sla_threshold")
    if qos is None or (threshold is not None and qos >= threshold):
        return None
    return float(np.clip(qos, *BREACHED_QOS))


def _link_util(initial: Any) -> float | None:
    """The backhaul's utilisation at the report (the blueprint's sample, or the generated
    network's typical figure), 0-1; without one, the load at which TCP's standing queue fills
    the buffer as much as the sampled queue occupancy says (a queue that full is a saturated
    shaper, which then drops in bursts)."""
    kpis = initial.backhaul.kpis
    if "bh_util" in kpis:
        return float(kpis["bh_util"]) / 100.0
    if "queue_occupancy" in kpis:
        return min(float(kpis["queue_occupancy"]) / 100.0 / transport.STANDING_FILL, 0.99)
    return None


def normal_configuration(
    initial: Any, fix: Mapping[str, Any], intent: Any
) -> dict[str, dict[str, Any]]:
    """The configuration before the fault: the corrective values in place (for a drifted
    configuration, the approved baseline)."""
    config = freeze(initial.configuration())
    serving = f"cell:{initial.serving.cell_id}"
    target = intent.fault.target
    if target == "config":
        _, baseline = initial.baselines[f"CFG-{initial.serving.cell_id}-BASELINE"]
        config[serving].update(baseline)
        return config
    ids = initial.serving.cell_id, initial.backhaul.link_id, initial.fault_slice_id
    for setting in fix_settings(target, fix, *ids):
        config[setting.owner][setting.parameter] = setting.value
    return config


def simulate(
    initial: Any,
    blueprint: Any,
    sampled: Mapping[str, float],
    normal: Configuration,
    timeline: Timeline,
    rng: np.random.Generator,
    tall: bool = False,
) -> Simulation:
    """The episode's model, calibrated to its sample with the faulty configuration."""
    plan = plan_of(initial, blueprint, sampled, rng, tall)
    targets = targets_of(initial, blueprint, sampled, rng)
    world, memo = built_world(plan, initial.configuration(), normal, targets, rng)
    normal_world = replace(
        world,
        operational=("ENABLED",) * len(plan.cell_ids),
        outage=Outage(),
    )
    return Simulation(world, normal_world, timeline, memo)


# --- what a blueprint's KPI names read -----------------------------------------------------------

#: Blueprint KPI names that are another name (and scale) of a cell counter.
ALIASES: dict[str, tuple[str, float]] = {
    "bler": ("BLER", 1.0),
    "prb_util": ("PRB_util", 1.0),
    "p50_thr_mbps": ("throughput_p50_mbps", 1.0),
    "rlf_rate": ("RLF_rate", 100.0),
    "ta_p95_m": ("ta_p95", 1.0),
    "ta_std_m": ("ta_std", 1.0),
    "icic_neighbor_load": ("neighbor_avg_PRB_util", 1.0),
    "x2_ho_in_rate": ("ho_in_rate_per_5min", 0.2),
}


def blueprint_value(
    name: str,
    cell: Mapping[str, float],
    link: Mapping[str, float],
    fault_slice: Mapping[str, float],
    slice_intent: bool,
    config: Configuration,
    serving_id: str,
    slice_id: str,
    extra: Mapping[str, float],
) -> float | None:
    """What the OSS shows for a blueprint's KPI name (``extra``: configuration audit and
    geometry figures the caller computed)."""
    if name in extra:
        return extra[name]
    if name in KPI_TO_CELL_PARAMETER:
        return float(config[f"cell:{serving_id}"][KPI_TO_CELL_PARAMETER[name]])
    if name in KPI_TO_SLICE_POLICY:
        return float(config[f"slice:{slice_id}"][KPI_TO_SLICE_POLICY[name]])
    if slice_intent and name in fault_slice:
        return fault_slice[name]
    if name in ALIASES:
        counter, factor = ALIASES[name]
        return cell[counter] * factor if counter in cell else None
    if name == "p95_minus_p50_gap_mbps":
        return (
            cell["p95_thr_mbps"] - cell["throughput_p50_mbps"] if "p95_thr_mbps" in cell else None
        )
    for pool in (cell, link, fault_slice):
        if name in pool:
            return pool[name]
    return None


def round_kpis(values: Mapping[str, float]) -> dict[str, float]:
    """Values as the OSS stores them (each KPI's storage digits)."""
    digits = kpi_definitions().storage_digits
    return {name: round(float(value), digits[name]) for name, value in values.items()}


def observe(names: Sequence[str], values: Mapping[str, float | None]) -> dict[str, float]:
    return {name: values[name] for name in names if values.get(name) is not None}  # type: ignore[misc]


# --- the episode's view: what the OSS shows at any moment ----------------------------------

#: Sampling noise of a 15-minute counter: (relative, absolute) standard deviation by unit.
NOISE: dict[str, tuple[float, float]] = {
    "dBm": (0.0, 0.6),
    "dB": (0.0, 0.5),
    "Mbps": (0.06, 0.05),
    "ms": (0.07, 0.2),
    "percent": (0.05, 0.0005),
    "m": (0.03, 2.0),
    "per_5min": (0.1, 0.5),
    "per_min": (0.1, 0.1),
    "per_hour": (0.1, 0.3),
    "": (0.04, 0.005),
    "hours": (0.0, 0.0),
    "km": (0.0, 0.0),
}
#: Demand levels a series is computed at (then interpolated): the model runs this many times
#: per configuration in a window, not once per point.
LEVELS = 3


def config_audit(
    params: Mapping[str, Any], baseline: Mapping[str, Any], hours_since: float
) -> dict[str, float]:
    """The configuration audit's counters of a cell: parameters off its approved baseline,
    how far (each parameter's distance over its legal range, a categorical one 1, averaged),
    and for how long."""
    from telcoenv.domains.network.dynamics import parameter_distance

    drifted = [name for name, value in baseline.items() if params.get(name) != value]
    score = (
        sum(parameter_distance(name, params[name], baseline[name]) for name in drifted)
        / len(drifted)
        if drifted
        else 0.0
    )
    return {
        "mismatch_count": float(len(drifted)),
        "param_drift_score": score,
        "drift_age_hours": hours_since if drifted else 0.0,
    }


class EpisodeModel:
    """The model as the episode's OSS sees it: configuration epochs in time, each a model run
    at each moment's demand."""

    def __init__(self, simulation: Simulation, epochs: list[Epoch]) -> None:
        self.simulation, self.epochs = simulation, epochs
        self.timeline = simulation.timeline

    def epoch_at(self, when: dt.datetime) -> Epoch:
        found = self.epochs[0]
        for epoch in self.epochs:
            if epoch.begin <= when:
                found = epoch
        return found

    def kpis(
        self,
        object_id: str,
        config: Configuration,
        when: dt.datetime,
        faulty: bool = True,
        baseline: Mapping[str, Any] | None = None,
    ) -> dict[str, float]:
        """An object's counters at ``when`` with ``config``, rounded as stored."""
        scale = self.timeline.scale_at(when)
        values = self.simulation.kpis(object_id, config, scale, faulty)
        if baseline is not None:
            hours = max(0.0, (when - self.timeline.onset).total_seconds() / 3600.0)
            values.update(config_audit(config[f"cell:{object_id}"], baseline, hours))
        return round_kpis(values)

    def series(
        self,
        object_id: str,
        names: Sequence[str],
        moments: np.ndarray,
        rng: np.random.Generator,
        baseline: Mapping[str, Any] | None = None,
    ) -> np.ndarray:
        """Each KPI at each moment (``datetime64``): the model for the configuration then in
        force at that moment's demand (interpolated between :data:`LEVELS` runs per epoch),
        with a 15-minute counter's noise. Rows follow ``names``."""
        out = np.zeros((len(names), len(moments)))
        scales = self.timeline.scale(moments)
        begins = np.array([np.datetime64(e.begin.replace(tzinfo=None), "s") for e in self.epochs])
        which = np.searchsorted(begins, moments.astype("datetime64[s]"), side="right") - 1
        which = np.maximum(which, 0)
        for index in np.unique(which):
            epoch = self.epochs[int(index)]
            points = which == index
            out[:, points] = self._levels(object_id, names, epoch, scales[points], baseline)
        if "drift_age_hours" in names:  # an age grows with time, whatever the demand
            row = list(names).index("drift_age_hours")
            onset = np.datetime64(self.timeline.onset.replace(tzinfo=None), "s")
            hours = (moments.astype("datetime64[s]") - onset).astype(float) / 3600.0
            out[row] = np.where(out[row] > 0, np.maximum(hours, 0.0), 0.0)
        return self._noisy(names, out, rng)

    def _levels(
        self,
        object_id: str,
        names: Sequence[str],
        epoch: Epoch,
        scales: np.ndarray,
        baseline: Mapping[str, Any] | None,
    ) -> np.ndarray:
        low, high = float(scales.min()), float(scales.max())
        grid = np.linspace(low, high, LEVELS) if high - low > 1e-3 else np.array([low])
        rows = []
        for level in grid:
            values = self.simulation.kpis(object_id, epoch.config, float(level), epoch.faulty)
            if baseline is not None:
                values.update(config_audit(epoch.config[f"cell:{object_id}"], baseline, 1.0))
            rows.append([values.get(name, np.nan) for name in names])
        table = np.array(rows).T  # [names, levels]
        if len(grid) == 1:
            return np.repeat(table, len(scales), axis=1)
        return np.array([np.interp(scales, grid, row) for row in table])

    def _noisy(
        self, names: Sequence[str], values: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        definitions = kpi_definitions()
        noise = rng.standard_normal(values.shape)
        out = values.copy()
        for i, name in enumerate(names):
            info = definitions.kpis[name]
            relative, absolute = NOISE.get(info.unit, (0.05, 0.0))
            out[i] = values[i] * (1.0 + relative * noise[i]) + absolute * noise[i] * (
                1.0 if info.unit != "percent" else 1.0 / info.scale * 100.0
            )
            low, high = info.physical_range()
            out[i] = np.clip(
                out[i], -np.inf if low is None else low, np.inf if high is None else high
            )
        return out


#: Time for a change to take effect and be measured (as the blueprint's causal model has it).
CHANGE_DELAY = dt.timedelta(minutes=15)


def remeasure(state: Any) -> None:
    """After a change: a new configuration epoch from now, every measured object's counters
    from the model for it (only those that moved are recorded, as a new regime), each cell's
    PRB load in its row; the clock moves on by the time the change takes to show."""
    model: EpisodeModel = state.model
    config = state.configuration()
    epoch = Epoch(state.now, freeze(config), faulty=True)
    model.epochs.append(epoch)
    state.db.on_undo(lambda: model.epochs.remove(epoch))
    current = state.latest_kpis()
    samples = {}
    for owner, before in current.items():
        values = state.model_kpis(owner, config)
        moved = {name: value for name, value in values.items() if before.get(name) != value}
        if moved:
            samples[owner] = moved
    loads = model.simulation.evaluation(config, model.timeline.scale_at(state.now)).traffic.load
    for cell_id, load in zip(state.cell_ids, loads.tolist(), strict=True):
        state.set_load(cell_id, round(float(load), 2))
    state.record_kpis(samples, state.now)
    state.now += CHANGE_DELAY


def face_the_cluster(initial: Any, rng: np.random.Generator) -> None:
    """Point each neighbour's sector toward the serving site, within 40 degrees: the cluster's
    sectors face each other across the area they share, as a planned grid's do (the generated
    network draws azimuths at random, which leaves the back of every neighbour uncovered)."""
    offsets = rng.uniform(-40.0, 40.0, len(initial.neighbours))
    for cell, offset in zip(initial.neighbours, offsets.tolist(), strict=True):
        east, north = cell.position_km
        toward = math.degrees(math.atan2(-east, -north)) % 360.0
        cell.azimuth_deg = round(toward + offset) % 360


def start_model(initial: Any, blueprint: Any, fault: Any, rng: np.random.Generator) -> EpisodeModel:
    """The model of a new episode: calibrated with the faulty configuration; the normal one
    ran before the onset (a drifted configuration drifted ``drift_age_hours`` ago)."""
    from telcoenv.domains.network.parameters import parse_window
    from telcoenv.domains.network.timeline import draw_onset

    intent, sampled = fault.intent, fault.sampled
    face_the_cluster(initial, rng)
    normal = normal_configuration(initial, fault.fix, intent)
    if "drift_age_hours" in sampled:
        onset = initial.now - dt.timedelta(hours=float(sampled["drift_age_hours"]))
    else:
        onset = draw_onset(initial.now, parse_window(initial.window), rng)
    area = blueprint.context.area
    timeline = Timeline(area, initial.now, onset, event_day=area == "stadium")
    # An overshooting cell is uptilted on a site that stands above its neighbours.
    serving = f"cell:{initial.serving.cell_id}"
    tilt = initial.configuration()[serving]["tilt_deg"]
    tall = "tilt_deg" in fault.fix and fault.fix["tilt_deg"] > tilt
    simulation = simulate(initial, blueprint, sampled, normal, timeline, rng, tall)
    if intent.fault.target == "relation":
        size_relation_fault(initial, fault, simulation)
    start = freeze(initial.configuration())
    begin = initial.now - RETENTION_DAYS
    epochs = [Epoch(begin, freeze(normal), faulty=False), Epoch(onset, start, faulty=True)]
    return EpisodeModel(simulation, epochs)


RETENTION_DAYS = dt.timedelta(days=7)


def size_relation_fault(initial: Any, fault: Any, simulation: Simulation) -> None:
    """A faulty relation's offset: the intent's faulty values are tried in order, up to the
    first whose handover failure rate reaches the sample's, and the one nearest it is kept (the
    blueprint's range holds where that border's crossings can reach it; else the largest)."""
    target = fault.sampled.get("ho_fail_rate")
    if target is None:
        return  # the offset drawn stays
    ((_, parameter),) = fault.intent.fault.parameters.items()
    pair = fault_relation(initial)
    owner = f"relation:{relation_id(*pair)}"
    config = freeze(initial.configuration())
    rates: list[float] = []
    for value in parameter.faulty:
        config[owner]["cio_db"] = float(value)
        rates.append(simulation.kpis(pair[0], config)["ho_fail_rate"])
        if rates[-1] >= target:  # more offset fails more: the rest lie farther
            break
    best = min(range(len(rates)), key=lambda i: (abs(rates[i] - target), i))
    initial.relation_cio_db[pair] = float(parameter.faulty[best])


def observe_start(
    initial: Any, blueprint: Any, fault: Any, model: EpisodeModel
) -> dict[str, float]:
    """Load the model's view of the start into ``initial`` (each cell's PRB load, the serving
    cell's, its link's and slices' counters) and return what the OSS shows for the blueprint's
    KPI names (the episode's sample from now on)."""
    config = freeze(initial.configuration())
    serving = initial.serving
    ev = model.simulation.evaluation(config, 1.0)
    for cell, load in zip(initial.cells, ev.traffic.load.tolist(), strict=True):
        cell.load = round(float(load), 2)
    _, baseline = initial.baselines[f"CFG-{serving.cell_id}-BASELINE"]
    now = initial.now
    serving.measured = model.kpis(serving.cell_id, config, now, baseline=baseline)
    initial.backhaul.kpis = model.kpis(initial.backhaul.link_id, config, now)
    for slice_id, network_slice in initial.slices.items():
        network_slice.kpis = model.kpis(slice_id, config, now)
    return blueprint_values(model, initial, fault.intent, list(blueprint.constraints), config, now)


def blueprint_values(
    model: EpisodeModel,
    initial: Any,
    intent: Any,
    names: Sequence[str],
    config: Configuration,
    when: dt.datetime,
    faulty: bool = True,
) -> dict[str, float]:
    """What the OSS shows for blueprint KPI names (aliases included) with ``config`` at
    ``when`` (``faulty``: with the fault's physical cause present)."""
    serving = initial.serving
    _, baseline = initial.baselines[f"CFG-{serving.cell_id}-BASELINE"]
    cell = model.kpis(serving.cell_id, config, when, faulty, baseline=baseline)
    link = model.kpis(initial.backhaul.link_id, config, when, faulty)
    fault_slice = model.kpis(initial.fault_slice_id, config, when, faulty)
    distances = [c.distance_km for c in initial.neighbours]
    extra = {
        "intersite_distance_km": float(np.mean(distances)),
        "neighbor_distance_km": float(np.mean(distances[:3])),
        "pci_self": float(config[f"cell:{serving.cell_id}"]["pci"]),
        "pci_neighbor": float(config[f"cell:{initial.neighbours[0].cell_id}"]["pci"]),
    }
    slice_intent = intent.fault.target == "slice"
    values = {
        name: blueprint_value(
            name,
            cell,
            link,
            fault_slice,
            slice_intent,
            config,
            serving.cell_id,
            initial.fault_slice_id,
            extra,
        )
        for name in names
    }
    return round_kpis({name: value for name, value in values.items() if value is not None})


#: How far a complaint KPI may stay from its value without the fault (a share of how far the
#: fault took it) and still count as recovered; the counters' own noise is allowed on top.
RECOVERY_SHARE = 0.25
#: A neighbour is degraded by a change when its median SINR falls by more than this (dB) or
#: its median throughput by more than this share.
NEIGHBOUR_SINR_DB, NEIGHBOUR_THROUGHPUT = 3.0, 0.2


def recovery(state: Any, fault: Any, count: int = 2) -> dict[str, bool]:
    """Whether each of the complaint's key KPIs is back: within :data:`RECOVERY_SHARE` of the
    way from where the fault took it to its value without the fault (the model's normal
    configuration at the same moment), or better than that."""
    from telcoenv.domains.network.engineer import ranked_evidence

    model: EpisodeModel = state.model
    intent = fault.intent
    names = ranked_evidence(fault.sampled, intent.evidence, intent.fault.context_kpis)[:count]
    config = state.configuration()
    # Compared at the demand of the report: the same users, with and without the fault.
    when = model.timeline.now
    now = blueprint_values(model, state.initial, intent, names, config, when)
    normal = blueprint_values(
        model, state.initial, intent, names, model.epochs[0].config, when, faulty=False
    )
    definitions = kpi_definitions()
    result = {}
    for name in names:
        info = definitions.kpis[name]
        start, current, healthy = fault.sampled[name], now.get(name), normal.get(name)
        if current is None or healthy is None:
            result[name] = False
            continue
        better = current <= healthy if info.worse == "higher" else current >= healthy
        noise = 10.0**-info.decimals / info.scale + 0.02 * abs(healthy)
        close = abs(current - healthy) <= RECOVERY_SHARE * abs(start - healthy) + noise
        result[name] = bool((better and info.worse != "none") or close)
    return result


def degraded_neighbours(state: Any) -> list[str]:
    """Neighbours whose service the changes made worse than both at the start and without the
    fault (a fix hands a neighbour back its normal load; an over-correction does more): a
    median SINR lower by :data:`NEIGHBOUR_SINR_DB` or a median throughput by
    :data:`NEIGHBOUR_THROUGHPUT`."""
    model: EpisodeModel = state.model
    config = state.configuration()
    if config == state.start:
        return []
    scale = 1.0  # at the demand of the report, as the recovery is judged
    simulation = model.simulation
    degraded = []
    for cell_id in state.cell_ids[1:]:
        now = simulation.kpis(cell_id, config, scale, handovers=False)
        references = [
            simulation.kpis(cell_id, state.start, scale, handovers=False),
            simulation.kpis(cell_id, model.epochs[0].config, scale, faulty=False, handovers=False),
        ]
        references = [r for r in references if "sinr_dB" in r]
        if not references or "sinr_dB" not in now:
            continue
        sinr = min(r["sinr_dB"] for r in references)
        throughput = min(r["throughput_p50_mbps"] for r in references)
        floor = (1.0 - NEIGHBOUR_THROUGHPUT) * throughput - 0.5
        if sinr - now["sinr_dB"] > NEIGHBOUR_SINR_DB or now["throughput_p50_mbps"] < floor:
            degraded.append(cell_id)
    return degraded
