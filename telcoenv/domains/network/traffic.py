"""The traffic model: link adaptation, BLER, scheduling, PRB load, user throughput and delay.

From what the UEs measure (:mod:`telcoenv.domains.network.radio`) and what they ask for, per
cell:

* **Link adaptation** (TS 38.214 Table 5.2.2.1-3, the 256QAM CQI table, with the SINR each CQI
  needs at 10 % BLER): a UE's spectral efficiency per layer is interpolated between the table's
  points at its *effective* SINR. Outer-loop link adaptation steers the initial BLER to its
  target T: with the BLER of an MCS at SINR margin x (dB above the MCS's 10 % point)
  ``BLER(x) = 1 / (1 + 9 exp(k x))``, the loop settles at ``x_T = ln((1 - T) / (9 T)) / k``,
  so a 25 % target runs the MCS about 0.85 dB above what the channel supports: more bits per
  transmission, more retransmissions, less goodput and more delay; a 5 % target the other way.
  The loop converges only in bursts long enough (:data:`OLLA_CONVERGED` of the traffic); the
  rest runs at the UE's conservative CQI report (about 3 % BLER), so the measured initial BLER
  is ``0.7 T + 0.3 x 3 %``: 7.9 % at a 10 % target. Below the lowest MCS's 10 % point there
  is no backoff left and that MCS's BLER curve sets the BLER (a coverage edge).
  BLER rises above T where the CQI cannot be trusted: a reference-signal SINR far below the
  data SINR (a PCI mod-3 collision), fast UEs, a beam that hops.
* **Rank**: layers by SINR (1 below 5 dB, 2 to 12 dB, 3 to 18 dB, then the cell's maximum).
* **Capacity**: ``N_PRB (1 - reservation) x 12 subcarriers x 14 symbols per slot x slots per
  second x (1 - overhead)`` resource elements, times the UE's SE and layers (TS 38.306 §4.1.2).
* **Load and sharing** (flow-level processor sharing): the offered traffic of the cell's UEs
  fills a share ρ of its PRBs (PRB utilisation, ≤ 1); a UE's throughput is its peak rate times
  its time share ``max(1 - ρ, 1 / N) x f_u`` (N the cell's users, all active near and past
  saturation), ``f_u`` the scheduler's tilt: round robin equal time, PF equal time plus
  multi-user diversity gain, MAX-CI time to the best UEs (edge UEs starve, fairness falls).
* **Delay**: scheduling delay from the queue (``ρ / (1 - ρ)`` slots, and more when more users
  wait than ``max_ue_per_tti`` serves: a quarter of the connected users at full load), HARQ
  retransmissions (8 ms round trip per retransmission at the operating BLER), and what
  transport and core add (:mod:`telcoenv.domains.network.
  transport`).
* **Uplink**: open-loop power control (P0 -85 dBm per PRB, α 0.8, 23 dBm maximum); UL SINR
  against the base station's noise and an interference rise that follows the neighbours' load.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# --- link adaptation ------------------------------------------------------------------------------

#: TS 38.214 Table 5.2.2.1-3 (256QAM): SE per CQI 1-15, and the SINR each needs at 10 % BLER.
CQI_SE = np.array(
    [0.1523, 0.3770, 0.8770, 1.4766, 1.9141, 2.4063, 2.7305, 3.3223, 3.9023, 4.5234, 5.1152,
     5.5547, 6.2266, 6.9141, 7.4063]
)  # fmt: skip
CQI_SINR_DB = np.array(
    [-3.46, 1.54, 6.54, 11.05, 13.54, 16.04, 17.54, 20.04, 22.04, 24.43, 26.93, 27.43, 29.43,
     32.43, 35.43]
)  # fmt: skip
#: Slope of a BLER curve around its 10 % point, per dB.
BLER_SLOPE = 1.3
#: HARQ round-trip time, ms.
HARQ_RTT_MS = 8.0
#: Share of resource elements left for data after reference signals, control and guard.
OVERHEAD = 0.14


def spectral_efficiency(sinr_db: np.ndarray) -> np.ndarray:
    """Bits per RE per layer at a SINR: the CQI table's SE, interpolated (0 below CQI 1)."""
    se = np.interp(sinr_db, CQI_SINR_DB, CQI_SE, left=0.0, right=CQI_SE[-1])
    # Below CQI 1 the link fails; a dB under it the SE falls to zero rather than stepping.
    return np.where(sinr_db < CQI_SINR_DB[0] - 1.0, 0.0, se)


