"""Implementations of the network tools: one typed function per ``tools/<name>.json`` spec.

Each function receives a :class:`ToolContext` (the episode's network, a generator seeded by the
call itself, so that the same call returns the same data) and the validated arguments, and returns
a JSON-ready dict. A call the network refuses raises :class:`~telcoenv.errors.ToolError`.
Write tools change the :class:`~telcoenv.domains.network.state.NetworkState` and log the change.
"""

from __future__ import annotations

import bisect
import datetime as dt
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from telcoenv.domains.network.dynamics import recompute
from telcoenv.domains.network.kpis import kpi_band, kpi_catalogue, series_batch
from telcoenv.domains.network.state import (
    PROFILE,
    Cell,
    NetworkState,
    free_pci,
    parse_window,
)
from telcoenv.errors import ToolError

ToolFunction = Callable[..., dict[str, Any]]
IMPLEMENTATIONS: dict[str, ToolFunction] = {}

_BACKHAUL_PARAMETERS = ("bh_rt_queue_weight_pct", "bh_shaper_mbps")
_TIME = "%Y-%m-%dT%H:%M:%SZ"


class ToolContext:
    """What a tool implementation may use: the network, a per-call generator, the step number.

    The generator is seeded by the call itself and created on first use (most tools need none).
    """

    __slots__ = ("_rng", "_seed", "state", "step")

    def __init__(self, state: NetworkState, seed: Callable[[], list[int]], step: int) -> None:
        self.state, self._seed, self.step = state, seed, step
        self._rng: np.random.Generator | None = None

    @property
    def rng(self) -> np.random.Generator:
        if self._rng is None:
            self._rng = np.random.default_rng(self._seed())
        return self._rng


def tool(function: ToolFunction) -> ToolFunction:
    """Register ``function`` as the implementation of the spec with the same name."""
    IMPLEMENTATIONS[function.__name__] = function
    return function


# --- helpers -------------------------------------------------------------------------------------


def _quoted(name: str, value: float) -> dict[str, Any]:
    info = kpi_catalogue().kpis[name]
    return {
        "value": round(value * info.scale, info.decimals),
        "unit": kpi_catalogue().units[info.unit].en,
    }


def _kpi_table(kpis: dict[str, float]) -> dict[str, dict[str, Any]]:
    return {name: _quoted(name, value) for name, value in kpis.items()}


def _cell_summary(state: NetworkState, cell: Cell) -> dict[str, Any]:
    return {
        "cell_id": cell.cell_id,
        "site_id": cell.site_id,
        "cluster_id": state.cluster_id,
        "technology": cell.tech,
        "band": cell.band,
        "role": cell.role,
        "area": cell.area,
        "pci": cell.pci,
        "azimuth_deg": cell.azimuth_deg,
        "operational_state": cell.operational_state,
    }


def _window_bounds(state: NetworkState, window: str) -> tuple[dt.datetime, dt.datetime]:
    return state.now - parse_window(window), state.now


def _config_drift(state: NetworkState, cell: Cell) -> list[str]:
    _, baseline = state.baselines[state.baseline_id(cell.cell_id)]
    return sorted(name for name, value in baseline.items() if cell.config.get(name) != value)


def _alarms_for(state: NetworkState, cell: Cell) -> list[dict[str, Any]]:
    sources = {cell.cell_id, cell.site_id}
    if cell is state.serving:
        sources.add(state.backhaul.link_id)
    return [alarm.to_dict() for alarm in state.alarms if alarm.source in sources]


def _log_change(
    ctx: ToolContext, tool_name: str, target: str, changes: list[dict[str, Any]], reason: str | None
) -> str:
    change_id = f"CHG-{ctx.state.now:%Y%m%d}-{len(ctx.state.change_log) + 1:04d}"
    ctx.state.change_log.append(
        {
            "change_id": change_id,
            "step": ctx.step,
            "tool": tool_name,
            "target": target,
            "changes": changes,
            "reason": reason or "",
        }
    )
    return change_id


# --- core read tools -----------------------------------------------------------------------------


