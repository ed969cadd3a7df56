"""The network model of one episode: a cluster's cells, its users and what they measure.

:func:`build_world` turns the generated network (:mod:`telcoenv.domains.network.topology`) into a
:class:`World`: the physical things a configuration change does not touch (sites, antennas, the
UEs and their links, how much traffic each user asks for, the interference from beyond the
cluster, the backhaul link, the slices' demand, what is broken). It is calibrated once, with the
episode's faulty configuration, so that the serving cell's level KPIs (RSRP, SINR, PRB load,
users) are those of the blueprint: a clutter loss common to every link sets the RSRP, the
interference from beyond the cluster the SINR, the users' demand the load. Every symptom then
follows from the fault through the model.

:func:`evaluate` runs the model for a configuration at a demand level (1.0: the demand at the
time of the report): the radio model for every cell and UE, link adaptation, load and sharing,
mobility load balancing (an overloaded cell with MLB on hands its border UEs to a neighbour
below its own threshold), the backhaul, the slices. :func:`mobility_of` plays the handover
procedures along the UE tracks for a configuration (separately: it is the costly part and only
handover, RLF and beam counters need it). :mod:`telcoenv.domains.network.counters` turns both
into each cell's PM counters.
"""

from __future__ import annotations

import dataclasses
import json
import math
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from telcoenv.domains.network import layout, mobility, radio, slicing, traffic, transport
from telcoenv.domains.network.radio import Cells, Coupling, UEs
from telcoenv.domains.network.topology import relation_cells

Configuration = Mapping[str, Mapping[str, Any]]

UE_COUNT = 240
#: The generator stream (with the track seed) that draws the UEs beyond the cluster.
OUTER_STREAM = 7
#: The generator stream (with the track seed, or a map's seed) of the interference from beyond's
#: shadowing (:func:`_beyond_fade_db`).
BEYOND_STREAM = 8
#: Far sectors whose interference reaches a UE of the cluster from beyond it, each shadowed
#: on its own link (the nearest ring of sites around a cluster: six).
BEYOND_SECTORS = 6
TRACK_COUNT = 96
#: Speeds of the users on the move, per area (m/s): pedestrians, city traffic, roads.
SPEEDS_MPS = {
    "urban": (1.4, 1.4, 8.0, 14.0),
    "suburban": (1.4, 8.0, 14.0, 22.0),
    "rural": (1.4, 14.0, 25.0, 33.0),
    "indoor": (0.8, 1.0, 1.4, 1.4),
    "stadium": (0.8, 1.0, 1.4, 1.4),
}
#: Users below this speed walk: their tracks last :data:`PEDESTRIAN_STEPS` (crossing a border
#: zone takes them tens of seconds), the others' :data:`VEHICLE_STEPS` (of mobility.STEP_MS).
PEDESTRIAN_MPS = 3.0
PEDESTRIAN_STEPS, VEHICLE_STEPS = 160, 80
#: Share of a cell's users that are on the move at a time, per area.
MOBILE_SHARE = {"urban": 0.12, "suburban": 0.15, "rural": 0.2, "indoor": 0.06, "stadium": 0.05}
#: A degraded cell has lost radio units: this much power and this share of its PRBs remain.
DEGRADED_POWER_DB, DEGRADED_PRB_SHARE = -6.0, 0.5
#: Mobility load balancing moves UEs whose best neighbour is at most this far below (dB).
MLB_RANGE_DB = 6.0
#: Share of traffic in the delay-critical HQoS queue (voice, gaming, signalling).
CRITICAL_SHARE = 0.12
#: Passes of the load-interference fixed point.
FIXED_POINT_PASSES = 3
#: Passes after load balancing has moved users (their new cells' load settles).
MLB_PASSES = 2
#: Scheduling slot of 30 kHz numerology, ms.
SLOT_MS = 0.5


@dataclass(frozen=True)
class Outage:
    """What a failed unit does to the serving cell: the share of the time it is off air, and how
    often it resets (each reset drops its connections)."""

    down_share: float = 0.0
    resets_per_hr: float = 0.0


@dataclass(frozen=True)
class World:
    """The physical side of an episode's cluster (index 0: the serving cell)."""

    area: str
    role: str
    cell_ids: tuple[str, ...]
    cells: Cells  # geometry; configurable columns are replaced per evaluation
    ues: UEs
    coupling: Coupling
    weight: np.ndarray  # users each UE stands for
    demand_mbps: np.ndarray  # DL traffic a user offers at the time of the report, Mbps
    # The interference of the sites' other sectors and the network beyond the cluster, as a
    # share of the cluster's own received power at each place (radio.beyond_dbm).
    site_share: float
    clutter_db: float  # loss every link has beyond TR 38.901's (buildings, foliage)
    operational: tuple[str, ...]  # ENABLED, DEGRADED or DOWN, per cell
    outage: Outage
    link_id: str
    link: transport.Link
    slice_ids: tuple[str, ...]
    slice_demand: tuple[slicing.SliceDemand, ...]
    speeds_mps: np.ndarray  # the tracks' speeds (drawn as often as users at them cross)
    track_seed: int
    ta_reference_m: np.ndarray  # each cell's median TA of the last weeks (its normal)
    home: np.ndarray  # per UE: the cell whose sector it is in
    sla_threshold: float  # the QoS share the cells' SLA promises
    qci_high_pct: np.ndarray  # per cell: traffic mix, high-priority and best-effort shares
    qci_best_effort_pct: np.ndarray
    load_guess: np.ndarray  # loads to start the interference fixed point from
    # Per UE beyond the cluster's sectors, from the sites' other sectors (layout.
    # sibling_sectors), before the clutter loss: the strongest one's RSRP (dBm per RE, where the
    # UE camps unless a cluster cell beats it) and their summed power (mW per RE: interference).
    # In the cluster's sectors -inf and 0: there a sector's wedge is its cell's to lose to the
    # cluster's cells alone (docs/network_model.md, What it simplifies).
    outer_best_dbm: np.ndarray
    outer_power_mw: np.ndarray
    # Per UE, the shadowing of the interference from beyond the cluster on its own links (dB,
    # median 0: _beyond_fade_db); site_share is calibrated with it.
    beyond_fade_db: np.ndarray
    site_mbps: float = 0.0  # what the site's other sectors and layers send over its backhaul
    # How calibration ended: the rounds it ran, and the worst target's error at the round kept
    # (in tolerances: at most 1 when every target was reached; inf with no user to calibrate).
    calibration_rounds: int = 0
    calibration_error: float = 0.0

    @property
    def mean_speed_mps(self) -> float:
        """The mean speed of the users on the move (each speed of the area equally common)."""
        return float(np.mean(SPEEDS_MPS[self.area]))


