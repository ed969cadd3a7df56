"""The reward audit: every exploit policy scores below the honest baselines by the documented
margins in every reward mode, on both domains and every tier; correct work said in other words
is accepted; ``telcoenv audit`` prints the table for any environment, plug-in domains included.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from telcoenv.agents import load_agent
from telcoenv.audit import MARGINS, MODES, AuditReport, Row, _verdict, audit, play, play_together
from telcoenv.cli import main
from tests.conftest import PLUGINS

#: What the issue asks: at least 50 seeded episodes per policy, domain and tier.
SEEDS = 50


def _check(report: AuditReport) -> None:
    failed = [row for row in report.rows if not row.passes]
    assert not failed, report.table()
    kinds = {row.kind for row in report.rows}
    assert kinds == {"honest", "exploit", "correct work"}


@pytest.mark.slow
@pytest.mark.parametrize("env_id", ["troubleshooting", "customer_care"])
def test_every_exploit_is_refused_on_every_tier(env_id):
    report = audit(env_id, seeds=SEEDS)
    _check(report)
    tiers = {row.tier for row in report.rows}
    assert tiers == (
        {"guided", "symptom", "noisy"} if env_id == "troubleshooting" else {"guided", "symptom"}
    )
    # Every exploit, not only on average: none resolves more than a few episodes, and the
    # honest baselines resolve nearly all. A constant answer after the usual reads resolves
    # where the constant happens to be the data's answer: no answer may be that in more than
    # half of an intent's episodes (tests/bss/test_answer_spread.py).
    for row in report.rows:
        if row.kind == "honest":
            assert row.resolved >= 0.9, row
        elif row.policy == "reads, then a constant answer":
            assert row.resolved <= 0.5, row
        elif row.kind == "exploit":
            assert row.resolved <= 0.1, row


@pytest.mark.parametrize("env_id", ["troubleshooting", "customer_care"])
def test_the_audit_in_brief(env_id):
    """A few seeds of the guided tier, every policy (the whole audit is the slow test above)."""
    _check(audit(env_id, seeds=6, tiers=["guided"]))


def test_playing_seed_by_seed_gives_each_agent_the_episodes_it_plays_alone():
    """The audit plays every policy's episode of a seed before the next seed (the episodes of a
    seed share its world); each agent's traces are those it gets playing alone."""
    factories = [lambda: load_agent("investigator"), lambda: load_agent("heuristic")]
    together = play_together("troubleshooting", factories, 3, tier="symptom")
    for factory, traces in zip(factories, together, strict=True):
        alone = play("troubleshooting", factory, 3, tier="symptom")
        assert [t.model_dump(exclude={"episode_id"}) for t in traces] == [
            t.model_dump(exclude={"episode_id"}) for t in alone
        ]
    assert [t.seed for t in together[0]] == [0, 1, 2]


def test_a_verdict_names_the_mode_an_exploit_pays_in():
    honest = Row("honest agent", "honest", "guided", 10, 1.0, {m: 1.0 for m in MODES})
    close = {"outcome": 1.0 - MARGINS["outcome"] / 2, "shaped": 0.0, "resolved": 0.0}
    exploit = Row("cheat", "exploit", "guided", 10, 0.0, close)
    assert _verdict(exploit, [honest]) == "PAYS in outcome"
    far = Row("cheat", "exploit", "guided", 10, 0.0, dict.fromkeys(MODES, 0.0))
    assert _verdict(far, [honest]) == "refused"
    reworded = Row("synonym diagnosis / honest agent", "correct work", "guided", 10, 0.5, {})
    assert _verdict(reworded, [honest]) == "REFUSED"


def test_the_command_prints_the_table_and_exits_by_the_verdict(capsys):
    code = main(["audit", "--env", "bler_anomaly", "--seeds", "2", "--tiers", "guided", "--quiet"])
    out = capsys.readouterr().out
    assert code == 0 and "| blind fix | exploit | guided | 2 |" in out
    assert (
        main(
            [
                "audit",
                "--env",
                "bler_anomaly",
                "--seeds",
                "1",
                "--format",
                "json",
                "--tiers",
                "guided",
                "--quiet",
            ]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert data["margins"] == MARGINS and {r["kind"] for r in data["rows"]} >= {"honest"}


def test_the_command_audits_the_model_asked_for(capsys):
    """``--network-model blueprint`` audits the blueprint model, by default the network model
    (their episodes differ: the audit's own modal answers and traces come from the model)."""
    argv = ["audit", "--env", "rlf_spike", "--seeds", "1", "--tiers", "guided", "--quiet"]
    assert main([*argv, "--format", "json"]) == 0
    physical = json.loads(capsys.readouterr().out)
    assert main([*argv, "--network-model", "blueprint", "--format", "json"]) == 0
    blueprint = json.loads(capsys.readouterr().out)
    assert (physical["model"], blueprint["model"]) == ("physical", "blueprint")
    honest = {r["policy"]: r["resolved"] for r in physical["rows"] if r["kind"] == "honest"}
    assert honest["oracle"] == 1.0


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--env", "bler_anomaly", "--seeds", "0"], "--seeds must be at least 1"),
        (
            ["--env", "customer_care", "--domain", "bss", "--network-model", "blueprint"],
            "--network-model applies to the network domain only",
        ),
        (["--env", "no_such_env", "--seeds", "1"], "unknown telcoenv environment"),
        (["--env", "bler_anomaly", "--seeds", "1", "--tiers", "hard"], "difficulty"),
        (["--env", "bler_anomaly", "--seeds", "1", "--honest", "nobody"], "unknown agent"),
    ],
)
def test_a_mistake_is_one_line(argv, says, capsys):
    assert main(["audit", *argv, "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err


@pytest.mark.slow  # a telcoenv subprocess with the plug-in on its path
def test_a_plug_in_domain_is_audited_and_its_holes_found():
    """The test plug-in (one ONT to reboot, no milestones) is audited with the generic exploits
    and the oracle as the honest reference; writing everything there is to write on the one id
    the subscriber names does the task, and the audit says so (exit 1)."""
    env = {**os.environ, "PYTHONPATH": str(PLUGINS)}
    code = "import sys; from telcoenv.cli import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "audit",
            "--env",
            "fiber_access",
            "--seeds",
            "5",
            "--format",
            "json",
            "--quiet",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 1, done.stderr[-2000:]
    assert done.stderr.count("\n") == 1 and "shotgun writes (guided): PAYS" in done.stderr
    data = json.loads(done.stdout)
    verdicts = {row["policy"]: row["verdict"] for row in data["rows"]}
    assert data["domain"] == "fiber" and verdicts["oracle"] == ""
    assert verdicts["name copy"] == verdicts["never submit"] == "refused"
    assert verdicts["shotgun writes"].startswith("PAYS")
