"""One self-contained HTML page of stored runs: ``telcoenv report --html PAGE.html``.

The page holds the report's tables (those :func:`~telcoenv.evaluation.report.to_markdown` prints
for :func:`~telcoenv.evaluation.report.build_report`) and its plots (the PNGs of
:func:`~telcoenv.evaluation.report.write_plots`, inlined), then every episode in a table with
filters, and per episode a transcript: the counterpart's and the agent's messages, tool calls
with their arguments and outputs, errors, the database changes with their before and after
values, the verified final state, the metrics as the report counts them, and why each was lost.

Everything on the page comes from the stored records and their traces: the reasons are the
metrics' own rules applied to the trace (the gold steps the longest common subsequence leaves
out for MSC, the calls over the gold chain's length for EAP, the argument values the argument
accuracy compares, the verification's failed checks and collateral changes). The data is one
JSON document in a ``<script type="application/json">`` element, every ``<``, ``>`` and ``&``
written as a JSON escape so that no text an agent wrote can end that element; the page's script
renders every text as text (never as HTML). The transcripts are packed ``CHUNK`` episodes at a
time (zlib-compressed JSON in base64) and inflated by the browser only when one of them is
opened, and the table shows one page of rows at a time: a page of 10,000 episodes is a few tens
of MB and opens in about a second.
"""

from __future__ import annotations

import base64
import json
import os
import tempfile
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from importlib.resources import files
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from telcoenv.domains import get_domain
from telcoenv.errors import TelcoEnvError, UsageError
from telcoenv.evaluation.report import (
    EMBEDDED_METRICS,
    METRICS,
    build_report,
    counted_value,
    record_domain,
    to_markdown,
    write_plots,
)
from telcoenv.metrics.arguments import call_score, compared_calls, wrong_arguments
from telcoenv.options import GUIDED
from telcoenv.trace import ActionRecord, EpisodeTrace, GoldCall

# A tool output longer than this is cut in the page (the results database keeps all of it): a
# ``detail="full"`` dump can be megabytes, and 10,000 episodes must still open at once.
OUTPUT_LIMIT = 20_000
# Transcripts per compressed chunk: consecutive episodes share most of their text, so a chunk
# compresses about 12x (a page of 10,000 episodes is tens of MB, not hundreds) and opening one
# episode inflates only its chunk.
CHUNK = 32
# Characters JSON may hold in a string that HTML would read inside a <script> element.
_SCRIPT_SAFE = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026"}


# --- the page -----------------------------------------------------------------------------------


def check_output_path(path: Path, flag: str = "--html") -> Path:
    """Refuse at once a page path that cannot be written (a folder, no folder, read-only)."""
    if path.is_dir():
        raise UsageError(f"{flag} {path} is a folder; give a file name such as report.html")
    folder = path.parent
    if not folder.is_dir():
        raise UsageError(f"{flag} {path}: no folder {folder}")
    writable = os.access(path, os.W_OK) if path.exists() else os.access(folder, os.W_OK | os.X_OK)
    if not writable:
        raise UsageError(f"{flag} {path} is not writable")
    if not _replaceable(path):
        raise UsageError(
            f"{flag} {path} exists and is not an HTML page (a results database?): "
            "give a new file name; the page would replace it"
        )
    return path


def _replaceable(path: Path) -> bool:
    """Whether writing the page to ``path`` loses nothing but an earlier page: it is missing,
    empty or starts like an HTML document."""
    try:
        with path.open("rb") as file:
            start = file.read(512).lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    except FileNotFoundError:
        return True
    except OSError:  # unreadable: not ours to replace
        return False
    return not start or start.startswith((b"<!doctype html", b"<html"))


def write_html(
    records_by_run: Mapping[str, Sequence[Mapping[str, Any]]],
    path: Path,
    weights: str = "equal",
    report: Mapping[str, Any] | None = None,
) -> int:
    """Write the page of ``records_by_run`` (stored records, with their traces) to ``path``; the
    number of episodes on it. ``report``: the ``build_report`` of these records, when made."""
    page = render_page(page_data(records_by_run, weights, report))
    try:
        path.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None
    return sum(len(records) for records in records_by_run.values())


