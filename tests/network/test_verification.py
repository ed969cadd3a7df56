"""Verified resolution: the final network state decides, deterministically."""

from __future__ import annotations

import pytest

from telcoenv.agents import OracleAgent, run_episode
from telcoenv.domains.network.dynamics import FIX_TOOLS
from tests.conftest import gold_actions, make_env, play, submit


@pytest.mark.parametrize("seed", range(10))
def test_the_oracle_resolves_every_intent(catalog, seed):
    for intent in catalog.intents:
        env = make_env(intent.env_name, reward="resolved")
        reward, info = run_episode(env, OracleAgent(), seed=seed)
        assert info["resolved"] is True, (intent.key, info["verification"])
        assert reward == 1.0 and info["collateral_changes"] == []
        assert info["metrics"]["resolved"] is True


def _wrong(action: dict) -> dict:
    """A plausible wrong fix: the right tool on the wrong parameter."""
    arguments = dict(action["arguments"])
    if action["name"] == "optimize_cell":
        wrong = {"cio_db": 2} if "cio_db" not in arguments["changes"] else {"tilt_deg": 9}
        arguments["changes"] = wrong
    elif action["name"] == "optimize_slice":
        arguments["policy"] = {"max_share_pct": 90}
    elif action["name"] == "push_config":
        arguments["dry_run"] = True  # looks at the baseline, changes nothing
    return {"name": action["name"], "arguments": arguments}


def test_a_wrong_fix_or_a_missing_ticket_does_not_resolve(catalog):
    for intent in catalog.intents:
        env = make_env(intent.env_name)
        _, info = env.reset(seed=1)
        actions = gold_actions(info)
        if FIX_TOOLS & set(intent.gold_tools):
            actions = [_wrong(a) if a["name"] in FIX_TOOLS else a for a in actions]
        else:  # escalation intents: leave the ticket out
            actions = [a for a in actions if a["name"] != "create_ticket"]
        play(env, actions)
        *_, info = env.step(submit(intent.label.en))
        assert info["resolved"] is False, intent.key
        assert info["metrics"]["sas"] <= 1.0


def test_a_required_ticket_must_go_to_the_intents_team_about_the_affected_cell(catalog):
    """For the intents that need a fix and a ticket, any ticket at all passed ("ticket
    opened"): one to another team, or about a neighbour."""
    fixed_with_ticket = [
        i for i in catalog.intents if i.resolution.ticket_required and FIX_TOOLS & set(i.gold_tools)
    ]
    assert len(fixed_with_ticket) == 6
    for intent in fixed_with_ticket:
        for wrong in ("team", "cell"):
            env = make_env(intent.env_name)
            _, info = env.reset(seed=0)
            actions = gold_actions(info)
            ticket = next(a for a in actions if a["name"] == "create_ticket")["arguments"]
            if wrong == "team":
                ticket["team"] = next(
                    t for t in ("core_slicing", "field_ops") if t != ticket["team"]
                )
            else:
                ticket["cell_id"] = env.unwrapped._episode.setup.state.cell_ids[1]
            play(env, actions)
            *_, info = env.step(submit(intent.label.en))
            assert info["verification"]["checks"]["ticket opened"] is False, (intent.key, wrong)
            assert info["resolved"] is False


def test_a_change_to_an_unrelated_cell_is_collateral():
    env = make_env("beam_misalignment", reward={"sas": 0.5, "resolved": 0.5})
    _, info = env.reset(seed=2)
    neighbour = env.trace.start_state["neighbours"][0]["cell_id"]
    play(env, gold_actions(info))
    env.step(
        {"name": "optimize_cell", "arguments": {"cell_id": neighbour, "changes": {"tilt_deg": 14}}}
    )
    _, reward, *_, info = env.step(submit("Beam Misalignment"))
    assert info["resolved"] is False
    assert info["verification"]["root_cause_removed"] is True
    [change] = info["collateral_changes"]
    assert (change["object"], change["parameter"], change["after"]) == (
        f"cell:{neighbour}",
        "tilt_deg",
        14,
    )
    assert change["before"] != 14
    sas = info["metrics"]["sas"]
    assert reward == pytest.approx(0.5 * sas)  # SAS < 1 (an extra call) and not resolved


