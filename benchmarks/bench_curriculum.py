"""A real small model on every rung of the curriculum: how often it resolves an episode there.

Not a CI test (tens of seconds per episode on 2 cores). Plays the served model (by default
Qwen2.5-Coder-1.5B-Instruct, Q4_K_M, through xllamacpp: see ``bench_local_llm.py`` for the
model's PyPI packages and the server) with telcoenv's ``openai`` agent on each rung of
``telcoenv.curriculum.ladder`` over a fixed grid of train-split episodes: the same intents,
seeds and languages on every rung, so the rung is the only difference. Writes one JSON line per
episode (resumable: episodes already in the file are not played again) and a summary table
per domain and rung: resolved, submitted, SAS, valid actions, steps, seconds.

    python benchmarks/bench_curriculum.py --gguf qwen2.5-coder-1.5b-instruct-q4_k_m.gguf \\
        --server-python llm/bin/python --out bench-curriculum/

The issue's target: the lowest rung at 10-60 % resolved, so that a GRPO group of the model's
rollouts has rewards that differ.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_local_llm import Recorder, add_server_arguments, server_url

import telcoenv
from telcoenv.agents import load_agent, run_episode
from telcoenv.curriculum import ladder
from telcoenv.domains import get_domain

#: Per domain, the intents played (two languages each): a spread of families and chain lengths.
GRID = {
    "network": [
        "beam_misalignment",
        "pci_collision",
        "degraded_backhaul",
        "load_balancing_needed",
        "pingpong_handovers",
        "coverage_hole",
    ],
    "bss": [
        "contact_update",
        "bill_shock",
        "roaming_pack",
        "payment_failure",
        "data_topup",
        "addon_cancellation",
    ],
}


def play(
    domain: str, intent: str, lang: str, rung: Any, seed: int, args: Any, recorder: Recorder
) -> dict[str, Any]:
    env = telcoenv.make(
        intent, embedder=None, split=args.split, tool_format=args.tool_format, lang=lang
    )
    agent = load_agent(
        "openai", model="local", base_url=recorder.base_url, max_tokens=args.max_tokens
    )
    started = time.perf_counter()
    error = None
    try:
        _, info = run_episode(env, agent, seed=seed, options={**rung.options, "lang": lang})
        trace = info["trace"]
    except Exception as exc:  # a server failure is a result of the run, not a crash of it
        error, trace, info = f"{type(exc).__name__}: {exc}", env.unwrapped.episode.trace, {}
    exchanges = recorder.take()
    actions = trace.actions
    row = {
        "domain": domain,
        "rung": rung.name,
        "intent": intent,
        "lang": lang,
        "seed": seed,
        "split": args.split,
        "error": error,
        "resolved": bool(info.get("resolved")),
        "submitted": trace.submission is not None,
        "sas": (info.get("metrics") or {}).get("sas", 0.0),
        "steps": len(actions),
        "valid_share": sum(a.valid for a in actions) / len(actions) if actions else 0.0,
        "chain": [a.tool for a in actions if a.tool],
        "seconds": round(time.perf_counter() - started, 1),
        "requests": len(exchanges),
    }
    env.close()
    if args.record:
        row["exchanges"] = exchanges
    return row


def summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    table = []
    for domain in GRID:
        for rung in ladder(domain):
            picked = [r for r in rows if r["domain"] == domain and r["rung"] == rung.name]
            if not picked:
                continue
            table.append(
                {
                    "domain": domain,
                    "rung": rung.name,
                    "episodes": len(picked),
                    **{
                        key: round(statistics.fmean(float(r[key]) for r in picked), 3)
                        for key in ("resolved", "submitted", "sas", "valid_share", "steps")
                    },
                    "seconds": round(statistics.median(r["seconds"] for r in picked), 1),
                }
            )
    return table


def intents(domain: str, args: Any) -> list[str]:
    if args.only is None:
        return GRID[domain][: args.intents]
    keys = get_domain(domain).catalog.blueprints
    return [i for i in args.only.split(",") if i.upper() in keys]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_server_arguments(parser, 8766)
    parser.add_argument("--domain", choices=[*GRID, "all"], default="all")
    parser.add_argument("--rungs", default=None, help="comma-separated rung names (default all)")
    parser.add_argument("--seeds", type=int, default=1, help="episodes per intent and language")
    parser.add_argument("--intents", type=int, default=6, help="the first N intents of a grid")
    parser.add_argument("--only", default=None, help="comma-separated intents (instead of a grid)")
    parser.add_argument("--split", default="train", choices=["train", "test"])
    parser.add_argument("--tool-format", default="compact", choices=["full", "compact"])
    parser.add_argument("--record", action="store_true", help="keep every exchange")
    parser.add_argument("--max-tokens", type=int, default=512, help="per model reply")
    parser.add_argument("--out", type=Path, default=Path("bench-curriculum"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows_path = args.out / "episodes.jsonl"
    rows = [json.loads(line) for line in rows_path.open()] if rows_path.exists() else []
    done = {(r["domain"], r["rung"], r["intent"], r["lang"], r["seed"]) for r in rows}
    wanted = None if args.rungs is None else set(args.rungs.split(","))
    domains = list(GRID) if args.domain == "all" else [args.domain]
    with contextlib.ExitStack() as stack:
        recorder = Recorder(server_url(args, stack))
        for domain in domains:
            for rung in ladder(domain):
                if wanted is not None and rung.name not in wanted:
                    continue
                for seed in range(args.seeds):
                    for intent in intents(domain, args):
                        for lang in ("en", "ar"):
                            if (domain, rung.name, intent, lang, seed) in done:
                                continue
                            row = play(domain, intent, lang, rung, seed, args, recorder)
                            rows.append(row)
                            with rows_path.open("a", encoding="utf-8") as out:
                                out.write(json.dumps(row, ensure_ascii=False) + "\n")
                            shown = {k: v for k, v in row.items() if k != "exchanges"}
                            print(json.dumps(shown, ensure_ascii=False), flush=True)
    table = summary(rows)
    (args.out / "summary.json").write_text(json.dumps(table, indent=2))
    for line in table:
        print(json.dumps(line))


if __name__ == "__main__":
    main()
