"""The radio and traffic models against hand-computed 3GPP values and physical properties:
TR 38.901 path loss and LOS probability, the sector antenna pattern, RSRP/SINR/RSRQ, PCI
collisions, a DOWN cell, link adaptation, the Shannon bound, load, scheduling and determinism."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from telcoenv.domains.network import layout, radio, traffic
from telcoenv.domains.network.parameters import PROFILE

# --- TR 38.901 by hand ---------------------------------------------------------------------------


def _uma_los(d2d: float, fc: float = 3.5, h_bs: float = 25.0, h_ut: float = 1.5) -> float:
    d3d = math.hypot(d2d, h_bs - h_ut)
    bp = 4 * (h_bs - 1) * (h_ut - 1) * fc * 1e9 / 299_792_458.0
    if d2d <= bp:
        return 28 + 22 * math.log10(d3d) + 20 * math.log10(fc)
    return (
        28 + 40 * math.log10(d3d) + 20 * math.log10(fc) - 9 * math.log10(bp**2 + (h_bs - h_ut) ** 2)
    )


def _uma_nlos(d2d: float, fc: float = 3.5, h_bs: float = 25.0, h_ut: float = 1.5) -> float:
    d3d = math.hypot(d2d, h_bs - h_ut)
    nlos = 13.54 + 39.08 * math.log10(d3d) + 20 * math.log10(fc) - 0.6 * (h_ut - 1.5)
    return max(_uma_los(d2d, fc, h_bs, h_ut), nlos)


# The domain reference's table (telecom_domain.md §2.2), UMa at 3.5 GHz, h_UT 1.5 m.
REFERENCE_UMA = {
    50: (77.2, 92.5),
    100: (83.1, 103.0),
    200: (89.6, 114.5),
    300: (93.4, 121.3),
    500: (98.3, 129.9),
    800: (105.5, 137.9),
    1000: (109.4, 141.7),
    1500: (116.5, 148.5),
    2000: (121.4, 153.4),
}


@pytest.mark.parametrize("d2d", sorted(REFERENCE_UMA))
def test_uma_path_loss_matches_the_reference_table(d2d):
    los, nlos = REFERENCE_UMA[d2d]
    got_los = float(radio.pathloss_db("UMa", np.array(float(d2d)), 3.5, 25.0, 1.5, True))
    got_nlos = float(radio.pathloss_db("UMa", np.array(float(d2d)), 3.5, 25.0, 1.5, False))
    assert got_los == pytest.approx(_uma_los(d2d)) and got_los == pytest.approx(los, abs=0.06)
    assert got_nlos == pytest.approx(_uma_nlos(d2d)) and got_nlos == pytest.approx(nlos, abs=0.06)


def test_umi_rma_and_inh_path_loss_by_hand():
    fc = 3.5
    # UMi LOS, below the breakpoint (4 x 9 x 0.5 x 3.5e9 / c = 210 m): 32.4 + 21 log d3D.
    d3d = math.hypot(100, 10 - 1.5)
    assert float(radio.pathloss_db("UMi", np.array(100.0), fc, 10.0, 1.5, True)) == pytest.approx(
        32.4 + 21 * math.log10(d3d) + 20 * math.log10(fc)
    )
    # UMi NLOS: 22.4 + 35.3 log d3D + 21.3 log fc (above the LOS value there).
    assert float(radio.pathloss_db("UMi", np.array(100.0), fc, 10.0, 1.5, False)) == pytest.approx(
        22.4 + 35.3 * math.log10(d3d) + 21.3 * math.log10(fc)
    )
    # InH LOS and NLOS at 20 m (h 3 m).
    d3d = math.hypot(20, 3 - 1.5)
    assert float(radio.pathloss_db("InH", np.array(20.0), fc, 3.0, 1.5, True)) == pytest.approx(
        32.4 + 17.3 * math.log10(d3d) + 20 * math.log10(fc)
    )
    assert float(radio.pathloss_db("InH", np.array(20.0), fc, 3.0, 1.5, False)) == pytest.approx(
        17.3 + 38.3 * math.log10(d3d) + 24.9 * math.log10(fc)
    )
    # RMa LOS below its breakpoint (2 pi 35 x 1.5 x 3.5e9 / c = 3.85 km), h 5 m.
    d3d, h = math.hypot(1000, 35 - 1.5), 5.0
    expected = (
        20 * math.log10(40 * math.pi * d3d * fc / 3)
        + min(0.03 * h**1.72, 10) * math.log10(d3d)
        - min(0.044 * h**1.72, 14.77)
        + 0.002 * math.log10(h) * d3d
    )
    assert float(radio.pathloss_db("RMa", np.array(1000.0), fc, 35.0, 1.5, True)) == pytest.approx(
        expected
    )


def test_los_probability_by_hand():
    d = 100.0
    uma = 18 / d + math.exp(-d / 63) * (1 - 18 / d)
    umi = 18 / d + math.exp(-d / 36) * (1 - 18 / d)
    assert float(radio.los_probability("UMa", np.array(d), 1.5)) == pytest.approx(uma)
    assert float(radio.los_probability("UMi", np.array(d), 1.5)) == pytest.approx(umi)
    assert float(radio.los_probability("RMa", np.array(d), 1.5)) == pytest.approx(
        math.exp(-(d - 10) / 1000)
    )
    assert float(radio.los_probability("InH", np.array(30.0), 1.5)) == pytest.approx(
        math.exp(-25 / 70.8)
    )
    # A UE high up in a building sees more LOS (C'(h_UT) for h_UT > 13 m).
    assert radio.los_probability("UMa", np.array(60.0), 22.5) > radio.los_probability(
        "UMa", np.array(60.0), 1.5
    )


@pytest.mark.parametrize("d2d", [10.0, 30.0, 100.0, 400.0, 1500.0, 4000.0])
@pytest.mark.parametrize("scenario", ["UMa", "UMi", "RMa"])
def test_nlos_is_never_below_los_and_loss_grows_with_distance(scenario, d2d):
    los = radio.pathloss_db(scenario, np.array([d2d, d2d * 1.5]), 3.5, 25.0, 1.5, True)
    nlos = radio.pathloss_db(scenario, np.array([d2d, d2d * 1.5]), 3.5, 25.0, 1.5, False)
    assert (nlos >= los - 1e-9).all()
    assert los[1] > los[0] and nlos[1] > nlos[0]


def test_o2i_low_loss_model_by_hand():
    fc = 3.5
    glass, concrete = 2 + 0.2 * fc, 5 + 4 * fc
    wall = 5 - 10 * math.log10(0.3 * 10 ** (-glass / 10) + 0.7 * 10 ** (-concrete / 10))
    assert float(radio.o2i_loss_db(fc, np.array(10.0))) == pytest.approx(wall + 5.0)


# --- antenna --------------------------------------------------------------------------------------


def _gain(bearing: float, depression: float, tilt: float = 6.0, beam: float = 10.0) -> float:
    return float(
        radio.antenna_gain_db(
            np.array(bearing), np.array(depression), np.array(tilt), np.array(beam), np.array(17.0)
        )
    )


def test_the_sector_pattern_by_hand():
    assert _gain(0, 6) == 17.0  # boresight, on the tilt
    assert _gain(32.5, 6) == pytest.approx(14.0)  # half the horizontal beamwidth: -3 dB
    assert _gain(0, 11) == pytest.approx(14.0)  # half the vertical beamwidth below the tilt
    assert _gain(180, 6) == pytest.approx(17 - 30)  # front-to-back ratio
    assert _gain(90, 40) == pytest.approx(17 - 30)  # attenuation capped at A_m
    # 12 (phi / 65)^2 and 12 ((theta - tilt) / 10)^2 add up below the cap.
    assert _gain(20, 9) == pytest.approx(17 - 12 * (20 / 65) ** 2 - 12 * (3 / 10) ** 2)


# --- a cluster ------------------------------------------------------------------------------------


def _cluster(area="urban", role="macro", n=7, seed=5, ues=240, power=None, tilt=None):
    spacing = {"urban": 600.0, "suburban": 1500.0, "rural": 6000.0, "indoor": 80.0}[area]
    angles = np.radians(np.arange(n - 1) * 360.0 / (n - 1))
    positions = [(0.0, 0.0)] + [(spacing * math.sin(a), spacing * math.cos(a)) for a in angles]
    azimuths = [90.0] + [float((math.degrees(a) + 180) % 360) for a in angles]
    configs = [dict(PROFILE[role]) for _ in range(n)]
    if power is not None:
        configs[0]["tx_power_dbm"] = power
    if tilt is not None:
        configs[0]["tilt_deg"] = tilt
    cells = layout.cells_of(area, role, positions, azimuths, list(range(1, n + 1)), configs,
                            [True] * n)  # fmt: skip
    rng = np.random.default_rng(seed)
    drawn, _ = layout.draw_ues(area, role, cells, rng, count=ues)
    return cells, drawn, radio.couple(cells, drawn, rng)


def test_the_same_seed_gives_the_same_cluster():
    a, b = _cluster(seed=9), _cluster(seed=9)
    assert np.array_equal(a[2].loss_db, b[2].loss_db) and np.array_equal(a[1].x, b[1].x)
    assert not np.array_equal(a[2].loss_db, _cluster(seed=10)[2].loss_db)


def test_transmit_power_moves_rsrp_by_as_many_db():
    cells, _, coupling = _cluster()
    load = np.full(cells.count, 0.5)
    base = radio.measure(cells, coupling, load)
    boost = np.array([3.0, 0, 0, 0, 0, 0, 0])
    louder = radio.measure(cells.with_(tx_power_dbm=cells.tx_power_dbm + boost), coupling, load)
    assert np.allclose(louder.rsrp_dbm[0] - base.rsrp_dbm[0], 3.0)
    assert np.allclose(louder.rsrp_dbm[1:], base.rsrp_dbm[1:])


def test_downtilt_shrinks_the_footprint():
    """More downtilt: the far UEs of the serving sector lose RSRP, the serving cell serves
    fewer of them (the neighbours take them), and overshoot beyond the first ring falls."""
    cells, ues, coupling = _cluster()
    load = np.full(cells.count, 0.5)
    served = []
    far_rsrp = []
    far = coupling.distance_m[0] > 500
    for tilt in (0.0, 6.0, 12.0):
        tilted = cells.with_(tilt_deg=np.array([tilt, *cells.tilt_deg[1:]]))
        measured = radio.measure(tilted, coupling, load)
        served.append(int((measured.serving == 0).sum()))
        far_rsrp.append(float(np.median(measured.rsrp_dbm[0][far])))
    assert served[0] > served[1] > served[2]
    assert far_rsrp[0] > far_rsrp[1] > far_rsrp[2]


@settings(max_examples=25, deadline=None)
@given(st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_sinr_falls_as_the_neighbours_load_rises(low, high):
    low, high = sorted((low, high))
    cells, _, coupling = _cluster()
    quiet = radio.measure(cells, coupling, np.array([0.5] + [low] * 6))
    busy = radio.measure(cells, coupling, np.array([0.5] + [high] * 6))
    assert (busy.sinr_db <= quiet.sinr_db + 1e-9).all()
    assert np.array_equal(busy.serving, quiet.serving)  # RSRP, and so the server, do not move


def test_a_down_cell_radiates_nothing_and_its_users_go_elsewhere():
    cells, _, coupling = _cluster()
    load = np.full(cells.count, 0.5)
    up = radio.measure(cells, coupling, load)
    down = radio.measure(cells.with_(active=np.array([False] + [True] * 6)), coupling, load)
    assert not (down.serving == 0).any() and (up.serving == 0).any()
    assert np.isneginf(down.rsrp_dbm[0]).all()
    moved = up.serving == 0
    assert (down.serving_rsrp_dbm[moved] < up.serving_rsrp_dbm[moved]).all()


def test_each_site_has_two_sibling_sectors_on_its_own_links():
    """The sectors a cluster does not report on: per site, its antenna turned 120 degrees
    either way (position, height, power and tilt kept, the beam on boresight, no PCI), and
    the same path, shadowing and building loss to every UE as their site's cell."""
    cells, _, coupling = _cluster(n=3)
    cells = cells.with_(beam_offset_deg=np.array([25.0, 0.0, 0.0]))
    siblings = layout.sibling_sectors(cells)
    assert siblings.count == 6
    assert siblings.azimuth_deg.tolist() == [
        (cells.azimuth_deg[site] + turn) % 360.0 for site in range(3) for turn in (-120.0, 120.0)
    ]
    assert np.array_equal(siblings.x, np.repeat(cells.x, 2))
    assert np.array_equal(siblings.tilt_deg, np.repeat(cells.tilt_deg, 2))
    assert (siblings.beam_offset_deg == 0).all() and (siblings.pci == -1).all()
    links = coupling.of_cells(np.repeat(np.arange(3), 2))
    assert np.array_equal(links.loss_db[1], coupling.loss_db[0])
    assert np.array_equal(links.loss_db[4], coupling.loss_db[2])
    # A UE on a sibling's boresight hears the sibling louder than the site's own cell.
    rsrp = radio.rsrp_of(siblings, links)
    behind = np.flatnonzero(
        np.abs(radio.wrap_deg(coupling.bearing_deg[0] - siblings.azimuth_deg[0])) < 20
    )
    own = radio.rsrp_of(cells, coupling)
    assert behind.size and (rsrp[0, behind] > own[0, behind]).all()


