"""The transport model: the site's backhaul link, its shaper and queues, and what they add to
the cells' traffic (a throughput cap, delay, jitter and loss).

A site's cells send their carried traffic over one link of ``capacity_mbps``; a traffic shaper
(``bh_shaper_mbps``) may hold it to less. With the offered traffic λ against the rate the shaper
lets through μ = min(capacity, shaper):

* **utilisation** ``u = λ / μ``; the link carries ``min(λ, μ)``: its elastic traffic backs off
  to that (the share ``max(0, 1 - μ / λ)`` of the demand goes unserved; TCP's drops below are
  how it backs off), and a healthy link loses a residual 10^-4 of its packets. The offered
  traffic moves over a counter's interval (``spread``: log-normal around its mean), so a link
  busy on average is saturated in the interval's busiest minutes: the unserved share and the
  drops are averaged over the interval;
* **queueing** as M^X/M/1 on 1,500-byte packets arriving in bursts of :data:`BURST`: mean wait
  ``s (BURST + 1) / 2 x u / (1 - u)`` with ``s`` the service time of one packet at μ, p95 wait
  three times the mean (the exponential's 95th percentile), the queue bounded at
  :data:`QUEUE_MS` (elastic traffic keeps it there: TCP backs off on the drops below);
* **real-time traffic** (a share :data:`RT_SHARE` of it) gets the weight
  ``bh_rt_queue_weight_pct`` of a weighted-fair scheduler: its queue's utilisation is
  ``RT_SHARE u / w``, so its wait shrinks as its weight grows;
* **TCP's standing queue**: where the link is its flows' bottleneck (enough of them active that
  their air-interface rates exceed it), TCP fills its buffer (:func:`standing_queue_ms`); the
  best-effort wait is the larger of that and the bursts' wait;
* **TCP's drops**: while the link is their bottleneck, TCP flows saw-tooth against its buffer and
  each loses about one packet per cycle (:func:`tcp_loss`): negligible with a few flows in a
  deep buffer, a few tenths of a per cent as the link nears saturation and flows crowd it,
  up to a few per cent while it is saturated;
* **flaps** (a link that drops and recovers, :attr:`Link.flaps_per_hr`): each outage loses what
  was in flight for :data:`FLAP_OUTAGE_MS`; the packets it delays reach the p95 once they are
  more than 5 % of all (a link down over 3 minutes an hour).

The cells' end-to-end latency adds the backhaul delay to the air interface's, and their users'
throughput is scaled by the share the link carries.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

PACKET_BITS = 1500 * 8
#: Propagation and switching of a healthy fibre backhaul, ms.
BASE_DELAY_MS = 2.0
#: The deepest queue before tail drop, ms of traffic at the link's rate.
QUEUE_MS = 60.0
FLAP_OUTAGE_MS = 800.0
#: Mean packets per burst of the offered traffic.
BURST = 20
#: Share of the traffic that is real-time (voice, URLLC) and goes to the weighted RT queue.
RT_SHARE = 0.15
RESIDUAL_LOSS = 1e-4
#: The round trip of a flow beyond the backhaul (air interface, core, a nearby server), ms.
ACCESS_RTT_MS = 20.0


@dataclass(frozen=True)
class Link:
    """A site's backhaul link as configured, with what is wrong with it (if anything)."""

    capacity_mbps: float
    shaper_mbps: float
    rt_weight_pct: float
    flaps_per_hr: float = 0.0
    interface_errors_per_hr: float = 0.0


@dataclass(frozen=True)
class Backhaul:
    """The link's counters and what it does to the traffic it carries."""

    utilisation: float  # offered over the rate let through (may exceed 1)
    carried_share: float  # of the offered traffic, what the link carries (elastic: the rest waits)
    loss: float  # share of packets lost
    delay_ms: float  # mean one-way delay of best-effort traffic
    delay_p95_ms: float
    rt_delay_ms: float  # mean delay of real-time (prioritised) traffic
    jitter_p95_ms: float
    queue_occupancy: float  # share of the queue in use
    flaps_per_hr: float
    loss_bursts_per_hr: float
    interface_errors_per_hr: float


#: Gauss-Hermite nodes for a mean over a standard normal (probabilists' weights, summing to 1).
_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(24)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()