@dataclass(frozen=True)
class Evaluation:
    """One run of the model: per UE and per cell (arrays indexed like ``World.cells``)."""

    cells: Cells
    radio: radio.Radio
    traffic: traffic.Traffic
    served: np.ndarray  # bool per UE: a cluster cell serves it (not: no service, or outside)
    cio_db: np.ndarray
    moved: np.ndarray  # bool per UE: load balancing handed it to a neighbour
    best_server: np.ndarray  # per UE: the cell it would camp on without load balancing
    ul_mbps: np.ndarray  # per UE
    time_share: np.ndarray  # per UE: its share of its cell's PRB time
    critical_delay_ms: np.ndarray  # per cell: queueing of the delay-critical HQoS queue
    backhaul: transport.Backhaul
    throttle: float  # share of the serving cell's demand its backhaul lets through
    link_flow_mbps: float  # what one flow gets through the backhaul (processor sharing)
    slices: tuple[slicing.SliceKPIs, ...]
    scale: float


def quantiles(values: np.ndarray, qs: tuple[float, ...]) -> list[float]:
    """Quantiles (0-1) with numpy's linear method, without its generality's cost (this runs
    for every counter of every cell)."""
    if values.size == 0:
        return [0.0] * len(qs)
    ordered = np.sort(values)
    last = ordered.size - 1
    out = []
    for q in qs:
        position = q * last
        low = int(position)
        high = min(low + 1, last)
        frac = position - low
        out.append(float(ordered[low] + (ordered[high] - ordered[low]) * frac))
    return out


def harmonic(values: np.ndarray) -> float:
    """The harmonic mean of the positive values (TS 28.552 DL IP throughput, volume over active
    time, with equal volumes per user), 0 if none."""
    positive = values[values > 1e-6]
    return float(positive.size / (1.0 / positive).sum()) if positive.size else 0.0


def median(values: np.ndarray) -> float:
    return quantiles(values, (0.5,))[0]


# --- the configuration's view ---------------------------------------------------------------------


#: What a user must get to count as served to its QoS: DL rate (Mbps) and latency (ms).
QOS_MBPS, QOS_LATENCY_MS = 5.0, 50.0


def cell_latency_ms(ev: Evaluation, cell: int) -> tuple[float, float]:
    """A cell's mean user-plane latency, and the part of it spent waiting in its queues (the
    scheduler's and the delay-critical HQoS queue's). The backhaul's delay averages over the
    cell's packets: best-effort ones wait in the site's shared queue, real-time ones in their
    weighted one (a neighbour's site is not modelled: its backhaul adds 2 ms)."""
    t, hauled = ev.traffic, ev.backhaul
    rt = transport.RT_SHARE
    backhaul = (1 - rt) * hauled.delay_ms + rt * hauled.rt_delay_ms if cell == 0 else 2.0
    # The scheduler's counter is a p95; an exponential wait's p95 is three times its mean.
    waiting = float(t.sched_delay_ms[cell]) / 3.0 + float(ev.critical_delay_ms[cell])
    fixed = float(t.harq_delay_ms[cell]) + backhaul + transport.core_delay_ms()
    return waiting + fixed, waiting


def user_throughput_mbps(ev: Evaluation, cell: int, mine: np.ndarray, up: float) -> np.ndarray:
    """The DL throughput of a cell's UEs (``mine``) while active, ``up`` the share of time
    the cell is up; at the serving cell's site a flow gets at most its share of the backhaul."""
    thr = ev.traffic.ue_throughput_mbps[mine] * up
    if cell == 0:
        thr = np.minimum(thr * ev.throttle, ev.link_flow_mbps)
    return thr


#: Log-normal sigma of a 15-minute interval's load around the hour's.
LOAD_SPREAD = 0.2


def qos_compliance(
    throughput_mbps: float, load: float, users: float, latency_ms: float, waiting_ms: float
) -> float:
    """The share of 15-minute intervals in which the cell meets its QoS targets: its users'
    DL throughput (volume over active time) at least :data:`QOS_MBPS` and its latency at most
    :data:`QOS_LATENCY_MS`. An interval's offered load is log-normal around ``load`` (sigma
    :data:`LOAD_SPREAD`) and moves the KPIs as the traffic model does: a user's throughput as
    its processor share max(1 - rho, 1 / users), the queueing wait as rho / (1 - rho) (rho
    capped as the scheduler's counter caps it), the rest of the latency fixed. Each target
    holds up to a highest load, so compliance is the chance an interval stays under both: it
    falls smoothly as load builds."""
    slack = QOS_LATENCY_MS - (latency_ms - waiting_ms)
    if throughput_mbps <= 0.0 or slack <= 0.0:
        return 0.0
    load = max(load, 1e-3)
    floor = 1.0 / max(users, 1.0)
    # Throughput: the share a user needs of the cell's time for QOS_MBPS.
    needed = QOS_MBPS * max(1.0 - load, floor) / throughput_mbps
    highest = math.inf if needed <= floor else 1.0 - needed
    # Latency: the queueing factor rho / (1 - rho) it allows.
    if waiting_ms > 0.0:
        busy = min(load, traffic.RHO_CAP)
        allowed = slack / waiting_ms * busy / (1.0 - busy)
        if allowed < traffic.RHO_CAP / (1.0 - traffic.RHO_CAP):
            highest = min(highest, allowed / (1.0 + allowed))
    if highest <= 0.0:
        return 0.0
    if math.isinf(highest):
        return 1.0
    s = LOAD_SPREAD
    z = (math.log(highest / load) + s * s / 2.0) / s
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


@dataclass(frozen=True)
class CellService:
    """What a cell's serving users get in a run."""

    user_mbps: np.ndarray  # each user's DL throughput while active
    dl_mbps: float  # TS 28.552 DL IP throughput: the users' harmonic mean
    latency_ms: float  # mean user-plane latency
    waiting_ms: float  # the part of it spent in queues
    qos: float  # QoS compliance (:func:`qos_compliance`)


def cell_service(ev: Evaluation, cell: int, up: float = 1.0) -> CellService:
    """A cell's service in a run: its users' DL throughput, its latency, and the QoS
    compliance of the two under its offered load; ``up`` the share of time the cell is up."""
    user_mbps = user_throughput_mbps(ev, cell, ev.radio.serving == cell, up)
    dl_mbps = harmonic(user_mbps)
    latency, waiting = cell_latency_ms(ev, cell)
    load, users = float(ev.traffic.offered_load[cell]), float(ev.traffic.users[cell])
    qos = qos_compliance(dl_mbps, load, users, latency, waiting)
    return CellService(user_mbps, dl_mbps, latency, waiting, qos)


def _cell_config(world: World, config: Configuration) -> list[Mapping[str, Any]]:
    return [config[f"cell:{cell_id}"] for cell_id in world.cell_ids]


def cells_for(world: World, config: Configuration) -> Cells:
    """The cells as configured (tilt, azimuth, beam offset, power, PCI) and as they work."""
    params = _cell_config(world, config)
    base = world.cells
    power = np.array([float(p["tx_power_dbm"]) for p in params])
    n_prb = base.n_prb.copy()
    for i, state in enumerate(world.operational):
        if state == "DEGRADED":
            power[i] += DEGRADED_POWER_DB
            n_prb[i] = math.floor(n_prb[i] * DEGRADED_PRB_SHARE)
    return base.with_(
        azimuth_deg=np.array([float(p["azimuth_deg"]) for p in params]),
        tilt_deg=np.array([float(p["tilt_deg"]) for p in params]),
        beam_offset_deg=np.array([float(p["beam_azimuth_offset_deg"]) for p in params]),
        tx_power_dbm=power,
        n_prb=n_prb,
        pci=np.array([int(p["pci"]) for p in params]),
        active=np.array([state != "DOWN" for state in world.operational]),
    )


