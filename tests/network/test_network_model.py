"""The network model behind an episode (``NetworkDomain(model="physical")``): calibration to the
blueprint's levels, the physics a RAN engineer checks first, fixes judged by their effect."""

from __future__ import annotations

import datetime as dt
import itertools
import json
import math
from functools import cache

import numpy as np
import pytest

import telcoenv
from telcoenv.agents import OracleAgent, run_episode
from telcoenv.domains.network import NetworkDomain, layout, model, radio, transport
from telcoenv.domains.network import simulation as sim
from telcoenv.domains.network.model import evaluate
from telcoenv.domains.network.traffic import re_rate_per_s


@cache
def physical() -> NetworkDomain:
    return NetworkDomain(model="physical")


def _episode(key: str, seed: int, **options):
    env = telcoenv.make(key, domain=physical(), embedder=None, privileged=True, **options)
    env.reset(seed=seed)
    return env, env.unwrapped._episode.setup


def _config_with(state, **changes):
    config = sim.freeze(state.configuration())
    config[f"cell:{state.serving_id}"].update(changes)
    return config


def test_the_model_is_the_default_and_refuses_an_unknown_name():
    assert NetworkDomain().model == "physical"
    assert telcoenv.make("beam_misalignment", embedder=None).unwrapped.domain.model == "physical"
    with pytest.raises(telcoenv.EpisodeOptionError, match="model must be one of"):
        NetworkDomain(model="lookup")


def test_a_snapshot_restores_only_in_the_model_it_was_taken_in():
    """Its actions would replay against other KPIs: refused with the way out. A snapshot taken
    before snapshots named the model was taken in the blueprint model (the default then)."""
    env = telcoenv.make("beam_misalignment", domain=physical(), embedder=None, privileged=True)
    _, info = env.reset(seed=4)
    for call in info["privileged"]["gold_chain"][:2]:
        env.step({"name": call["tool"], "arguments": call["arguments"]})
    state = json.loads(env.unwrapped.get_state().model_dump_json())
    assert state["start"]["world_model"] == "physical"
    blueprint = telcoenv.make(
        "beam_misalignment", domain=NetworkDomain(model="blueprint"), embedder=None
    )
    with pytest.raises(telcoenv.EpisodeOptionError, match=r"model='physical'"):
        blueprint.unwrapped.set_state(state)
    restored, _ = _episode("beam_misalignment", 0)
    restored.unwrapped.set_state(state)
    assert restored.unwrapped.trace.actions == env.unwrapped.trace.actions
    # An older snapshot, without the field: the blueprint model's.
    old = telcoenv.make("beam_misalignment", domain=NetworkDomain(model="blueprint"), embedder=None)
    old.reset(seed=4)
    legacy = json.loads(old.unwrapped.get_state().model_dump_json())
    del legacy["start"]["world_model"]
    blueprint.unwrapped.set_state(legacy)
    with pytest.raises(telcoenv.EpisodeOptionError, match=r"model='blueprint'"):
        restored.unwrapped.set_state(legacy)


@pytest.mark.parametrize(
    ("key", "seed", "rsrp", "sinr", "users", "load"),
    [
        ("throughput_drop_dl", 0, -98.0, 6.0, 240.0, 0.8),
        ("rlf_spike", 1, -112.0, 2.0, 90.0, 0.5),
        ("pci_collision", 2, -95.0, 8.0, 300.0, 0.65),
        ("pingpong_handovers", 3, -100.0, 4.0, 150.0, 0.7),
    ],
)
def test_the_world_is_calibrated_to_the_targets(key, seed, rsrp, sinr, users, load):
    """The serving cell's median RSRP, median SINR, users (where they camp) and PRB load come
    out as asked, and each neighbour's load too."""
    _, setup = _episode(key, seed)
    state = setup.state
    initial = state.initial
    plan = sim.plan_of(initial, _blueprint(setup), {}, np.random.default_rng(seed))
    neighbours = tuple(c.load for c in initial.neighbours)
    targets = model.Targets(rsrp, sinr, users, (load, *neighbours))
    config = initial.configuration()
    world = model.build_world(plan, config, config, targets, np.random.default_rng(seed))
    ev = evaluate(world, config)
    mine = ev.radio.serving == 0
    # Calibration stops early only when every target is within its tolerance.
    assert 1 <= world.calibration_rounds <= model.CALIBRATION_ROUNDS
    assert 0.0 <= world.calibration_error < math.inf
    if world.calibration_rounds < model.CALIBRATION_ROUNDS:
        assert world.calibration_error <= 1.0
    # Load balancing moves border UEs as the load settles: levels within 2.5 dB.
    assert model.median(ev.radio.serving_rsrp_dbm[mine]) == pytest.approx(rsrp, abs=2.5)
    assert model.median(ev.radio.sinr_db[mine]) == pytest.approx(sinr, abs=2.5)
    assert float(world.weight[ev.best_server == 0].sum()) == pytest.approx(users, rel=0.03)
    reservation = config[f"cell:{state.serving_id}"]["prb_reservation_pct"] / 100
    shown = reservation + (1 - reservation) * ev.traffic.load
    # Where neighbours' load balancing hands users to this cell, its load moves in steps; and
    # the search keeps its best round by the largest error of all levels, so one level may be
    # a little off where another would be more (here the SINR, 1.2 dB, at load 0.035).
    pushed = bool((ev.moved & (ev.radio.serving == 0)).any())
    assert shown[0] == pytest.approx(load, abs=0.08 if pushed else 0.04)
    # The neighbours' loads are calibrated together with the serving cell's, but load
    # balancing toggles near its thresholds (a step the damped search can straddle): close.
    assert float(np.median(np.abs(ev.traffic.load[1:] - np.array(neighbours)))) < 0.15


def _blueprint(setup):
    from telcoenv.domains.network.loading import network_catalog

    wanted = setup.state.kpi_bounds
    for blueprints in network_catalog().blueprints.values():
        for blueprint in blueprints:
            if {n: (c.min, c.max) for n, c in blueprint.constraints.items()} == wanted:
                return blueprint
    raise AssertionError("no blueprint")


def _serving_ev(setup, config=None, scale=1.0):
    state = setup.state
    simulation = state.model.simulation
    return simulation.evaluation(config or state.configuration(), scale)