def interval_mean(loss_at: Callable[[float], float], u: float, spread: float) -> float:
    """The mean of ``loss_at`` over a counter's interval whose offered load is log-normal around
    the mean utilisation ``u`` (sigma ``spread``, mean ``u``); ``loss_at(u)`` with none."""
    if spread <= 0.0:
        return loss_at(u)
    factors = np.exp(spread * _NODES - spread * spread / 2.0)
    return float(sum(w * loss_at(u * f) for w, f in zip(_WEIGHTS, factors, strict=True)))


def unserved(u: float, spread: float = 0.0) -> float:
    """The share of the offered traffic a link at mean utilisation ``u`` cannot carry over an
    interval whose load is log-normal around ``u`` (sigma ``spread``): E[(1 - 1/Y)+], in closed
    form for ln Y ~ N(m, s^2), m = ln u - s^2 / 2: Phi(m / s) - e^(s^2) / u Phi((m - s^2) / s)
    (the kink at Y = 1 defeats quadrature)."""
    if spread <= 0.0 or u <= 0.0:
        return max(0.0, 1.0 - 1.0 / u) if u > 1.0 else 0.0
    s = spread
    m = math.log(u) - s * s / 2.0
    share = _phi(m / s) - math.exp(s * s) / u * _phi((m - s * s) / s)
    return min(max(share, 0.0), 1.0)


