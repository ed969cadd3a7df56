"""The investigator against the heuristic and the oracle over every network blueprint.

Plays every blueprint x ``--samples`` samples x EN/AR on ``telcoenv.make("troubleshooting",
embedder=None)`` (the oracle on a privileged reset) and prints per agent and language: the exact
intent-label accuracy (the submitted intent equals the gold label in the episode's language or in
English), the verified-resolution rate, the SAS mean and the mean number of steps. For the
investigator it also prints its confusions per intent, the same for its counters-only ablation
(decision rules on KPI counters alone: no configuration, state, policy, PCI plan or alarm), and a
separability table: for every pair of intents, the KPI counter (among those every OSS record of
both reports, blueprint aliases merged) whose best single threshold separates their records most
often; pairs that no single counter separates in 95 % of the episodes are listed with the
counter that comes closest.

Run: ``.venv/bin/python benchmarks/bench_investigator.py [--samples 30] [--lang en,ar]
[--difficulty guided] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import telcoenv
from telcoenv.agents import HeuristicAgent, OracleAgent, run_episode
from telcoenv.agents.investigator import InvestigatorAgent
from telcoenv.domains import get_domain

SEPARABLE = 0.95  # a pair is separable by one counter when a threshold sorts this share right
# Blueprints name some measurements differently (same unit once quoted): one name each here.
ALIASES = {
    "prb_util": "PRB_util",
    "bler": "BLER",
    "rlf_rate": "RLF_rate",
    "ta_p95_m": "ta_p95",
    "ta_std_m": "ta_std",
    "throughput_p50_mbps": "DL_thr_Mbps",
    "p50_thr_mbps": "DL_thr_Mbps",
}


@dataclass(frozen=True)
class Row:
    agent: str
    intent: str
    blueprint: str
    sample: int
    lang: str
    predicted: str  # the intent key of the submitted label ("?" when it is no label)
    exact: bool
    resolved: bool
    sas: float
    steps: int


def play(
    name: str,
    make_agent: Callable[[], Any],
    samples: int,
    languages: list[str],
    difficulty: str,
    privileged: bool = False,
    keep: Callable[[Any, Row], None] | None = None,
) -> list[Row]:
    catalog = get_domain("network").catalog
    by_label = {
        label: intent.key
        for intent in catalog.intents
        for label in (intent.label.en, intent.label.ar)
    }
    env = telcoenv.make("troubleshooting", embedder=None)
    rows = []
    for intent in catalog.intents:
        for blueprint in catalog.blueprints[intent.key]:
            for sample, lang in itertools.product(range(samples), languages):
                options: dict[str, Any] = {
                    "blueprint": blueprint.blueprint_id,
                    "sample_index": sample,
                    "lang": lang,
                    "privileged": privileged,
                }
                if difficulty != "guided":
                    options["difficulty"] = difficulty
                agent = make_agent()
                _, info = run_episode(env, agent, options=options)
                submission = info["trace"].submission
                submitted = submission.intent if submission is not None else ""
                row = Row(
                    agent=name,
                    intent=intent.key,
                    blueprint=blueprint.blueprint_id,
                    sample=sample,
                    lang=lang,
                    predicted=by_label.get(submitted, "?"),
                    exact=submitted in (intent.label.in_lang(lang), intent.label.en),
                    resolved=bool(info["resolved"]),
                    sas=float(info["metrics"]["sas"]),
                    steps=int(info["steps"]),
                )
                rows.append(row)
                if keep is not None:
                    keep(agent, row)
    env.close()
    return rows


def summary(rows: list[Row]) -> dict[str, float]:
    n = len(rows)
    return {
        "episodes": n,
        "intent_accuracy": round(sum(r.exact for r in rows) / n, 3),
        "resolved": round(sum(r.resolved for r in rows) / n, 3),
        "sas": round(sum(r.sas for r in rows) / n, 3),
        "steps": round(sum(r.steps for r in rows) / n, 2),
    }


def confusions(rows: list[Row]) -> dict[str, dict[str, Any]]:
    """Per gold intent: its accuracy and what else was submitted (only intents with errors)."""
    by_intent: dict[str, Counter[str]] = defaultdict(Counter)
    for row in rows:
        by_intent[row.intent][row.predicted] += 1
    found = {}
    for intent, counts in by_intent.items():
        total = sum(counts.values())
        if counts[intent] != total:
            wrong = {k: v for k, v in counts.most_common() if k != intent}
            found[intent] = {"accuracy": round(counts[intent] / total, 3), "submitted": wrong}
    return found


def _best_threshold(a: list[float], b: list[float]) -> float:
    """The best balanced accuracy of one threshold (either direction) between two samples."""
    values = sorted({*a, *b})
    cuts = [(x + y) / 2 for x, y in itertools.pairwise(values)] or values
    best = 0.5
    for cut in cuts:
        below_a = sum(v <= cut for v in a) / len(a)
        below_b = sum(v <= cut for v in b) / len(b)
        best = max(best, (below_a + 1 - below_b) / 2, (below_b + 1 - below_a) / 2)
    return best


def separability(
    records: dict[str, list[dict[str, float]]], families: dict[str, set[str]]
) -> list[dict[str, Any]]:
    """Per pair of intents, the KPI counter reported in every record of both whose best single
    threshold separates them most often (balanced accuracy): over all such counters, and over
    those of the two intents' evidence families only (``families``: intent -> counter names)."""
    pairs = []
    for first, second in itertools.combinations(sorted(records), 2):
        a, b = records[first], records[second]
        shared = set.intersection(*(set(r) for r in a + b))
        own = families[first] | families[second]
        best, best_own = ("", 0.5), ("", 0.5)
        for counter in sorted(shared):
            score = _best_threshold([r[counter] for r in a], [r[counter] for r in b])
            if score > best[1]:
                best = (counter, score)
            if counter in own and score > best_own[1]:
                best_own = (counter, score)
        pairs.append(
            {
                "intents": [first, second],
                "counter": best[0],
                "balanced_accuracy": round(best[1], 3),
                "evidence_counter": best_own[0],
                "evidence_balanced_accuracy": round(best_own[1], 3),
            }
        )
    return pairs