def test_a_ue_that_hears_a_cell_outside_the_cluster_louder_camps_there():
    """Beyond the cluster's sectors a sibling sector serves a UE unless a cluster cell (with
    its CIO) is stronger: the UE is then nobody's in the cluster, loads no cell, has service
    and bounds every cluster cell's dominance margin; a UE load balancing forces stays."""
    cells, _, coupling = _cluster()
    load = np.full(cells.count, 0.5)
    base = radio.measure(cells, coupling, load)
    best = base.rsrp_dbm.max(axis=0)
    outside = np.full(best.size, -np.inf)
    outside[:10] = best[:10] + 5.0
    outside[10:20] = best[10:20] - 1.0
    measured = radio.measure(cells, coupling, load, outside_dbm=outside)
    assert (measured.serving[:10] == radio.OUTSIDE).all()
    assert np.array_equal(measured.serving[10:], base.serving[10:])
    assert (measured.best_margin_db[10:20] <= 1.0 + 1e-9).all()
    assert np.array_equal(measured.best_margin_db[20:], base.best_margin_db[20:])
    force = np.full(best.size, -1)
    force[0] = 3
    forced = radio.measure(cells, coupling, load, force=force, outside_dbm=outside)
    assert forced.serving[0] == 3 and (forced.serving[1:10] == radio.OUTSIDE).all()
    served = traffic.serve(
        _traffic_cells(), measured.serving, measured.sinr_db, measured.rs_sinr_db,
        np.ones(best.size), np.full(best.size, 0.3),
    )  # fmt: skip
    assert served.users.sum() == pytest.approx(best.size - 10)