def _phi(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def backhaul(
    offered_mbps: float, link: Link, flow_peak_mbps: float | None = None, spread: float = 0.0
) -> Backhaul:
    """What the link does to ``offered_mbps`` of traffic (see the module docstring); its
    flows would each reach ``flow_peak_mbps`` without the link (their air-interface rate);
    ``spread``: the log-normal sigma of the offered traffic over a counter's interval, which
    the drops are averaged over (none: a steady load)."""
    rate = max(min(link.capacity_mbps, link.shaper_mbps), 1e-6)
    u = offered_mbps / rate
    # Traffic arrives in bursts (M^X/M/1, mean burst BURST packets): the wait of a burst's
    # packets is (BURST + 1) / 2 services times u / (1 - u).
    service_ms = PACKET_BITS / (rate * 1e3) * (BURST + 1) / 2.0

    def queues(load: float) -> tuple[float, float]:  # the bursts' wait and TCP's standing queue
        busy = min(load, 0.995)
        bursts = min(service_ms * busy / (1.0 - busy), QUEUE_MS)
        return bursts, standing_queue_ms(load, rate, flow_peak_mbps)

    def tcp_at(load: float) -> float:  # TCP's drops at a load, over that load's round trip
        rtt_ms = 2.0 * (BASE_DELAY_MS + max(queues(load))) + ACCESS_RTT_MS
        return tcp_loss(load, rate, flow_peak_mbps, rtt_ms)

    bursts, standing = queues(u)
    wait = max(bursts, standing)
    unserved_share = unserved(u, spread)
    flap_loss = link.flaps_per_hr * FLAP_OUTAGE_MS / 3.6e6
    tcp = interval_mean(tcp_at, u, spread)
    loss = min(1.0, RESIDUAL_LOSS + flap_loss + tcp)
    # The real-time queue: its own traffic (a share RT_SHARE of the offered) over its weight.
    weight = min(max(link.rt_weight_pct / 100.0, 0.01), 1.0)
    rt_busy = min(RT_SHARE * u / weight, 0.995)
    rt_wait = min(service_ms * rt_busy / (1.0 - rt_busy), QUEUE_MS)
    # Packets caught in an outage wait up to FLAP_OUTAGE_MS (uniformly): they reach the p95
    # only when they are more than 5 % of all, and then its tail is theirs.
    flap_delay = FLAP_OUTAGE_MS * max(0.0, 1.0 - 0.05 / flap_loss) if flap_loss else 0.0
    return Backhaul(
        utilisation=u,
        carried_share=1.0 - unserved_share,
        loss=loss,
        delay_ms=BASE_DELAY_MS + wait,
        # A standing queue's tail is a full buffer; its jitter the sawtooth around its level.
        delay_p95_ms=BASE_DELAY_MS
        + min(QUEUE_MS, max(3.0 * bursts, standing / STANDING_FILL))
        + flap_delay,
        rt_delay_ms=BASE_DELAY_MS + rt_wait,
        # Delays are confined to the buffer: a queue near full varies as little as a near empty.
        jitter_p95_ms=0.2
        + 2.0 * min(bursts, QUEUE_MS - bursts)
        + 0.5 * standing * (1.0 - STANDING_FILL)
        + 0.5 * flap_delay,
        queue_occupancy=min(1.0, wait / QUEUE_MS + (0.3 if u > 1.0 else 0.0)),
        flaps_per_hr=link.flaps_per_hr,
        loss_bursts_per_hr=link.flaps_per_hr + 30.0 * min(unserved_share, 1.0),
        interface_errors_per_hr=link.interface_errors_per_hr,
    )


#: How full TCP keeps the buffer of a bottleneck it saturates, on average over its sawtooth.
STANDING_FILL = 0.75


def standing_queue_ms(u: float, rate_mbps: float, flow_peak_mbps: float | None) -> float:
    """The standing queue TCP keeps at the link while the link is its flows' bottleneck.

    Flows arrive as a processor-sharing queue (P(N >= n) = u^n); each would run at its
    air-interface rate, so the link is their bottleneck once ``k = rate / flow_peak`` of them
    are active, and then TCP fills its buffer (:data:`STANDING_FILL` of :data:`QUEUE_MS`).
    A link far above its flows' rates (line rate, healthy) never is; a shaper at a few flows'
    rates is whenever it is busy."""
    k = _saturating_flows(u, rate_mbps, flow_peak_mbps)
    return 0.0 if k is None else STANDING_FILL * QUEUE_MS * min(u, 1.0) ** k


def _saturating_flows(u: float, rate_mbps: float, flow_peak_mbps: float | None) -> float | None:
    """How many flows at their air-interface rate fill the link, ``k = rate / flow_peak`` (at
    least one); None where no flow rate is known or nothing is offered. The link is their
    bottleneck while ``k`` are active: ``u^k`` of the time in processor sharing."""
    if not flow_peak_mbps or flow_peak_mbps <= 0.0 or u <= 0.0:
        return None
    return max(1.0, rate_mbps / flow_peak_mbps)


#: The highest drop rate TCP's sawtooth is taken to: beyond, flows stall in timeouts instead.
TCP_LOSS_CAP = 0.2


def tcp_loss(u: float, rate_mbps: float, flow_peak_mbps: float | None, rtt_ms: float) -> float:
    """The share of packets the link drops as TCP flows probe it, while it is their bottleneck.

    The link holds ``rate x (rtt + buffer)`` of packets in flight and queued; the flows active
    at once (processor sharing's mean ``u / (1 - u)``, at least the ``k = rate / flow_peak``
    that saturate it) share that, a window ``W`` each. A Reno flow's window grows by one packet
    per round trip from W/2 to W and halves on a drop: one loss per ``3 W^2 / 8`` packets
    (Mathis et al., CCR 1997), ``p = 8 / (3 W^2)``; weighted by the chance the link is their
    bottleneck (``u^k``, as :func:`standing_queue_ms`)."""
    k = _saturating_flows(u, rate_mbps, flow_peak_mbps)
    if k is None:
        return 0.0
    busy = min(u, 0.995)
    flows = max(k, busy / (1.0 - busy))
    packets = rate_mbps * 1e3 * (rtt_ms + QUEUE_MS) / PACKET_BITS
    window = max(packets / flows, 1.0)
    return min(u, 1.0) ** k * min(TCP_LOSS_CAP, 8.0 / (3.0 * window**2))


def core_delay_ms() -> float:
    """The packet core and the internet hop to a nearby server, ms."""
    return 5.0


#: The least share of the link a flow gets, however loaded (its TCP window keeps a share).
FLOW_FLOOR = 0.02


def flow_rate_mbps(hauled: Backhaul, link: Link) -> float:
    """What one flow gets through the link: processor sharing at the rate the shaper lets
    through, ``mu (1 - u)`` (the link is the bottleneck of a user's TCP flow only when that is
    less than the air interface gives it)."""
    rate = max(min(link.capacity_mbps, link.shaper_mbps), 1e-6)
    return rate * max(1.0 - min(hauled.utilisation, 1.0), FLOW_FLOOR)
