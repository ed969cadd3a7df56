"""PM counters: what the OSS shows of each cell, link and slice, read off one run of the model.

Every cell reports the same counter set (:data:`CELL_COUNTERS`), computed from its served UEs
(:mod:`telcoenv.domains.network.model`) and the handover procedures along the UE tracks
(:mod:`telcoenv.domains.network.mobility`); a cell that is off air has no samples of the
counters that need served users. Values are raw, in the units of ``kpis.yaml``.

How each counter is defined (per cell, over its served UEs unless said):

* RF: median RSRP, RSRQ and data SINR.
* DL: user throughput (``DL_thr_Mbps``: TS 28.552 volume over active time), its median and
  95th percentile; UL
  mean user throughput.
* BLER: the PRB-weighted operating BLER of link adaptation.
* RLF: the share of connections ending in a radio link failure: mobile users from the tracks
  (RLFs per connection of :data:`CONNECTION_S`), static users from how often their SINR fades
  below Qout in an RLM period (a Gaussian residual of :data:`FADE_SIGMA_DB` around their mean)
  for longer than T310 (fades last :data:`FADE_MS` on average, exponentially);
  ``t310_expiry_rate`` the share of T310 starts that expired.
* Latency: the delay-critical traffic's user-plane latency (scheduling, its HQoS queue, HARQ,
  backhaul, core), the p95 scheduling delay of all traffic, jitter.
* HO: from the tracks, scaled to the cell's mobile users: attempts, successes (failed: a
  command the fading source lost, a target too weak to access, a PCI clash), too-late
  failures counted once more unless an attempt's lost command already counted them,
  ping-pongs (a return within 2 s) per successful handover.
* PRB: utilisation with the reserved PRBs counted as used, the neighbours' mean, the imbalance,
  Jain's fairness of PRB time and the share of PRB time the best-channel 10 % of users get
  beyond their 10 %.
* TA: UE distances in steps of :data:`TA_STEP_M` (NR at 30 kHz); the drift of the median from
  the cell's normal; the share of users served by this cell though another site is nearer.
* Beam: dominance (served with a margin of at least :data:`DOMINANCE_DB` over the next cell),
  the spread of the serving antenna gain over the users, beam failures (reference-signal SINR
  below :data:`BEAM_FAILURE_DB`) and their recoveries, beam switches and blockages of users on
  the move, NLOS users, PRACH failures.
* Availability: time on air, dropped connections (RLF and resets), failed setups.
* Coverage: the share of the UEs in the cell's own area (nearest to its site) with no cell at
  :data:`COVERAGE_DBM` or better.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from telcoenv.domains.network import layout, mobility
from telcoenv.domains.network.model import (
    MOBILE_SHARE,
    TA_STEP_M,
    Evaluation,
    Moves,
    World,
    area_best_rsrp_dbm,
    cell_service,
    median,
    quantiles,
    timing_advance_m,
)
from telcoenv.domains.network.radio import COVERAGE_DBM
from telcoenv.domains.network.transport import RESIDUAL_LOSS

CELL_COUNTERS: tuple[str, ...] = (
    "rsrp_dBm", "rsrq_dB", "sinr_dB",
    "DL_thr_Mbps", "throughput_p50_mbps", "p95_thr_mbps", "UL_thr_Mbps",
    "BLER",
    "RLF_rate", "t310_expiry_rate",
    "latency_ms", "sched_latency_p95_ms", "jitter_ms",
    "HO_success", "ho_fail_rate", "ping_pong_rate", "ho_attempts_per_5min",
    "ho_out_rate_per_5min", "ho_in_rate_per_5min",
    "PRB_util", "neighbor_avg_PRB_util", "imbalance_index", "prb_fairness_index",
    "prb_allocation_skew", "qci_high_prio_share", "qci_best_effort_share",
    "TA", "ta_p50", "ta_p95", "ta_std", "ta_drift_index", "distant_serving_ratio",
    "QoS", "sla_threshold", "sla_violation_ratio",
    "dominance_ratio", "ssb_rsrp_var_dB", "beam_fail_rate", "bfr_events_per_hr",
    "beam_switch_rate_per_min", "blockage_events_per_hr", "nlos_ratio", "rach_fail_rate",
    "availability", "user_drop_rate", "call_setup_fail",
    "users", "coverage_gap_ratio", "neighbor_pci_overlap",
)  # fmt: skip
#: Counters a cell off air has no samples of (nothing is served).
NEEDS_USERS = frozenset(CELL_COUNTERS) - {
    "PRB_util", "neighbor_avg_PRB_util", "imbalance_index", "users", "availability",
    "user_drop_rate", "call_setup_fail", "coverage_gap_ratio", "sla_threshold",
    "qci_high_prio_share", "qci_best_effort_share",
}  # fmt: skip
LINK_COUNTERS: tuple[str, ...] = (
    "bh_util", "bh_latency_ms", "bh_latency_p95_ms", "bh_packet_loss", "bh_loss_burst_rate",
    "bh_link_flaps_per_hr", "jitter_p95_ms", "queue_occupancy", "interface_errors",
)  # fmt: skip
SLICE_COUNTERS: tuple[str, ...] = (
    "admission_denial_rate", "slice_requests_per_min", "slice_utilization",
    "slice_throughput_p50", "slice_throughput_p95", "slice_violation_ratio", "QoS_class",
)  # fmt: skip

CONNECTION_S = 10.0
FADE_MS, FADE_SIGMA_DB = 300.0, 1.5
#: Radio link monitoring's evaluation period (TS 38.133 §8.1: out-of-sync every 200 ms).
RLM_PERIOD_MS = 200.0
#: The lowest mean SINR a UE holds a connection at (below Qout it cannot: access fails), dB.
CONNECT_DB = mobility.Q_OUT_DB
DOMINANCE_DB = 3.0
BEAM_FAILURE_DB = -6.0
PRACH_MIN_DB = -7.0
#: A handover's return to the source within this long is a ping-pong (mobility.py's window).
SESSION_SETUPS_PER_USER_HR = 6.0


def _share(mask: np.ndarray) -> float:
    return float(mask.mean()) if mask.size else 0.0


def _gain_db(world: World, ev: Evaluation, cell: int, mine: np.ndarray) -> np.ndarray:
    """The serving antenna's gain toward each of the cell's UEs (RSRP less EPRE, plus loss)."""
    cells = ev.cells
    epre = cells.tx_power_dbm[cell] - 10.0 * math.log10(12.0 * cells.n_prb[cell])
    return ev.radio.rsrp_dbm[cell, mine] - epre + world.coupling.loss_db[cell, mine]


def _static_rlf(sinr_db: np.ndarray, t310_ms: float) -> tuple[np.ndarray, np.ndarray]:
    """Per static UE: the chance a connection ends in an RLF and the T310 starts in it."""
    periods = CONNECTION_S * 1000.0 / RLM_PERIOD_MS
    below = 0.5 * (1.0 + _erf((mobility.Q_OUT_DB - sinr_db) / (FADE_SIGMA_DB * math.sqrt(2.0))))
    starts = periods * below
    expiry = math.exp(-t310_ms / FADE_MS)
    return 1.0 - np.exp(-starts * expiry), starts


def _erf(x: np.ndarray) -> np.ndarray:
    # Abramowitz-Stegun 7.1.26 (|error| < 1.5e-7): numpy has no erf and scipy is no dependency.
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = np.zeros_like(t)
    for coefficient in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly = (poly + coefficient) * t
    return sign * (1.0 - poly * np.exp(-a * a))


def cell_counters(
    world: World,
    ev: Evaluation,
    moves: Moves | None,
    cell: int,
    config: dict[str, Any],
) -> dict[str, float]:
    """One cell's PM counters (``config``: the cell's configuration now); without ``moves``
    the handover counters are left out."""
    r, t = ev.radio, ev.traffic
    mine = r.serving == cell
    n_cells = ev.cells.count
    users = float(world.weight[mine].sum())
    reservation = float(config["prb_reservation_pct"]) / 100.0
    prb = reservation + (1.0 - reservation) * float(t.load[cell])
    others = np.delete(t.load, cell) if n_cells > 1 else t.load
    other_prb = float(others.mean())
    state = world.operational[cell]
    down = world.outage.down_share if cell == 0 and state != "ENABLED" else 0.0
    if state == "DOWN":
        down = max(down, 0.97)
    up = 1.0 - down
    values: dict[str, float] = {
        "PRB_util": prb * up,
        "neighbor_avg_PRB_util": other_prb,
        "imbalance_index": max(0.0, prb * up - other_prb),
        "users": users * up,
        "availability": 100.0 * up if down else 99.95,
        "sla_threshold": world.sla_threshold,
        "qci_high_prio_share": float(world.qci_high_pct[cell]),
        "qci_best_effort_share": float(world.qci_best_effort_pct[cell]),
        "coverage_gap_ratio": _coverage_gap(world, ev, cell),
    }
    resets = world.outage.resets_per_hr if cell == 0 else 0.0
    if not mine.any():
        values["user_drop_rate"] = 100.0 if state == "DOWN" else 0.0
        values["call_setup_fail"] = 100.0 * (down + (1 - down) * 0.0) if down else 0.0
        return values

    sinr, rs_sinr = r.sinr_db[mine], r.rs_sinr_db[mine]
    service = cell_service(ev, cell, up)
    p50, p95 = quantiles(service.user_mbps, (0.5, 0.95))
    distance = world.coupling.distance_m[cell, mine]
    ta = timing_advance_m(distance)
    ta50, ta95 = quantiles(ta, (0.5, 0.95))
    reference = float(world.ta_reference_m[cell]) or ta50
    gain = _gain_db(world, ev, cell, mine)
    mobile = MOBILE_SHARE[world.area]

    # Radio link failures: static users fade below Qout; mobile ones from the tracks.
    # A UE far below Qout never holds a connection (its access fails: call_setup_fail).
    t310 = float(config["t310_ms"])
    connected = sinr >= CONNECT_DB
    static_rlf, static_starts = _static_rlf(sinr[connected], t310)
    rlf = (1 - mobile) * float(static_rlf.mean()) if connected.any() else 0.0
    starts = (1 - mobile) * float(static_starts.mean()) if connected.any() else 0.0
    expiries = rlf
    if moves is not None and moves.started[cell]:
        # A connection of a user on the move crosses borders at the area's rate; each crossing
        # fails as often as the tracks' crossings out of this cell did.
        radius = layout.SERVICE_RADIUS_M[world.area][world.role]
        per_connection = (
            mobility.crossings_per_s(world.mean_speed_mps, radius) * CONNECTION_S
        ) / float(moves.started[cell])
        counts = moves.counts
        rlf += mobile * min(1.0, float(counts.rlf[cell]) * per_connection)
        starts += mobile * float(counts.t310_started[cell]) * per_connection
        expiries += mobile * float(counts.rlf[cell]) * per_connection
    drop = min(1.0, rlf + (resets * CONNECTION_S / 3600.0 if resets else 0.0))
    backhaul_jitter = ev.backhaul.jitter_p95_ms if cell == 0 else 0.2
    share = ev.time_share[mine]
    best = np.argsort(-t.ue_peak_mbps[mine], kind="stable")[: max(1, round(0.1 * mine.sum()))]
    los = world.coupling.los[cell, mine]
    rach = _share(rs_sinr < PRACH_MIN_DB)
    beam_failures = _share(rs_sinr < BEAM_FAILURE_DB)
    median_m = max(median(distance), 10.0)
    values.update(
        {
            "rsrp_dBm": median(r.serving_rsrp_dbm[mine]),
            "rsrq_dB": median(r.rsrq_db[mine]),
            "sinr_dB": median(sinr),
            # TS 28.552 DL IP throughput, volume over active time: equal volumes per user
            # make it the harmonic mean of the users' throughputs.
            "DL_thr_Mbps": service.dl_mbps,
            "throughput_p50_mbps": p50,
            "p95_thr_mbps": p95,
            "UL_thr_Mbps": float(ev.ul_mbps[mine].mean()) * up,
            "BLER": float(t.bler[cell]),
            "RLF_rate": rlf,
            "t310_expiry_rate": 100.0 * expiries / starts if starts > 1e-9 else 0.0,
            "latency_ms": service.latency_ms,
            "sched_latency_p95_ms": float(t.sched_delay_ms[cell]),
            "jitter_ms": 0.5 * float(t.sched_delay_ms[cell]) / 3.0 + backhaul_jitter,
            "prb_fairness_index": _jain(share),
            "prb_allocation_skew": max(0.0, 100.0 * (float(share[best].sum()) - 0.1)),
            "TA": float(ta.mean()),
            "ta_p50": ta50,
            "ta_p95": ta95,
            "ta_std": float(ta.std()),
            "ta_drift_index": abs(ta50 - reference) / max(reference, TA_STEP_M),
            "distant_serving_ratio": 100.0 * _share(world.home[mine] != cell),
            "QoS": service.qos,
            "sla_violation_ratio": 100.0 * (1.0 - service.qos),
            "dominance_ratio": _share(r.best_margin_db[mine] >= DOMINANCE_DB),
            "ssb_rsrp_var_dB": float(gain.std()),
            "beam_fail_rate": 100.0 * beam_failures,
            "bfr_events_per_hr": beam_failures * users * 12.0,
            # Each SSB beam is ~15 degrees wide: a user crosses one every 0.26 x distance.
            "beam_switch_rate_per_min": 60.0 * world.mean_speed_mps / (0.26 * median_m),
            "blockage_events_per_hr": _blockages(world, los),
            "nlos_ratio": 100.0 * (1.0 - _share(los)),
            "rach_fail_rate": 100.0 * rach,
            "user_drop_rate": 100.0 * (drop * up + down),
            "call_setup_fail": 100.0
            * (down + up * min(1.0, max(rach, _share(~connected)) + 0.002)),
            "neighbor_pci_overlap": _pci_overlap(ev, cell, mine),
        }
    )
    if moves is not None:
        values.update(_handover_counters(world, ev, moves, cell))
    return values


def _jain(share: np.ndarray) -> float:
    square = float((share**2).sum())
    return min(1.0, float(share.sum()) ** 2 / (share.size * square)) if square > 0 else 1.0


def _blockages(world: World, los: np.ndarray) -> float:
    """LOS-to-NLOS changes per hour of the cell's users on the move: a moving user meets a new
    shadowing state every decorrelation distance, blocked with probability p (1 - p)."""
    p = _share(los)
    decorrelation = mobility.DECORRELATION_M[world.cells.scenario]
    per_user = world.mean_speed_mps / decorrelation * p * (1.0 - p) * 3600.0
    return per_user * MOBILE_SHARE[world.area]


def _pci_overlap(ev: Evaluation, cell: int, mine: np.ndarray) -> float:
    """Share of the cell's users that hear another cell within 6 dB whose PCI shares the
    reference-signal shift (PCI mod 3) or the PCI itself."""
    pci = ev.cells.pci
    clash = (pci % 3 == pci[cell] % 3) & (np.arange(ev.cells.count) != cell)
    if not clash.any():
        return 0.0
    rsrp = ev.radio.rsrp_dbm[:, mine]
    heard = rsrp[clash] >= (rsrp[cell] - 6.0)[None, :]
    return 100.0 * _share(heard.any(axis=0))


def _coverage_gap(world: World, ev: Evaluation, cell: int) -> float:
    if not (world.home == cell).any():
        return 0.0
    return 100.0 * _share(area_best_rsrp_dbm(world, ev.radio.rsrp_dbm, cell) < COVERAGE_DBM)


def crossings_per_5min(world: World, ev: Evaluation) -> np.ndarray:
    """Border crossings out of each cell per 5 minutes: its users on the move times how often
    a user at the area's mean speed leaves a sector of the cell's radius."""
    radius = layout.SERVICE_RADIUS_M[world.area][world.role]
    per_user = mobility.crossings_per_s(world.mean_speed_mps, radius) * 300.0
    return ev.traffic.users * MOBILE_SHARE[world.area] * per_user


def _handover_counters(world: World, ev: Evaluation, moves: Moves, cell: int) -> dict[str, float]:
    """Handover counters of a cell: what happened per border crossing on the tracks (each
    track crosses one), scaled by the cell's crossings (:func:`crossings_per_5min`)."""
    counts = moves.counts
    crossings = crossings_per_5min(world, ev)
    started = np.maximum(moves.started, 1.0)
    attempts, successes = float(counts.attempts[cell]), float(counts.successes[cell])
    # A too-late failure after a lost command is the failure that attempt already counts.
    late = float(counts.too_late[cell] - counts.late_after_loss[cell])
    tried = attempts + late
    per_crossing = attempts / float(started[cell]) if moves.started[cell] else 1.0
    incoming = float((counts.relation_successes[:, cell] / started * crossings).sum())
    return {
        "HO_success": successes / attempts if attempts else 1.0,
        "ho_fail_rate": 100.0 * (attempts - successes + late) / tried if tried else 0.0,
        "ping_pong_rate": 100.0 * float(counts.pingpong[cell]) / successes if successes else 0.0,
        "ho_attempts_per_5min": float(crossings[cell]) * per_crossing,
        "ho_out_rate_per_5min": float(crossings[cell])
        * per_crossing
        * (successes / attempts if attempts else 1.0),
        "ho_in_rate_per_5min": incoming,
    }