def _traffic_settings(world: World, config: Configuration, cells: Cells) -> traffic.CellTraffic:
    params = _cell_config(world, config)
    spec = layout.ROLES[world.role]
    return traffic.CellTraffic(
        n_prb=cells.n_prb,
        scs_khz=cells.scs_khz,
        layers=np.full(cells.count, float(spec.layers)),
        reservation=np.array([float(p["prb_reservation_pct"]) / 100.0 for p in params]),
        scheduler=tuple(str(p["scheduler_type"]) for p in params),
        max_ue_per_tti=np.array([float(p["max_ue_per_tti"]) for p in params]),
        bler_target=np.array([float(p["olla_bler_target_pct"]) / 100.0 for p in params]),
    )


def _column(world: World, config: Configuration, name: str) -> np.ndarray:
    return np.array([float(p[name]) for p in _cell_config(world, config)])


# --- one run --------------------------------------------------------------------------------------


def _pass(
    world: World,
    cells: Cells,
    settings: traffic.CellTraffic,
    load: np.ndarray,
    cio: np.ndarray,
    demand: np.ndarray,
    rsrp: np.ndarray,
    force: np.ndarray | None = None,
) -> tuple[radio.Radio, traffic.Traffic]:
    beyond = radio.beyond_dbm(rsrp, world.site_share, world.beyond_fade_db)
    outside = world.outer_best_dbm - world.clutter_db
    beyond = _with_siblings(world, beyond, load)
    measured = radio.measure(
        cells, world.coupling, load, cio, beyond, force=force, rsrp=rsrp, outside_dbm=outside
    )
    served = traffic.serve(
        settings,
        measured.serving,
        measured.sinr_db,
        measured.rs_sinr_db,
        world.weight,
        demand,
    )
    return measured, served


def _with_siblings(world: World, beyond: np.ndarray | float, load: np.ndarray) -> np.ndarray:
    """The interference from outside the cluster per UE (dBm per RE): ``beyond`` (a share of
    the cluster's own power, calibrated to its SINR), and at a UE beyond the cluster's sectors,
    where the cluster's power says little of the network there, the sibling sectors' power at
    the cluster's neighbours' mean load."""
    neighbours = load[1:] if len(load) > 1 else load
    activity = max(float(np.mean(neighbours)), radio.RS_ACTIVITY)
    siblings = activity * (world.outer_power_mw * 10.0 ** (-world.clutter_db / 10.0))
    total = 10.0 ** (np.asarray(beyond, dtype=float) / 10.0) + siblings
    return 10.0 * np.log10(np.maximum(total, 1e-300))


def _balance(
    world: World,
    config: Configuration,
    measured: radio.Radio,
    served: traffic.Traffic,
    cio: np.ndarray,
    demand: np.ndarray,
) -> np.ndarray | None:
    """Mobility load balancing: each cell with MLB on whose load is above its threshold hands
    its border UEs (best neighbour within :data:`MLB_RANGE_DB`, weakest margin first) to that
    neighbour while the neighbour stays below its own threshold, until it is back at its
    threshold. Returns the forced serving cell per UE (-1: unchanged), or None."""
    enabled = np.array([bool(p["mlb_enabled"]) for p in _cell_config(world, config)])
    threshold = _column(world, config, "mlb_threshold_pct") / 100.0
    load = served.offered_load
    hot = np.flatnonzero(enabled & (load > threshold))
    if hot.size == 0:
        return None
    ranked = measured.rsrp_dbm + cio[:, None]
    ranked = np.where(np.isfinite(ranked), ranked, -np.inf)
    order = np.argsort(-ranked, axis=0)
    best, second = order[0], order[1]
    ues = np.arange(len(best))
    margin = ranked[best, ues] - ranked[second, ues]
    need = np.where(
        served.ue_peak_mbps > 0,
        world.weight * demand / np.maximum(served.ue_peak_mbps, 1e-9),
        0.0,
    )
    force = np.full(len(best), -1)
    room = threshold - load  # what each target may still take
    for cell in hot:
        excess = load[cell] - threshold[cell]
        candidates = np.flatnonzero(
            (measured.serving == cell) & (margin <= MLB_RANGE_DB) & np.isfinite(margin)
        )
        for ue in candidates[np.argsort(margin[candidates], kind="stable")]:
            target = int(second[ue])
            if excess <= 0:
                break
            # At the target the UE needs about what it needs here (its margin is small).
            if room[target] < need[ue] or enabled[target] is False:
                continue
            force[ue] = target
            room[target] -= need[ue]
            excess -= need[ue]
    return force if (force >= 0).any() else None


def evaluate(world: World, config: Configuration, scale: float = 1.0) -> Evaluation:
    """Run the model for ``config`` with every user's demand times ``scale``."""
    cells = cells_for(world, config)
    settings = _traffic_settings(world, config, cells)
    cio = _column(world, config, "cio_db")
    demand = world.demand_mbps * scale
    rsrp = radio.rsrp_of(cells, world.coupling)
    # Interference follows load and load follows SINR: a damped fixed point (a cell's load
    # moves its neighbours' SINR, and so their load, steeply in a dense cluster).
    load = world.load_guess
    for _ in range(FIXED_POINT_PASSES):
        measured, served = _pass(world, cells, settings, load, cio, demand, rsrp)
        load = 0.5 * (load + served.load)
    force = _balance(world, config, measured, served, cio, demand)
    moved = np.zeros(world.ues.count, dtype=bool)
    best_server = measured.serving
    if force is not None:
        # The handed-over users load their new cells, whose interference the rest then see.
        moved = force >= 0
        for _ in range(MLB_PASSES):
            measured, served = _pass(world, cells, settings, load, cio, demand, rsrp, force)
            load = 0.5 * (load + served.load)
    link_config = config[f"backhaul:{world.link_id}"]
    link = replace(
        world.link,
        shaper_mbps=float(link_config["bh_shaper_mbps"]),
        rt_weight_pct=float(link_config["bh_rt_queue_weight_pct"]),
    )
    offered = float(served.cell_throughput_mbps[0]) + world.site_mbps * scale
    on_air = served.ue_throughput_mbps[measured.serving == 0]
    peak = float(np.median(on_air)) if on_air.size else None  # what a flow would run at
    hauled = transport.backhaul(offered, link, peak, LOAD_SPREAD)
    throttle = hauled.carried_share
    if throttle < 0.999:
        # Elastic traffic backs off to what the link carries: the cell's users ask for less.
        on_site = measured.serving == 0
        demand = np.where(on_site, demand * throttle, demand)
        measured, served = _pass(world, cells, settings, served.load, cio, demand, rsrp, force)
    return Evaluation(
        cells=cells,
        radio=measured,
        traffic=served,
        served=measured.serving >= 0,
        cio_db=cio,
        moved=moved,
        best_server=best_server,
        ul_mbps=_uplink(world, cells, measured, served),
        time_share=_time_share(measured, served, settings),
        critical_delay_ms=_critical_delay(world, config, served),
        backhaul=hauled,
        throttle=throttle,
        link_flow_mbps=transport.flow_rate_mbps(hauled, link),
        slices=_slices(world, config, measured, served),
        scale=scale,
    )