def olla_margin_db(target_bler: np.ndarray | float) -> np.ndarray:
    """The SINR margin outer-loop link adaptation settles at for a BLER target (negative: the MCS
    runs above what the channel supports).

    >>> float(olla_margin_db(0.1))
    0.0
    >>> round(float(olla_margin_db(0.25)), 2)
    -0.85
    """
    t = np.clip(np.asarray(target_bler, dtype=float), 0.005, 0.6)
    return np.log((1.0 - t) / (9.0 * t)) / BLER_SLOPE


#: The reference-signal SINR may sit this far below the data SINR before the CQI misleads
#: link adaptation (a PCI mod-3 collision puts it further).
MISLEADING_DB = 6.0
#: Share of a cell's connected users with data waiting at a time, at full load.
ACTIVE_SHARE = 0.25
#: Share of traffic in bursts long enough for outer-loop link adaptation to converge on its
#: target; shorter bursts run on the UE's CQI report, which UEs make with a margin (BLER about
#: :data:`CQI_REPORT_BLER` at the reported CQI).
OLLA_CONVERGED, CQI_REPORT_BLER = 0.7, 0.03


def operating_bler(target: np.ndarray | float, sinr_db: np.ndarray) -> np.ndarray:
    """The initial BLER a UE runs at: the OLLA target where the loop converged, the CQI
    report's elsewhere; below the lowest MCS's 10 % point no backoff is left and the BLER curve
    of that MCS takes over.

    >>> round(float(operating_bler(0.1, np.array(10.0))), 3)
    0.079
    """
    converged = OLLA_CONVERGED * np.asarray(target) + (1.0 - OLLA_CONVERGED) * CQI_REPORT_BLER
    below = CQI_SINR_DB[0] - np.asarray(sinr_db, dtype=float)
    edge = 1.0 / (1.0 + 9.0 * np.exp(-BLER_SLOPE * below))
    return np.maximum(converged, np.where(below > 0, edge, 0.0))


def rank(sinr_db: np.ndarray, max_layers: np.ndarray) -> np.ndarray:
    """MIMO layers a UE gets at its SINR, up to the cell's."""
    layers = np.select([sinr_db < 5.0, sinr_db < 12.0, sinr_db < 18.0], [1, 2, 3], default=4)
    return np.minimum(layers, max_layers)


# --- the cells' traffic --------------------------------------------------------------------------

SCHEDULERS = ("PF", "RR", "MAX_CI")
#: The highest load the queueing delay is read at (an overloaded cell's buffers are bounded).
RHO_CAP = 0.97
# Per scheduler: the exponent of a UE's rate in its time share, and the multi-user diversity gain.
_SCHEDULING = {"RR": (0.0, 1.0), "PF": (0.0, 1.15), "MAX_CI": (3.0, 1.25)}


@dataclass(frozen=True)
class CellTraffic:
    """Per-cell traffic settings (arrays, one entry per cell)."""

    n_prb: np.ndarray
    scs_khz: np.ndarray
    layers: np.ndarray  # the cell's MIMO layers
    reservation: np.ndarray  # share of PRBs held back from user traffic
    scheduler: tuple[str, ...]
    max_ue_per_tti: np.ndarray
    bler_target: np.ndarray  # OLLA target, share


@dataclass(frozen=True)
class Traffic:
    """Per-UE and per-cell results (cells' arrays indexed like the cells)."""

    ue_throughput_mbps: np.ndarray  # DL, while active
    ue_peak_mbps: np.ndarray  # DL, alone in the cell
    ue_bler: np.ndarray
    ue_se: np.ndarray  # bits per RE, all layers
    ue_ul_mbps: np.ndarray
    load: np.ndarray  # PRB utilisation, [0, 1]
    offered_load: np.ndarray  # demand over capacity (> 1: overloaded)
    users: np.ndarray  # active users (weighted)
    bler: np.ndarray  # PRB-weighted operating BLER
    sched_delay_ms: np.ndarray  # p95
    harq_delay_ms: np.ndarray
    cell_throughput_mbps: np.ndarray
    fairness: np.ndarray  # Jain's index over the cell's UEs' throughput


