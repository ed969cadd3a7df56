"""The slicing model: the network slices of one NR cell, their admission control and the QoS their
sessions get, as a pure function of demand and policy.

A cell carries an eMBB and a URLLC slice (TS 23.501 §5.15) and traffic outside them (default
bearers). A slice's policy is the OSS's configuration of it, after TS 28.541's slice and RRM
policy attributes: ``admission_threshold_pct``, ``priority_level`` (1-8, 1 the highest, as the
5QI priority level of TS 23.501 §5.7.3.3), ``min_guaranteed_mbps`` (a guaranteed bit rate,
TS 23.501 §5.7.2.5; TS 28.541's rRMPolicyMinRatio), ``max_share_pct`` (rRMPolicyMaxRatio) and
``latency_budget_ms`` (a packet delay budget, TS 23.501 §5.7.3.4). With C the cell's capacity
(all PRBs at its users' mean spectral efficiency), per slice:

* **Admission** (a loss system, Erlang B): sessions arrive at λ per minute and hold h minutes, an
  offered traffic ``A = λ h`` erlangs. The slice's max share ``Cmax = max_share C`` holds
  ``N = Cmax / r`` sessions of rate r; a request is refused while the slice's utilisation
  ``n r / Cmax`` is at or above the threshold T, i.e. while ``n ≥ T N``, so at most
  ``S = ⌈T N⌉`` sessions are up. The share refused is Erlang's loss formula
  ``B(S, A) = (A^S / S!) / Σ_{k≤S} A^k / k!`` (:func:`erlang_b`); the slice carries
  ``A (1 - B)`` sessions, ``D = A (1 - B) r`` Mbps (at most Cmax), and its utilisation is
  ``D / Cmax``, so it stays just under T: a low threshold shows as refusals at a utilisation
  below it while the offered load ``A r / Cmax`` (:attr:`SliceKPIs.offered_load`) is higher.
* **Contention** (preemptive-resume priority M/G/1: Cobham 1954; Kleinrock, *Queueing Systems*
  vol. 2 §3.7): the cell serves bursts of data (:data:`BURST_MBIT`, exponential sizes, a
  service time ``x = b / C``) in classes. A slice's traffic up to its guaranteed rate,
  ``min(D, GBR)``, goes before everything that is not guaranteed (guarantees are met first,
  TS 23.501 §5.7.3.3; at most :data:`GBR_MAX` of C, pro rata beyond); its excess competes with
  the other slice's excess and the default bearers (load ``other_load``, level
  :data:`OTHER_PRIORITY`); within each tier the lower level goes first, equal levels share.
  With ``σ⁻`` the load (a share of C) of the classes before a class, ``σ`` that plus its own
  level's, and ``R = Σ ρ_i x_i`` their residual work, a burst takes ``T = x / (1 - σ⁻) +
  R / ((1 - σ⁻)(1 - σ))``, a delay ``W = T - x`` beyond its own transmission; a slice's W̄,
  its parts' traffic-weighted mean, is at most :data:`QUEUE_MS` (the PDCP discard timer,
  TS 38.323 §5.3). At light load σ is small and priority barely matters; near a busy cell's
  capacity the last classes starve. Where what goes first leaves a level less than its load
  (``σ⁻ + its load > 1``), the level is served ``(1 - σ⁻)`` of C in proportion to its classes'
  loads and the rest is dropped.
* **Throughput** (a session's volume over the time it has data waiting, as TS 28.552 §5.1.1.3
  counts UE throughput): a burst runs at ``C x / (x + W̄)``, and a session at that or at its
  rate r, whichever is higher (its buffer is empty part of the time); once part of its traffic
  is dropped, the buffer never empties and the session gets what it is served, ``φ r`` (φ the
  share served). That mean γ
  (at most Cmax) spreads over sessions log-normally with the UEs' radio conditions (s =
  :data:`RADIO_SPREAD`): ``p50 = γ e^(-s²/2)``, ``p95 = γ e^(1.645 s - s²/2)``.
* **Latency and jitter**: ``latency = air + W̄``; the wait is taken as exponential with mean W̄,
  so ``jitter = √((J air)² + W̄²)`` (J = :data:`AIR_JITTER`, the scheduling and HARQ spread).
* **Target breaches**: a session breaches when its throughput is below the rate it asks for,
  ``P(γ Z < r) = Φ((ln(r / γ) + s²/2) / s)``, or its packets wait past the budget L,
  ``exp(-(L - air) / W̄)`` (all, if the air interface alone takes L); independent, so
  ``violation = 1 - (1 - P_rate)(1 - P_late)``.

Monotone where it matters: a lower threshold or more requests never lower the denials; more
requests never lower the utilisation; a worse priority level never raises a slice's throughput
or lowers its latency, jitter or breaches; a larger guarantee never does the opposite. The first
three hold by construction; the last because moving part of a slice's traffic ahead in a
priority queue never lengthens the slice's mean delay (Kleinrock's conservation law); the tests
check all four on random demands and policies.

What it simplifies: sessions ask a fixed mean rate (no rate adaptation, no retries after a
refusal); the number of sessions enters by its mean, not followed over time; the classes share
one server at the cell's mean spectral efficiency (the max share caps a slice's sessions and
rate, not its PRBs slot by slot); a guarantee a slice does not use is left to the others; the
budget is held against the air interface's part of the delay (the caller adds transport and
core). Pure Python over a handful of classes: a few tens of µs for two slices.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: Mean size of a burst of data (an object, a video chunk, a control message), Mbit.
BURST_MBIT = {"eMBB": 1.0, "URLLC": 0.1}
#: Default-bearer traffic (web, apps): its burst size and the priority level it competes at.
OTHER_BURST_MBIT = 0.5
OTHER_PRIORITY = 5
#: The deepest wait before packets are discarded (PDCP discardTimer), ms.
QUEUE_MS = 300.0
#: The share of the cell's capacity guarantees may hold (the rest stays for signalling and the
#: default bearers); guarantees beyond it are honoured pro rata.
GBR_MAX = 0.9
#: Log-normal σ of a session's throughput around its slice's mean (the UEs' radio conditions):
#: p95 / p50 = e^(1.645 σ) ≈ 2.3.
RADIO_SPREAD = 0.5
#: Standard deviation of the air interface's own delay (scheduling, HARQ) over its mean.
AIR_JITTER = 0.25
Z95 = 1.6448536269514722
# Loads of a class are kept below 1 (an unstable queue waits QUEUE_MS).
_FULL = 1.0 - 1e-9


@dataclass(frozen=True)
class SliceDemand:
    """What a slice's users ask of it."""

    service_type: str  # "eMBB" or "URLLC"
    requests_per_min: float  # new session requests per minute
    session_min: float  # mean session holding time, minutes
    session_mbps: float  # mean rate a session asks for while active


