"""Core performance figures: gold-path episodes per second, import time, memory per env.

Run with ``make bench`` (or ``python benchmarks/bench_core.py``). No embedding model is involved.
Each figure is the median of several repeats; machines are shared, so compare ratios.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

REPEATS = 5
EPISODES = 400


def episodes_per_second() -> float:
    import telcoenv
    from telcoenv.agents import OracleAgent, run_episode

    # No checker wrappers, and no embedding model: this measures the simulator alone.
    env = telcoenv.make("troubleshooting", privileged=True, embedder=None).unwrapped
    agent = OracleAgent()
    run_episode(env, agent, seed=0)  # warm caches (catalogue, plans)
    rates = []
    for repeat in range(REPEATS):
        start = time.perf_counter()
        # Gymnasium's pattern: seed the first reset, let later resets continue the generator.
        run_episode(env, agent, seed=repeat)
        for _ in range(EPISODES - 1):
            run_episode(env, agent)
        rates.append(EPISODES / (time.perf_counter() - start))
    return statistics.median(rates)


def reset_and_tool_latency(episodes: int = 300) -> dict[str, float]:
    """Median milliseconds of a reset (sampling + network database load) and of a tool call.

    Tool calls are the oracle's (reads, writes with the KPI recomputation, tickets) plus one
    call of every other tool per episode, timed one by one around ``env.step``.
    """
    import telcoenv
    from telcoenv.agents import OracleAgent

    env = telcoenv.make("troubleshooting", privileged=True, embedder=None).unwrapped
    agent = OracleAgent()
    resets: list[float] = []
    calls: dict[str, list[float]] = {}
    env.reset(seed=0)
    for episode in range(episodes):
        start = time.perf_counter()
        observation, info = env.reset(seed=episode)
        resets.append(time.perf_counter() - start)
        cell = info["privileged"]["gold_chain"][0]["arguments"].get("cell_id")
        cluster = env.episode.setup.state.cluster_id
        extra = [
            {"name": "neighbor_audit", "arguments": {"cell_id": cell}},
            {"name": "coverage_map", "arguments": {"area": cluster, "resolution": "100m"}},
            {"name": "recommend_param_change", "arguments": {"cell_id": cell}},
        ]
        for action in extra if cell else []:
            start = time.perf_counter()
            env.step(action)
            calls.setdefault(action["name"], []).append(time.perf_counter() - start)
        agent.reset(observation, info)
        while True:
            action = agent.act(observation, info)
            if action["name"] == "submit_resolution":
                break
            start = time.perf_counter()
            observation, _, _, _, info = env.step(action)
            calls.setdefault(action["name"], []).append(time.perf_counter() - start)
    every = [t for times in calls.values() for t in times]
    return {
        "reset_ms_median": round(1000 * statistics.median(resets), 3),
        "tool_call_ms_median": round(1000 * statistics.median(every), 3),
        **{
            f"tool_ms_median.{name}": round(1000 * statistics.median(times), 3)
            for name, times in sorted(calls.items())
        },
    }


_STARTUP = (
    "import time, sys; t = time.perf_counter(); import telcoenv; "
    "i = time.perf_counter(); env = telcoenv.make(sys.argv[1]); env.reset(seed=0); "
    "print(i - t, time.perf_counter() - i, 'torch' in sys.modules)"
)


def startup_seconds(name: str = "beam_misalignment", cold: bool = False) -> dict[str, float]:
    """Median seconds of ``import telcoenv`` and of the first ``make`` + ``reset``, each in a
    fresh process (``cold``: without the catalogue cache of the user's cache directory)."""
    env = {**os.environ, **({"TELCOENV_NO_CACHE": "1"} if cold else {})}
    imports, firsts = [], []
    for _ in range(REPEATS):
        out = subprocess.run(
            [sys.executable, "-c", _STARTUP, name],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        ).stdout.split()
        if out[2] == "True":
            raise SystemExit("import telcoenv or a make imported torch")
        imports.append(float(out[0]))
        firsts.append(float(out[1]))
    tag = f"{name}{'_cold' if cold else ''}"
    return {
        "import_seconds": round(statistics.median(imports), 3),
        f"first_make_reset_seconds.{tag}": round(statistics.median(firsts), 3),
    }


def _rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def bytes_per_extra_env(
    count: int = 50, make: Callable[[], Any] | None = None, tag: str = ""
) -> dict[str, float]:
    """Memory of one more environment after a reset: Python objects (tracemalloc) and the
    process's resident memory, which also counts the SQLite database (tracemalloc does not).
    ``make``: builds one environment (default: the network's ``beam_misalignment``); ``tag``
    ends the figures' names."""
    from telcoenv.env import TelcoEnv

    make = make or (lambda: TelcoEnv("beam_misalignment"))
    first = make()  # loads the shared catalogue and domain
    first.reset(seed=0)
    gc.collect()
    rss = _rss_bytes()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    envs = [make() for _ in range(count)]
    for i, env in enumerate(envs):
        env.reset(seed=i)
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    # Resident memory is measured in a second batch without tracemalloc's own overhead.
    more = [make() for _ in range(count)]
    for i, env in enumerate(more):
        env.reset(seed=i)
    gc.collect()
    resident = (_rss_bytes() - rss) / (2 * count)
    return {
        f"python_bytes_per_extra_env{tag}": round(grown / count),
        f"resident_bytes_per_extra_env{tag}": round(resident),
    }


MEASURES = {
    "rate": lambda: {"gold_path_episodes_per_second": round(episodes_per_second(), 1)},
    "latency": reset_and_tool_latency,
    "startup": lambda: {
        **startup_seconds(),
        **startup_seconds("contact_update"),
        **startup_seconds(cold=True),
    },
    "memory": bytes_per_extra_env,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(MEASURES), help="comma-separated measures")
    parser.add_argument("--json", action="store_true", help="figures as one JSON line")
    args = parser.parse_args()
    results: dict[str, float] = {}
    for name in args.only.split(","):
        results.update(MEASURES[name]())
    print(json.dumps(results) if args.json else json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
