"""The honest customer-care baseline's rates, as docs/customer_care.md prints them.

``care_investigator`` (no privileged information) plays ``customer_care`` over seeds per tier
and language, then each intent alone, and prints the resolved and diagnosed rates, the account
takeover attempts among them (refused and resolved), the resolved rate with approvals required,
and the resolved rate at small budgets (``max_steps``, approvals included).

    python benchmarks/check_care_baseline.py --seeds 500 --alone 100
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

import telcoenv
from telcoenv.agents import CareInvestigatorAgent, run_episode
from telcoenv.domains.bss import bss_domain

TIERS = ("guided", "symptom")
LANGS = ("en", "ar")


def _diagnosed(info: dict, lang: str) -> bool:
    submission = info["trace"].submission
    label = bss_domain().catalog.intent(info["trace"].intent).label.in_lang(lang)
    return submission is not None and submission.intent == label


def _play(env_name: str, seeds: range, tier: str, lang: str, **options) -> dict[str, list[int]]:
    """Per intent: [episodes, resolved, diagnosed, impostors, impostors resolved]."""
    env = telcoenv.make(
        env_name, embedder=None, privileged=False, difficulty=tier, lang=lang, **options
    )
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    for seed in seeds:
        agent = CareInvestigatorAgent(max_steps=options.get("max_steps", 20))
        _, info = run_episode(env, agent, seed=seed)
        trace = info["trace"]
        row = counts[trace.intent.lower()]
        impostor = trace.start_state["caller"] == "impostor"
        row[0] += 1
        row[1] += bool(info["resolved"])
        row[2] += _diagnosed(info, lang)
        row[3] += impostor
        row[4] += impostor and bool(info["resolved"])
    env.close()
    return counts


def _rate(rows, column: int) -> str:
    total = sum(row[0] for row in rows)
    return f"{sum(row[column] for row in rows) / total:.2f}" if total else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=500, help="customer_care seeds per cell")
    parser.add_argument("--alone", type=int, default=100, help="seeds per intent, tier, language")
    parser.add_argument("--budgets", default="8,10,12", help="max_steps to try (approvals on)")
    args = parser.parse_args()
    started = time.perf_counter()
    whole: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    print("| tier | language | episodes | resolved | diagnosis |\n|---|---|---|---|---|")
    for tier in TIERS:
        for lang in LANGS:
            counts = _play("customer_care", range(args.seeds), tier, lang)
            rows = list(counts.values())
            print(
                f"| {tier} | {lang} | {sum(r[0] for r in rows)} | {_rate(rows, 1)} | "
                f"{_rate(rows, 2)} |"
            )
            for intent, row in counts.items():
                whole[intent] = [a + b for a, b in zip(whole[intent], row, strict=True)]
    print(
        "\n| intent | episodes | resolved | diagnosis | alone: episodes | resolved | diagnosis "
        "| impostors | refused and resolved |\n|---|---|---|---|---|---|---|---|---|"
    )
    for intent in bss_domain().catalog.intents:
        name = intent.env_name
        alone: list[int] = [0, 0, 0, 0, 0]
        for tier in TIERS:
            for lang in LANGS:
                for row in _play(name, range(args.alone), tier, lang).values():
                    alone = [a + b for a, b in zip(alone, row, strict=True)]
        mine = whole[intent.key.lower()]
        print(
            f"| {name} | {mine[0]} | {_rate([mine], 1)} | {_rate([mine], 2)} | {alone[0]} | "
            f"{_rate([alone], 1)} | {_rate([alone], 2)} | {alone[3]} | {alone[4]} |"
        )
    approved = [
        row
        for tier in TIERS
        for lang in LANGS
        for row in _play(
            "customer_care", range(args.seeds), tier, lang, require_approval=True
        ).values()
    ]
    print(f"with approvals: {sum(r[0] for r in approved)} episodes, resolved {_rate(approved, 1)}")
    for budget in (int(b) for b in args.budgets.split(",")):
        counts = _play(
            "customer_care",
            range(args.seeds),
            "symptom",
            "en",
            max_steps=budget,
            require_approval=True,
        )
        rows = list(counts.values())
        short = sorted(i for i, r in counts.items() if r[1] < r[0])
        print(
            f"max_steps={budget} with approvals (symptom, en): resolved {_rate(rows, 1)}; "
            f"below 1.00: {', '.join(short) or 'none'}"
        )
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
