"""The radio model: 3GPP TR 38.901 path loss and antenna pattern, and RSRP, RSRQ and SINR per UE.

A cluster is a handful of cells (``Cells``: positions, heights, azimuths, tilts, powers, carriers,
PCIs) and a population of user equipment (``UEs``: positions, heights, indoor or not). The
geometry-only part of every cell-to-UE link (path loss, shadow fading, outdoor-to-indoor loss,
the angles under which the UE sees the cell) is computed once per episode (:func:`couple`); a
change of tilt, azimuth, power or load then only re-evaluates the antenna gains and the sums
(:func:`measure`), a few hundred microseconds for 13 cells and a few hundred UEs.

Equations, with the sections they come from:

* **Path loss** (TR 38.901 Table 7.4.1-1, fc in GHz, distances in m): UMa, UMi street canyon,
  RMa and InH office, LOS with its breakpoint and NLOS as ``max(LOS, NLOS')``; the LOS
  probability of Table 7.4.2-1 decides, per link, which applies; shadow fading is log-normal with
  the table's standard deviation (per link, not spatially correlated: a cluster's UEs are few
  and apart).
* **Outdoor to indoor** (§7.4.3, low-loss model): ``PL_tw = 5 - 10 log10(0.3·10^(-L_glass/10) +
  0.7·10^(-L_concrete/10))`` with ``L_glass = 2 + 0.2 fc``, ``L_concrete = 5 + 4 fc``, plus
  ``0.5 d2D_in`` with ``d2D_in`` the smaller of two U(0, 25 m) draws (U(0, 10 m) for RMa).
* **Antenna** (Table 7.3-1 sector pattern, as in TR 36.814 for a panel): ``A_H(φ) =
  -min(12 (φ/φ3dB)², A_m)``, ``A_V(θ) = -min(12 ((θ - θtilt)/θ3dB)², SLA_V)``, ``A =
  -min(-(A_H + A_V), A_m)``, gain ``G_max + A``; φ is the bearing off the cell's boresight
  (azimuth plus the SSB beam steering offset), θ the depression angle below the horizon and
  θtilt the mechanical plus electrical downtilt. A panel's vertical half-power beamwidth is its
  array's (10° macro, 15° micro, 30° pico), not the single element's 65°.
* **RSRP** (per resource element): ``EPRE + G_tx - coupling loss`` with ``EPRE = P_tx - 10 log10
  (12 N_PRB)``; noise per RE ``-174 + 10 log10(SCS) + NF``.
* **SINR** (of the data, on the PRBs the serving cell uses): ``S / (N + Σ_j ρ_j I_j)``, ρ_j the
  neighbours' PRB utilisation (a busy neighbour interferes more; an idle one only with its
  reference signals, ρ ≥ :data:`RS_ACTIVITY`), plus any external interference.
* **RS-SINR and PCI**: reference signals collide at full power with cells whose PCI has the
  same value mod 3 (NR SSB/PBCH DMRS shift, LTE CRS shift); the same PCI also makes two cells
  indistinguishable to the UE (:attr:`Radio.confused`).
* **RSRQ** ``= RSRP / (RSSI / N_RB)`` with RSSI over the 12 REs of an RB in the measured
  symbols: every cell's power weighted by its activity there (its load, and at least the
  reference-signal share 1/6) plus noise; -3 dB in an empty network, -10.8 dB at full own load
  with no interference.

Everything is plain numpy with the episode's generator: the same seed gives the same numbers in
any process. What it simplifies (no fast fading in these averages, no spatially consistent
shadowing, no UE antenna pattern, one carrier per cell) is in docs/network_model.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

Scenario = Literal["UMa", "UMi", "RMa", "InH"]
SCENARIOS: tuple[Scenario, ...] = ("UMa", "UMi", "RMa", "InH")

SPEED_OF_LIGHT = 299_792_458.0
#: Noise figure of a UE receiver, dB (TR 38.901's calibration value).
UE_NOISE_FIGURE_DB = 9.0
#: The share of resource elements a cell always transmits (reference and sync signals), so an
#: idle neighbour still interferes a little.
RS_ACTIVITY = 0.05
#: The share of a resource block's REs that carry reference signals in the symbols where RSRQ
#: is measured: an empty cell's RSSI (RSRQ -3 dB in an empty network).
RSSI_RS_SHARE = 1.0 / 6.0
#: RSRP below which a UE hears no cell (no service), dBm.
NO_SERVICE_DBM = -140.0
#: The serving "cell" of a UE that a cell outside the cluster serves (:func:`measure`).
OUTSIDE = -2


# --- path loss --------------------------------------------------------------------------------


def _breakpoint_uma_umi(h_bs: np.ndarray, h_ut: np.ndarray, fc_ghz: np.ndarray) -> np.ndarray:
    """d'BP = 4 h'BS h'UT fc / c, effective heights above h_E = 1 m (Table 7.4.1-1 note 1)."""
    return 4.0 * (h_bs - 1.0) * (h_ut - 1.0) * fc_ghz * 1e9 / SPEED_OF_LIGHT