def _uplink(
    world: World, cells: Cells, measured: radio.Radio, served: traffic.Traffic
) -> np.ndarray:
    """Each UE's UL throughput (TS 28.552 UL IP throughput: over its active time): alone, it
    fills as many of the carrier's PRBs as its power reaches (power-limited at the edge,
    bandwidth-limited near the mast) at the CQI table's SE for the SINR per PRB, in the UL
    symbols of a DDDSU frame; shared with the cell's other UL users as processor sharing (the
    UL half as loaded as the DL)."""
    serving = np.maximum(measured.serving, 0)
    ues = np.arange(world.ues.count)
    loss = world.coupling.loss_db[serving, ues]
    gain = cells.max_gain_dbi[serving]
    neighbours = np.delete(served.load, 0).mean() if cells.count > 1 else 0.0
    prbs = traffic.uplink_prbs(loss, gain, cells.n_prb[serving].astype(float))
    sinr = traffic.uplink_sinr_db(loss, gain, np.full(world.ues.count, neighbours), prbs)
    se = traffic.spectral_efficiency(sinr - traffic.olla_margin_db(0.1))
    rate = se * prbs * 12.0 * 14.0 * (1000.0 / SLOT_MS) * (1 - traffic.OVERHEAD)
    busy = np.clip(0.5 * served.load[serving], 0.0, 0.95)
    return np.where(measured.serving >= 0, rate * traffic.UL_SHARE * (1.0 - busy) / 1e6, 0.0)


def _time_share(
    measured: radio.Radio, served: traffic.Traffic, settings: traffic.CellTraffic
) -> np.ndarray:
    """Each UE's share of its cell's scheduled PRB time: equal under RR and PF, tilted toward
    the best channels under MAX-CI (as :func:`traffic.serve` shares it)."""
    share = np.zeros(len(measured.serving))
    for cell in range(len(settings.n_prb)):
        mine = measured.serving == cell
        if not mine.any():
            continue
        peak = served.ue_peak_mbps[mine]
        exponent = 3.0 if settings.scheduler[cell] == "MAX_CI" else 0.0
        tilt = np.where(peak > 0, peak, 0.0) ** exponent if exponent else np.ones(peak.size)
        share[mine] = tilt / max(float(tilt.sum()), 1e-12)
    return share


def _critical_delay(world: World, config: Configuration, served: traffic.Traffic) -> np.ndarray:
    """Queueing of the delay-critical HQoS queue: a weighted-fair queue whose weight is
    ``hqos_priority_weight_pct``, carrying :data:`CRITICAL_SHARE` of the cell's load: its
    utilisation is ``share x rho / weight`` (capped), its wait ``rho_q / (1 - rho_q)`` slots
    of a few ms of scheduling each."""
    weight = np.clip(_column(world, config, "hqos_priority_weight_pct") / 100.0, 0.01, 1.0)
    rho = np.minimum(CRITICAL_SHARE * served.offered_load / weight, 0.98)
    return 4.0 * rho / (1.0 - rho)


def _slices(
    world: World, config: Configuration, measured: radio.Radio, served: traffic.Traffic
) -> tuple[slicing.SliceKPIs, ...]:
    """The serving cell's slices: the cell's capacity at its users' mean peak rate, its load as
    the traffic the slices compete with."""
    mine = measured.serving == 0
    weight = world.weight[mine]
    capacity = (
        float((served.ue_peak_mbps[mine] * weight).sum() / weight.sum()) if mine.any() else 0.0
    )
    policies = [config[f"slice:{slice_id}"] for slice_id in world.slice_ids]
    air = float(served.sched_delay_ms[0] / 2.0 + served.harq_delay_ms[0])
    # The slices' sessions are part of the cell's load: the rest is what they compete with.
    sliced = sum(d.requests_per_min * d.session_min * d.session_mbps for d in world.slice_demand)
    other = max(0.0, float(min(served.load[0], 1.0)) - sliced / max(capacity, 1e-9))
    return slicing.slice_kpis(world.slice_demand, policies, capacity, other, air)


# --- building and calibrating the world -----------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """What the generated network says of its cluster (index 0: the serving cell)."""

    area: str
    role: str
    cell_ids: tuple[str, ...]
    positions_m: tuple[tuple[float, float], ...]  # east and north of the serving site
    operational: tuple[str, ...]
    link_id: str
    link: transport.Link
    slice_ids: tuple[str, ...]
    slice_demand: tuple[slicing.SliceDemand, ...]
    outage: Outage = Outage()
    heights_m: tuple[float, ...] = ()  # per cell (empty: the role's)
    sla_threshold: float = 0.98
    qci_high_pct: tuple[float, ...] = ()
    qci_best_effort_pct: tuple[float, ...] = ()


@dataclass(frozen=True)
class Targets:
    """The serving cell's level KPIs the world is calibrated to (None: as the model has it),
    and every cell's PRB load."""

    rsrp_dbm: float | None
    sinr_db: float | None
    users: float
    prb_util: tuple[float, ...]  # per cell, as the PRB counter shows it (reservation included)
    slice_offered: tuple[float, ...] = ()  # per slice: its sessions' demand over its max share
    link_util: float | None = None  # the backhaul's utilisation (0-1) with the site's traffic
    # The serving cell's QoS compliance (0-1) where the sample says it breaches its SLA: reached
    # by the demand of its users at the event or the peak (:func:`_calibrate_qos`).
    qos: float | None = None
    # The share (%) of the serving cell's area under radio.COVERAGE_DBM: where set, it and not
    # the median RSRP sets the clutter loss (a coverage hole is the far part of the sector; the
    # served users' median, near the mast, cannot be as weak as the hole and the gap this small).
    coverage_gap_pct: float | None = None


#: How far calibration may move the clutter loss (dB).
CLUTTER_RANGE_DB = (-25.0, 35.0)


