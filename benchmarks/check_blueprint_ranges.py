"""How often the network model's start of an episode shows each blueprint KPI inside its range.

    python benchmarks/check_blueprint_ranges.py --seeds 8          # a table, then JSON

For every blueprint, ``--seeds`` episodes of ``NetworkDomain(model="physical")``: the model is
calibrated to the blueprint's level KPIs (RSRP, SINR, users, PRB load) and every other KPI the
blueprint samples is what the model computes. Prints, per blueprint, the KPIs found outside
their range in some episode (share inside, median value, range) and the overall share; the last
line is JSON (overall share, and the share per KPI name). docs/network_model.md quotes it.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict

import telcoenv
from telcoenv.domains.network import NetworkDomain, network_domain


def measure(seeds: int) -> tuple[dict[str, dict[str, list[float]]], dict[str, tuple[float, float]]]:
    domain = NetworkDomain(model="physical")
    values: dict[str, dict[str, list[float]]] = {}
    ranges: dict[str, tuple[float, float]] = {}
    for intent in network_domain().catalog.intents:
        env = telcoenv.make(intent.env_name, domain=domain, embedder=None)
        for blueprint in network_domain().catalog.blueprints[intent.key]:
            found = values.setdefault(blueprint.blueprint_id, defaultdict(list))
            for seed in range(seeds):
                env.reset(seed=seed, options={"blueprint": blueprint.blueprint_id})
                observed = env.unwrapped._episode.setup.truth.sampled
                for name, constraint in blueprint.constraints.items():
                    ranges[f"{blueprint.blueprint_id}.{name}"] = (constraint.min, constraint.max)
                    if name in observed:
                        found[name].append(observed[name])
        env.close()
    return values, ranges


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=8)
    args = parser.parse_args()
    values, ranges = measure(args.seeds)
    inside_total = count_total = 0
    by_name: dict[str, list[bool]] = defaultdict(list)
    for blueprint_id, kpis in values.items():
        misses = []
        for name, seen in kpis.items():
            low, high = ranges[f"{blueprint_id}.{name}"]
            inside = [low <= v <= high for v in seen]
            by_name[name] += inside
            inside_total += sum(inside)
            count_total += len(inside)
            if not all(inside):
                share = sum(inside) / len(inside)
                misses.append(
                    f"{name} {share:.0%} (median {statistics.median(seen):.3g}, "
                    f"range {low:g}-{high:g})"
                )
        print(f"{blueprint_id:30s} {'; '.join(misses) or 'all inside'}")
    overall = inside_total / max(count_total, 1)
    print(f"overall: {overall:.1%} of {count_total} sampled values inside their ranges")
    shares = {name: round(sum(v) / len(v), 3) for name, v in sorted(by_name.items())}
    print(json.dumps({"inside": round(overall, 4), "values": count_total, "by_kpi": shares}))


if __name__ == "__main__":
    main()
