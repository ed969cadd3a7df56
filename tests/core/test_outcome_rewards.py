"""The outcome of an episode and the rewards built on it: executed chains, no reward without a
submission, the outcome reward's parts, bounded shaping and the order invariants."""

from __future__ import annotations

import itertools
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import telcoenv
from telcoenv.errors import EpisodeOptionError
from telcoenv.metrics.scoring import EpisodeMetrics
from telcoenv.rewards import (
    RESOLVED_FLOOR,
    UNRESOLVED_CAP,
    Shaping,
    ShapingTracker,
    check_order_invariant,
    episode_rewards,
    outcome_components,
    reward_from,
)
from telcoenv.trace import ActionRecord
from tests.conftest import serving_cell


def _metrics(**fields) -> EpisodeMetrics:
    base = {
        "ira": None,
        "msc": 1.0,
        "eap": 1.0,
        "sas": 1.0,
        "ra": None,
        "resolved": True,
        "predicted_chain": [],
        "gold_chain": ["oss_query"],
        "embedder": None,
        "language": "en",
        "intent_list": True,
        "submitted": True,
        "diagnosed": True,
        "fixed": True,
        "answer": None,
        "required_steps": 1.0,
        "efficiency": 1.0,
        "format": 1.0,
        "harm": False,
        "minefield": False,
    }
    base.update(fields)
    return EpisodeMetrics(**base)


# --- the outcome reward, by hand ------------------------------------------------------------------


def test_a_perfect_resolved_episode_earns_one_by_named_parts():
    parts = outcome_components(_metrics())
    assert parts == pytest.approx(
        {
            "diagnosis": 0.2,
            "remediation": 0.4,
            "required_steps": 0.16,
            "efficiency": 0.14,
            "format": 0.10,
        }
    )
    assert sum(parts.values()) == pytest.approx(1.0)


def test_a_resolved_episode_with_every_quality_at_zero_earns_the_floor():
    parts = outcome_components(_metrics(required_steps=0.0, efficiency=0.0, format=0.0))
    assert sum(parts.values()) == pytest.approx(RESOLVED_FLOOR)


def test_a_care_episode_with_a_change_and_an_answer_splits_the_work():
    parts = outcome_components(_metrics(fixed=True, answer=True))
    assert parts["remediation"] == pytest.approx(0.2)
    assert parts["answer"] == pytest.approx(0.2)


def test_a_question_only_episode_is_paid_for_its_answer():
    parts = outcome_components(_metrics(fixed=None, answer=True))
    assert "remediation" not in parts
    assert parts["answer"] == pytest.approx(0.4)


def test_an_unresolved_episode_gets_partial_credit_for_what_it_got_right():
    # Right diagnosis, fault not fixed, half the milestones: 0.5 x (0.35 + 0 + 0.3 x 0.5).
    metrics = _metrics(resolved=False, fixed=False, required_steps=0.5)
    parts = outcome_components(metrics)
    assert parts == pytest.approx({"diagnosis": 0.175, "remediation": 0.0, "required_steps": 0.075})
    assert "efficiency" not in parts  # a shorter failure is not a better one


def test_harm_takes_half_of_the_partial_credit_back():
    metrics = _metrics(resolved=False, fixed=True, diagnosed=True, harm=True)
    parts = outcome_components(metrics)
    # 0.5 x (0.35 + 0.35 + 0.30) = 0.5, halved.
    assert sum(parts.values()) == pytest.approx(0.25)
    assert parts["harm"] == pytest.approx(-0.25)


def test_no_submission_and_minefields_earn_nothing():
    assert outcome_components(_metrics(submitted=False)) == {"no_submission": 0.0}
    assert outcome_components(_metrics(minefield=True)) == {"minefield": 0.0}


def test_a_named_reward_is_zero_without_a_submission():
    metrics = _metrics(submitted=False, resolved=False, sas=1.0)
    for spec in ("outcome", "resolved", "sas", {"sas": 0.5, "msc": 0.5}):
        assert reward_from(spec, metrics, None) == 0.0  # type: ignore[arg-type]


