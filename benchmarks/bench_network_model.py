"""What the network model costs against the blueprint model, measured alternately in one run.

    python benchmarks/bench_network_model.py [--rounds 5] [--seeds 20] [--json]

Per round and model (the two alternate, so the machine's load hits both alike), over the 20
network intents at ``--seeds`` seeds each (English, guided):

* ``reset_ms``: ``env.reset`` (in the network model: the world built and calibrated, the decoy
  tried, the alarms raised);
* ``episode_ms``: a whole gold-path episode of the oracle (reset included), as an evaluation
  or a rollout runs it;
* ``read_ms``: one ``oss_query`` of the reported cell after reset (the model's results are kept
  per configuration, so a read re-runs nothing);
* ``change_ms``: the gold change (``optimize_cell`` with the fix, where the intent has one), a
  model run at the new configuration and the re-measurement;
* ``repeat_reset_ms``: ``env.reset`` of the same seed again, as a GRPO group or an evaluation's
  repeats do (the network model then reuses the calibrated world and its model runs).

Every other figure is of new episodes: the network model's cache of recent worlds is emptied
before each (versions without one have nothing to empty).

Figures are the medians over rounds of each round's median (ms), and the ratio network model /
blueprint model. ``--json``: one flat JSON object as the last line (for ``benchmarks/compare.py``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import telcoenv
from telcoenv.agents import OracleAgent, run_episode
from telcoenv.domains.network import NetworkDomain
from telcoenv.domains.network import model as network_model
from telcoenv.domains.network.loading import network_catalog

MODELS = ("blueprint", "physical")


def _envs(model: str) -> list:
    return [
        telcoenv.make(i.env_name, domain=NetworkDomain(model=model), embedder=None, privileged=True)
        for i in network_catalog().intents
    ]


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0


def _forget() -> None:
    """Empty the network model's cache of recent worlds, where the version measured has one."""
    cache = getattr(network_model, "built_world", None)
    if cache is not None:
        cache.worlds.clear()


def one_round(envs: list, seeds: range) -> dict[str, float]:
    resets, reads, changes, episodes, repeats = [], [], [], [], []
    for env in envs:
        for seed in seeds:
            _forget()
            start = time.perf_counter()
            env.reset(seed=seed)
            resets.append(_ms(start))
            setup = env.unwrapped._episode.setup
            cell = setup.state.serving_id
            start = time.perf_counter()
            env.step({"name": "oss_query", "arguments": {"cell_id": cell, "window": "1h"}})
            reads.append(_ms(start))
            fix = {k: v for k, v in setup.gold_values["fix"].items() if k != "pci"}
            if fix and "admission_threshold_pct" not in fix and "priority_level" not in fix:
                call = {"name": "optimize_cell", "arguments": {"cell_id": cell, "changes": fix}}
                start = time.perf_counter()
                env.step(call)
                changes.append(_ms(start))
            start = time.perf_counter()
            env.reset(seed=seed)
            repeats.append(_ms(start))
            _forget()
            start = time.perf_counter()
            run_episode(env, OracleAgent(), seed=seed)
            episodes.append(_ms(start))
    return {
        "reset_ms": statistics.median(resets),
        "episode_ms": statistics.median(episodes),
        "read_ms": statistics.median(reads),
        "change_ms": statistics.median(changes),
        "repeat_reset_ms": statistics.median(repeats),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--json", action="store_true", help="only the figures, as JSON")
    args = parser.parse_args()
    envs = {model: _envs(model) for model in MODELS}
    for model in MODELS:  # warm: the catalog, the embedder-free scorers, numpy's first calls
        one_round(envs[model], range(1000, 1001))
    rounds: dict[str, list[dict[str, float]]] = {model: [] for model in MODELS}
    for _ in range(args.rounds):
        for model in MODELS:
            rounds[model].append(one_round(envs[model], range(args.seeds)))
    figures: dict[str, float] = {}
    for model in MODELS:
        for name in rounds[model][0]:
            figures[f"{model}_{name}"] = round(statistics.median(r[name] for r in rounds[model]), 3)
    for name in rounds["blueprint"][0]:
        ratio = figures[f"physical_{name}"] / figures[f"blueprint_{name}"]
        figures[f"ratio_{name}"] = round(ratio, 2)
    if not args.json:
        for name in rounds["blueprint"][0]:
            print(
                f"{name:12} blueprint {figures[f'blueprint_{name}']:8.2f}  "
                f"network model {figures[f'physical_{name}']:8.2f}  "
                f"ratio {figures[f'ratio_{name}']:.1f}"
            )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
