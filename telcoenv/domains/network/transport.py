"""The transport model: the site's backhaul link, its shaper and queues, and what they add to
the cells' traffic (a throughput cap, delay, jitter and loss).

A site's cells send their carried traffic over one link of ``capacity_mbps``; a traffic shaper
(``bh_shaper_mbps``) may hold it to less. With the offered traffic λ against the rate the shaper
lets through μ = min(capacity, shaper):

* **utilisation** ``u = λ / μ``; the link carries ``min(λ, μ)`` and tail-drops the rest (loss
  ``max(0, 1 - μ / λ)``), on top of a residual loss of a healthy link (10^-4);
* **queueing** as M^X/M/1 on 1,500-byte packets arriving in bursts of :data:`BURST`: mean wait
  ``s (BURST + 1) / 2 x u / (1 - u)`` with ``s`` the service time of one packet at μ, p95 wait
  three times the mean (the exponential's 95th percentile), the queue bounded at
  :data:`QUEUE_MS` (past it, packets drop instead);
* **real-time traffic** (a share :data:`RT_SHARE` of it) gets the weight
  ``bh_rt_queue_weight_pct`` of a weighted-fair scheduler: its queue's utilisation is
  ``RT_SHARE u / w``, so its wait shrinks as its weight grows;
* **TCP's standing queue**: where the link is its flows' bottleneck (enough of them active that
  their air-interface rates exceed it), TCP fills its buffer (:func:`standing_queue_ms`); the
  best-effort wait is the larger of that and the bursts' wait;
* **flaps** (a link that drops and recovers, :attr:`Link.flaps_per_hr`): each outage loses what
  was in flight for :data:`FLAP_OUTAGE_MS` and adds the retransmission delay to the p95.

The cells' end-to-end latency adds the backhaul delay to the air interface's, and their users'
throughput is scaled by the share the link carries.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    carried_share: float  # of the offered traffic, what arrives
    loss: float  # share of packets lost
    delay_ms: float  # mean one-way delay of best-effort traffic
    delay_p95_ms: float
    rt_delay_ms: float  # mean delay of real-time (prioritised) traffic
    jitter_p95_ms: float
    queue_occupancy: float  # share of the queue in use
    flaps_per_hr: float
    loss_bursts_per_hr: float
    interface_errors_per_hr: float


def backhaul(offered_mbps: float, link: Link, flow_peak_mbps: float | None = None) -> Backhaul:
    """What the link does to ``offered_mbps`` of traffic (see the module docstring); its
    flows would each reach ``flow_peak_mbps`` without the link (their air-interface rate)."""
    rate = max(min(link.capacity_mbps, link.shaper_mbps), 1e-6)
    u = offered_mbps / rate
    # Traffic arrives in bursts (M^X/M/1, mean burst BURST packets): the wait of a burst's
    # packets is (BURST + 1) / 2 services times u / (1 - u).
    service_ms = PACKET_BITS / (rate * 1e3) * (BURST + 1) / 2.0
    busy = min(u, 0.995)
    bursts = min(service_ms * busy / (1.0 - busy), QUEUE_MS)
    standing = standing_queue_ms(u, rate, flow_peak_mbps)
    wait = max(bursts, standing)
    tail_drop = max(0.0, 1.0 - 1.0 / u) if u > 1.0 else 0.0
    flap_loss = link.flaps_per_hr * FLAP_OUTAGE_MS / 3.6e6
    loss = min(1.0, RESIDUAL_LOSS + tail_drop + flap_loss)
    # The real-time queue: its own traffic (a share RT_SHARE of the offered) over its weight.
    weight = min(max(link.rt_weight_pct / 100.0, 0.01), 1.0)
    rt_busy = min(RT_SHARE * u / weight, 0.995)
    rt_wait = min(service_ms * rt_busy / (1.0 - rt_busy), QUEUE_MS)
    # A flap's retransmissions reach the p95 once there is more than one an hour or so.
    flap_delay = FLAP_OUTAGE_MS * min(1.0, link.flaps_per_hr / 20.0)
    return Backhaul(
        utilisation=u,
        carried_share=1.0 - loss,
        loss=loss,
        delay_ms=BASE_DELAY_MS + wait,
        # A standing queue's tail is a full buffer; its jitter the sawtooth around its level.
        delay_p95_ms=BASE_DELAY_MS
        + min(QUEUE_MS, max(3.0 * bursts, standing / STANDING_FILL))
        + flap_delay,
        rt_delay_ms=BASE_DELAY_MS + rt_wait,
        jitter_p95_ms=0.2
        + 2.0 * bursts
        + 0.5 * standing * (1.0 - STANDING_FILL)
        + 0.5 * flap_delay,
        queue_occupancy=min(1.0, wait / QUEUE_MS + (0.3 if u > 1.0 else 0.0)),
        flaps_per_hr=link.flaps_per_hr,
        loss_bursts_per_hr=link.flaps_per_hr + (30.0 * min(tail_drop, 1.0) if u > 1.0 else 0.0),
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
    if not flow_peak_mbps or flow_peak_mbps <= 0.0 or u <= 0.0:
        return 0.0
    k = max(1.0, rate_mbps / flow_peak_mbps)
    return STANDING_FILL * QUEUE_MS * min(u, 1.0) ** k


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
