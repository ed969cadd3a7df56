"""Draw the pictures of docs/network_model.md from the network model (SVG, no plotting library).

    python docs/make_model_pictures.py            # writes docs/images/network_model_*.svg

Four pictures, each from seeded episodes of ``NetworkDomain(model="physical")``:

* the best-server SINR over a neighbourhood of an overshooting cell, uptilted as the fault left
  it and after the fix (tilt 6°), 24 x 24 bins of 75 m (grey: outside the cluster);
* a week of the serving cell's hourly PRB load, median user throughput and RLF rate in an RLF
  episode: the daily cycle, and the fault's onset hours before the report;
* the distribution of the serving cell's users' SINR in four areas (urban, suburban, rural,
  indoor), each user weighted by the people its UE stands for, as the episode starts.

The tests run this script and compare its output with the files in docs/images, so the
pictures always show what the model computes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import math
from pathlib import Path

import numpy as np

import telcoenv
from telcoenv.domains.network import NetworkDomain, layout
from telcoenv.domains.network.model import coverage_bins

IMAGES = Path(__file__).resolve().parent / "images"
SIZE, BIN_M = 24, 75.0


def _episode(key: str, seed: int):
    env = telcoenv.make(key, domain=NetworkDomain(model="physical"), embedder=None)
    env.reset(seed=seed)
    return env, env.unwrapped._episode.setup.state


def _colour(value: float, low: float, high: float) -> str:
    """A blue-green-yellow-red ramp (low to high)."""
    stops = [(0.0, (49, 54, 149)), (0.35, (69, 117, 180)), (0.55, (116, 196, 118)),
             (0.75, (254, 224, 139)), (1.0, (215, 48, 39))]  # fmt: skip
    t = min(max((value - low) / (high - low), 0.0), 1.0)
    for (t0, c0), (t1, c1) in itertools.pairwise(stops):
        if t <= t1:
            f = (t - t0) / (t1 - t0)
            red, green, blue = (round(a + (b - a) * f) for a, b in zip(c0, c1, strict=True))
            return f"#{red:02x}{green:02x}{blue:02x}"
    return "#d73027"


def sinr_map(title: str, state, tilt: float | None) -> str:
    """The best server's SINR per bin around the serving cell, sites marked."""
    simulation = state.model.simulation
    config = {owner: dict(params) for owner, params in state.configuration().items()}
    if tilt is not None:
        config[f"cell:{state.serving_id}"]["tilt_deg"] = tilt
    ev = simulation.evaluation(config, 1.0)
    bins = coverage_bins(simulation.world, ev, 0, BIN_M, SIZE, simulation.world.track_seed)
    cell, pad, legend = 14, 30, 60
    width = SIZE * cell + 2 * pad + legend
    height = SIZE * cell + 2 * pad + 20
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        'font-family="sans-serif" font-size="11">',
        f'<text x="{pad}" y="18" font-size="13">{title}</text>',
    ]
    for index, value in enumerate(bins.sinr_db.tolist()):
        row, col = divmod(index, SIZE)
        # A bin outside the cluster (behind the panels, past its reach) is left grey.
        fill = _colour(value, -10.0, 25.0) if bins.inside[index] else "#dddddd"
        parts.append(
            f'<rect x="{pad + col * cell}" y="{pad + row * cell}" width="{cell}" '
            f'height="{cell}" fill="{fill}"/>'
        )
    # Sites inside the map (the serving one larger): the map is centred half a service
    # radius out along the serving cell's azimuth (model.coverage_bins).
    cells = ev.cells
    reach = layout.SERVICE_RADIUS_M[simulation.world.area][simulation.world.role]
    azimuth = math.radians(float(cells.azimuth_deg[0]))
    cx = float(cells.x[0]) + 0.5 * reach * math.sin(azimuth)
    cy = float(cells.y[0]) + 0.5 * reach * math.cos(azimuth)
    for i in range(cells.count):
        col = (float(cells.x[i]) - cx) / BIN_M + (SIZE - 1) / 2.0
        row = (cy - float(cells.y[i])) / BIN_M + (SIZE - 1) / 2.0
        if -0.5 <= col <= SIZE - 0.5 and -0.5 <= row <= SIZE - 0.5:
            x, y = pad + (col + 0.5) * cell, pad + (row + 0.5) * cell
            parts.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{6 if i == 0 else 4}" fill="#fff" '
                'stroke="#000" stroke-width="1.5"/>'
            )
    for step, label in enumerate(range(-10, 26, 5)):
        y = pad + step * (SIZE * cell / 7)
        parts.append(
            f'<rect x="{pad + SIZE * cell + 15}" y="{y:.0f}" width="14" height="14" '
            f'fill="{_colour(label, -10.0, 25.0)}"/>'
            f'<text x="{pad + SIZE * cell + 33}" y="{y + 11:.0f}">{label} dB</text>'
        )
    inside = bins.inside
    served = float(np.mean(bins.best[inside] == 0)) * 100
    parts.append(
        f'<text x="{pad}" y="{height - 8}">median SINR {np.median(bins.sinr_db[inside]):.1f} '
        f"dB; the serving cell is best server in {served:.0f} % of the cluster's bins "
        "(grey: outside it)</text>"
    )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def week(title: str, state) -> str:
    """Hourly PRB load, median user throughput and RLF rate over the week before the report."""
    model = state.model
    first = np.datetime64((state.now - dt.timedelta(days=7)).replace(tzinfo=None), "s")
    moments = first + np.arange(7 * 24 + 1) * np.timedelta64(1, "h")
    names = ["PRB_util", "throughput_p50_mbps", "RLF_rate"]
    rows = model.series(state.serving_id, names, moments, np.random.default_rng(0))
    labels = ["PRB load (%)", "median user throughput (Mbps)", "RLF rate (%)"]
    scale = [100.0, 1.0, 100.0]
    colours = ["#4575b4", "#1a9850", "#d73027"]
    width, panel, pad = 760, 110, 40
    height = pad + 3 * (panel + 30) + 20
    onset = np.datetime64(model.timeline.onset.replace(tzinfo=None), "s")
    x_of = lambda i: pad + 10 + (width - 2 * pad - 20) * i / (len(moments) - 1)  # noqa: E731
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        'font-family="sans-serif" font-size="11">',
        f'<text x="{pad}" y="18" font-size="13">{title}</text>',
    ]
    onset_x = x_of(float((onset - first) / np.timedelta64(1, "h")))
    for k, (row, label, factor, colour) in enumerate(
        zip(rows, labels, scale, colours, strict=True)
    ):
        values = row * factor
        top = pad + k * (panel + 30)
        low, high = float(values.min()), float(values.max())
        high = high if high > low else low + 1.0
        points = " ".join(
            f"{x_of(i):.1f},{top + panel - (v - low) / (high - low) * panel:.1f}"
            for i, v in enumerate(values.tolist())
        )
        parts += [
            f'<text x="{pad}" y="{top - 4}">{label}: {low:.1f} to {high:.1f}</text>',
            f'<rect x="{pad}" y="{top}" width="{width - 2 * pad}" height="{panel}" '
            'fill="none" stroke="#bbb"/>',
            f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="1.2"/>',
            f'<line x1="{onset_x:.1f}" x2="{onset_x:.1f}" y1="{top}" y2="{top + panel}" '
            'stroke="#000" stroke-dasharray="3,3"/>',
        ]
    for day in range(8):
        x = x_of(day * 24)
        parts.append(f'<text x="{x - 10:.0f}" y="{height - 8}">day {day - 7}</text>')
    parts.append(f'<text x="{onset_x + 4:.0f}" y="{pad + 12}">onset</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


#: The SINR distribution's episodes: blueprint, seed and colour.
CDF_EPISODES = (
    ("throughput_drop_dl", "DL_DROP_URBAN_PEAK", 0, "#d73027"),
    ("throughput_drop_dl", "DL_DROP_SUBURBAN_SUDDEN", 0, "#fc8d59"),
    ("coverage_hole", "COV_HOLE_RURAL_SPARSITY", 0, "#1a9850"),
    ("throughput_drop_dl", "DL_DROP_INDOOR_CAP", 0, "#4575b4"),
)


def _weighted_quantiles(values: np.ndarray, weights: np.ndarray, q: np.ndarray) -> np.ndarray:
    order = np.argsort(values)
    cumulative = np.cumsum(weights[order]) / weights.sum()
    return np.interp(q, cumulative, values[order])


def sinr_cdf(title: str) -> str:
    """The serving cell's users' SINR as a cumulative distribution, one curve per episode,
    with its 10th, 50th and 90th percentiles in the legend."""
    width, height, pad = 620, 360, 48
    low, high = -10.0, 30.0
    x_of = lambda v: pad + (width - 2 * pad) * (v - low) / (high - low)  # noqa: E731
    y_of = lambda p: height - pad - (height - 2 * pad) * p  # noqa: E731
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        'font-family="sans-serif" font-size="11">',
        f'<text x="{pad}" y="18" font-size="13">{title}</text>',
        f'<rect x="{pad}" y="{pad}" width="{width - 2 * pad}" height="{height - 2 * pad}" '
        'fill="none" stroke="#bbb"/>',
    ]
    for value in range(int(low), int(high) + 1, 5):
        x = x_of(value)
        parts += [
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{pad}" y2="{height - pad}" stroke="#eee"/>',
            f'<text x="{x - 6:.1f}" y="{height - pad + 14}">{value}</text>',
        ]
    for share in (0.1, 0.5, 0.9):
        y = y_of(share)
        parts += [
            f'<line x1="{pad}" x2="{width - pad}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>',
            f'<text x="{pad - 26}" y="{y + 4:.1f}">{share:.1f}</text>',
        ]
    parts.append(f'<text x="{width / 2 - 40:.0f}" y="{height - 10}">SINR (dB)</text>')
    shares = np.linspace(0.0, 1.0, 101)
    for k, (key, blueprint, seed, colour) in enumerate(CDF_EPISODES):
        env = telcoenv.make(key, domain=NetworkDomain(model="physical"), embedder=None)
        env.reset(seed=seed, options={"blueprint": blueprint})
        state = env.unwrapped._episode.setup.state
        simulation = state.model.simulation
        ev = simulation.evaluation(state.configuration(), 1.0)
        mine = ev.radio.serving == 0
        sinr, weight = ev.radio.sinr_db[mine], simulation.world.weight[mine]
        curve = _weighted_quantiles(sinr, weight, shares)
        points = " ".join(
            f"{x_of(min(max(v, low), high)):.1f},{y_of(p):.1f}"
            for v, p in zip(curve.tolist(), shares.tolist(), strict=True)
        )
        q10, q50, q90 = _weighted_quantiles(sinr, weight, np.array([0.1, 0.5, 0.9])).tolist()
        y = y_of(0.32) + 15 * k
        legend = x_of(11.0)
        parts += [
            f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="1.5"/>',
            f'<line x1="{legend:.1f}" x2="{legend + 20:.1f}" y1="{y - 4:.1f}" y2="{y - 4:.1f}" '
            f'stroke="{colour}" stroke-width="2"/>',
            f'<text x="{legend + 24:.1f}" y="{y:.1f}">{simulation.world.area}: q10 {q10:.1f}, '
            f"q50 {q50:.1f}, q90 {q90:.1f} dB</text>",
        ]
        env.close()
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def pictures() -> dict[str, str]:
    """Every picture, by file name."""
    _, overshoot = _episode("overshooting_cell", 3)
    _, rlf = _episode("rlf_spike", 6)
    return {
        "network_model_sinr_fault.svg": sinr_map(
            "Best-server SINR, overshooting cell uptilted (the fault)", overshoot, None
        ),
        "network_model_sinr_fixed.svg": sinr_map(
            "Best-server SINR after the fix (tilt 6 degrees)", overshoot, 6.0
        ),
        "network_model_week.svg": week("A week of the serving cell (RLF episode)", rlf),
        "network_model_sinr_cdf.svg": sinr_cdf(
            "The serving cell's users' SINR, four areas (as the episode starts)"
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=IMAGES)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in pictures().items():
        (args.out / name).write_text(text, encoding="utf-8")
        print(args.out / name)


if __name__ == "__main__":
    main()
