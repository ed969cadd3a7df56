"""The HTML viewer of ``telcoenv report --html``: the data the page embeds (the report's numbers,
why each metric was lost, escaping), the command line, and the page in a real browser (Chromium
through Playwright: filters, transcripts, an agent's HTML shown as text, 10,000 episodes)."""

from __future__ import annotations

import importlib.util
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from statistics import fmean
from typing import Any

import pytest

from telcoenv.agents import OracleAgent
from telcoenv.cli import main
from telcoenv.evaluation.html_report import (
    argument_findings,
    chain_alignment,
    episode_entry,
    episode_status,
    markdown_tables,
    page_data,
    render_page,
    unpack,
    why_lost,
)
from telcoenv.evaluation.report import build_report, to_markdown
from telcoenv.evaluation.runner import RunConfig, build_grid, evaluate
from telcoenv.evaluation.store import ResultStore
from telcoenv.trace import EpisodeTrace
from tests.conftest import make_env, play, result_store, submit, tool_call

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    *("--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"),
    *("--disable-background-networking", "--disable-component-update", "--disable-sync"),
]
RUNS = ("oracle", "random", "crashing", "html")
# What an agent may write: each part would run script if the page took text for HTML.
PAYLOAD = (
    "</script><script>window.__xss = 'script'</script>"
    "<img src=x onerror=\"window.__xss = 'img'\"><!--<script>"
)


class HtmlWriter(OracleAgent):
    """The oracle, but it first writes HTML to the counterpart and calls a tool named with it,
    and submits it as its summary."""

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        super().reset(observation, info)
        self.opening = [f"Hello {PAYLOAD}", tool_call(PAYLOAD)]

    def act(self, observation: str, info: dict[str, Any]) -> Any:
        if self.opening:
            return self.opening.pop(0)
        action = super().act(observation, info)
        if isinstance(action, dict) and action["name"] == "submit_resolution":
            action = tool_call(action["name"], **{**action["arguments"], "summary": PAYLOAD})
        return action


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> tuple[ResultStore, str]:
    """oracle and random on two network intents and a customer-care one (EN, AR), a run whose
    agent crashes, and one whose agent writes HTML; no embedder."""
    store, url = result_store(tmp_path_factory.mktemp("html"))
    grid = build_grid(["beam_misalignment", "pci_collision", "bill_shock"], samples=1)
    for run, agent, options in [
        ("oracle", "oracle", {}),
        ("random", "random", {"seed": 1}),
        ("crashing", "tests.agents_for_tests:Crashing", {}),
        ("html", f"{__name__}:HtmlWriter", {}),
    ]:
        runs_grid = grid[:1] if run == "html" else grid
        evaluate(store, run, runs_grid, RunConfig(agent, options, embedder=None))
    return store, url


@pytest.fixture(scope="module")
def records(results) -> dict[str, list[dict[str, Any]]]:
    store, _ = results
    return {run: store.records([run], with_trace=True) for run in RUNS}