@dataclass(frozen=True)
class _Street:
    """The coefficients of a street scenario's path loss (TR 38.901 Table 7.4.1-1): LOS
    PL1 = a + b log10(d3D) + 20 log10(fc) before the breakpoint, PL2 = a + 40 log10(d3D) +
    20 log10(fc) - c log10(d'BP^2 + (hBS - hUT)^2) after it; NLOS e + f log10(d3D) + g log10(fc)
    - h (hUT - 1.5), never below LOS."""

    a: float
    b: float
    c: float
    e: float
    f: float
    g: float
    h: float

    def __call__(self, d2d, d3d, fc, h_bs, h_ut, los):
        bp = _breakpoint_uma_umi(h_bs, h_ut, fc)
        pl1 = self.a + self.b * np.log10(d3d) + 20.0 * np.log10(fc)
        pl2 = (
            self.a
            + 40.0 * np.log10(d3d)
            + 20.0 * np.log10(fc)
            - self.c * np.log10(bp**2 + (h_bs - h_ut) ** 2)
        )
        pl_los = np.where(d2d <= bp, pl1, pl2)
        pl_nlos = self.e + self.f * np.log10(d3d) + self.g * np.log10(fc) - self.h * (h_ut - 1.5)
        return np.where(los, pl_los, np.maximum(pl_los, pl_nlos))


_uma = _Street(a=28.0, b=22.0, c=9.0, e=13.54, f=39.08, g=20.0, h=0.6)
_umi = _Street(a=32.4, b=21.0, c=9.5, e=22.4, f=35.3, g=21.3, h=0.3)

#: RMa defaults of Table 7.4.1-1: average building height and street width, m.
RMA_BUILDING_M, RMA_STREET_M = 5.0, 20.0


def _rma(d2d, d3d, fc, h_bs, h_ut, los):
    h, w = RMA_BUILDING_M, RMA_STREET_M
    bp = 2.0 * math.pi * h_bs * h_ut * fc * 1e9 / SPEED_OF_LIGHT

    def pl1(d):
        return (
            20.0 * np.log10(40.0 * math.pi * d * fc / 3.0)
            + min(0.03 * h**1.72, 10.0) * np.log10(d)
            - min(0.044 * h**1.72, 14.77)
            + 0.002 * math.log10(h) * d
        )

    d_bp3 = np.sqrt(bp**2 + (h_bs - h_ut) ** 2)
    pl_los = np.where(d2d <= bp, pl1(d3d), pl1(d_bp3) + 40.0 * np.log10(d3d / d_bp3))
    pl_nlos = (
        161.04
        - 7.1 * math.log10(w)
        + 7.5 * math.log10(h)
        - (24.37 - 3.7 * (h / h_bs) ** 2) * np.log10(h_bs)
        + (43.42 - 3.1 * np.log10(h_bs)) * (np.log10(d3d) - 3.0)
        + 20.0 * np.log10(fc)
        - (3.2 * np.log10(11.75 * h_ut) ** 2 - 4.97)
    )
    return np.where(los, pl_los, np.maximum(pl_los, pl_nlos))


def _inh(d2d, d3d, fc, h_bs, h_ut, los):
    pl_los = 32.4 + 17.3 * np.log10(d3d) + 20.0 * np.log10(fc)
    pl_nlos = 17.3 + 38.3 * np.log10(d3d) + 24.9 * np.log10(fc)
    return np.where(los, pl_los, np.maximum(pl_los, pl_nlos))


_PATHLOSS = {"UMa": _uma, "UMi": _umi, "RMa": _rma, "InH": _inh}
#: Shadow-fading standard deviations (LOS, NLOS) of Table 7.4.1-1, dB.
SHADOW_SIGMA_DB: dict[str, tuple[float, float]] = {
    "UMa": (4.0, 6.0),
    "UMi": (4.0, 7.82),
    "RMa": (4.0, 8.0),
    "InH": (3.0, 8.03),
}