def page_data(
    records_by_run: Mapping[str, Sequence[Mapping[str, Any]]],
    weights: str = "equal",
    report: Mapping[str, Any] | None = None,
    *,
    plots: bool = True,
) -> dict[str, Any]:
    """What the page shows, as JSON-ready data: the report and its tables, the plots, one row
    per episode, and the episodes' transcripts packed ``CHUNK`` at a time (:func:`pack`)."""
    report = report if report is not None else build_report(records_by_run, weights)
    rows: list[dict[str, Any]] = []
    packed: list[str] = []
    details: list[dict[str, Any]] = []
    for run, records in records_by_run.items():
        for record in records:
            row, detail = episode_entry(run, record)
            rows.append(row)
            details.append(detail)
            if len(details) == CHUNK:
                packed.append(pack(details))
                details = []
    if details:
        packed.append(pack(details))
    return {
        "version": _telcoenv_version(),
        "runs": list(records_by_run),
        "metrics": list(METRICS),
        "report": report,
        "tables": markdown_tables(to_markdown(report)),
        "plots": _plots(report) if plots else [],
        "episodes": rows,
        "chunk": CHUNK,
        "details": packed,
    }


def pack(details: Sequence[Mapping[str, Any]]) -> str:
    """Transcripts as the page stores them: their JSON list, zlib-compressed, in base64 (which
    the page's ``DecompressionStream("deflate")`` reads back)."""
    return base64.b64encode(zlib.compress(_json_bytes(details))).decode("ascii")


def unpack(packed: str) -> list[dict[str, Any]]:
    """The transcripts of one packed chunk (the inverse of :func:`pack`)."""
    return orjson.loads(zlib.decompress(base64.b64decode(packed)))


def render_page(data: Mapping[str, Any]) -> str:
    """The HTML page: the template with its style, script and data inlined."""
    assets = files("telcoenv.evaluation")
    template = assets.joinpath("viewer.html").read_text(encoding="utf-8")
    style = assets.joinpath("viewer.css").read_text(encoding="utf-8")
    script = assets.joinpath("viewer.js").read_text(encoding="utf-8")
    # The data last: nothing in it can be taken for a marker of the template.
    return (
        template.replace("/*@STYLE@*/", style)
        .replace("/*@SCRIPT@*/", script)
        .replace("@DATA@", script_json(data))
    )


def script_json(data: Any) -> str:
    """``data`` as JSON that an HTML ``<script>`` element holds verbatim: ``<``, ``>`` and ``&``
    (which occur only inside JSON strings) are written as ``\\u`` escapes, so no text can close
    the element or open a comment in it."""
    return _json_bytes(data).decode("utf-8").translate(_SCRIPT_SAFE)


def _json_bytes(data: Any) -> bytes:
    """JSON of ``data``: orjson, fast, or the standard library where an agent's values are past
    orjson's limits (integers over 64 bits, lists nested over 255 deep)."""
    try:
        return orjson.dumps(data)
    except orjson.JSONEncodeError:
        return json.dumps(data, ensure_ascii=False, default=repr).encode("utf-8")


def markdown_tables(markdown: str) -> list[dict[str, Any]]:
    """The tables of a ``to_markdown`` report: title, header and rows (cells as printed)."""
    tables: list[dict[str, Any]] = []
    title = ""
    for line in markdown.splitlines():
        if line.startswith("## "):
            title = line[3:]
        elif line.startswith("|---"):
            continue
        elif line.startswith("| "):
            cells = _cells(line[2:-2])
            if tables and tables[-1]["title"] == title:
                tables[-1]["rows"].append(cells)
            else:
                tables.append({"title": title, "header": cells, "rows": []})
    return tables


def _cells(row: str) -> list[str]:
    """The cells of a table row between its outer bars, as :func:`report.cell` escaped them."""
    cells, current, chars = [], [], iter(row)
    for char in chars:
        if char == "\\":
            current.append(next(chars, ""))
        elif char == "|":
            cells.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    return [*cells, "".join(current).strip()]


def _plots(report: Mapping[str, Any]) -> list[dict[str, str]]:
    """The report's PNG plots as data URLs."""
    with tempfile.TemporaryDirectory(prefix="telcoenv-plots-") as folder:
        return [
            {
                "name": path.name,
                "src": "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode(),
            }
            for path in write_plots(report, Path(folder))
        ]


def _telcoenv_version() -> str:
    try:
        return version("telcoenv")
    except PackageNotFoundError:  # run from a checkout that is not installed
        return "unknown"


# --- one episode --------------------------------------------------------------------------------


def counted(record: Mapping[str, Any], metric: str) -> float | None:
    """The value the report's means count for this episode (a failed episode 0 where the metric
    applies; None where it does not), as ``report._mean`` takes it."""
    if metric in EMBEDDED_METRICS and not record.get("embedder"):
        return None
    return counted_value(record, metric)