@tool
def oss_query(ctx: ToolContext, cell_id: str, window: str) -> dict[str, Any]:
    state = ctx.state
    cell = state.cell(cell_id)
    start, end = _window_bounds(state, window)
    record: dict[str, Any] = {
        "cell": _cell_summary(state, cell),
        "window": {"start": start.strftime(_TIME), "end": end.strftime(_TIME), "length": window},
        "kpis": _kpi_table(cell.kpis),
        "configuration": dict(cell.config),
        "baseline_config_id": state.baseline_id(cell.cell_id),
        "config_audit": {"parameters_off_baseline": _config_drift(state, cell)},
        "active_alarms": _alarms_for(state, cell),
    }
    if cell is state.serving:
        record["slices"] = [
            {
                "slice_id": s.slice_id,
                "service_type": s.service_type,
                "policy": dict(s.policy),
                "kpis": _kpi_table(s.kpis),
            }
            for s in state.slices.values()
        ]
        link = state.backhaul
        record["backhaul"] = {
            "link_id": link.link_id,
            "capacity_mbps": link.capacity_mbps,
            "configuration": dict(link.config),
            "kpis": _kpi_table(link.kpis),
        }
    return record


def _granularity(window: str, requested: str | None) -> dt.timedelta:
    if requested:
        return {
            "5m": dt.timedelta(minutes=5),
            "15m": dt.timedelta(minutes=15),
            "1h": dt.timedelta(hours=1),
        }[requested]
    length = parse_window(window)
    if length <= dt.timedelta(hours=1):
        return dt.timedelta(minutes=5)
    return dt.timedelta(minutes=15) if length <= dt.timedelta(hours=12) else dt.timedelta(hours=1)


def _family_kpis(state: NetworkState, cell: Cell, family: str) -> dict[str, float]:
    catalogue = kpi_catalogue()
    pools = [cell.kpis]
    if cell is state.serving:
        pools += [state.backhaul.kpis, *(s.kpis for s in state.slices.values())]
    found: dict[str, float] = {}
    for pool in pools:
        for name, value in pool.items():
            if catalogue.kpis[name].family == family and name not in found:
                found[name] = value
    if family == "config" and not found:
        found["mismatch_count"] = float(len(_config_drift(state, cell)))
    return found


