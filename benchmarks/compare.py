"""Any benchmark of this checkout against an earlier commit, measured alternately.

    python benchmarks/compare.py 11386ab --rounds 5 -- benchmarks/bench_bss.py --json

The earlier commit is checked out in a temporary git worktree. Each round runs the given
benchmark script (always this checkout's script, so that both libraries are measured by the
same code) in a fresh process, first with the earlier commit's ``telcoenv`` on ``PYTHONPATH``,
then with this checkout's, so that both see the same machine load. The script must print a JSON
object of figures as its last line of output (``--json`` in the scripts here). Prints, per
figure, the median of each side and the ratio now / before (below 1: now is smaller, which is
better for times and memory, worse for rates), and the lowest and highest of the rounds' own
ratios (each round's two runs saw about the same load, so their spread is the noise's).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def measure(checkout: Path, command: list[str]) -> dict[str, float]:
    """One fresh run of ``command`` importing ``telcoenv`` from ``checkout``; its figures.

    It runs in a neutral folder: the working directory comes first on ``sys.path`` of any
    ``python -c`` the benchmark starts, and this checkout's would shadow ``PYTHONPATH``.
    """
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    script, *arguments = command
    with tempfile.TemporaryDirectory() as neutral:
        done = subprocess.run(
            [sys.executable, str(ROOT / script), *arguments],
            cwd=neutral,
            env=env,
            capture_output=True,
            text=True,
        )
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed against {checkout}:\n{done.stderr[-2000:]}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    return {k: float(v) for k, v in figures.items() if isinstance(v, int | float)}


def compare(ref: str, command: list[str], rounds: int) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        earlier = Path(tmp) / "earlier"
        subprocess.run(
            ["git", "worktree", "add", "--detach", "-q", str(earlier), ref], cwd=ROOT, check=True
        )
        # Both sides import compiled bytecode: with PYTHONDONTWRITEBYTECODE set, the fresh
        # worktree would otherwise compile every module from source in every process (about
        # 0.1 s more for a first make + reset), and this checkout's cache may be stale.
        for checkout in (earlier, ROOT):
            subprocess.run(
                [sys.executable, "-m", "compileall", "-q", str(checkout / "telcoenv")], check=True
            )
        try:
            before: list[dict[str, float]] = []
            now: list[dict[str, float]] = []
            for _ in range(rounds):
                before.append(measure(earlier, command))
                now.append(measure(ROOT, command))
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(earlier)], cwd=ROOT, check=True
            )
    result = {}
    for name in now[0]:
        if not all(name in figures for figures in before):
            continue
        old = statistics.median(figures[name] for figures in before)
        new = statistics.median(figures[name] for figures in now)
        # Each round's two runs saw about the same load: their ratios show the spread.
        paired = [
            round(n[name] / b[name], 3) if b[name] else float("nan")
            for b, n in zip(before, now, strict=True)
        ]
        result[name] = {
            "before": round(old, 4),
            "now": round(new, 4),
            "ratio": round(new / old, 3) if old else float("nan"),
            "round_ratios": paired,
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ref", help="the earlier commit")
    parser.add_argument("--rounds", type=int, default=3)
    argv = sys.argv[1:]
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        parser.error("give the benchmark to run after --: compare.py REF -- script.py [args]")
    split = argv.index("--")
    args = parser.parse_args(argv[:split])
    command = argv[split + 1 :]
    result = compare(args.ref, command, args.rounds)
    width = max(len(name) for name in result) if result else 10
    print(
        f"{'figure':<{width}}  {'before':>10}  {'now':>10}  {'ratio':>6}  "
        f"round ratios, lowest-highest ({args.rounds} rounds, medians)"
    )
    for name, row in result.items():
        spread = [r for r in row["round_ratios"] if r == r]  # NaN: a figure of 0 before
        low_high = f"{min(spread)}-{max(spread)}" if spread else "nan"
        print(
            f"{name:<{width}}  {row['before']:>10}  {row['now']:>10}  {row['ratio']:>6}  {low_high}"
        )
    print(json.dumps({"ref": args.ref, "rounds": args.rounds, "figures": result}))


if __name__ == "__main__":
    main()