def test_pci_mod3_and_same_pci_collisions():
    cells, _, coupling = _cluster()
    load = np.full(cells.count, 0.3)
    clean = radio.measure(cells, coupling, load)
    # A neighbour on the serving cell's mod-3 group: its reference signals land on the serving
    # cell's at full power, so the RS-SINR of the UEs that hear it best falls; data SINR not.
    clash = cells.with_(pci=np.array([1, 4, 8, 9, 11, 12, 14]))  # 1 and 4: both 1 mod 3
    mod3 = radio.measure(clash, coupling, load)
    others = clean.rsrp_dbm.copy()
    others[0] = -np.inf
    exposed = (clean.serving == 0) & (np.argmax(others, axis=0) == 1)
    assert exposed.sum() >= 5
    assert np.allclose(mod3.sinr_db, clean.sinr_db)
    assert (clean.rs_sinr_db[exposed] - mod3.rs_sinr_db[exposed]).mean() > 1.0
    assert not mod3.confused.any()
    same = radio.measure(cells.with_(pci=np.array([1, 1, 8, 9, 11, 12, 14])), coupling, load)
    hears = (clean.serving == 0) & (clean.rsrp_dbm[1] > radio.NO_SERVICE_DBM)
    assert (
        same.confused[hears].all()
        and not same.confused[clean.serving == 0][~hears[clean.serving == 0]].any()
    )


