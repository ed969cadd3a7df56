"""The mobility model: UEs driven across cell borders, event A3 handovers, failures and RLF.

A cluster's moving UEs are a set of *tracks*: straight walks or drives that start inside the
serving cell's footprint and head toward a neighbour (:func:`tracks`). Along each track the
radio model gives every cell's RSRP and the serving cell's SINR every :data:`STEP_MS`
(:func:`track_geometry` once per episode: TR 38.901 path loss at each point, shadow fading
correlated along the track over the scenario's decorrelation distance, and the residual of
fast fading after layer-3 filtering; :func:`track_radio` per configuration: antenna gains and
powers). :func:`handovers` then plays the
connected-mode procedures on those measurements, for a configuration:

* **Event A3** (TS 38.331 §5.5.4.4): neighbour n enters when ``Mn + Ocn - Hys > Ms + Ocs + Off``
  (M in dBm; Oc a cell's individual offset, the OSS's ``cio_db``, which biases that cell in
  every comparison; Hys and Off the serving cell's ``hysteresis_db`` and ``a3_offset_db``) and
  must stay entered for the serving cell's time-to-trigger ``ttt_ms``; the UE is then handed
  to the best such neighbour after :data:`EXECUTION_MS`.
* **Radio link failure** (TS 38.331 §5.3.10, TS 38.133): the serving cell's SINR below Qout
  (-8 dB) starts T310 (``t310_ms``; N310 = 1 at this step); back above Qin (-6 dB) stops it;
  expiry is a radio link failure and the UE re-establishes on the strongest cell.
* **Failure kinds** (TS 38.300 §15.5.2, mobility robustness): *too late*, an RLF in the source
  before a handover; *too early*, an RLF within :data:`EARLY_WINDOW_MS` of a handover, back
  in the source; *wrong cell*, such an RLF re-established in a third cell; a handover into a
  cell whose PCI another audible cell shares fails half the time (the report cannot tell which
  cell is meant). *Ping-pong*: a handover back to the previous cell within
  :data:`PINGPONG_WINDOW_MS` of the first.

What the engineer's counters show per cell (attempts, success rate, ping-pong share, failure
kinds, RLF and T310 expiries) and per relation (attempts and success toward each neighbour)
come from :class:`Mobility`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from telcoenv.domains.network.radio import (
    SHADOW_SIGMA_DB,
    Cells,
    antenna_gain_db,
    los_probability,
    noise_dbm_per_re,
    pathloss_db,
    wrap_deg,
)

STEP_MS = 100.0
EXECUTION_MS = 100.0
#: Qout and Qin of radio link monitoring, SINR dB (the 10 % and 2 % PDCCH BLER points).
Q_OUT_DB, Q_IN_DB = -8.0, -6.0
EARLY_WINDOW_MS = 1000.0
PINGPONG_WINDOW_MS = 2000.0
#: Decorrelation distance of shadow fading (TR 38.901 Table 7.5-6, NLOS), m.
DECORRELATION_M = {"UMa": 50.0, "UMi": 13.0, "RMa": 120.0, "InH": 6.0}
#: The residual of fast fading after L3 filtering: standard deviation (dB) and correlation time.
RESIDUAL_DB, RESIDUAL_MS = 2.0, 400.0


@dataclass(frozen=True)
class Tracks:
    """Positions along each track, [tracks, steps], metres; a track's speed in m/s."""

    x: np.ndarray
    y: np.ndarray
    speed: np.ndarray
    height_m: float = 1.5


def tracks(
    cells: Cells,
    radius_m: float,
    speeds_mps: np.ndarray,
    rng: np.random.Generator,
    steps: int = 80,
) -> Tracks:
    """One track per speed: from a point at 30-80 % of the serving radius in its sector, heading
    for a random neighbour's site (±25°), walked or driven for ``steps`` x :data:`STEP_MS`."""
    n = len(speeds_mps)
    start_r = radius_m * rng.uniform(0.3, 0.8, n)
    start_b = np.radians(cells.azimuth_deg[0] + rng.uniform(-50.0, 50.0, n))
    x0 = cells.x[0] + start_r * np.sin(start_b)
    y0 = cells.y[0] + start_r * np.cos(start_b)
    target = rng.integers(1, cells.count, n) if cells.count > 1 else np.zeros(n, dtype=int)
    heading = np.arctan2(cells.x[target] - x0, cells.y[target] - y0)
    heading = heading + np.radians(rng.uniform(-25.0, 25.0, n))
    t = np.arange(steps) * STEP_MS / 1000.0
    travelled = speeds_mps[:, None] * t[None, :]
    return Tracks(
        x=x0[:, None] + travelled * np.sin(heading)[:, None],
        y=y0[:, None] + travelled * np.cos(heading)[:, None],
        speed=np.asarray(speeds_mps, dtype=float),
    )


