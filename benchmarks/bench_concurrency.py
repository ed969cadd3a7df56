"""Many agents in flight: ``evaluate`` of the OpenAI agent against a stub chat-completions server
on loopback that answers every request 200 ms late, one episode at a time (``sequential``) and
64 at once (``concurrent``: ``--concurrency 64``, or e.g. ``--workers 2 --concurrency 32``).

The grid is beam_misalignment x 16 samples x EN/AR (64 episodes); the stub's ``thorough`` model
reads the cell three times, then submits (4 requests an episode where the statement names the
cell). The server runs in this process (keep-alive, a thread per connection); each run is a
fresh process with a fresh SQLite store, no embedder. Reports the wall time of each run as
``evaluate`` reports it, the speed-up and whether the stored records are the same but for
their timing (``identical``: 1). Run: ``.venv/bin/python benchmarks/bench_concurrency.py
[--samples 16] [--concurrency 64] [--workers 1] [--latency 0.2] [--json]`` (``--json``: the
figures as one flat JSON object on the last line).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from telcoenv.evaluation.store import ResultStore

ROOT = Path(__file__).resolve().parent.parent

CHILD = """
import json, sys
from telcoenv.evaluation.runner import RunConfig, build_grid, evaluate
from telcoenv.evaluation.store import ResultStore
url, run, base_url, samples, concurrency, workers = sys.argv[1:7]
grid = build_grid(["beam_misalignment"], samples=int(samples), languages=("en", "ar"))
options = {"model": "thorough", "base_url": base_url, "timeout": 60.0}
config = RunConfig("openai", options, embedder=None)
summary = evaluate(
    ResultStore(url), run, grid, config, concurrency=int(concurrency), workers=int(workers)
)
print(json.dumps({"episodes": summary.stored, "failed": summary.failed,
                  "seconds": round(summary.seconds, 3)}))
"""
TIMING = ("duration_s", "finished_at")


def run_grid(url: str, run: str, base_url: str, samples: int, concurrency: int, workers: int):
    """One run in a fresh process; its figures."""
    argv = [url, run, base_url, str(samples), str(concurrency), str(workers)]
    out = subprocess.run(
        [sys.executable, "-c", CHILD, *argv], capture_output=True, text=True, check=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def _untimed(record: dict[str, Any]) -> dict[str, Any]:
    kept = {k: v for k, v in record.items() if k not in (*TIMING, "run")}
    kept["agent_usage"] = {k: v for k, v in record["agent_usage"].items() if k != "seconds"}
    return kept


def identical(store: ResultStore, runs: list[str]) -> bool:
    """Whether the runs stored the same records, but for their timing."""
    stored = [
        sorted((_untimed(r) for r in store.records([run], with_trace=True)), key=str)
        for run in runs
    ]
    return all(records == stored[0] for records in stored)


def _stub_server(latency: float) -> Any:
    """The stub server of the tests, loaded from its file (``tests`` is not a package here)."""
    spec = importlib.util.spec_from_file_location("stub_openai", ROOT / "tests" / "stub_openai.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.StubServer(latency=latency)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per reply")
    parser.add_argument("--json", action="store_true", help="one flat JSON object at the end")
    args = parser.parse_args()
    server = _stub_server(latency=args.latency)
    flat: dict[str, float] = {}
    try:
        with tempfile.TemporaryDirectory() as folder:
            url = f"sqlite:///{Path(folder) / 'bench.sqlite'}"
            runs = {"sequential": (1, 1), "concurrent": (args.concurrency, args.workers)}
            for run, (concurrency, workers) in runs.items():
                figures = run_grid(url, run, server.base_url, args.samples, concurrency, workers)
                if not args.json:
                    print(json.dumps({"run": run, **figures}), flush=True)
                flat.update({f"{run}.{k}": v for k, v in figures.items()})
            flat["identical"] = int(identical(ResultStore(url), list(runs)))
    finally:
        server.close()
    flat["speedup"] = round(flat["sequential.seconds"] / flat["concurrent.seconds"], 1)
    print(json.dumps(flat))


if __name__ == "__main__":
    main()