@pytest.mark.parametrize(
    "key", ["throughput_drop_dl", "high_prb_utilization", "slice_qos_degradation", "rlf_spike"]
)
def test_the_best_users_sinr_is_not_capped_by_the_interference_from_beyond(key):
    """The interference from beyond the cluster is a share of the cluster's own power at each
    place, so without shadowing of its own no UE's SINR could pass 1 / share: the best users
    sat 1 dB above the median. With it (each UE's own shadowing of that share) the
    serving cell's best tenth is several dB above its median and some users pass 1 / share,
    while the median stays where calibration put it."""
    for seed in range(2):
        _, setup = _episode(key, seed)
        world = setup.state.model.simulation.world
        ev = _serving_ev(setup)
        sinr = ev.radio.sinr_db[ev.radio.serving == 0]
        q50, q90 = np.percentile(sinr, [50, 90])
        assert q90 - q50 > 3.0, (key, seed, q50, q90)
        if world.site_share > 0:
            assert sinr.max() > 10 * math.log10(1 / world.site_share) + 1.0
        # Six far sectors' NLOS shadowing summed (Fenton-Wilkinson, by hand: UMa's 6 dB
        # is 1.382 nepers; ln(1 + (e^1.909 - 1) / 6) = 0.671, its root 0.819 nepers = 3.56 dB).
        sigma = {"UMa": 3.56, "UMi": 5.54, "RMa": 5.76, "InH": 5.79}[world.cells.scenario]
        assert abs(np.median(world.beyond_fade_db)) < 1.0
        assert np.std(world.beyond_fade_db) == pytest.approx(sigma, rel=0.12)


@pytest.mark.parametrize("key", ["throughput_drop_dl", "high_prb_utilization", "bler_anomaly"])
@pytest.mark.parametrize("seed", range(3))
def test_no_cell_carries_more_than_its_band_allows(key, seed):
    """A cell's served traffic is at most its PRBs' capacity at 4 layers of Shannon at the best
    SINR any of its UEs has (the TS 38.306 bound the 3GPP CQI table stays under)."""
    _, setup = _episode(key, seed)
    ev = _serving_ev(setup)
    for cell in range(ev.cells.count):
        mine = ev.radio.serving == cell
        if not mine.any():
            continue
        best = float(ev.radio.sinr_db[mine].max())
        bound = (
            4
            * np.log2(1 + 10 ** (best / 10))
            * float(re_rate_per_s(ev.cells.n_prb[cell], ev.cells.scs_khz[cell]))
            / 1e6
        )
        assert float(ev.traffic.cell_throughput_mbps[cell]) <= bound + 1e-6
        assert (ev.traffic.ue_throughput_mbps[mine] <= bound + 1e-6).all()


@pytest.mark.parametrize("seed", range(3))
def test_users_are_conserved_when_a_change_moves_them(seed):
    """A CIO change moves users between cells; none appear or vanish."""
    _, setup = _episode("ta_distribution_drift", seed)
    state = setup.state
    world = state.model.simulation.world
    before = _serving_ev(setup)
    after = _serving_ev(setup, _config_with(state, cio_db=-6))
    users_before = before.traffic.users.sum()
    served_before = float(world.weight[before.served].sum())
    assert users_before == pytest.approx(served_before)
    assert after.traffic.users.sum() == pytest.approx(users_before, rel=0.02)
    assert after.traffic.users[0] < before.traffic.users[0]


@pytest.mark.parametrize("seed", range(4))
def test_a_down_cell_serves_no_one_and_its_users_camp_on_neighbours(seed):
    env, setup = _episode("cell_outage_detection", seed, blueprint="OUTAGE_SUDDEN_ALARM")
    state = setup.state
    kpis = state.kpis(state.serving_id)
    assert kpis["users"] < 0.05 * state.model.simulation.world.weight.sum()
    assert kpis["availability"] <= 5.0
    ev = _serving_ev(setup)
    assert not (ev.radio.serving == 0).any()
    normal = state.model.simulation.evaluation(state.model.epochs[0].config, 1.0, faulty=False)
    assert (ev.radio.serving > 0).sum() > (normal.radio.serving > 0).sum()
    assert ev.traffic.users[1:].sum() > normal.traffic.users[1:].sum()


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("key", ["degraded_backhaul", "hqos_latency_violation", "rlf_spike"])
def test_the_backhaul_delay_is_inside_the_cells_latency(key, seed):
    """The cell's latency averages its packets' end-to-end delay: best-effort ones (85 %) wait
    in the backhaul's queue, real-time ones in their own; a congested link shows in it."""
    _, setup = _episode(key, seed)
    state = setup.state
    cell, link = state.kpis(state.serving_id), state.kpis(state.link_id)
    assert cell["latency_ms"] >= (1 - transport.RT_SHARE) * link["bh_latency_ms"] - 1.0
    assert cell["latency_ms"] >= link["bh_latency_ms"] - 10.0


@pytest.mark.parametrize(
    "timer", [{"ttt_ms": 1024}, {"t310_ms": 2000}, {"hysteresis_db": 6.0}, {"a3_offset_db": -2.0}]
)
def test_no_timer_or_handover_offset_moves_rsrp_or_sinr(timer):
    _, setup = _episode("pingpong_handovers", 5)
    state = setup.state
    before = _serving_ev(setup)
    after = _serving_ev(setup, _config_with(state, **timer))
    assert np.array_equal(before.radio.rsrp_dbm, after.radio.rsrp_dbm)
    assert np.array_equal(before.radio.sinr_db, after.radio.sinr_db)


def _serving_kpis(setup, **changes):
    state = setup.state
    return state.model.simulation.kpis(state.serving_id, _config_with(state, **changes))


@pytest.mark.parametrize("seed", range(3))
def test_a_longer_t310_never_raises_the_rlf_rate(seed):
    _, setup = _episode("rlf_spike", seed)
    rates = [_serving_kpis(setup, t310_ms=t)["RLF_rate"] for t in (50, 100, 200, 500, 1000, 2000)]
    assert rates == sorted(rates, reverse=True)
    assert rates[0] > rates[4]


