"""Scoring throughput: IRA + RA over 1,470 finished episodes, against the cost of the embeddings.

1,470 = the paper's 49 blueprints x 30 samples, half of them in Arabic. For each embedder the
script times (a) ``score_episodes`` on the finished traces, (b) encoding the same unique texts
in one batch and (c) ``score_episode`` one trace after the other, as the environment scores at
the end of each episode, each on a fresh embedder instance (the model loaded, the text cache
empty), and reports the median of the repeats, the ratio (a)/(b) and episodes scored per second;
and (d) the seconds to make the embedder and encode a first text in a fresh process, with and
without what the user's cache directory holds (``load_seconds``, ``load_seconds_cold``).

Run: ``.venv/bin/python benchmarks/bench_metrics.py [--repeats 3] [--samples 30]
[--embedders multilingual,...] [--json]`` (``--json``: all figures as one flat JSON object on
the last line, for ``benchmarks/compare.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from telcoenv.agents import OracleAgent, run_episode
from telcoenv.domains.network.loading import network_catalog
from telcoenv.embeddings import e5_embedder, english_embedder, multilingual_embedder
from telcoenv.env import TelcoEnv
from telcoenv.metrics import score_episode, score_episodes
from telcoenv.metrics.scoring import text_pairs

FACTORIES = {"multilingual": multilingual_embedder, "english": english_embedder, "e5": e5_embedder}


def finished_traces(samples_per_blueprint: int = 30) -> list:
    env = TelcoEnv(None, privileged=True, embedder=None)
    agent = OracleAgent()
    traces = []
    for family in network_catalog().blueprints.values():
        for blueprint in family:
            for index in range(samples_per_blueprint):
                lang = "ar" if index % 2 else "en"
                _, info = run_episode(
                    env,
                    agent,
                    options={
                        "blueprint": blueprint.blueprint_id,
                        "sample_index": index,
                        "lang": lang,
                    },
                )
                traces.append(info["trace"])
    return traces


_LOAD = (
    "import sys, time; import telcoenv.embeddings as e; t = time.perf_counter(); "
    "getattr(e, sys.argv[1] + '_embedder')().encode(['load the model']); "
    "print(time.perf_counter() - t)"
)


def load_seconds(name: str, repeats: int, cold: bool = False) -> float:
    """Median seconds of making the embedder and encoding a first text in a fresh process
    (the model loaded; ``cold``: without what the user's cache directory holds)."""
    env = {**os.environ, **({"TELCOENV_NO_CACHE": "1"} if cold else {})}
    command = [sys.executable, "-c", _LOAD, name]
    times = [
        float(subprocess.run(command, capture_output=True, text=True, check=True, env=env).stdout)
        for _ in range(repeats)
    ]
    return statistics.median(times)


def fresh(name: str):
    embedder = FACTORIES[name]()
    embedder.encode(["warm-up: load the model"])  # loading is not what is measured
    return embedder


def measure(name: str, traces: list, repeats: int) -> dict:
    texts = list(
        dict.fromkeys(
            t for trace in traces for pair in text_pairs(trace) for t in pair if t.strip()
        )
    )
    scoring, batch, one_by_one = [], [], []
    for _ in range(repeats):
        embedder = fresh(name)
        start = time.perf_counter()
        score_episodes(traces, embedder)
        scoring.append(time.perf_counter() - start)
        embedder = fresh(name)
        start = time.perf_counter()
        embedder.encode(texts)
        batch.append(time.perf_counter() - start)
        embedder = fresh(name)
        start = time.perf_counter()
        for trace in traces:
            score_episode(trace, embedder)
        one_by_one.append(time.perf_counter() - start)
    score_s, batch_s = statistics.median(scoring), statistics.median(batch)
    single_s = statistics.median(one_by_one)
    return {
        "embedder": embedder.name,
        "episodes": len(traces),
        "unique_texts": len(texts),
        "score_seconds": round(score_s, 2),
        "embed_batch_seconds": round(batch_s, 2),
        "ratio": round(score_s / batch_s, 3),
        "episodes_per_second": round(len(traces) / score_s, 1),
        "score_one_by_one_seconds": round(single_s, 2),
        "one_by_one_ms_per_episode": round(1000 * single_s / len(traces), 2),
        "load_seconds": round(load_seconds(name, repeats), 3),
        "load_seconds_cold": round(load_seconds(name, repeats, cold=True), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--samples", type=int, default=30, help="samples per blueprint")
    parser.add_argument("--embedders", default="multilingual,english,e5")
    parser.add_argument("--json", action="store_true", help="one flat JSON object at the end")
    args = parser.parse_args()
    traces = finished_traces(args.samples)
    flat = {}
    for name in args.embedders.split(","):
        figures = measure(name, traces, args.repeats)
        if not args.json:
            print(json.dumps(figures), flush=True)
        flat.update({f"{name}.{k}": v for k, v in figures.items() if k != "embedder"})
    if args.json:
        print(json.dumps(flat))


if __name__ == "__main__":
    main()