def pathloss_db(
    scenario: Scenario,
    d2d: np.ndarray,
    fc_ghz: np.ndarray | float,
    h_bs: np.ndarray | float,
    h_ut: np.ndarray | float,
    los: np.ndarray | bool,
) -> np.ndarray:
    """Path loss of TR 38.901 Table 7.4.1-1 (without shadow fading), dB.

    Distances below the table's 10 m (1 m indoors) are clamped to it.

    >>> round(float(pathloss_db("UMa", np.array(100.0), 3.5, 25.0, 1.5, True)), 1)
    83.1
    >>> round(float(pathloss_db("UMa", np.array(500.0), 3.5, 25.0, 1.5, False)), 1)
    129.9
    """
    d2d = np.maximum(np.asarray(d2d, dtype=float), 1.0 if scenario == "InH" else 10.0)
    fc, h_bs_, h_ut_ = (np.asarray(v, dtype=float) for v in (fc_ghz, h_bs, h_ut))
    d3d = np.sqrt(d2d**2 + (h_bs_ - h_ut_) ** 2)
    return _PATHLOSS[scenario](d2d, d3d, fc, h_bs_, h_ut_, np.asarray(los, dtype=bool))


def los_probability(scenario: Scenario, d2d: np.ndarray, h_ut: np.ndarray | float) -> np.ndarray:
    """The LOS probability of TR 38.901 Table 7.4.2-1 (InH: open office).

    >>> round(float(los_probability("UMa", np.array(100.0), 1.5)), 2)
    0.35
    """
    d = np.maximum(np.asarray(d2d, dtype=float), 1e-3)
    h = np.asarray(h_ut, dtype=float)
    if scenario == "RMa":
        return np.where(d <= 10.0, 1.0, np.exp(-(d - 10.0) / 1000.0))
    if scenario == "InH":
        return np.where(
            d <= 5.0,
            1.0,
            np.where(d <= 49.0, np.exp(-(d - 5.0) / 70.8), 0.54 * np.exp(-(d - 49.0) / 211.7)),
        )
    if scenario == "UMi":
        return np.where(d <= 18.0, 1.0, 18.0 / d + np.exp(-d / 36.0) * (1.0 - 18.0 / d))
    c = np.where(h <= 13.0, 0.0, ((np.maximum(h, 13.0) - 13.0) / 10.0) ** 1.5)
    base = np.where(d <= 18.0, 1.0, 18.0 / d + np.exp(-d / 63.0) * (1.0 - 18.0 / d))
    return np.minimum(1.0, base * (1.0 + c * 1.25 * (d / 100.0) ** 3 * np.exp(-d / 150.0)))


def o2i_loss_db(fc_ghz: np.ndarray | float, d2d_in: np.ndarray) -> np.ndarray:
    """Outdoor-to-indoor loss, TR 38.901 §7.4.3 low-loss model (without its random part)."""
    fc = np.asarray(fc_ghz, dtype=float)
    glass, concrete = 2.0 + 0.2 * fc, 5.0 + 4.0 * fc
    through_wall = 5.0 - 10.0 * np.log10(0.3 * 10 ** (-glass / 10) + 0.7 * 10 ** (-concrete / 10))
    return through_wall + 0.5 * np.asarray(d2d_in, dtype=float)


# --- antenna ----------------------------------------------------------------------------------

#: Front-to-back ratio A_m and vertical side-lobe level SLA_V of the sector pattern, dB.
MAX_ATTENUATION_DB = 30.0
SIDE_LOBE_DB = 30.0
#: Horizontal half-power beamwidth of a sector panel, degrees.
H_BEAMWIDTH_DEG = 65.0


