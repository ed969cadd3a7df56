"""The slicing model: admission as an Erlang loss system under the slice's threshold, priority
classes sharing the cell, guarantees that protect a slice, and the two slice faults (a low
admission threshold refuses sessions; a low priority starves the slice on a busy cell)."""

from __future__ import annotations

import math
import timeit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from telcoenv.domains.network.parameters import SLICE_POLICY
from telcoenv.domains.network.slicing import RADIO_SPREAD, SliceDemand, erlang_b, slice_kpis

# A busy urban NR cell: 400 Mbps at its users' mean spectral efficiency, 5 ms of air latency.
CAPACITY = 400.0
AIR_MS = 5.0
# Its slices' demand: eMBB 50 requests/min x 1 min x 4 Mbps = 200 Mbps (half the cell), URLLC
# 30 requests/min x 1 min x 1 Mbps = 30 Mbps.
EMBB = SliceDemand("eMBB", 50.0, 1.0, 4.0)
URLLC = SliceDemand("URLLC", 30.0, 1.0, 1.0)


def policy(service: str, **changes: float) -> dict[str, float]:
    return {**SLICE_POLICY[service], **changes}


def both(
    embb: dict[str, float] | None = None,
    urllc: dict[str, float] | None = None,
    other_load: float = 0.2,
    demands: tuple[SliceDemand, SliceDemand] = (EMBB, URLLC),
):
    return slice_kpis(
        demands,
        [embb or policy("eMBB"), urllc or policy("URLLC")],
        CAPACITY,
        other_load,
        AIR_MS,
    )


def cell_load(kpis, other_load: float) -> float:
    return other_load + sum(k.carried_mbps for k in kpis) / CAPACITY


# --- Erlang B ----------------------------------------------------------------------------------


def test_erlang_b_by_hand():
    # B(S, A) = (A^S / S!) / sum_{k<=S} A^k / k!
    # S=1, A=3: 3 / (1 + 3) = 0.75.
    assert erlang_b(1, 3.0) == pytest.approx(0.75)
    # S=2, A=1: (1/2) / (1 + 1 + 1/2) = 0.2.
    assert erlang_b(2, 1.0) == pytest.approx(0.2)
    # S=3, A=2: (8/6) / (1 + 2 + 4/2 + 8/6) = (4/3) / (19/3) = 4/19.
    assert erlang_b(3, 2.0) == pytest.approx(4 / 19)
    # No servers refuse everything; no traffic is never refused.
    assert erlang_b(0, 3.0) == 1.0 and erlang_b(5, 0.0) == 0.0


def _erlang_b_plain(servers: int, offered: float) -> float:
    b = 1.0
    for k in range(1, servers + 1):
        b = offered * b / (k + offered * b)
    return b


@given(st.integers(0, 600), st.floats(0.01, 800.0))
def test_erlang_b_matches_the_plain_recursion(servers, offered):
    # The shortcuts (starting the recursion below A, nil past 1e-12) change nothing that shows.
    plain = _erlang_b_plain(servers, offered)
    assert erlang_b(servers, offered) == pytest.approx(plain, rel=1e-9, abs=1e-12)


# --- one slice by hand -------------------------------------------------------------------------


def test_a_small_slice_by_hand():
    # A 100 Mbps cell, one eMBB slice allowed all of it; sessions of 10 Mbps, so N = 10 fit and
    # a 30 % threshold admits while n < 3: S = 3 sessions. A = 2/min x 1 min = 2 erlangs.
    demand = SliceDemand("eMBB", 2.0, 1.0, 10.0)
    rule = {
        "admission_threshold_pct": 30,
        "priority_level": 1,
        "min_guaranteed_mbps": 0,
        "max_share_pct": 100,
        "latency_budget_ms": 10,
    }
    (k,) = slice_kpis([demand], [rule], 100.0, 0.0, 4.0)
    # Denials B(3, 2) = 4/19 = 21.05 %; carried 2 x 15/19 = 1.5789 sessions = 15.789 Mbps.
    assert k.admission_denial_pct == pytest.approx(100 * 4 / 19)
    assert k.carried_mbps == pytest.approx(2 * 15 / 19 * 10)
    assert k.utilisation_pct == pytest.approx(15.789, abs=1e-3)
    assert k.offered_load == pytest.approx(0.2)
    # Alone on the cell (no guarantee, nothing else): M/M/1 with rho = 0.15789 and a burst of
    # 1 Mbit taking x = 10 ms: delay R / (1 - rho) = 1.5789 / 0.84211 = 1.875 ms, a burst's rate
    # C x / (x + W) = 1000 / 11.875 = 84.21 Mbps (= C (1 - rho)).
    rho = 0.15789474
    wait = rho * 10.0 / (1 - rho)
    assert wait == pytest.approx(1.875)
    assert k.latency_ms == pytest.approx(4.0 + 1.875)
    assert k.jitter_ms == pytest.approx(math.sqrt(1.0**2 + 1.875**2))  # 0.25 x 4 ms of air
    gamma = 100.0 * (1 - rho)
    assert k.throughput_p50_mbps == pytest.approx(gamma * math.exp(-0.125), rel=1e-6)  # 74.32
    assert k.throughput_p95_mbps == pytest.approx(gamma * math.exp(0.82243 - 0.125), rel=1e-4)
    # Breaches: late exp(-(10 - 4) / 1.875) = exp(-3.2) = 4.076 %; below 10 Mbps
    # Phi((ln(10 / 84.21) + 0.125) / 0.5) = Phi(-4.011) = 0.003 %; together 4.079 %.
    assert k.violation_pct == pytest.approx(4.079, abs=2e-3)
    assert k.qos_share == pytest.approx(1 - k.violation_pct / 100)