@pytest.fixture(scope="module")
def page(records, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("page") / "report.html"
    path.write_text(render_page(page_data(records)), encoding="utf-8")
    return path


def embedded(html: str) -> dict[str, Any]:
    """The JSON data of a page, as the browser reads it from its script element."""
    start = html.index('id="telcoenv-data">') + len('id="telcoenv-data">')
    return json.loads(html[start : html.index("</script>", start)])


def transcripts(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [detail for packed in data["details"] for detail in unpack(packed)]


# --- the data the page embeds -------------------------------------------------------------------


def test_the_page_embeds_the_numbers_of_build_report(page, records):
    data = embedded(page.read_text(encoding="utf-8"))
    report = build_report(records)
    assert data["report"] == json.loads(json.dumps(report))
    assert data["tables"] == markdown_tables(to_markdown(report))
    first = ["oracle", "all", str(len(records["oracle"]))]  # run, split, episodes
    assert data["tables"][0]["rows"][0][:3] == first
    assert {p["name"] for p in data["plots"]} >= {"metrics.png", "per_intent_oracle.png"}
    rows = data["episodes"]
    assert len(rows) == len(transcripts(data)) == sum(map(len, records.values()))
    # Each row's metrics are the values the report's means count (a failure 0 where it applies).
    for run, table in report["runs"].items():
        ours = [r for r in rows if r["run"] == run]
        for lang, values in table["sequence"].items():
            network = [r["m"] for r in ours if r["lang"] == lang and r["domain"] == "network"]
            for metric in ("msc", "eap", "sas"):
                mean = fmean(m[metric] for m in network) if network else None
                assert mean == pytest.approx(values[metric])
        for lang, values in table["care"].items():
            care = [r["m"] for r in ours if r["lang"] == lang and r["domain"] == "bss"]
            for metric in ("sas", "args", "answer", "resolved"):
                counted = [m[metric] for m in care if m[metric] is not None]
                assert fmean(counted) == pytest.approx(values[metric])
    assert report["runs"]["crashing"]["sequence"]["en"]["sas"] == 0.0
    assert {r["status"] for r in rows if r["run"] == "crashing"} == {"failed"}


def test_a_run_name_with_bars_keeps_its_tables_whole(records):
    """A run's name is the user's: ``|`` and ``\\`` in it are escaped in the Markdown report
    and read back whole by the page (they used to split its row into extra cells)."""
    name = "qwen | 1.5b \\ compact"
    report = build_report({name: records["oracle"], "random": records["random"]})
    markdown = to_markdown(report)
    assert "| qwen \\| 1.5b \\\\ compact |" in markdown
    runs = markdown_tables(markdown)[0]
    assert [row[0] for row in runs["rows"]] == [name, "random"]
    for table in markdown_tables(markdown):
        assert all(len(row) == len(table["header"]) for row in table["rows"]), table


def test_reasons_follow_the_metrics_on_every_evaluated_episode(records):
    for record in (r for rows in records.values() for r in rows if r["status"] == "ok"):
        trace = EpisodeTrace.model_validate_json(record["trace"])
        findings = argument_findings(trace.gold_chain, trace.actions)
        assert fmean(f.score for f in findings) == pytest.approx(record["args"])
        matched = len(chain_alignment(trace.predicted_chain, trace.gold_tools))
        assert matched / len(trace.gold_tools) == pytest.approx(record["msc"])
        metrics = {r["metric"] for r in why_lost(record, trace)}
        assert ("msc" in metrics) == (record["msc"] < 1)
        assert ("eap" in metrics) == (record["eap"] < 1)
        assert ("args" in metrics) == (record["args"] < 1)
        assert ("resolved" in metrics) == (not record["resolved"])


def finished(env: Any, info: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """The stored record of an episode played to its end (as the runner stores it)."""
    trace, metrics = env.unwrapped.trace, info["metrics"]
    return {
        **{"run": "hand", "key": f"{trace.blueprint_id}|0", "domain": trace.domain},
        **{"intent": trace.intent, "category": trace.category, "sample_index": 0},
        **{"blueprint_id": trace.blueprint_id, "language": trace.language, "difficulty": None},
        **{"intent_list": trace.intent_list, "status": "ok", "error": None, "embedder": None},
        **{m: metrics[m] for m in ("ira", "msc", "eap", "sas", "ra", "args", "answer")},
        **{"resolved": info["resolved"], "steps": info["steps"], "duration_s": 0.5},
        **{"predicted_chain": metrics["predicted_chain"], "gold_chain": metrics["gold_chain"]},
        **{"trace": trace.model_dump_json(), "agent_usage": None, "finished_at": ""},
        **fields,
    }


def reasons(record: dict[str, Any]) -> list[tuple[str, str]]:
    trace = EpisodeTrace.model_validate_json(record["trace"]) if record["trace"] else None
    return [(r["metric"], r["text"]) for r in why_lost(record, trace)]


def test_why_lost_names_missed_steps_wrong_arguments_and_the_wrong_intent():
    env = make_env("beam_misalignment", max_steps=50)
    _, start = env.reset(seed=0)
    area, _ = start["privileged"]["gold_chain"][0]["arguments"].values()
    cell = start["privileged"]["gold_chain"][1]["arguments"]["cell_id"]
    info = play(
        env,
        [
            tool_call("oss_query", cell_id=cell, window="2h"),  # off the gold chain
            tool_call("no_such_tool"),  # refused, and an extra call
            tool_call("coverage_map", area=area, resolution="500m"),  # gold: 100m
            tool_call("optimize_cell", cell_id=cell, changes={"beam_azimuth_offset_deg": 10}),
            submit("Coverage Hole", "weak coverage"),  # no ticket; the wrong intent
        ],
    )
    record = finished(env, info)
    # The refused call is no step of the plan: three calls ran, as many as the gold chain.
    assert (record["msc"], record["eap"], record["args"]) == (pytest.approx(2 / 3), 1.0, 1 / 3)
    assert reasons(record) == [
        ("ira", 'submitted intent "Coverage Hole", gold label "Beam Misalignment"'),
        ("msc", "gold step 3 of 3 (create_ticket): never called"),
        ("sas", "SAS = MSC × EAP: lost with them"),
        (
            "args",
            'coverage_map (gold step 1), compared with the call of step 3: resolution "500m" '
            '(gold "100m")',
        ),
        (
            "args",
            "optimize_cell (gold step 2), compared with the call of step 4: changes "
            '{"beam_azimuth_offset_deg": 10} (gold {"beam_azimuth_offset_deg": 0})',
        ),
        ("args", "create_ticket (gold step 3): never called, so none of its arguments match"),
        (
            "resolved",
            "diagnosis: the submitted intent 'Coverage Hole' does not name the episode's intent",
        ),
        ("resolved", "milestone not met: escalated to the owning team in a ticket"),
        # Outside the accepted band, though the KPIs have recovered enough.
        ("resolved", "check failed: beam_azimuth_offset_deg in [-5, 5]"),
        ("resolved", "check failed: ticket opened"),
        ("actions", "1 action refused: unknown_tool (step 2)"),
    ]
    _, detail = episode_entry("hand", record)
    change = {"where": cell, "field": "beam_azimuth_offset_deg", "after": 10}
    assert [{k: c[k] for k in change} for c in detail["changes"]] == [change]
    assert (
        detail["changes"][0]["before"] > 0
        and detail["changes"][0]["source"] == "step 4 optimize_cell"
    )
    assert [e.get("gold_step") for e in detail["events"][:4]] == [None, None, 1, 2]


def test_why_lost_out_of_order_steps_collateral_changes_and_no_submission():
    env = make_env("beam_misalignment", max_steps=3)
    _, start = env.reset(seed=0)
    coverage, optimize, _ = start["privileged"]["gold_chain"]
    cell = optimize["arguments"]["cell_id"]
    info = play(
        env,
        [
            tool_call("optimize_cell", cell_id=cell, changes={"tilt_deg": 2}),  # collateral
            tool_call(coverage["tool"], **coverage["arguments"]),
            tool_call(optimize["tool"], **optimize["arguments"]),  # the budget ends here
        ],
    )
    record = finished(env, info)
    found = reasons(record)
    assert found[0] == (
        "submission",
        "nothing was submitted before the step budget ran out: no intent or summary",
    )
    assert ("msc", "gold step 3 of 3 (create_ticket): never called") in found
    tilt = env.unwrapped.trace.start_state["serving_cell"]["config"]["tilt_deg"]
    collateral = [text for metric, text in found if text.startswith("collateral change")]
    assert collateral == [f"collateral change: cell:{cell} tilt_deg: {tilt} -> 2.0"]
    assert episode_status(record, env.unwrapped.trace) == "truncated"
    _, detail = episode_entry("hand", record)
    assert detail["changes"][-1] == {
        **{"source": "final state", "note": "collateral", "where": f"cell:{cell}"},
        **{"field": "tilt_deg", "before": tilt, "after": 2},
    }
    # The first optimize_cell matches gold step 2 when called before coverage_map: order counts.
    swapped = make_env("beam_misalignment", max_steps=5)
    swapped.reset(seed=0)
    play(swapped, [tool_call(optimize["tool"], **optimize["arguments"])])
    info = play(swapped, [tool_call(coverage["tool"], **coverage["arguments"]), submit()])
    found = reasons(finished(swapped, info))
    assert ("msc", "gold step 2 of 3 (optimize_cell): called, but not in the gold order") in found


def test_why_lost_a_wrong_answer_and_a_plan_change_not_made():
    env = make_env("plan_change", domain="bss")
    _, start = env.reset(seed=0)
    *reads, change = start["privileged"]["gold_chain"]  # the lookup, the check, the plan
    wrong = {**change["arguments"], "plan_id": "POST-PLUS"}  # neither the line's nor gold's
    assert change["arguments"]["plan_id"] == "POST-UNLIMITED"
    calls = [tool_call(c["tool"], **c["arguments"]) for c in reads]
    info = play(env, [*calls, tool_call("change_plan", **wrong), submit("Plan Change")])
    record = finished(env, info)
    found = [text for metric, text in reasons(record) if metric == "resolved"]
    assert found[0] == "milestone not met: moved the line to the plan"
    assert found[1].startswith("check failed: lines ") and "plan_id" in found[1]
    # The plan history's new row (plan_history) differs too: the wrong plan from today.
    assert found[2].startswith("check failed: plan_history ") and "inserted" in found[2]
    assert found[3].startswith("collateral change: lines ") and wrong["plan_id"] in found[3]
    assert found[4].startswith("collateral change: plan_history ") and wrong["plan_id"] in found[4]
    _, detail = episode_entry("hand", record)
    notes = [(c["note"], c["where"].split()[0]) for c in detail["changes"]]
    assert notes == [
        ("not made", "lines"),
        ("made", "plan_history"),  # the old plan ends yesterday, as the gold chain's does
        ("not made", "plan_history"),
        ("collateral", "lines"),
        ("collateral", "plan_history"),
    ]
    assert detail["changes"][3]["after"] == wrong["plan_id"]

    env = make_env("bill_shock", domain="bss")
    _, start = env.reset(seed=0)
    gold = start["privileged"]["gold_answer"]
    calls = [tool_call(c["tool"], **c["arguments"]) for c in start["privileged"]["gold_chain"]]
    info = play(env, [*calls, submit("Bill Shock", "the bill", answer="12")])
    assert ("answer", f'"12" submitted, gold answer "{gold}"') in reasons(finished(env, info))


def test_a_failed_episode_says_why_and_counts_as_the_report_counts():
    record = {
        **{"run": "x", "key": "k", "domain": "network", "intent": "BEAM_MISALIGNMENT"},
        **{"category": "coverage_interference", "blueprint_id": "b", "sample_index": 0},
        **{"language": "en", "intent_list": True, "difficulty": "noisy", "status": "failed"},
        **{"error": "timeout: episode exceeded 1 s\nmore", "embedder": None, "steps": 0},
        **{m: None for m in ("ira", "msc", "eap", "sas", "ra", "args", "answer", "resolved")},
        **{"predicted_chain": [], "gold_chain": [], "duration_s": 1.0, "trace": None},
        **{"agent_usage": None, "finished_at": ""},
    }
    row, detail = episode_entry("x", record)
    assert (row["status"], row["tier"]) == ("timeout", "noisy")
    assert row["m"] == {**dict.fromkeys(("msc", "eap", "sas", "args"), 0.0)} | {
        "ira": None,
        "ra": None,
        "answer": None,
        "resolved": 0.0,
    }
    assert detail["why"] == [
        {
            "metric": "status",
            "text": "the episode failed (timeout: episode exceeded 1 s): it counts 0 on every "
            "metric that applies, except resolved, the verdict on the state it reached",
        }
    ]


def test_text_an_agent_wrote_cannot_leave_the_data_element(page, records):
    html = page.read_text(encoding="utf-8")
    assert html.count("</script") == 2 and html.count("<script") == 2  # the page's own two
    assert "<img" not in html and html.count("<!--") == 1  # the template's comment
    data = embedded(html)
    html_run = [
        d for r, d in zip(data["episodes"], transcripts(data), strict=True) if r["run"] == "html"
    ]
    (detail,) = html_run
    assert detail["events"][0]["text"] == f"Hello {PAYLOAD}"
    assert detail["events"][1]["tool"] == PAYLOAD
    assert PAYLOAD[:31] in detail["events"][1]["error"]  # quoted short: a prefix and its size
    assert detail["submission"]["summary"] == PAYLOAD


def test_values_past_the_fast_json_limits_still_make_a_page():
    env = make_env("beam_misalignment", max_steps=1)
    env.reset(seed=0)
    info = play(env, [tool_call("oss_query", cell_id=10**30, window="2h")])  # over 64 bits
    data = embedded(render_page(page_data({"hand": [finished(env, info)]}, plots=False)))
    (event,) = transcripts(data)[0]["events"]
    assert event["arguments"]["cell_id"] == 1e30 and event["error_kind"] == "invalid_arguments"


# --- the command line ---------------------------------------------------------------------------


def test_report_html_writes_one_page_and_refuses_mistakes_in_one_line(
    results, records, tmp_path, capsys
):
    _, url = results
    path = tmp_path / "viewer.html"
    assert (
        main(["report", "--db", url, "--run", "oracle", "--run", "random", "--html", str(path)])
        == 0
    )
    captured = capsys.readouterr()
    assert "## Intent recognition (IRA)" in captured.out
    episodes = len(records["oracle"]) + len(records["random"])
    assert captured.err.strip() == f"{episodes} episodes written to {path.resolve()}"
    data = embedded(path.read_text(encoding="utf-8"))
    assert data["runs"] == ["oracle", "random"] and len(data["episodes"]) == episodes
    for argv, message in [
        (["--html", str(tmp_path / "no" / "page.html")], f"no folder {tmp_path / 'no'}"),
        (["--html", str(tmp_path)], "is a folder"),
        (["--run", "nope", "--html", str(path)], "no run named ['nope']"),
    ]:
        assert main(["report", "--db", url, "--run", "oracle", *argv]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err and "Traceback" not in err, err


# --- in a browser -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    missing = [] if CHROMIUM.exists() else [str(CHROMIUM)]
    if importlib.util.find_spec("playwright") is None:
        missing.append("the playwright package")
    if missing:
        message = f"no browser test: {' and '.join(missing)} missing"
        if os.environ.get("TELCOENV_REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def opened(browser: Any, path: Path) -> tuple[Any, float, float]:
    """A new tab on the page once its first rows are shown; the seconds that took from the
    start of the navigation, as the page measured them and as seen from here. The page must
    raise no error and request nothing but itself (and its inline images)."""
    tab = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    tab.on("console", lambda message: message.type == "error" and errors.append(message.text))
    tab.on(
        "request",
        lambda r: r.url.startswith(("data:", path.as_uri())) or errors.append(f"fetched {r.url}"),
    )
    start = time.perf_counter()
    tab.goto(path.as_uri())
    tab.wait_for_function("window.telcoenvViewer && window.telcoenvViewer.ready", timeout=30_000)
    seen = time.perf_counter() - start
    assert not errors, errors
    return tab, tab.evaluate("window.telcoenvViewer.firstRowsMs") / 1000, seen


def column(tab: Any, key: str) -> list[str]:
    """The texts of one column of the rows shown."""
    index = tab.eval_on_selector_all(
        "#episode-head th", f"ths => ths.findIndex(th => th.dataset.key === '{key}')"
    )
    return tab.eval_on_selector_all(
        "tr.episode", f"rows => rows.map(r => r.children[{index}].textContent)"
    )


def count(tab: Any) -> str:
    return tab.text_content("#count")


def filtered(tab: Any, key: str, value: str) -> None:
    tab.select_option(f"select[data-filter={key}]", value)


def first_transcript(tab: Any) -> Any:
    """Open the first row shown; its transcript, once built."""
    tab.locator("tr.episode").first.click()
    detail = tab.locator("tr.transcript").first
    detail.locator(".episode-detail").wait_for()
    return detail


@pytest.mark.slow
def test_the_page_filters_and_opens_transcripts(browser, page, records, tmp_path):
    tab, _, _ = opened(browser, page)
    tab.screenshot(path=tmp_path / "top.png", full_page=False)
    total = sum(map(len, records.values()))
    assert count(tab) == f"{total} of {total} episodes"
    assert tab.locator("#tables table").count() >= 6 and tab.locator("#plot-list img").count() == 5

    random = len(records["random"])
    filtered(tab, "run", "random")
    assert column(tab, "run") == ["random"] * random
    filtered(tab, "lang", "ar")
    assert set(column(tab, "lang")) == {"ar"} and count(tab) == f"{random // 2} of {total} episodes"
    filtered(tab, "run", "")
    filtered(tab, "lang", "")
    filtered(tab, "status", "failed")
    assert set(column(tab, "run")) == {"crashing"} and set(column(tab, "status")) == {"failed"}
    filtered(tab, "status", "")
    filtered(tab, "intent", "PCI_COLLISION")
    assert set(column(tab, "intent")) == {"PCI_COLLISION"}
    filtered(tab, "intent", "")
    tab.click("#add-condition")  # SAS >= 1 by default
    perfect = sum(r["status"] == "ok" and r["sas"] == 1 for rows in records.values() for r in rows)
    assert set(column(tab, "sas")) == {"1.000"} and len(column(tab, "sas")) == perfect
    tab.select_option(".condition .op", "<")
    assert "1.000" not in column(tab, "sas") and len(column(tab, "sas")) == total - perfect
    tab.click(".condition button")

    filtered(tab, "run", "oracle")
    filtered(tab, "intent", "BEAM_MISALIGNMENT")
    filtered(tab, "lang", "en")
    oracle = next(
        r for r in records["oracle"] if r["intent"] == "BEAM_MISALIGNMENT" and r["language"] == "en"
    )
    trace = EpisodeTrace.model_validate_json(oracle["trace"])
    detail = first_transcript(tab)
    text = detail.text_content()
    assert trace.problem_statement in text and "step 1 · coverage_map" in text
    area = trace.gold_chain[0].arguments["area"]
    assert area in detail.locator("pre.arguments").first.text_content()
    written = json.loads(trace.actions[1].observation)  # optimize_cell's output
    change = written["changes"][0]
    cells = detail.locator("table.changes tbody tr").first.locator("td").all_text_contents()
    before, after = json.dumps(change["old"]), json.dumps(change["new"])
    assert cells == [
        "step 2 optimize_cell",
        written["cell_id"],
        change["parameter"],
        before,
        after,
        "",
    ]
    assert "Nothing lost" in text and "✓ no collateral change" in text
    # The outcome, its milestones (required or optional) and minefields, as graded.
    outcome = detail.locator("ul.outcome li").all_text_contents()
    assert "✓ submitted" in outcome and "✓ diagnosed (label)" in outcome
    milestones = detail.locator("ul.milestones li").all_text_contents()
    assert milestones and all(m.startswith("✓") for m in milestones)
    assert any(m.endswith("(optional)") for m in milestones)
    assert detail.locator("ul.minefields li").all_text_contents() == [
        "✓ avoided: changed a cell the engineer did not report"
    ]
    names = detail.locator("table.metrics th").all_text_contents()
    values = detail.locator("table.metrics td").all_text_contents()
    metrics = dict(zip(names, values, strict=True))
    assert (metrics["SAS"], metrics["ARGS"], metrics["IRA"]) == ("1.000", "1.000", "-")
    output = detail.locator("details.output").first  # a long output starts folded
    assert output.locator("pre").count() == 0
    output.locator("summary").click()
    servers = json.loads(trace.actions[0].observation)["servers"]
    assert all(f'"{server}"' in output.locator("pre").text_content() for server in servers)
    detail.screenshot(path=tmp_path / "transcript.png")

    filtered(tab, "run", "random")
    tab.locator("tr.episode").first.click()  # closes the oracle's, opens random's
    why = tab.locator("tr.transcript ul.why").first.text_content()
    assert "MSC" in why and "gold step" in why


@pytest.mark.slow
def test_html_an_agent_wrote_is_shown_as_text(browser, page):
    tab, _, _ = opened(browser, page)
    filtered(tab, "run", "html")
    detail = first_transcript(tab)
    assert detail.locator(".turn.agent").first.text_content().endswith(f"Hello {PAYLOAD}")
    assert PAYLOAD in detail.locator(".call .head").first.text_content()
    assert PAYLOAD in detail.locator("table.submission").text_content()
    assert tab.evaluate("window.__xss") is None
    assert tab.locator("main img").count() == tab.locator("#plot-list img").count()
    assert tab.locator("script").count() == 2


def synthetic(records: dict[str, list[dict[str, Any]]], total: int) -> dict[str, list[dict]]:
    """``total`` episodes made of those the agents played to the end, each a copy with its own
    run, tier, sample and key (consecutive episodes are different evaluated episodes)."""
    played = [r for rows in records.values() for r in rows if r["status"] == "ok"]
    runs: dict[str, list[dict]] = {f"agent-{i}": [] for i in range(3)}
    for i in range(total):
        base = played[i % len(played)]
        run = f"agent-{i % 3}"
        tier = ("guided", "symptom", "noisy")[i // 3 % 3]
        copy = {**base, "sample_index": i, "key": f"{base['key']}|{i}", "difficulty": tier}
        runs[run].append(copy)
    return runs


@pytest.mark.slow
def test_ten_thousand_episodes_open_in_under_three_seconds(browser, records, tmp_path):
    path = tmp_path / "big.html"
    path.write_text(render_page(page_data(synthetic(records, 10_000))), encoding="utf-8")
    tab, measured, seen = opened(browser, path)
    size = path.stat().st_size / 1e6
    print(f"\n10,000 episodes ({size:.1f} MB): first rows {measured:.2f} s ({seen:.2f} s seen)")
    assert measured < 3.0
    assert count(tab) == "10,000 of 10,000 episodes" and tab.locator("tr.episode").count() == 100
    filtered(tab, "tier", "noisy")
    assert set(column(tab, "tier")) == {"noisy"} and count(tab).startswith("3,333 of")
    tab.click("#pager-top .last")
    tab.locator("tr.episode").last.click()
    tab.locator("tr.transcript .episode-detail").wait_for()
    assert "Why it lost" in tab.locator("tr.transcript").text_content()