@dataclass(frozen=True)
class SliceKPIs:
    """A slice's counters and the QoS its sessions get."""

    utilisation_pct: float  # mean share of the slice's max share in use, 0-100
    admission_denial_pct: float  # share of requests refused, 0-100
    requests_per_min: float
    throughput_p50_mbps: float  # per admitted session
    throughput_p95_mbps: float
    latency_ms: float  # mean user-plane latency (air + queueing; the caller adds transport, core)
    jitter_ms: float
    violation_pct: float  # share of admitted sessions missing the rate or latency target, 0-100
    qos_share: float  # share meeting it, 0-1 (= 1 - violation_pct/100)
    offered_load: float  # offered sessions' traffic over the slice's max share (may exceed 1)
    carried_mbps: float  # the admitted sessions' traffic


def erlang_b(servers: int, offered: float) -> float:
    """Erlang's loss formula: the share of requests a system of ``servers`` refuses at ``offered``
    erlangs.

    >>> erlang_b(2, 1.0)
    0.2
    >>> erlang_b(0, 3.0)
    1.0
    """
    if servers <= 0:
        return 1.0
    if offered <= 0.0:
        return 0.0
    # B = P(N = S) / P(N ≤ S) for N Poisson with mean A, and P(N ≤ S) > 0.3 once S > A: a loss
    # below 1e-12 is nil (and P(N = S) rises with A there, so the loss still rises with A).
    if servers > offered and servers * math.log(offered) - offered - math.lgamma(servers + 1) < -30:
        return 0.0
    # 1/B(k) = 1 + k / (A B(k-1)). Where k < A, B(k) ≈ 1 - k/A and an error in 1/B shrinks by
    # k/A per step: start the recursion where those steps have shrunk it below 1e-16 at S (or
    # at A, 14 standard deviations on).
    root = math.sqrt(offered)
    start = max(0, int(min(servers, offered - 10.0 * root) - 4.0 * root - 20.0))
    inverse = 1.0 / (1.0 - start / offered) if start else 1.0
    for k in range(start + 1, servers + 1):
        inverse = 1.0 + k / offered * inverse
    return 1.0 / inverse