# --- monotone in demand and policy -------------------------------------------------------------

services = st.sampled_from(["eMBB", "URLLC"])
demands = st.builds(
    SliceDemand,
    services,
    st.floats(0.0, 200.0),  # requests per minute
    st.floats(0.05, 5.0),  # minutes
    st.floats(0.1, 30.0),  # Mbps
)
policies = st.fixed_dictionaries(
    {
        "admission_threshold_pct": st.floats(50.0, 100.0),
        "priority_level": st.integers(1, 8),
        "min_guaranteed_mbps": st.floats(0.0, 2000.0),
        "max_share_pct": st.floats(5.0, 100.0),
        "latency_budget_ms": st.floats(1.0, 300.0),
    }
)
cells = st.tuples(st.floats(20.0, 2000.0), st.floats(0.0, 1.0), st.floats(0.0, 40.0))


@given(demands, demands, policies, policies, cells, st.floats(50.0, 100.0))
def test_a_lower_threshold_never_lowers_denials(d0, d1, p0, p1, cell, other_threshold):
    low, high = sorted((p0["admission_threshold_pct"], other_threshold))
    strict = slice_kpis([d0, d1], [{**p0, "admission_threshold_pct": low}, p1], *cell)[0]
    loose = slice_kpis([d0, d1], [{**p0, "admission_threshold_pct": high}, p1], *cell)[0]
    assert strict.admission_denial_pct >= loose.admission_denial_pct
    assert strict.utilisation_pct <= loose.utilisation_pct


@given(demands, demands, policies, policies, cells, st.floats(0.0, 200.0))
def test_more_requests_never_lower_utilisation_or_denials(d0, d1, p0, p1, cell, requests):
    few, many = sorted((d0.requests_per_min, requests))
    a = slice_kpis([SliceDemand(d0.service_type, few, *_rest(d0)), d1], [p0, p1], *cell)[0]
    b = slice_kpis([SliceDemand(d0.service_type, many, *_rest(d0)), d1], [p0, p1], *cell)[0]
    assert b.admission_denial_pct >= a.admission_denial_pct
    assert b.utilisation_pct >= a.utilisation_pct


def _rest(d: SliceDemand) -> tuple[float, float]:
    return d.session_min, d.session_mbps


@given(demands, demands, policies, policies, cells, st.integers(1, 8), st.booleans())
def test_a_worse_priority_never_helps(d0, d1, p0, p1, cell, level, second):
    """At any load: a higher priority number never raises the slice's throughput nor lowers
    its latency, jitter or breaches."""
    i = int(second)
    better, worse = sorted(((p0, p1)[i]["priority_level"], level))
    pair = [dict(p0), dict(p1)]
    pair[i]["priority_level"] = better
    a = slice_kpis([d0, d1], pair, *cell)[i]
    pair[i]["priority_level"] = worse
    b = slice_kpis([d0, d1], pair, *cell)[i]
    assert b.throughput_p50_mbps <= a.throughput_p50_mbps
    assert b.throughput_p95_mbps <= a.throughput_p95_mbps
    assert b.latency_ms >= a.latency_ms and b.jitter_ms >= a.jitter_ms
    assert b.violation_pct >= a.violation_pct - 1e-9


