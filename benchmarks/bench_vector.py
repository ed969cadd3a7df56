"""Vector environments: steps per second of a synchronous vector env against separate envs.

Run with ``python benchmarks/bench_vector.py``. Both sides run the same 16 episodes streams:
seeded random schema-valid tool calls (``ToolCallSpace.sample``), 20 steps per episode, so
resets, tool calls, error observations and end-of-episode scoring (verification, metrics) are
all included; no embedding model. The vector env autoresets (Gymnasium's next-step mode); the
loop resets each env itself when its episode ends. Reported: the median of 5 repeats of 1,600
env-steps each, and the resident memory per environment of a 64-environment vector.
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import time

import gymnasium

import telcoenv  # noqa: F401  (registers the environments)
from telcoenv.env import TelcoEnv
from telcoenv.spaces import ToolCallSpace

ENV_ID = "telcoenv/Troubleshooting-v0"
NUM_ENVS = 16
STEPS = 100  # vector steps per repeat: 1,600 env-steps
REPEATS = 5


def _actions(count: int, seed: int) -> list[list[dict]]:
    space = ToolCallSpace(TelcoEnv(embedder=None).domain.catalog.tools, seed=seed)
    return [[space.sample() for _ in range(NUM_ENVS)] for _ in range(count)]


def vector_rate(actions: list[list[dict]]) -> float:
    envs = gymnasium.make_vec(ENV_ID, num_envs=NUM_ENVS, vectorization_mode="sync", embedder=None)
    envs.reset(seed=list(range(NUM_ENVS)))
    start = time.perf_counter()
    for batch in actions:
        envs.step(tuple(batch))
    elapsed = time.perf_counter() - start
    envs.close()
    return len(actions) * NUM_ENVS / elapsed


def loop_rate(actions: list[list[dict]]) -> float:
    envs = [gymnasium.make(ENV_ID, embedder=None) for _ in range(NUM_ENVS)]
    for i, env in enumerate(envs):
        env.reset(seed=i)
    start = time.perf_counter()
    for batch in actions:
        for env, action in zip(envs, batch, strict=True):
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                env.reset()
    elapsed = time.perf_counter() - start
    for env in envs:
        env.close()
    return len(actions) * NUM_ENVS / elapsed


def _rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def bytes_per_env_in_vector(count: int = 64) -> float:
    warm = gymnasium.make_vec(ENV_ID, num_envs=2, vectorization_mode="sync", embedder=None)
    warm.reset(seed=[0, 1])
    gc.collect()
    before = _rss()
    envs = gymnasium.make_vec(ENV_ID, num_envs=count, vectorization_mode="sync", embedder=None)
    envs.reset(seed=list(range(count)))
    gc.collect()
    per_env = (_rss() - before) / count
    envs.close()
    warm.close()
    return per_env


def main() -> None:
    actions = _actions(STEPS, seed=0)
    vector_rate(actions[:10])  # warm caches (catalogue, plans, statements)
    vector, loop = [], []
    for _ in range(REPEATS):
        vector.append(vector_rate(actions))
        loop.append(loop_rate(actions))
    result = {
        "num_envs": NUM_ENVS,
        "sync_vector_steps_per_second": round(statistics.median(vector), 1),
        "separate_envs_steps_per_second": round(statistics.median(loop), 1),
        "vector_over_loop": round(statistics.median(vector) / statistics.median(loop), 3),
        "resident_bytes_per_env_in_64_vector": round(bytes_per_env_in_vector()),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
