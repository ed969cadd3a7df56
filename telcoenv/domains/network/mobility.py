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
  every comparison, and Ocn also the serving cell's relation to n's own offset, its
  ``neighbour_cio_db``, which only the serving cell's UEs apply; Hys and Off the serving cell's
  ``hysteresis_db`` and ``a3_offset_db``) and
  must stay entered for the serving cell's time-to-trigger ``ttt_ms``; the UE is then handed
  to the best such neighbour after :data:`EXECUTION_MS`. The source must still reach the UE
  with the handover command then: below :data:`Q_COMMAND_DB` the command is lost (the
  attempt fails, the UE stays, T310 runs on). A link that fails once the time-to-trigger is
  met (the report sent, the command not yet delivered) fails that attempt too. Either is the
  handover failure of a handover triggered too late, which the UE's radio link failure then
  reports as *too late* once more (counted apart, so the failure rate counts it once).
* **Radio link failure** (TS 38.331 §5.3.10, TS 38.133): the serving cell's SINR below Qout
  (-8 dB) starts T310 (``t310_ms``; N310 = 1 at this step); back above Qin (-6 dB) stops it;
  expiry is a radio link failure and the UE re-establishes on the strongest cell.
* **Failure kinds** (TS 38.300 §15.5.2, mobility robustness): *too late*, an RLF in the source
  long after the last handover, re-established in another cell (one re-established where it
  failed is a plain RLF); *too early*, an RLF within :data:`EARLY_WINDOW_MS` of a handover,
  back in the source; *wrong cell*, such an RLF re-established in a third cell. A
  re-establishment is no handover: no later failure or return is blamed on it. A handover into a
  cell whose PCI another audible cell shares fails half the time (the report cannot tell which
  cell is meant). *Ping-pong*: a handover back to the previous cell within
  :data:`PINGPONG_WINDOW_MS` of the first.

What the engineer's counters show per cell (attempts, success rate, ping-pong share, failure
kinds, RLF and T310 expiries) and per relation (attempts and success toward each neighbour)
come from :class:`Mobility`.

:func:`handovers` runs several times per RL episode, so it is written for speed, with results
equal field for field to the plain step-by-step implementation the tests keep as an oracle: all
tracks advance together with a handful of numpy operations per step on contiguous rows; Qout
and Qin are decided on a cheaper SINR that is exact away from the thresholds (the exact one
decides near them); the rarer events (T310 starts and expiries, handovers) are played only for
the tracks concerned.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, fields, replace

import numpy as np

from telcoenv.domains.network import layout
from telcoenv.domains.network.radio import (
    SHADOW_SIGMA_DB,
    Cells,
    antenna_gain_db,
    los_probability,
    noise_dbm_per_re,
    pathloss_db,
    received_mw,
    wrap_deg,
)

STEP_MS = 100.0
EXECUTION_MS = 100.0
#: Qout and Qin of radio link monitoring, SINR dB (the 10 % and 2 % PDCCH BLER points).
Q_OUT_DB, Q_IN_DB = -8.0, -6.0


def _command_threshold_db(tries: int = 4, aggregation_gain_db: float = 3.0) -> float:
    """The SINR below which a handover command is lost more often than delivered. Each of its
    ``tries`` (HARQ's maxHARQ-Tx 4 within the execution time) needs its PDCCH: Qout and Qin
    are the 10 % and 2 % BLER of the hypothetical PDCCH of radio link monitoring at
    aggregation level 8 (TS 38.133 §8.1); a gNB sends a UE at the cell edge its RRC messages at
    level 16, twice the energy (``aggregation_gain_db``). The BLER is taken as logistic in dB
    through those two points, shifted by that gain; lost when BLER ** tries > 1/2."""

    def logit(p: float) -> float:
        return math.log(p / (1.0 - p))

    per_db = (logit(0.10) - logit(0.02)) / (Q_IN_DB - Q_OUT_DB)  # BLER's logit falls per dB
    bler = 0.5 ** (1.0 / tries)
    return Q_OUT_DB - aggregation_gain_db - (logit(bler) - logit(0.10)) / per_db


#: The source's SINR below which its handover command does not reach the UE: about -15.6 dB.
Q_COMMAND_DB = _command_threshold_db()
EARLY_WINDOW_MS = 1000.0
PINGPONG_WINDOW_MS = 2000.0
#: The time of the last handover of a UE that has made none (since its last re-establishment).
NEVER_MS = -1e9
#: Decorrelation distance of shadow fading (TR 38.901 Table 7.5-6, NLOS), m.
DECORRELATION_M = {"UMa": 50.0, "UMi": 13.0, "RMa": 120.0, "InH": 6.0}
#: The residual of fast fading after L3 filtering: standard deviation (dB) and correlation time.
RESIDUAL_DB, RESIDUAL_MS = 2.0, 400.0


@dataclass(frozen=True)
class Tracks:
    """Positions along each track [tracks, steps] (metres), a track's speed (m/s), and the
    shadowing field of its line: unit normal knots [cells, tracks, knots] every decorrelation
    distance of the line's coordinate ``along_m``, knot 0 at ``knot0_m`` (per track)."""

    x: np.ndarray
    y: np.ndarray
    speed: np.ndarray
    along_m: np.ndarray
    shadow_knots: np.ndarray
    knot0_m: np.ndarray
    decorrelation_m: float
    height_m: float = 1.5

    def shadowing(self) -> np.ndarray:
        """Unit-variance shadowing [cells, tracks, steps] at the tracks' positions."""
        return _knotted((self.along_m - self.knot0_m[:, None]) / self.decorrelation_m,
                        self.shadow_knots)  # fmt: skip