@pytest.mark.parametrize("seed", range(3))
def test_a_lower_olla_target_lowers_the_bler(seed):
    _, setup = _episode("bler_anomaly", seed)
    blers = [_serving_kpis(setup, olla_bler_target_pct=t)["BLER"] for t in (30, 25, 18, 12, 10, 8)]
    assert blers == sorted(blers, reverse=True) and blers[0] > blers[-1]


@pytest.mark.parametrize("seed", range(3))
def test_releasing_reserved_prbs_serves_users_faster_or_takes_offloaded_ones_back(seed):
    _, setup = _episode("throughput_drop_dl", seed)
    serving = setup.state.configuration()[f"cell:{setup.state.serving_id}"]
    faulty, threshold = serving["prb_reservation_pct"], serving["mlb_threshold_pct"] / 100
    start, *released = [_serving_kpis(setup, prb_reservation_pct=r) for r in (faulty, 10, 5, 0)]
    # The freed PRBs go to the users: each gets more at a lower load, or, where load balancing
    # had offloaded border users, the cell takes them back and holds its load at the trigger.
    for run in released:
        assert run["users"] >= start["users"] - 1e-6
        faster = run["DL_thr_Mbps"] > start["DL_thr_Mbps"] and run["PRB_util"] < start["PRB_util"]
        took_back = run["users"] > start["users"] and run["PRB_util"] <= threshold + 0.02
        assert faster or took_back, (start, run)


@pytest.mark.parametrize("seed", range(3))
def test_a_heavier_hqos_weight_shortens_the_critical_latency(seed):
    _, setup = _episode("hqos_latency_violation", seed)
    latency = [
        _serving_kpis(setup, hqos_priority_weight_pct=w)["latency_ms"] for w in (5, 10, 20, 40, 60)
    ]
    assert latency == sorted(latency, reverse=True) and latency[0] > latency[3]


def test_qos_compliance_by_hand():
    """The share of 15-minute intervals that meet 5 Mbps and 50 ms, an interval's load
    log-normal (sigma 0.2) around 60 %: at 30 Mbps a user needs 5 x 0.4 / 30 = 6.7 % of the
    cell's time, so throughput holds up to 93.3 % load; 35 ms of queueing slack over a 5 ms
    wait allows rho / (1 - rho) = 7 x 1.5 = 10.5, i.e. 91.3 % load, the tighter of the two."""
    highest = 10.5 / 11.5
    z = (math.log(highest / 0.6) + 0.02) / 0.2
    expected = 0.5 * (1 + math.erf(z / math.sqrt(2)))
    assert model.qos_compliance(30.0, 0.6, 100.0, 20.0, 5.0) == pytest.approx(expected)
    assert expected == pytest.approx(0.986, abs=1e-3)
    assert model.qos_compliance(30.0, 0.6, 100.0, 55.0, 0.0) == 0.0  # 55 ms without queueing
    assert model.qos_compliance(0.0, 0.6, 100.0, 20.0, 5.0) == 0.0
    # A user alone gets 500 Mbps: no load takes it under 5 Mbps, nothing waits.
    assert model.qos_compliance(500.0, 0.2, 1.0, 20.0, 0.0) == 1.0
    # It falls smoothly as load builds (the KPIs read at each load as the traffic model has them).
    values = [
        model.qos_compliance(30.0 * (1 - rho) / 0.4, rho, 100.0, 15.0 + 5.0 * k, 5.0 * k)
        for rho, k in [(r, (r / (1 - r)) / 1.5) for r in (0.5, 0.7, 0.8, 0.85, 0.9, 0.95)]
    ]
    assert values == sorted(values, reverse=True) and values[0] > 0.99 and values[-1] < 0.6
    assert max(a - b for a, b in itertools.pairwise(values)) < 0.7


@pytest.mark.parametrize("seed", range(6))
def test_an_sla_breach_is_the_load_of_its_users(seed):
    """The SLA report's cell breaches its SLA from its users' demand at the event or the peak:
    compliance under the threshold, the cell near saturation; more demand breaches more, and
    at the quiet hours' demand the cell complies again."""
    env, setup = _episode("sla_violation_report", seed)
    kpis = setup.state.kpis(setup.state.serving_id)
    assert 0.4 <= kpis["QoS"] < kpis["sla_threshold"] - 0.3
    assert kpis["PRB_util"] >= 0.85
    simulation = setup.state.model.simulation
    config = setup.state.configuration()
    compliance = [
        simulation.kpis(setup.state.serving_id, config, scale, handovers=False)["QoS"]
        for scale in (0.4, 0.7, 1.0, 1.3)
    ]
    assert compliance == sorted(compliance, reverse=True)
    assert compliance[0] >= kpis["sla_threshold"] - 0.05 > compliance[2]


@pytest.mark.parametrize("seed", range(3))
def test_the_scheduler_sets_fairness(seed):
    _, setup = _episode("resource_sched_anomaly", seed)
    fairness = {
        s: _serving_kpis(setup, scheduler_type=s)["prb_fairness_index"]
        for s in ("MAX_CI", "PF", "RR")
    }
    assert fairness["MAX_CI"] < fairness["PF"] <= fairness["RR"] + 1e-9


@pytest.mark.parametrize("seed", range(3))
def test_an_uptilted_tall_site_reaches_into_its_neighbours_areas(seed):
    """The overshooting site stands above its neighbours: uptilted, its signal at their users
    (what interferes with them) is stronger than at the band's tilt; far past the band, its
    own coverage suffers instead."""
    _, setup = _episode("overshooting_cell", seed)
    state = setup.state
    simulation = state.model.simulation
    world = simulation.world
    away = world.home != 0

    def reach(tilt):
        ev = simulation.evaluation(_config_with(state, tilt_deg=tilt))
        return float(np.mean(ev.radio.rsrp_dbm[0, away]))

    assert reach(0.0) > reach(6.0) > reach(15.0)
    gap = {t: _serving_kpis(setup, tilt_deg=t)["coverage_gap_ratio"] for t in (6.0, 15.0)}
    assert gap[15.0] > gap[6.0]


