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
    """One tier's row (:func:`measure_tiers`)."""
    return measure_tiers(model, [tier], episodes)[tier]


class _Tally:
    """One tier's counts over the episodes it has read."""

    def __init__(self) -> None:
        self.lookup = self.rules = self.count = 0
        self.alarms: dict[int, list[tuple[frozenset[str], str]]] = {0: [], 1: []}
        self.name_sets: dict[str, set[tuple[str, ...]]] = collections.defaultdict(set)

    def add(self, output: dict, seed: int, intent: str, owner: dict[str, str]) -> None:
        role, config = output["cell"]["role"], output["configuration"]
        off = [n for n, v in config.items() if n in PROFILE[role] and v != PROFILE[role][n]]
        self.lookup += len(off) == 1 and owner.get(off[0]) == intent
        evidence = {k: v for k, v in read_oss(output).items() if not k.startswith(COUNTER_EVIDENCE)}
        self.rules += assess(evidence)[0].intent == intent
        names = frozenset(a["name"] for a in output.get("active_alarms", []))
        self.alarms[seed % 2].append((names, intent))
        if output["cell"]["operational_state"] == "ENABLED":
            self.name_sets[output["cell"]["technology"]].add(tuple(sorted(output["kpis"])))
        self.count += 1

    def row(self) -> dict[str, float]:
        # Alarm names learnt on even seeds, tried on odd ones.
        votes: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        for names, key in self.alarms[0]:
            for name in names:
                votes[name][key] += 1
        right = 0
        for names, key in self.alarms[1]:
            tally: collections.Counter[str] = collections.Counter()
            for name in names:
                tally.update(votes.get(name, {}))
            right += bool(tally) and tally.most_common(1)[0][0] == key
        return {
            "episodes": self.count,
            "lookup": self.lookup / self.count,
            "config rules": self.rules / self.count,
            "alarm lookup": right / max(1, len(self.alarms[1])),
            "KPI name sets": max(len(s) for s in self.name_sets.values()),
        }


def measure_tiers(model: str, tiers: list[str], episodes: int) -> dict[str, dict[str, float]]:
    """Each tier's row over ``episodes`` episodes (the same seeds per intent in every tier):
    seed by seed, every tier's episode of a seed before the next seed, so that the tiers whose
    world is the same (the guided and symptom tiers; the noisy tier plants load) build it once
    (the process keeps the latest worlds)."""
    catalog = network_catalog()
    owner: dict[str, str] = {}
    for intent in catalog.intents:
        for name in intent.fault.parameters:
            owner.setdefault(name, intent.key)
    per_intent = max(2, episodes // len(catalog.intents))
    tallies = {tier: _Tally() for tier in tiers}
    for intent in catalog.intents:
        domain = NetworkDomain(model=model)
        envs = {
            tier: telcoenv.make(intent.env_name, domain=domain, embedder=None, difficulty=tier)
            for tier in tiers
        }
        for seed in range(per_intent):
            for tier, env in envs.items():
                tallies[tier].add(record(env, seed), seed, intent.key, owner)
        for env in envs.values():
            env.close()
    return {tier: tally.row() for tier, tally in tallies.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=200, help="per tier and model")
    parser.add_argument("--tier", action="append", choices=("guided", "symptom", "noisy"))
    parser.add_argument("--model", action="append", choices=("blueprint", "physical"))
    args = parser.parse_args()
    print("| model | tier | episodes | lookup | config rules | alarm lookup | KPI name sets |")
    print("|---|---|---|---|---|---|---|")
    for model in args.model or ["blueprint", "physical"]:
        start = time.perf_counter()
        rows = measure_tiers(model, args.tier or ["guided", "symptom", "noisy"], args.episodes)
        for tier, row in rows.items():
            print(
                f"| {model} | {tier} | {row['episodes']} | {row['lookup']:.3f} "
                f"| {row['config rules']:.3f} | {row['alarm lookup']:.3f} "
                f"| {row['KPI name sets']} |",
                flush=True,
            )
        print(f"<!-- {model}: {time.perf_counter() - start:.0f} s -->", flush=True)


if __name__ == "__main__":
    main()