def test_a_trace_graded_before_outcomes_has_no_outcome_reward():
    with pytest.raises(ValueError, match="outcome"):
        outcome_components(_metrics(diagnosed=None, required_steps=None))


# --- order invariants, proven over every combination of parts ------------------------------------

_FLAGS = st.booleans()
_SHARE = st.floats(0.0, 1.0)


@st.composite
def _outcomes(draw, resolved: bool) -> EpisodeMetrics:
    task = draw(st.sampled_from(["fix", "answer", "both", "neither"]))
    fixed = None if task in ("answer", "neither") else (True if resolved else draw(_FLAGS))
    answer = None if task in ("fix", "neither") else (True if resolved else draw(_FLAGS))
    return _metrics(
        resolved=resolved,
        submitted=True if resolved else draw(_FLAGS),
        diagnosed=True if resolved else draw(_FLAGS),
        fixed=fixed,
        answer=answer,
        required_steps=draw(_SHARE),
        efficiency=draw(_SHARE),
        format=draw(_SHARE),
        harm=False if resolved else draw(_FLAGS),
        minefield=False if resolved else draw(_FLAGS),
    )


@settings(max_examples=300, deadline=None)
@given(_outcomes(resolved=True), _outcomes(resolved=False))
def test_a_resolved_episode_always_outearns_an_unresolved_one(resolved, unresolved):
    for spec in ("outcome", "resolved"):
        assert reward_from(spec, resolved, None) > reward_from(spec, unresolved, None)  # type: ignore[arg-type]
    assert reward_from("outcome", resolved, None) >= RESOLVED_FLOOR  # type: ignore[arg-type]
    assert reward_from("outcome", unresolved, None) <= UNRESOLVED_CAP  # type: ignore[arg-type]


def _record(step: int, tool: str, valid: bool = True, changed: bool | None = None) -> ActionRecord:
    return ActionRecord(
        step=step, kind="tool_call", tool=tool, valid=valid, observation="", changed=changed
    )