@pytest.mark.parametrize("blueprint", ["OVERSHOOT_URBAN_FOOTPRINT", "OVERSHOOT_RURAL_LONG_RANGE"])
def test_an_uptilt_wins_users_beyond_the_neighbours(blueprint):
    """UEs stand beyond the cluster's sectors too, where the sites' other sectors serve them:
    with the band's tilt the overshooting cell wins few of them; uptilted it wins more, and
    its timing advance and distant-user share show them (seeds 0-3 together: one world's
    count of far users is a handful)."""
    far_won = {6.0: 0, 0.0: 0}
    ta95 = {6.0: 0.0, 0.0: 0.0}
    distant = {6.0: 0.0, 0.0: 0.0}
    for seed in range(4):
        _, setup = _episode("overshooting_cell", seed, blueprint=blueprint)
        world = setup.state.model.simulation.world
        far = world.home >= world.cells.count
        assert far.sum() == layout.OUTER_UE_COUNT
        for tilt in far_won:
            ev = _serving_ev(setup, _config_with(setup.state, tilt_deg=tilt))
            far_won[tilt] += int((ev.radio.serving[far] == 0).sum())
            kpis = _serving_kpis(setup, tilt_deg=tilt)
            ta95[tilt] += kpis["ta_p95"]
            distant[tilt] += kpis["distant_serving_ratio"]
        normal = _serving_ev(setup, setup.state.model.epochs[0].config)
        # Most of them stay with their own sectors.
        assert (normal.radio.serving[far] == radio.OUTSIDE).mean() > 0.6
    assert far_won[0.0] > far_won[6.0]
    assert ta95[0.0] > ta95[6.0] and distant[0.0] > distant[6.0]


@pytest.mark.parametrize("blueprint", ["COV_HOLE_DOWNTOWN", "COV_HOLE_RURAL_SPARSITY"])
def test_a_steep_downtilt_opens_a_coverage_gap_the_normal_tilt_closes(blueprint):
    """The coverage hole's world is calibrated without the fault, the clutter loss set by the
    sample's coverage gap with it: the share of the cell's own area under -110 dBm grows with
    every degree of downtilt past the normal 4 (uptilting past it loses the near part), the
    steep tilt's gap is what the report shows, and the normal tilt
    closes most of it (the served users' median RSRP is no symptom: the cell keeps those near
    its mast)."""
    from telcoenv.domains.network.radio import COVERAGE_DBM

    env = telcoenv.make("coverage_hole", domain=physical(), embedder=None)
    for seed in range(3):
        env.reset(seed=seed, options={"blueprint": blueprint})
        setup = env.unwrapped.episode.setup
        state, cell = setup.state, setup.state.serving_id
        world = state.model.simulation.world
        assert world.calibration_error < math.inf
        gaps = [_serving_kpis(setup, tilt_deg=t)["coverage_gap_ratio"] for t in (4, 8, 11, 14)]
        assert gaps == sorted(gaps), (seed, gaps)
        start = sim.freeze(state.configuration())
        gap = state.model.simulation.kpis(cell, start, handovers=False)["coverage_gap_ratio"]
        assert setup.truth.sampled["coverage_gap_ratio"] == round(gap)
        normal = sim.freeze(state.model.epochs[0].config)
        healed = state.model.simulation.kpis(cell, normal, faulty=False, handovers=False)
        assert healed["coverage_gap_ratio"] < 0.8 * gap, (seed, gap, healed)
        # The gap counter is the share of the cell's own area under the threshold.
        ev = state.model.simulation.evaluation(start)
        best = ev.radio.rsrp_dbm[:, world.home == 0].max(axis=0)
        assert gap == pytest.approx(100.0 * float(np.mean(best < COVERAGE_DBM)))
    env.close()


@pytest.mark.parametrize("seed", range(3))
def test_a_stricter_admission_threshold_refuses_more_sessions(seed):
    _, setup = _episode("slice_admission_failure", seed)
    state = setup.state
    denials = []
    for threshold in (55, 65, 75, 85, 95):
        config = sim.freeze(state.configuration())
        config[f"slice:{state.fault_slice_id}"]["admission_threshold_pct"] = threshold
        denials.append(
            state.model.simulation.kpis(state.fault_slice_id, config)["admission_denial_rate"]
        )
    assert denials == sorted(denials, reverse=True) and denials[0] > denials[-1]


def test_series_show_the_onset_and_the_daily_cycle():
    """A week of PRB load follows the area's daily profile; the fault's counter changes at the
    onset, not before."""
    env, setup = _episode("rlf_spike", 6)
    state = setup.state
    model = state.model
    first = np.datetime64((state.now - dt.timedelta(days=7)).replace(tzinfo=None), "s")
    moments = first + np.arange(7 * 24) * np.timedelta64(1, "h")
    rng = np.random.default_rng(0)
    load = model.series(state.serving_id, ["PRB_util"], moments, rng)[0]
    demand = model.timeline.scale(moments)
    assert np.corrcoef(load, demand)[0, 1] > 0.8
    onset = np.datetime64(model.timeline.onset.replace(tzinfo=None), "s")
    minutes = np.arange(-120, 60, 5)
    around = onset + minutes * np.timedelta64(1, "m")
    rlf = model.series(state.serving_id, ["RLF_rate"], around, np.random.default_rng(1))[0]
    before, after = rlf[minutes < 0], rlf[minutes >= 0]
    assert after.mean() > 2 * before.mean()


def test_load_and_quality_move_together_through_the_day():
    """At busier hours the serving cell's load rises and its users' throughput falls."""
    env, setup = _episode("throughput_drop_dl", 7)
    state = setup.state
    first = np.datetime64((state.now - dt.timedelta(days=1)).replace(tzinfo=None), "s")
    moments = first + np.arange(24) * np.timedelta64(1, "h")
    rows = state.model.series(
        state.serving_id, ["PRB_util", "throughput_p50_mbps"], moments, np.random.default_rng(2)
    )
    assert np.corrcoef(rows[0], rows[1])[0, 1] < -0.5


