"""Paper-style reports from stored episodes: tables (Markdown, CSV, JSON) and PNG plots.

Each domain says which table its episodes feed (``Domain.report_section``). For each run, over
the benchmark domain's episodes (network operations): IRA in the two conditions (with / without
the intent list) x EN / AR; MSC, EAP and SAS per language; GPC-0, GPC-1, SD and BRS per language
(blueprint groups of the with-list condition, or of the only condition run); RA and the verified
resolution rate per language. Over its customer-care episodes (and, in a table each, over the
episodes of a domain another package adds), per language: MSC, EAP, SAS,
argument accuracy, exact-answer accuracy (over the episodes that ask a question) and the
verified resolution rate. Then per-intent and per-category breakdowns of every metric. Several
runs sit side by side. A failed episode (agent error or timeout) scores 0 on every metric that
applies to its intent and is counted, except the verified resolution, which is that of the
state it reached when it was stored with one; a metric that does not apply (RA in customer
care, the answer of a request without a question) is left out of its mean, for a failed episode
as for a finished one (:func:`applicable_metrics`). IRA and RA need an embedder: where no
episode was scored with one (``--embedder none``) they are shown as ``-`` (null in JSON, empty
in CSV), not 0.

A run that played its episodes more than once (``evaluate --repeats``) also gets, per intent and
overall, tau-bench's pass^k and pass@k of the verified resolution for k = 1..K, the share of
tasks whose verdict flips between plays, and percentile-bootstrap confidence intervals over
tasks (:func:`repeats_report`).
"""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from functools import cache
from math import comb
from pathlib import Path
from statistics import fmean
from typing import Any

import numpy as np

from telcoenv.domains import DEFAULT_DOMAIN, get_domain
from telcoenv.errors import TelcoEnvError
from telcoenv.metrics.reliability import ChainRecord, reliability
from telcoenv.options import GUIDED

METRICS = ("ira", "msc", "eap", "sas", "ra", "args", "answer", "resolved")
CARE_METRICS = ("msc", "eap", "sas", "args", "answer", "resolved")
# Metrics that may not apply to an episode (None when they do not): means skip those episodes.
_OPTIONAL = frozenset({"ra", "args", "answer", "resolved"})
# Metrics only an embedder computes: no mean where no episode was scored with one.
EMBEDDED_METRICS = frozenset({"ira", "ra"})
LANGS = ("en", "ar")
# The intervals of the repeats table: a percentile bootstrap over tasks, each row's resamples
# drawn by a generator seeded afresh with BOOTSTRAP_SEED, so that a report is the same each
# time it is made and a row does not depend on the others.
BOOTSTRAP_SEED = 0
BOOTSTRAP_RESAMPLES = 1000
CONFIDENCE = 0.95
_TAILS = (2.5, 97.5)  # percentiles of a 95 % interval


def _value(record: Mapping[str, Any], metric: str) -> float:
    value = record.get(metric)
    return 0.0 if value is None else float(value)


@cache
def applicable_metrics(domain: str, intent: str, language: str) -> frozenset[str]:
    """The optional metrics (IRA, RA, args, answer, resolved) an episode of ``intent`` gets.

    Decided as for every finished episode, where a metric that does not apply is None: one
    episode of the intent is played, truncated at once and scored without an embedder; RA
    applies where it has a reference summary. When the intent cannot be played here (its
    domain is not installed), every metric applies, so a failure counts 0 on each.
    """
    from telcoenv.env import TelcoEnv
    from telcoenv.metrics.scoring import text_pairs

    try:
        env = TelcoEnv(intent, lang=language, domain=domain, embedder=None)
    except TelcoEnvError:  # not installed here, or no longer in its catalogue
        return _OPTIONAL | EMBEDDED_METRICS
    try:
        env.reset(seed=0)
        _, info = env.truncate("which metrics apply")
    finally:
        env.close()
    found = {m for m in ("args", "answer", "resolved") if info["metrics"][m] is not None}
    if len(text_pairs(info["trace"])) > 1:  # a reference summary to compare with
        found.add("ra")
    return frozenset({"ira", *found})


def _applies(record: Mapping[str, Any], metric: str) -> bool:
    """Whether a record enters the mean of an optional metric: it has a value, or it failed
    and the metric applies to its intent."""
    if record.get(metric) is not None:
        return True
    if record["status"] != "failed":
        return False
    return metric in applicable_metrics(record_domain(record), record["intent"], record["language"])


