"""Implementations of the network tools: one typed function per ``tools/<name>.json`` spec.

Each function receives a :class:`ToolContext` (the episode's network, a generator seeded by the
call itself, so that the same call returns the same data) and the validated arguments, and returns
a JSON-ready dict. A call the network refuses raises :class:`~telcoenv.errors.ToolError`.
Reads are queries over the episode's network database (:class:`~telcoenv.domains.network.state.
NetworkState`); write tools change its configuration rows, append to its change log and let the
causal model recompute the KPIs.

Tools whose output grows with the data (``kpi_timeseries``, ``coverage_map``,
``traffic_forecast``) take ``detail``: ``"summary"`` (the default) returns a bounded summary
computed from the same data, with a ``truncated`` field saying what was left out and how to get
it; ``"full"`` returns every value. Both views of a call draw the same data.
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from telcoenv.domains.network.kpis import kpi_band, kpi_definitions, series_batch
from telcoenv.domains.network.parameters import BACKHAUL_PARAMETERS, PROFILE, parse_window
from telcoenv.domains.network.state import TIME_FORMAT, CellRow, NetworkState, latest
from telcoenv.domains.network.topology import baseline_id, free_pci, relation_id
from telcoenv.errors import ToolError
from telcoenv.tooling import ToolRegistry, canonical_json, full_detail, truncated

TOOLS = ToolRegistry()  # every network tool, by name (the domain binds them to their specs)

_TIME = TIME_FORMAT

SUMMARY_CHARS = 1450  # a kpi_timeseries summary shows fewer points rather than grow past this
SERIES_SAMPLES = 6  # points of each series a kpi_timeseries summary shows at most
WORST_BINS = 5  # bins of lowest RSRP a coverage_map summary lists
FORECAST_HOURS = 6  # hours a traffic_forecast summary lists


class ToolContext:
    """What a tool implementation may use: the network, a per-call generator, the step number,
    and ``after_change``, which lets the causal model recompute the KPIs after a change.

    The generator is seeded by the call itself and created on first use (most tools need none).
    The episode's ground truth (its fault and fix) is not here: only the causal model behind
    ``after_change`` knows it, so no tool can read the answer.
    """

    __slots__ = ("_rng", "_seed", "after_change", "state", "step")

    def __init__(
        self,
        state: NetworkState,
        seed: Callable[[], list[int]],
        step: int,
        after_change: Callable[[], None],
    ) -> None:
        self.state, self._seed, self.step = state, seed, step
        self.after_change = after_change
        self._rng: np.random.Generator | None = None

    @property
    def rng(self) -> np.random.Generator:
        if self._rng is None:
            self._rng = np.random.default_rng(self._seed())
        return self._rng


# --- helpers -------------------------------------------------------------------------------------


@cache
def _display() -> dict[str, tuple[float, int, str]]:
    """Per KPI: the scale and decimals of its quoted value, and its unit (English)."""
    definitions = kpi_definitions()
    return {
        name: (info.scale, info.decimals, definitions.units[info.unit].en)
        for name, info in definitions.kpis.items()
    }


def _kpi_table(kpis: dict[str, float]) -> dict[str, dict[str, Any]]:
    """KPIs as quoted to an engineer: value in display units, and the unit."""
    display = _display()
    table = {}
    for name, value in kpis.items():
        scale, decimals, unit = display[name]
        table[name] = {"value": round(value * scale, decimals), "unit": unit}
    return table


def _cell_summary(state: NetworkState, cell: CellRow) -> dict[str, Any]:
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


def _config_drift(state: NetworkState, cell: CellRow) -> list[str]:
    baseline = state.baseline_of(cell.cell_id)
    return sorted(name for name, value in baseline.items() if cell.config.get(name) != value)


def _alarms_for(state: NetworkState, cell: CellRow) -> list[dict[str, Any]]:
    sources = {cell.cell_id, cell.site_id}
    if cell.serving:
        sources.add(state.link_id)
    return state.alarms(sources)


def _check_area(state: NetworkState, area: str) -> None:
    if area not in (state.cluster_id, *state.cell_ids):
        raise ToolError(
            f"unknown area {area!r}: use the cluster id {state.cluster_id} or a cell "
            "id of the cluster",
            kind="not_found",
        )


# --- core read tools -----------------------------------------------------------------------------


@TOOLS.tool
def oss_query(ctx: ToolContext, cell_id: str, window: str) -> dict[str, Any]:
    state = ctx.state
    cell = state.cell(cell_id)
    start, end = _window_bounds(state, window)
    # The serving cell's record shows its slices and link too: all their samples in one query.
    measured = state.latest_kpis() if cell.serving else {}
    record: dict[str, Any] = {
        "cell": _cell_summary(state, cell),
        "window": {"start": start.strftime(_TIME), "end": end.strftime(_TIME), "length": window},
        "kpis": _kpi_table(measured.get(cell.cell_id) or state.kpis(cell.cell_id)),
        "configuration": dict(cell.config),
        "baseline_config_id": baseline_id(cell.cell_id),
        "config_audit": {"parameters_off_baseline": _config_drift(state, cell)},
        "active_alarms": _alarms_for(state, cell),
    }
    if cell.serving:
        record["slices"] = [
            {
                "slice_id": s.slice_id,
                "service_type": s.service_type,
                "policy": s.policy,
                "kpis": _kpi_table(measured.get(s.slice_id, {})),
            }
            for s in state.slices()
        ]
        link = state.backhaul()
        record["backhaul"] = {
            "link_id": link.link_id,
            "capacity_mbps": link.capacity_mbps,
            "configuration": link.config,
            "kpis": _kpi_table(measured.get(link.link_id, {})),
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


def _family_kpis(
    state: NetworkState, cell_id: str, pools: list[dict[str, float]], family: str
) -> dict[str, float]:
    """The KPIs of one family, from the first pool that has each (the cell's own first)."""
    definitions = kpi_definitions()
    found: dict[str, float] = {}
    for pool in pools:
        for name, value in pool.items():
            if definitions.kpis[name].family == family and name not in found:
                found[name] = value
    if family == "config" and not found:
        found["mismatch_count"] = float(len(_config_drift(state, state.cell(cell_id))))
    return found


def _no_counters(kpi: str, cell_id: str) -> ToolError:
    return ToolError(f"no {kpi} counters are collected for {cell_id}", kind="not_found")


@TOOLS.tool
def kpi_timeseries(
    ctx: ToolContext,
    cell_id: str,
    kpi: str,
    window: str,
    granularity: str | None = None,
    detail: str | None = None,
) -> dict[str, Any]:
    full = full_detail(detail)
    state = ctx.state
    serving = state.require_cell(cell_id)
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
    if state.model is not None:
        names, raws, changes = _model_series(ctx, cell_id, kpi, serving, first, step, points)
    else:
        names, raws, changes = _recorded_series(ctx, cell_id, kpi, serving, start, step, points)
    display = _display()
    scale = np.array([display[n][0] for n in names])[:, None]
    factor = 10.0 ** np.array([display[n][1] for n in names])[:, None]
    shown = np.rint(raws * scale * factor) / factor  # np.round per row, in one go
    ordered = np.sort(shown, axis=1)
    p95 = min(points - 1, math.ceil(0.95 * points) - 1)
    sums = shown.sum(axis=1).tolist()
    result: dict[str, Any] = {}
    for i, (name, row) in enumerate(zip(names, shown.tolist(), strict=True)):
        _, decimals, unit = display[name]
        result[name] = {
            "unit": unit,
            "values": row,
            "mean": round(sums[i] / points, decimals + 1),
            "min": float(ordered[i, 0]),
            "max": float(ordered[i, -1]),
            "p95": float(ordered[i, p95]),
        }
    output = {
        "cell_id": cell_id,
        "kpi": kpi,
        "window": window,
        "granularity_min": int(step.total_seconds() // 60),
        "timestamps": stamps,
        "series": result,
    }
    if full:
        return output
    return _series_summary(output, shown, changes)


def _recorded_series(
    ctx: ToolContext,
    cell_id: str,
    kpi: str,
    serving: bool,
    start: dt.datetime,
    step: dt.timedelta,
    points: int,
) -> tuple[list[str], np.ndarray, list[int]]:
    """Series from the recorded KPI regimes (the blueprint's causal model): each regime's
    values as a bounded random walk. Returns the KPI names, their raw values, and the points
    where a later regime begins (where the network changed inside the window)."""
    state = ctx.state
    # The serving cell's series include its link's and slices' counters.
    owners = (state.link_id, *sorted(state.initial.slices)) if serving else ()
    extra = [state.kpis(owner) for owner in owners]
    uncollected = state.uncollected_kpis(cell_id)  # a neighbour's, before its first request
    if uncollected is not None and not _family_kpis(state, cell_id, [uncollected, *extra], kpi):
        raise _no_counters(kpi, cell_id)  # refused before collecting: nothing written
    history = state.kpi_history(cell_id)
    values = _family_kpis(state, cell_id, [latest(history), *extra], kpi)
    if not values:
        raise _no_counters(kpi, cell_id)
    definitions = kpi_definitions()
    names = list(values)
    digits = [definitions.digits(n) for n in names]
    parts: list[np.ndarray] = []
    segments = _regime_segments(history, start, step, points)
    for index, count in segments:
        # The serving cell's first regime is the blueprint sample (its ranges bound the
        # series); later ones are the KPIs the causal model computed after a change.
        regime = history[index][1]
        bounded = serving and index == 0
        regime_values = [regime.get(n, values[n]) for n in names]
        bands = [
            kpi_band(v, state.kpi_bounds.get(n) if bounded else None)
            for n, v in zip(names, regime_values, strict=True)
        ]
        parts.append(series_batch(regime_values, bands, digits, count, ctx.rng))
    raws = np.concatenate(parts, axis=1) if len(parts) > 1 else parts[0]
    changes = list(itertools.accumulate(count for _, count in segments))[:-1]
    return names, raws, changes


def _model_series(
    ctx: ToolContext,
    cell_id: str,
    kpi: str,
    serving: bool,
    first: np.datetime64,
    step: dt.timedelta,
    points: int,
) -> tuple[list[str], np.ndarray, list[int]]:
    """Series from the network model: every point is the model's value for the configuration
    in force then, at that moment's demand, with a counter's noise (the serving cell's include
    its link's and slices' counters). Returns the KPI names, their raw values, and the points
    where a later configuration (the fault's onset, a change) took over."""
    state, model = ctx.state, ctx.state.model
    assert model is not None
    owners = [cell_id, *((state.link_id, *sorted(state.initial.slices)) if serving else ())]
    definitions = kpi_definitions()
    moments = first + np.arange(points) * np.timedelta64(step)
    config = state.configuration()
    names: list[str] = []
    rows: list[np.ndarray] = []
    for owner in owners:
        current = state.kpis(owner) if owner != cell_id else state.model_kpis(owner, config)
        mine = [n for n in current if definitions.kpis[n].family == kpi and n not in names]
        if not mine:
            continue
        baseline = state.baseline_of(owner) if owner in state.cell_ids else None
        rows.append(model.series(owner, mine, moments, ctx.rng, baseline))
        names += mine
    if not names:
        raise _no_counters(kpi, cell_id)
    begins = [np.datetime64(e.begin.replace(tzinfo=None), "s") for e in model.epochs[1:]]
    changes = sorted({int(np.searchsorted(moments, begin)) for begin in begins} - {0, points})
    return names, np.vstack(rows), changes


def _sample_points(total: int, count: int, change: int | None) -> list[int]:
    """``count`` evenly spaced points of ``total`` (the first and the last among them), and the
    two points around ``change``."""
    if total <= count:
        return list(range(total))
    picks = {round(i * (total - 1) / (count - 1)) for i in range(count)}
    if change is not None:
        picks |= {change - 1, change}
    return sorted(picks)


def _series_summary(
    output: dict[str, Any], shown: np.ndarray, changes: list[int]
) -> dict[str, Any]:
    """The bounded view of a ``kpi_timeseries`` output: per KPI its statistics and its first
    and last values; where the network changed inside the window, the means before and after
    the latest change; and as many points (at most :data:`SERIES_SAMPLES` evenly spaced, and
    the two around the change) as keep it within :data:`SUMMARY_CHARS`."""
    stamps, total = output["timestamps"], len(output["timestamps"])
    change = changes[-1] if changes else None
    display = _display()
    base: dict[str, dict[str, Any]] = {}
    for row, (name, full) in zip(shown, output["series"].items(), strict=True):
        values = full["values"]
        entry = {
            **{k: full[k] for k in ("unit", "mean", "min", "max", "p95")},
            "first": values[0],
            "last": values[-1],
        }
        if change is not None:
            decimals = display[name][1] + 1
            entry["mean_before"] = round(float(row[:change].sum()) / change, decimals)
            entry["mean_after"] = round(float(row[change:].sum()) / (total - change), decimals)
        base[name] = entry
    head: dict[str, Any] = {
        **{k: output[k] for k in ("cell_id", "kpi", "window", "granularity_min")},
        "points": total,
    }
    if change is not None:
        head["change"] = {"at": stamps[change], "point": change, "changes": len(changes)}

    def with_samples(picks: list[int]) -> dict[str, Any]:
        summary = {**head, "series": base}
        if picks:
            summary["sample_timestamps"] = [stamps[i] for i in picks]
            summary["series"] = {
                name: {**entry, "samples": [output["series"][name]["values"][i] for i in picks]}
                for name, entry in base.items()
            }
        if len(picks) < total:
            summary["truncated"] = truncated(len(picks), total)
        return summary

    # Fewer points until it fits: evenly spaced ones (with the two around a change), then the
    # two around the change alone, then none (the first and last values are always there).
    candidates = [_sample_points(total, count, change) for count in range(SERIES_SAMPLES, 2, -1)]
    if change is not None:
        candidates.append([change - 1, change])
    for picks in candidates:
        summary = with_samples(picks)
        if len(canonical_json(summary)) <= SUMMARY_CHARS:
            return summary
    return with_samples([])


def _regime_segments(
    history: list[tuple[dt.datetime, dict[str, float]]],
    start: dt.datetime,
    step: dt.timedelta,
    points: int,
) -> list[tuple[int, int]]:
    """(index of the KPI regime in force, number of points) for consecutive stretches.

    Point ``i`` is measured at ``start + step * (i + 1)`` and belongs to the latest regime that
    began at or before it.
    """
    # The first point of each regime: the first i with start + step * (i + 1) >= its beginning.
    firsts = [0] + [
        min(max(math.ceil((begin - start) / step) - 1, 0), points) for begin, _ in history[1:]
    ]
    segments: list[tuple[int, int]] = []
    for index, first in enumerate(firsts):
        end = firsts[index + 1] if index + 1 < len(firsts) else points
        if end > first:
            segments.append((index, end - first))
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


@TOOLS.tool
def coverage_map(
    ctx: ToolContext, area: str, resolution: str, detail: str | None = None
) -> dict[str, Any]:
    """An 8 x 8 grid of bins around a cell (the one ``area`` names; the cluster's serving cell
    for the cluster id): RSRP, SINR, best server, overlap.

    The gap share (bins over 10 dB below the cell's median) follows the cell's coverage-gap KPI,
    the overlap share its tilt (an uptilted cell overlaps more), the SSB beam distribution its
    beam steering offset. The summary replaces the grid by bin counts and the bins of lowest
    RSRP.
    """
    full = full_detail(detail)
    state = ctx.state
    _check_area(state, area)
    # The cell the map is of: a neighbour's id maps the neighbour (it mapped the serving cell).
    centre = state.serving if area == state.cluster_id else state.cell(area)
    if state.model is not None:
        return _model_coverage(state, centre, area, resolution, full)
    rng, size = ctx.rng, 8
    kpis = state.kpis(centre.cell_id)
    bins = size * size
    weak = np.zeros(bins, dtype=bool)
    weak[rng.permutation(bins)[: round(kpis.get("coverage_gap_ratio", 2.0) / 100 * bins)]] = True
    # A gap bin sits 12-20 dB below the cell's typical level: a hole is relative to the cell.
    rsrp = kpis.get("rsrp_dBm", -95.0) + rng.normal(0, 2.5, bins) - weak * rng.uniform(12, 20, bins)
    sinr = kpis.get("sinr_dB", 10.0) + rng.normal(0, 2, bins) - 6.0 * weak
    overlap_share = min(
        0.6,
        max(0.03, 0.35 - 0.04 * centre.config["tilt_deg"] + 0.01 * kpis.get("ping_pong_rate", 3.0)),
    )
    overlap = 1 + (rng.random(bins) < overlap_share) * rng.integers(2, 5, bins)
    # The cell and the three nearest to the serving cell (for the serving cell: its neighbours).
    servers = [centre.cell_id, *[c for c in state.cell_ids if c != centre.cell_id][:3]]
    best = np.where(rng.random(bins) > 0.25, 0, rng.integers(1, len(servers), bins))
    beams = {
        "cell_id": centre.cell_id,
        "user_share_per_beam": _beam_shares(centre.config["beam_azimuth_offset_deg"], rng),
        "beam_failure_rate_pct": round(kpis.get("beam_fail_rate", 0.6), 1),
    }
    grid = _Grid(size, np.round(rsrp, 1), np.round(sinr, 1), best, overlap, 0)
    return _coverage_output(area, resolution, servers, grid, beams, full)


@dataclass(frozen=True)
class _Grid:
    """A coverage map's bins: RSRP, SINR, best server, servers within 6 dB, the index of the
    mapped cell among the servers, and which bins lie inside the cluster (None: all)."""

    size: int
    rsrp: np.ndarray
    sinr: np.ndarray
    best: np.ndarray
    overlap: np.ndarray
    centre: int
    inside: np.ndarray | None = None


def _coverage_output(
    area: str,
    resolution: str,
    servers: list[str],
    grid: _Grid,
    beams: dict[str, Any],
    full: bool,
) -> dict[str, Any]:
    """coverage_map's output: the summary of bin shares, the grid (``full``) or the bins of
    lowest RSRP."""
    size = grid.size
    bins = size * size
    inside = np.ones(bins, dtype=bool) if grid.inside is None else grid.inside
    # Statistics of the bins inside the cluster; a bin outside it shows no values.
    rsrp, sinr, best, overlap = (
        grid.rsrp[inside],
        grid.sinr[inside],
        grid.best[inside],
        grid.overlap[inside],
    )
    median_rsrp = _median(rsrp)
    masks = {
        "coverage_gap": rsrp < median_rsrp - 10,
        "below_minus110_dbm": rsrp < -110,
        "overlap": overlap >= 3,
        "serving_best_server": best == grid.centre,
    }
    counts = {name: int(np.count_nonzero(mask)) for name, mask in masks.items()}
    inside_count = int(np.count_nonzero(inside))

    def share(name: str) -> float:
        return round(100 * counts[name] / inside_count, 1)

    def rows(values: np.ndarray, cast: type) -> list[list[Any]]:
        pairs = zip(values.tolist(), inside.tolist(), strict=True)
        shown = [cast(v) if keep else None for v, keep in pairs]
        return [shown[r * size : (r + 1) * size] for r in range(size)]

    output: dict[str, Any] = {
        "area": area,
        "resolution": resolution,
        "rows": size,
        "cols": size,
        "summary": {
            "median_rsrp_dbm": round(median_rsrp, 1),
            "median_sinr_db": round(_median(sinr), 1),
            "coverage_gap_bins_pct": share("coverage_gap"),
            "bins_below_minus110_dbm_pct": share("below_minus110_dbm"),
            "overlap_bins_pct": share("overlap"),
            "serving_best_server_pct": share("serving_best_server"),
        },
        "servers": servers,
        "grid": {
            "rsrp_dbm": rows(grid.rsrp, float),
            "sinr_db": rows(grid.sinr, float),
            "best_server_index": rows(grid.best, int),
            "servers_within_6db": rows(grid.overlap, int),
        },
        "ssb_beams": beams,
        "bins_outside_cluster": bins - inside_count,
    }
    if full:
        return output
    where = np.flatnonzero(inside)
    worst = where[np.lexsort((where, rsrp))[:WORST_BINS]]  # lowest RSRP, then bin order
    output.pop("grid")
    output["bins"] = {"total": bins, "inside_cluster": inside_count, **counts}
    output["worst_bins"] = [
        {
            "row": int(i) // size,
            "col": int(i) % size,
            "rsrp_dbm": float(grid.rsrp[i]),
            "sinr_db": float(grid.sinr[i]),
            "best_server_index": int(grid.best[i]),
            "servers_within_6db": int(grid.overlap[i]),
        }
        for i in worst
    ]
    output["truncated"] = truncated(len(worst), inside_count)
    return output


#: Bin size of each coverage_map resolution, metres.
_BIN_M = {"50m": 50.0, "100m": 100.0, "200m": 200.0, "500m": 500.0}
#: SSB beams of a sector: eight, 15 degrees apart across +-60 degrees of the steered boresight.
_SSB_BEAMS = np.arange(-52.5, 60.0, 15.0)


def _model_coverage(
    state: NetworkState, centre: CellRow, area: str, resolution: str, full: bool
) -> dict[str, Any]:
    """coverage_map from the network model: the same grid as the blueprint model's, each bin
    computed (see :func:`telcoenv.domains.network.model.coverage_bins`)."""
    from telcoenv.domains.network.model import coverage_bins

    assert state.model is not None
    simulation = state.model.simulation
    config = state.configuration()
    ev = simulation.evaluation(config, state.model.timeline.scale_at(state.now))
    index = simulation.index[centre.cell_id]
    size = 8
    seed = simulation.world.track_seed + 7919 * index + int(_BIN_M[resolution])
    bins = coverage_bins(simulation.world, ev, index, _BIN_M[resolution], size, seed)
    rsrp = np.round(np.maximum(bins.rsrp_dbm, -140.0), 1)  # a cell's floor, where none reaches
    sinr = np.round(bins.sinr_db, 1)
    kpis = state.kpis(centre.cell_id)
    beams = {
        "cell_id": centre.cell_id,
        "user_share_per_beam": _beam_users(simulation.world, ev, index),
        "beam_failure_rate_pct": round(kpis.get("beam_fail_rate", 0.0), 1),
    }
    grid = _Grid(size, rsrp, sinr, bins.best, bins.within_6db, index, bins.inside)
    return _coverage_output(area, resolution, list(state.cell_ids), grid, beams, full)


def _beam_users(world: Any, ev: Any, cell: int) -> list[float]:
    """Share of a cell's users on each SSB beam: the beam whose steered direction is nearest
    to each user's bearing (a beam set steered off the sector bunches its users at one edge)."""
    from telcoenv.domains.network.radio import wrap_deg

    mine = ev.radio.serving == cell
    if not mine.any():
        return [0.0] * len(_SSB_BEAMS)
    boresight = float(ev.cells.azimuth_deg[cell] + ev.cells.beam_offset_deg[cell])
    offset = wrap_deg(world.coupling.bearing_deg[cell, mine] - boresight)
    beam = np.argmin(np.abs(offset[:, None] - _SSB_BEAMS[None, :]), axis=1)
    counts = np.bincount(beam, weights=world.weight[mine], minlength=len(_SSB_BEAMS))
    return [round(float(c), 3) for c in counts / counts.sum()]


def _pci_findings(cell: CellRow, others: list[CellRow]) -> list[dict[str, Any]]:
    """PCI collisions, confusions and mod-3 clashes; ``others`` are sorted nearest first."""
    findings: list[dict[str, Any]] = []
    for other in others:
        if other.pci == cell.pci:
            findings.append(
                {"type": "pci_collision", "pci": cell.pci, "cells": [cell.cell_id, other.cell_id]}
            )
    by_pci: dict[int, list[str]] = {}
    for other in others:
        by_pci.setdefault(other.pci, []).append(other.cell_id)
    for pci, cells in sorted(by_pci.items()):
        if len(cells) > 1:
            findings.append({"type": "pci_confusion", "pci": pci, "cells": sorted(cells)})
    for other in others[:2]:
        if other.pci != cell.pci and other.pci % 3 == cell.pci % 3:
            findings.append(
                {
                    "type": "pci_mod3_clash",
                    "pci": [cell.pci, other.pci],
                    "cells": [cell.cell_id, other.cell_id],
                }
            )
    return findings


def _surroundings(state: NetworkState, cell_id: str) -> tuple[CellRow, list[tuple[CellRow, float]]]:
    """A cell and its related cells with their distances, nearest first."""
    cells = {c.cell_id: c for c in state.cells()}
    if cell_id not in cells:
        state.cell(cell_id)  # raises the not-found error
    related = [(cells[other], km) for other, km in state.neighbours_of(cell_id)]
    return cells[cell_id], related


@TOOLS.tool
def neighbor_audit(ctx: ToolContext, cell_id: str) -> dict[str, Any]:
    state, rng = ctx.state, ctx.rng
    cell, related = _surroundings(state, cell_id)
    others = [other for other, _ in related]
    if state.model is not None:
        return _model_audit(state, cell, related)
    weights = np.array([1 / max(km, 0.05) for _, km in related])
    weights /= weights.sum()
    kpis = state.kpis(cell_id)
    attempts_5min = kpis.get("ho_attempts_per_5min", 30.0)
    success = kpis.get("HO_success", 0.985)
    offsets = state.relation_offsets(cell_id)
    rows = []
    for (other, km), weight in zip(related, weights, strict=True):
        attempts = max(1, round(attempts_5min * 12 * weight))
        pair_success = success * (0.85 if other.pci == cell.pci else 1.0)
        pair_success = min(1.0, pair_success * float(rng.uniform(0.99, 1.01)))
        rows.append(
            {
                "cell_id": other.cell_id,
                "pci": other.pci,
                "distance_km": km,
                "prb_util_pct": round(other.load * 100),
                "ho_attempts_per_hour": attempts,
                "ho_success_pct": round(100 * pair_success, 1),
                "cio_db": offsets.get(other.cell_id, 0.0),
                "relation": "active",
            }
        )
    own_load = kpis.get("PRB_util", kpis.get("prb_util", 0.4))
    avg = float(np.mean([o.load for o in others]))
    return {
        "cell_id": cell_id,
        "pci": cell.pci,
        "neighbours": rows,
        "findings": _pci_findings(cell, others),
        "load": {
            "serving_prb_util_pct": round(own_load * 100),
            "neighbour_avg_prb_util_pct": round(avg * 100),
            "imbalance_index": round(max(0.0, own_load - avg), 2),
        },
    }


def _model_audit(
    state: NetworkState, cell: CellRow, related: list[tuple[CellRow, float]]
) -> dict[str, Any]:
    """neighbor_audit in the network model: each relation's handover attempts and successes
    from the UE tracks (scaled to the cell's border crossings), loads from the model, and, in
    ``ping_pong_pct_out_back``, each relation's ping-pongs both ways as ``[out, back]``: out, the
    share of the cell's handovers to the neighbour that it sent back within 2 s (the cell-level
    counter on this relation); back, the share of the neighbour's handovers to the cell that the
    cell sent back (a return leg runs on the returning cell's time-to-trigger and offsets, so an
    eager cell shows here, while its ping-pongs are counted at its neighbours). Only relations
    with a ping-pong either way are listed; null where no handover went that way."""
    from telcoenv.domains.network.counters import crossings_per_5min

    assert state.model is not None
    simulation = state.model.simulation
    config = state.configuration()
    ev = simulation.evaluation(config, state.model.timeline.scale_at(state.now))
    moves = simulation.moves(config)
    index = simulation.index
    source = index[cell.cell_id]
    crossings = float(crossings_per_5min(simulation.world, ev)[source]) * 12.0  # per hour
    started = max(float(moves.started[source]), 1.0)
    offsets = state.relation_offsets(cell.cell_id, config)
    rows = []
    ping_pongs: dict[str, list[float | None]] = {}
    successful, bounces = moves.counts.relation_successes, moves.counts.relation_pingpong
    for other, km in related:
        target = index[other.cell_id]
        attempts = float(moves.counts.relation_attempts[source, target])
        successes = float(successful[source, target])
        incoming = float(successful[target, source])
        rows.append(
            {
                "cell_id": other.cell_id,
                "pci": other.pci,
                "distance_km": km,
                "prb_util_pct": round(float(ev.traffic.load[target]) * 100),
                "ho_attempts_per_hour": round(crossings * attempts / started),
                "ho_success_pct": _share(successes, attempts),
                "cio_db": offsets.get(other.cell_id, 0.0),
            }
        )
        pair = [
            _share(bounces[source, target], successes),
            _share(bounces[target, source], incoming),
        ]
        if any(pair):  # listed only where a ping-pong went either way: the output's bound
            ping_pongs[other.cell_id] = pair
    own = state.kpis(cell.cell_id)
    own_load = own.get("PRB_util", float(ev.traffic.load[source]))
    avg = float(np.mean([ev.traffic.load[index[o.cell_id]] for o, _ in related]))
    return {
        "cell_id": cell.cell_id,
        "pci": cell.pci,
        "neighbours": rows,
        "ping_pong_pct_out_back": ping_pongs,
        "findings": _pci_findings(cell, [other for other, _ in related]),
        "load": {
            "serving_prb_util_pct": round(own_load * 100),
            "neighbour_avg_prb_util_pct": round(avg * 100),
            "imbalance_index": round(max(0.0, own_load - avg), 2),
        },
    }


def _share(part: float, whole: float) -> float | None:
    """``part`` as a percentage of ``whole`` (one decimal), None without a ``whole``."""
    return round(100 * float(part) / whole, 1) if whole else None


@TOOLS.tool
def recommend_param_change(
    ctx: ToolContext, cell_id: str, objective: str | None = None
) -> dict[str, Any]:
    state = ctx.state
    cell, related = _surroundings(state, cell_id)
    others = [other for other, _ in related]
    if state.model is not None:
        return _son_advice(state, cell, others, objective)
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
    if any(other.pci == cell.pci for other in others):
        recommendations.append(
            {
                "parameter": "pci",
                "current": cell.pci,
                "recommended": free_pci(
                    [cell.pci, *(o.pci for o in others)], [o.pci for o in others]
                ),
                "rationale": "PCI shared with a neighbour",
            }
        )
    link = state.backhaul() if cell.serving else None
    if link is not None and link.config["bh_shaper_mbps"] < link.capacity_mbps:
        recommendations.append(
            {
                "parameter": "bh_shaper_mbps",
                "current": link.config["bh_shaper_mbps"],
                "recommended": link.capacity_mbps,
                "rationale": "egress shaper below the link's capacity",
            }
        )
    if link is not None and link.config["bh_rt_queue_weight_pct"] < 40:
        recommendations.append(
            {
                "parameter": "bh_rt_queue_weight_pct",
                "current": link.config["bh_rt_queue_weight_pct"],
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


def _son_advice(
    state: NetworkState, cell: CellRow, others: list[CellRow], objective: str | None
) -> dict[str, Any]:
    """recommend_param_change in the network model: the SON advisor's rules over the cell's
    counters and configuration (:mod:`telcoenv.domains.network.advisor`)."""
    from telcoenv.domains.network.advisor import recommend

    link = state.backhaul() if cell.serving else None
    candidates = recommend(
        state.kpis(cell.cell_id),
        {**cell.config, "pci": cell.pci},
        any(other.pci == cell.pci for other in others),
        free_pci([cell.pci, *(o.pci for o in others)], [o.pci for o in others]),
        {"config": link.config, "capacity_mbps": link.capacity_mbps} if link else None,
        state.kpis(state.link_id) if link else {},
        state.relation_offsets(cell.cell_id),
    )
    return {
        "cell_id": cell.cell_id,
        "objective": objective or "",
        "recommendations": candidates,
        "note": "Rule-based SON proposals from this cell's counters: nothing was applied, and "
        "symptoms several causes share can mislead a rule. Check them against the KPIs.",
    }


# --- core write tools ----------------------------------------------------------------------------


def _change(ctx: ToolContext, tool: str, reason: str, targets: list[Any]) -> str:
    """Apply a change and let the causal model recompute the KPIs, as one database change."""
    with ctx.state.db.change():
        change_id = ctx.state.apply(tool, ctx.step, reason, targets)
        ctx.after_change()
    return change_id


@TOOLS.tool
def optimize_cell(
    ctx: ToolContext, cell_id: str, changes: dict[str, Any], reason: str | None = None
) -> dict[str, Any]:
    state = ctx.state
    cell = state.cell(cell_id)
    backhaul = [p for p in changes if p in BACKHAUL_PARAMETERS]
    if backhaul and not cell.serving:
        raise ToolError(
            f"backhaul parameters {backhaul} can only be set on the cell whose site "
            f"link is managed here ({state.serving_id})",
            kind="rejected",
        )
    link = state.backhaul().config if backhaul else {}
    current = {**cell.config, "pci": cell.pci, "azimuth_deg": cell.azimuth_deg, **link}
    applied = [
        {"parameter": n, "old": current[n], "new": v}
        for n, v in changes.items()
        if n != RELATION_OFFSETS
    ]
    targets = [
        (kind, object_id, [(c["parameter"], c["old"], c["new"]) for c in group])
        for kind, object_id, group in (
            ("cell", cell_id, [c for c in applied if c["parameter"] not in BACKHAUL_PARAMETERS]),
            ("backhaul", state.link_id, [c for c in applied if c["parameter"] in backhaul]),
        )
        if group
    ]
    for change in _relation_changes(state, cell_id, changes.get(RELATION_OFFSETS, {})):
        applied.append(change)
        object_id = relation_id(cell_id, change["neighbour_id"])
        targets.append(("relation", object_id, [("cio_db", change["old"], change["new"])]))
    change_id = _change(ctx, "optimize_cell", reason or "", targets)
    return {"status": "applied", "change_id": change_id, "cell_id": cell_id, "changes": applied}


#: optimize_cell's change of a cell's relations' offsets: {neighbour id: dB}.
RELATION_OFFSETS = "neighbour_cio_db"


def _relation_changes(
    state: NetworkState, cell_id: str, offsets: dict[str, float]
) -> list[dict[str, Any]]:
    """The changes of a cell's relations' offsets, each relation one the cell has."""
    if not offsets:
        return []
    current = state.relation_offsets(cell_id)
    unknown = sorted(set(offsets) - set(current))
    if unknown:
        raise ToolError(
            f"{cell_id} has no neighbour relation to {', '.join(unknown)}; its relations are "
            f"to {', '.join(sorted(current))} (neighbor_audit lists them)",
            kind="not_found",
        )
    return [
        {"parameter": RELATION_OFFSETS, "neighbour_id": n, "old": current[n], "new": v}
        for n, v in offsets.items()
    ]


@TOOLS.tool
def optimize_slice(
    ctx: ToolContext, slice_id: str, policy: dict[str, Any], reason: str | None = None
) -> dict[str, Any]:
    state = ctx.state
    before = state.slice(slice_id).policy
    applied = [{"parameter": n, "old": before[n], "new": v} for n, v in policy.items()]
    changes = [(c["parameter"], c["old"], c["new"]) for c in applied]
    change_id = _change(ctx, "optimize_slice", reason or "", [("slice", slice_id, changes)])
    return {
        "status": "applied",
        "change_id": change_id,
        "slice_id": slice_id,
        "changes": applied,
        "policy": {**before, **policy},
    }


@TOOLS.tool
def push_config(ctx: ToolContext, config_id: str, dry_run: bool = False) -> dict[str, Any]:
    state = ctx.state
    stored = state.baseline(config_id)
    if stored is None:
        raise ToolError(
            f"unknown config_id {config_id!r}; stored configurations: "
            f"{', '.join(state.baseline_ids())}",
            kind="not_found",
        )
    cell_id, parameters = stored
    cell = state.cell(cell_id)
    diff = [
        {"parameter": name, "old": cell.config[name], "new": value}
        for name, value in parameters.items()
        if cell.config[name] != value
    ]
    if dry_run:
        return {"status": "dry_run", "config_id": config_id, "cell_id": cell_id, "changes": diff}
    if not diff:
        return {"status": "no_change", "config_id": config_id, "cell_id": cell_id, "changes": []}
    changes = [(c["parameter"], c["old"], c["new"]) for c in diff]
    change_id = _change(ctx, "push_config", f"push {config_id}", [("cell", cell_id, changes)])
    return {
        "status": "applied",
        "change_id": change_id,
        "config_id": config_id,
        "cell_id": cell_id,
        "changes": diff,
    }


@TOOLS.tool
def create_ticket(
    ctx: ToolContext,
    summary: str,
    severity: str,
    cell_id: str | None = None,
    team: str | None = None,
) -> dict[str, Any]:
    state = ctx.state
    if cell_id is not None:
        state.require_cell(cell_id)
    ticket = state.add_ticket(summary, severity, team or "noc", cell_id or "", ctx.step)
    return {
        k: ticket[k] for k in ("ticket_id", "status", "severity", "team", "cell_id", "created_at")
    }


# --- distractor tools: plausible, relevant-looking, and no help with the diagnosis ----------------


@TOOLS.tool
def subscriber_insight(ctx: ToolContext, cell_id: str, window: str = "24h") -> dict[str, Any]:
    ctx.state.require_cell(cell_id)
    rng = ctx.rng
    parse_window(window)
    kpis = ctx.state.kpis(cell_id)
    apps = ["video_streaming", "social_media", "web_browsing", "messaging", "gaming", "cloud_sync"]
    shares = rng.dirichlet(np.ones(len(apps)) * 2)
    users = int(kpis.get("users", 150))
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


@TOOLS.tool
def device_cap_lookup(
    ctx: ToolContext, cell_id: str, device_model: str | None = None
) -> dict[str, Any]:
    ctx.state.require_cell(cell_id)
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


@TOOLS.tool
def sla_policy_fetch(ctx: ToolContext, cell_id: str, customer: str | None = None) -> dict[str, Any]:
    ctx.state.require_cell(cell_id)
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


@TOOLS.tool
def traffic_forecast(
    ctx: ToolContext, cell_id: str, horizon: str, detail: str | None = None
) -> dict[str, Any]:
    full = full_detail(detail)
    state, rng = ctx.state, ctx.rng
    cell = state.cell(cell_id)
    hours = int(parse_window(horizon).total_seconds() // 3600)
    kpis = state.kpis(cell_id)
    load = kpis.get("PRB_util", kpis.get("prb_util", cell.load))
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
    output = {
        "cell_id": cell_id,
        "horizon": horizon,
        "model": "seasonal-naive (4 weeks)",
        "forecast": forecast,
    }
    if full or len(forecast) <= FORECAST_HOURS:
        return output
    loads = [f["prb_util_pct"] for f in forecast]
    return {
        **output,
        "forecast": forecast[:FORECAST_HOURS],
        "hours": len(forecast),
        "mean_prb_util_pct": round(sum(loads) / len(loads), 1),
        "peak": forecast[loads.index(max(loads))],
        "lowest": forecast[loads.index(min(loads))],
        "truncated": truncated(FORECAST_HOURS, len(forecast)),
    }


@TOOLS.tool
def complaint_trend_analysis(ctx: ToolContext, area: str, window: str) -> dict[str, Any]:
    state, rng = ctx.state, ctx.rng
    _check_area(state, area)
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


@TOOLS.tool
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