@pytest.mark.parametrize(
    ("key", "changes", "seed"),
    [
        ("rlf_spike", {"t310_ms": 2000}, 8),
        # Seed 8's fault costs its users 4 % of their throughput, and 8 % puts them 5 % under
        # the normal: not recovered (3 of 10 worlds are such).
        ("bler_anomaly", {"olla_bler_target_pct": 8}, 2),
        ("hqos_latency_violation", {"hqos_priority_weight_pct": 50}, 8),
        ("throughput_drop_dl", {"prb_reservation_pct": 0}, 8),
        ("overshooting_cell", {"tilt_deg": 7}, 8),
        ("load_balancing_needed", {"mlb_threshold_pct": 65}, 8),
    ],
)
def test_a_near_gold_fix_that_recovers_the_kpis_is_accepted(key, changes, seed):
    env, setup = _episode(key, seed)
    state = setup.state
    cell = state.serving_id
    env.step({"name": "optimize_cell", "arguments": {"cell_id": cell, "changes": changes}})
    verdict = env.unwrapped.domain.verify(setup, env.unwrapped._episode.intent, None)
    assert verdict["root_cause_removed"] and verdict["fixed"], verdict["checks"]


@pytest.mark.parametrize(
    ("key", "changes"),
    [
        ("rlf_spike", {"t310_ms": 200}),  # the right direction, not far enough
        ("bler_anomaly", {"olla_bler_target_pct": 30}),  # the wrong direction
        ("overshooting_cell", {"tilt_deg": 15}),  # over-correction
        ("throughput_drop_dl", {"tilt_deg": 9}),  # the wrong parameter
    ],
)
def test_a_fix_that_is_short_wrong_or_too_much_is_refused(key, changes):
    env, setup = _episode(key, 9)
    cell = setup.state.serving_id
    env.step({"name": "optimize_cell", "arguments": {"cell_id": cell, "changes": changes}})
    verdict = env.unwrapped.domain.verify(setup, env.unwrapped._episode.intent, None)
    assert not verdict["resolved"], verdict["checks"]


def _relation(setup) -> tuple[str, str]:
    """The hotspot's faulty relation: (its owner in the configuration, the neighbour)."""
    (neighbour,) = setup.gold_values["fix"]["neighbour_cio_db"]
    return f"relation:{setup.state.serving_id}->{neighbour}", neighbour


def _with_relation(setup, offset: float) -> dict:
    owner, _ = _relation(setup)
    config = sim.freeze(setup.state.configuration())
    config[owner]["cio_db"] = offset
    return config


def test_a_relation_offset_moves_no_rsrp_or_sinr():
    """A relation's offset decides handovers only: the radio stays as it is."""
    _, setup = _episode("ho_failure_hotspot", 3)
    before = setup.state.model.simulation.evaluation(_with_relation(setup, 0.0))
    after = setup.state.model.simulation.evaluation(_with_relation(setup, 12.0))
    assert np.array_equal(before.radio.rsrp_dbm, after.radio.rsrp_dbm)
    assert np.array_equal(before.radio.sinr_db, after.radio.sinr_db)


def test_a_relation_offset_hands_over_early_toward_its_neighbour():
    """Across episodes, more offset on the cell's relation to a neighbour: more handovers toward
    that neighbour, more of them too early, more failures and returns; none of it on the
    relation back, which its own configuration decides."""
    rows = []
    for seed in range(8):
        _, setup = _episode("ho_failure_hotspot", seed)
        simulation, index = setup.state.model.simulation, setup.state.model.simulation.index
        _, neighbour = _relation(setup)
        source, target = index[setup.state.serving_id], index[neighbour]
        row = []
        for offset in (0.0, 8.0, 16.0):
            counts = simulation.moves(_with_relation(setup, offset)).counts
            kpis = simulation.kpis(setup.state.serving_id, _with_relation(setup, offset))
            toward = counts.relation_attempts[source, target]
            row.append((toward, counts.too_early[source], kpis["ping_pong_rate"]))
        rows.append(row)
    mean = np.mean(np.array(rows), axis=0)  # [offsets, (attempts, too early, ping-pong)]
    assert (np.diff(mean, axis=0) > 0).all(), mean


@pytest.mark.parametrize("seed", range(3))
def test_the_hotspot_fault_shows_in_its_counters_and_its_fix_cures_it(seed):
    """The faulty offset fails more handovers than the relation at 0 (the old cell-CIO fault
    failed fewer) and the oracle's fix takes the failures back down."""
    _, setup = _episode("ho_failure_hotspot", seed)
    simulation, cell = setup.state.model.simulation, setup.state.serving_id
    faulty = simulation.kpis(cell, setup.state.configuration())
    fixed = simulation.kpis(cell, _with_relation(setup, 0.0))
    assert faulty["ho_fail_rate"] > fixed["ho_fail_rate"]
    assert faulty["HO_success"] <= fixed["HO_success"]


@pytest.mark.parametrize(
    ("changes", "resolved"),
    [
        ({"offset": 1.0}, True),  # near gold, inside the accepted band
        ({"offset": 2.0}, True),
        ({"offset": 6.0}, False),  # the right direction, not far enough
        # Past gold, inside the band: at this border handovers already come late, and later
        # ones fail more, so the KPIs do not recover (in 3 of seeds 0-7 they do: accepted).
        ({"offset": -2.0}, False),
        ({"cio_db": 0.0}, False),  # the cell's own offset: the wrong parameter
        ({"other": 0.0}, False),  # another relation: the wrong object
    ],
)
def test_the_hotspot_fix_is_judged_on_its_relation(changes, resolved):
    env, setup = _episode("ho_failure_hotspot", 0)
    cell, (_, neighbour) = setup.state.serving_id, _relation(setup)
    if "offset" in changes:
        arguments = {"neighbour_cio_db": {neighbour: changes["offset"]}}
    elif "other" in changes:
        other = next(n for n in setup.state.relation_offsets(cell) if n != neighbour)
        arguments = {"neighbour_cio_db": {other: changes["other"]}}
    else:
        arguments = {"cio_db": changes["cio_db"] + 1.0}
    env.step({"name": "optimize_cell", "arguments": {"cell_id": cell, "changes": arguments}})
    verdict = env.unwrapped.domain.verify(setup, env.unwrapped._episode.intent, None)
    assert verdict["resolved"] is resolved, verdict["checks"]


@pytest.mark.parametrize("seed", range(2))
def test_the_oracle_resolves_every_intent_in_the_model(catalog, seed):
    for intent in catalog.intents:
        env = telcoenv.make(
            intent.env_name, domain=physical(), embedder=None, privileged=True, reward="resolved"
        )
        _, info = run_episode(env, OracleAgent(), seed=seed)
        assert info["resolved"] is True, (intent.key, info["verification"]["checks"])


