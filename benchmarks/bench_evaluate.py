"""The full oracle grid: 49 blueprints x 30 samples x 2 languages (with-list condition),
including IRA and RA with the default multilingual embedder, into a fresh SQLite store.

Reports wall time, episodes per second, the share of time spent writing to the database, and
the scaling from 1 to 2 worker processes.
Run: ``.venv/bin/python benchmarks/bench_evaluate.py [--samples 30] [--workers 1,2]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = """
import json, sys
from telcoenv.evaluation.runner import RunConfig, build_grid, evaluate
from telcoenv.evaluation.store import ResultStore
url, samples, workers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
grid = build_grid("all", samples=samples, languages=("en", "ar"), conditions=(True,))
summary = evaluate(ResultStore(url), "oracle", grid, RunConfig("oracle", {}), workers=workers)
print(json.dumps({"episodes": summary.stored, "failed": summary.failed,
                  "seconds": round(summary.seconds, 1),
                  "episodes_per_second": round(summary.stored / summary.seconds, 1),
                  "db_share": round(summary.db_seconds / summary.seconds, 3)}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--workers", default="1,2")
    args = parser.parse_args()
    for workers in args.workers.split(","):
        with tempfile.TemporaryDirectory() as folder:  # a fresh process and store each time
            url = f"sqlite:///{Path(folder) / 'bench.sqlite'}"
            out = subprocess.run(
                [sys.executable, "-c", CHILD, url, str(args.samples), workers],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            print(json.dumps({"workers": int(workers), **json.loads(out)}), flush=True)


if __name__ == "__main__":
    main()
