"""Repeated plays of each episode (``evaluate --repeats K``) and their report: pass^k, pass@k,
verdict flips and bootstrap intervals; resume, extension and older databases."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import sqlite3
import zlib
from collections import defaultdict
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from telcoenv.agents import OracleAgent, RandomAgent
from telcoenv.cli import main
from telcoenv.errors import RunMismatchError, TelcoEnvError
from telcoenv.evaluation.html_report import markdown_tables
from telcoenv.evaluation.report import (
    BOOTSTRAP_RESAMPLES,
    build_report,
    pass_at_k,
    pass_hat_k,
    render,
    repeat_stats,
    repeats_report,
)
from telcoenv.evaluation.runner import RunConfig, build_grid, evaluate, run_settings
from telcoenv.evaluation.store import ResultStore
from tests.conftest import first_release_results, result_store

HERE = "tests.evaluation.test_repeats"
# Two beam-misalignment blueprints x 2 samples, English: four tasks.
GRID = build_grid(["beam_misalignment"], samples=2, languages=("en",))
TASKS = len(GRID)


class CoinOracle(OracleAgent):
    """The oracle, except that in about half its plays it submits at once (unresolved): which
    plays, it draws from the episode and the repeat, as the random agent does."""

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        super().reset(observation, info)
        entropy = [zlib.crc32(info["episode_id"].encode()), int(info.get("repeat") or 0)]
        if np.random.default_rng(entropy).random() < 0.5:
            self._plan = []

    async def aact(self, observation: str, info: dict[str, Any]) -> Any:
        await asyncio.sleep(0)
        return self.act(observation, info)


def _record(intent: str, sample: int, resolved: bool, repeat: int | None) -> dict[str, Any]:
    """A stored episode as ``ResultStore.records`` gives it, with what the report reads."""
    return {
        "intent": intent, "category": "C", "domain": "network", "difficulty": None,
        "blueprint_id": "B", "sample_index": sample, "language": "en", "intent_list": True,
        "status": "ok", "resolved": resolved, "repeat": repeat, "embedder": None,
        "predicted_chain": ["oss_query"], "gold_chain": ["oss_query"],
    }  # fmt: skip


def _cli(db: str, run: str, agent: str, *extra: str) -> int:
    return main(
        [
            *("evaluate", "--agent", agent, "--intents", "beam_misalignment", "--samples", "2"),
            *("--lang", "en", "--embedder", "none", "--db", db, "--run", run, "--quiet", *extra),
        ]
    )


def _report(capsys: pytest.CaptureFixture[str], db: str, run: str) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["report", "--db", db, "--run", run, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)["runs"][run]


def _plays(store: ResultStore, run: str) -> dict[tuple[str, int], list[dict[str, Any]]]:
    """The stored plays of each task (blueprint, sample), in repeat order."""
    tasks: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for record in sorted(store.records([run]), key=lambda r: r["repeat"] or 0):
        tasks[record["blueprint_id"], record["sample_index"]].append(record)
    return dict(tasks)


# --- the estimators ---------------------------------------------------------------------------


def test_pass_hat_and_pass_at_k_by_hand():
    assert pass_hat_k(4, 2, 1) == pass_at_k(4, 2, 1) == 0.5
    assert pass_hat_k(4, 2, 2) == pytest.approx(1 / 6)  # C(2,2) / C(4,2)
    assert pass_at_k(4, 2, 2) == pytest.approx(5 / 6)  # 1 - C(2,2) / C(4,2)
    assert pass_hat_k(4, 2, 3) == 0.0 and pass_at_k(4, 2, 3) == 1.0
    assert pass_hat_k(3, 3, 3) == pass_at_k(3, 3, 3) == 1.0
    assert pass_hat_k(3, 0, 1) == pass_at_k(3, 0, 3) == 0.0
    assert pass_at_k(5, 1, 2) == pytest.approx(1 - 6 / 10)
    for n, c, k in [(3, 1, 4), (3, 1, 0), (2, 3, 1)]:
        with pytest.raises(ValueError, match="needs 1 <= k <= n"):
            pass_hat_k(n, c, k)
        with pytest.raises(ValueError, match="needs 1 <= k <= n"):
            pass_at_k(n, c, k)


def test_repeat_stats_average_over_tasks_with_enough_plays():
    half, always, never = [True, False, True, False], [True] * 4, [False] * 4
    stats = repeat_stats([half, always, never], 4)
    assert stats["tasks"] == 3
    assert stats["flips"] == pytest.approx(1 / 3)
    assert stats["pass_hat"][:2] == pytest.approx([(0.5 + 1) / 3, (1 / 6 + 1) / 3])
    assert stats["pass_at"][:2] == pytest.approx([(0.5 + 1) / 3, (5 / 6 + 1) / 3])
    assert stats["pass_hat"][3] == pytest.approx(1 / 3) and stats["pass_at"][3] == 2 / 3
    # A task played once counts for k = 1 only, and never as a flip.
    short = repeat_stats([[True, False], [True]], 2)
    assert short["pass_hat"] == pytest.approx([(0.5 + 1) / 2, 0.0])
    assert short["pass_at"] == pytest.approx([(0.5 + 1) / 2, 1.0])
    assert short["flips"] == 1.0
    alone = repeat_stats([[True]], 2)
    assert alone["flips"] is None and alone["flips_ci"] is None
    assert alone["pass_hat"] == [1.0, None] and alone["pass_hat_ci"] == [[1.0, 1.0], None]


def test_the_bootstrap_is_deterministic_and_each_row_its_own():
    rng = np.random.default_rng(7)
    tasks = [list(rng.random(3) < p) for p in rng.random(40)]
    first, again = repeat_stats(tasks, 3), repeat_stats(tasks, 3)
    assert first == again  # a fixed seed: the same intervals every time
    for value, (low, high) in zip(first["pass_hat"], first["pass_hat_ci"], strict=True):
        assert 0.0 <= low <= value <= high <= 1.0 and high - low > 0.05
    assert first["pass_hat"] == sorted(first["pass_hat"], reverse=True)
    assert first["pass_at"] == sorted(first["pass_at"])
    constant = repeat_stats([[True, True]] * 5, 2)
    assert constant["pass_hat_ci"] == [[1.0, 1.0]] * 2 and constant["flips_ci"] == [0.0, 0.0]
    # An intent's row depends on its own tasks only, not on the other intents beside it.
    records = [
        _record(intent, i, bool(hit), r)
        for intent, count in (("A", 30), ("Z", 9))
        for i in range(count)
        for r, hit in enumerate(rng.random(2) < 0.5)
    ]
    both = repeats_report(records)
    alone = repeats_report([r for r in records if r["intent"] == "A"])
    assert both is not None and alone is not None
    assert both["per_intent"]["A"] == alone["per_intent"]["A"] == alone["overall"]
    # Nor on the order the plays were stored in (workers store them as they finish).
    assert repeats_report(records[::-1]) == both
    assert both["ci"]["resamples"] == BOOTSTRAP_RESAMPLES and both["ci"]["seed"] == 0


def test_a_run_played_once_has_no_repeats_section():
    records = [_record("A", i, True, None) for i in range(3)]
    assert repeats_report(records) is None
    # Records without the repeat (or the task's fields) are single plays, not repeats.
    bare = [{"intent": "A", "status": "ok", "resolved": True, "language": "en"}] * 3
    assert repeats_report(bare) is None
    report = build_report({"once": records})
    assert "repeats" not in report["runs"]["once"]
    assert "pass^" not in render(report, "md") and "repeats" not in render(report, "csv")


# --- evaluate --repeats -----------------------------------------------------------------------


def _calls(store: ResultStore, run: str) -> dict[str, list[Any]]:
    """The tools each stored play called, with their arguments, by key."""
    return {
        record["key"]: [(a["tool"], a["arguments"]) for a in json.loads(record["trace"])["actions"]]
        for record in store.records([run], with_trace=True)
    }


def test_the_random_agent_plays_each_repeat_differently_and_reproducibly(tmp_path, capsys):
    store, db = result_store(tmp_path)
    assert _cli(db, "rnd", "random", "--repeats", "3") == 0
    assert "12 episodes stored now" in capsys.readouterr().out
    records = store.records(["rnd"])
    assert len(records) == len({r["key"] for r in records}) == 3 * TASKS
    plays = _plays(store, "rnd")
    assert len(plays) == TASKS
    assert all([r["repeat"] for r in task] == [0, 1, 2] for task in plays.values())
    # The environment replays the episode; the agent draws other calls in each repeat.
    episodes = defaultdict(set)
    for record in store.records(["rnd"], with_trace=True):
        trace = json.loads(record["trace"])
        task = record["blueprint_id"], record["sample_index"]
        episodes[task].add((trace["episode_id"], trace["problem_statement"]))
    assert all(len(seen) == 1 for seen in episodes.values())
    calls = _calls(store, "rnd")
    for task in plays.values():
        played = [json.dumps(calls[r["key"]]) for r in task]
        assert len(set(played)) == 3, played
    # The first play draws as before repeats existed: a run played once stores the same.
    assert _cli(db, "once", "random") == 0
    assert _calls(store, "once") == {
        task[0]["key"]: calls[task[0]["key"]] for task in plays.values()
    }
    # Reproducible: the same run in another database stores the same plays.
    other, other_db = result_store(tmp_path, "other.sqlite")
    assert _cli(other_db, "rnd", "random", "--repeats", "3") == 0
    assert _calls(other, "rnd") == calls
    repeats = _report(capsys, db, "rnd")["repeats"]
    assert repeats["k"] == 3 and repeats["tasks"] == TASKS and repeats["fewer"] == 0


def test_the_random_agent_reads_the_repeat_from_its_info():
    info = {"episode_id": "e", "tools": [], "instructions": ""}
    draws = []
    for repeat in (None, 0, 1, 2):
        agent = RandomAgent(seed=3)
        agent.reset("", info if repeat is None else {**info, "repeat": repeat})
        draws.append(agent._rng.random())
    assert draws[0] == draws[1] and len(set(draws[1:])) == 3


def test_the_oracle_never_flips_and_every_pass_k_is_one(tmp_path, capsys):
    store, db = result_store(tmp_path)
    assert _cli(db, "oracle", "oracle", "--repeats", "3") == 0
    records = store.records(["oracle"])
    assert len(records) == 3 * TASKS and all(r["resolved"] for r in records)
    repeats = _report(capsys, db, "oracle")["repeats"]
    assert repeats["k"] == 3
    for stats in (repeats["overall"], *repeats["per_intent"].values()):
        assert stats["flips"] == 0.0 and stats["flips_ci"] == [0.0, 0.0]
        assert stats["pass_hat"] == stats["pass_at"] == [1.0, 1.0, 1.0]
        assert stats["pass_hat_ci"] == [[1.0, 1.0]] * 3
    assert list(repeats["per_intent"]) == ["BEAM_MISALIGNMENT"]


def test_the_report_shows_pass_k_in_markdown_csv_json_and_the_html_tables(tmp_path, capsys):
    store, db = result_store(tmp_path)
    agent = f"{HERE}:CoinOracle"
    assert _cli(db, "coin", agent, "--repeats", "4") == 0
    assert _cli(db, "once", "oracle") == 0
    out = tmp_path / "report"
    capsys.readouterr()
    assert main(["report", "--db", db, "--run", "coin", "--run", "once", "--out", str(out)]) == 0
    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert capsys.readouterr().out == markdown + "\n"  # printed as written
    assert "## Repeats: pass^k and pass@k" in markdown
    assert (
        "| run | intent | tasks | flips | pass^1 | pass^2 | pass^3 | pass^4 | pass@2 |" in markdown
    )
    # The HTML page shows the tables of the Markdown report: this one too.
    table = next(t for t in markdown_tables(markdown) if t["title"].startswith("Repeats"))
    assert [row[:3] for row in table["rows"]] == [
        ["coin", "all", str(TASKS)],
        ["coin", "BEAM_MISALIGNMENT", str(TASKS)],
    ]  # the run played once has no row
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))["runs"]
    assert "repeats" not in report["once"]
    repeats = report["coin"]["repeats"]
    verdicts = [[r["resolved"] for r in task] for task in _plays(store, "coin").values()]
    assert repeats["overall"] == repeat_stats(verdicts, 4)
    overall = repeats["overall"]
    assert overall["flips"] > 0 and overall["pass_hat"][3] < overall["pass_at"][3]
    assert overall["pass_hat"] == sorted(overall["pass_hat"], reverse=True)
    assert overall["pass_at"] == sorted(overall["pass_at"])
    rate = sum(map(sum, verdicts)) / (4 * TASKS)
    assert overall["pass_hat"][0] == overall["pass_at"][0] == pytest.approx(rate)
    assert report["coin"]["resolved"]["en"] == pytest.approx(rate)  # pass^1: the resolve rate
    low, high = overall["pass_hat_ci"][1]
    assert table["rows"][0][5] == f"{overall['pass_hat'][1]:.3f} [{low:.3f}, {high:.3f}]"
    long = list(csv.DictReader(io.StringIO((out / "report.csv").read_text(encoding="utf-8"))))
    mine = {(r["table"], r["group"], r["metric"]): r["value"] for r in long if r["run"] == "coin"}
    assert float(mine["repeats", "", "pass^2"]) == pytest.approx(overall["pass_hat"][1])
    assert float(mine["repeats", "", "pass@4_ci_high"]) == pytest.approx(
        overall["pass_at_ci"][3][1]
    )
    assert mine["repeats", "", "tasks"] == str(TASKS)
    assert ("repeats_per_intent", "BEAM_MISALIGNMENT", "flips") in mine
    assert not any(r["table"].startswith("repeats") for r in long if r["run"] == "once")


def test_workers_and_concurrency_store_the_same_plays(tmp_path):
    store, _ = result_store(tmp_path)
    config = RunConfig(f"{HERE}:CoinOracle", {}, embedder=None, repeats=3)
    for run, options in [
        ("one", {}),
        ("workers", {"workers": 2}),
        ("inflight", {"concurrency": 3}),
    ]:
        summary = evaluate(store, run, GRID, config, **options)
        assert summary.stored == 3 * TASKS and summary.failed == 0

    def plays(run: str) -> dict[str, Any]:
        return {r["key"]: (r["repeat"], r["resolved"], r["steps"]) for r in store.records([run])}

    assert plays("one") == plays("workers") == plays("inflight")
    assert len({resolved for _, resolved, _ in plays("one").values()}) == 2  # it flips


@pytest.mark.slow  # a local Ray instance
def test_the_ray_backend_stores_the_same_plays(tmp_path):
    pytest.importorskip("ray")
    store, _ = result_store(tmp_path)
    config = RunConfig(f"{HERE}:CoinOracle", {}, embedder=None, repeats=2)
    assert evaluate(store, "ray", GRID, config, workers=2, backend="ray").stored == 2 * TASKS
    evaluate(store, "local", GRID, config)

    def plays(run: str) -> dict[str, Any]:
        return {r["key"]: (r["repeat"], r["resolved"]) for r in store.records([run])}

    assert plays("ray") == plays("local")


# --- resume, extend, older databases, refusals ------------------------------------------------


def test_an_interrupted_run_resumes_the_missing_repeats_only(tmp_path, capsys):
    store, db = result_store(tmp_path)
    config = RunConfig("random", {}, embedder=None, repeats=3)

    played: list[int] = []

    def stop_after_six(done: int, pending: int) -> None:  # called once per episode played
        played.append(done)
        if len(played) == 6:
            raise KeyboardInterrupt  # as Ctrl-C: what finished is stored

    first = evaluate(store, "r", GRID, config, progress=stop_after_six)
    assert first.interrupted and first.stored == 6
    before = _calls(store, "r")
    # Every task's first play comes before any second one: repeat 0 is played in full first.
    assert sorted(r["repeat"] for r in store.records(["r"]))[:TASKS] == [0] * TASKS
    partial = _report(capsys, db, "r")["repeats"]
    assert partial["fewer"] > 0 and partial["k"] >= 2
    capsys.readouterr()
    assert main(["report", "--db", db, "--run", "r"]) == 0
    assert "tasks have fewer than" in capsys.readouterr().out
    second = evaluate(store, "r", GRID, config)
    assert (second.stored, second.skipped) == (3 * TASKS - first.stored, first.stored)
    after = _calls(store, "r")
    assert len(after) == 3 * TASKS and all(after[key] == chain for key, chain in before.items())
    complete = evaluate(store, "r", GRID, config)
    assert (complete.stored, complete.skipped) == (0, 3 * TASKS)


def test_more_repeats_extend_a_run_and_fewer_are_refused(tmp_path, capsys):
    store, db = result_store(tmp_path)
    assert _cli(db, "r", "random", "--repeats", "2") == 0
    first = _calls(store, "r")
    capsys.readouterr()
    assert _cli(db, "r", "random", "--repeats", "3") == 0
    assert f"{TASKS} episodes stored now (0 failed), {2 * TASKS} already stored" in (
        capsys.readouterr().out
    )
    records = store.records(["r"])
    assert sorted(r["repeat"] for r in records) == sorted([0, 1, 2] * TASKS)
    after = _calls(store, "r")
    assert all(after[key] == calls for key, calls in first.items())
    assert _report(capsys, db, "r")["repeats"]["k"] == 3
    for fewer in (["--repeats", "2"], []):
        assert _cli(db, "r", "random", *fewer) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err
        assert "run 'r' plays each episode 3 times: resume it with --repeats 3 or more" in err
    # Another setting is still refused, whatever the repeats.
    with pytest.raises(RunMismatchError, match="seed: stored 0, now 1"):
        evaluate(store, "r", GRID, RunConfig("random", {}, seed=1, embedder=None, repeats=4))
    # A run played once compares as before repeats existed: no setting of its own.
    assert "repeats" not in run_settings(RunConfig("random", {}), GRID)
    assert run_settings(RunConfig("random", {}, repeats=3), GRID)["repeats"] == 3


def test_a_database_without_the_repeat_column_gets_it_and_its_rows_are_first_plays(
    tmp_path, capsys
):
    path = tmp_path / "results.sqlite"
    db = f"sqlite:///{path}"
    assert _cli(db, "r", "oracle") == 0
    with sqlite3.connect(path) as connection:  # the database as the previous telcoenv left it
        connection.execute("ALTER TABLE episodes DROP COLUMN repeat")
    store = ResultStore(db)
    records = store.records(["r"])
    assert len(records) == TASKS and all(r["repeat"] is None for r in records)
    assert "repeats" not in _report(capsys, db, "r")
    assert _cli(db, "r", "oracle", "--repeats", "2") == 0
    assert f"{TASKS} episodes stored now (0 failed), {TASKS} already stored" in (
        capsys.readouterr().out
    )
    assert sorted(r["repeat"] or 0 for r in store.records(["r"])) == [0] * TASKS + [1] * TASKS
    repeats = _report(capsys, db, "r")["repeats"]
    assert (repeats["k"], repeats["tasks"], repeats["fewer"]) == (2, TASKS, 0)
    # The first release's tables open too (and get the column).
    first_release_results(tmp_path / "first.sqlite", {"agent": "oracle"})
    assert ResultStore(f"sqlite:///{tmp_path / 'first.sqlite'}").records(["old"]) == []
    with sqlite3.connect(tmp_path / "first.sqlite") as connection:
        columns = {row[1] for row in connection.execute("PRAGMA table_info(episodes)")}
    assert "repeat" in columns


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0", "--repeats must be at least 1, got 0"),
        ("-2", "--repeats must be at least 1, got -2"),
        ("x", "--repeats must be a whole number, got 'x'"),
        ("1.5", "--repeats must be a whole number, got '1.5'"),
        ("", "--repeats must be a whole number, got ''"),
    ],
)
def test_a_bad_repeats_is_refused_in_one_line(tmp_path, capsys, value, expected):
    db = f"sqlite:///{tmp_path / 'results.sqlite'}"
    assert _cli(db, "r", "random", "--repeats", value) == 2
    err = capsys.readouterr().err
    assert err == f"telcoenv: error: {expected}\n"
    assert not (tmp_path / "results.sqlite").exists()  # refused before the store opens


def test_evaluate_refuses_repeats_that_are_not_a_positive_integer(tmp_path):
    store, _ = result_store(tmp_path)
    for repeats in (0, 2.0, True):
        config = RunConfig("random", {}, embedder=None, repeats=repeats)  # type: ignore[arg-type]
        with pytest.raises(TelcoEnvError, match="repeats must be an integer of at least 1"):
            evaluate(store, "r", GRID, config)


def test_the_key_of_a_first_play_is_the_key_before_repeats():
    spec = GRID[0]
    assert spec.repeat == 0 and not spec.key.endswith("|r0")
    assert replace(spec, repeat=2).key == f"{spec.key}|r2"
    assert replace(spec, repeat=2).reset_options() == spec.reset_options()