def test_same_seed_same_network_model():
    a, setup_a = _episode("beam_misalignment", 11)
    b, setup_b = _episode("beam_misalignment", 11)
    assert setup_a.truth.sampled == setup_b.truth.sampled
    call = {
        "name": "kpi_timeseries",
        "arguments": {"cell_id": setup_a.state.serving_id, "kpi": "RF", "window": "6h"},
    }
    assert a.step(call)[0] == b.step(call)[0]


def test_evaluate_is_a_pure_function_of_world_and_configuration():
    _, setup = _episode("rlf_spike", 12)
    state = setup.state
    world = state.model.simulation.world
    one = evaluate(world, state.configuration())
    two = evaluate(world, state.configuration())
    assert np.array_equal(one.traffic.load, two.traffic.load)
    assert np.array_equal(one.radio.sinr_db, two.radio.sinr_db)


def _call(env, name, **arguments):
    import json

    observation = env.step({"name": name, "arguments": arguments})[0]
    return json.loads(observation)


def test_the_coverage_map_is_computed_from_the_model_and_follows_the_tilt():
    """Bins come from the path-loss model and the antennas as configured. Where the map is of
    the cell's own coverage (it is the best server in most of the bins, true of most coverage
    hole episodes): downtilting harder leaves more bins under -110 dBm, uptilting the hole's
    cell raises the median RSRP and widens what it serves; the same call gives the same map."""
    checked = 0
    for seed in range(10, 20):
        env, setup = _episode("coverage_hole", seed)
        cell = setup.state.serving_id
        first = _call(env, "coverage_map", area=cell, resolution="50m", detail="full")
        assert first == _call(env, "coverage_map", area=cell, resolution="50m", detail="full")
        assert len(first["servers"]) == len(setup.state.cell_ids)
        before = first["summary"]
        if before["serving_best_server_pct"] < 50:
            continue  # another cell's coverage: the cell's tilt barely shows in it
        checked += 1

        def after(tilt: float, cell: str = cell, env=env) -> dict:
            change = {"cell_id": cell, "changes": {"tilt_deg": tilt}}
            env.step({"name": "optimize_cell", "arguments": change})
            return _call(env, "coverage_map", area=cell, resolution="50m")["summary"]

        weak = before["bins_below_minus110_dbm_pct"]
        assert after(15)["bins_below_minus110_dbm_pct"] >= weak, seed
        up = after(2)
        assert up["median_rsrp_dbm"] > before["median_rsrp_dbm"], seed
        assert up["serving_best_server_pct"] >= before["serving_best_server_pct"], seed
    assert checked >= 5


@pytest.mark.parametrize(("key", "seed"), [("beam_misalignment", 42), ("coverage_hole", 3)])
def test_the_coverage_map_covers_the_cluster_only(key, seed):
    """An indoor venue mapped at 100-500 m bins: most of the 8 x 8 grid lies outside it (beyond
    the walls, behind the panels) and shows no values instead of the far field of its picos
    (before: a median of -141 dBm and -45 dB SINR at 100 m, -150 dBm at 500 m); a bin inside is
    the median over its points in the cluster, so even a 500 m bin reads the venue."""
    env, setup = _episode(key, seed)
    state = setup.state
    assert state.initial.serving.area == "indoor"
    cluster = env.unwrapped.trace.start_state["cluster_id"]
    users = state.kpis(state.serving_id)["rsrp_dBm"]
    for resolution in ("50m", "100m", "200m", "500m"):
        full = _call(env, "coverage_map", area=cluster, resolution=resolution, detail="full")
        summary = _call(env, "coverage_map", area=cluster, resolution=resolution)
        rsrp = [v for row in full["grid"]["rsrp_dbm"] for v in row]
        inside = [v for v in rsrp if v is not None]
        assert 0 < len(inside) < 64 and full["bins_outside_cluster"] == 64 - len(inside)
        assert summary["bins"]["inside_cluster"] == len(inside)
        assert summary["summary"]["median_rsrp_dbm"] == pytest.approx(np.median(inside), abs=0.05)
        assert abs(summary["summary"]["median_rsrp_dbm"] - users) < 20
        assert summary["summary"]["median_sinr_db"] > -10
        for row, flat in zip(full["grid"]["sinr_db"], full["grid"]["rsrp_dbm"], strict=True):
            assert [v is None for v in row] == [v is None for v in flat]
        assert all(b["rsrp_dbm"] is not None for b in summary["worst_bins"])


def test_a_steered_beam_set_bunches_its_users_at_one_edge():
    env, setup = _episode("beam_misalignment", 14)
    cell = setup.state.serving_id
    skewed = _call(env, "coverage_map", area=cell, resolution="50m")["ssb_beams"]
    env.step(
        {
            "name": "optimize_cell",
            "arguments": {"cell_id": cell, "changes": {"beam_azimuth_offset_deg": 0}},
        }
    )
    centred = _call(env, "coverage_map", area=cell, resolution="50m")["ssb_beams"]

    def imbalance(shares):
        return abs(sum(shares[:4]) - sum(shares[4:]))

    assert imbalance(skewed["user_share_per_beam"]) > imbalance(centred["user_share_per_beam"])


def test_the_neighbour_audit_reads_relations_and_loads_from_the_model():
    env, setup = _episode("pci_collision", 15)
    state = setup.state
    audit = _call(env, "neighbor_audit", cell_id=state.serving_id)
    assert {f["type"] for f in audit["findings"]} >= {"pci_collision"}
    loads = state.model.simulation.evaluation(
        state.configuration(), state.model.timeline.scale_at(state.now)
    ).traffic.load
    by_id = {row["cell_id"]: row for row in audit["neighbours"]}
    for cell_id, index in state.model.simulation.index.items():
        if cell_id in by_id:
            assert by_id[cell_id]["prb_util_pct"] == round(float(loads[index]) * 100)
    assert sum(row["ho_attempts_per_hour"] for row in audit["neighbours"]) > 0