#: The TDD frame (DDDSU, the special slot 10 DL : 2 guard : 2 UL symbols, TS 38.213 §11.1):
#: the shares of its 70 symbols that carry downlink and uplink.
DL_SHARE, UL_SHARE = 52.0 / 70.0, 16.0 / 70.0


def re_rate_per_s(n_prb: np.ndarray, scs_khz: np.ndarray) -> np.ndarray:
    """Downlink data resource elements per second a cell's PRBs carry: 14 symbols per slot,
    the TDD frame's downlink share of them (:data:`DL_SHARE`), less the overhead.

    With 256QAM's top spectral efficiency (7.41 b/RE) on 4 layers, a 100 MHz carrier at 30 kHz
    (273 PRBs) peaks at TS 38.306 §4.1.2's rate for the frame, 1.74 Gb/s:

    >>> round(float(re_rate_per_s(np.array(273.0), np.array(30.0)) * 4 * 948 / 1024 * 8) / 1e9, 2)
    1.74
    """
    slots_per_s = 1000.0 * scs_khz / 15.0
    return n_prb * 12.0 * 14.0 * slots_per_s * DL_SHARE * (1.0 - OVERHEAD)


def _jain_per_cell(
    values: np.ndarray, weights: np.ndarray, cell: np.ndarray, served: np.ndarray, users: np.ndarray
) -> np.ndarray:
    """Jain's index of each cell's UEs' values, weighted by the users each UE stands for."""
    n = len(users)
    total = np.maximum(users, 1e-12)
    mean = np.bincount(cell[served], weights=(weights * values)[served], minlength=n) / total
    square = np.bincount(cell[served], weights=(weights * values**2)[served], minlength=n) / total
    return np.where(square > 0, np.minimum(1.0, mean**2 / np.where(square > 0, square, 1.0)), 1.0)


def serve(
    cells: CellTraffic,
    serving: np.ndarray,
    sinr_db: np.ndarray,
    rs_sinr_db: np.ndarray,
    weight: np.ndarray,
    demand_mbps: np.ndarray,
    impairment: np.ndarray | None = None,
) -> Traffic:
    """Link adaptation, load and sharing for every cell.

    ``serving``: each UE's cell (negative: none of these serves it); ``weight``: how many
    active users a UE stands for; ``demand_mbps``: a user's average offered DL traffic;
    ``impairment``: per UE, the share of transmissions lost beyond the OLLA target for reasons
    the CQI does not see (a beam that hops, a UE that moves fast), in [0, 1).
    """
    n_cells = len(cells.n_prb)
    ues = len(serving)
    served = serving >= 0
    cell = np.where(served, serving, 0)
    target = cells.bler_target[cell]
    margin = olla_margin_db(target)
    # The reference signals the CQI is measured on: far below the data SINR, CQI misleads.
    misleading = np.clip((sinr_db - rs_sinr_db - MISLEADING_DB) / 30.0, 0.0, 0.2)
    lost = 1.0 - (1.0 - misleading) * (1.0 - (impairment if impairment is not None else 0.0))
    bler = np.where(served, operating_bler(target, sinr_db), 0.0)
    bler = np.where(served, bler + (1.0 - bler) * lost, 0.0)
    layers = rank(sinr_db, cells.layers[cell])
    se = spectral_efficiency(sinr_db - margin) * layers
    usable = re_rate_per_s(cells.n_prb, cells.scs_khz) * (1.0 - cells.reservation)
    peak = np.where(served, se * usable[cell] * (1.0 - bler) / 1e6, 0.0)  # Mbps, goodput

    # A UE no MCS fits (SINR a dB below CQI 1) gets no data through: it offers no load here,
    # and the counters of access failures and radio link failures count it instead.
    need = np.where(served & (peak > 0), weight * demand_mbps / np.maximum(peak, 1e-9), 0.0)
    offered = np.bincount(cell[served], weights=need[served], minlength=n_cells)
    users = np.bincount(cell[served], weights=weight[served], minlength=n_cells)
    load = np.minimum(offered, 1.0)

    # Processor sharing, all cells at once: a flow gets the idle share (1 - rho), tilted by
    # the scheduler; near and past saturation all the cell's users are active and split the
    # time.
    exponent, gain = (
        np.array([_SCHEDULING.get(name, _SCHEDULING["PF"])[i] for name in cells.scheduler])
        for i in (0, 1)
    )
    power = exponent[cell]
    tilt = np.where(power > 0, np.maximum(peak, 0.0) ** power, 1.0)
    tilt_mean = np.bincount(cell[served], weights=(weight * tilt)[served], minlength=n_cells)
    tilt = tilt / np.maximum(tilt_mean / np.maximum(users, 1e-12), 1e-12)[cell]
    base = np.maximum(1.0 - offered, 1.0 / np.maximum(users, 1.0))
    throughput = np.where(served, np.minimum(peak * gain[cell] * base[cell] * tilt, peak), 0.0)
    fairness = _jain_per_cell(throughput, weight, cell, served, users)
    carried = weight * np.minimum(demand_mbps, throughput)
    cell_tput = np.bincount(cell[served], weights=carried[served], minlength=n_cells)
    # Queueing: rho / (1 - rho) slots of wait at the p95, more when more users wait than one
    # slot schedules.
    rho = np.minimum(offered, RHO_CAP)
    slot_ms = 15.0 / cells.scs_khz
    active = users * rho * ACTIVE_SHARE
    waiting = np.maximum(1.0, active / np.maximum(cells.max_ue_per_tti, 1.0))
    sched = np.where(users > 0, slot_ms * (2.0 + 3.0 * waiting * rho / (1.0 - rho)), 0.0)
    # The cell's BLER counts transmissions: a UE no MCS fits sends none.
    sending = served & (peak > 0)
    volume = np.bincount(cell[sending], weights=weight[sending], minlength=n_cells)
    weighted_bler = np.bincount(
        cell[sending], weights=(bler * weight)[sending], minlength=n_cells
    ) / np.maximum(volume, 1e-9)
    harq = HARQ_RTT_MS * weighted_bler / np.maximum(1.0 - weighted_bler, 0.05)
    return Traffic(
        ue_throughput_mbps=throughput,
        ue_peak_mbps=peak,
        ue_bler=bler,
        ue_se=se,
        ue_ul_mbps=np.zeros(ues),
        load=load,
        offered_load=offered,
        users=users,
        bler=weighted_bler,
        sched_delay_ms=sched,
        harq_delay_ms=harq,
        cell_throughput_mbps=cell_tput,
        fairness=fairness,
    )