def test_an_idle_slice_behind_a_full_cell_gets_nothing():
    """Found by hypothesis: an idle slice alone at its level, behind classes that already fill
    the cell, counted as served in full (p50 0.88 Mbps) while one level better, sharing the
    default bearers' level, it got its share of what was left (0.84 Mbps)."""
    busy, idle = SliceDemand("eMBB", 10.0, 1.0, 1.0), SliceDemand("eMBB", 0.0, 1.0, 1.0)
    rule = {
        "admission_threshold_pct": 50.0,
        "priority_level": 1,
        "min_guaranteed_mbps": 0.0,
        "max_share_pct": 5.0,
        "latency_budget_ms": 1.0,
    }

    def p50(level):
        return slice_kpis([busy, idle], [rule, {**rule, "priority_level": level}], 20.0, 1.0, 0.0)[
            1
        ].throughput_p50_mbps

    # The default bearers (level 5) alone fill the cell; the busy slice goes before them.
    assert p50(6) < 1e-9 < p50(5) < 1.0
    # With room left, the idle slice's first session is served at its rate.
    assert (
        slice_kpis([busy, idle], [rule, {**rule, "priority_level": 6}], 20.0, 0.2, 0.0)[
            1
        ].throughput_p50_mbps
        >= 1.0 * math.exp(-(RADIO_SPREAD**2) / 2) - 1e-12
    )


@pytest.mark.parametrize("slice_index", [0, 1])
@pytest.mark.parametrize("guarantee", [None, 0.0])
def test_priority_barely_matters_on_a_light_cell_and_decides_on_a_busy_one(slice_index, guarantee):
    # Light: eMBB 10/min x 1 min x 4 Mbps = 40 Mbps, URLLC 10 Mbps, 5 % other traffic: the
    # cell is 17 % loaded. Busy: the module's EMBB and URLLC demand and 37 % other: 94 %.
    light = (SliceDemand("eMBB", 10.0, 1.0, 4.0), SliceDemand("URLLC", 10.0, 1.0, 1.0))
    service = ("eMBB", "URLLC")[slice_index]

    def kpis(level, demand, other):
        changes = {"priority_level": level}
        if guarantee is not None:
            changes["min_guaranteed_mbps"] = guarantee
        rules = [policy("eMBB"), policy("URLLC")]
        rules[slice_index] = policy(service, **changes)
        return slice_kpis(demand, rules, CAPACITY, other, AIR_MS)

    first, last = kpis(1, light, 0.05), kpis(8, light, 0.05)
    assert cell_load(first, 0.05) < 0.2
    a, b = first[slice_index], last[slice_index]
    assert b.throughput_p50_mbps > 0.9 * a.throughput_p50_mbps
    assert b.latency_ms - a.latency_ms < 0.5 and b.violation_pct - a.violation_pct < 0.5

    first, last = kpis(1, (EMBB, URLLC), 0.37), kpis(8, (EMBB, URLLC), 0.37)
    assert cell_load(first, 0.37) > 0.9
    a, b = first[slice_index], last[slice_index]
    assert b.throughput_p50_mbps < 0.5 * a.throughput_p50_mbps
    assert b.latency_ms - a.latency_ms > 5.0 and b.violation_pct - a.violation_pct > 10.0


@given(demands, demands, policies, policies, cells, st.floats(0.0, 2000.0), st.booleans())
def test_a_larger_guarantee_protects_the_slice(d0, d1, p0, p1, cell, extra, second):
    """Its throughput never falls, nor do its latency, jitter or breaches rise."""
    i = int(second)
    pair = [dict(p0), dict(p1)]
    a = slice_kpis([d0, d1], pair, *cell)[i]
    pair[i]["min_guaranteed_mbps"] += extra
    b = slice_kpis([d0, d1], pair, *cell)[i]
    assert b.throughput_p50_mbps >= a.throughput_p50_mbps * (1 - 1e-12)
    assert b.latency_ms <= a.latency_ms * (1 + 1e-12)
    assert b.jitter_ms <= a.jitter_ms * (1 + 1e-12)
    assert b.violation_pct <= a.violation_pct + 1e-9


def test_a_guarantee_lifts_a_starved_slice():
    # URLLC at priority 7 on a 67 % loaded cell; a guarantee of 30 Mbps covers all its traffic.
    starved = both(urllc=policy("URLLC", priority_level=7), other_load=0.1)[1]
    covered = both(urllc=policy("URLLC", priority_level=7, min_guaranteed_mbps=30), other_load=0.1)[
        1
    ]
    assert covered.throughput_p50_mbps > 1.5 * starved.throughput_p50_mbps
    assert covered.latency_ms < starved.latency_ms
    assert covered.violation_pct < starved.violation_pct - 10