def antenna_gain_db(
    bearing_off_deg: np.ndarray,
    depression_deg: np.ndarray,
    tilt_deg: np.ndarray,
    v_beamwidth_deg: np.ndarray,
    max_gain_dbi: np.ndarray,
) -> np.ndarray:
    """Gain of the TR 38.901 Table 7.3-1 sector pattern toward a UE, dBi.

    ``bearing_off_deg``: the UE's bearing minus the boresight, wrapped to [-180, 180);
    ``depression_deg``: the UE's angle below the horizon; ``tilt_deg``: total downtilt.

    >>> float(antenna_gain_db(np.array(0.0), np.array(6.0), np.array(6.0), np.array(10.0),
    ...                       np.array(17.0)))
    17.0
    >>> float(antenna_gain_db(np.array(180.0), np.array(6.0), np.array(6.0), np.array(10.0),
    ...                       np.array(17.0)))
    -13.0
    """
    horizontal = -np.minimum(12.0 * (bearing_off_deg / H_BEAMWIDTH_DEG) ** 2, MAX_ATTENUATION_DB)
    vertical = -np.minimum(
        12.0 * ((depression_deg - tilt_deg) / v_beamwidth_deg) ** 2, SIDE_LOBE_DB
    )
    return max_gain_dbi - np.minimum(-(horizontal + vertical), MAX_ATTENUATION_DB)


def wrap_deg(angle: np.ndarray) -> np.ndarray:
    """An angle wrapped to [-180, 180)."""
    return (np.asarray(angle) + 180.0) % 360.0 - 180.0


# --- the cluster --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cells:
    """The cells of a cluster, one entry per cell (index 0: the serving cell). Positions are
    metres east and north of the serving site; azimuths degrees clockwise from north."""

    x: np.ndarray
    y: np.ndarray
    height_m: np.ndarray
    azimuth_deg: np.ndarray
    mech_tilt_deg: np.ndarray  # the antenna's mechanical downtilt (not configurable remotely)
    tilt_deg: np.ndarray  # electrical downtilt (the OSS's tilt_deg)
    beam_offset_deg: np.ndarray  # SSB beam steering offset from boresight
    tx_power_dbm: np.ndarray  # total, over the carrier
    fc_ghz: np.ndarray
    n_prb: np.ndarray
    scs_khz: np.ndarray
    v_beamwidth_deg: np.ndarray
    max_gain_dbi: np.ndarray
    pci: np.ndarray
    active: np.ndarray  # bool: on air (a DOWN cell radiates nothing)
    scenario: Scenario

    @property
    def count(self) -> int:
        return len(self.x)

    def with_(self, **changes: np.ndarray) -> Cells:
        return replace(self, **changes)


@dataclass(frozen=True)
class UEs:
    """The user equipment of a cluster: positions (m), heights, whether indoors, how deep."""

    x: np.ndarray
    y: np.ndarray
    height_m: np.ndarray
    indoor: np.ndarray  # bool
    indoor_depth_m: np.ndarray  # d2D-in of TR 38.901 §7.4.3 (0 outdoors)

    @property
    def count(self) -> int:
        return len(self.x)


@dataclass(frozen=True)
class Coupling:
    """Geometry-only link quantities, [cells, UEs]: computed once per episode."""

    loss_db: np.ndarray  # path loss + shadow fading + outdoor-to-indoor loss
    bearing_deg: np.ndarray  # the UE's bearing from the cell, clockwise from north
    depression_deg: np.ndarray  # the UE's angle below the cell's horizon
    distance_m: np.ndarray  # 2D distance
    los: np.ndarray  # bool

    def beside(self, other: Coupling) -> Coupling:
        """These UEs' links and ``other``'s, to the same cells (``other``'s UEs after)."""
        pairs = zip(self._arrays(), other._arrays(), strict=True)
        return Coupling(*(np.concatenate([a, b], axis=1) for a, b in pairs))

    def of_cells(self, index: np.ndarray) -> Coupling:
        """The links of the cells ``index`` picks (a sector of the same site and antenna
        height sees every UE under the same path, shadowing and building loss)."""
        return Coupling(*(a[index] for a in self._arrays()))

    def _arrays(self) -> tuple[np.ndarray, ...]:
        return (self.loss_db, self.bearing_deg, self.depression_deg, self.distance_m, self.los)