# --- uplink --------------------------------------------------------------------------------------

#: Open-loop power control of the PUSCH (TS 38.213 §7.1): P0 per PRB, α, UE maximum power.
UL_P0_DBM, UL_ALPHA, UE_MAX_DBM = -85.0, 0.8, 23.0
BS_NOISE_FIGURE_DB = 5.0


def uplink_prbs(
    coupling_loss_db: np.ndarray, rx_gain_dbi: np.ndarray, n_prb: np.ndarray
) -> np.ndarray:
    """The PRBs a UE can fill when scheduled alone: power control asks ``P0 + alpha PL`` per
    PRB, so ``10^((Pmax - P0 - alpha PL) / 10)`` of them reach the UE's maximum power; never
    more than the carrier has, at least one."""
    path = coupling_loss_db - rx_gain_dbi
    fits = 10.0 ** ((UE_MAX_DBM - (UL_P0_DBM + UL_ALPHA * path)) / 10.0)
    return np.clip(fits, 1.0, n_prb)


def uplink_sinr_db(
    coupling_loss_db: np.ndarray,
    rx_gain_dbi: np.ndarray,
    neighbour_load: np.ndarray,
    prbs: np.ndarray,
) -> np.ndarray:
    """UL SINR per PRB at the serving cell: the power-controlled UE power spread over ``prbs``
    (capped by the UE's maximum), over noise and an interference rise of 1-7 dB with the
    neighbours' load."""
    path = coupling_loss_db - rx_gain_dbi
    per_prb = np.minimum(UL_P0_DBM + UL_ALPHA * path, UE_MAX_DBM - 10.0 * np.log10(prbs))
    noise = -174.0 + 10.0 * math.log10(360e3) + BS_NOISE_FIGURE_DB  # a 30 kHz PRB
    rise = 1.0 + 6.0 * np.clip(neighbour_load, 0.0, 1.0)
    return per_prb - path - noise - rise