@tool
def kpi_timeseries(
    ctx: ToolContext, cell_id: str, kpi: str, window: str, granularity: str | None = None
) -> dict[str, Any]:
    state = ctx.state
    cell = state.cell(cell_id)
    start, end = _window_bounds(state, window)
    step = _granularity(window, granularity)
    points = max(1, int((end - start) / step))
    if points > 400:
        raise ToolError(
            f"{points} points requested; use a coarser granularity (at most 400 points)",
            kind="bad_args",
        )
    first = np.datetime64(start.replace(tzinfo=None), "s") + np.timedelta64(step)
    stamps = [
        f"{s}Z"
        for s in np.datetime_as_string(first + np.arange(points) * np.timedelta64(step), unit="s")
    ]
    values = _family_kpis(state, cell, kpi)
    if not values:
        raise ToolError(f"no {kpi} counters are collected for {cell_id}", kind="not_found")
    catalogue = kpi_catalogue()
    names = list(values)
    digits = [catalogue.digits(n) for n in names]
    parts: list[list[np.ndarray]] = []
    for regime, count in _regime_segments(state, cell, start, step, points):
        # The first regime is the blueprint sample (its ranges bound the series); later ones
        # are the KPIs the causal model computed after a change.
        regime_values = [regime.get(n, values[n]) for n in names]
        bands = (
            [
                kpi_band(v, state.kpi_bounds.get(n) if regime is state.regimes[0][1] else None)
                for n, v in zip(names, regime_values, strict=True)
            ]
            if regime
            else [kpi_band(values[n], None) for n in names]
        )
        parts.append(series_batch(regime_values, bands, digits, count, ctx.rng))
    raws = [np.concatenate([part[i] for part in parts]) for i in range(len(names))]
    result: dict[str, Any] = {}
    p95 = min(points - 1, math.ceil(0.95 * points) - 1)
    for name, raw in zip(names, raws, strict=True):
        info = catalogue.kpis[name]
        shown = np.round(raw * info.scale, info.decimals)
        ordered = np.sort(shown)
        result[name] = {
            "unit": catalogue.units[info.unit].en,
            "values": shown.tolist(),
            "mean": round(float(shown.sum()) / points, info.decimals + 1),
            "min": float(ordered[0]),
            "max": float(ordered[-1]),
            "p95": float(ordered[p95]),
        }
    return {
        "cell_id": cell_id,
        "kpi": kpi,
        "window": window,
        "granularity_min": int(step.total_seconds() // 60),
        "timestamps": stamps,
        "series": result,
    }


def _regime_segments(
    state: NetworkState, cell: Cell, start: dt.datetime, step: dt.timedelta, points: int
) -> list[tuple[dict[str, float], int]]:
    """(KPIs in force, number of points) for consecutive stretches of a series window.

    Only the serving cell's KPIs change regime (after a change); other cells have one regime.
    """
    if cell is not state.serving or not state.regimes:
        return [({}, points)]
    starts = [begin for begin, _ in state.regimes]
    segments: list[tuple[dict[str, float], int]] = []
    for i in range(points):
        moment = start + step * (i + 1)
        index = max(0, bisect.bisect_right(starts, moment) - 1)
        regime = state.regimes[index][1]
        if segments and segments[-1][0] is regime:
            segments[-1] = (regime, segments[-1][1] + 1)
        else:
            segments.append((regime, 1))
    return segments


def _median(values: np.ndarray) -> float:
    ordered = np.sort(values)  # np.median's generality costs more than the grid itself
    middle = len(ordered) // 2
    return (
        float(ordered[middle])
        if len(ordered) % 2
        else float(ordered[middle - 1 : middle + 1].mean())
    )


def _beam_shares(offset_deg: float, rng: np.random.Generator) -> list[float]:
    centre = 3.5 + offset_deg / 8.0
    weights = np.exp(-((np.arange(8) - centre) ** 2) / (2 * 1.6**2)) * rng.uniform(0.9, 1.1, 8)
    return [round(float(w), 3) for w in weights / weights.sum()]


@tool
def coverage_map(ctx: ToolContext, area: str, resolution: str) -> dict[str, Any]:
    """An 8 x 8 grid of bins around the serving cell: RSRP, SINR, best server, overlap.

    The gap share (bins over 10 dB below the cell's median) follows the cell's coverage-gap KPI,
    the overlap share its tilt (an uptilted cell overlaps more), the SSB beam distribution its
    beam steering offset.
    """
    state = ctx.state
    if area not in (state.cluster_id, *(c.cell_id for c in state.cells)):
        raise ToolError(
            f"unknown area {area!r}: use the cluster id {state.cluster_id} or a cell "
            "id of the cluster",
            kind="not_found",
        )
    serving, rng, size = state.serving, ctx.rng, 8
    kpis = serving.kpis
    bins = size * size
    weak = np.zeros(bins, dtype=bool)
    weak[rng.permutation(bins)[: round(kpis.get("coverage_gap_ratio", 2.0) / 100 * bins)]] = True
    # A gap bin sits 12-20 dB below the cell's typical level: a hole is relative to the cell.
    rsrp = kpis.get("rsrp_dBm", -95.0) + rng.normal(0, 2.5, bins) - weak * rng.uniform(12, 20, bins)
    sinr = kpis.get("sinr_dB", 10.0) + rng.normal(0, 2, bins) - 6.0 * weak
    overlap_share = min(
        0.6,
        max(
            0.03, 0.35 - 0.04 * serving.config["tilt_deg"] + 0.01 * kpis.get("ping_pong_rate", 3.0)
        ),
    )
    overlap = 1 + (rng.random(bins) < overlap_share) * rng.integers(2, 5, bins)
    servers = [serving.cell_id, *(c.cell_id for c in state.neighbours[:3])]
    best = np.where(rng.random(bins) > 0.25, 0, rng.integers(1, len(servers), bins))
    rsrp, sinr = np.round(rsrp, 1), np.round(sinr, 1)
    median_rsrp = _median(rsrp)

    def share(mask: np.ndarray) -> float:
        return round(100 * int(np.count_nonzero(mask)) / bins, 1)

    return {
        "area": area,
        "resolution": resolution,
        "rows": size,
        "cols": size,
        "summary": {
            "median_rsrp_dbm": round(median_rsrp, 1),
            "median_sinr_db": round(_median(sinr), 1),
            "coverage_gap_bins_pct": share(rsrp < median_rsrp - 10),
            "bins_below_minus110_dbm_pct": share(rsrp < -110),
            "overlap_bins_pct": share(overlap >= 3),
            "serving_best_server_pct": share(best == 0),
        },
        "servers": servers,
        "grid": {
            "rsrp_dbm": rsrp.reshape(size, size).tolist(),
            "sinr_db": sinr.reshape(size, size).tolist(),
            "best_server_index": best.reshape(size, size).tolist(),
            "servers_within_6db": overlap.reshape(size, size).tolist(),
        },
        "ssb_beams": {
            "cell_id": serving.cell_id,
            "user_share_per_beam": _beam_shares(serving.config["beam_azimuth_offset_deg"], rng),
            "beam_failure_rate_pct": round(kpis.get("beam_fail_rate", 0.6), 1),
        },
    }


def _pci_findings(state: NetworkState, cell: Cell) -> list[dict[str, Any]]:
    findings: list[dict[str, Any]] = []
    neighbours = [c for c in state.cells if c is not cell]
    for other in neighbours:
        if other.pci == cell.pci:
            findings.append(
                {"type": "pci_collision", "pci": cell.pci, "cells": [cell.cell_id, other.cell_id]}
            )
    by_pci: dict[int, list[str]] = {}
    for other in neighbours:
        by_pci.setdefault(other.pci, []).append(other.cell_id)
    for pci, cells in sorted(by_pci.items()):
        if len(cells) > 1:
            findings.append({"type": "pci_confusion", "pci": pci, "cells": sorted(cells)})
    for other in sorted(neighbours, key=lambda c: c.distance_km)[:2]:
        if other.pci != cell.pci and other.pci % 3 == cell.pci % 3:
            findings.append(
                {
                    "type": "pci_mod3_clash",
                    "pci": [cell.pci, other.pci],
                    "cells": [cell.cell_id, other.cell_id],
                }
            )
    return findings


@tool
def neighbor_audit(ctx: ToolContext, cell_id: str) -> dict[str, Any]:
    state, rng = ctx.state, ctx.rng
    cell = state.cell(cell_id)
    others = [c for c in state.cells if c is not cell]
    weights = np.array([1 / max(c.distance_km, 0.05) for c in others])
    weights /= weights.sum()
    kpis = cell.kpis
    attempts_5min = kpis.get("ho_attempts_per_5min", 30.0)
    success = kpis.get("HO_success", 0.985)
    collided = {c.cell_id for c in others if c.pci == cell.pci}
    rows = []
    for other, weight in zip(others, weights, strict=True):
        attempts = max(1, round(attempts_5min * 12 * weight))
        pair_success = success * (0.85 if other.cell_id in collided else 1.0)
        pair_success = min(1.0, pair_success * float(rng.uniform(0.99, 1.01)))
        rows.append(
            {
                "cell_id": other.cell_id,
                "pci": other.pci,
                "distance_km": other.distance_km,
                "prb_util_pct": round(other.load * 100),
                "ho_attempts_per_hour": attempts,
                "ho_success_pct": round(100 * pair_success, 1),
                "relation": "active",
            }
        )
    own_load = kpis.get("PRB_util", kpis.get("prb_util", 0.4))
    avg = float(np.mean([o.load for o in others]))
    return {
        "cell_id": cell_id,
        "pci": cell.pci,
        "neighbours": rows,
        "findings": _pci_findings(state, cell),
        "load": {
            "serving_prb_util_pct": round(own_load * 100),
            "neighbour_avg_prb_util_pct": round(avg * 100),
            "imbalance_index": round(max(0.0, own_load - avg), 2),
        },
    }


@tool
def recommend_param_change(
    ctx: ToolContext, cell_id: str, objective: str | None = None
) -> dict[str, Any]:
    state = ctx.state
    cell = state.cell(cell_id)
    profile = PROFILE[cell.role]
    recommendations = [
        {
            "parameter": name,
            "current": cell.config[name],
            "recommended": value,
            "rationale": f"differs from the {cell.role} engineering profile",
        }
        for name, value in profile.items()
        if cell.config.get(name) != value
    ]
    if any(f["type"] == "pci_collision" for f in _pci_findings(state, cell)):
        recommendations.append(
            {
                "parameter": "pci",
                "current": cell.pci,
                "recommended": free_pci(state),
                "rationale": "PCI shared with a neighbour",
            }
        )
    if cell is state.serving and state.backhaul.config["bh_rt_queue_weight_pct"] < 40:
        recommendations.append(
            {
                "parameter": "bh_rt_queue_weight_pct",
                "current": state.backhaul.config["bh_rt_queue_weight_pct"],
                "recommended": 40,
                "rationale": "real-time queue under-weighted",
            }
        )
    return {
        "cell_id": cell_id,
        "objective": objective or "",
        "recommendations": recommendations,
        "note": "Recommendations only: nothing was applied. Check them against the KPIs.",
    }


# --- core write tools ----------------------------------------------------------------------------


@tool
def optimize_cell(
    ctx: ToolContext, cell_id: str, changes: dict[str, Any], reason: str | None = None
) -> dict[str, Any]:
    state = ctx.state
    cell = state.cell(cell_id)
    backhaul = [p for p in changes if p in _BACKHAUL_PARAMETERS]
    if backhaul and cell is not state.serving:
        raise ToolError(
            f"backhaul parameters {backhaul} can only be set on the cell whose site "
            f"link is managed here ({state.serving.cell_id})",
            kind="rejected",
        )
    applied = []
    for name, value in changes.items():
        if name in _BACKHAUL_PARAMETERS:
            old = state.backhaul.config[name]
            state.record_change((f"backhaul:{state.backhaul.link_id}", name), old)
            state.backhaul.config[name] = value
        elif name == "pci":
            old, cell.pci = cell.pci, value
            state.record_change((f"cell:{cell_id}", name), old)
        else:
            old = cell.config[name]
            state.record_change((f"cell:{cell_id}", name), old)
            cell.config[name] = value
        applied.append({"parameter": name, "old": old, "new": value})
    change_id = _log_change(ctx, "optimize_cell", cell_id, applied, reason)
    recompute(state)
    return {"status": "applied", "change_id": change_id, "cell_id": cell_id, "changes": applied}


@tool
def optimize_slice(
    ctx: ToolContext, slice_id: str, policy: dict[str, Any], reason: str | None = None
) -> dict[str, Any]:
    network_slice = ctx.state.slice(slice_id)
    applied = []
    for name, value in policy.items():
        applied.append({"parameter": name, "old": network_slice.policy[name], "new": value})
        ctx.state.record_change((f"slice:{slice_id}", name), network_slice.policy[name])
        network_slice.policy[name] = value
    change_id = _log_change(ctx, "optimize_slice", slice_id, applied, reason)
    recompute(ctx.state)
    return {
        "status": "applied",
        "change_id": change_id,
        "slice_id": slice_id,
        "changes": applied,
        "policy": dict(network_slice.policy),
    }


@tool
def push_config(ctx: ToolContext, config_id: str, dry_run: bool = False) -> dict[str, Any]:
    state = ctx.state
    if config_id not in state.baselines:
        raise ToolError(
            f"unknown config_id {config_id!r}; stored configurations: "
            f"{', '.join(sorted(state.baselines))}",
            kind="not_found",
        )
    cell_id, parameters = state.baselines[config_id]
    cell = state.cell(cell_id)
    diff = [
        {"parameter": name, "old": cell.config[name], "new": value}
        for name, value in parameters.items()
        if cell.config[name] != value
    ]
    if dry_run:
        return {"status": "dry_run", "config_id": config_id, "cell_id": cell_id, "changes": diff}
    for change in diff:
        state.record_change((f"cell:{cell_id}", change["parameter"]), change["old"])
    cell.config.update(parameters)
    change_id = _log_change(ctx, "push_config", cell_id, diff, f"push {config_id}")
    recompute(state)
    return {
        "status": "applied" if diff else "no_change",
        "change_id": change_id,
        "config_id": config_id,
        "cell_id": cell_id,
        "changes": diff,
    }


@tool
def create_ticket(
    ctx: ToolContext,
    summary: str,
    severity: str,
    cell_id: str | None = None,
    team: str | None = None,
) -> dict[str, Any]:
    state = ctx.state
    if cell_id is not None:
        state.cell(cell_id)
    ticket = {
        "ticket_id": f"TT-{state.now:%Y%m%d}-{len(state.tickets) + 1:04d}",
        "status": "open",
        "severity": severity,
        "team": team or "noc",
        "cell_id": cell_id or "",
        "summary": summary,
        "created_at": state.now.strftime(_TIME),
        "step": ctx.step,
    }
    state.tickets.append(ticket)
    return {
        k: ticket[k] for k in ("ticket_id", "status", "severity", "team", "cell_id", "created_at")
    }


# --- distractor tools: plausible, relevant-looking, and no help with the diagnosis ----------------


@tool
def subscriber_insight(ctx: ToolContext, cell_id: str, window: str = "24h") -> dict[str, Any]:
    cell, rng = ctx.state.cell(cell_id), ctx.rng
    parse_window(window)
    apps = ["video_streaming", "social_media", "web_browsing", "messaging", "gaming", "cloud_sync"]
    shares = rng.dirichlet(np.ones(len(apps)) * 2)
    users = int(cell.kpis.get("users", 150))
    return {
        "cell_id": cell_id,
        "window": window,
        "unique_subscribers": int(users * rng.uniform(2, 4)),
        "top_applications": {
            a: round(float(s) * 100, 1) for a, s in zip(apps, shares, strict=True)
        },
        "heavy_users": int(users * rng.uniform(0.03, 0.08)),
        "avg_session_minutes": round(float(rng.uniform(6, 25)), 1),
    }


@tool
def device_cap_lookup(
    ctx: ToolContext, cell_id: str, device_model: str | None = None
) -> dict[str, Any]:
    ctx.state.cell(cell_id)
    rng = ctx.rng
    classes = {
        "NR SA, 4x4 MIMO, 256QAM": 0.0,
        "NR NSA, 2x2 MIMO": 0.0,
        "LTE Cat-12": 0.0,
        "LTE Cat-4 / IoT": 0.0,
    }
    shares = rng.dirichlet(np.array([4.0, 3.0, 2.0, 1.0]))
    mix = {k: round(float(s) * 100, 1) for k, s in zip(classes, shares, strict=True)}
    result: dict[str, Any] = {
        "cell_id": cell_id,
        "device_mix_pct": mix,
        "ca_capable_pct": round(float(rng.uniform(55, 85)), 1),
    }
    if device_model:
        result["device"] = {
            "model": device_model,
            "bands": ["n78", "n1", "B3", "B7"],
            "max_mimo_layers": 4,
            "max_modulation": "256QAM",
            "nr_sa": True,
        }
    return result


@tool
def sla_policy_fetch(ctx: ToolContext, cell_id: str, customer: str | None = None) -> dict[str, Any]:
    ctx.state.cell(cell_id)
    return {
        "cell_id": cell_id,
        "customer": customer or "all",
        "policies": [
            {
                "name": "Enterprise Gold",
                "availability_pct": 99.95,
                "latency_ms": 30,
                "dl_throughput_mbps": 50,
                "measurement": "monthly, busy hour",
            },
            {
                "name": "Consumer Standard",
                "availability_pct": 99.5,
                "latency_ms": 60,
                "dl_throughput_mbps": 10,
                "measurement": "monthly",
            },
        ],
        "penalty_clause": "service credit of 5% per 0.1% availability shortfall",
    }


@tool
def traffic_forecast(ctx: ToolContext, cell_id: str, horizon: str) -> dict[str, Any]:
    state, rng = ctx.state, ctx.rng
    cell = state.cell(cell_id)
    hours = int(parse_window(horizon).total_seconds() // 3600)
    load = cell.kpis.get("PRB_util", cell.kpis.get("prb_util", 0.4))
    forecast = []
    for h in range(1, hours + 1):
        moment = state.now + dt.timedelta(hours=h)
        diurnal = 0.75 + 0.25 * math.sin((moment.hour - 9) / 24 * 2 * math.pi)
        forecast.append(
            {
                "hour": moment.strftime(_TIME),
                "prb_util_pct": round(min(99.0, 100 * load * diurnal * rng.uniform(0.95, 1.05))),
            }
        )
    return {
        "cell_id": cell_id,
        "horizon": horizon,
        "model": "seasonal-naive (4 weeks)",
        "forecast": forecast,
    }


@tool
def complaint_trend_analysis(ctx: ToolContext, area: str, window: str) -> dict[str, Any]:
    state, rng = ctx.state, ctx.rng
    if area not in (state.cluster_id, *(c.cell_id for c in state.cells)):
        raise ToolError(
            f"unknown area {area!r}: use the cluster id {state.cluster_id} or a cell "
            "id of the cluster",
            kind="not_found",
        )
    days = max(1, int(parse_window(window).total_seconds() // 86400))
    categories = ["slow data", "dropped calls", "no service", "billing", "roaming"]
    counts = rng.multinomial(int(rng.integers(20, 120)), rng.dirichlet(np.ones(5)))
    return {
        "area": area,
        "window": window,
        "days": days,
        "complaints_by_category": {c: int(n) for c, n in zip(categories, counts, strict=True)},
        "sentiment_score": round(float(rng.uniform(-0.6, 0.1)), 2),
        "trend": ["flat", "rising", "falling"][int(rng.integers(3))],
    }


@tool
def spectrum_license_info(ctx: ToolContext, cell_id: str) -> dict[str, Any]:
    cell = ctx.state.cell(cell_id)
    return {
        "cell_id": cell_id,
        "band": cell.band,
        "licence_id": f"LIC-{cell.site_id}-N78",
        "holder": "telcoenv operator",
        "bandwidth_mhz": 100 if cell.role == "macro" else 40,
        "expires": "2034-12-31",
        "regulator_conditions": ["TDD pattern DDDSU", "max EIRP 76 dBm"],
    }