def test_rsrq_of_an_empty_and_a_full_cell():
    """A single cell at high SNR: RSRQ -3 dB empty (reference signals only), -10.8 dB full."""
    cells, _, coupling = _cluster(n=1, area="indoor", role="pico", ues=40)
    near = coupling.distance_m[0] < 15
    empty = radio.measure(cells, coupling, np.array([0.0]))
    full = radio.measure(cells, coupling, np.array([1.0]))
    assert np.allclose(empty.rsrq_db[near], 10 * math.log10(1 / (12 * (1 / 6))), atol=0.2)
    assert np.allclose(full.rsrq_db[near], -10 * math.log10(12), atol=0.2)


# --- traffic --------------------------------------------------------------------------------------


def _traffic_cells(n=7, reservation=0.05, scheduler="PF", target=0.1, layers=4):
    return traffic.CellTraffic(
        n_prb=np.full(n, 273.0),
        scs_khz=np.full(n, 30.0),
        layers=np.full(n, layers),
        reservation=np.full(n, reservation),
        scheduler=(scheduler,) * n,
        max_ue_per_tti=np.full(n, 16),
        bler_target=np.full(n, target),
    )


def _served(demand=0.3, **kwargs):
    cells, ues, coupling = _cluster()
    measured = radio.measure(cells, coupling, np.full(cells.count, 0.5))
    weights = np.full(ues.count, 2.0)
    result = traffic.serve(
        _traffic_cells(**kwargs),
        measured.serving,
        measured.sinr_db,
        measured.sinr_db,  # no RS collision
        weights,
        np.full(ues.count, demand),
    )
    return measured, result


