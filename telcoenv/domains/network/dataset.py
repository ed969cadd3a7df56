"""Generate the TelcoAgent-Bench dataset from the environment, deterministically.

Two formats:

* ``json``: one file per sample at ``OUT/TelcoAgent-Bench/<INTENT>/<BP>/<id>.json`` in the
  release's sample format (id, intent, blueprint_id, query{en, ar}, dialogue [{role, message_en,
  message_ar}], gold_path [{step, tool, args}], flow_alignment [{turn_index, gold_step}],
  gold_summary{en, ar}). The dialogue is an engineer-agent exchange in both languages: the
  problem statement, an approval before each gold step, and the agent's report of what that
  tool really returned in the simulated network, then the resolution.
* ``jsonl``: one chat row per sample and language for RL trainers (TRL, verl): ``prompt``
  (system and user messages), ``tools``, ``answer`` (intent, label, gold chain, gold summary),
  ``seed``, ``env_id``, ``environment`` (the short name: TRL routes a dict
  ``environment_factory`` by it), ``blueprint`` and ``sample_index`` (the reset options that
  address the episode; ``blueprint_id`` is the same), ``lang``, and ``extra_info`` (the same
  episode address, where verl looks for it). :func:`chat_rows` yields the rows in memory.

Sample ``k`` of blueprint ``b`` with ``--seed s`` is the episode ``(b, s * samples + k)``: the same
seed always gives the same dataset. With a split (``split="train"`` or ``"test"``,
:mod:`telcoenv.splits`) the samples of a blueprint are its split's first ``samples`` from
``s * samples`` on (none of a held-out blueprint in the train split), every sample and row
names its split, and every test-split file holds :data:`telcoenv.splits.CANARY`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from telcoenv.agents import OracleAgent
from telcoenv.domains.network.engineer import phrases, quote_kpis, ranked_evidence
from telcoenv.domains.network.kpis import kpi_definitions
from telcoenv.domains.network.loading import network_catalog
from telcoenv.domains.network.models import Intent
from telcoenv.env import TelcoEnv
from telcoenv.specs import LANGUAGES
from telcoenv.splits import CANARY, check_split, split_samples

_ASK = {
    "en": "Understood. To confirm the diagnosis I would like to run {tool} on {target}. "
    "May I proceed?",
    "ar": "مفهوم. لتأكيد التشخيص أود تشغيل {tool} على {target}. هل يمكنني المتابعة؟",
}
_NEXT = {
    "en": "Next I would like to run {tool} on {target}. May I proceed?",
    "ar": "الخطوة التالية: أود تشغيل {tool} على {target}. هل يمكنني المتابعة؟",
}
_CLOSE = {
    "en": "Thanks, that matches what we see. I'll keep monitoring and close the case.",
    "ar": "شكراً، هذا يطابق ما نراه. سأواصل المراقبة وأغلق الحالة.",
}


def _report(
    tool: str, output: dict[str, Any], sampled: dict[str, float], intent: Intent, lang: str
) -> str:
    """The agent's account of one tool output, grounded in its numbers."""
    en = lang == "en"
    if "error" in output:
        return output["error"]["message"]
    if tool == "oss_query":
        evidence = quote_kpis(
            ranked_evidence(sampled, intent.evidence, intent.fault.context_kpis)[:3], sampled, lang
        )
        alarms = len(output.get("active_alarms", []))
        return (
            f"OSS counters over {output['window']['length']}: {evidence}; {alarms} active alarm(s)."
            if en
            else f"عدادات OSS خلال {output['window']['length']}: {evidence}؛ "
            f"الإنذارات النشطة: {alarms}."
        )
    if tool == "kpi_timeseries":
        points = output["points"] if "points" in output else len(output["timestamps"])  # summary
        parts = [
            f"{kpi_definitions().kpis[n].name.in_lang(lang)} "
            f"{s['min']}-{s['max']} {s['unit']} ({'mean' if en else 'المتوسط'} {s['mean']})"
            for n, s in list(output["series"].items())[:3]
        ]
        return (
            f"The {output['kpi']} time series ({points} points): " + "; ".join(parts) + "."
            if en
            else f"السلسلة الزمنية {output['kpi']} ({points} نقطة): " + "؛ ".join(parts) + "."
        )
    if tool == "coverage_map":
        s = output["summary"]
        return (
            f"Coverage map: {s['coverage_gap_bins_pct']}% gap bins, {s['overlap_bins_pct']}% "
            f"overlap bins, serving cell best server in {s['serving_best_server_pct']}%."
            if en
            else f"خريطة التغطية: {s['coverage_gap_bins_pct']}% من المربعات فجوات، "
            f"{s['overlap_bins_pct']}% تداخل، والخلية المخدِّمة هي الأفضل في "
            f"{s['serving_best_server_pct']}%."
        )
    if tool == "neighbor_audit":
        findings = ", ".join(f"{f['type']} (PCI {f['pci']})" for f in output["findings"]) or "-"
        return (
            f"{len(output['neighbours'])} neighbours audited; findings: {findings}; "
            f"imbalance index {output['load']['imbalance_index']}."
            if en
            else f"تم تدقيق {len(output['neighbours'])} خلايا مجاورة؛ النتائج: {findings}؛ "
            f"مؤشر عدم التوازن {output['load']['imbalance_index']}."
        )
    if tool in ("optimize_cell", "optimize_slice", "push_config"):
        changes = ", ".join(f"{c['parameter']} {c['old']} → {c['new']}" for c in output["changes"])
        return (
            f"Change {output.get('change_id', '')} applied: {changes or 'no difference'}."
            if en
            else f"تم تطبيق التغيير {output.get('change_id', '')}: {changes or 'لا فرق'}."
        )
    if tool == "create_ticket":
        return (
            f"Ticket {output['ticket_id']} opened ({output['severity']}, {output['team']})."
            if en
            else f"فُتحت التذكرة {output['ticket_id']} ({output['severity']}، {output['team']})."
        )
    return json.dumps(output, ensure_ascii=False)[:300]