def load_trace(record: Mapping[str, Any]) -> EpisodeTrace | None:
    """The stored trace, or None (a failure before the episode started, or a trace that could
    not be serialised and was stored as its repr)."""
    text = record.get("trace")
    if not text:
        return None
    try:
        return EpisodeTrace.model_validate_json(text)
    except ValidationError:
        return None


def episode_status(record: Mapping[str, Any], trace: EpisodeTrace | None) -> str:
    """done (submitted), truncated (the step budget ran out), failed, or timeout."""
    if record["status"] == "failed":
        return "timeout" if (record.get("error") or "").startswith("timeout") else "failed"
    if trace is not None and trace.submission is None:
        return "truncated"
    return "done"


def episode_entry(run: str, record: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The table row of one stored episode and its transcript."""
    trace = load_trace(record)
    metrics = {m: counted(record, m) for m in METRICS}
    row = {
        "run": run,
        "tier": record.get("difficulty") or GUIDED,  # None: stored before tiers
        "split": record.get("split") or "all",  # None: stored before splits
        "domain": record_domain(record),
        "intent": record["intent"],
        "category": record["category"],
        "blueprint": record["blueprint_id"],
        "sample": record["sample_index"],
        "lang": record["language"],
        "list": "with" if record["intent_list"] else "without",
        "status": episode_status(record, trace),
        "steps": record["steps"],
        "key": record["key"],
        "episode": trace.episode_id if trace else "",
        "m": metrics,
    }
    return row, episode_detail(record, trace, metrics)


def episode_detail(
    record: Mapping[str, Any], trace: EpisodeTrace | None, metrics: Mapping[str, float | None]
) -> dict[str, Any]:
    """What an opened episode shows: transcript, changes, verdict, metrics and why lost."""
    detail: dict[str, Any] = {
        "error": record.get("error"),
        "metrics": dict(metrics),
        "embedder": record.get("embedder"),
        "duration_s": record.get("duration_s"),
        "usage": record.get("agent_usage"),
        "why": why_lost(record, trace),
    }
    if trace is None:
        return detail
    lang = trace.language
    aligned = chain_alignment(trace.predicted_chain, trace.gold_tools)
    detail.update(
        counterpart=_counterpart(trace.domain),
        statement=trace.problem_statement,
        events=_events(trace, aligned),
        submission=trace.submission.model_dump() if trace.submission else None,
        gold={
            "label": trace.gold_label.get(lang, ""),
            "summary": trace.gold_summary.get(lang),
            "answer": trace.gold_answer,
            "chain": [{"tool": c.tool, "arguments": c.arguments} for c in trace.gold_chain],
        },
        predicted_chain=trace.predicted_chain,
        changes=database_changes(trace),
        verification=_verification(trace.verification),
        outcome=_outcome(trace),
        ended="submitted" if trace.terminated else "step budget" if trace.truncated else None,
    )
    return detail


@cache
def _domain_facts(domain: str) -> tuple[str, frozenset[str]]:
    """Who the agent talks to in ``domain`` and which of its tools write (none known when the
    domain is not installed here)."""
    try:
        found = get_domain(domain)
    except TelcoEnvError:
        return "counterpart", frozenset()
    writes = frozenset(name for name, spec in found.catalog.tools.items() if spec.effect == "write")
    return found.counterpart, writes


def _counterpart(domain: str) -> str:
    return _domain_facts(domain)[0]


def _capped(text: str) -> str:
    if len(text) <= OUTPUT_LIMIT:
        return text
    rest = len(text) - OUTPUT_LIMIT
    return f"{text[:OUTPUT_LIMIT]}\n… {rest:,} more characters (kept in the results database)"


def _events(trace: EpisodeTrace, aligned: Mapping[int, int]) -> list[dict[str, Any]]:
    """The agent's actions in order; each tool call says which gold step it matched, if any."""
    writes = _domain_facts(trace.domain)[1]
    events, position = [], 0
    for action in trace.actions:
        event: dict[str, Any] = {
            "step": action.step,
            "kind": action.kind,
            "tool": action.tool,
            "arguments": action.arguments,
            "output": _capped(action.observation),
            "valid": action.valid,
            "error_kind": action.error_kind,
            "error": action.error,
            "remeasure": action.remeasure,
            "write": action.tool in writes,
        }
        if action.raw is not None:  # a message's text, or what could not be parsed
            raw = action.raw
            event["text"] = raw if isinstance(raw, str) else _json_text(raw)
        if _in_chain(action):  # a call MSC and EAP compare with the gold chain
            gold_step = aligned.get(position)
            event["gold_step"] = None if gold_step is None else gold_step + 1
            position += 1
        events.append(event)
    return events


def _in_chain(action: ActionRecord) -> bool:
    """Whether the action is a call of ``EpisodeTrace.predicted_chain`` (one that ran)."""
    return (
        action.kind == "tool_call"
        and action.tool is not None
        and action.valid
        and not action.remeasure
    )


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=repr)