def build_world(
    plan: Plan,
    config: Configuration,
    normal: Configuration,
    targets: Targets,
    rng: np.random.Generator,
) -> World:
    """The episode's world, calibrated with ``config`` (the configuration at the report, fault
    included) to ``targets``; ``normal`` is the configuration before the fault (the cells' TA
    history was recorded under it)."""
    n = len(plan.cell_ids)
    params = [config[f"cell:{cell_id}"] for cell_id in plan.cell_ids]
    geometry = layout.cells_of(
        plan.area,
        plan.role,
        plan.positions_m,
        [float(p["azimuth_deg"]) for p in params],
        [int(p["pci"]) for p in params],
        params,
        [True] * n,
    )
    if plan.heights_m:
        geometry = geometry.with_(height_m=np.array(plan.heights_m, dtype=float))
    ues, home = layout.draw_ues(plan.area, plan.role, geometry, rng, UE_COUNT)
    coupling = radio.couple(geometry, ues, rng)
    speeds = _track_speeds(plan.area, rng)
    track_seed = int(rng.integers(2**32))
    ues, coupling, home, outer = _beyond_the_cluster(
        plan, geometry, normal, ues, coupling, home, track_seed
    )
    world = World(
        area=plan.area,
        role=plan.role,
        cell_ids=plan.cell_ids,
        cells=geometry,
        ues=ues,
        coupling=coupling,
        weight=np.ones(ues.count),
        demand_mbps=np.ones(ues.count),
        site_share=0.0,
        clutter_db=0.0,
        operational=("ENABLED",) * n,  # calibrated as the cells work normally
        outage=plan.outage,
        link_id=plan.link_id,
        link=transport.Link(plan.link.capacity_mbps, 1e9, 100.0),  # no bottleneck yet
        slice_ids=plan.slice_ids,
        slice_demand=plan.slice_demand,
        speeds_mps=speeds,
        track_seed=track_seed,
        ta_reference_m=np.zeros(n),
        home=home,
        sla_threshold=plan.sla_threshold,
        qci_high_pct=np.array(plan.qci_high_pct or (20.0,) * n),
        qci_best_effort_pct=np.array(plan.qci_best_effort_pct or (65.0,) * n),
        load_guess=np.array(targets.prb_util, dtype=float),
        outer_best_dbm=np.where(home >= n, outer.max(axis=0), -np.inf),
        outer_power_mw=np.where(home >= n, radio.received_mw(outer).sum(axis=0), 0.0),
        beyond_fade_db=_beyond_fade_db(geometry.scenario, ues.count, [track_seed, BEYOND_STREAM]),
    )
    world = _calibrate(world, config, targets)
    world = _calibrate_slices(world, config, targets)
    world = _calibrate_site(world, config, targets)
    reference = evaluate(world, normal)
    world = replace(
        world,
        operational=plan.operational,
        link=plan.link,
        ta_reference_m=np.array([_median_ta(world, reference, c) for c in range(n)]),
    )
    # Last, with the backhaul as it is: its queue is part of what the users wait for.
    return _calibrate_qos(world, config, targets)


def _beyond_fade_db(scenario: str, count: int, seed: list[int]) -> np.ndarray:
    """Per UE (or map point), the shadowing of the interference from beyond the cluster, dB.
    That interference is a share of the cluster's own power at the place (it radiates where the
    cluster does), but it reaches the UE over links of its own: :data:`BEYOND_SECTORS` far
    sectors', each with TR 38.901's NLOS shadow fading, independent of the serving link's and
    of each other. Their sum is log-normal to a good approximation (Fenton-Wilkinson: the
    standard deviation of a sum of equal log-normals), median 0 dB. Without it a UE's SINR
    could not exceed 1 / share wherever it stood (a flat top: the best tenth's SINR within 3 dB
    of the median in two thirds of the worlds). Drawn from a generator of its own, so every other
    draw stays as it was."""
    sigma_ln = radio.SHADOW_SIGMA_DB[scenario][1] * math.log(10.0) / 10.0
    summed_ln = math.sqrt(math.log1p(math.expm1(sigma_ln**2) / BEYOND_SECTORS))
    sigma_db = summed_ln * 10.0 / math.log(10.0)
    return sigma_db * np.random.default_rng(seed).standard_normal(count)


def _beyond_the_cluster(
    plan: Plan,
    geometry: Cells,
    normal: Configuration,
    ues: UEs,
    coupling: Coupling,
    home: np.ndarray,
    seed: int,
) -> tuple[UEs, Coupling, np.ndarray, np.ndarray]:
    """The sites' other sectors and the UEs they serve: the population with those UEs added
    (their links to the cluster drawn from a generator of their own, so that the cluster's
    UEs and everything drawn after them stay as they were), its homes, and the siblings' RSRP
    at every UE [siblings, UEs] before the clutter loss. The siblings are as planned (the
    fault is in the cluster's cell) and share their site's links."""
    planned = [normal[f"cell:{cell_id}"] for cell_id in plan.cell_ids]
    siblings = layout.sibling_sectors(
        geometry.with_(
            tilt_deg=np.array([float(p["tilt_deg"]) for p in planned]),
            tx_power_dbm=np.array([float(p["tx_power_dbm"]) for p in planned]),
        )
    )
    rng = np.random.default_rng([seed, OUTER_STREAM])
    far, far_home = layout.draw_outer_ues(plan.area, plan.role, siblings, geometry.count, rng)
    coupling = coupling.beside(radio.couple(geometry, far, rng))
    site = np.repeat(np.arange(geometry.count), 2)
    outer = radio.rsrp_of(siblings, coupling.of_cells(site))
    return layout.joined(ues, far), coupling, np.concatenate([home, far_home]), outer


#: Calibrated worlds kept per process, with their model runs and UE tracks (about 1.3 MB each).
WORLD_CACHE_SIZE = 8