def test_parallel_environments_never_share_state():
    first, second = (make_env("load_balancing_needed") for _ in range(2))
    _, info_a = first.reset(seed=5)
    _, info_b = second.reset(seed=5)
    play(first, gold_actions(info_a))
    assert first.episode.setup.state.serving.config["mlb_threshold_pct"] == 70
    assert second.episode.setup.state.serving.config["mlb_threshold_pct"] != 70


def test_sql_like_strings_are_kept_verbatim_and_change_nothing_else():
    env = make_env("coverage_hole")
    _, info = env.reset(seed=0)
    tricky = 'Robert\'); DROP TABLE tickets;-- "quoted" ; SELECT * FROM cells'
    env.step({"name": "create_ticket", "arguments": {"summary": tricky, "severity": "minor"}})
    assert env.episode.setup.state.tickets()[0]["summary"] == tricky
    *_, info = env.step(submit("Coverage Hole", tricky))
    assert info["trace"].submission.summary == tricky
    assert info["collateral_changes"] == []


def test_environments_in_threads_match_sequential_runs():
    from concurrent.futures import ThreadPoolExecutor

    def play(seed: int) -> tuple:
        env = make_env()
        _, info = run_episode(env, OracleAgent(), seed=seed)
        trace = info["trace"]
        return trace.model_dump_json(), info["resolved"]

    sequential = [play(seed) for seed in range(12)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        threaded = list(pool.map(play, range(12)))
    assert threaded == sequential and all(resolved for _, resolved in threaded)


def test_changes_can_require_the_engineers_approval():
    env = make_env("load_balancing_needed", require_approval=True)
    _, info = env.reset(seed=3)
    audit, change = gold_actions(info)
    env.step(audit)
    refused, *_ = env.step(change)
    assert '"approval_required"' in refused
    assert env.episode.setup.state.serving.config["mlb_threshold_pct"] != 70  # nothing changed
    env.step("May I lower the load-balancing threshold?")
    applied, *_ = env.step(change)
    assert '"status":"applied"' in applied
    again, *_ = env.step(change)  # one approval per change
    assert '"approval_required"' in again
    _, info = env.reset(seed=3, options={"require_approval": False})
    assert info["require_approval"] is False


@pytest.mark.parametrize("lang", ["en", "ar"])
def test_the_oracle_asks_for_approval_and_still_resolves(catalog, lang):
    for intent in catalog.intents:
        env = make_env(intent.env_name, require_approval=True, lang=lang)
        reward, info = run_episode(env, OracleAgent(), seed=1)
        assert info["resolved"] and reward == 1.0, intent.key
        assert info["predicted_chain"] == list(intent.gold_tools)  # messages are not tools


def test_the_fault_is_present_at_the_start_of_every_episode(catalog):
    """At reset the root cause is there: no fault parameter already sits inside the band the
    verification accepts. The ping-pong blueprints read their faulty time-to-trigger out of
    80-320 ms against an accepted 320-1,024 ms, so one episode in ten (3 of seeds 0-29) started
    with the cause removed, and submitting a diagnosis without any change resolved it (the
    catalogue now refuses such a range: test_catalog.py)."""
    from telcoenv.domains.network.verification import _root_cause_checks, ticket_only

    for intent in catalog.intents:
        if ticket_only(intent) or intent.fault.target == "config":
            continue
        env = make_env(intent.env_name)
        for seed in range(30):
            env.reset(seed=seed)
            setup = env.unwrapped.episode.setup
            state, truth = setup.state, setup.truth
            checks = _root_cause_checks(intent, state, state.configuration(), truth.fix)
            assert not all(checks.values()), (intent.key, seed, checks)
        env.close()
