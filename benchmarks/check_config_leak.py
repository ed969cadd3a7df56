"""How much one OSS record gives away, without reading it as an engineer would.

For each tier, ``--episodes`` episodes spread evenly over the 20 network intents (seeds 0..),
in the blueprint model and in the network model, one ``oss_query`` of the reported cell each:

* ``lookup``: the red team's rule: the single parameter off its role profile names the intent
  that owns it (no guess when none or several are off);
* ``config rules``: the investigator's cause checks on the record's configuration, state and
  policies alone (no counters, no alarms): an expert's reading of the configuration;
* ``alarm lookup``: each alarm name mapped to the intent it most often came with (learned on the
  even seeds, scored on the odd ones);
* ``KPI name sets``: how many different sets of KPI names a cell of one technology reports.

Run: ``python benchmarks/check_config_leak.py --episodes 1000`` (about 10 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import collections
import json
import time

import telcoenv
from telcoenv.agents.investigator import assess, read_oss
from telcoenv.domains.network import NetworkDomain
from telcoenv.domains.network.loading import network_catalog
from telcoenv.domains.network.parameters import PROFILE

COUNTER_EVIDENCE = ("kpi.", "backhaul.kpi.", "slice.kpi.", "alarms")


def record(env, seed: int) -> dict:
    env.reset(seed=seed)
    cell = env.unwrapped._episode.setup.state.serving_id
    call = {"name": "oss_query", "arguments": {"cell_id": cell, "window": "1h"}}
    return json.loads(env.step(call)[0])


def measure(model: str, tier: str, episodes: int) -> dict[str, float]:
    catalog = network_catalog()
    owner: dict[str, str] = {}
    for intent in catalog.intents:
        for name in intent.fault.parameters:
            owner.setdefault(name, intent.key)
    per_intent = max(2, episodes // len(catalog.intents))
    lookup = rules = count = 0
    alarms: dict[int, list[tuple[frozenset[str], str]]] = {0: [], 1: []}
    name_sets: dict[str, set[tuple[str, ...]]] = collections.defaultdict(set)
    for intent in catalog.intents:
        domain = NetworkDomain(model=model)
        env = telcoenv.make(intent.env_name, domain=domain, embedder=None, difficulty=tier)
        for seed in range(per_intent):
            output = record(env, seed)
            role, config = output["cell"]["role"], output["configuration"]
            off = [n for n, v in config.items() if n in PROFILE[role] and v != PROFILE[role][n]]
            lookup += len(off) == 1 and owner.get(off[0]) == intent.key
            evidence = {
                k: v for k, v in read_oss(output).items() if not k.startswith(COUNTER_EVIDENCE)
            }
            rules += assess(evidence)[0].intent == intent.key
            names = frozenset(a["name"] for a in output.get("active_alarms", []))
            alarms[seed % 2].append((names, intent.key))
            if output["cell"]["operational_state"] == "ENABLED":
                name_sets[output["cell"]["technology"]].add(tuple(sorted(output["kpis"])))
            count += 1
    votes: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for names, key in alarms[0]:
        for name in names:
            votes[name][key] += 1
    right = 0
    for names, key in alarms[1]:
        tally: collections.Counter[str] = collections.Counter()
        for name in names:
            tally.update(votes.get(name, {}))
        right += bool(tally) and tally.most_common(1)[0][0] == key
    return {
        "episodes": count,
        "lookup": lookup / count,
        "config rules": rules / count,
        "alarm lookup": right / max(1, len(alarms[1])),
        "KPI name sets": max(len(s) for s in name_sets.values()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=200, help="per tier and model")
    parser.add_argument("--tier", action="append", choices=("guided", "symptom", "noisy"))
    parser.add_argument("--model", action="append", choices=("blueprint", "physical"))
    args = parser.parse_args()
    print("| model | tier | episodes | lookup | config rules | alarm lookup | KPI name sets |")
    print("|---|---|---|---|---|---|---|")
    for model in args.model or ["blueprint", "physical"]:
        for tier in args.tier or ["guided", "symptom", "noisy"]:
            start = time.perf_counter()
            row = measure(model, tier, args.episodes)
            print(
                f"| {model} | {tier} | {row['episodes']} | {row['lookup']:.3f} "
                f"| {row['config rules']:.3f} | {row['alarm lookup']:.3f} "
                f"| {row['KPI name sets']} |",
                f"<!-- {time.perf_counter() - start:.0f} s -->",
                flush=True,
            )


if __name__ == "__main__":
    main()
