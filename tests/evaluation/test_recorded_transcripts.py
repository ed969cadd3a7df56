"""Replies a real small model gave (tests/fixtures/llm_transcripts, recorded by
benchmarks/bench_local_llm.py from Qwen2.5-Coder-1.5B-Instruct behind a llama.cpp server),
replayed through the OpenAI agent and the environment: calls written as text, doubled braces,
empty replies, example ids copied from the specs, Arabic replies with Latin ids. The replies
are fixed; what is asserted is what the library does with them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import telcoenv
from telcoenv.agents import run_episode
from telcoenv.agents.openai_agent import OpenAIAgent, arguments_call, calls_in_text
from telcoenv.feedback import not_their_tool_reply, silence_reply
from tests.conftest import ARABIC, error_of
from tests.stub_openai import StubServer, conversation_error

FIXTURES = Path(__file__).parents[1] / "fixtures" / "llm_transcripts"
TRANSCRIPTS = {path.stem: json.loads(path.read_text("utf-8")) for path in FIXTURES.glob("*.json")}


def replay(name: str):
    """Play the recorded episode again: its replies, in order, through agent and env."""
    recorded = TRANSCRIPTS[name]
    server = StubServer(replays={name: recorded["replies"]})
    try:
        env = telcoenv.make(
            recorded["env"],
            lang=recorded["lang"],
            embedder=None,
            max_steps=recorded["max_steps"],
            tool_format=recorded["tool_format"],
        )
        agent = OpenAIAgent(f"replay:{name}", base_url=server.base_url, empty_retries=0)
        _, info = run_episode(env, agent, seed=recorded["seed"])
        return info, agent, list(server.requests)
    finally:
        server.close()


def test_the_fixtures_are_real_recordings():
    assert len(TRANSCRIPTS) >= 4
    for recorded in TRANSCRIPTS.values():
        assert "Qwen2.5-Coder-1.5B-Instruct" in recorded["source"] and recorded["replies"]


@pytest.mark.parametrize("name", sorted(TRANSCRIPTS))
def test_every_recorded_call_is_run_and_the_conversation_stays_valid(name):
    info, agent, requests = replay(name)
    trace = info["trace"]
    assert trace.terminated or trace.truncated
    assert all(conversation_error(r["messages"]) is None for r in requests)
    tools = {t["function"]["name"] for t in info["tools"]} if "tools" in info else None
    names = tools or {t["function"]["name"] for t in requests[0]["tools"]}
    replies = TRANSCRIPTS[name]["replies"][: len(requests)]
    written = [
        calls_in_text(r.get("content") or "", "auto", names)
        or arguments_call(r.get("content") or "", requests[0]["tools"])
        for r in replies
    ]
    expected = sum(len(w["tool_calls"]) for w in written if w)
    assert agent.usage["text_tool_calls"] == expected > 0
    assert sum(a.tool is not None for a in trace.actions) == expected


def test_the_id_copied_before_issue_15_is_no_longer_the_callers():
    """Before issue 15 the model copied the spec's example id C000001, which was the caller's
    own; now it is no id of the episode, which the error says, naming where ids come from (the
    empty ``phone`` of those calls is left out by the agent)."""
    info, agent, _ = replay("before_contact_update_en")
    trace = info["trace"]
    assert "C000001" not in json.dumps(trace.start_state)
    errors = [json.loads(a.observation)["error"] for a in trace.actions if not a.valid]
    assert errors and all(e["type"] == "not_found" and "C000001" in e["message"] for e in errors)
    assert all("get_customer" in e["next"] for e in errors)
    assert agent.usage["dropped_arguments"] >= len(errors)


def test_doubled_braces_and_two_calls_in_one_text_then_silence():
    info, agent, _ = replay("compact_beam_misalignment_en")
    trace = info["trace"]
    assert trace.attempted_chain[:3] == [
        "complaint_trend_analysis",
        "create_ticket",
        "optimize_cell",
    ]
    silent = [a for a in trace.actions if a.error_kind == "empty_action"]
    assert len(silent) == agent.usage["empty_replies"] > 0
    assert all(a.observation == silence_reply("en", "engineer") for a in silent)


def test_an_arabic_submission_written_as_a_bare_object_ends_the_episode():
    info, *_ = replay("compact_bill_shock_ar")
    trace = info["trace"]
    first = json.loads(trace.actions[0].observation)["error"]
    # The model made up the account id: refused for its form, told where the id comes from.
    assert first["type"] == "invalid_arguments" and ARABIC.search(first["next"])
    assert "Billing account id from get_customer" in first["message"]
    assert trace.terminated and trace.submission.intent == "تفسير ارتفاع الفاتورة"
    assert info["metrics"]["ira"] is None and info["metrics"]["answer"] is False


def test_an_arabic_episode_runs_the_fenced_calls():
    info, *_ = replay("before_beam_misalignment_ar")
    trace = info["trace"]
    assert trace.predicted_chain[:2] == ["coverage_map", "kpi_timeseries"]
    assert all(a.valid for a in trace.actions if a.tool == "coverage_map")


def test_calls_written_as_function_elements_are_run():
    """The model wrote every call of this Arabic episode as ``<function name=... arguments=...
    />`` inside ``<tools>``; they went to the engineer as 12 messages and no tool ran. Now its
    first two replies (20 calls) run until the 12 steps are used, and a KPI family it made up
    gets the environment's own error."""
    info, agent, _ = replay("compact_beam_misalignment_ar_function_tags")
    trace = info["trace"]
    assert trace.attempted_chain[:3] == [
        "complaint_trend_analysis",
        "coverage_map",
        "kpi_timeseries",
    ]
    assert agent.usage["text_tool_calls"] == 20 and agent.usage["requests"] == 2
    ran = [a for a in trace.actions if a.kind == "tool_call"]
    assert len(ran) == 12 and trace.truncated
    assert sum(a.valid for a in ran) == 11
    (refused,) = [json.loads(a.observation)["error"] for a in ran if not a.valid]
    assert refused["type"] == "invalid_arguments" and "'SINR' is not one of" in refused["message"]


