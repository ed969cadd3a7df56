"""How closely the network model's worlds reach their calibration targets, and in how many rounds.

    python benchmarks/check_calibration.py --seeds 5          # a table, then JSON

For every network intent x ``--seeds`` seeds, a new world (the cache of recent worlds emptied):
the rounds calibration ran (at most ``model.CALIBRATION_ROUNDS``) and the worst target's error
at the round it kept, in tolerances (``model.World.calibration_error``: at most 1 when the
serving cell's median RSRP and SINR, its users and every cell's load all came within their
tolerances). Prints the intents whose worlds stayed furthest off, then the share of worlds
that reached every target, the median and 90th percentile of the error and the mean rounds;
the last line is JSON. docs/network_model.md and the session notes quote it.
"""

from __future__ import annotations

import argparse
import json
import statistics

import numpy as np

import telcoenv
from telcoenv.domains.network import model
from telcoenv.domains.network.loading import network_catalog


def measure(seeds: int) -> list[dict[str, float | str]]:
    rows: list[dict[str, float | str]] = []
    for intent in network_catalog().intents:
        env = telcoenv.make(intent.env_name, embedder=None)
        for seed in range(seeds):
            model.built_world.worlds.clear()
            env.reset(seed=seed)
            world = env.unwrapped._episode.setup.state.model.simulation.world
            rows.append(
                {
                    "intent": intent.key,
                    "seed": seed,
                    "rounds": world.calibration_rounds,
                    "error": world.calibration_error,
                }
            )
        env.close()
    return rows


def summary(rows: list[dict[str, float | str]]) -> dict[str, float]:
    errors = np.array([r["error"] for r in rows], dtype=float)
    finite = errors[np.isfinite(errors)]
    return {
        "worlds": len(rows),
        "reached": float(np.mean(errors <= 1.0)),
        "error_median": float(np.median(finite)) if finite.size else float("nan"),
        "error_p90": float(np.percentile(finite, 90)) if finite.size else float("nan"),
        "rounds_mean": float(np.mean([r["rounds"] for r in rows])),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    rows = measure(args.seeds)
    by_intent: dict[str, list[float]] = {}
    for row in rows:
        by_intent.setdefault(str(row["intent"]), []).append(float(row["error"]))
    print("| intent | worlds reaching every target | median error (tolerances) |")
    print("|---|---|---|")
    for intent, errors in sorted(by_intent.items(), key=lambda item: -statistics.median(item[1])):
        reached = sum(e <= 1.0 for e in errors) / len(errors)
        print(f"| {intent} | {reached:.0%} | {statistics.median(errors):.2f} |")
    print(json.dumps(summary(rows)))


if __name__ == "__main__":
    main()