def test_no_ue_beats_the_shannon_bound():
    """Per UE: goodput alone in the cell at most 4 layers of Shannon on the carrier's REs."""
    measured, result = _served()
    served = measured.serving >= 0
    bound = (
        4
        * np.log2(1 + 10 ** (measured.sinr_db / 10))
        * traffic.re_rate_per_s(np.array(273.0), np.array(30.0))
        / 1e6
    )
    assert (result.ue_peak_mbps[served] <= bound[served] + 1e-9).all()
    assert (result.ue_throughput_mbps <= result.ue_peak_mbps + 1e-9).all()


def test_the_bler_follows_the_olla_target_and_goodput_peaks_near_ten_percent():
    """Where the loop converges the BLER is the target, elsewhere the CQI report's 3 %: 0.7 T +
    0.9 % above the lowest MCS; below it that MCS's curve (BLER rises toward 1)."""
    goodput = {}
    for target in (0.02, 0.1, 0.25):
        measured, result = _served(target=target)
        mine = measured.serving == 0
        above = mine & (measured.sinr_db > traffic.CQI_SINR_DB[0])
        assert np.allclose(result.ue_bler[above], 0.7 * target + 0.3 * 0.03)
        edge = mine & (measured.sinr_db < traffic.CQI_SINR_DB[0] - 3.0)
        assert (result.ue_bler[edge] > 0.5).all()
        goodput[target] = float(np.median(result.ue_peak_mbps[mine]))
    assert goodput[0.1] > goodput[0.25]
    # A very conservative target costs rate too (the MCS runs well below the channel).
    assert goodput[0.1] > goodput[0.02]


