"""Difficulty tiers through batch evaluation: the grid, stored results, resumed runs and the
report's per-tier figures."""

from __future__ import annotations

import sqlite3

import pytest

from telcoenv.cli import main
from telcoenv.errors import EpisodeOptionError
from telcoenv.evaluation.report import build_report, to_markdown
from telcoenv.evaluation.runner import RunConfig, build_grid, evaluate
from tests.conftest import result_store

CONFIG = RunConfig(agent="oracle", agent_options={}, embedder=None)


def test_a_guided_grid_keeps_its_keys_and_a_tier_gets_its_own():
    guided = build_grid(["pci_collision"], samples=1, languages=["en"])
    both = build_grid(["pci_collision"], 1, ["en"], difficulties=["guided", "noisy"])
    assert [s.key for s in both if s.difficulty == "guided"] == [s.key for s in guided]
    assert all(s.key.endswith("|with|noisy") for s in both if s.difficulty == "noisy")
    assert "|noisy" not in guided[0].key and len(both) == 2 * len(guided)
    with pytest.raises(EpisodeOptionError, match="bss"):
        build_grid("all", 1, ["en"], domain="bss", difficulties=["noisy"])
    with pytest.raises(EpisodeOptionError, match="no difficulties"):
        build_grid("all", 1, ["en"], difficulties=[])


def test_tiers_are_stored_and_reported_side_by_side(tmp_path):
    store, url = result_store(tmp_path)
    grid = build_grid(["pci_collision", "rlf_spike"], 2, ["en"], difficulties=["guided", "symptom"])
    summary = evaluate(store, "oracle", grid, CONFIG)
    assert summary.stored == len(grid) == 2 * 2 * 6  # two tiers, two samples, six blueprints
    records = store.records(["oracle"], with_trace=True)
    assert {r["difficulty"] for r in records} == {"guided", "symptom"}
    assert all(f'"difficulty":"{r["difficulty"]}"' in r["trace"] for r in records)
    report = build_report({"oracle": records})
    assert list(report["runs"]) == ["oracle [guided]", "oracle [symptom]"]
    for run in report["runs"].values():
        assert run["episodes"] == 12 and run["sequence"]["en"]["sas"] == 1.0
    assert "| oracle [symptom] |" in to_markdown(report)
    # Resuming with the same tiers finds everything; a guided-only run keeps its plain name.
    assert evaluate(store, "oracle", grid, CONFIG).stored == 0
    guided = build_grid(["pci_collision"], 1, ["en"])
    evaluate(store, "plain", guided, CONFIG)
    assert list(build_report({"plain": store.records(["plain"])})["runs"]) == ["plain"]


def test_results_stored_before_tiers_are_guided(tmp_path):
    store, url = result_store(tmp_path)
    evaluate(store, "old", build_grid(["pci_collision"], 1, ["en"]), CONFIG)
    path = tmp_path / "results.sqlite"
    with sqlite3.connect(path) as connection:  # as an earlier telcoenv wrote it
        connection.execute("ALTER TABLE episodes DROP COLUMN difficulty")
    store, _ = result_store(tmp_path)  # opening adds the column back, empty
    records = store.records(["old"])
    assert records and {r["difficulty"] for r in records} == {None}
    assert list(build_report({"old": records})["runs"]) == ["old"]


def test_the_cli_plays_and_reports_a_tier(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'cli.sqlite'}"
    common = ["--intents", "coverage_hole", "--samples", "1", "--lang", "ar", "--quiet"]
    assert (
        main(
            [
                "evaluate",
                "--agent",
                "oracle",
                "--embedder",
                "none",
                "--db",
                url,
                *common,
                "--difficulty",
                "guided,noisy",
            ]
        )
        == 0
    )
    assert main(["report", "--db", url, "--run", "oracle-seed0"]) == 0
    out = capsys.readouterr().out
    assert "oracle-seed0 [noisy]" in out and "oracle-seed0 [guided]" in out
    assert main(["evaluate", "--agent", "oracle", "--db", url, *common, "--difficulty", ""]) == 2