def link_counters(ev: Evaluation) -> dict[str, float]:
    """The serving site's backhaul link."""
    b = ev.backhaul
    return {
        "bh_util": 100.0 * min(b.utilisation, 1.0),
        "bh_latency_ms": b.delay_ms,
        "bh_latency_p95_ms": b.delay_p95_ms,
        "bh_packet_loss": 100.0 * b.loss,
        "bh_loss_burst_rate": 100.0 * max(0.0, b.loss - RESIDUAL_LOSS),
        "bh_link_flaps_per_hr": b.flaps_per_hr,
        "jitter_p95_ms": b.jitter_p95_ms,
        "queue_occupancy": 100.0 * b.queue_occupancy,
        "interface_errors": b.interface_errors_per_hr,
    }


def slice_counters(ev: Evaluation, index: int) -> dict[str, float]:
    s = ev.slices[index]
    return {
        "admission_denial_rate": s.admission_denial_pct,
        "slice_requests_per_min": s.requests_per_min,
        # What the slice's users ask of its share (its carried utilisation stays under the
        # admission threshold by construction).
        "slice_utilization": min(100.0, 100.0 * s.offered_load),
        "slice_throughput_p50": s.throughput_p50_mbps,
        "slice_throughput_p95": s.throughput_p95_mbps,
        "slice_violation_ratio": s.violation_pct,
        "QoS_class": s.qos_share,
    }
