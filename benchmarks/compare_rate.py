"""Gold-path episode rate of this checkout against an earlier commit, measured alternately.

    python benchmarks/compare_rate.py d30c27b [--rounds 3]

The earlier commit is checked out in a temporary git worktree and imported from there with this
virtualenv's packages. Each round runs ``bench_core.episodes_per_second`` (median of 5 repeats
of 400 oracle episodes, no embedder) in a fresh process, first for the earlier commit, then for
this checkout, so that both see the same machine load. Prints the median rate of each and the
ratio. Used for the figure "oracle rate with the network database versus before it".
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RATE = (
    "import sys; sys.path.insert(0, 'benchmarks'); import telcoenv, bench_core; "
    "assert telcoenv.__file__.startswith(sys.argv[1]), telcoenv.__file__; "
    "{patch}print(bench_core.episodes_per_second())"
)
# The same gold chain as before the closed loop: no re-measurement after the fix.
NO_REMEASURE = (
    "from telcoenv.agents import oracle; "
    "oracle.OracleAgent._remeasurement = staticmethod(lambda plan: []); "
)


def rate(checkout: Path, patch: str = "") -> float:
    done = subprocess.run(
        [sys.executable, "-c", RATE.format(patch=patch), str(checkout)],
        cwd=checkout,
        env={"PYTHONPATH": str(checkout), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    return float(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ref", help="the earlier commit (e.g. the one before an issue)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--same-chain",
        action="store_true",
        help="run this checkout's oracle without its re-measurement after the fix",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        earlier = Path(tmp) / "earlier"
        subprocess.run(
            ["git", "worktree", "add", "--detach", "-q", str(earlier), args.ref],
            cwd=ROOT,
            check=True,
        )
        try:
            before, now = [], []
            for _ in range(args.rounds):
                before.append(rate(earlier))
                now.append(rate(ROOT, NO_REMEASURE if args.same_chain else ""))
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(earlier)], cwd=ROOT, check=True
            )
    result = {
        "ref": args.ref,
        "same_chain": args.same_chain,
        "earlier_episodes_per_second": [round(r, 1) for r in before],
        "now_episodes_per_second": [round(r, 1) for r in now],
        "median_ratio": round(statistics.median(now) / statistics.median(before), 3),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
