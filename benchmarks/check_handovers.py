"""How healthy worlds hand over, and the shape of their SINR: the network model's checks a RAN
engineer asks for first.

    python benchmarks/check_handovers.py --seeds 3          # a table, then JSON

For every network intent x ``--seeds`` seeds, the world *without* its fault (the normal
configuration, no failed unit): the serving cell's handover failure rate (too-late RLFs
included) and success rate (executions: a handover fails at the target, or at the source when
its command is lost), and its users' SINR median and 90th percentile, with the world's
interference share from beyond the cluster (eta). Prints the worlds past 30 % failure, then the
median and tail of the failure rates (all worlds, and urban and suburban alone), of the success
rates, and of the SINR's q90 - q50 (a flat top, q90 within 2 dB of the median, is the mark of a
large eta: no user's SINR exceeds 1/eta). docs/network_model.md and the session notes quote it.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

import telcoenv
from telcoenv.domains.network.loading import network_catalog


def measure(seeds: int) -> list[dict[str, float | str]]:
    rows: list[dict[str, float | str]] = []
    for intent in network_catalog().intents:
        env = telcoenv.make(intent.env_name, embedder=None)
        for seed in range(seeds):
            env.reset(seed=seed)
            state = env.unwrapped._episode.setup.state
            simulation, normal = state.model.simulation, state.model.epochs[0].config
            counters = simulation.kpis(state.serving_id, normal, 1.0, faulty=False)
            run = simulation.evaluation(normal, 1.0, False)
            sinr = run.radio.sinr_db[run.radio.serving == 0]
            q50, q90 = np.percentile(sinr, [50, 90]) if sinr.size else (np.nan, np.nan)
            rows.append(
                {
                    "intent": intent.key,
                    "seed": seed,
                    "area": simulation.world.area,
                    "eta": float(simulation.world.site_share),
                    "ho_fail_rate": float(counters.get("ho_fail_rate", 0.0)),
                    "ho_success": float(counters.get("HO_success", 1.0)),
                    "sinr_q50": float(q50),
                    "sinr_q90": float(q90),
                }
            )
        env.close()
    return rows


def summary(rows: list[dict[str, float | str]]) -> dict[str, float]:
    fail = np.array([r["ho_fail_rate"] for r in rows], dtype=float)
    city = np.array(
        [r["ho_fail_rate"] for r in rows if r["area"] in ("urban", "suburban")], dtype=float
    )
    success = np.array([r["ho_success"] for r in rows], dtype=float)
    gap = np.array([r["sinr_q90"] - r["sinr_q50"] for r in rows], dtype=float)
    gap = gap[np.isfinite(gap)]
    return {
        "worlds": len(rows),
        "ho_fail_median": float(np.median(fail)),
        "ho_fail_p90": float(np.percentile(fail, 90)),
        "share_past_30": float(np.mean(fail > 30.0)),
        "urban_suburban_worlds": len(city),
        "urban_suburban_past_30": int(np.sum(city > 30.0)),
        "urban_suburban_median": float(np.median(city)) if city.size else float("nan"),
        "ho_success_median": float(np.median(success)),
        "ho_success_p10": float(np.percentile(success, 10)),
        "sinr_gap_median_db": float(np.median(gap)),
        "share_flat_top": float(np.mean(gap < 2.0)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="per intent")
    args = parser.parse_args()
    rows = measure(args.seeds)
    print("| intent | seed | area | eta | HO failure % | SINR q50 / q90 dB |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        if float(r["ho_fail_rate"]) > 30.0:
            print(
                f"| {r['intent']} | {r['seed']} | {r['area']} | {r['eta']:.2f} "
                f"| {r['ho_fail_rate']:.1f} | {r['sinr_q50']:.1f} / {r['sinr_q90']:.1f} |"
            )
    print(json.dumps(summary(rows)))


if __name__ == "__main__":
    main()