#: Points along a line at which the border is looked for.
PROBE_POINTS = 48


def tracks(
    cells: Cells,
    radius_m: float,
    speeds_mps: np.ndarray,
    rng: np.random.Generator,
    steps: int = 80,
    starts: tuple[np.ndarray, np.ndarray] | None = None,
) -> Tracks:
    """One track per speed, each crossing the border of the serving cell (index 0) halfway
    through its ``steps`` x :data:`STEP_MS`: two in three outward, one in three inward.

    A user on the move starts where the serving cell's users are (``starts``: x and y of
    candidate positions; by default spread over its sector) and heads anywhere; along that
    line, out to twice ``radius_m``, the border is where the serving cell stops being the
    strongest in the cells' configuration, shadowing included (the line's own shadowing
    field, which :func:`track_geometry` then uses along the track). So the tracks sample the
    crossings users make (toward each neighbour as often as its border with the serving cell
    is long), not a line drawn between sites; the counters scale what happens per crossing by
    how often users cross (:func:`crossings_per_s`).

    A line whose first border is with one of the serving site's other sectors, or that meets
    no border, heads for a cell the model does not have (it would take the user over): it is
    drawn again (start and heading, up to :data:`REDRAWS` times), so that a user is not walked
    behind the panel or out of the cluster's coverage with nowhere to go. Crossings into
    cells the model does not have are taken to go as those into its neighbours do."""
    n = len(speeds_mps)
    speed = np.asarray(speeds_mps, dtype=float)
    sx, sy, heading = _track_starts(cells, radius_m, n, rng, starts)
    reach = 2.0 * radius_m
    half = speed * steps * STEP_MS / 2000.0
    decorrelation = DECORRELATION_M[cells.scenario]
    knot0 = -(half + decorrelation)
    count = int(np.ceil((reach + 2.0 * (half.max() + decorrelation)) / decorrelation)) + 2
    knots = rng.standard_normal((cells.count, n, count))

    def line(
        along: np.ndarray,
        rows: np.ndarray | slice = slice(None),
        start: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    ) -> Tracks:
        """The tracks ``rows`` (all by default) at ``along`` on their lines (or on lines from
        ``start``: x, y and heading per row)."""
        x0, y0, bearing = start or (sx[rows], sy[rows], heading[rows])
        sin, cos = np.sin(bearing)[:, None], np.cos(bearing)[:, None]
        return Tracks(x0[:, None] + along * sin, y0[:, None] + along * cos, speed[rows], along,
                      knots[:, rows], knot0[rows], decorrelation)  # fmt: skip

    probe = np.broadcast_to(np.linspace(0.0, reach, PROBE_POINTS), (n, PROBE_POINTS))
    crossing, found = _border(cells, line(probe), probe, radius_m)
    for _ in range(REDRAWS // CANDIDATES):
        lost = np.flatnonzero(~found)
        if not lost.size:
            break
        # Several new lines per lost track in one search; the first that crosses is kept.
        rows = np.repeat(lost, CANDIDATES)
        start = _track_starts(cells, radius_m, rows.size, rng, starts)
        border, crosses = _border(cells, line(probe[rows], rows, start), probe[rows], radius_m)
        crosses = crosses.reshape(lost.size, CANDIDATES)
        # The first candidate that crosses, else the last.
        pick = np.where(crosses.any(axis=1), np.argmax(crosses, axis=1), CANDIDATES - 1)
        chosen = np.arange(lost.size) * CANDIDATES + pick
        sx[lost], sy[lost], heading[lost] = (value[chosen] for value in start)
        crossing[lost], found[lost] = border[chosen], crosses.reshape(-1)[chosen]
    inward = rng.random(n) < 1.0 / 3.0
    t = (np.arange(steps) - steps / 2.0) * STEP_MS / 1000.0
    walked = np.where(inward, -1.0, 1.0)[:, None] * speed[:, None] * t[None, :]
    return line(crossing[:, None] + walked)


#: How many times a track whose line meets no modelled border is drawn again at most, in
#: searches of this many candidate lines at once.
REDRAWS, CANDIDATES = 8, 4


def _track_starts(
    cells: Cells,
    radius_m: float,
    n: int,
    rng: np.random.Generator,
    starts: tuple[np.ndarray, np.ndarray] | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where ``n`` users on the move start (x, y) and their heading (radians)."""
    if starts is None or len(starts[0]) == 0:
        bearing = np.radians(cells.azimuth_deg[0] + rng.uniform(-50.0, 50.0, n))
        r = radius_m * np.sqrt(rng.uniform(0.05, 0.8, n))
        sx, sy = cells.x[0] + r * np.sin(bearing), cells.y[0] + r * np.cos(bearing)
    else:
        pick = rng.integers(0, len(starts[0]), n)
        sx, sy = np.asarray(starts[0], dtype=float)[pick], np.asarray(starts[1], dtype=float)[pick]
    return sx, sy, rng.uniform(0.0, 2.0 * np.pi, n)


def _border(
    cells: Cells, probe: Tracks, along: np.ndarray, radius_m: float
) -> tuple[np.ndarray, np.ndarray]:
    """Per track, where along its line the serving cell first stops being the strongest (by
    the expected path loss, the line's shadowing and the antennas), interpolated between
    probe points, and whether it does so to a modelled neighbour: a line that first passes to
    one of the serving site's other sectors (:func:`co_sited`) or never leaves (or never is
    the serving cell's) is not found, at the probe point nearest a border; a lone or silent
    cell's border at ``radius_m`` (found: there is no other)."""
    n = along.shape[0]
    if cells.count == 1 or not cells.active[0]:
        return np.full(n, radius_m), np.ones(n, dtype=bool)
    geometry = track_geometry(cells, probe, None)
    rsrp = track_radio(cells, geometry).rsrp_dbm
    neighbours = rsrp[1:].max(axis=0)  # [tracks, points]
    sectors = track_radio(*co_sited(cells, geometry)).rsrp_dbm.max(axis=0)
    margin = rsrp[0] - np.maximum(neighbours, sectors)
    margin = np.where(np.isfinite(margin), margin, 1e3)
    leaves = (margin[:, :-1] >= 0.0) & (margin[:, 1:] < 0.0)
    first = np.argmax(leaves, axis=1)
    rows = np.arange(n)
    a, b = margin[rows, first], margin[rows, first + 1]
    frac = a / np.where(a - b > 0, a - b, 1.0)
    s0, s1 = along[rows, first], along[rows, first + 1]
    found = s0 + frac * (s1 - s0)
    nearest = along[rows, np.argmin(np.abs(margin), axis=1)]
    to_neighbour = neighbours[rows, first + 1] >= sectors[rows, first + 1]
    crosses = leaves.any(axis=1) & to_neighbour
    return np.where(crosses, found, nearest), crosses


def co_sited(cells: Cells, geometry: TrackGeometry) -> tuple[Cells, TrackGeometry]:
    """The serving site's two other sectors (:func:`layout.sibling_sectors` of the serving
    cell), which take no handovers in the model, and their geometry along the tracks: the
    serving cell's path loss (same site)."""
    first = {f.name: getattr(cells, f.name)[:1] for f in fields(cells) if f.name != "scenario"}
    both = np.array([0, 0])
    return layout.sibling_sectors(replace(cells, **first)), TrackGeometry(
        *(getattr(geometry, f.name)[both] for f in fields(geometry))
    )


def crossings_per_s(speed_mps: float, radius_m: float) -> float:
    """How often a user moving at ``speed_mps`` leaves a sector of radius ``radius_m``: the
    fluid-flow model's ``v L / (pi A)`` for a 120° wedge (perimeter ``(2 + 2 pi / 3) R``,
    area ``pi R^2 / 3``)."""
    perimeter = (2.0 + 2.0 * math.pi / 3.0) * radius_m
    area = math.pi * radius_m**2 / 3.0
    return speed_mps * perimeter / (math.pi * area)


@dataclass(frozen=True)
class TrackGeometry:
    """The geometry-only part of every cell's link along every track [cells, tracks, steps]:
    path loss with shadowing and fading residual (dB), bearing and depression (deg). The angles
    are smooth: kept every :data:`COARSE` steps (a quarter of the memory: the tracks were most
    of a network environment's) and interpolated when read, as they were when made."""

    loss_db: np.ndarray
    coarse_bearing_deg: np.ndarray  # [cells, tracks, points every COARSE steps], unwrapped
    coarse_depression_deg: np.ndarray

    @property
    def bearing_deg(self) -> np.ndarray:
        return _along(self.coarse_bearing_deg, _fine(self.loss_db.shape[-1]))

    @property
    def depression_deg(self) -> np.ndarray:
        return _along(self.coarse_depression_deg, _fine(self.loss_db.shape[-1]))


@dataclass(frozen=True)
class TrackRadio:
    """RSRP of every cell [cells, tracks, steps] (dBm per RE), the noise per RE (dBm), and the
    interference of what the model has no cells for as a share of the cells' power at each
    place (``model.World.site_share``, :func:`telcoenv.domains.network.radio.beyond_dbm`)."""

    rsrp_dbm: np.ndarray
    noise_dbm: float
    site_share: float = 0.0


#: Path loss and angles are smooth along a track: computed every this many steps, interpolated.
COARSE = 4


def track_geometry(cells: Cells, walk: Tracks, rng: np.random.Generator | None) -> TrackGeometry:
    """What does not depend on the configuration along the tracks (once per episode): the
    expected path loss over LOS and NLOS, the line's shadowing (correlated over the scenario's
    decorrelation distance), the slow residual of fast fading (drawn from ``rng``; none
    without one) and the angles."""
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
    fine = _fine(steps)
    loss = _along(loss, fine) + SHADOW_SIGMA_DB[scenario][1] * walk.shadowing()
    if rng is not None:
        # The residual of fast fading after L3 filtering: knots every correlation time.
        clock = np.broadcast_to(np.arange(steps) * STEP_MS / RESIDUAL_MS, walk.x.shape)
        knots = rng.standard_normal((cells.count, len(walk.speed), int(clock.max()) + 2))
        loss = loss + RESIDUAL_DB * _knotted(clock, knots)
    return TrackGeometry(
        loss_db=loss,
        coarse_bearing_deg=np.unwrap(bearing, period=360.0, axis=-1),
        coarse_depression_deg=depression,
    )


def _fine(steps: int) -> np.ndarray:
    """The fine steps' positions on the coarse points' axis."""
    return np.arange(steps) / COARSE


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


def _knotted(position: np.ndarray, knots: np.ndarray) -> np.ndarray:
    """[cells, tracks, steps] unit-variance values interpolated between standard normal
    ``knots`` [cells, tracks, k] at integer ``position`` [tracks, steps] (>= 0), so that values
    ``1`` apart are about independent."""
    n_tracks = position.shape[0]
    low = np.floor(position).astype(int)
    frac = position - low
    rows = np.arange(n_tracks)[:, None]
    a = knots[:, rows, low]
    b = knots[:, rows, low + 1]
    # Linear interpolation loses variance between knots: rescale to unit variance.
    return (a * (1 - frac) + b * frac) / np.sqrt((1 - frac) ** 2 + frac**2)


@dataclass(frozen=True)
class Mobility:
    """What the procedures counted over the tracks (per cell: source-cell counts)."""

    attempts: np.ndarray  # [cells] handovers attempted out of each cell
    successes: np.ndarray
    too_early: np.ndarray
    too_late: np.ndarray
    lost_commands: np.ndarray  # attempts failed at the source: command lost, or link failed first
    late_after_loss: np.ndarray  # too-late failures of UEs whose last command was lost
    wrong_cell: np.ndarray
    pingpong: np.ndarray  # counted at the cell left first
    rlf: np.ndarray  # radio link failures while served by each cell
    t310_started: np.ndarray
    relation_attempts: np.ndarray  # [cells, cells]: source -> target
    relation_successes: np.ndarray
    #: [a, b]: UEs handed from a to b that b sent back to a within the ping-pong window (the
    #: return leg ran on b's time-to-trigger and offsets)
    relation_pingpong: np.ndarray
    served_steps: np.ndarray  # [cells]: track steps served by each cell (exposure)


def added(results: list[Mobility]) -> Mobility:
    """The counts of several groups of tracks together."""
    return Mobility(**{f.name: sum(getattr(r, f.name) for r in results) for f in fields(Mobility)})


def handovers(
    radio: TrackRadio,
    load: np.ndarray,
    pci: np.ndarray,
    a3_offset_db: np.ndarray,
    hysteresis_db: np.ndarray,
    ttt_ms: np.ndarray,
    cio_db: np.ndarray,
    t310_ms: np.ndarray,
    relation_cio_db: np.ndarray | None = None,
) -> Mobility:
    """Play A3 handovers and radio link monitoring along every track (configuration per cell;
    a cell's offsets and timers are those its UEs are configured with while it serves them;
    ``relation_cio_db`` [cell, neighbour]: each relation's own offset, which the cell's UEs add
    to that neighbour's measurement, none if None).

    All tracks advance together, step by step, as the procedures run: a step costs a handful of
    numpy operations on one contiguous [cells x tracks] row (this runs several times per RL
    episode). The rarer events (a T310 start, an expiry, a handover) are then played for the
    tracks concerned: in Python for a few, with numpy for many (:data:`FEW`)."""
    rsrp = radio.rsrp_dbm
    n_cells, n_tracks, steps = rsrp.shape
    by_step = rsrp.transpose(2, 0, 1)  # [steps, cells, tracks]: track_radio's memory order
    if not by_step.flags.c_contiguous:
        by_step = np.ascontiguousarray(by_step)
    work = _scratch("a", by_step.shape), _scratch("b", by_step.shape)
    monitor = _monitor(rsrp, by_step, load, radio.noise_dbm, radio.site_share, *work)
    # Each cell's CIO biases it in every comparison (added row by row: see _monitor).
    ranked = work[0]
    np.add(
        by_step.reshape(steps, -1),
        np.repeat(cio_db, n_tracks),
        out=ranked.reshape(steps, -1),
    )
    offsets = a3_offset_db + hysteresis_db
    play = _Play(
        by_step,
        ranked,
        monitor,
        pci,
        offsets,
        _steps_reaching(np.maximum(ttt_ms, STEP_MS) + EXECUTION_MS, steps + 1),
        t310_ms,
        (load, radio.noise_dbm, radio.site_share),
        relation_cio_db,
    )
    # What each step reads and updates.
    below, above = monitor.below, monitor.above
    threshold, neighbour = play.threshold, play.neighbour
    count, trigger = play.count.reshape(-1), play.trigger.reshape(-1)
    row_index, running, due = play.row_index, play.running, play.due
    bias = play.bias  # the serving cells' relation offsets toward each cell, or None
    biased = np.empty((n_cells, n_tracks)) if bias is not None else None
    # With a negative offset, a cell would meet A3 against itself.
    against_itself = bool((np.asarray(offsets) < 0).any())
    meets = np.empty((n_cells, n_tracks), dtype=bool)
    ready = np.empty(n_cells * n_tracks, dtype=bool)
    # Same-dtype operands keep numpy's fast loops: the counts are int8 for short tracks.
    factor = meets.reshape(-1).view(np.int8) if count.dtype == np.int8 else meets.reshape(-1)
    counting = False  # whether any count is non-zero
    for k in range(steps):
        # Radio link monitoring: T310 runs below Qout, stops above Qin, expiry is an RLF.
        starting = below[k].take(row_index)
        if play.live:
            np.greater(starting, running, out=starting)  # below and not running
        if np.count_nonzero(starting):
            play.start_t310(np.flatnonzero(starting), k)
        if play.live:
            play.stop_t310(above[k].take(row_index))
        if k in due:
            play.expire(k)
        # Event A3 with the serving cell's offsets, each cell's CIO: the steps each neighbour
        # has stayed entered, count * meets + meets.
        if bias is None:
            np.greater(ranked[k], threshold[k], out=meets)
        else:
            np.add(ranked[k], bias, out=biased)
            np.greater(biased, threshold[k], out=meets)
        if against_itself:
            np.logical_and(meets, neighbour, out=meets)
        entered = np.count_nonzero(meets)
        if entered or counting:
            np.multiply(count, factor, out=count)
            np.add(count, factor, out=count)
            counting = entered > 0
            if entered:
                np.greater_equal(count, trigger, out=ready)
                if np.count_nonzero(ready):
                    play.hand_over(ready, k)
    return play.mobility()


class _Scratch(threading.local):
    """Float work arrays of a call's size, kept per thread between calls: a fresh array this
    big is mapped from the system and handed back when freed, so that every call would pay its
    page faults again (as long as the arithmetic on it)."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def __call__(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        array = self.arrays.get(name)
        if array is None or array.shape != shape:
            array = self.arrays[name] = np.empty(shape)
        return array


_scratch = _Scratch()
#: ln(10) / 10: a power in dB to its natural logarithm.
_LN10_BY_10 = math.log(10.0) / 10.0
#: Relative margin around the Qout and Qin ratios within which the fast SINR (within about
#: 1e-14, relative, of the exact one near the thresholds) cannot decide: the exact SINR is
#: computed instead.
SINR_MARGIN = 1e-9


@dataclass(frozen=True)
class _Monitor:
    """Radio link monitoring as if each cell served, [steps, cells * tracks] (a step's row
    [cells x tracks] contiguous): SINR below Qout, above Qin, and above Qout (a handover
    target decodable: not below Qout, unless exactly at Qout: ``None`` when none is)."""

    below: np.ndarray
    above: np.ndarray
    decodable: np.ndarray | None = None

    def decodes(self, k: int, index: np.ndarray | int) -> np.ndarray | bool:
        """Whether the cells at flat ``index`` of step ``k``'s row are decodable."""
        if self.decodable is None:
            return ~self.below[k, index]
        return self.decodable[k, index]


def _monitor(
    rsrp: np.ndarray,
    by_step: np.ndarray,
    load: np.ndarray,
    noise_dbm: float,
    share: float,
    work: np.ndarray,
    other_work: np.ndarray,
) -> _Monitor:
    """Qout and Qin for every cell, track and step: decided by :func:`_fast_monitor` all but
    always, else on the exact SINR (:func:`_sinr_db`)."""
    activity, noise = np.maximum(load, 0.05), 10.0 ** (noise_dbm / 10.0)
    fast = _fast_monitor(by_step, activity, share, noise, work, other_work)
    if fast is not None:
        return fast
    sinr = _sinr_db(rsrp, load, noise_dbm, share).transpose(2, 0, 1).reshape(len(by_step), -1)
    return _Monitor(sinr < Q_OUT_DB, sinr > Q_IN_DB, sinr > Q_OUT_DB)


def _fast_monitor(
    by_step: np.ndarray,
    activity: np.ndarray,
    share: float,
    noise: float,
    work: np.ndarray,
    other_work: np.ndarray,
) -> _Monitor | None:
    """Qout and Qin decided on a cheaper SINR (``work`` arrays: scratch of the shape of
    ``by_step``): exp for the powers (a fifth of the cost of ``10 **``), their sum in any order,
    no log, and its inverse (noise + all cells' power, each weighted by its activity plus
    ``share``) / power - activity. That decides exactly whenever the SINR is farther than
    :data:`SINR_MARGIN` (relative) from both thresholds; ``None`` if some is not (or out of the
    error bound's domain)."""
    steps, _, n_tracks = by_step.shape
    weights = activity + share
    # The error bound holds for RSRP in double precision, finite (or -inf, a DOWN cell) short
    # of overflow, weights up to a few (the inverse's cancellation) and a positive noise floor.
    if by_step.dtype != np.float64 or not (weights.max() < 4.0 and 0.0 < noise < np.inf):
        return None
    lin = np.exp(np.multiply(by_step, _LN10_BY_10, out=work), out=work)
    floor = np.matmul(weights, lin)  # [steps, tracks]
    floor += noise
    if not np.isfinite(floor).all():  # a NaN or +inf RSRP, or an overflow
        return None
    # A broadcast copy, then arithmetic on whole rows: far cheaper than broadcasting the
    # arithmetic over [cells, tracks] blocks.
    np.copyto(other_work, floor[:, None, :])
    with np.errstate(divide="ignore"):  # a DOWN cell: infinitely below Qout
        inverse = np.divide(other_work, lin, out=other_work).reshape(steps, -1)
    inverse -= np.repeat(activity, n_tracks)
    out, in_ = 10.0 ** (-Q_OUT_DB / 10.0), 10.0 ** (-Q_IN_DB / 10.0)
    lo, hi = 1.0 - SINR_MARGIN, 1.0 + SINR_MARGIN
    below = inverse > out * hi
    above = inverse < in_ * lo
    if np.count_nonzero(inverse > out * lo) != np.count_nonzero(below):
        return None
    if np.count_nonzero(inverse < in_ * hi) != np.count_nonzero(above):
        return None
    return _Monitor(below, above)


def _sinr_db(
    rsrp: np.ndarray, load: np.ndarray, noise_dbm: float, share: float = 0.0
) -> np.ndarray:
    """Each cell's SINR as the serving one [cells, tracks, steps], dB (the others' load-weighted
    power, and ``share`` of every cell's power for what the model has no cells for): the
    definition the fast path of :func:`_monitor` must agree with."""
    lin = received_mw(rsrp)
    activity = np.maximum(load, 0.05)[:, None, None]
    noise = 10.0 ** (noise_dbm / 10.0)
    total = ((activity + share) * lin).sum(axis=0)  # [tracks, steps]
    return 10.0 * np.log10(np.maximum(lin, 1e-30) / (noise + total[None] - activity * lin))


def _steps_reaching(ms: np.ndarray, never: int) -> np.ndarray:
    """Per entry, the fewest steps n >= 1 with n x STEP_MS >= ms: when a count of STEP_MS a
    step reaches it, or a timer losing STEP_MS a step runs out (both exact in floating point);
    ``never`` for NaN and for durations beyond ``never`` steps."""
    out = []
    for value in np.asarray(ms, dtype=float).tolist():
        if not value <= never * STEP_MS:
            out.append(never)
        elif value <= STEP_MS:
            out.append(1)
        else:
            n = math.ceil(value / STEP_MS)  # then corrected for the rounding of the division
            n += n * STEP_MS < value
            n -= (n - 1) * STEP_MS >= value
            out.append(n)
    return np.array(out, dtype=int)


#: Events of at most this many tracks at a step are played track by track in Python (a few
#: microseconds each), more with numpy over all of them at once (some tens of microseconds).
FEW = 4
#: Kinds of events, each counted per cell (att_* and ok_*: the sources and targets of the same
#: handovers, in step, also counted per relation).
_EVENTS = ("rlf", "early", "late", "wrong", "att_src", "att_dst", "ok_src", "ok_dst", "pp",
           "pp_by", "t310", "lost", "late_lost")  # fmt: skip


class _Play:
    """The procedures' state along the tracks, and what they counted.

    Per track: the serving cell (and its flat index in a step's [cells x tracks] row), the
    previous one, the time of the last handover or re-establishment, whether its last handover
    command was lost (since then no handover or re-establishment), and T310 as the step it
    expires on (N310 = 1). For event A3: the threshold [steps, tracks] (the serving cell's
    ranked RSRP plus its offsets); and [cells, tracks], which cells are neighbours (not the
    serving one), the steps each has met the entry condition and the count that triggers (the
    serving cell's time-to-trigger and the execution time, in steps). The events, per kind:
    cells one by one (``one``) or arrays of them (``many``)."""

    def __init__(
        self,
        by_step: np.ndarray,
        ranked: np.ndarray,
        monitor: _Monitor,
        pci: np.ndarray,
        offsets: np.ndarray,
        trigger: np.ndarray,
        t310_ms: np.ndarray,
        link: tuple[np.ndarray, float, float],
        relation: np.ndarray | None = None,
    ) -> None:
        steps, n_cells, n_tracks = ranked.shape
        self.link = link  # load, noise (dBm per RE), share: the rest of _sinr_db's arguments
        self.by_step, self.ranked, self.monitor, self.offsets = by_step, ranked, monitor, offsets
        self.steps, self.n_tracks = steps, n_tracks
        same = (pci[:, None] == pci[None, :]) & ~np.eye(n_cells, dtype=bool)
        self.confusable = same.any(axis=1)
        self.any_confusable = bool(self.confusable.any())
        tracks = np.arange(n_tracks)
        first = np.argmax(ranked[0], axis=0)
        self.cell = first
        self.row_index = first * n_tracks + tracks
        self.previous = np.full(n_tracks, -1)
        self.last_ho_ms = np.full(n_tracks, NEVER_MS)
        self.lost = np.zeros(n_tracks, dtype=bool)
        self.served = np.bincount(first, minlength=n_cells) * steps
        dtype = np.int8 if steps < 127 else np.int32  # counts never exceed steps + 1
        self.trigger_steps = trigger.tolist()
        self.uniform_trigger = len(set(self.trigger_steps)) == 1
        self.trigger_columns = np.repeat(trigger[None, :], n_cells, axis=0).astype(dtype)
        self.trigger = np.ascontiguousarray(self.trigger_columns[:, first])
        self.count = np.zeros((n_cells, n_tracks), dtype=dtype)
        self.threshold = ranked.reshape(steps, -1)[:, self.row_index] + offsets[first]
        self.neighbour = np.ones((n_cells, n_tracks), dtype=bool)
        self.neighbour[first, tracks] = False
        # Each cell as its tracks' serving cell sees it: its relation offset [cells, tracks].
        self.relation = None if relation is None or not np.any(relation) else relation
        self.bias = None if self.relation is None else np.ascontiguousarray(self.relation[first].T)
        # A timer of T ms losing STEP_MS a step (the starting one included) runs out on step
        # start + n - 1, n the fewest steps reaching T; an infinite or NaN one never runs (it
        # restarts at every step below Qout and never expires).
        t310_ms = np.asarray(t310_ms, dtype=float)
        self.t310_steps = _steps_reaching(t310_ms, steps + 1)
        self.t310_runs = ~np.isnan(t310_ms) & (t310_ms != np.inf)
        self.running = np.zeros(n_tracks, dtype=bool)
        self.expiry = np.zeros(n_tracks, dtype=int)
        self.live = 0  # timers running
        self.due: dict[int, list[int]] = {}  # step -> tracks whose timer may expire on it
        self.one: dict[str, list[int]] = {kind: [] for kind in _EVENTS}
        self.many: dict[str, list[np.ndarray]] = {kind: [] for kind in _EVENTS}

    def _seen(self, k: int, tracks: np.ndarray | int) -> np.ndarray:
        """Every cell's ranked RSRP on step ``k`` as ``tracks``' serving cells compare it (their
        relation offsets added): [cells, tracks], or [cells] for one track."""
        column = self.ranked[k][:, tracks]
        return column if self.bias is None else column + self.bias[:, tracks]

    # --- T310 ---------------------------------------------------------------------------------

    def start_t310(self, tracks: np.ndarray, k: int) -> None:
        """T310 starts on step ``k`` for ``tracks`` (below Qout, not running)."""
        if len(tracks) <= FEW:
            for track in tracks.tolist():
                cell = int(self.cell[track])
                self.one["t310"].append(cell)
                if self.t310_runs[cell]:
                    self.running[track] = True
                    self.expiry[track] = expiry = k - 1 + int(self.t310_steps[cell])
                    self.due.setdefault(expiry, []).append(track)
                    self.live += 1
            return
        cells = self.cell[tracks]
        self.many["t310"].append(cells)
        runs = self.t310_runs[cells]
        tracks, expiry = tracks[runs], self.t310_steps[cells[runs]] + (k - 1)
        self.running[tracks] = True
        self.expiry[tracks] = expiry
        self.live += len(tracks)
        for track, step in zip(tracks.tolist(), expiry.tolist(), strict=True):
            self.due.setdefault(step, []).append(track)

    def stop_t310(self, above: np.ndarray) -> None:
        np.greater(self.running, above, out=self.running)  # running and not above Qin
        self.live = int(np.count_nonzero(self.running))

    def expire(self, k: int) -> None:
        """The timers that run out on step ``k`` (not since stopped or restarted): radio link
        failures."""
        due = set(self.due.pop(k))
        failed = [t for t in sorted(due) if self.running[t] and self.expiry[t] == k]
        if len(failed) > FEW:
            self._reestablish(np.array(failed), k)
        else:
            for track in failed:
                self._reestablish_one(track, k)

    # --- radio link failure -------------------------------------------------------------------

    def _reestablish(self, failed: np.ndarray, k: int) -> None:
        """Radio link failures on step ``k``: the UEs re-establish on the strongest cell."""
        now = k * STEP_MS
        recent = (now - self.last_ho_ms[failed]) < EARLY_WINDOW_MS
        rsrp = self.by_step[k][:, failed]
        best = np.argmax(np.where(np.isfinite(rsrp), rsrp, -1e9), axis=0)
        source, previous = self.cell[failed], self.previous[failed]
        many = self.many
        # A handover under way (its time-to-trigger met, the report sent, the command not yet
        # delivered) fails with the link: an attempt that failed at the source.
        pending = self.count[:, failed] >= self.trigger[:, failed] - 1
        preparing = pending.any(axis=0)
        if preparing.any():
            column = np.where(pending, self._seen(k, failed), -np.inf)[:, preparing]
            many["att_src"].append(source[preparing])
            many["att_dst"].append(np.argmax(column, axis=0))
            many["lost"].append(source[preparing])
        many["rlf"].append(source)
        # A failure shortly after a handover is the source cell's handover gone wrong.
        many["early"].append(previous[recent & (best == previous)])
        many["wrong"].append(previous[recent & (best != previous) & (best != source)])
        # Too late: the UE should have been handed over to where it re-establishes (if the
        # source sent the command and lost it, that attempt already counts the failure).
        late = ~recent & (best != source)
        many["late"].append(source[late])
        many["late_lost"].append(source[late & (self.lost[failed] | preparing)])
        self.lost[failed] = False
        # A re-establishment is no handover: a later failure or return is not one's fault.
        self.previous[failed] = -1
        self.last_ho_ms[failed] = NEVER_MS
        self.running[failed] = False
        self.live = int(np.count_nonzero(self.running))
        self._reassign(failed, best, k)

    def _reestablish_one(self, track: int, k: int) -> None:
        """:meth:`_reestablish`, for one track."""
        now = k * STEP_MS
        rsrp = self.by_step[k, :, track].tolist()
        best = _first_max([v if math.isfinite(v) else -1e9 for v in rsrp])
        source, previous = int(self.cell[track]), int(self.previous[track])
        one = self.one
        pending = (self.count[:, track] >= self.trigger[:, track] - 1).tolist()
        if any(pending):  # a handover under way (see _reestablish)
            column = self._seen(k, track).tolist()
            one["att_src"].append(source)
            one["att_dst"].append(
                _first_max([v if p else -math.inf for v, p in zip(column, pending, strict=True)])
            )
            one["lost"].append(source)
            self.lost[track] = True
        one["rlf"].append(source)
        if now - self.last_ho_ms[track] < EARLY_WINDOW_MS:
            if best == previous:
                one["early"].append(previous)
            elif best != source:
                one["wrong"].append(previous)
        elif best != source:
            one["late"].append(source)
            if self.lost[track]:
                one["late_lost"].append(source)
        self.lost[track] = False
        self.previous[track] = -1
        self.last_ho_ms[track] = NEVER_MS
        self.running[track] = False
        self.live -= 1
        self._reassign_one(track, best, k)

    # --- handover -----------------------------------------------------------------------------

    def hand_over(self, ready: np.ndarray, k: int) -> None:
        """Step ``k``'s handovers: each track with a neighbour ready (``ready``: a step's
        [cells x tracks] row, flat) to the best such one."""
        n_cells, n_tracks = self.count.shape
        if np.count_nonzero(ready) <= FEW:
            candidates: dict[int, list[int]] = {}
            for i in np.flatnonzero(ready).tolist():
                candidates.setdefault(i % n_tracks, []).append(i // n_tracks)
            for track, cells in candidates.items():
                if len(cells) > 1:  # to the best
                    column = self._seen(k, track).tolist()
                    cells = [cells[_first_max([column[c] for c in cells])]]
                self._hand_over_one(track, cells[0], k)
            return
        ready = ready.reshape(n_cells, n_tracks)
        moving = np.flatnonzero(ready.any(axis=0))
        column = self._seen(k, moving)
        target = np.argmax(np.where(ready[:, moving], column, -np.inf), axis=0)
        source = self.cell[moving]
        many = self.many
        many["att_src"].append(source)
        many["att_dst"].append(target)
        # A source too weak to deliver the command keeps the UE, its T310 running. Else the
        # target must be decodable; a PCI another audible cell shares is a coin toss. A target
        # still too weak is a handover triggered too early; a PCI clash sends the UE toward the
        # wrong cell. Either way it stays on the source, which is fading.
        lost = self._command_lost(k, moving, source)
        many["lost"].append(source[lost])
        self.lost[moving] = lost
        success = self.monitor.decodes(k, target * n_tracks + moving) & ~lost
        if self.any_confusable:
            clash = self.confusable[target] & ((k + moving) % 2 == 0) & ~lost
            many["wrong"].append(source[clash])
            many["early"].append(source[~success & ~clash & ~lost])
            success &= ~clash
        else:
            many["early"].append(source[~success & ~lost])
        many["ok_src"].append(source[success])
        many["ok_dst"].append(target[success])
        now = k * STEP_MS
        quick = now - self.last_ho_ms[moving] < PINGPONG_WINDOW_MS
        bounced = success & (target == self.previous[moving]) & quick
        many["pp"].append(target[bounced])
        many["pp_by"].append(source[bounced])
        moved = moving[success]
        self.previous[moved] = source[success]
        self.last_ho_ms[moved] = now
        self.running[moved] = False
        self.live = int(np.count_nonzero(self.running))
        self.count[:, moving] = 0
        self._reassign(moved, target[success], k)

    def _hand_over_one(self, track: int, target: int, k: int) -> None:
        """:meth:`hand_over`, for one track and its target."""
        source = int(self.cell[track])
        one = self.one
        one["att_src"].append(source)
        one["att_dst"].append(target)
        lost = bool(self._command_lost(k, np.array([track]), np.array([source]))[0])
        self.lost[track] = lost
        if lost:
            one["lost"].append(source)
        elif self.confusable[target] and (k + track) % 2 == 0:
            one["wrong"].append(source)
        elif not self.monitor.decodes(k, target * self.n_tracks + track):
            one["early"].append(source)
        else:
            one["ok_src"].append(source)
            one["ok_dst"].append(target)
            now = k * STEP_MS
            if target == self.previous[track] and now - self.last_ho_ms[track] < PINGPONG_WINDOW_MS:
                one["pp"].append(target)
                one["pp_by"].append(source)
            self.previous[track] = source
            self.last_ho_ms[track] = now
            if self.running[track]:
                self.running[track] = False
                self.live -= 1
            self._reassign_one(track, target, k)
            return
        self.count[:, track] = 0

    def _command_lost(self, k: int, tracks: np.ndarray, sources: np.ndarray) -> np.ndarray:
        """Whether each track's source (``sources``) is too weak on step ``k`` to deliver the
        handover command: its SINR (:func:`_sinr_db`) below :data:`Q_COMMAND_DB`."""
        sinr = _sinr_db(self.by_step[k][:, tracks, None], *self.link)
        return sinr[sources, np.arange(len(tracks)), 0] < Q_COMMAND_DB

    def _reassign(self, tracks: np.ndarray, cells: np.ndarray, k: int) -> None:
        """``cells`` serve ``tracks`` from step ``k``'s A3 comparison on (step ``k`` counted as
        served by the former cell); their counts restart."""
        remaining = self.steps - 1 - k
        np.subtract.at(self.served, self.cell[tracks], remaining)
        np.add.at(self.served, cells, remaining)
        self.neighbour[self.cell[tracks], tracks] = True
        self.neighbour[cells, tracks] = False
        self.cell[tracks] = cells
        self.row_index[tracks] = cells * self.n_tracks + tracks
        self.threshold[k:, tracks] = self.ranked[k:, cells, tracks] + self.offsets[cells]
        if self.relation is not None:
            self.bias[:, tracks] = self.relation[cells].T
        if not self.uniform_trigger:
            self.trigger[:, tracks] = self.trigger_columns[:, cells]
        self.count[:, tracks] = 0

    def _reassign_one(self, track: int, cell: int, k: int) -> None:
        """:meth:`_reassign`, for one track."""
        old = int(self.cell[track])
        remaining = self.steps - 1 - k
        self.served[old] -= remaining
        self.served[cell] += remaining
        self.neighbour[old, track] = True
        self.neighbour[cell, track] = False
        self.cell[track] = cell
        self.row_index[track] = cell * self.n_tracks + track
        np.add(self.ranked[k:, cell, track], self.offsets[cell], out=self.threshold[k:, track])
        if self.relation is not None:
            self.bias[:, track] = self.relation[cell]
        if self.trigger_steps[cell] != self.trigger_steps[old]:
            self.trigger[:, track] = self.trigger_columns[:, cell]
        self.count[:, track] = 0

    # --- the counters -------------------------------------------------------------------------

    def _cells(self, kind: str) -> np.ndarray:
        one = np.array(self.one[kind], dtype=int)
        return np.concatenate([one, *self.many[kind]]) if self.many[kind] else one

    def _count(self, kind: str) -> np.ndarray:
        return np.bincount(self._cells(kind), minlength=len(self.served)).astype(float)

    def _pairs(self, src: str, dst: str) -> np.ndarray:
        n = len(self.served)
        pairs = self._cells(src) * n + self._cells(dst)
        return np.bincount(pairs, minlength=n * n).reshape(n, n).astype(float)

    def mobility(self) -> Mobility:
        return Mobility(
            attempts=self._count("att_src"),
            successes=self._count("ok_src"),
            too_early=self._count("early"),
            too_late=self._count("late"),
            lost_commands=self._count("lost"),
            late_after_loss=self._count("late_lost"),
            wrong_cell=self._count("wrong"),
            pingpong=self._count("pp"),
            rlf=self._count("rlf"),
            t310_started=self._count("t310"),
            relation_attempts=self._pairs("att_src", "att_dst"),
            relation_successes=self._pairs("ok_src", "ok_dst"),
            relation_pingpong=self._pairs("pp", "pp_by"),
            served_steps=self.served.astype(float),
        )


def _first_max(values: list[float]) -> int:
    """The index of the largest value, the first of equals (as numpy's argmax)."""
    return max(range(len(values)), key=values.__getitem__)