# --- database changes and the verified final state ---------------------------------------------


def _change_row(change: Mapping[str, Any]) -> dict[str, Any]:
    """A change in any of the shapes the domains record, as where / field / before / after."""
    if "parameter" in change and "old" in change:  # a write tool's output
        return {"field": change["parameter"], "before": change["old"], "after": change.get("new")}
    if "object" in change:  # the network's final-state diff
        return {
            "where": change["object"],
            "field": change.get("parameter"),
            "before": change.get("before"),
            "after": change.get("after"),
        }
    if "table" in change:  # a customer-care database diff: a row or a column
        where = f"{change['table']} {'/'.join(map(str, change.get('key', [])))}"
        if "inserted" in change:
            return {
                "where": where,
                "field": "row inserted",
                "before": None,
                "after": change["inserted"],
            }
        if "deleted" in change:
            return {
                "where": where,
                "field": "row deleted",
                "before": change["deleted"],
                "after": None,
            }
        return {
            "where": where,
            "field": change.get("column"),
            "before": change.get("before"),
            "after": change.get("after"),
        }
    return {"where": "", "field": "", "before": None, "after": dict(change)}


def _output_changes(action: ActionRecord) -> list[dict[str, Any]]:
    """The changes a write call reports in its output (``changes``: parameter, old, new)."""
    if '"changes"' not in action.observation:  # most calls: no need to parse the output
        return []
    try:
        output = orjson.loads(action.observation)
    except orjson.JSONDecodeError:
        return []
    if not isinstance(output, dict) or not isinstance(output.get("changes"), list):
        return []
    where = output.get("cell_id") or output.get("slice_id") or output.get("link_id") or ""
    return [
        {"where": where, **_change_row(change)}
        for change in output["changes"]
        if isinstance(change, dict)
    ]


def database_changes(trace: EpisodeTrace) -> list[dict[str, Any]]:
    """Every change with its before and after values: what the write calls reported (step by
    step), the changes the gold replay expected (made or not) and the collateral ones."""
    rows = [
        {"source": f"step {a.step} {a.tool}", "note": "", **change}
        for a in trace.actions
        if a.kind == "tool_call" and a.valid
        for change in _output_changes(a)
    ]
    verdict = trace.verification or {}
    expected = verdict.get("expected_changes") or []
    made = _expected_made(verdict, len(expected))
    notes = {True: "made", False: "not made", None: "expected"}
    rows += [
        {"source": "gold replay", "note": notes[done], **_change_row(change)}
        for change, done in zip(expected, made, strict=True)
    ]
    rows += [
        {"source": "final state", "note": "collateral", **_change_row(change)}
        for change in verdict.get("collateral_changes") or []
    ]
    return rows


def _expected_made(verdict: Mapping[str, Any], count: int) -> list[bool | None]:
    """Whether each expected change was made: the verification checks them first, in order
    (None: its checks do not say)."""
    checks = verdict.get("checks")
    if not isinstance(checks, list) or len(checks) < count:
        return [None] * count
    return [c.get("passed") if isinstance(c, dict) else None for c in checks[:count]]


def _checks(verdict: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The verification's checks as name / passed / detail (a dict of booleans in the network
    domain, a list of check records in customer care)."""
    checks = verdict.get("checks") or []
    if isinstance(checks, dict):
        return [{"name": n, "passed": bool(p), "detail": ""} for n, p in checks.items()]
    return [
        {"name": c.get("name", ""), "passed": bool(c.get("passed")), "detail": c.get("detail", "")}
        for c in checks
        if isinstance(c, dict)
    ]


def _outcome(trace: EpisodeTrace) -> dict[str, Any] | None:
    """What the resolution rests on, part by part: submission, diagnosis, fix, answer, harm,
    the intent's milestones (required or not) and minefields (None: graded before outcomes)."""
    outcome = trace.outcome
    if outcome is None:
        return None
    required = set(outcome.required)
    return {
        "parts": [
            {"name": "submitted", "passed": outcome.submitted},
            {"name": f"diagnosed ({outcome.diagnosis})", "passed": outcome.diagnosed},
            *(
                {"name": name, "passed": value}
                for name, value in (("fixed", outcome.fixed), ("answered", outcome.answered))
                if value is not None
            ),
            {"name": "nothing else changed", "passed": outcome.collateral == 0},
        ],
        "milestones": [
            {"name": name, "passed": met, "required": name in required}
            for name, met in outcome.milestones.items()
        ],
        "minefields": [
            {"name": name, "triggered": hit} for name, hit in outcome.minefields.items()
        ],
        "because": list(outcome.unresolved_because),
    }