def test_submissions_written_as_prose_are_refused_with_how_to_submit():
    """The model wrote "submit_resolution: The intent is ..." in reply after reply, and each
    went to the engineer, who answered as to a message. Now each is refused as a submission
    written as text, the engineer hears none of them, and the error says how to submit."""
    info, _, requests = replay("compact_pci_collision_en_prose_submission")
    trace = info["trace"]
    prose = [a for a in trace.actions if "'submit_resolution: The intent" in str(a.raw)]
    assert len(prose) == 10
    for action in prose:
        error = json.loads(action.observation)["error"]
        assert error["type"] == "submission_as_text" and not action.valid
        assert "call the tool submit_resolution" in error["next"]
    # Only the reply that echoed a tool result reached the engineer (the replay does not sample
    # again).
    assert info["engineer_messages"] == 1 and trace.submission is None
    assert trace.truncated and not trace.terminated
    # The refusal reaches the model as the user turn after its reply.
    last = requests[-1]["messages"]
    assert any("submission_as_text" in str(m.get("content")) for m in last if m["role"] == "user")


def test_asked_to_call_a_tool_it_does_not_name_the_engineer_says_the_tools_are_the_agents():
    """Run s11a: "please call the tool with the following arguments: {...}", 9 of the model's
    18 replies, was answered as a question about the time window ("Please look at the last 12
    hours."), which the model asked about again. Replayed, the engineer says it has no tools."""
    info, _, _ = replay("compact_pci_collision_en_unnamed_tool")
    handed_over = [
        a for a in info["trace"].actions if "please call the tool with" in str(a.raw).casefold()
    ]
    assert len(handed_over) == 5  # of the 12 replies the budget plays
    assert all(a.valid and a.observation == not_their_tool_reply("", "en") for a in handed_over)