_RECORDS = st.lists(
    st.tuples(
        st.sampled_from(["oss_query", "kpi_timeseries", "optimize_cell", "traffic_forecast"]),
        st.booleans(),
        st.sampled_from([None, True, False]),
    ),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(_RECORDS)
def test_shaping_terms_stay_within_their_bound(records):
    shaping = Shaping()
    tracker = ShapingTracker(
        ["oss_query", "kpi_timeseries", "optimize_cell"], ["traffic_forecast"], shaping
    )
    total = 0.0
    for step, (tool, valid, changed) in enumerate(records, start=1):
        total += sum(tracker.step([_record(step, tool, valid, changed)]).values())
        assert -shaping.max_step_total - 1e-9 <= total <= shaping.max_step_total + 1e-9


@settings(max_examples=200, deadline=None)
@given(_outcomes(resolved=True), _outcomes(resolved=False), _RECORDS, _RECORDS)
def test_shaped_returns_keep_the_order(resolved, unresolved, steps_a, steps_b):
    """Whatever the steps of either episode, the resolved one's shaped return is higher."""
    shaping = Shaping()
    check_order_invariant("outcome", "shaped", shaping)

    def shaped_return(metrics, steps):
        tracker = ShapingTracker(["oss_query", "optimize_cell"], ["traffic_forecast"], shaping)
        total = sum(
            sum(tracker.step([_record(i, *step)]).values()) for i, step in enumerate(steps, 1)
        )
        bonus = shaping.resolution_bonus if metrics.resolved and metrics.submitted else 0.0
        return total + reward_from("outcome", metrics, None) + bonus  # type: ignore[arg-type]

    assert shaped_return(resolved, steps_a) > shaped_return(unresolved, steps_b)


def test_a_write_that_changed_nothing_earns_no_step_credit():
    shaping = Shaping()
    tracker = ShapingTracker(["optimize_cell"], [], shaping)
    assert tracker.step([_record(1, "optimize_cell", changed=False)]) == {}
    assert tracker.step([_record(2, "optimize_cell", changed=True)]) == {"gold_step": 0.1}


def test_shaping_that_could_reorder_episodes_is_refused():
    with pytest.raises(EpisodeOptionError, match="out-earn"):
        telcoenv.make(
            "bler_anomaly",
            embedder=None,
            reward_mode="shaped",
            shaping={"resolution_bonus": 0.0, "max_step_total": 0.25},
        )
    # The same weights with a metric reward (no order promised) are the user's choice.
    telcoenv.make(
        "bler_anomaly",
        embedder=None,
        reward="sas",
        reward_mode="shaped",
        shaping={"resolution_bonus": 0.0},
    )


# --- in episodes ---------------------------------------------------------------------------------


def test_refused_calls_are_no_steps_of_the_plan():
    """The red team's R1: the gold tool names with empty arguments used to earn SAS 1.0."""
    env = telcoenv.make("throughput_drop_dl", embedder=None, reward="sas")
    env.reset(seed=0)
    for tool in ("oss_query", "kpi_timeseries", "optimize_cell"):
        env.step({"name": tool, "arguments": {}})
    _, reward, terminated, _, info = env.step(
        {"name": "submit_resolution", "arguments": {"intent": "x", "summary": "x"}}
    )
    assert terminated and reward == 0.0
    assert info["metrics"]["sas"] == 0.0 and info["metrics"]["chain"] == "executed"
    trace = info["trace"]
    assert trace.executed_chain == []
    assert trace.attempted_chain == ["oss_query", "kpi_timeseries", "optimize_cell"]
    # The published open-loop definition is still there for re-scoring releases.
    from telcoenv.metrics.scoring import score_episode

    assert score_episode(trace, None, chain="attempted").sas == 1.0


def test_a_fix_without_the_right_diagnosis_is_not_resolved():
    """The red team's R2: recommend_param_change's advice applied, a wrong label submitted."""
    env = telcoenv.make("bler_anomaly", embedder=None, reward="resolved")
    statement, _ = env.reset(seed=1)
    cell = serving_cell(env)
    env.step({"name": "oss_query", "arguments": {"cell_id": cell, "window": "6h"}})
    env.step(
        {
            "name": "optimize_cell",
            "arguments": {"cell_id": cell, "changes": {"olla_bler_target_pct": 10}},
        }
    )
    _, reward, _, _, info = env.step(
        {
            "name": "submit_resolution",
            "arguments": {"intent": "Coverage Hole", "summary": "Tuned the link adaptation."},
        }
    )
    outcome = info["outcome"]
    assert outcome["fixed"] is True and outcome["diagnosed"] is False
    assert info["resolved"] is False and reward == 0.0
    assert any("diagnosis" in reason for reason in outcome["unresolved_because"])


def test_a_run_cut_off_by_the_budget_is_not_resolved_and_earns_no_terminal_reward():
    """The red team's R8: the gold chain, then messages until truncation."""
    env = telcoenv.make("bler_anomaly", embedder=None, max_steps=6, privileged=True)
    statement, info = env.reset(seed=1)
    chain = info["privileged"]["gold_chain"]
    for call in chain:
        env.step({"name": call["tool"], "arguments": call["arguments"]})
    reward, truncated = None, False
    while not truncated:
        _, reward, _, truncated, info = env.step("Still checking.")
    assert reward == 0.0 and info["resolved"] is False
    assert info["outcome"]["fixed"] is True and info["outcome"]["submitted"] is False
    assert info["reward_components"] == {"no_submission": 0.0}
    assert info["outcome"]["unresolved_because"][0].startswith("no submission")


def test_reward_components_add_up_to_the_reward_in_every_mode():
    from telcoenv.agents import load_agent, run_episode

    for mode in ("sparse", "shaped"):
        env = telcoenv.make("troubleshooting", embedder=None, reward_mode=mode)
        for seed in range(4):
            total, info = run_episode(env, load_agent("investigator"), seed=seed)
            rewards = episode_rewards(info["trace"], mode=mode)
            assert rewards.total == pytest.approx(total)
            assert sum(info["reward_components"].values()) == pytest.approx(rewards.per_step[-1])


def test_a_write_of_the_value_already_there_is_recorded_as_changing_nothing():
    env = telcoenv.make("bler_anomaly", embedder=None)
    statement, _ = env.reset(seed=1)
    cell = serving_cell(env)
    read, *_ = env.step({"name": "oss_query", "arguments": {"cell_id": cell, "window": "1h"}})
    tilt = json.loads(read)["configuration"]["tilt_deg"]
    env.step(
        {"name": "optimize_cell", "arguments": {"cell_id": cell, "changes": {"tilt_deg": tilt}}}
    )  # the cell's own tilt
    env.step(
        {
            "name": "optimize_cell",
            "arguments": {"cell_id": cell, "changes": {"olla_bler_target_pct": 10}},
        }
    )
    _, first, second = env.unwrapped.trace.actions
    assert first.valid and first.changed is False
    assert second.valid and second.changed is True


def test_tickets_to_teams_the_intent_hands_nothing_to_are_collateral():
    env = telcoenv.make("cell_outage_detection", embedder=None, privileged=True)
    statement, info = env.reset(seed=0)
    cell = info["privileged"]["gold_chain"][0]["arguments"]["cell_id"]
    for call in info["privileged"]["gold_chain"]:
        env.step({"name": call["tool"], "arguments": call["arguments"]})
    env.step(
        {
            "name": "create_ticket",
            "arguments": {
                "cell_id": cell,
                "team": "transport",
                "severity": "major",
                "summary": "Check it.",
            },
        }
    )
    *_, info = env.step(
        {
            "name": "submit_resolution",
            "arguments": {"intent": info["privileged"]["label"]["en"], "summary": "Escalated."},
        }
    )
    assert info["resolved"] is False
    assert [c["after"] for c in info["collateral_changes"]] == ["transport"]


@pytest.mark.parametrize(("domain_env", "agent"), [("troubleshooting", "investigator")])
def test_the_no_op_fix_never_outearns_the_honest_read_only_report(domain_env, agent):
    """An episode whose writes changed nothing earns no more, in any mode, than the same reads
    and the same report without the writes."""
    for seed, mode, reward in itertools.product(
        range(6), ("sparse", "shaped"), ("outcome", "resolved")
    ):
        traces = []
        for write in (False, True):
            env = telcoenv.make(
                "bler_anomaly", embedder=None, reward=reward, reward_mode=mode, privileged=True
            )
            _, info = env.reset(seed=seed)
            cell = info["privileged"]["gold_chain"][0]["arguments"]["cell_id"]
            env.step({"name": "oss_query", "arguments": {"cell_id": cell, "window": "6h"}})
            env.step(
                {
                    "name": "kpi_timeseries",
                    "arguments": {"cell_id": cell, "kpi": "BLER", "window": "6h"},
                }
            )
            if write:
                current = env.unwrapped.trace.actions[0].observation
                tilt = float(re.search(r'"tilt_deg":([\d.]+)', current).group(1))
                env.step(
                    {
                        "name": "optimize_cell",
                        "arguments": {"cell_id": cell, "changes": {"tilt_deg": tilt}},
                    }
                )
            *_, info = env.step(
                {
                    "name": "submit_resolution",
                    "arguments": {
                        "intent": "Block Error Rate Anomaly",
                        "summary": "BLER high; target off.",
                    },
                }
            )
            traces.append(episode_rewards(info["trace"], reward=reward, mode=mode).total)
        honest, no_op = traces
        assert no_op <= honest + 1e-9, (seed, mode, reward)