def _verification(verdict: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if verdict is None:
        return None
    return {"resolved": verdict.get("resolved"), "checks": _checks(verdict)}


# --- why a metric was lost ----------------------------------------------------------------------


def chain_alignment(predicted: Sequence[str], gold: Sequence[str]) -> dict[int, int]:
    """One longest common subsequence of the two chains (what MSC counts), as predicted index
    -> gold index."""
    n, m = len(predicted), len(gold)
    lengths = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            lengths[i][j] = (
                lengths[i + 1][j + 1] + 1
                if predicted[i] == gold[j]
                else max(lengths[i + 1][j], lengths[i][j + 1])
            )
    pairs: dict[int, int] = {}
    i = j = 0
    while i < n and j < m:
        if predicted[i] == gold[j]:
            pairs[i] = j
            i, j = i + 1, j + 1
        elif lengths[i + 1][j] >= lengths[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


@dataclass(frozen=True)
class ArgumentFinding:
    """How one gold call's arguments were judged: the call compared (its step; None: the tool
    was never called), its score and the arguments it got wrong."""

    gold_step: int
    tool: str
    step: int | None
    valid: bool
    score: float
    wrong: tuple[tuple[str, Any, Any], ...]  # (name, given or _MISSING, gold)


_MISSING = object()


def argument_findings(
    gold_chain: Sequence[GoldCall], actions: Sequence[ActionRecord]
) -> list[ArgumentFinding]:
    """Each gold call judged as :func:`telcoenv.metrics.arguments.argument_accuracy` judges it
    (the same compared call and score); their mean score is that metric."""
    calls = compared_calls(gold_chain, actions)
    return [
        _judge(position, gold, call)
        for position, (gold, call) in enumerate(zip(gold_chain, calls, strict=True), start=1)
    ]


def _judge(position: int, gold: GoldCall, call: ActionRecord | None) -> ArgumentFinding:
    if call is None:
        return ArgumentFinding(position, gold.tool, None, False, 0.0, ())
    given = call.arguments or {}
    wrong = tuple(
        (name, given.get(name, _MISSING), gold.arguments[name])
        for name in wrong_arguments(gold, given)
    )
    score = call_score(gold, call)
    return ArgumentFinding(position, gold.tool, call.step, call.valid, score, wrong)


def _argument_reason(finding: ArgumentFinding) -> str:
    where = f"{finding.tool} (gold step {finding.gold_step})"
    if finding.step is None:
        return f"{where}: never called, so none of its arguments match"
    call = f"the call of step {finding.step}" + ("" if finding.valid else ", which was refused")
    wrong = "; ".join(
        f"{name} missing (gold {_json_text(gold)})"
        if given is _MISSING
        else f"{name} {_json_text(given)} (gold {_json_text(gold)})"
        for name, given, gold in finding.wrong
    )
    return f"{where}, compared with {call}: {wrong}"


def _reason(metric: str, text: str) -> dict[str, str]:
    return {"metric": metric, "text": text}


def why_lost(record: Mapping[str, Any], trace: EpisodeTrace | None) -> list[dict[str, str]]:
    """Why the episode lost what it lost, metric by metric, from its record and trace."""
    if record["status"] == "failed":
        first = (record.get("error") or "no error text").splitlines()[0]
        reasons = [
            _reason(
                "status",
                f"the episode failed ({first}): it counts 0 on every metric that applies, "
                "except resolved, the verdict on the state it reached",
            )
        ]
    else:
        reasons = [] if trace is None else _scored_reasons(record, trace)
    if trace is None:
        return reasons
    reasons += _verification_reasons(trace)
    refused = [a for a in trace.actions if not a.valid]
    if refused:
        kinds = ", ".join(f"{a.error_kind or 'invalid'} (step {a.step})" for a in refused)
        actions = "1 action" if len(refused) == 1 else f"{len(refused)} actions"
        reasons.append(_reason("actions", f"{actions} refused: {kinds}"))
    return reasons


def _scored_reasons(record: Mapping[str, Any], trace: EpisodeTrace) -> list[dict[str, str]]:
    """The reasons of a scored (not failed) episode: submission, chain, arguments."""
    reasons = _submission_reasons(record, trace) + _chain_reasons(trace)
    if record.get("args") is not None:
        reasons += [
            _reason("args", _argument_reason(f))
            for f in argument_findings(trace.gold_chain, trace.actions)
            if f.score < 1.0
        ]
    return reasons


def _submission_reasons(record: Mapping[str, Any], trace: EpisodeTrace) -> list[dict[str, str]]:
    """The submitted intent, answer and summary against the gold ones."""
    submission, lang = trace.submission, trace.language
    if submission is None:
        ran_out = " before the step budget ran out" if trace.truncated else ""
        return [_reason("submission", f"nothing was submitted{ran_out}: no intent or summary")]
    reasons = []
    labels = {trace.gold_label.get(lang, ""), trace.gold_label.get("en", "")}
    if _folded(submission.intent) not in {_folded(label) for label in labels}:
        ira = record.get("ira")
        shown = f"IRA {ira:.3f}: " if ira is not None else ""
        gold = trace.gold_label.get(lang, "")
        reasons.append(
            _reason(
                "ira",
                f"{shown}submitted intent {_json_text(submission.intent)}, gold label "
                f"{_json_text(gold)}",
            )
        )
    if trace.gold_answer is not None and record.get("answer") is False:
        given = "no answer" if submission.answer is None else _json_text(submission.answer)
        reasons.append(
            _reason("answer", f"{given} submitted, gold answer {_json_text(trace.gold_answer)}")
        )
    ra = record.get("ra")
    if ra is not None and ra < 1.0:
        reasons.append(
            _reason("ra", f"RA {ra:.3f}: the summary's meaning against the gold summary's")
        )
    return reasons


def _folded(text: str) -> str:
    return " ".join(text.casefold().split())


def _chain_reasons(trace: EpisodeTrace) -> list[dict[str, str]]:
    """The gold steps MSC misses and the calls EAP counts as extra."""
    predicted, gold = trace.predicted_chain, trace.gold_tools
    if not gold:
        return []
    aligned = chain_alignment(predicted, gold)
    matched = set(aligned.values())
    reasons = [
        _reason(
            "msc",
            f"gold step {j + 1} of {len(gold)} ({tool}): "
            + ("called, but not in the gold order" if tool in predicted else "never called"),
        )
        for j, tool in enumerate(gold)
        if j not in matched
    ]
    if len(predicted) > len(gold):
        steps = [a.step for a in trace.actions if _in_chain(a)]
        extra = ", ".join(
            f"{tool} (step {steps[i]})" for i, tool in enumerate(predicted) if i not in aligned
        )
        reasons.append(
            _reason(
                "eap",
                f"{len(predicted)} tool calls for a gold chain of {len(gold)}: "
                f"{len(predicted) - len(gold)} too many; off the gold chain: {extra}",
            )
        )
    if reasons:
        reasons.append(_reason("sas", "SAS = MSC × EAP: lost with them"))
    return reasons


def _verification_reasons(trace: EpisodeTrace) -> list[dict[str, str]]:
    """Why an episode is not resolved: a wrong diagnosis, milestones missed and minefields hit
    (graded), then the failed checks and collateral changes of its final state."""
    verdict = trace.verification
    if verdict is None:
        return [_reason("resolved", "the final state was not verified")]
    if verdict.get("resolved"):
        return []
    # What grading adds to the state's checks: the diagnosis, milestones and minefields.
    graded = ("diagnosis", "milestone", "minefield")
    reasons = [
        _reason("resolved", reason)
        for reason in (trace.outcome.unresolved_because if trace.outcome else ())
        if reason.startswith(graded)
    ]
    reasons += [
        _reason(
            "resolved", f"check failed: {c['name']}" + (f" ({c['detail']})" if c["detail"] else "")
        )
        for c in _checks(verdict)
        if not c["passed"]
    ]
    reasons += [
        _reason("resolved", "collateral change: " + _describe_change(_change_row(change)))
        for change in verdict.get("collateral_changes") or []
    ]
    return reasons


def _describe_change(row: Mapping[str, Any]) -> str:
    where = " ".join(str(part) for part in (row.get("where"), row.get("field")) if part)
    return f"{where}: {_json_text(row['before'])} -> {_json_text(row['after'])}"