def test_on_an_overloaded_cell_the_last_class_gets_what_is_left():
    # eMBB at priority 8 with 50 % other traffic: the cell is offered 108 %. Before the eMBB
    # excess go the guarantees (eMBB 100, URLLC 20 Mbps), the URLLC excess (10) and the other
    # traffic (200): 330 of 400 Mbps, so the excess (~99 Mbps) gets 70 Mbps and a session, its
    # buffer never empty, gets its served share of its 4 Mbps.
    starved = both(embb=policy("eMBB", priority_level=8), other_load=0.5)[0]
    served = (100.0 + 70.0) / starved.carried_mbps
    assert starved.throughput_p50_mbps == pytest.approx(served * 4.0 * math.exp(-0.125))
    assert starved.latency_ms > 150.0 and starved.violation_pct > 90.0
    # Guaranteeing all of it puts it before the other traffic: served, and fast again.
    covered = both(embb=policy("eMBB", priority_level=8, min_guaranteed_mbps=200), other_load=0.5)
    assert covered[0].throughput_p50_mbps > 100.0 and covered[0].violation_pct < 1.0


@given(demands, demands, policies, policies, cells, st.floats(5.0, 100.0))
def test_the_max_share_caps_the_slice(d0, d1, p0, p1, cell, share):
    capacity = cell[0]
    small, large = sorted((p0["max_share_pct"], share))
    a = slice_kpis([d0, d1], [{**p0, "max_share_pct": small}, p1], *cell)[0]
    b = slice_kpis([d0, d1], [{**p0, "max_share_pct": large}, p1], *cell)[0]
    assert a.carried_mbps <= small / 100 * capacity * (1 + 1e-9)
    assert b.carried_mbps >= a.carried_mbps
    assert a.throughput_p95_mbps <= small / 100 * capacity * math.exp(1.645 * 0.5) * 1.001


@settings(max_examples=300)
@given(st.lists(st.tuples(demands, policies), min_size=1, max_size=3), cells)
def test_values_stay_in_their_ranges(slices, cell):
    kpis = slice_kpis([d for d, _ in slices], [p for _, p in slices], *cell)
    air = cell[2]
    for (demand, _), k in zip(slices, kpis, strict=True):
        for pct in (k.utilisation_pct, k.admission_denial_pct, k.violation_pct):
            assert 0.0 <= pct <= 100.0
        assert 0.0 <= k.qos_share <= 1.0
        assert k.qos_share == pytest.approx(1 - k.violation_pct / 100)
        assert 0.0 <= k.throughput_p50_mbps <= k.throughput_p95_mbps
        assert air <= k.latency_ms <= air + 300.0
        assert k.jitter_ms >= 0.0 and k.carried_mbps >= 0.0 and k.offered_load >= 0.0
        assert k.requests_per_min == demand.requests_per_min
        assert all(math.isfinite(v) for v in vars(k).values())


# --- the healthy defaults and the two faults ----------------------------------------------------


@pytest.mark.parametrize("offered", [0.4, 0.6])
@pytest.mark.parametrize("other_load", [0.0, 0.2])
def test_the_healthy_defaults_refuse_and_breach_little_at_moderate_load(offered, other_load):
    # Each slice offered 40-60 % of its max share: eMBB 28-42/min x 1 min x 4 Mbps of 280 Mbps,
    # URLLC 24-36/min x 1 min x 2 Mbps of 120 Mbps; with other traffic the cell is 40-80 % loaded.
    demand = (
        SliceDemand("eMBB", offered * 280 / 4, 1.0, 4.0),
        SliceDemand("URLLC", offered * 120 / 2, 1.0, 2.0),
    )
    kpis = both(other_load=other_load, demands=demand)
    assert cell_load(kpis, other_load) == pytest.approx(offered + other_load, abs=0.01)
    for k in kpis:
        assert k.admission_denial_pct < 2.0 and k.violation_pct < 3.0
        assert k.utilisation_pct == pytest.approx(100 * offered, abs=1.0)


@pytest.mark.parametrize("threshold", [55, 60, 65, 70, 75])
@pytest.mark.parametrize("offered", [0.8, 0.85, 0.9, 0.95])
@pytest.mark.parametrize(("service", "rate"), [("eMBB", 4.0), ("URLLC", 2.0)])
def test_a_low_admission_threshold_refuses_sessions(threshold, offered, service, rate):
    """SLICE_ADMISSION_FAILURE: threshold 55-75 % (healthy 95 %) on a slice offered 80-95 % of
    its max share: eMBB 56-66.5 requests/min x 1 min x 4 Mbps of 280 Mbps, URLLC 48-57/min x
    1 min x 2 Mbps of 120 Mbps."""
    share = CAPACITY * SLICE_POLICY[service]["max_share_pct"] / 100
    demand = SliceDemand(service, offered * share / rate, 1.0, rate)

    def kpis(level):
        rule = policy(service, admission_threshold_pct=level)
        return slice_kpis([demand], [rule], CAPACITY, 0.2, AIR_MS)[0]

    faulty, healthy = kpis(threshold), kpis(95)
    assert faulty.offered_load == pytest.approx(offered)
    assert 10.0 <= faulty.admission_denial_pct <= 45.0
    assert healthy.admission_denial_pct < 10.0
    assert faulty.admission_denial_pct > healthy.admission_denial_pct + 10.0
    # Refused below the threshold, while the slice still has room: the utilisation sits just
    # under it, and the healthy threshold carries what is offered.
    assert faulty.utilisation_pct < threshold + 1.0
    assert healthy.utilisation_pct > 75.0


