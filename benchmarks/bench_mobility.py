"""The mobility model's handovers: the step-by-step reference against ``mobility.handovers``.

    python benchmarks/bench_mobility.py [--repeats 15] [--calls 40] [--json]

The cluster is the one of ``tests/network/test_mobility_model.py``: 7 urban macro cells (a
centre and a ring at 600 m), 96 tracks walked or driven for 80 steps of 100 ms, built as an
episode does (``layout.cells_of``, ``mobility.tracks``, ``track_geometry``, ``track_radio``).
The reference is the test file's ``_reference_handovers`` (the original implementation, one
numpy pass over all cells and tracks per step), which ``mobility.handovers`` must equal field
for field: the script checks that first, on every configuration.

Configurations: ``default``, the macro profile (A3 offset 3 dB, hysteresis 2 dB, TTT 480 ms,
T310 1000 ms, CIO 0, load 0.5); ``storm``, a handover storm (A3 offset -6 dB, hysteresis 0,
TTT 0: about 1,300 handovers, the worst case of the new implementation's per-event work).

Each repeat calls both implementations ``--calls`` times, alternately (the machine's load hits
both alike), and keeps the mean of each; the figures are the medians over the repeats (ms per
call) and the ratio reference / new (above 1: the new one is faster). ``--json``: only the
figures, as one flat JSON object (for ``benchmarks/compare.py``); otherwise a line per
configuration, then that object as the last line.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from telcoenv.domains.network import layout, mobility
from telcoenv.domains.network.parameters import PROFILE

ROOT = Path(__file__).resolve().parent.parent
N = 7
CONFIGURATIONS = {
    "default": {"a3": 3.0, "hys": 2.0, "ttt": 480.0},
    "storm": {"a3": -6.0, "hys": 0.0, "ttt": 0.0},
}


def reference() -> Callable[..., mobility.Mobility]:
    """The test file's step-by-step oracle (loaded by path: tests/ is not a package)."""
    path = ROOT / "tests" / "network" / "test_mobility_model.py"
    spec = importlib.util.spec_from_file_location("_mobility_oracle", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module._reference_handovers


def cluster() -> tuple:
    """The test fixture's cluster: its cells and the RSRP along its 96 tracks."""
    rng = np.random.default_rng(11)
    angles = np.radians(np.arange(N - 1) * 60.0)
    positions = [(0.0, 0.0)] + [(600 * math.sin(a), 600 * math.cos(a)) for a in angles]
    azimuths = [90.0] + [float((math.degrees(a) + 180) % 360) for a in angles]
    configs = [dict(PROFILE["macro"]) for _ in range(N)]
    cells = layout.cells_of(
        "urban", "macro", positions, azimuths, list(range(1, N + 1)), configs, [True] * N
    )
    walk = mobility.tracks(cells, 450.0, rng.choice([1.4, 8.0, 14.0], 96), rng)
    geometry = mobility.track_geometry(cells, walk, rng)
    return cells, mobility.track_radio(cells, geometry)


def arguments(cells, radio, a3: float, hys: float, ttt: float) -> tuple:
    return (
        radio,
        np.full(N, 0.5),
        cells.pci,
        np.full(N, a3),
        np.full(N, hys),
        np.full(N, ttt),
        np.zeros(N),
        np.full(N, 1000.0),
    )


def check_equal(expected: mobility.Mobility, actual: mobility.Mobility) -> None:
    for field in mobility.Mobility.__dataclass_fields__:
        if not np.array_equal(getattr(expected, field), getattr(actual, field)):
            raise SystemExit(f"handovers differs from the reference in {field}")


def per_call_ms(function: Callable, args: tuple, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        function(*args)
    return 1000.0 * (time.perf_counter() - start) / calls


def measure(oracle: Callable, args: tuple, repeats: int, calls: int) -> dict[str, float]:
    expected = oracle(*args)
    check_equal(expected, mobility.handovers(*args))
    old, new = [], []
    for _ in range(repeats):
        old.append(per_call_ms(oracle, args, calls))
        new.append(per_call_ms(mobility.handovers, args, calls))
    reference_ms, handovers_ms = statistics.median(old), statistics.median(new)
    return {
        "attempts": int(expected.attempts.sum()),
        "reference_ms": round(reference_ms, 3),
        "handovers_ms": round(handovers_ms, 3),
        "speedup": round(reference_ms / handovers_ms, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--calls", type=int, default=40, help="calls per repeat and side")
    parser.add_argument("--json", action="store_true", help="only the flat JSON object")
    args = parser.parse_args()
    oracle = reference()
    cells, radio = cluster()
    flat: dict[str, float] = {"repeats": args.repeats, "calls": args.calls}
    for name, configuration in CONFIGURATIONS.items():
        call = arguments(cells, radio, **configuration)
        for _ in range(3):  # warm up (imports, caches, the scratch arrays)
            oracle(*call), mobility.handovers(*call)
        figures = measure(oracle, call, args.repeats, args.calls)
        if not args.json:
            print(
                f"{name:8s} {figures['attempts']:5d} handovers: reference "
                f"{figures['reference_ms']:.3f} ms, handovers {figures['handovers_ms']:.3f} ms, "
                f"x{figures['speedup']:.2f} (median of {args.repeats} x {args.calls} calls)",
                flush=True,
            )
        flat.update({f"{name}.{k}": v for k, v in figures.items()})
    print(json.dumps(flat))


if __name__ == "__main__":
    main()