def test_the_neighbour_audit_counts_ping_pongs_on_each_relation_both_ways():
    """Per relation with a ping-pong either way: of the cell's handovers to the neighbour, the
    share sent back within 2 s; of the neighbour's handovers to the cell, the share the cell
    sent back. Relations with none either way are left out (the output's bound)."""
    env, setup = _episode("pingpong_handovers", 5)
    state = setup.state
    audit = _call(env, "neighbor_audit", cell_id=state.serving_id)
    counts = state.model.simulation.moves(state.configuration()).counts
    index, cell = state.model.simulation.index, state.model.simulation.index[state.serving_id]

    def share(part: float, whole: float) -> float | None:
        return round(100 * part / whole, 1) if whole else None

    expected = {}
    for row in audit["neighbours"]:
        other = index[row["cell_id"]]
        pair = [
            share(counts.relation_pingpong[cell, other], counts.relation_successes[cell, other]),
            share(counts.relation_pingpong[other, cell], counts.relation_successes[other, cell]),
        ]
        if any(pair):
            expected[row["cell_id"]] = pair
    assert expected and audit["ping_pong_pct_out_back"] == expected
    assert len(expected) < len(audit["neighbours"])


def test_a_short_time_to_trigger_shows_as_ues_the_cell_sends_back():
    """A ping-pong's return leg runs on the returning cell's time-to-trigger: a cell at 80 ms
    sends back more of the UEs its neighbours hand it than at 480 ms (summed over 8 worlds)."""
    sent_back = {80: 0.0, 480: 0.0}
    for seed in range(8):
        _, setup = _episode("pingpong_handovers", seed)
        simulation = setup.state.model.simulation
        cell = simulation.index[setup.state.serving_id]
        for ttt in sent_back:
            counts = simulation.moves(_config_with(setup.state, ttt_ms=ttt)).counts
            sent_back[ttt] += counts.relation_pingpong[:, cell].sum()
    assert sent_back[80] > 2 * sent_back[480] + 4, sent_back


def test_an_eager_trigger_bounces_users_and_the_standard_margin_stops_it():
    """The ping-pong fault is the cell's handover trigger set far too eager (offset and
    hysteresis near 0 dB, a 40-160 ms time-to-trigger; reference 2.8): over 12 worlds its
    ping-pong ratio and handovers are well above those of the same cell with the standard
    3 dB, 2 dB and 480 ms, which the gold fix restores. The time-to-trigger alone at fault did
    not show in the ratio (4.5 against 4.4 % at the median over 16 worlds), so a single-
    parameter fault told the engineer's complaint nothing (measured 2026-12-07)."""
    faulty, fixed, higher = [], [], 0
    for seed in range(12):
        _, setup = _episode("pingpong_handovers", seed)
        state = setup.state
        start = state.configuration()[f"cell:{state.serving_id}"]
        assert start["a3_offset_db"] + start["hysteresis_db"] <= 1.5 and start["ttt_ms"] <= 160
        kpis = [
            state.model.simulation.kpis(state.serving_id, config)
            for config in (state.configuration(), _config_with(state, **setup.truth.fix))
        ]
        faulty.append(kpis[0])
        fixed.append(kpis[1])
        higher += kpis[0]["ping_pong_rate"] > kpis[1]["ping_pong_rate"]
        assert kpis[0]["ho_attempts_per_5min"] > 1.2 * kpis[1]["ho_attempts_per_5min"], seed
    assert setup.truth.fix == {"ttt_ms": 480, "a3_offset_db": 3.0, "hysteresis_db": 2.0}
    assert higher >= 9, higher
    ratios = [float(np.median([r["ping_pong_rate"] for r in rows])) for rows in (faulty, fixed)]
    assert ratios[0] > 1.8 * ratios[1], ratios


def test_an_unchanged_cell_reports_no_timing_advance_drift():
    """The drift index compares the median timing advance with the cell's normal one, both in
    whole TA steps (39 m): the normal was a median of exact distances, so an unchanged cell
    read up to half a step of drift (0.44 on a stadium micro cell, at least 0.2 in 2 of 58
    cells; measured 2026-12-07). Under the fault it is |median TA - normal| / normal."""
    from telcoenv.domains.network.model import TA_STEP_M

    for key in ("ta_distribution_drift", "beam_misalignment", "rlf_spike"):
        for seed in range(3):
            _, setup = _episode(key, seed)
            state = setup.state
            simulation = state.model.simulation
            normal = simulation.kpis(state.serving_id, state.model.epochs[0].config)
            assert normal["ta_drift_index"] == 0.0, (key, seed)
    faulty = simulation.kpis(state.serving_id, state.configuration())
    reference = float(simulation.world.ta_reference_m[0])
    half_steps = 2.0 * reference / TA_STEP_M  # a median of whole steps: whole or half steps
    assert half_steps == pytest.approx(round(half_steps), abs=1e-6)
    assert faulty["ta_drift_index"] == pytest.approx(
        abs(faulty["ta_p50"] - reference) / max(reference, TA_STEP_M)
    )


def test_the_son_advisor_reads_counters_and_configuration_only():
    """A rule fires on its counter past its threshold, proposes the usual step, skips a
    parameter already there, and ranks by how far the counter is past the threshold."""
    from telcoenv.domains.network.advisor import recommend

    config = {"ttt_ms": 160, "hysteresis_db": 1.0, "olla_bler_target_pct": 25, "pci": 7}
    calm = recommend({"ping_pong_rate": 2.0, "BLER": 0.05}, config, False, 9, None, {})
    assert calm == []
    busy = recommend({"ping_pong_rate": 24.0, "BLER": 0.12}, config, False, 9, None, {})
    assert [c["parameter"] for c in busy] == ["ttt_ms", "hysteresis_db", "olla_bler_target_pct"]
    assert busy[0]["recommended"] == 320 and busy[1]["recommended"] == 2.0
    settled = recommend({"BLER": 0.2}, {**config, "olla_bler_target_pct": 10}, False, 9, None, {})
    assert settled == []
    shared = recommend({}, config, True, 9, None, {})
    assert shared == [
        {
            "parameter": "pci",
            "current": 7,
            "recommended": 9,
            "rationale": "PCI shared with a neighbour",
            "evidence": {"neighbour_pci_conflict": True},
        }
    ]
    # Failing handovers with a large offset toward a neighbour: that relation back to neutral
    # (a tuned few dB are left alone; without failures nothing fires).
    offsets = {"NR-A": 10.0, "NR-B": 3.0, "NR-C": -6.0}
    failing = recommend({"ho_fail_rate": 16.0}, config, False, 9, None, {}, offsets)
    relation = [c for c in failing if c["parameter"] == "neighbour_cio_db"]
    assert [(c["neighbour_id"], c["current"], c["recommended"]) for c in relation] == [
        ("NR-A", 10.0, 0.0)
    ]
    assert recommend({"ho_fail_rate": 4.0}, config, False, 9, None, {}, offsets) == []