@dataclass(frozen=True)
class TrackGeometry:
    """The geometry-only part of every cell's link along every track [cells, tracks, steps]:
    path loss with shadowing and fading residual (dB), bearing and depression (deg)."""

    loss_db: np.ndarray
    bearing_deg: np.ndarray
    depression_deg: np.ndarray


@dataclass(frozen=True)
class TrackRadio:
    """RSRP of every cell [cells, tracks, steps] (dBm per RE), and the noise per RE (dBm)."""

    rsrp_dbm: np.ndarray
    noise_dbm: float


#: Path loss and angles are smooth along a track: computed every this many steps, interpolated.
COARSE = 4


def track_geometry(cells: Cells, walk: Tracks, rng: np.random.Generator) -> TrackGeometry:
    """What does not depend on the configuration along the tracks (once per episode): the
    expected path loss over LOS and NLOS, shadowing correlated over the scenario's
    decorrelation distance, the slow residual of fast fading, and the angles."""
    steps = walk.x.shape[1]
    coarse = np.arange(0, steps + COARSE - 1, COARSE)
    coarse = np.minimum(coarse, steps - 1)
    dx = walk.x[None][:, :, coarse] - cells.x[:, None, None]
    dy = walk.y[None][:, :, coarse] - cells.y[:, None, None]
    d2d = np.hypot(dx, dy)
    scenario = cells.scenario
    h_bs = cells.height_m[:, None, None]
    fc = cells.fc_ghz[:, None, None]
    p_los = los_probability(scenario, d2d, walk.height_m)
    loss = p_los * pathloss_db(scenario, d2d, fc, h_bs, walk.height_m, True) + (
        1 - p_los
    ) * pathloss_db(scenario, d2d, fc, h_bs, walk.height_m, False)
    bearing = np.degrees(np.arctan2(dx, dy))
    depression = np.degrees(np.arctan2(h_bs - walk.height_m, np.maximum(d2d, 1.0)))
    # Shadowing: Gaussian knots every decorrelation distance along each track, linearly
    # interpolated (one draw per knot, per cell and track); the residual of fast fading after
    # L3 filtering likewise, with knots every correlation time.
    walked = walk.speed[:, None] * np.arange(steps)[None, :] * STEP_MS / 1000.0
    shadow = SHADOW_SIGMA_DB[scenario][1] * _knotted(
        walked / DECORRELATION_M[scenario], cells.count, rng
    )
    clock = np.broadcast_to(np.arange(steps) * STEP_MS / RESIDUAL_MS, walked.shape)
    fading = RESIDUAL_DB * _knotted(clock, cells.count, rng)
    fine = np.arange(steps) / COARSE
    return TrackGeometry(
        loss_db=_along(loss, fine) + shadow + fading,
        bearing_deg=_along(np.unwrap(bearing, period=360.0, axis=-1), fine),
        depression_deg=_along(depression, fine),
    )


def _along(coarse: np.ndarray, position: np.ndarray) -> np.ndarray:
    """Values at fractional ``position`` along the last axis of ``coarse`` (linear)."""
    low = np.minimum(np.floor(position).astype(int), coarse.shape[-1] - 2)
    frac = position - low
    return coarse[..., low] * (1.0 - frac) + coarse[..., low + 1] * frac