def _target(arguments: dict[str, Any]) -> str:
    return str(
        arguments.get("cell_id")
        or arguments.get("area")
        or arguments.get("slice_id")
        or arguments.get("config_id")
        or ""
    )


def _approval(index: int, lang: str) -> str:
    options = phrases()["replies"]["approval"][lang]
    return options[index % len(options)]


def sample_record(
    intent: Intent, blueprint_id: str, sample_index: int, seed: int, envs: dict[str, TelcoEnv]
) -> dict[str, Any]:
    """One sample in the release's format, both languages from the same scenario."""
    played: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    statements, summaries, gold = {}, {}, []
    for lang in LANGUAGES:
        env = envs[lang]
        options = {"blueprint": blueprint_id, "sample_index": sample_index}
        observation, info = env.reset(seed=seed, options=options)
        statements[lang] = observation
        agent = OracleAgent()
        agent.reset(observation, info)
        gold = info["privileged"]["gold_chain"]
        steps = []
        for call in gold:
            action = {"name": call["tool"], "arguments": call["arguments"]}
            output, *_ = env.step(action)
            steps.append((action, json.loads(output)))
        summaries[lang] = info["privileged"]["gold_summary"][lang]
        played[lang] = steps
    sampled = envs["en"].trace.facts
    # Turns alternate: engineer, agent asks, engineer approves, agent reports the step's output
    # together with the next request (or the resolution), ..., engineer closes.
    dialogue = [
        {"role": "engineer", "message_en": statements["en"], "message_ar": statements["ar"]}
    ]
    alignment = []
    pending = {lang: "" for lang in LANGUAGES}  # the report waiting for the next agent turn
    for step, ((action, output_en), (_, output_ar)) in enumerate(
        zip(played["en"], played["ar"], strict=True), start=1
    ):
        ask = _ASK if step == 1 else _NEXT
        target = _target(action["arguments"])
        dialogue.append(
            {
                "role": "agent",
                **{
                    f"message_{lang}": (
                        pending[lang] + " " + ask[lang].format(tool=action["name"], target=target)
                    ).strip()
                    for lang in LANGUAGES
                },
            }
        )
        dialogue.append(
            {
                "role": "engineer",
                "message_en": _approval(step, "en"),
                "message_ar": _approval(step, "ar"),
            }
        )
        alignment.append({"turn_index": len(dialogue) + 1, "gold_step": step})
        pending = {
            "en": _report(action["name"], output_en, sampled, intent, "en"),
            "ar": _report(action["name"], output_ar, sampled, intent, "ar"),
        }
    dialogue.append(
        {
            "role": "agent",
            **{f"message_{lang}": f"{pending[lang]} {summaries[lang]}" for lang in LANGUAGES},
        }
    )
    dialogue.append({"role": "engineer", "message_en": _CLOSE["en"], "message_ar": _CLOSE["ar"]})
    return {
        "id": f"{intent.key}-{blueprint_id}-S{sample_index + 1:04d}",
        "intent": intent.key,
        "blueprint_id": blueprint_id,
        "query": statements,
        "dialogue": dialogue,
        "gold_path": [
            {"step": i, "tool": c["tool"], "args": c["arguments"]}
            for i, c in enumerate(gold, start=1)
        ],
        "flow_alignment": alignment,
        "gold_summary": summaries,
    }


