"""Cost growth: per-episode and per-step cost against tool calls per episode and against
environments per process. Run: ``python benchmarks/bench_growth.py [--json]``.

* Tool calls per episode (1, 5, 20, 100): a network episode (``beam_misalignment``, no
  embedder) makes N calls cycling through read and write tools on its own cells, then submits.
  Reported: the median cost of an episode, of one of its steps, and, in the 100-call episode,
  of the first ten steps against the last ten (a step must not get slower as the episode grows:
  the trace, the database and the history grow with it).
* Environments per process (1, 16, 256): M environments reset once, then episodes are played
  round-robin across them (each episode on the next environment): the median cost of an
  episode. With one database shared by the process's environments, a crowded process must not
  make an episode dearer.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from telcoenv.env import TelcoEnv

CALLS = (1, 5, 20, 100)
ENVS = (1, 16, 256)
EPISODES = 60


def _calls(state: Any, count: int) -> list[dict[str, Any]]:
    """``count`` tool calls on the episode's own objects: reads, then now and then a write."""
    cell, neighbour = state.serving_id, state.cell_ids[-1]
    cycle = [
        {"name": "oss_query", "arguments": {"cell_id": cell, "window": "1h"}},
        {
            "name": "kpi_timeseries",
            "arguments": {"cell_id": neighbour, "kpi": "PRB", "window": "24h"},
        },
        {"name": "coverage_map", "arguments": {"area": state.cluster_id, "resolution": "100m"}},
        {"name": "neighbor_audit", "arguments": {"cell_id": cell}},
        {"name": "optimize_cell", "arguments": {"cell_id": neighbour, "changes": {"tilt_deg": 5}}},
    ]
    return [cycle[i % len(cycle)] for i in range(count)]


_SUBMIT = {
    "name": "submit_resolution",
    "arguments": {"intent": "beam misalignment", "summary": "re-aligned the beam"},
}


def _episode(env: TelcoEnv, seed: int, count: int) -> list[float]:
    """Play one episode of ``count`` calls; the seconds of each step (the submit last)."""
    env.reset(seed=seed)
    steps = []
    for action in [*_calls(env.episode.setup.state, count), _SUBMIT]:
        start = time.perf_counter()
        env.step(action)
        steps.append(time.perf_counter() - start)
    return steps


def _ms(values: list[float]) -> float:
    return round(1000 * statistics.median(values), 4)


def by_calls() -> dict[str, float]:
    env = TelcoEnv("beam_misalignment", embedder=None, max_steps=max(CALLS) + 5)
    _episode(env, 0, 5)  # warm caches
    results: dict[str, float] = {}
    for count in CALLS:
        episodes, steps, first, last = [], [], [], []
        for seed in range(EPISODES):
            start = time.perf_counter()
            timed = _episode(env, seed, count)
            episodes.append(time.perf_counter() - start)
            steps.extend(timed[:-1])
            first.extend(timed[:10])
            last.extend(timed[-11:-1])
        results[f"episode_ms.calls_{count}"] = _ms(episodes)
        results[f"step_ms.calls_{count}"] = _ms(steps)
        if count >= 20:
            results[f"step_ms.calls_{count}.first_10"] = _ms(first)
            results[f"step_ms.calls_{count}.last_10"] = _ms(last)
    return results


def by_envs() -> dict[str, float]:
    results: dict[str, float] = {}
    for count in ENVS:
        envs = [TelcoEnv("beam_misalignment", embedder=None) for _ in range(count)]
        for index, env in enumerate(envs):
            env.reset(seed=index)
        episodes = []
        for index in range(max(EPISODES * 2, count)):
            start = time.perf_counter()
            _episode(envs[index % count], index, 5)
            episodes.append(time.perf_counter() - start)
        results[f"episode_ms.envs_{count}"] = _ms(episodes)
        for env in envs:
            env.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="figures as one JSON line")
    args = parser.parse_args()
    results = {**by_calls(), **by_envs()}
    print(json.dumps(results) if args.json else json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
