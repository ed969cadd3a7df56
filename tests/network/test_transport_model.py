"""The backhaul model: a shaper caps what the link carries, delay and loss grow with the load on
it, the real-time queue's weight protects real-time traffic, a flapping link loses packets."""

from __future__ import annotations

import math
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from telcoenv.domains.network.transport import (
    BASE_DELAY_MS,
    FLOW_FLOOR,
    QUEUE_MS,
    STANDING_FILL,
    Link,
    backhaul,
    flow_rate_mbps,
    interval_mean,
    standing_queue_ms,
    tcp_loss,
)


def test_a_healthy_link_adds_little():
    healthy = backhaul(300.0, Link(1000.0, 1000.0, 40.0))
    assert healthy.loss == pytest.approx(1e-4) and healthy.delay_ms < BASE_DELAY_MS + 0.5


def test_a_shaper_below_the_offered_traffic_carries_only_its_rate():
    shaped = backhaul(300.0, Link(1000.0, 100.0, 40.0))
    assert shaped.utilisation == pytest.approx(3.0)
    assert shaped.carried_share == pytest.approx(1 / 3, abs=1e-3)
    assert shaped.delay_p95_ms > 50 and shaped.queue_occupancy == 1.0


def test_a_shaper_above_the_line_rate_changes_nothing():
    assert backhaul(300.0, Link(1000.0, 1000.0, 40.0)) == backhaul(
        300.0, Link(1000.0, 5000.0, 40.0)
    )


@given(st.floats(1.0, 2000.0), st.floats(1.0, 2000.0))
def test_delay_and_loss_never_fall_as_the_offered_traffic_rises(low, high):
    low, high = sorted((low, high))
    link = Link(1000.0, 500.0, 40.0)
    a, b = backhaul(low, link), backhaul(high, link)
    assert b.delay_ms >= a.delay_ms and b.delay_p95_ms >= a.delay_p95_ms and b.loss >= a.loss


@given(st.floats(1.0, 100.0), st.floats(1.0, 100.0))
def test_a_larger_real_time_weight_never_slows_real_time_traffic(w1, w2):
    w1, w2 = sorted((w1, w2))
    slow = backhaul(90.0, Link(1000.0, 100.0, w1))
    fast = backhaul(90.0, Link(1000.0, 100.0, w2))
    assert fast.rt_delay_ms <= slow.rt_delay_ms
    assert fast.delay_ms == slow.delay_ms  # best effort is not what the weight is about


def test_a_flapping_link_loses_packets_and_delays_the_tail_only_when_often_down():
    """Eight 0.8 s outages an hour lose 0.18 % of the packets but leave the p95 alone; 300 an
    hour (6.7 % of the time) put the p95 inside an outage: 800 x (1 - 0.05 / 0.0667) = 200 ms
    (plus the link's own queue)."""
    steady = backhaul(300.0, Link(1000.0, 1000.0, 40.0))
    flapping = backhaul(300.0, Link(1000.0, 1000.0, 40.0, flaps_per_hr=8.0))
    assert flapping.loss == pytest.approx(steady.loss + 8 * 800 / 3.6e6)
    assert flapping.delay_p95_ms == steady.delay_p95_ms
    down = backhaul(300.0, Link(1000.0, 1000.0, 40.0, flaps_per_hr=300.0))
    assert down.delay_p95_ms == pytest.approx(steady.delay_p95_ms + 200.0)


@pytest.mark.parametrize(
    ("offered", "shaper", "expected"),
    [
        (180.0, 200.0, 20.0),  # u = 0.9: a flow gets a tenth of the shaped rate
        (50.0, 200.0, 150.0),  # u = 0.25
        (400.0, 200.0, 200.0 * FLOW_FLOOR),  # overloaded: the floor
        (500.0, 5000.0, 500.0),  # a shaper above line rate: the line rate (u = 0.5)
    ],
)
def test_a_flow_gets_its_processor_share_of_the_link(offered, shaper, expected):
    link = Link(capacity_mbps=1000.0, shaper_mbps=shaper, rt_weight_pct=40.0)
    assert flow_rate_mbps(backhaul(offered, link), link) == pytest.approx(expected)


def test_tcp_keeps_a_standing_queue_where_the_link_is_its_flows_bottleneck():
    # A 100 Mbps shaper, flows that would run at 50: two active flows saturate it (k = 2).
    assert standing_queue_ms(0.84, 100.0, 50.0) == pytest.approx(STANDING_FILL * QUEUE_MS * 0.84**2)
    # The same load on a 1 Gbps line needs 20 such flows at once: rarely (0.84^20 = 3 %).
    assert standing_queue_ms(0.84, 1000.0, 50.0) == pytest.approx(45.0 * 0.84**20)
    assert standing_queue_ms(0.35, 1000.0, 50.0) < 1e-6
    assert standing_queue_ms(0.84, 100.0, None) == 0.0
    shaped = Link(capacity_mbps=1000.0, shaper_mbps=100.0, rt_weight_pct=40.0)
    alone = backhaul(84.0, shaped)
    with_flows = backhaul(84.0, shaped, flow_peak_mbps=50.0)
    assert with_flows.delay_ms == pytest.approx(BASE_DELAY_MS + STANDING_FILL * QUEUE_MS * 0.84**2)
    assert with_flows.delay_ms > alone.delay_ms and with_flows.queue_occupancy > 0.5
    # Real-time traffic has its own weighted queue: the standing queue does not reach it.
    assert with_flows.rt_delay_ms == alone.rt_delay_ms


