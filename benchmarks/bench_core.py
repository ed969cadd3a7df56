"""Core performance figures: gold-path episodes per second, import time, memory per env.

Run with ``make bench`` (or ``python benchmarks/bench_core.py``). No embedding model is involved.
Each figure is the median of several repeats; machines are shared, so compare ratios.
"""

from __future__ import annotations

import gc
import json
import statistics
import subprocess
import sys
import time
import tracemalloc

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


def import_seconds() -> float:
    code = (
        "import time, sys; t = time.perf_counter(); import telcoenv; "
        "print(time.perf_counter() - t, 'torch' in sys.modules)"
    )
    times, torch = [], False
    for _ in range(REPEATS):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout.split()
        times.append(float(out[0]))
        torch = torch or out[1] == "True"
    if torch:
        raise SystemExit("import telcoenv imported torch")
    return statistics.median(times)


def bytes_per_extra_env(count: int = 50) -> float:
    from telcoenv.env import TelcoEnv

    first = TelcoEnv("beam_misalignment")  # loads the shared catalogue and domain
    first.reset(seed=0)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    envs = [TelcoEnv("beam_misalignment") for _ in range(count)]
    for i, env in enumerate(envs):
        env.reset(seed=i)
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    return grown / count


def main() -> None:
    results = {
        "gold_path_episodes_per_second": round(episodes_per_second(), 1),
        "import_seconds": round(import_seconds(), 3),
        "bytes_per_extra_env_after_reset": round(bytes_per_extra_env()),
    }
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