def counted_value(record: Mapping[str, Any], metric: str) -> float | None:
    """What an episode adds to a metric's mean: its value, 0 for a failed episode where the
    metric applies, None where the mean leaves it out (an optional metric that does not apply)."""
    if metric in _OPTIONAL | EMBEDDED_METRICS and not _applies(record, metric):
        return None
    return _value(record, metric)


def _mean(records: Sequence[Mapping[str, Any]], metric: str) -> float | None:
    if metric in EMBEDDED_METRICS and not any(r.get("embedder") for r in records):
        return None
    values = [v for r in records if (v := counted_value(r, metric)) is not None]
    return fmean(values) if values else None


def record_domain(record: Mapping[str, Any]) -> str:
    return record.get("domain") or DEFAULT_DOMAIN  # records from before domains were stored


def _sections(records: Sequence[Mapping[str, Any]]) -> dict[str, str | None]:
    """Each recorded domain's report section (see ``Domain.report_section``); ``None`` for a
    table of its own, also when the domain is not installed where the report is made."""
    sections: dict[str, str | None] = {}
    for name in {record_domain(r) for r in records}:
        try:
            sections[name] = getattr(get_domain(name), "report_section", None)
        except TelcoEnvError:
            sections[name] = None
    return sections


def _own_tables(records: Sequence[Mapping[str, Any]], names: list[str]) -> dict[str, Any]:
    return {name: _task_table([r for r in records if record_domain(r) == name]) for name in names}