def test_the_son_advisor_in_an_episode_never_quotes_the_engineering_profile():
    env, setup = _episode("bler_anomaly", 16)
    advice = _call(env, "recommend_param_change", cell_id=setup.state.serving_id)
    assert all("profile" not in c["rationale"] for c in advice["recommendations"])
    assert all("evidence" in c for c in advice["recommendations"])


@pytest.mark.parametrize("seed", range(3))
def test_a_shaped_backhaul_is_as_busy_as_reported_and_caps_the_users(seed):
    """The site's other sectors load the link to the utilisation the blueprint reports; under
    the shaper each flow gets its processor share of the link, and the link at line rate
    (the gold fix) gives the users their air-interface rates back."""
    env = telcoenv.make("degraded_backhaul", domain=physical(), embedder=None, privileged=True)
    env.reset(seed=seed, options={"blueprint": "BACKHAUL_CONGESTION_PEAK"})
    setup = env.unwrapped._episode.setup
    state = setup.state
    link = state.model.simulation.kpis(state.link_id, state.configuration())
    assert link["bh_util"] == pytest.approx(setup.truth.sampled["bh_util"], abs=3.0)
    assert link["bh_latency_ms"] >= 15.0  # TCP's standing queue at the shaper
    ev = _serving_ev(setup)
    start = _serving_kpis(setup)
    assert start["DL_thr_Mbps"] <= ev.link_flow_mbps + 1e-6
    fixed = state.model.simulation.kpis(state.link_id, _link_at_line_rate(state))
    assert fixed["bh_util"] < link["bh_util"] and fixed["bh_latency_ms"] <= link["bh_latency_ms"]
    after = state.model.simulation.kpis(state.serving_id, _link_at_line_rate(state))
    assert after["DL_thr_Mbps"] > 1.5 * start["DL_thr_Mbps"]


def _link_at_line_rate(state):
    config = sim.freeze(state.configuration())
    owner = f"backhaul:{state.link_id}"
    config[owner]["bh_shaper_mbps"] = state.initial.backhaul.capacity_mbps
    return config


# --- worlds remembered across resets ------------------------------------------------------------


def _played(seed: int) -> list[str]:
    """A scripted episode's transcript: the gold chain, a series, a submission."""
    env = telcoenv.make("pingpong_handovers", domain=physical(), embedder=None, privileged=True)
    obs, info = env.reset(seed=seed)
    lines = [obs]
    chain = info["privileged"]["gold_chain"]
    for call in chain:
        lines.append(env.step({"name": call["tool"], "arguments": call["arguments"]})[0])
    series = {"cell_id": chain[0]["arguments"]["cell_id"], "kpi": "HO", "window": "1d"}
    lines.append(env.step({"name": "kpi_timeseries", "arguments": series})[0])
    *_, info = env.step({"name": "submit_resolution", "arguments": {"intent": "x", "summary": "y"}})
    lines.append(info["trace"].model_dump_json())
    env.close()
    return lines


def test_a_remembered_world_gives_the_same_episode_as_a_new_one():
    """A GRPO group resets one seed again and again: the second time the calibrated world and
    its model runs come from the process's cache, and the episode is the same, word for word,
    as with a new world (the generator left where building it would have left it)."""
    model.built_world.worlds.clear()
    cold = _played(21)
    hits = model.built_world.hits
    warm = _played(21)
    assert model.built_world.hits == hits + 1
    assert warm == cold
    model.built_world.worlds.clear()
    assert _played(21) == cold


def test_a_remembered_world_cannot_be_changed_by_an_episode():
    _, setup = _episode("coverage_hole", 3)
    world = setup.state.model.simulation.world
    for array in (world.weight, world.cells.tilt_deg, world.coupling.loss_db, world.ues.x):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 0.0


def test_an_episode_keeps_a_bounded_number_of_model_runs():
    _, setup = _episode("high_prb_utilization", 2)
    simulation = setup.state.model.simulation
    config = setup.state.model.epochs[-1].config
    for step in range(sim.RUNS_KEPT + 10):
        simulation.evaluation(config, scale=0.5 + step / 1000.0)
    assert len(simulation._evaluations) == sim.RUNS_KEPT


def test_healthy_urban_and_suburban_worlds_lose_few_handovers():
    """Without the fault (the normal configuration, no failed unit), the serving cell's
    handovers rarely fail: median under 10 %, at most a tenth of worlds past 30 % (2 of 42
    today, median 0 %). The interference of what the model has no cells for scales with the
    cluster's own power, at most half of it (``model.SITE_SHARE_MAX``): as a uniform floor it
    drowned the cell edge (healthy worlds lost 20-98 % of their handovers too late), and up to
    1.7 times it put every border's A3 point at Qout (6 of 42 past 30 %). A tuned T310 of
    500 ms raced a 640 ms time-to-trigger and lost nearly every handover (a PCI-collision world:
    93 %); tuning no longer shortens T310. What remains are the worlds calibrated to the
    lowest SINRs."""
    from telcoenv.domains.network.loading import network_catalog

    failures = []
    for intent in network_catalog().intents:
        for seed in range(3):
            _, setup = _episode(intent.env_name, seed)
            model_ = setup.state.model
            if model_.simulation.world.area not in ("urban", "suburban"):
                continue
            normal = model_.simulation.kpis(
                setup.state.serving_id, model_.epochs[0].config, 1.0, faulty=False
            )
            failures.append(normal["ho_fail_rate"])
    assert len(failures) >= 30
    assert float(np.median(failures)) < 10.0
    assert float(np.mean(np.array(failures) > 30.0)) <= 0.1