def track_radio(cells: Cells, geometry: TrackGeometry) -> TrackRadio:
    """Every cell's RSRP along every track for the cells' configuration (tilt, azimuth, beam
    offset, power, on air or not)."""
    boresight = (cells.azimuth_deg + cells.beam_offset_deg)[:, None, None]
    gain = antenna_gain_db(
        wrap_deg(geometry.bearing_deg - boresight),
        geometry.depression_deg,
        (cells.tilt_deg + cells.mech_tilt_deg)[:, None, None],
        cells.v_beamwidth_deg[:, None, None],
        cells.max_gain_dbi[:, None, None],
    )
    epre = (cells.tx_power_dbm - 10.0 * np.log10(12.0 * cells.n_prb))[:, None, None]
    rsrp = epre + gain - geometry.loss_db
    rsrp = np.where(cells.active[:, None, None], rsrp, -np.inf)
    return TrackRadio(rsrp, float(noise_dbm_per_re(cells.scs_khz[0], 9.0)))


def _knotted(position: np.ndarray, n_cells: int, rng: np.random.Generator) -> np.ndarray:
    """[cells, tracks, steps] unit-variance values interpolated between standard normal knots
    at integer ``position`` (per track), so that values ``1`` apart are about independent."""
    n_tracks = position.shape[0]
    knots = int(np.ceil(position.max())) + 2
    values = rng.standard_normal((n_cells, n_tracks, knots))
    low = np.floor(position).astype(int)
    frac = position - low
    rows = np.arange(n_tracks)[:, None]
    a = values[:, rows, low]
    b = values[:, rows, low + 1]
    # Linear interpolation loses variance between knots: rescale to unit variance.
    return (a * (1 - frac) + b * frac) / np.sqrt((1 - frac) ** 2 + frac**2)


@dataclass(frozen=True)
class Mobility:
    """What the procedures counted over the tracks (per cell: source-cell counts)."""

    attempts: np.ndarray  # [cells] handovers attempted out of each cell
    successes: np.ndarray
    too_early: np.ndarray
    too_late: np.ndarray
    wrong_cell: np.ndarray
    pingpong: np.ndarray
    rlf: np.ndarray  # radio link failures while served by each cell
    t310_started: np.ndarray
    relation_attempts: np.ndarray  # [cells, cells]: source -> target
    relation_successes: np.ndarray
    served_steps: np.ndarray  # [cells]: track steps served by each cell (exposure)