def _episodes(samples: int, seed: int, split: str = "all") -> Iterator[tuple[Intent, str, int]]:
    catalog = network_catalog()
    for intent in catalog.intents:
        family = [b.blueprint_id for b in catalog.blueprints[intent.key]]
        for blueprint_id in family:
            for index in split_samples(blueprint_id, family, split, samples, seed * samples):
                yield intent, blueprint_id, index


def _marked(record: dict[str, Any], split: str) -> dict[str, Any]:
    """A sample or row of a split names it; a test-split one carries the canary."""
    if split == "all":
        return record
    return {**record, "split": split, **({"canary": CANARY} if split == "test" else {})}


def generate(
    out: str | Path,
    samples: int = 30,
    seed: int = 0,
    fmt: str = "json",
    difficulty: str = "guided",
    domain: Any = None,
    split: str = "all",
) -> int:
    """Write the dataset; returns the number of samples (json) or rows (jsonl) written. A tier
    other than ``guided`` writes its statements (and records the tier in every sample/row);
    ``domain``: the network domain to play (None: the default, the network model); ``split``:
    one split's episodes (see the module docstring)."""
    split = check_split(split)
    if fmt not in ("json", "jsonl"):
        raise ValueError(f"unknown dataset format {fmt!r}; use json or jsonl")
    out = Path(out)
    count = 0
    if fmt == "jsonl":
        path = out if out.suffix == ".jsonl" else out / "telcoenv-dataset.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8") as handle:
            for row in chat_rows(samples, seed, difficulty=difficulty, split=split):
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
                count += 1
        return count
    envs = _envs(LANGUAGES, difficulty, domain, split)
    for intent, blueprint_id, index in _episodes(samples, seed, split):
        record = _marked(sample_record(intent, blueprint_id, index, seed, envs), split)
        if difficulty != "guided":
            record["difficulty"] = difficulty
        folder = out / "TelcoAgent-Bench" / intent.key / blueprint_id
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{record['id']}.json").write_text(
            json.dumps(record, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
        )
        count += 1
    return count


def _envs(
    langs: tuple[str, ...], difficulty: str, domain: Any = None, split: str = "all"
) -> dict[str, TelcoEnv]:
    return {
        lang: TelcoEnv(
            None,
            lang=lang,
            privileged=True,
            embedder=None,
            difficulty=difficulty,
            domain=domain if domain is not None else "network",
            split=split,
        )
        for lang in langs
    }


def chat_rows(
    samples: int = 30,
    seed: int = 0,
    langs: tuple[str, ...] = LANGUAGES,
    difficulty: str = "guided",
    split: str = "all",
) -> Iterator[dict[str, Any]]:
    """One trainer row per blueprint sample and language (see the module docstring)."""
    split = check_split(split)
    envs = _envs(langs, difficulty, split=split)
    for intent, blueprint_id, index in _episodes(samples, seed, split):
        for lang in langs:
            row = _chat_row(envs[lang], intent, blueprint_id, index, seed, lang)
            yield _marked(row, split)


def _chat_row(
    env: TelcoEnv, intent: Intent, blueprint_id: str, index: int, seed: int, lang: str
) -> dict[str, Any]:
    _, info = env.reset(seed=seed, options={"blueprint": blueprint_id, "sample_index": index})
    privileged = info["privileged"]
    address = {"blueprint": blueprint_id, "sample_index": index, "lang": lang, "seed": seed}
    if env.difficulty != "guided":  # the tier is part of the episode's address
        address["difficulty"] = env.difficulty
    if env.split != "all":  # and the split (its phrasings are the split's)
        address["split"] = env.split
    return {
        "prompt": info["messages"],
        "tools": info["tools"],
        "seed": seed,
        "env_id": env.env_id,
        "environment": "troubleshooting",
        "blueprint": blueprint_id,
        "blueprint_id": blueprint_id,
        "sample_index": index,
        "lang": lang,
        **({"difficulty": address["difficulty"]} if "difficulty" in address else {}),
        "extra_info": {"env_id": env.env_id, **address},
        "answer": {
            "intent": intent.key,
            "label": privileged["label"][lang],
            "gold_chain": privileged["gold_chain"],
            "gold_summary": privileged["gold_summary"][lang],
        },
    }