def test_load_and_delay_rise_with_demand_and_throughput_falls():
    loads, delays, p50 = [], [], []
    for demand in (0.05, 0.2, 0.5, 2.0):
        measured, result = _served(demand=demand)
        mine = measured.serving == 0
        loads.append(float(result.load[0]))
        delays.append(float(result.sched_delay_ms[0]))
        p50.append(float(np.median(result.ue_throughput_mbps[mine])))
    assert loads == sorted(loads) and delays == sorted(delays) and p50 == sorted(p50, reverse=True)
    assert loads[-1] == 1.0 and loads[0] < 0.5


def test_reserved_prbs_take_capacity_away():
    low = _served(reservation=0.05)[1]
    high = _served(reservation=0.3)[1]
    assert high.load[0] > low.load[0]
    assert (high.ue_peak_mbps <= low.ue_peak_mbps + 1e-9).all()


def test_max_ci_is_less_fair_than_round_robin_and_pf():
    fairness = {
        s: float(_served(scheduler=s, demand=2.0)[1].fairness[0]) for s in traffic.SCHEDULERS
    }
    assert fairness["MAX_CI"] < fairness["RR"] and fairness["MAX_CI"] < fairness["PF"]


def test_users_are_conserved_across_cells():
    measured, result = _served()
    served = measured.serving >= 0
    assert result.users.sum() == pytest.approx(2.0 * served.sum())


def test_the_cqi_table_and_the_olla_margin():
    assert float(traffic.spectral_efficiency(np.array(35.43))) == pytest.approx(7.4063)
    assert float(traffic.spectral_efficiency(np.array(11.05))) == pytest.approx(1.4766)
    assert float(traffic.spectral_efficiency(np.array(-10.0))) == 0.0
    margin = float(traffic.olla_margin_db(0.25))
    assert 1 / (1 + 9 * math.exp(traffic.BLER_SLOPE * margin)) == pytest.approx(0.25)


# --- uplink -------------------------------------------------------------------------------------


def test_the_uplink_fills_as_many_prbs_as_the_ues_power_reaches():
    """By hand, a path of 110 dB (coupling loss less the antenna gain): power control asks
    -85 + 0.8 x 110 = 3 dBm per PRB, so 23 dBm fills 10^(20/10) = 100 PRBs, each at an SINR of
    3 - 110 - (-174 + 10 log10(360 kHz) + 5) - (1 + 6 x 0.5) = 2.44 dB."""
    loss, gain = np.array([127.0]), np.array([17.0])
    prbs = traffic.uplink_prbs(loss, gain, np.array([273.0]))
    assert prbs[0] == pytest.approx(100.0)
    noise = -174.0 + 10.0 * math.log10(360e3) + 5.0
    sinr = traffic.uplink_sinr_db(loss, gain, np.array([0.5]), prbs)
    assert sinr[0] == pytest.approx(3.0 - 110.0 - noise - 4.0)
    # Near the mast the carrier runs out first (bandwidth-limited); at the edge one PRB at most.
    near = traffic.uplink_prbs(np.array([90.0]), gain, np.array([273.0]))
    edge = traffic.uplink_prbs(np.array([160.0]), gain, np.array([273.0]))
    assert near[0] == 273.0 and edge[0] == 1.0


@given(st.floats(60.0, 170.0), st.floats(60.0, 170.0))
def test_a_farther_ue_never_sends_faster(a, b):
    near, far = sorted((a, b))
    gain, carrier, load = np.array([17.0]), np.array([273.0]), np.array([0.5])

    def rate(loss: float) -> float:
        coupling = np.array([loss])
        prbs = traffic.uplink_prbs(coupling, gain, carrier)
        sinr = traffic.uplink_sinr_db(coupling, gain, load, prbs)
        return float(traffic.spectral_efficiency(sinr)[0] * prbs[0])

    assert rate(far) <= rate(near) + 1e-9