def handovers(
    radio: TrackRadio,
    load: np.ndarray,
    pci: np.ndarray,
    a3_offset_db: np.ndarray,
    hysteresis_db: np.ndarray,
    ttt_ms: np.ndarray,
    cio_db: np.ndarray,
    t310_ms: np.ndarray,
) -> Mobility:
    """Play A3 handovers and radio link monitoring along every track (configuration per cell;
    a cell's offsets and timers are those its UEs are configured with while it serves them)."""
    rsrp = radio.rsrp_dbm
    n_cells, n_tracks, steps = rsrp.shape
    lin = np.where(np.isfinite(rsrp), 10.0 ** (rsrp / 10.0), 0.0)
    activity = np.maximum(load, 0.05)[:, None, None]
    noise = 10.0 ** (radio.noise_dbm / 10.0)
    total = (activity * lin).sum(axis=0)  # [tracks, steps]
    # Each cell's SINR as the serving one, everywhere (the others' load-weighted power).
    sinr_all = 10.0 * np.log10(np.maximum(lin, 1e-30) / (noise + total[None] - activity * lin))
    below, above = sinr_all < Q_OUT_DB, sinr_all > Q_IN_DB
    ranked = rsrp + cio_db[:, None, None]
    best_at = np.argmax(np.where(np.isfinite(rsrp), rsrp, -1e9), axis=0)  # [tracks, steps]
    offsets = a3_offset_db + hysteresis_db
    need_ms = np.maximum(ttt_ms, STEP_MS) + EXECUTION_MS
    confusable = ((pci[:, None] == pci[None, :]) & ~np.eye(n_cells, dtype=bool)).any(axis=1)
    idx = np.arange(n_tracks)
    serving = np.argmax(ranked[:, :, 0], axis=0)
    previous = np.full(n_tracks, -1)
    last_ho_ms = np.full(n_tracks, -1e9)
    entered_ms = np.zeros((n_cells, n_tracks))  # how long each neighbour has met A3
    t310_left = np.full(n_tracks, np.inf)
    history = np.empty((n_tracks, steps), dtype=int)
    t310_starts: list[np.ndarray] = []  # serving cells where T310 started, step by step
    events: dict[str, list[np.ndarray]] = {
        k: [] for k in ("rlf", "early", "late", "wrong", "att_src", "att_dst", "ok_src",
                        "ok_dst", "pp")
    }  # fmt: skip
    for k in range(steps):
        now = k * STEP_MS
        history[:, k] = serving
        # Radio link monitoring: T310 runs below Qout, stops above Qin, expiry is an RLF.
        running = np.isfinite(t310_left)
        start = below[serving, idx, k] & ~running
        if start.any():
            t310_starts.append(serving[start])
            t310_left = np.where(start, t310_ms[serving], t310_left)
        t310_left = np.where(above[serving, idx, k], np.inf, t310_left - STEP_MS)
        failed = t310_left <= 0
        if failed.any():
            recent = (now - last_ho_ms) < EARLY_WINDOW_MS
            best = best_at[:, k]
            events["rlf"].append(serving[failed])
            # A failure shortly after a handover is the source cell's handover gone wrong.
            events["early"].append(previous[failed & recent & (best == previous)])
            events["wrong"].append(
                previous[failed & recent & (best != previous) & (best != serving)]
            )
            events["late"].append(serving[failed & ~recent])
            previous = np.where(failed, serving, previous)
            serving = np.where(failed, best, serving)
            t310_left = np.where(failed, np.inf, t310_left)
            entered_ms[:, failed] = 0.0
            last_ho_ms = np.where(failed, now, last_ho_ms)
        # Event A3 with the serving cell's offsets, each cell's CIO.
        column = ranked[:, :, k]
        meets = column > (column[serving, idx] + offsets[serving])[None, :]
        meets[serving, idx] = False
        entered_ms = np.where(meets, entered_ms + STEP_MS, 0.0)
        ready = entered_ms >= need_ms[serving][None, :]
        go = ready.any(axis=0)
        if not go.any():
            continue
        moving = np.flatnonzero(go)
        target = np.argmax(np.where(ready[:, moving], column[:, moving], -np.inf), axis=0)
        src = serving[moving]
        events["att_src"].append(src)
        events["att_dst"].append(target)
        # The target must be decodable; a PCI another audible cell shares is a coin toss.
        clash = confusable[target] & ((k + moving) % 2 == 0)
        success = (sinr_all[target, moving, k] > Q_OUT_DB) & ~clash
        events["ok_src"].append(src[success])
        events["ok_dst"].append(target[success])
        quick = now - last_ho_ms[moving] < PINGPONG_WINDOW_MS
        events["pp"].append(target[success & (target == previous[moving]) & quick])
        # A target still too weak is a handover triggered too early; a PCI clash sends the
        # UE toward the wrong cell. Either way it stays on the source, which is fading.
        events["early"].append(src[~success & ~clash])
        events["wrong"].append(src[clash])
        moved = moving[success]
        previous[moved] = serving[moved]
        serving[moved] = target[success]
        last_ho_ms[moved] = now
        entered_ms[:, moving] = 0.0
        t310_left[moved] = np.inf

    def count(name: str) -> np.ndarray:
        found = np.concatenate(events[name]) if events[name] else np.zeros(0, dtype=int)
        return np.bincount(found, minlength=n_cells).astype(float)

    def pairs(src: str, dst: str) -> np.ndarray:
        out = np.zeros((n_cells, n_cells))
        if events[src]:
            np.add.at(out, (np.concatenate(events[src]), np.concatenate(events[dst])), 1.0)
        return out

    starts = np.concatenate(t310_starts) if t310_starts else np.zeros(0, dtype=int)
    return Mobility(
        attempts=count("att_src"),
        successes=count("ok_src"),
        too_early=count("early"),
        too_late=count("late"),
        wrong_cell=count("wrong"),
        pingpong=count("pp"),
        rlf=count("rlf"),
        t310_started=np.bincount(starts, minlength=n_cells).astype(float),
        relation_attempts=pairs("att_src", "att_dst"),
        relation_successes=pairs("ok_src", "ok_dst"),
        served_steps=np.bincount(history.ravel(), minlength=n_cells).astype(float),
    )