def test_the_empty_phone_left_out_the_recorded_replies_reach_the_identity_check():
    """Run s8d: the model found the customer and called update_contact with the right id and
    address, always with ``"phone": ""`` (refused three times). Replayed through today's agent,
    which leaves an optional argument sent empty out, the same replies reach the tool's rules:
    the change was made then, and today it is refused because the model never checked the
    caller's identity (the operator's rule, which came after the recording: a line number is
    no proof). The customer, told it is done, says they have heard of no change; the model
    never submits. (In a live run the model's later replies would differ: see
    docs/performance.md, run s8e.)"""
    info, agent, _ = replay("compact_contact_update_en_empty_phone")
    trace = info["trace"]
    updates = [a for a in trace.actions if a.tool == "update_contact"]
    assert [a.valid for a in updates] == [False, False, False]  # the first id was made up
    assert all("phone" not in a.arguments for a in updates)
    assert agent.usage["dropped_arguments"] == 3
    assert [error_of(a.observation)["type"] for a in updates[1:]] == ["identity_required"] * 2
    assert info["verification"]["fixed"] is False
    assert info["verification"]["collateral_changes"] == []
    assert info["resolved"] is False and not info["outcome"]["submitted"]
    said = [a.observation for a in trace.actions if a.kind == "message"]
    assert "I haven't received any confirmation of a change yet." in " ".join(said)


def test_a_fenced_submission_is_run_as_the_submission_it_is():
    """Run s9b: the model wrote ``{"intent": "submit_resolution", "summary": ...}`` in a
    ```` ```json ```` block for ten steps, each refused as a submission written as text.
    Replayed through today's agent, the first is run as the submit_resolution call it writes
    out, and the episode ends there: submitted, with the intent the model wrote (scored wrong,
    not lost in ten refusals)."""
    info, agent, _ = replay("compact_beam_misalignment_ar_fenced_submission")
    trace = info["trace"]
    assert [a.kind for a in trace.actions] == ["tool_call", "tool_call", "invalid", "submit"]
    assert trace.terminated and trace.submission.intent == "submit_resolution"
    assert not any(a.kind == "message" and a.raw.startswith("```") for a in trace.actions)
    assert agent.usage["text_tool_calls"] == 3


def test_a_submission_block_with_extra_keys_and_two_fenced_calls():
    """Run s10b: a ```json block of submit_resolution's arguments plus "root cause",
    "evidence" and "actions" (refused as a submission written as text, and the next two went
    to the engineer), then replies of two code fences each, of which the agent ran the first.
    Replayed through today's agent: the blocks are submit calls the environment refuses
    naming the keys it does not take, both calls of a two-fence reply run, and the engineer
    answers a report of findings with how the case closes."""
    info, agent, _ = replay("compact_pci_collision_en_submission_extra_keys")
    trace = info["trace"]
    submits = [a for a in trace.actions if a.kind == "submit"]
    assert submits and all(a.error_kind == "invalid_arguments" for a in submits)
    for action in submits:
        error = json.loads(action.observation)["error"]
        assert "'root cause'" in error["message"] and "only the arguments it takes" in error["next"]
    assert trace.predicted_chain[1:3] == ["kpi_timeseries", "subscriber_insight"]
    said = [a.observation for a in trace.actions if a.kind == "message"]
    assert said and all("submit_resolution" in s for s in said)
    assert trace.truncated and trace.submission is None


def test_with_the_ranges_shown_every_value_of_a_crowded_change_is_in_range():
    """Run s12a: the compact spec now gives each parameter of ``changes`` its range. The model
    still set eleven of them (with names alone, in s11c, it wrote "round_robin", 100 UEs per
    TTI and a BLER target of 50, refused), but each value is in range, so the change runs and
    the cell's configuration is what the model asked for."""
    info, agent, requests = replay("compact_beam_misalignment_ar_ranged_changes")
    trace = info["trace"]
    optimize = next(t for t in requests[0]["tools"] if t["function"]["name"] == "optimize_cell")
    offered = optimize["function"]["parameters"]["properties"]["changes"]["description"]
    assert "max_ue_per_tti 1..64" in offered and "scheduler_type PF|RR|MAX_CI" in offered
    assert trace.predicted_chain == ["neighbor_audit", "optimize_cell"] and trace.submission
    assert all(a.valid for a in trace.actions) and trace.terminated
    change = trace.actions[1]
    assert change.error_kind is None
    changed = json.loads(change.observation)
    assert len(changed["changes"]) == 11 and agent.usage["text_tool_calls"] == 3