def _normal_cdf(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def _delays(classes: Sequence[tuple[tuple[int, int], float, float]]) -> list[tuple[float, float]]:
    """Per class ``(key, load, burst_ms)`` (the lower key goes first; load a share of the cell's
    capacity; burst_ms a burst's service time at it): the mean delay of a burst beyond its own
    service time, waiting and preempted, under preemptive-resume priority (unbounded), and
    the share of the class's traffic the cell serves (below 1 where what goes first leaves it too
    little; a level's classes share what is left in proportion to their loads)."""
    levels: dict[tuple[int, int], tuple[float, float]] = {}
    for key, load, burst in classes:
        total, work = levels.get(key, (0.0, 0.0))
        levels[key] = (total + load, work + load * burst)
    # Per level: the load served before it, that plus its own, and their residual work.
    ahead = residual = 0.0
    cumulative = {}
    for key in sorted(levels):
        total, work = levels[key]
        cumulative[key] = (ahead, ahead + total, residual + work)
        ahead, residual = ahead + total, residual + work
    out = []
    for key, _, burst in classes:
        before, mine, work = cumulative[key]
        free = 1.0 - min(before, _FULL)
        # T - x = x σ⁻ / (1 - σ⁻) + R / ((1 - σ⁻)(1 - σ)).
        delay = (burst * (1.0 - free) + work / (1.0 - min(mine, _FULL))) / free
        # A level's classes get the same share of what is left; an idle level alone gets the
        # limit of that share as its load goes to zero (none when what goes first fills the cell).
        left = max(0.0, 1.0 - before)
        served = min(1.0, left / (mine - before)) if mine > before else float(left > 0.0)
        out.append((delay, served))
    return out


def slice_kpis(
    demands: Sequence[SliceDemand],
    policies: Sequence[Mapping[str, Any]],
    capacity_mbps: float,
    other_load: float,
    air_latency_ms: float,
) -> tuple[SliceKPIs, ...]:
    """The KPIs of a cell's slices (see the module docstring).

    ``capacity_mbps``: what the cell carries with all its PRBs at its users' mean spectral
    efficiency; ``other_load``: the share of it the traffic outside these slices uses (it competes
    at priority level :data:`OTHER_PRIORITY`); ``air_latency_ms``: the cell's own scheduling and
    HARQ delay at its load.
    """
    if len(demands) != len(policies):
        raise ValueError("one policy per slice demand")
    capacity = max(float(capacity_mbps), 1e-6)
    air = max(float(air_latency_ms), 0.0)
    s = RADIO_SPREAD

    # Admission: a loss system of ⌈T N⌉ sessions.
    slices = []
    for demand, policy in zip(demands, policies, strict=True):
        cap = max(capacity * min(max(float(policy["max_share_pct"]), 0.0), 100.0) / 100.0, 1e-9)
        rate = max(float(demand.session_mbps), 1e-9)
        offered = max(float(demand.requests_per_min), 0.0) * max(float(demand.session_min), 0.0)
        threshold = min(max(float(policy["admission_threshold_pct"]), 0.0), 100.0) / 100.0
        # n sessions are admitted while n < T N (a hair's tolerance: 95 % of 100 is 95).
        denied = erlang_b(max(0, math.ceil(threshold * cap / rate - 1e-9)), offered)
        carried = min(offered * (1.0 - denied) * rate, cap)
        gbr = max(float(policy["min_guaranteed_mbps"]), 0.0)
        slices.append((demand, policy, cap, rate, offered, denied, carried, gbr))

    # Contention: each slice's guaranteed and excess parts are priority classes, with the default
    # bearers.
    wanted = sum(min(carried, gbr) for *_, carried, gbr in slices)
    honoured = min(1.0, GBR_MAX * capacity / wanted) if wanted > 0.0 else 1.0
    classes = []
    shares = []
    for demand, policy, _, _, _, _, carried, gbr in slices:
        guaranteed = min(carried, gbr) * honoured
        # The guaranteed part's share of the slice's traffic (an idle slice's first session is
        # guaranteed if the slice has a guarantee).
        shares.append(guaranteed / carried if carried > 0.0 else float(gbr > 0.0))
        level = int(policy["priority_level"])
        burst = BURST_MBIT[demand.service_type] / capacity * 1e3
        classes.append(((0, level), guaranteed / capacity, burst))
        classes.append(((1, level), (carried - guaranteed) / capacity, burst))
    other = min(max(float(other_load), 0.0), 1.0)
    classes.append(((1, OTHER_PRIORITY), other, OTHER_BURST_MBIT / capacity * 1e3))
    delays = _delays(classes)

    out = []
    for i, (demand, policy, cap, rate, offered, denied, carried, _) in enumerate(slices):
        f, burst = shares[i], classes[2 * i][2]
        (w_g, served_g), (w_e, served_e) = delays[2 * i], delays[2 * i + 1]
        # Bounded by the discard timer once mixed (bounding each part first would hide what a
        # part that moves up the queue gains).
        wait = min(f * w_g + (1.0 - f) * w_e, QUEUE_MS)
        # A session's volume over the time it has data waiting: never less than the rate it is
        # served at, and just that once part of its traffic is starved (its buffer never empties).
        served = f * served_g + (1.0 - f) * served_e
        starved = (f > 0.0 and served_g < 1.0) or (f < 1.0 and served_e < 1.0)
        mean = served * rate if starved else max(burst * capacity / (burst + wait), rate)
        mean = max(min(cap, mean), 1e-12)
        slow = _normal_cdf((math.log(rate / mean) + s * s / 2.0) / s)
        slack = float(policy["latency_budget_ms"]) - air
        # The wait taken as exponential with the slice's mean: the share of packets past L.
        late = math.exp(min(0.0, -slack / wait)) if wait > 0.0 else float(slack <= 0.0)
        violation = min(1.0, 1.0 - (1.0 - slow) * (1.0 - late))
        out.append(
            SliceKPIs(
                utilisation_pct=min(100.0, 100.0 * carried / cap),
                admission_denial_pct=100.0 * denied,
                requests_per_min=float(demand.requests_per_min),
                throughput_p50_mbps=mean * math.exp(-s * s / 2.0),
                throughput_p95_mbps=mean * math.exp(Z95 * s - s * s / 2.0),
                latency_ms=air + wait,
                jitter_ms=math.sqrt((AIR_JITTER * air) ** 2 + wait * wait),
                violation_pct=100.0 * violation,
                qos_share=1.0 - violation,
                offered_load=offered * rate / cap,
                carried_mbps=carried,
            )
        )
    return tuple(out)
