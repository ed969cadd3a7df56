"""Correct results in batch evaluation (issue 15, item 7): a failed episode keeps its steps and
the verdict on the state it reached, the report counts a failure 0 only on the metrics that apply
to its intent, and ``evaluate`` refuses an agent on a domain it does not play.

The agents below are loaded by the runner as ``tests.evaluation.test_correct_results_runs:<Class>``.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from telcoenv.agents import OracleAgent, UnsupportedDomainError
from telcoenv.cli import main
from telcoenv.evaluation.report import applicable_metrics, build_report, render
from telcoenv.evaluation.runner import EpisodeSpec, RunConfig, build_grid, evaluate
from tests.conftest import result_store
from tests.embedders import HashEmbedder

HERE = "tests.evaluation.test_correct_results_runs"


class CrashBeforeSubmit(OracleAgent):
    """The oracle's whole chain, then the model server fails instead of submitting."""

    def act(self, observation: str, info: dict[str, Any]) -> Any:
        action = super().act(observation, info)
        if isinstance(action, dict) and action["name"] == "submit_resolution":
            raise RuntimeError("the model server went away")
        return action


class HangBeforeSubmit(OracleAgent):
    """The oracle's whole chain, then it hangs past the episode timeout."""

    def act(self, observation: str, info: dict[str, Any]) -> Any:
        action = super().act(observation, info)
        if isinstance(action, dict) and action["name"] == "submit_resolution":
            time.sleep(30)
        return action


def _one_per_intent(intents: list[str], languages: tuple[str, ...]) -> list[EpisodeSpec]:
    """The first blueprint of each intent, one sample, in each language."""
    grid = build_grid(intents, samples=1, languages=languages)
    return list({(s.intent, s.language): s for s in grid}.values())


def _config(agent: str, embedder: Any = None, timeout: float = 60.0) -> RunConfig:
    return RunConfig(f"{HERE}:{agent}", {}, embedder=embedder, episode_timeout=timeout)


# Fixed in the OSS, escalated in a ticket, and a customer-care request: each state shows the
# fault fixed, and none is resolved (no submission, so no diagnosis).
EXPECTED_FIXED = {"LOAD_BALANCING_NEEDED": True, "CELL_OUTAGE_DETECTION": True, "PLAN_CHANGE": True}


def test_a_failed_episode_keeps_its_steps_and_the_verdict_on_its_final_state(tmp_path):
    grid = _one_per_intent([k.lower() for k in EXPECTED_FIXED], ("en", "ar"))
    store, _ = result_store(tmp_path)
    summary = evaluate(store, "r", grid, _config("CrashBeforeSubmit"))
    assert (summary.stored, summary.failed) == (len(grid), len(grid)) == (6, 6)
    for record in store.records(["r"], with_trace=True):
        trace = json.loads(record["trace"])
        assert "RuntimeError: the model server went away" in record["error"]
        assert record["steps"] == len(trace["actions"]) > 0
        assert trace["truncated"] is True and trace["submission"] is None
        assert record["resolved"] is trace["verification"]["resolved"] is False
        assert trace["verification"]["fixed"] is EXPECTED_FIXED[record["intent"]], record["key"]
        assert trace["outcome"]["unresolved_because"][0].startswith("no submission")
        assert record["msc"] is None  # the metrics of a failure stay unscored (0 in reports)


@pytest.mark.slow  # waits out a one-second episode timeout
def test_a_timed_out_episode_keeps_its_steps_and_verdict(tmp_path):
    [spec] = _one_per_intent(["load_balancing_needed"], ("ar",))
    store, _ = result_store(tmp_path)
    summary = evaluate(store, "r", [spec], _config("HangBeforeSubmit", timeout=1.0))
    assert summary.failed == 1
    [record] = store.records(["r"], with_trace=True)
    assert record["error"].startswith("timeout: episode exceeded 1 s")
    # neighbor_audit, the fix, and the oracle's re-measurement after it
    assert record["steps"] == len(json.loads(record["trace"])["actions"]) == 3
    # The fix was applied before the agent hung: fixed, never submitted, not resolved.
    assert record["resolved"] is False
    assert json.loads(record["trace"])["verification"]["fixed"] is True


def test_the_report_counts_a_failure_zero_only_on_metrics_that_apply(tmp_path):
    grid = _one_per_intent(["beam_misalignment", "bill_shock", "plan_change"], ("en", "ar"))
    store, _ = result_store(tmp_path)
    evaluate(store, "r", grid, _config("CrashBeforeSubmit", embedder=HashEmbedder()))
    report = build_report({"r": store.records(["r"])})["runs"]["r"]
    network, question, request = (
        report["per_intent"][k] for k in ("BEAM_MISALIGNMENT", "BILL_SHOCK", "PLAN_CHANGE")
    )
    assert network["answer"] is None and network["ra"] == network["ira"] == 0.0
    assert question["answer"] == 0.0 and question["ra"] is None  # a question left unanswered
    assert request["answer"] is None and request["ra"] is None
    assert report["care"]["ar"]["answer"] == 0.0  # over the question only
    row = next(
        line
        for line in render(build_report({"r": store.records(["r"])}), "md").splitlines()
        if line.startswith("| BEAM_MISALIGNMENT | r |")
    )
    assert row.split(" | ")[9] == "-"  # ANSWER: no question in a network episode


def test_applicability_is_that_of_a_finished_episode():
    network, question = {"ira", "ra", "args", "resolved"}, {"ira", "args", "answer", "resolved"}
    for lang in ("en", "ar"):
        assert applicable_metrics("network", "COVERAGE_HOLE", lang) == network
        assert applicable_metrics("bss", "BILL_SHOCK", lang) == question
        assert "answer" not in applicable_metrics("bss", "PLAN_CHANGE", lang)
    # A domain not installed here: every metric counts 0, as before.
    assert "answer" in applicable_metrics("nowhere", "X", "en")


# --- agents and domains -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("agent", "where"),
    [
        ("heuristic", ["--domain", "bss"]),
        ("heuristic", ["--domain", "all"]),
        ("investigator", ["--domain", "bss"]),
        ("investigator", ["--intents", "bill_shock"]),
    ],
)
def test_evaluate_refuses_an_agent_on_a_domain_it_does_not_play(tmp_path, capsys, agent, where):
    db = tmp_path / "results.sqlite"
    argv = ["evaluate", "--agent", agent, *where, "--samples", "1", "--db", f"sqlite:///{db}"]
    assert main([*argv, "--quiet"]) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    assert lines[0].startswith(f"telcoenv: error: agent '{agent}' plays only the network domain")
    assert "bss" in lines[0] and not captured.out
    assert not db.exists()  # refused before anything ran or was stored


def test_an_agent_for_every_domain_runs_customer_care(tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'results.sqlite'}"
    argv = ["evaluate", "--agent", "oracle", "--domain", "bss", "--intents", "bill_shock"]
    argv += ["--samples", "1", "--lang", "ar", "--embedder", "none", "--db", db, "--quiet"]
    assert main(argv) == 0, capsys.readouterr().err


def test_the_evaluate_api_refuses_before_storing_a_run(tmp_path):
    store, _ = result_store(tmp_path)
    grid = build_grid(["plan_change"], samples=1, languages=("en",))
    with pytest.raises(UnsupportedDomainError, match="not bss"):
        evaluate(store, "r", grid, RunConfig("heuristic", {}, embedder=None))
    assert store.runs() == []