@given(st.floats(0.05, 0.99), st.floats(0.05, 0.99))
def test_the_standing_queue_grows_with_load(a, b):
    low, high = sorted((a, b))
    assert standing_queue_ms(low, 200.0, 40.0) <= standing_queue_ms(high, 200.0, 40.0)


def test_tcp_drops_a_packet_per_sawtooth_of_its_share_of_the_pipe():
    """By hand, a 100 Mbps shaper at 98 %, flows that could fill it alone (k = 1): 49 flows
    at once (u / (1 - u)); the queue is full (60 ms), so the round trip is 2 x (2 + 60) + 20 =
    144 ms and the pipe holds 100 Mbps x (144 + 60) ms = 1,700 packets, 34.7 a flow:
    p = 8 / (3 x 34.7^2) = 0.22 %, times u^k = 0.98."""
    shaped = Link(capacity_mbps=1000.0, shaper_mbps=100.0, rt_weight_pct=40.0)
    window = 100e3 * (144.0 + 60.0) / 12000.0 / 49.0
    expected = 0.98 * 8.0 / (3.0 * window**2)
    assert tcp_loss(0.98, 100.0, 100.0, 144.0) == pytest.approx(expected)
    assert backhaul(98.0, shaped, 100.0).loss == pytest.approx(1e-4 + expected)
    assert 0.002 < expected < 0.0023
    # A few flows in a deep buffer hardly lose anything; a line-rate link with room none.
    assert tcp_loss(0.84, 100.0, 100.0, 100.0) < 1e-4
    assert backhaul(350.0, Link(1000.0, 1000.0, 40.0), 50.0).loss == pytest.approx(1e-4)
    assert tcp_loss(0.9, 100.0, None, 100.0) == 0.0


@given(st.floats(1.0, 99.9), st.floats(1.0, 99.9), st.floats(5.0, 200.0))
def test_tcp_loses_more_as_the_link_fills(a, b, peak):
    low, high = sorted((a, b))
    shaped = Link(capacity_mbps=1000.0, shaper_mbps=100.0, rt_weight_pct=40.0)
    assert backhaul(low, shaped, peak).loss <= backhaul(high, shaped, peak).loss + 1e-15


def test_a_queue_held_full_varies_little():
    """Delays live inside the buffer: a saturated shaper keeps its queue near full, so its
    delay is high and steady (jitter from TCP's sawtooth only), unlike a queue at half."""
    shaped = Link(capacity_mbps=1000.0, shaper_mbps=100.0, rt_weight_pct=40.0)
    full = backhaul(130.0, shaped, 100.0)
    assert full.delay_ms >= BASE_DELAY_MS + QUEUE_MS - 1e-9
    assert full.jitter_p95_ms == pytest.approx(0.2 + 0.5 * STANDING_FILL * QUEUE_MS * 0.25)
    assert backhaul(97.0, shaped).jitter_p95_ms > full.jitter_p95_ms


def test_a_link_busy_on_average_saturates_in_the_intervals_busiest_minutes():
    """By hand, 90 % of a 100 Mbps shaper whose load moves log-normally over the interval (sigma
    0.2, mean 0.9): ln Y ~ N(m, 0.04) with m = ln 0.9 - 0.02, and the unserved share
    E[(1 - 1/Y)+] = Phi(m / s) - e^(s^2) / 0.9 x Phi((m - s^2) / s) = 2.93 %. A steady load
    leaves none unserved; the spread's drops come on top of the steady ones."""
    shaped = Link(capacity_mbps=1000.0, shaper_mbps=100.0, rt_weight_pct=40.0)
    s, m = 0.2, math.log(0.9) - 0.02
    phi = statistics.NormalDist().cdf
    expected = phi(m / s) - math.exp(s * s) / 0.9 * phi((m - s * s) / s)
    busy = backhaul(90.0, shaped, 50.0, spread=0.2)
    assert 1.0 - busy.carried_share == pytest.approx(expected, rel=1e-9)
    assert 0.029 < expected < 0.0295
    steady = backhaul(90.0, shaped, 50.0)
    assert steady.carried_share == 1.0 and busy.loss > 10 * steady.loss
    # Far from saturation the spread changes next to nothing.
    assert backhaul(30.0, shaped, 50.0, spread=0.2).loss < 2e-4


@given(st.floats(1.0, 400.0), st.floats(1.0, 400.0), st.floats(5.0, 400.0))
def test_loss_never_falls_as_the_offered_traffic_rises_over_an_interval(a, b, peak):
    low, high = sorted((a, b))
    shaped = Link(capacity_mbps=1000.0, shaper_mbps=100.0, rt_weight_pct=40.0)
    lo, hi = backhaul(low, shaped, peak, 0.2), backhaul(high, shaped, peak, 0.2)
    assert hi.loss >= lo.loss - 1e-15 and hi.carried_share <= lo.carried_share + 1e-15


def test_interval_mean_is_the_value_itself_without_spread_and_exact_for_a_line():
    assert interval_mean(lambda u: u * u, 0.7, 0.0) == pytest.approx(0.49)
    # The log-normal factor has mean 1: a linear function's mean is its value at the mean.
    assert interval_mean(lambda u: 3.0 * u + 1.0, 0.7, 0.3) == pytest.approx(3.1)