def _task_table(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per language: the chain, argument, answer and resolution metrics."""
    return {
        lang: {"n": len(group), **{m: _mean(group, m) for m in CARE_METRICS}}
        for lang in LANGS
        if (group := [r for r in records if r["language"] == lang])
    }


def _breakdown(records: Sequence[Mapping[str, Any]], field: str) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        groups[record[field]].append(record)
    return {
        name: {"n": len(rows), **{m: _mean(rows, m) for m in METRICS}}
        for name, rows in sorted(groups.items())
    }


#: The outcome's parts a report averages (telcoenv.rewards.outcome_record), and the reward.
OUTCOME_PARTS = (
    "submitted",
    "diagnosed",
    "fixed",
    "answered",
    "required_steps",
    "efficiency",
    "format",
    "harm",
    "minefield",
    "reward",
)


def outcome_table(records: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per language, the mean of each outcome part over the episodes that have one (a part that
    does not apply, such as ``answered`` without a question, is left out of its mean); the
    episodes stored before outcomes existed are not counted."""
    table: dict[str, dict[str, Any]] = {}
    for lang in LANGS:
        outcomes = [
            r["outcome"] for r in records if r["language"] == lang and r.get("outcome") is not None
        ]
        if not outcomes:
            continue
        row: dict[str, Any] = {"n": len(outcomes)}
        for part in OUTCOME_PARTS:
            values = [float(o[part]) for o in outcomes if o.get(part) is not None]
            row[part] = sum(values) / len(values) if values else None
        table[lang] = row
    return table


def _chains(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """The chains the records' MSC/EAP/SAS compared (a record stored before: attempted)."""
    return sorted({r.get("chain") or "attempted" for r in records})


def run_report(records: Sequence[Mapping[str, Any]], weights: str = "equal") -> dict[str, Any]:
    """All the tables of one run, as plain data."""
    everything = records
    sections = _sections(records)
    care = [r for r in records if sections[record_domain(r)] == "care"]
    own = sorted(name for name, section in sections.items() if section is None)
    # The paper's tables: the benchmark domain's episodes only.
    records = [r for r in records if sections[record_domain(r)] == "benchmark"]
    by_lang = {lang: [r for r in records if r["language"] == lang] for lang in LANGS}
    conditions = {True: "with_list", False: "without_list"}
    ira = {
        conditions[c]: {
            lang: _mean([r for r in by_lang[lang] if r["intent_list"] == c], "ira")
            for lang in LANGS
        }
        for c in conditions
    }
    has_with = any(r["intent_list"] for r in records)
    chains = [r for r in records if r["intent_list"] == has_with and r["gold_chain"]]
    stability: dict[str, Any] = {}
    for lang in LANGS:
        rows = [
            ChainRecord(r["blueprint_id"], lang, r["predicted_chain"], r["gold_chain"])
            for r in chains
            if r["language"] == lang
        ]
        if rows:
            rel = reliability(rows, weights=weights)
            stability[lang] = {
                "gpc0": rel.mean_gpc0,
                "gpc1": rel.mean_gpc1,
                "sd": rel.mean_sd,
                "brs": rel.mean_brs,
                "blueprints": len(rel.groups),
            }
    return {
        "episodes": len(everything),
        "care_episodes": len(care),
        "failed": sum(r["status"] == "failed" for r in everything),
        "embedders": sorted({r["embedder"] for r in everything if r.get("embedder")}),
        # None: stored before splits, every episode's.
        "splits": sorted({r.get("split") or "all" for r in everything}),
        "chains": _chains(everything),
        "outcome": outcome_table(everything),
        "ira": ira,
        "sequence": {
            lang: {m: _mean(by_lang[lang], m) for m in ("msc", "eap", "sas")} for lang in LANGS
        },
        "reliability": stability,
        "ra": {lang: _mean(by_lang[lang], "ra") for lang in LANGS},
        "resolved": {lang: _mean(by_lang[lang], "resolved") for lang in LANGS},
        "care": _task_table(care),
        "domains": _own_tables(everything, own),
        "per_intent": _breakdown(everything, "intent"),
        "per_category": _breakdown(everything, "category"),
    }


def pass_hat_k(n: int, c: int, k: int) -> float:
    """tau-bench's pass^k of one task played ``n`` times with ``c`` successes: the chance that
    ``k`` of its plays, drawn without replacement, all succeed, C(c, k) / C(n, k)."""
    if not 1 <= k <= n or not 0 <= c <= n:
        raise ValueError(f"pass^k needs 1 <= k <= n and 0 <= c <= n, got n={n}, c={c}, k={k}")
    return comb(c, k) / comb(n, k)


def pass_at_k(n: int, c: int, k: int) -> float:
    """pass@k of one task: the chance that at least one of ``k`` of its ``n`` plays succeeds,
    1 - C(n - c, k) / C(n, k)."""
    if not 1 <= k <= n or not 0 <= c <= n:
        raise ValueError(f"pass@k needs 1 <= k <= n and 0 <= c <= n, got n={n}, c={c}, k={k}")
    return 1.0 - comb(n - c, k) / comb(n, k)


def task_verdicts(records: Sequence[Mapping[str, Any]]) -> dict[tuple[Any, ...], list[bool]]:
    """The verified-resolution verdict of every play of each task (an episode of the grid:
    domain, tier, blueprint, sample, language, intent list), in the tasks' sorted order. A play
    counts as the resolve rate counts it (a failed one as unresolved where resolution applies)."""
    tasks: dict[tuple[Any, ...], list[bool]] = defaultdict(list)
    for record in records:
        value = counted_value(record, "resolved")
        if value is None:
            continue
        task = (
            record_domain(record),
            record.get("difficulty") or GUIDED,
            record["intent"],
            *(record.get(field) for field in ("blueprint_id", "sample_index", "language")),
            bool(record.get("intent_list")),
        )
        tasks[task].append(value >= 1.0)
    # A fixed order, whatever order the plays were stored in (the bootstrap draws by position).
    return dict(sorted(tasks.items(), key=lambda item: repr(item[0])))


def _interval(samples: Any) -> list[float] | None:
    kept = samples[~np.isnan(samples)]  # a resample without a task that has k plays
    if not kept.size:
        return None
    low, high = np.percentile(kept, _TAILS)
    return [float(low), float(high)]


def repeat_stats(tasks: Sequence[Sequence[bool]], k_max: int) -> dict[str, Any]:
    """Over tasks (each a list of its plays' verdicts): the share whose verdict flips (of those
    played twice or more), pass^k and pass@k for k = 1..``k_max`` (of those played k times or
    more; index k-1), and their bootstrap intervals (None where no task counts)."""
    played = [(len(v), sum(v)) for v in tasks]
    # One column per statistic: flips, pass^1..K, pass@1..K; a task counts where it has the plays.
    columns = 1 + 2 * k_max
    values, counts = np.zeros((len(played), columns)), np.zeros((len(played), columns))
    for row, (n, c) in enumerate(played):
        if n >= 2:
            values[row, 0], counts[row, 0] = float(0 < c < n), 1.0
        for k in range(1, min(n, k_max) + 1):
            values[row, k], counts[row, k] = pass_hat_k(n, c, k), 1.0
            values[row, k_max + k], counts[row, k_max + k] = pass_at_k(n, c, k), 1.0
    taken = counts.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = (values * counts).sum(axis=0) / taken
    # Resampling tasks with replacement, as weights: how often each task was drawn.
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    size = len(played)
    draws = rng.integers(0, size, size=(BOOTSTRAP_RESAMPLES, size))
    offsets = np.arange(BOOTSTRAP_RESAMPLES)[:, None] * size
    weights = np.bincount((draws + offsets).ravel(), minlength=BOOTSTRAP_RESAMPLES * size)
    weights = weights.reshape(BOOTSTRAP_RESAMPLES, size).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        resampled = (weights @ (values * counts)) / (weights @ counts)
    stats = [
        (None, None) if not taken[j] else (float(means[j]), _interval(resampled[:, j]))
        for j in range(columns)
    ]
    return {
        "tasks": len(played),
        "flips": stats[0][0],
        "flips_ci": stats[0][1],
        "pass_hat": [value for value, _ in stats[1 : k_max + 1]],
        "pass_hat_ci": [ci for _, ci in stats[1 : k_max + 1]],
        "pass_at": [value for value, _ in stats[k_max + 1 :]],
        "pass_at_ci": [ci for _, ci in stats[k_max + 1 :]],
    }


def repeats_report(records: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """pass^k, pass@k and verdict flips of a run whose tasks were played more than once,
    overall and per intent; None for a run that played each task once."""
    if not any(record.get("repeat") for record in records):  # None: stored before repeats
        return None
    tasks = task_verdicts(records)
    k_max = max((len(verdicts) for verdicts in tasks.values()), default=0)
    if k_max < 2:
        return None
    by_intent: dict[str, list[list[bool]]] = defaultdict(list)
    for task, verdicts in tasks.items():
        by_intent[task[2]].append(verdicts)
    return {
        "k": k_max,
        "tasks": len(tasks),
        "fewer": sum(len(verdicts) < k_max for verdicts in tasks.values()),  # unfinished
        "ci": {
            "method": "percentile bootstrap over tasks",
            "level": CONFIDENCE,
            "resamples": BOOTSTRAP_RESAMPLES,
            "seed": BOOTSTRAP_SEED,
        },
        "overall": repeat_stats(list(tasks.values()), k_max),
        "per_intent": {
            intent: repeat_stats(rows, k_max) for intent, rows in sorted(by_intent.items())
        },
    }


def _by_tier(records: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    tiers: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        tiers[record.get("difficulty") or GUIDED].append(record)  # None: stored before tiers
    return dict(sorted(tiers.items(), key=lambda item: (item[0] != GUIDED, item[0])))


def build_report(
    records_by_run: Mapping[str, Sequence[Mapping[str, Any]]], weights: str = "equal"
) -> dict[str, Any]:
    """The report of several runs (same structure per run). A run that played difficulty tiers
    other than guided is reported once per tier, as ``"<run> [<tier>]"``, so that every table
    breaks its figures down by tier."""
    runs: dict[str, Any] = {}
    for run, records in records_by_run.items():
        tiers = _by_tier(records)
        for tier, rows in tiers.items():
            name = run if list(tiers) == [GUIDED] else f"{run} [{tier}]"
            runs[name] = run_report(rows, weights)
            repeats = repeats_report(rows)
            if repeats is not None:  # played more than once: pass^k, pass@k
                runs[name]["repeats"] = repeats
    return {"weights": weights, "runs": runs}


def _fmt(value: Any) -> str:
    return "-" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def cell(text: str) -> str:
    """``text`` as a Markdown table cell: ``|`` and ``\\`` escaped, on one line (a run's name is
    the user's own and may hold either)."""
    return " ".join(text.replace("\\", "\\\\").replace("|", "\\|").split())


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    return [
        "| " + " | ".join(map(cell, header)) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(cell(_fmt(v)) for v in row) + " |" for row in rows),
    ]


def _with_ci(value: float | None, ci: Sequence[float] | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if ci is None else f"{value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"


def _repeats_markdown(runs: Mapping[str, Any]) -> list[str]:
    """The repeats table of the runs that played their tasks more than once (none: no table)."""
    shown = {name: r["repeats"] for name, r in runs.items() if r.get("repeats")}
    if not shown:
        return []
    k_max = max(t["k"] for t in shown.values())
    header = ["run", "intent", "tasks", "flips"]
    header += [f"pass^{k}" for k in range(1, k_max + 1)]
    header += [f"pass@{k}" for k in range(2, k_max + 1)]  # pass@1 is pass^1
    rows = []
    for name, t in shown.items():
        for group, stats in [("all", t["overall"]), *t["per_intent"].items()]:
            cells = [_with_ci(stats["flips"], stats["flips_ci"])]
            for metric, first in (("pass_hat", 1), ("pass_at", 2)):
                cells += [
                    _with_ci(stats[metric][k - 1], stats[f"{metric}_ci"][k - 1])
                    if k <= t["k"]
                    else "-"  # this run played fewer times than another beside it
                    for k in range(first, k_max + 1)
                ]
            rows.append([name, group, stats["tasks"], *cells])
    ci = next(iter(shown.values()))["ci"]
    notes = [
        f"{name}: {t['fewer']} of {t['tasks']} tasks have fewer than {t['k']} plays "
        "(unfinished); pass^k and pass@k count the tasks with k plays or more."
        for name, t in shown.items()
        if t["fewer"]
    ]
    return [
        "",
        "## Repeats: pass^k and pass@k of the verified resolution",
        "",
        "A task is an episode of the grid, played K times. pass^k is the chance that k of its",
        "plays all resolve it, pass@k that one of them does (averaged over tasks; pass^1 is the",
        "resolve rate); flips is the share of tasks whose verdict differs between plays.",
        f"[low, high]: {ci['level']:.0%} {ci['method']} ({ci['resamples']} resamples, "
        f"seed {ci['seed']}).",
        *(["", *notes] if notes else []),
        "",
        *_table(header, rows),
    ]


def _outcome_markdown(runs: Mapping[str, Any]) -> list[str]:
    """What resolution rests on and what the default reward pays, part by part."""
    rows = [
        [n, lang, values["n"], *(values[p] for p in OUTCOME_PARTS)]
        for n, r in runs.items()
        for lang, values in r.get("outcome", {}).items()
    ]
    if not rows:
        return []
    header = ["run", "lang", "n", "submitted", "diagnosed", "fixed", "answered"]
    header += ["required steps", "efficiency", "format", "harm", "minefield", "outcome reward"]
    title = "## Outcome (both domains): what resolution rests on, what the reward pays"
    return ["", title, "", *_table(header, rows)]


def to_markdown(report: Mapping[str, Any]) -> str:
    """The paper's tables, runs side by side."""
    runs = report["runs"]
    out = ["# telcoenv evaluation report", ""]
    out += [
        "## Runs",
        "",
        *_table(
            ["run", "split", "episodes", "failed", "embedder"],
            [
                [
                    n,
                    ", ".join(r.get("splits", ["all"])),
                    r["episodes"],
                    r["failed"],
                    ", ".join(r["embedders"]) or "-",
                ]
                for n, r in runs.items()
            ],
        ),
    ]
    out += [
        "",
        "## Intent recognition (IRA)",
        "",
        *_table(
            ["run", "with list EN", "with list AR", "without list EN", "without list AR"],
            [
                [
                    n,
                    r["ira"]["with_list"]["en"],
                    r["ira"]["with_list"]["ar"],
                    r["ira"]["without_list"]["en"],
                    r["ira"]["without_list"]["ar"],
                ]
                for n, r in runs.items()
            ],
        ),
    ]
    out += [
        "",
        "## Tool-sequence alignment (MSC, EAP, SAS)",
        "",
        "Predicted chain compared with the gold one, per run: "
        + "; ".join(f"{n}: {', '.join(r['chains'])}" for n, r in runs.items())
        + " (executed: the calls that ran; attempted: every call, refused ones too).",
        "",
        *_table(
            ["run", "MSC EN", "EAP EN", "SAS EN", "MSC AR", "EAP AR", "SAS AR"],
            [
                [n, *(r["sequence"][lang][m] for lang in LANGS for m in ("msc", "eap", "sas"))]
                for n, r in runs.items()
            ],
        ),
    ]
    out += [
        "",
        f"## Blueprint reliability (BRS weights: {report['weights']})",
        "",
        *_table(
            ["run", "lang", "GPC-0", "GPC-1", "SD", "BRS", "blueprints"],
            [
                [
                    n,
                    lang,
                    *(
                        r["reliability"][lang][k]
                        for k in ("gpc0", "gpc1", "sd", "brs", "blueprints")
                    ),
                ]
                for n, r in runs.items()
                for lang in LANGS
                if lang in r["reliability"]
            ],
        ),
    ]
    out += [
        "",
        "## Resolution accuracy (RA) and verified resolution",
        "",
        *_table(
            ["run", "RA EN", "RA AR", "resolved EN", "resolved AR"],
            [
                [n, r["ra"]["en"], r["ra"]["ar"], r["resolved"]["en"], r["resolved"]["ar"]]
                for n, r in runs.items()
            ],
        ),
    ]
    out += _outcome_markdown(runs)
    out += _repeats_markdown(runs)
    care_rows = [
        [n, lang, values["n"], *(values[m] for m in CARE_METRICS)]
        for n, r in runs.items()
        for lang, values in r["care"].items()
    ]
    if care_rows:
        out += [
            "",
            "## Customer care (BSS): API chain, arguments, exact answers, verified state",
            "",
            *_table(
                ["run", "lang", "n", "MSC", "EAP", "SAS", "Args", "Answer", "Resolved"], care_rows
            ),
        ]
    for domain in sorted({d for r in runs.values() for d in r.get("domains", {})}):
        rows = [
            [n, lang, values["n"], *(values[m] for m in CARE_METRICS)]
            for n, r in runs.items()
            for lang, values in r.get("domains", {}).get(domain, {}).items()
        ]
        out += ["", f"## Domain {domain}: tool chain, arguments, answers, verified state", ""]
        out += _table(["run", "lang", "n", "MSC", "EAP", "SAS", "Args", "Answer", "Resolved"], rows)
    for scope, title in (("per_category", "category"), ("per_intent", "intent")):
        out += ["", f"## Per {title} (both languages and conditions)", ""]
        out += _table(
            [title, "run", "n", *(m.upper() for m in METRICS)],
            [
                [group, n, row["n"], *(row[m] for m in METRICS)]
                for n, r in runs.items()
                for group, row in r[scope].items()
            ],
        )
    return "\n".join(out) + "\n"


def to_csv(report: Mapping[str, Any]) -> str:
    """Long format: run, table, group, language, condition, metric, value."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["run", "table", "group", "language", "condition", "metric", "value"])
    for name, r in report["runs"].items():
        for condition, per_lang in r["ira"].items():
            for lang, value in per_lang.items():
                writer.writerow([name, "ira", "", lang, condition, "ira", value])
        for lang, values in r["sequence"].items():
            for metric, value in values.items():
                writer.writerow([name, "sequence", "", lang, "", metric, value])
        for lang, values in r["reliability"].items():
            for metric, value in values.items():
                writer.writerow([name, "reliability", "", lang, "", metric, value])
        for lang, value in r["ra"].items():
            writer.writerow([name, "ra", "", lang, "", "ra", value])
        for lang, value in r["resolved"].items():
            writer.writerow([name, "resolved", "", lang, "", "resolved", value])
        for lang, values in r.get("outcome", {}).items():
            for metric, value in values.items():
                writer.writerow([name, "outcome", "", lang, "", metric, value])
        for scope, group, metric, value in _repeat_rows(r.get("repeats")):
            writer.writerow([name, scope, group, "", "", metric, value])
        for lang, values in r["care"].items():
            for metric, value in values.items():
                writer.writerow([name, "care", "", lang, "", metric, value])
        for domain, table in r.get("domains", {}).items():
            for lang, values in table.items():
                for metric, value in values.items():
                    writer.writerow([name, f"domain:{domain}", "", lang, "", metric, value])
        for scope in ("per_category", "per_intent"):
            for group, values in r[scope].items():
                for metric, value in values.items():
                    writer.writerow([name, scope, group, "", "", metric, value])
    return buffer.getvalue()


def _repeat_rows(repeats: Mapping[str, Any] | None) -> list[tuple[str, str, str, Any]]:
    """The repeats table in long format: (table, group, metric, value); an interval as two
    metrics, ``<metric>_ci_low`` and ``<metric>_ci_high``."""
    if not repeats:
        return []
    rows: list[tuple[str, str, str, Any]] = []
    groups = [("repeats", "", repeats["overall"])]
    groups += [("repeats_per_intent", i, s) for i, s in repeats["per_intent"].items()]
    for scope, group, stats in groups:
        measured = [("flips", stats["flips"], stats["flips_ci"])]
        for k in range(1, repeats["k"] + 1):
            measured.append((f"pass^{k}", stats["pass_hat"][k - 1], stats["pass_hat_ci"][k - 1]))
            measured.append((f"pass@{k}", stats["pass_at"][k - 1], stats["pass_at_ci"][k - 1]))
        rows.append((scope, group, "tasks", stats["tasks"]))
        for metric, value, ci in measured:
            low, high = ci if ci is not None else (None, None)
            rows += [
                (scope, group, metric, value),
                (scope, group, f"{metric}_ci_low", low),
                (scope, group, f"{metric}_ci_high", high),
            ]
    return rows


def write_plots(report: Mapping[str, Any], out_dir: Path) -> list[Path]:
    """Bar charts of every headline metric per run and language, and a per-intent heatmap."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt
    import numpy as np

    out_dir.mkdir(parents=True, exist_ok=True)
    runs = report["runs"]
    headline = {
        "IRA (with list)": lambda r, lang: r["ira"]["with_list"][lang],
        "IRA (without list)": lambda r, lang: r["ira"]["without_list"][lang],
        "MSC": lambda r, lang: r["sequence"][lang]["msc"],
        "EAP": lambda r, lang: r["sequence"][lang]["eap"],
        "SAS": lambda r, lang: r["sequence"][lang]["sas"],
        "BRS": lambda r, lang: r["reliability"].get(lang, {}).get("brs"),
        "RA": lambda r, lang: r["ra"][lang],
    }
    figure, axes = plt.subplots(1, len(headline), figsize=(3 * len(headline), 3.6), sharey=True)
    width = 0.8 / max(1, len(runs))
    for ax, (title, get) in zip(axes, headline.items(), strict=True):
        for i, (name, r) in enumerate(runs.items()):
            values = [get(r, lang) for lang in LANGS]
            positions = np.arange(len(LANGS)) + i * width
            ax.bar(positions, [v or 0.0 for v in values], width, label=name)
            for x, value in zip(positions, values, strict=True):
                if value is None:  # not measured (no embedder, no episode): not a 0
                    ax.text(x, 0.02, "-", ha="center", fontsize=8)
        ax.set_title(title, fontsize=9)
        ax.set_xticks(
            np.arange(len(LANGS)) + width * (len(runs) - 1) / 2, [s.upper() for s in LANGS]
        )
        ax.set_ylim(0, 1.05)
    if axes[0].get_legend_handles_labels()[0]:  # a run with no episode draws no bar
        axes[0].legend(fontsize=7)
    figure.tight_layout()
    paths = [out_dir / "metrics.png"]
    figure.savefig(paths[0], dpi=110)
    plt.close(figure)
    for name, r in runs.items():
        intents = list(r["per_intent"])
        values = [[r["per_intent"][i][m] for m in METRICS] for i in intents]
        grid = np.array([[np.nan if v is None else v for v in row] for row in values])
        figure, ax = plt.subplots(figsize=(8, 0.32 * len(intents) + 1.5))
        image = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto")
        ax.set_xticks(range(len(METRICS)), [m.upper() for m in METRICS])
        ax.set_yticks(range(len(intents)), intents, fontsize=7)
        for (row, col), value in np.ndenumerate(grid):
            ax.text(
                col,
                row,
                "-" if np.isnan(value) else f"{value:.2f}",
                ha="center",
                va="center",
                fontsize=6,
                color="white" if value < 0.6 else "black",
            )
        ax.set_title(f"{name}: per intent", fontsize=9)
        figure.colorbar(image, ax=ax)
        figure.tight_layout()
        path = out_dir / f"per_intent_{_safe(name)}.png"
        figure.savefig(path, dpi=110)
        plt.close(figure)
        paths.append(path)
    return paths


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


def render(report: Mapping[str, Any], fmt: str) -> str:
    if fmt == "md":
        return to_markdown(report)
    if fmt == "csv":
        return to_csv(report)
    if fmt == "json":
        return json.dumps(report, indent=2, ensure_ascii=False)
    raise ValueError(f"unknown report format {fmt!r}; use md, csv or json")