class _WorldCache:
    """:func:`build_world`, remembered: the worlds of recent episodes by everything that builds
    them, the generator's state included, each with a memo where the episodes on it keep their
    model runs (:class:`~telcoenv.domains.network.simulation.Simulation`). A GRPO group or an
    evaluation's repeats reset one seed many times, and calibration and the model runs of a
    reset are most of its cost. A hit returns the same world and memo and leaves the generator
    where building the world would have, so a hit and a miss give the same episode; the
    world's arrays are read-only, so no episode can change another's."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.worlds: OrderedDict[tuple[Any, ...], tuple[World, dict[str, Any], dict[str, Any]]]
        self.worlds = OrderedDict()
        self.lock = threading.Lock()
        self.hits = 0

    def __call__(
        self,
        plan: Plan,
        config: Configuration,
        normal: Configuration,
        targets: Targets,
        rng: np.random.Generator,
    ) -> tuple[World, dict[str, Any]]:
        # Any bit generator's state, arrays included (MT19937 keeps one), as text.
        state = json.dumps(rng.bit_generator.state, sort_keys=True, default=np.ndarray.tolist)
        key = (plan, _frozen(config), _frozen(normal), targets, state)
        with self.lock:
            found = self.worlds.get(key)
            if found is not None:
                self.worlds.move_to_end(key)
        if found is not None:
            world, after, memo = found
            rng.bit_generator.state = after
            self.hits += 1
            return world, memo
        world = _read_only(build_world(plan, config, normal, targets, rng))
        memo: dict[str, Any] = {}
        with self.lock:
            self.worlds[key] = (world, rng.bit_generator.state, memo)
            while len(self.worlds) > self.size:
                self.worlds.popitem(last=False)
        return world, memo


def _frozen(config: Configuration) -> tuple[Any, ...]:
    return tuple((owner, tuple(sorted(params.items()))) for owner, params in sorted(config.items()))


def _read_only(value: Any) -> Any:
    """``value`` with every array in it (and in the dataclasses it holds) made read-only."""
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for item in dataclasses.fields(value):
            _read_only(getattr(value, item.name))
    return value


built_world = _WorldCache(WORLD_CACHE_SIZE)


#: Calibration stops when every level is this close (dB, or relative for users and load).
CALIBRATED_DB, CALIBRATED_SHARE = 0.5, 0.02
#: The neighbours' loads: close enough when this close (relative); they set the interference
#: the serving cell's users see, and no counter of theirs is a sampled target.
CALIBRATED_NEIGHBOUR_SHARE = 0.05
CALIBRATION_ROUNDS = 12


def _calibrate(world: World, config: Configuration, targets: Targets) -> World:
    """Calibrate the world's knobs together, each from a whole run of the model (load
    balancing and the interference of the load included), keeping the best round: the
    clutter loss common to every link sets the serving cell's median RSRP (or its area's
    coverage gap, :func:`_gap_shift`); the interference from beyond the cluster (it only
    lowers SINR) its median SINR; users per UE its users (where they camp); each cell's users'
    demand its PRB load."""
    reservation = np.array(
        [float(p["prb_reservation_pct"]) / 100.0 for p in _cell_config(world, config)]
    )
    wanted = np.clip(
        (np.array(targets.prb_util) - reservation) / np.maximum(1.0 - reservation, 1e-9),
        0.02,
        1.5,
    )
    world = replace(world, load_guess=np.minimum(wanted, 1.0))
    best, best_error = world, math.inf
    for rounds in range(1, CALIBRATION_ROUNDS + 1):
        ev = evaluate(world, config)
        mine = ev.radio.serving == 0
        if not mine.any():
            return replace(world, calibration_rounds=rounds, calibration_error=math.inf)
        shift = 0.0
        if targets.coverage_gap_pct is not None:
            shift = _gap_shift(world, config, targets.coverage_gap_pct)
        elif targets.rsrp_dbm is not None:
            shift = median(ev.radio.serving_rsrp_dbm[mine]) - targets.rsrp_dbm
        share = world.site_share
        sinr_error = 0.0
        clutter = float(np.clip(world.clutter_db + shift, *CLUTTER_RANGE_DB))
        if targets.sinr_db is not None:
            sinr_error = median(ev.radio.sinr_db[mine]) - targets.sinr_db
            # For the links as this round's clutter change leaves them (the signals and all
            # interference move with it, the noise floor does not).
            share = _share_for(world, ev, mine, targets.sinr_db, clutter - world.clutter_db)
        offered = ev.traffic.offered_load
        factor = np.where(offered > 1e-9, wanted / np.maximum(offered, 1e-9), 1.0)
        users = max(float(world.weight[ev.best_server == 0].sum()), 1e-9)
        people = targets.users / users
        off = np.abs(np.log(np.clip(factor, 1e-3, 1e3)))  # each cell's load, relative
        error = max(
            abs(shift) / CALIBRATED_DB,
            abs(sinr_error) / CALIBRATED_DB,
            float(off[0]) / CALIBRATED_SHARE,
            float(off[1:].max(initial=0.0)) / CALIBRATED_NEIGHBOUR_SHARE,
            abs(math.log(people)) / CALIBRATED_SHARE,
        )
        if error < best_error:
            best = replace(world, load_guess=np.minimum(ev.traffic.load, 1.0))
            best_error = error
        if error <= 1.0:
            break
        cell = np.maximum(ev.radio.serving, 0)
        # A UE's demand is its user's (per person: more people at the same load ask less),
        # the whole step at once (a cell's load moves its neighbours' SINR, and so their load,
        # but half steps converged in a quarter of the worlds within the rounds, whole ones in
        # over half, with the median error a third).
        world = replace(
            world,
            coupling=replace(
                world.coupling,
                loss_db=world.coupling.loss_db + (clutter - world.clutter_db),
            ),
            clutter_db=clutter,
            site_share=(world.site_share + share) / 2.0,
            weight=world.weight * people,
            demand_mbps=world.demand_mbps * np.clip(factor, 0.33, 3.0)[cell] / people,
            load_guess=np.minimum(ev.traffic.load, 1.0),
        )
    return replace(best, calibration_rounds=rounds, calibration_error=best_error)


def area_best_rsrp_dbm(world: World, rsrp_dbm: np.ndarray, cell: int) -> np.ndarray:
    """The best RSRP from any cell ([cells, UEs] dBm) at each UE of ``cell``'s area, the UEs
    dropped in its sector: what its coverage gap counts (-inf where no cell is on air)."""
    return rsrp_dbm[:, world.home == cell].max(axis=0)


def _gap_shift(world: World, config: Configuration, gap_pct: float) -> float:
    """How much more loss every link needs (dB) for ``gap_pct`` of the serving cell's area to
    be under :data:`radio.COVERAGE_DBM` with ``config``: the best RSRP there moves dB for dB
    with a loss common to every link."""
    best = area_best_rsrp_dbm(world, radio.rsrp_of(cells_for(world, config), world.coupling), 0)
    edge = float(np.quantile(best, min(max(gap_pct, 0.0), 100.0) / 100.0))
    return edge - radio.COVERAGE_DBM if math.isfinite(edge) else 0.0


#: How much more the serving cell's users may ask at an event or the peak than the calibrated
#: level (an SLA breach is load: the PRB counter then reads what that load takes).
QOS_DEMAND_MAX = 8.0


def _calibrate_qos(world: World, config: Configuration, targets: Targets) -> World:
    """Where the sample has the serving cell breach its SLA: its users' demand raised until
    their QoS compliance falls to the target (bisection on the factor, in log: compliance
    falls as demand rises, through throughput and queueing; load balancing may move users
    to the neighbours meanwhile, as it would at the event). A cell that already breaches more
    (a stadium's event on a loaded backhaul) is left as it is."""
    if targets.qos is None:
        return world
    home = evaluate(world, config).radio.serving == 0

    def louder(factor: float) -> tuple[float, World]:
        demand = np.where(home, world.demand_mbps * factor, world.demand_mbps)
        louder_world = replace(world, demand_mbps=demand)
        return cell_service(evaluate(louder_world, config), 0).qos, louder_world

    compliance, best = louder(1.0)
    if compliance <= targets.qos:
        return world
    low, high = 0.0, math.log(QOS_DEMAND_MAX)
    for _ in range(8):
        middle = (low + high) / 2.0
        compliance, candidate = louder(math.exp(middle))
        if compliance > targets.qos:
            low = middle
        else:
            high, best = middle, candidate
    return best if high < math.log(QOS_DEMAND_MAX) else louder(QOS_DEMAND_MAX)[1]


def _calibrate_site(world: World, config: Configuration, targets: Targets) -> World:
    """The traffic of the site's other sectors and layers on the backhaul, so that the link
    is as utilised as the target (the model has one sector of the site)."""
    if targets.link_util is None:
        return world
    ev = evaluate(world, config)
    link_config = config[f"backhaul:{world.link_id}"]
    rate = min(world.link.capacity_mbps, float(link_config["bh_shaper_mbps"]))
    cell = float(ev.traffic.cell_throughput_mbps[0])
    return replace(world, site_mbps=max(0.0, targets.link_util * rate - cell))


#: The most interference the sites' other sectors and the network beyond may bring, as a share
#: of the cluster's own power at a place (a target SINR needing more is left out of reach). The
#: other sectors are 20-30 dB down behind their panels except at the sector's sides, and the
#: second ring of sites brings a fraction of the first's, so half the cluster's own power is
#: already generous. More (the lowest sampled SINRs asked up to 1.7) put the A3 point of every
#: border at Qout: at a 5.5 dB margin the SINR reached -8 dB before the time-to-trigger ran,
#: and healthy worlds lost 40-98 % of their handovers too late.
SITE_SHARE_MAX = 0.5


def _share_for(
    world: World, ev: Evaluation, mine: np.ndarray, target_db: float, added_loss_db: float = 0.0
) -> float:
    """The share of the cluster's own power (:func:`radio.beyond_dbm`) that the sites' other
    sectors and the network beyond bring, for the serving cell's users' median SINR to be the
    target once every link loses ``added_loss_db`` more, the rest of this run as it is.
    SINR = S / (N + I + eta T): with each UE's S, thermal noise N, the cluster's interference I
    and its total received power T, the median for any eta is a few vector operations;
    bisection on it (monotone in eta). Interference that scales with the cluster's own signals
    keeps the cell edge, where they are weakest, interference-limited as a real cluster's is
    (a uniform floor instead drowned it: users lost the link before any handover)."""
    rsrp = ev.radio.rsrp_dbm[:, mine]
    signal = 10.0 ** (ev.radio.serving_rsrp_dbm[mine] / 10.0)
    total = signal / 10.0 ** (ev.radio.sinr_db[mine] / 10.0)
    power = radio.received_mw(rsrp).sum(axis=0) * 10.0 ** (world.beyond_fade_db[mine] / 10.0)
    scs = ev.cells.scs_khz[np.maximum(ev.radio.serving[mine], 0)]
    noise = 10.0 ** (radio.noise_dbm_per_re(scs, radio.UE_NOISE_FIGURE_DB) / 10.0)
    interference = np.maximum(total - noise - world.site_share * power, 0.0)
    kept = 10.0 ** (-added_loss_db / 10.0)
    signal, floor, power = signal * kept, noise + interference * kept, power * kept

    def median_sinr_db(share: float) -> float:
        return float(10.0 * np.log10(median(signal / np.maximum(floor + share * power, 1e-300))))

    if median_sinr_db(0.0) <= target_db:
        return 0.0  # the cluster's own interference is already as much as the target
    if median_sinr_db(SITE_SHARE_MAX) > target_db:
        return SITE_SHARE_MAX
    low, high = 0.0, SITE_SHARE_MAX
    for _ in range(30):
        middle = (low + high) / 2.0
        if median_sinr_db(middle) > target_db:
            low = middle
        else:
            high = middle
    return (low + high) / 2.0


def _calibrate_slices(world: World, config: Configuration, targets: Targets) -> World:
    """Each slice's session rate so that its sessions ask the target share of its max share of
    the serving cell's capacity (the requests per minute and holding time stay)."""
    if not targets.slice_offered:
        return world
    ev = evaluate(world, config)
    mine = ev.radio.serving == 0
    weight = world.weight[mine]
    capacity = float((ev.traffic.ue_peak_mbps[mine] * weight).sum() / max(weight.sum(), 1e-9))
    demands = []
    for slice_id, demand, share in zip(
        world.slice_ids, world.slice_demand, targets.slice_offered, strict=True
    ):
        max_share = float(config[f"slice:{slice_id}"]["max_share_pct"]) / 100.0
        sessions = max(demand.requests_per_min * demand.session_min, 1e-9)
        rate = max(share * max_share * capacity / sessions, 0.05)
        demands.append(replace(demand, session_mbps=rate))
    return replace(world, slice_demand=tuple(demands))


#: Timing advance granularity as a distance: 16 x 64 Tc / 2^mu of TS 38.213 §4.2 at mu = 1.
TA_STEP_M = 39.06


def timing_advance_m(distance_m: np.ndarray) -> np.ndarray:
    """UE distances as the timing advance reports them: whole steps of :data:`TA_STEP_M`."""
    return np.round(distance_m / TA_STEP_M) * TA_STEP_M


def _median_ta(world: World, evaluation: Evaluation, cell: int) -> float:
    """The median timing advance of a cell's users, as its TA counters compute it (the cell's
    normal, against which they report the drift: a median of whole steps against one of exact
    distances read half a step of drift on an unchanged cell)."""
    mine = evaluation.radio.serving == cell
    if not mine.any():
        return 0.0
    return median(timing_advance_m(world.coupling.distance_m[cell, mine]))


# --- mobility -------------------------------------------------------------------------------------


def _track_speeds(area: str, rng: np.random.Generator) -> np.ndarray:
    """The tracks' speeds: a user crosses borders as often as it is fast, so the tracks, which
    each sample one crossing, draw the area's speeds in proportion to the speed (every crossing
    then counts alike)."""
    speeds = np.array(SPEEDS_MPS[area])
    return np.sort(rng.choice(speeds, TRACK_COUNT, p=speeds / speeds.sum()))


def tracks_of(world: World) -> tuple[mobility.TrackGeometry, ...]:
    """The UE tracks and what along them does not depend on the configuration (drawn from the
    world's own seed, so that every configuration sees the same walks): pedestrians' and
    vehicles' tracks apart, each with its own length. They start where the serving cell's
    users are and cross its border as the cells are configured at the report."""
    rng = np.random.default_rng(world.track_seed)
    radius = layout.SERVICE_RADIUS_M[world.area][world.role]
    home = world.home == 0
    starts = (world.ues.x[home], world.ues.y[home])
    walking = world.speeds_mps < PEDESTRIAN_MPS
    groups = []
    for chosen, steps in ((walking, PEDESTRIAN_STEPS), (~walking, VEHICLE_STEPS)):
        if not chosen.any():
            continue
        walk = mobility.tracks(
            world.cells, radius, world.speeds_mps[chosen], rng, steps=steps, starts=starts
        )
        geometry = mobility.track_geometry(world.cells, walk, rng)
        groups.append(replace(geometry, loss_db=geometry.loss_db + world.clutter_db))
    return tuple(groups)


@dataclass(frozen=True)
class Moves:
    """The handover procedures along the tracks, and how many tracks began in each cell (each
    track crosses one border: the counts per crossing scale to each cell's users)."""

    counts: mobility.Mobility
    started: np.ndarray  # [cells]


def relation_offsets(world: World, config: Configuration) -> np.ndarray | None:
    """Each relation's cell individual offset [cell, neighbour] (dB; 0 where there is no
    relation), or None when every one is 0."""
    index = {cell_id: i for i, cell_id in enumerate(world.cell_ids)}
    offsets = np.zeros((len(index), len(index)))
    for owner, params in config.items():
        if owner.startswith("relation:") and params["cio_db"]:
            cell_id, neighbour_id = relation_cells(owner.removeprefix("relation:"))
            offsets[index[cell_id], index[neighbour_id]] = float(params["cio_db"])
    return offsets if offsets.any() else None


def mobility_of(
    world: World,
    groups: tuple[mobility.TrackGeometry, ...],
    evaluation: Evaluation,
    config: Configuration,
) -> Moves:
    """The handover procedures along the UE tracks for a configuration (each group of tracks
    played apart, their counts added)."""
    cells = evaluation.cells
    parameters = [
        evaluation.traffic.load,
        cells.pci,
        _column(world, config, "a3_offset_db"),
        _column(world, config, "hysteresis_db"),
        _column(world, config, "ttt_ms"),
        evaluation.cio_db,
        _column(world, config, "t310_ms"),
    ]
    relations = relation_offsets(world, config)
    counts, started = [], np.zeros(cells.count)
    for geometry in groups:
        measured = replace(mobility.track_radio(cells, geometry), site_share=world.site_share)
        counts.append(mobility.handovers(measured, *parameters, relation_cio_db=relations))
        first = measured.rsrp_dbm[:, :, 0] + evaluation.cio_db[:, None]
        first = np.where(np.isfinite(first), first, -np.inf)
        started += np.bincount(np.argmax(first, axis=0), minlength=cells.count)
    return Moves(mobility.added(counts), started)


# --- a coverage map -------------------------------------------------------------------------------


#: A place belongs to the cluster inside a cell's sector (the 120 degree wedge its users are
#: dropped in) within this many service radii: farther out, or behind the panel, the rest of the
#: network serves it (other sites, the site's other sectors), and the model has none of those.
FOOTPRINT_RADII = 1.5
SECTOR_HALF_DEG = 60.0
#: Points per side of a bin at most: a bin's values are the medians over its points inside the
#: cluster, spaced under the cluster's reach apart so that a coarse bin still finds a venue.
BIN_POINTS_MAX = 16


@dataclass(frozen=True)
class Bins:
    """A square grid of bins (row-major, north row first) around a cell's sector: per bin, the
    median over its points inside the cluster of the strongest cell's RSRP and SINR and of the
    cells within 6 dB of it, and the cell strongest at most of those points; a bin with no
    point inside the cluster has none (NaN, -1, 0)."""

    rsrp_dbm: np.ndarray
    best: np.ndarray
    sinr_db: np.ndarray
    within_6db: np.ndarray
    inside: np.ndarray  # whether any of the bin's points is inside the cluster


def _points_radio(
    world: World, ev: Evaluation, xs: np.ndarray, ys: np.ndarray, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """At each point: the strongest cell, its RSRP and SINR, and the cells within 6 dB of it
    (TR 38.901 path loss averaged over LOS and NLOS by the LOS probability, the world's
    clutter, the point's shadowing drawn from ``seed``, each cell's antenna as configured; SINR
    against the cells' loads and the interference from beyond)."""
    cells = ev.cells
    dx, dy = xs[None, :] - cells.x[:, None], ys[None, :] - cells.y[:, None]
    d2d = np.hypot(dx, dy)
    scenario = cells.scenario
    h_bs, fc = cells.height_m[:, None], cells.fc_ghz[:, None]
    p_los = radio.los_probability(scenario, d2d, 1.5)
    loss = p_los * radio.pathloss_db(scenario, d2d, fc, h_bs, 1.5, True) + (
        1.0 - p_los
    ) * radio.pathloss_db(scenario, d2d, fc, h_bs, 1.5, False)
    shadow = np.random.default_rng(seed).standard_normal(d2d.shape)
    loss = loss + world.clutter_db + radio.SHADOW_SIGMA_DB[scenario][1] * shadow
    bearing = np.degrees(np.arctan2(dx, dy)) % 360.0
    depression = np.degrees(np.arctan2(h_bs - 1.5, np.maximum(d2d, 1.0)))
    coupling = radio.Coupling(loss, bearing, depression, d2d, p_los > 0.5)
    rsrp = radio.rsrp_of(cells, coupling)
    finite = np.where(np.isfinite(rsrp), rsrp, -1e9)
    best = np.argmax(finite, axis=0)
    points = np.arange(xs.size)
    received = radio.received_mw(rsrp)
    activity = np.maximum(ev.traffic.load, radio.RS_ACTIVITY)[:, None]
    noise = 10.0 ** (radio.noise_dbm_per_re(cells.scs_khz[best], radio.UE_NOISE_FIGURE_DB) / 10.0)
    fade = _beyond_fade_db(scenario, xs.size, [seed, BEYOND_STREAM])
    beyond = world.site_share * received.sum(axis=0) * 10.0 ** (fade / 10.0)
    signal = received[best, points]
    interference = (activity * received).sum(axis=0) - activity[best, 0] * signal
    sinr = 10.0 * np.log10(np.maximum(signal, 1e-30) / (noise + beyond + interference))
    within = (finite >= finite[best, points][None, :] - 6.0).sum(axis=0)
    return best, finite[best, points], sinr, within


def coverage_bins(
    world: World, ev: Evaluation, centre: int, bin_m: float, size: int, seed: int
) -> Bins:
    """A ``size`` x ``size`` grid of ``bin_m`` bins centred half a service radius out along
    ``centre``'s azimuth, each bin the medians over a grid of points in it that lie inside the
    cluster (in a cell's sector, within :data:`FOOTPRINT_RADII` service radii): a bin past the
    cluster's edge (an indoor venue's walls, another cluster's streets) has no values rather
    than the far field of cells that do not serve it (see :func:`_points_radio`)."""
    cells = ev.cells
    radius = layout.SERVICE_RADIUS_M[world.area][world.role]
    reach = FOOTPRINT_RADII * radius
    azimuth = math.radians(float(cells.azimuth_deg[centre]))
    cx = float(cells.x[centre]) + 0.5 * radius * math.sin(azimuth)
    cy = float(cells.y[centre]) + 0.5 * radius * math.cos(azimuth)
    per_side = int(min(BIN_POINTS_MAX, max(2, math.ceil(2.0 * bin_m / reach))))
    within_bin = ((np.arange(per_side) + 0.5) / per_side - 0.5) * bin_m
    offsets = (np.arange(size) - (size - 1) / 2.0) * bin_m
    # Points row by row of bins, then of points inside a bin: x east, y north.
    column_x = (cx + offsets)[:, None] + within_bin[None, :]  # [bin column, point column]
    row_y = (cy - offsets)[:, None] - within_bin[None, :]  # [bin row, point row]
    xs = np.broadcast_to(column_x[None, None, :, :], (size, per_side, size, per_side)).ravel()
    ys = np.broadcast_to(row_y[:, :, None, None], (size, per_side, size, per_side)).ravel()
    rows = np.repeat(np.arange(size), per_side * size * per_side)
    columns = np.tile(np.repeat(np.arange(size), per_side), size * per_side)
    bin_of = rows * size + columns
    dx, dy = xs[None, :] - cells.x[:, None], ys[None, :] - cells.y[:, None]
    off_axis = radio.wrap_deg(np.degrees(np.arctan2(dx, dy)) - cells.azimuth_deg[:, None])
    in_sector = (np.hypot(dx, dy) <= reach) & (np.abs(off_axis) <= SECTOR_HALF_DEG)
    kept = in_sector.any(axis=0)
    best, rsrp, sinr, within = _points_radio(world, ev, xs[kept], ys[kept], seed)
    bin_of = bin_of[kept]
    count = size * size
    out_rsrp, out_sinr = np.full(count, np.nan), np.full(count, np.nan)
    out_best, out_within = np.full(count, -1), np.zeros(count, dtype=int)
    for b in np.unique(bin_of):
        mine = bin_of == b
        out_rsrp[b], out_sinr[b] = np.median(rsrp[mine]), np.median(sinr[mine])
        out_best[b] = int(np.bincount(best[mine], minlength=cells.count).argmax())
        out_within[b] = int(np.rint(np.median(within[mine])))
    return Bins(out_rsrp, out_best, out_sinr, out_within, out_best >= 0)
