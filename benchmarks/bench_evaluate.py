"""The full oracle grid: 49 blueprints x 30 samples x 2 languages (with-list condition), into a
fresh SQLite store, with IRA and RA by the default multilingual embedder and without an embedder.

Reports, per worker count and embedder, wall time, episodes per second, the share of time
spent writing to the database and the CPU time of the evaluating process and of its children
(workers, scoring process; steadier than wall time on a shared machine); with both embedders,
the ratio of the grid's time with the embedder to its time without. Every grid runs in a fresh
process (the model loaded there).
Run: ``.venv/bin/python benchmarks/bench_evaluate.py [--samples 30] [--workers 1,2]
[--embedder none,multilingual] [--json]`` (``--json``: all figures as one flat JSON object on
the last line, for ``benchmarks/compare.py``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = """
import json, resource, sys
from telcoenv.evaluation.runner import RunConfig, build_grid, evaluate
from telcoenv.evaluation.store import ResultStore
url, samples, workers, embedder = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
grid = build_grid("all", samples=samples, languages=("en", "ar"), conditions=(True,))
config = RunConfig("oracle", {}, embedder=None if embedder == "none" else embedder)
def cpu(who):
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime
runner, children = cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN)
summary = evaluate(ResultStore(url), "oracle", grid, config, workers=workers)
print(json.dumps({"episodes": summary.stored, "failed": summary.failed,
                  "seconds": round(summary.seconds, 2),
                  "episodes_per_second": round(summary.stored / summary.seconds, 1),
                  "db_share": round(summary.db_seconds / summary.seconds, 3),
                  "runner_cpu_s": round(cpu(resource.RUSAGE_SELF) - runner, 2),
                  "children_cpu_s": round(cpu(resource.RUSAGE_CHILDREN) - children, 2)}))
"""


def run_grid(samples: int, workers: int, embedder: str) -> dict[str, float]:
    """One grid in a fresh process and a fresh store; its figures."""
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{Path(folder) / 'bench.sqlite'}"
        out = subprocess.run(
            [sys.executable, "-c", CHILD, url, str(samples), str(workers), embedder],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--embedder", default="none,multilingual", help="none and/or a name")
    parser.add_argument("--json", action="store_true", help="one flat JSON object at the end")
    args = parser.parse_args()
    embedders = args.embedder.split(",")
    flat: dict[str, float] = {}
    for workers in (int(w) for w in args.workers.split(",")):
        seconds = {}
        for embedder in embedders:
            figures = run_grid(args.samples, workers, embedder)
            seconds[embedder] = figures["seconds"]
            if not args.json:
                print(json.dumps({"workers": workers, "embedder": embedder, **figures}), flush=True)
            flat.update({f"w{workers}.{embedder}.{k}": v for k, v in figures.items()})
        if "none" in seconds and len(seconds) > 1:
            for embedder in (e for e in embedders if e != "none"):
                ratio = round(seconds[embedder] / seconds["none"], 3)
                flat[f"w{workers}.{embedder}.ratio_to_none"] = ratio
    if args.json:
        print(json.dumps(flat))
    else:
        print(json.dumps({k: v for k, v in flat.items() if k.endswith("ratio_to_none")}))


if __name__ == "__main__":
    main()