@pytest.mark.parametrize("level", [6, 7, 8])
@pytest.mark.parametrize("other_load", [0.32, 0.35, 0.37])
def test_a_low_priority_starves_the_embb_slice_on_a_busy_cell(level, other_load):
    """SLICE_QOS_DEGRADATION on eMBB: priority 6-8 (healthy 2; default 3) on a cell 89-94 %
    loaded (eMBB 200 Mbps, URLLC 30 Mbps, other traffic 32-37 % of 400 Mbps)."""
    faulty = both(embb=policy("eMBB", priority_level=level), other_load=other_load)[0]
    for healthy_level in (2, 3):
        kpis = both(embb=policy("eMBB", priority_level=healthy_level), other_load=other_load)
        assert 0.88 < cell_load(kpis, other_load) < 0.95
        healthy = kpis[0]
        assert healthy.violation_pct < 2.0
        assert faulty.throughput_p50_mbps < 0.5 * healthy.throughput_p50_mbps
        assert faulty.throughput_p95_mbps < 0.5 * healthy.throughput_p95_mbps
        assert faulty.latency_ms > healthy.latency_ms + 10.0
        assert faulty.jitter_ms > healthy.jitter_ms + 10.0
    assert 15.0 <= faulty.violation_pct <= 50.0
    assert faulty.qos_share <= 0.85


@pytest.mark.parametrize("level", [6, 7, 8])
@pytest.mark.parametrize("other_load", [0.05, 0.1, 0.15])
def test_a_low_priority_starves_the_urllc_slice_under_load(level, other_load):
    """SLICE_QOS_DEGRADATION on URLLC: priority 6-8 (healthy 2; default 1) on a cell 62-72 %
    loaded: its 10 ms budget no longer holds behind the eMBB and default bearers' bursts. (At
    57 %, with the eMBB slice guaranteed 20 Mbps of its 200, not 100, fewer bursts go ahead of
    it: 12.5 % of its sessions breach, +1.5 ms of jitter.)"""
    faulty = both(urllc=policy("URLLC", priority_level=level), other_load=other_load)[1]
    for healthy_level in (1, 2):
        kpis = both(urllc=policy("URLLC", priority_level=healthy_level), other_load=other_load)
        assert 0.6 < cell_load(kpis, other_load) < 0.75
        healthy = kpis[1]
        assert healthy.violation_pct < 2.0
        assert faulty.throughput_p50_mbps < 0.5 * healthy.throughput_p50_mbps
        assert faulty.latency_ms > healthy.latency_ms + 2.0
        assert faulty.jitter_ms > healthy.jitter_ms + 2.0
    assert 15.0 <= faulty.violation_pct <= 50.0


# --- the function itself ------------------------------------------------------------------------


def test_it_is_a_pure_function():
    rules = [policy("eMBB"), policy("URLLC")]
    before = [dict(r) for r in rules]
    assert slice_kpis((EMBB, URLLC), rules, CAPACITY, 0.3, AIR_MS) == slice_kpis(
        (EMBB, URLLC), rules, CAPACITY, 0.3, AIR_MS
    )
    assert rules == before


def test_it_refuses_what_it_cannot_model():
    with pytest.raises(ValueError):
        slice_kpis([EMBB], [policy("eMBB"), policy("URLLC")], CAPACITY, 0.3, AIR_MS)
    with pytest.raises(KeyError):
        slice_kpis([SliceDemand("mIoT", 1.0, 1.0, 1.0)], [policy("eMBB")], CAPACITY, 0.3, AIR_MS)


def test_two_slices_take_well_under_a_tenth_of_a_millisecond():
    rules = [policy("eMBB"), policy("URLLC")]
    runs = timeit.repeat(
        lambda: slice_kpis((EMBB, URLLC), rules, CAPACITY, 0.3, AIR_MS), number=500, repeat=5
    )
    assert min(runs) / 500 < 1e-4