def couple(cells: Cells, ues: UEs, rng: np.random.Generator) -> Coupling:
    """Path loss, shadowing and building loss of every cell-UE link, with the angles under which
    each cell sees each UE (one draw of the episode's generator per link)."""
    dx = ues.x[None, :] - cells.x[:, None]
    dy = ues.y[None, :] - cells.y[:, None]
    d2d = np.hypot(dx, dy)
    h_bs, h_ut = cells.height_m[:, None], ues.height_m[None, :]
    fc = cells.fc_ghz[:, None]
    scenario = cells.scenario
    # Indoor UEs: the LOS probability of the outdoor distance; never LOS through a wall beyond
    # what the O2I model adds.
    p_los = los_probability(scenario, d2d, h_ut)
    los = rng.random(d2d.shape) < p_los
    loss = pathloss_db(scenario, d2d, fc, h_bs, h_ut, los)
    sigma_los, sigma_nlos = SHADOW_SIGMA_DB[scenario]
    loss = loss + rng.standard_normal(d2d.shape) * np.where(los, sigma_los, sigma_nlos)
    if scenario != "InH":
        loss = loss + np.where(ues.indoor[None, :], o2i_loss_db(fc, ues.indoor_depth_m[None, :]), 0)
    bearing = np.degrees(np.arctan2(dx, dy)) % 360.0
    depression = np.degrees(np.arctan2(h_bs - h_ut, np.maximum(d2d, 1.0)))
    return Coupling(loss, bearing, depression, d2d, los)


# --- measurements ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Radio:
    """What the UEs measure, per UE unless noted."""

    rsrp_dbm: np.ndarray  # [cells, UEs], per resource element
    serving: np.ndarray  # index of the serving cell (-1: no service; OUTSIDE: not the cluster)
    serving_rsrp_dbm: np.ndarray
    sinr_db: np.ndarray  # data SINR on the serving cell's PRBs
    rs_sinr_db: np.ndarray  # reference-signal SINR (PCI mod-3 collisions at full power)
    rsrq_db: np.ndarray
    confused: np.ndarray  # bool: a neighbour with the serving cell's PCI is audible
    best_margin_db: np.ndarray  # serving RSRP minus the strongest other cell's (with CIO)
    extra: dict[str, np.ndarray] = field(default_factory=dict)


def noise_dbm_per_re(scs_khz: np.ndarray | float, noise_figure_db: float) -> np.ndarray:
    """Thermal noise in one resource element, dBm."""
    return -174.0 + 10.0 * np.log10(np.asarray(scs_khz, dtype=float) * 1e3) + noise_figure_db


def _db(linear: np.ndarray) -> np.ndarray:
    return 10.0 * np.log10(np.maximum(linear, 1e-30))


def _lin(db: np.ndarray) -> np.ndarray:
    return 10.0 ** (np.asarray(db, dtype=float) / 10.0)


def received_mw(rsrp: np.ndarray) -> np.ndarray:
    """RSRP in dBm as power in mW, a cell off air (-inf) bringing none."""
    return np.where(np.isfinite(rsrp), _lin(rsrp), 0.0)


#: The RSRP a place needs to count as covered (a coverage gap below it), dBm.
COVERAGE_DBM = -110.0


def rsrp_of(cells: Cells, coupling: Coupling) -> np.ndarray:
    """RSRP of every cell at every UE, dBm per RE [cells, UEs] (-inf from a cell off air): what
    the configuration decides, before any load."""
    boresight = cells.azimuth_deg + cells.beam_offset_deg
    bearing_off = wrap_deg(coupling.bearing_deg - boresight[:, None])
    tilt = (cells.tilt_deg + cells.mech_tilt_deg)[:, None]
    gain = antenna_gain_db(
        bearing_off,
        coupling.depression_deg,
        tilt,
        cells.v_beamwidth_deg[:, None],
        cells.max_gain_dbi[:, None],
    )
    epre = cells.tx_power_dbm - 10.0 * np.log10(12.0 * cells.n_prb)
    rsrp = epre[:, None] + gain - coupling.loss_db
    return np.where(cells.active[:, None], rsrp, -np.inf)


def beyond_dbm(rsrp: np.ndarray, share: float, fade_db: np.ndarray) -> np.ndarray:
    """Per UE (a column of ``rsrp``, [cells, UEs] dBm per RE): the interference of what the model
    has no cells for, the sites' other sectors and the network beyond the cluster, taken as
    ``share`` of the power the cluster's cells bring there (a site's other sectors radiate
    where its modelled sector does), shadowed at each UE by ``fade_db`` (its own links'
    shadowing: ``model._beyond_fade_db``); dBm per RE, -inf with none."""
    if share <= 0.0:
        return np.full(rsrp.shape[1], -np.inf)
    total = received_mw(rsrp).sum(axis=0)
    return _db(np.maximum(share * total, 1e-300)) + fade_db