def evidence_counters() -> dict[str, set[str]]:
    """Per intent, the counter names (aliases merged) of its evidence families."""
    from telcoenv.domains.network.kpis import kpi_definitions  # the benchmark reads the domain

    kpis = kpi_definitions().kpis
    found = {}
    for intent in get_domain("network").catalog.intents:
        names = {ALIASES.get(n, n) for n, info in kpis.items() if info.family in intent.evidence}
        found[intent.key] = names | {f"slice {n}" for n in names}
    return found


def _table(title: str, results: dict[str, dict[str, dict[str, float]]]) -> None:
    print(f"\n{title}")
    print(
        f"{'agent':<24}{'lang':<6}{'episodes':>9}{'intent acc':>12}{'resolved':>10}"
        f"{'SAS':>8}{'steps':>8}"
    )
    for agent, by_lang in results.items():
        for lang, s in by_lang.items():
            print(
                f"{agent:<24}{lang:<6}{s['episodes']:>9}{s['intent_accuracy']:>12.3f}"
                f"{s['resolved']:>10.3f}{s['sas']:>8.3f}{s['steps']:>8.2f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--lang", default="en,ar")
    parser.add_argument("--difficulty", default="guided")
    parser.add_argument("--json", help="also write every number to this file")
    args = parser.parse_args()
    languages = args.lang.split(",")

    records: dict[str, list[dict[str, float]]] = defaultdict(list)

    def keep_counters(agent: InvestigatorAgent, row: Row) -> None:
        counters = {}
        for key, value in agent.evidence.items():
            for prefix in ("kpi.", "backhaul.kpi.", "slice.kpi."):
                if key.startswith(prefix) and not key.endswith(".id"):
                    name = key[len(prefix) :]
                    name = ("slice " if prefix == "slice.kpi." else "") + ALIASES.get(name, name)
                    counters.setdefault(name, value)
        records[row.intent].append(counters)

    agents: list[tuple[str, Callable[[], Any], bool, Any]] = [
        ("investigator", InvestigatorAgent, False, keep_counters),
        ("heuristic", HeuristicAgent, False, None),
        ("oracle", OracleAgent, True, None),
        ("investigator (counters)", lambda: InvestigatorAgent(counters_only=True), False, None),
    ]
    rows: dict[str, list[Row]] = {}
    seconds: dict[str, float] = {}
    for name, factory, privileged, keep in agents:
        start = time.perf_counter()
        rows[name] = play(name, factory, args.samples, languages, args.difficulty, privileged, keep)
        seconds[name] = round(time.perf_counter() - start, 1)
    results = {
        name: {
            **{lang: summary([r for r in found if r.lang == lang]) for lang in languages},
            "all": summary(found),
        }
        for name, found in rows.items()
    }
    _table(
        f"{args.samples} samples x {len(languages)} language(s), difficulty {args.difficulty}",
        results,
    )
    print("\nseconds per agent:", seconds)
    report: dict[str, Any] = {"results": results, "seconds": seconds}
    for name in ("investigator", "investigator (counters)"):
        found = confusions(rows[name])
        report[f"confusions: {name}"] = found
        print(f"\nconfusions, {name} (gold intent: accuracy, submitted instead):")
        for intent, entry in found.items() or {"(none)": {}}.items():
            print(f"  {intent}: {entry}")
    pairs = separability(records, evidence_counters())
    report["separability"] = pairs
    for key, title in (
        ("balanced_accuracy", "any counter both report"),
        ("evidence_balanced_accuracy", "counters of the two intents' evidence families"),
    ):
        hard = sorted((p for p in pairs if p[key] < SEPARABLE), key=lambda p: p[key])
        counter = "counter" if key == "balanced_accuracy" else "evidence_counter"
        print(
            f"\nintent pairs that no single KPI threshold separates in {SEPARABLE:.0%} of the "
            f"episodes, {title} ({len(hard)} of {len(pairs)}):"
        )
        for pair in hard:
            first, second = pair["intents"]
            print(f"  {first} / {second}: best {pair[counter] or '-'} {pair[key]:.3f}")
    if args.json:
        report["rows"] = {name: [asdict(r) for r in found] for name, found in rows.items()}
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(report, out, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