def measure(
    cells: Cells,
    coupling: Coupling,
    load: np.ndarray,
    cio_db: np.ndarray | None = None,
    external_interference_dbm: float | np.ndarray = -np.inf,
    noise_figure_db: float = UE_NOISE_FIGURE_DB,
    force: np.ndarray | None = None,
    rsrp: np.ndarray | None = None,
    outside_dbm: np.ndarray | None = None,
) -> Radio:
    """RSRP of every cell at every UE, the serving cell, SINR, RS-SINR and RSRQ.

    ``load``: each cell's PRB utilisation in [0, 1]; ``cio_db``: the offset a cell's RSRP gets
    when UEs choose their serving cell (a cell individual offset, as idle- and connected-mode
    selection bias it); ``external_interference_dbm``: per-RE interference from outside the
    cluster (an external interferer, or the rest of the network), per UE or one value;
    ``force``: per UE, a cell to serve it instead of the strongest (-1: the strongest), as load
    balancing hands UEs to a neighbour; ``rsrp``: :func:`rsrp_of` for these cells, when the
    caller has it; ``outside_dbm``: per UE, the RSRP of the strongest cell outside the cluster
    (the sites' other sectors): a UE hearing it above every cluster cell (with their CIO) camps
    there, its serving cell :data:`OUTSIDE`, and it is nobody's in the cluster.
    """
    n_cells = cells.count
    rsrp = rsrp_of(cells, coupling) if rsrp is None else rsrp
    bias = np.zeros(n_cells) if cio_db is None else np.asarray(cio_db, dtype=float)
    ranked = rsrp + bias[:, None]
    serving = np.argmax(ranked, axis=0)
    if force is not None:
        serving = np.where(force >= 0, force, serving)
    ues = np.arange(rsrp.shape[1])
    serving_rsrp = rsrp[serving, ues]
    others = ranked.copy()
    others[serving, ues] = -np.inf
    strongest_other = others.max(axis=0) if n_cells > 1 else np.full(len(ues), -np.inf)
    away = np.zeros(len(ues), dtype=bool)
    if outside_dbm is not None:
        away = outside_dbm > ranked[serving, ues]
        if force is not None:
            away &= force < 0
        strongest_other = np.maximum(strongest_other, outside_dbm)
    no_service = (serving_rsrp < NO_SERVICE_DBM) & ~away
    margin = np.minimum(ranked[serving, ues] - strongest_other, 99.0)

    received = received_mw(rsrp)  # mW per RE
    noise = _lin(noise_dbm_per_re(cells.scs_khz[serving], noise_figure_db))
    external = _lin(np.broadcast_to(np.asarray(external_interference_dbm, dtype=float), len(ues)))
    activity = np.maximum(np.asarray(load, dtype=float), RS_ACTIVITY)
    interference = (activity[:, None] * received).sum(axis=0) - activity[serving] * received[
        serving, ues
    ]
    signal = received[serving, ues]
    sinr = signal / (noise + external + interference)
    # Reference signals: cells of the same PCI mod 3 put theirs on the same subcarriers.
    same_shift = (cells.pci[:, None] % 3) == (cells.pci[serving] % 3)[None, :]
    rs_interference = np.where(same_shift, received, activity[:, None] * received).sum(axis=0)
    rs_interference = rs_interference - received[serving, ues]
    rs_sinr = signal / (noise + external + rs_interference)
    # RSSI over the RB's 12 REs in the symbols RSRQ is measured on, where a cell sends at least
    # its reference signals (1 RE in 6 per port): RSRQ = RSRP / (RSSI / N_RB).
    measured = np.maximum(np.asarray(load, dtype=float), RSSI_RS_SHARE)
    rssi_per_re = (measured[:, None] * received).sum(axis=0) + noise + external
    rsrq = _db(signal / (12.0 * rssi_per_re))
    confused = (
        (cells.pci[:, None] == cells.pci[serving][None, :])
        & (np.arange(n_cells)[:, None] != serving[None, :])
        & (rsrp > NO_SERVICE_DBM)
    ).any(axis=0)
    sinr_db = np.where(no_service, -20.0, _db(sinr))
    return Radio(
        rsrp_dbm=rsrp,
        serving=np.where(no_service, -1, np.where(away, OUTSIDE, serving)),
        serving_rsrp_dbm=serving_rsrp,
        sinr_db=sinr_db,
        rs_sinr_db=np.where(no_service, -20.0, _db(rs_sinr)),
        rsrq_db=np.where(no_service, -30.0, rsrq),
        confused=confused & ~no_service & ~away,
        best_margin_db=margin,
    )
