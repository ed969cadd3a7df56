"""The environment contract: registration, reset/step, gold paths, determinism, checker."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env

import telcoenv
from telcoenv.env import TelcoEnv
from telcoenv.errors import EpisodeOptionError, UnknownEnvironmentError, UnknownIntentError
from telcoenv.trace import EpisodeTrace
from tests.conftest import (
    ARABIC,
    NETWORK_TOOLS,
    gold_actions,
    make_env,
    play,
    serving_cell,
    submit,
)


def test_registration_covers_every_intent_and_the_taxonomy(catalog):
    entries = telcoenv.list_envs()
    assert len(entries) == 20 + 1 + 12 + 1  # network intents, taxonomy, care intents, care
    ids = {e.id for e in entries}
    assert "telcoenv/BeamMisalignment-v0" in ids and "telcoenv/Troubleshooting-v0" in ids
    assert "telcoenv/BillShock-v0" in ids and "telcoenv/CustomerCare-v0" in ids
    network = {e.intent for e in entries if e.intent and e.domain == "network"}
    assert network == {i.key for i in catalog.intents}
    for entry in entries:
        assert entry.id in gymnasium.registry


def test_make_by_short_name_key_and_gym_id_are_equivalent():
    for name in ("beam_misalignment", "BEAM_MISALIGNMENT", "telcoenv/BeamMisalignment-v0"):
        env = telcoenv.make(name)
        assert env.unwrapped.fixed_intent.key == "BEAM_MISALIGNMENT"
    env = gymnasium.make("telcoenv/BeamMisalignment-v0", lang="ar")
    assert env.unwrapped.lang == "ar"


def test_make_unknown_name_lists_valid_names():
    with pytest.raises(UnknownEnvironmentError) as caught:
        telcoenv.make("beam_misalignmnt")
    message = str(caught.value)
    assert "beam_misalignmnt" in message and "beam_misalignment" in message
    assert "troubleshooting" in message


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"lang": "fr"}, "lang must be one of"),
        ({"max_steps": 0}, "max_steps must be a positive integer"),
        ({"blueprint": "COV_HOLE_DOWNTOWN"}, "belongs to COVERAGE_HOLE"),
        ({"render_mode": "human"}, "render_mode must be one of"),
    ],
)
def test_bad_constructor_arguments_raise_named_errors(kwargs, match):
    with pytest.raises(EpisodeOptionError, match=match):
        TelcoEnv("beam_misalignment", **kwargs)


def test_unknown_intent_and_blueprint_are_named():
    with pytest.raises(UnknownIntentError, match="unknown intent 'nope'"):
        TelcoEnv("nope")
    with pytest.raises(UnknownIntentError, match="unknown blueprint 'NOPE'"):
        TelcoEnv("beam_misalignment", blueprint="NOPE")


def test_bad_reset_options_raise():
    env = TelcoEnv("beam_misalignment")
    with pytest.raises(EpisodeOptionError, match="unknown reset option"):
        env.reset(seed=0, options={"sampel_index": 3})
    with pytest.raises(EpisodeOptionError, match="sample_index must be a non-negative integer"):
        env.reset(seed=0, options={"blueprint": "BEAM_INDOOR_GRID", "sample_index": -1})
    with pytest.raises(EpisodeOptionError, match="fixed to BEAM_MISALIGNMENT"):
        env.reset(seed=0, options={"intent": "coverage_hole"})


@pytest.mark.parametrize("env_id", [e.id for e in telcoenv.list_envs()])
def test_check_env_passes(env_id):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the checker's warnings count as failures
        check_env(gymnasium.make(env_id).unwrapped)


def test_reset_info_hides_the_answer(catalog):
    env = TelcoEnv(None)
    for seed in range(10):
        statement, info = env.reset(seed=seed)
        assert set(info) >= {"tools", "instructions", "episode_id", "messages", "language"}
        assert "privileged" not in info
        dumped = json.dumps({k: v for k, v in info.items() if k != "instructions"})
        trace = env.trace
        assert trace.intent not in dumped and trace.blueprint_id not in dumped
        names = {t["function"]["name"] for t in info["tools"]}
        assert names == {*NETWORK_TOOLS, "submit_resolution"}


def test_instructions_list_intents_only_in_the_with_list_condition(catalog):
    with_list = TelcoEnv("beam_misalignment").reset(seed=0)[1]["instructions"]
    without = TelcoEnv("beam_misalignment", intent_list=False).reset(seed=0)[1]["instructions"]
    labels = [i.label.en for i in catalog.intents]
    assert all(label in with_list for label in labels)
    assert not any(label in without for label in labels)


@pytest.mark.parametrize("lang", ["en", "ar"])
def test_gold_path_reaches_submit_on_every_intent(catalog, lang):
    for intent in catalog.intents:
        env = make_env(intent.env_name, lang=lang, reward="sas")
        for seed in range(3):
            _, info = env.reset(seed=seed)
            for action in gold_actions(info):
                observation, reward, terminated, truncated, step_info = env.step(action)
                assert not observation.startswith('{"error"'), (intent.key, action, observation)
                assert not terminated and not truncated
            observation, reward, terminated, truncated, step_info = env.step(
                submit(intent.label.in_lang(lang))
            )
            assert terminated and not truncated and reward == 1.0
            assert step_info["predicted_chain"] == list(intent.gold_tools)
            assert step_info["invalid_actions"] == 0


def test_problem_statement_is_in_the_episode_language_and_has_no_spoilers(catalog):
    for intent in catalog.intents:
        for lang in ("en", "ar"):
            env = TelcoEnv(intent.env_name, lang=lang)
            for seed in range(6):
                statement, _ = env.reset(seed=seed)
                lowered = statement.lower()
                assert intent.label.en.lower() not in lowered
                assert intent.label.ar not in statement
                assert not any(tool in lowered for tool in NETWORK_TOOLS), statement
                assert bool(ARABIC.search(statement)) == (lang == "ar"), statement
                assert env.trace.facts  # quotes come from the sample
                arabic_letters = len(ARABIC.findall(statement))
                if lang == "ar":  # mostly Arabic: acronyms and numbers are the exception
                    assert arabic_letters > 0.5 * sum(c.isalpha() for c in statement)


def test_statements_quote_sampled_values_with_units():
    env = TelcoEnv("throughput_drop_dl", blueprint="DL_DROP_URBAN_PEAK")
    statement, _ = env.reset(seed=5)
    kpis = env.trace.facts
    assert f"{kpis['PRB_util'] * 100:.0f}%" in statement
    assert f"{kpis['DL_thr_Mbps']:.1f} Mbps" in statement
    env_ar = TelcoEnv("throughput_drop_dl", blueprint="DL_DROP_URBAN_PEAK", lang="ar")
    statement_ar, _ = env_ar.reset(seed=5)
    assert "ميجابت/ث" in statement_ar and "PRB" in statement_ar


def test_the_samples_of_a_blueprint_read_differently():
    env = TelcoEnv("beam_misalignment", blueprint="BEAM_INDOOR_GRID")
    statements = {env.reset(options={"sample_index": i})[0] for i in range(30)}
    assert len(statements) == 30


def test_sample_index_pins_the_episode_regardless_of_seed():
    env = TelcoEnv(None)
    options = {"blueprint": "PCI_COLLISION_DENSE", "sample_index": 7}
    first, _ = env.reset(seed=1, options=options)
    trace_one = env.trace
    second, _ = env.reset(seed=99, options=options)
    assert first == second and env.trace.facts == trace_one.facts
    assert env.trace.intent == "PCI_COLLISION"
    other, _ = env.reset(seed=1, options={**options, "sample_index": 8})
    assert other != first


def test_taxonomy_env_draws_intents_and_accepts_an_intent_option():
    env = TelcoEnv(None)
    drawn = {env.reset(seed=s)[1] and env.trace.intent for s in range(60)}
    assert len(drawn) >= 15
    env.reset(seed=0, options={"intent": "slice_qos_degradation"})
    assert env.trace.intent == "SLICE_QOS_DEGRADATION"


def test_truncation_at_the_step_limit_and_refusal_after_the_end():
    env = TelcoEnv("coverage_hole", max_steps=3, embedder=None)
    env.reset(seed=0)
    results = [env.step("Which cell is it?") for _ in range(3)]
    assert [r[3] for r in results] == [False, False, True]
    assert not any(r[2] for r in results)
    observation, reward, terminated, truncated, info = env.step({"name": "oss_query"})
    assert json.loads(observation)["error"]["type"] == "episode_ended"
    assert truncated and reward == 0.0
    assert env.trace.truncated and env.trace.actions[-1].kind == "after_end"


def test_after_submit_every_action_is_refused(beam_env):
    _, info = beam_env.reset(seed=0)
    beam_env.step(submit("Beam Misalignment"))
    observation, reward, terminated, _, info = beam_env.step(gold_actions(info)[0])
    assert terminated and reward == 0.0
    assert json.loads(observation)["error"]["type"] == "episode_ended"
    assert info["invalid_actions"] == 1
    assert beam_env.trace.predicted_chain == []  # refused calls are not tool-call attempts


def test_action_formats_are_equivalent(beam_env):
    _, info = beam_env.reset(seed=3)
    action = gold_actions(info)[0]
    expected = beam_env.step(action)[0]
    variants = [
        json.dumps(action),
        {"function": {"name": action["name"], "arguments": json.dumps(action["arguments"])}},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {
                        "name": action["name"],
                        "arguments": json.dumps(action["arguments"]),
                    },
                }
            ],
        },
        {"role": "assistant", "tool_calls": [{"function": action | {"name": action["name"]}}]},
        json.dumps({"role": "assistant", "tool_calls": [{"function": action}]}),
    ]
    for variant in variants:
        beam_env.reset(seed=3)
        observation, *_ = beam_env.step(variant)
        assert observation == expected, variant


def test_several_tool_calls_in_one_message(beam_env):
    _, info = beam_env.reset(seed=3)
    first, second = gold_actions(info)[:2]
    message = {
        "role": "assistant",
        "tool_calls": [
            {"id": "a", "function": {"name": first["name"], "arguments": first["arguments"]}},
            {"id": "b", "function": {"name": second["name"], "arguments": second["arguments"]}},
        ],
    }
    observation, _, _, _, step_info = beam_env.step(message)
    outputs = json.loads(observation)
    assert [o["name"] for o in outputs] == [first["name"], second["name"]]
    assert [m["tool_call_id"] for m in step_info["messages"]] == ["a", "b"]
    assert beam_env.trace.predicted_chain == [first["name"], second["name"]]


def test_plain_messages_go_to_the_engineer(beam_env):
    beam_env.reset(seed=0)
    cell = serving_cell(beam_env)
    reply, reward, terminated, truncated, info = beam_env.step("Which cell id should I look at?")
    assert cell in reply and not terminated and info["messages"][0]["role"] == "user"
    approval, *_ = beam_env.step({"role": "assistant", "content": "May I apply the change?"})
    assert approval and approval != reply
    env_ar = TelcoEnv("beam_misalignment", lang="ar")
    env_ar.reset(seed=0)
    assert ARABIC.search(env_ar.step("ما هو معرف الخلية؟")[0])
    assert beam_env.trace.predicted_chain == []


ERROR_CASES = [
    ({"name": "kpi_etimeseries", "arguments": {}}, "unknown_tool", "kpi_etimeseries"),
    ('{"name": "oss_query", "arguments": {"cell_id": ', "malformed_json", None),
    (
        {"name": "oss_query", "arguments": '{"cell_id": "X", "window"'},
        "malformed_arguments",
        "oss_query",
    ),
    (
        {"name": "oss_query", "arguments": {"cell_id": 42, "window": "3h"}},
        "invalid_arguments",
        "oss_query",
    ),
    ({"name": "oss_query", "arguments": {"window": "3h"}}, "invalid_arguments", "oss_query"),
    (
        {"name": "optimize_cell", "arguments": {"cell_id": "{cell}", "changes": {"tilt_deg": 40}}},
        "invalid_arguments",
        "optimize_cell",
    ),
    (
        {"name": "oss_query", "arguments": {"cell_id": "NR-NOWHERE-1", "window": "3h"}},
        "not_found",
        "oss_query",
    ),
    (
        {
            "name": "kpi_timeseries",
            "arguments": {"cell_id": "{cell}", "kpi": "DL", "window": "3 hours"},
        },
        "invalid_arguments",
        "kpi_timeseries",
    ),
    (42, "unsupported_action", None),
    ({"tool_calls": "oss_query"}, "malformed_action", None),
    ({"name": "submit_resolution", "arguments": {"intent": "x"}}, "invalid_arguments", None),
]


@pytest.mark.parametrize(("action", "kind", "recorded"), ERROR_CASES)
def test_bad_actions_become_error_observations(beam_env, action, kind, recorded):
    beam_env.reset(seed=0)
    cell = serving_cell(beam_env)
    if isinstance(action, dict) and isinstance(action.get("arguments"), dict):
        action = json.loads(json.dumps(action).replace("{cell}", cell))
    observation, reward, terminated, truncated, info = beam_env.step(action)
    error = json.loads(observation)["error"]
    assert error["type"] == kind and error["message"]
    assert not terminated and reward == 0.0
    assert info["invalid_actions"] == 1 and info["action"]["error_type"] == kind
    # A refused call is no step of the plan (the executed chain), but it was attempted.
    assert beam_env.trace.predicted_chain == []
    assert beam_env.trace.attempted_chain == ([recorded] if recorded else [])
    # the episode goes on
    assert not beam_env.step("still there?")[0].startswith('{"error"')


def test_error_messages_are_specific(beam_env):
    beam_env.reset(seed=0)
    cell = serving_cell(beam_env)
    missing = json.loads(beam_env.step({"name": "oss_query", "arguments": {"cell_id": cell}})[0])
    assert "missing required argument 'window'" in missing["error"]["message"]
    out_of_range = json.loads(
        beam_env.step(
            {"name": "optimize_cell", "arguments": {"cell_id": cell, "changes": {"tilt_deg": 40}}}
        )[0]
    )
    assert "'changes.tilt_deg'" in out_of_range["error"]["message"]
    assert "40 is greater than the maximum of 15" in out_of_range["error"]["message"]
    unknown = json.loads(beam_env.step({"name": "kpi_analysis", "arguments": {}})[0])
    assert "unknown tool 'kpi_analysis'" in unknown["error"]["message"]
    assert "oss_query" in unknown["error"]["message"]
    wrong_cell = json.loads(
        beam_env.step({"name": "neighbor_audit", "arguments": {"cell_id": "NR-X-1"}})[0]
    )
    assert cell in wrong_cell["error"]["message"]


def test_an_out_of_range_change_changes_nothing(beam_env):
    beam_env.reset(seed=0)
    cell = serving_cell(beam_env)
    before = beam_env.step({"name": "oss_query", "arguments": {"cell_id": cell, "window": "1h"}})[0]
    beam_env.step(
        {
            "name": "optimize_cell",
            "arguments": {"cell_id": cell, "changes": {"tilt_deg": 6, "ttt_ms": 333}},
        }
    )
    after = beam_env.step({"name": "oss_query", "arguments": {"cell_id": cell, "window": "1h"}})[0]
    assert json.loads(before)["configuration"] == json.loads(after)["configuration"]


def test_trace_round_trips_through_json(beam_env):
    _, info = beam_env.reset(seed=11)
    play(beam_env, [*gold_actions(info), "thanks", {"name": "nope"}])
    *_, info = beam_env.step(submit("Beam Misalignment", "done"))
    trace = info["trace"]
    assert isinstance(trace, EpisodeTrace)
    restored = EpisodeTrace.model_validate_json(trace.model_dump_json())
    assert restored == trace
    assert restored.predicted_chain == trace.gold_tools  # "nope" was refused: no step
    assert restored.attempted_chain == [*trace.gold_tools, "nope"]
    assert restored.outcome == trace.outcome and restored.outcome.resolved
    assert restored.submission.summary == "done"
    assert [a.kind for a in restored.actions][-3:] == ["message", "tool_call", "submit"]


SCRIPT = """
import json, sys
import telcoenv
from telcoenv.domains.network import NetworkDomain
domain = NetworkDomain(model=sys.argv[2])
env = telcoenv.make(
    "troubleshooting", lang=sys.argv[1], privileged=True, embedder=None, domain=domain
)
lines = []
for seed in (0, 1, 2):
    obs, info = env.reset(seed=seed)
    lines.append(obs)
    actions = [{"name": c["tool"], "arguments": c["arguments"]}
               for c in info["privileged"]["gold_chain"]]
    actions += ["Please confirm the window.", {"name": "kpi_timeseries", "arguments": {
        "cell_id": info["privileged"]["gold_chain"][0]["arguments"].get("cell_id", "x"),
        "kpi": "RF", "window": "2h"}}]
    for action in actions:
        lines.append(env.step(action)[0])
    *_, info = env.step({"name": "submit_resolution", "arguments": {"intent": "x", "summary": "y"}})
    lines.append(info["trace"].model_dump_json())
print(json.dumps(lines))
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    ("lang", "model"), [("en", "blueprint"), ("ar", "blueprint"), ("en", "physical")]
)
def test_transcripts_are_identical_across_processes(lang, model):
    runs = [
        subprocess.run(
            [sys.executable, "-c", SCRIPT, lang, model],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": str(h), "PATH": ""},
        ).stdout
        for h in (1, 2)
    ]
    assert runs[0] == runs[1]
    assert len(json.loads(runs[0])) > 12


def test_render_ansi_shows_the_transcript():
    env = TelcoEnv("config_mismatch", render_mode="ansi")
    statement, _ = env.reset(seed=0)
    env.step("Which window?")
    text = env.render()
    assert statement in text and "[agent:message]" in text


def test_a_message_after_the_end_gets_the_engineers_closing_reply(beam_env):
    beam_env.reset(seed=0)
    beam_env.step(submit("Beam Misalignment"))
    observation, reward, terminated, truncated, info = beam_env.step("Anything else?")
    assert not observation.startswith("{") and terminated and reward == 0.0
    assert info["invalid_actions"] == 1 and beam_env.trace.actions[-1].kind == "after_end"


def test_the_same_seed_gives_the_same_scenario_in_both_languages():
    english, arabic = TelcoEnv(None, lang="en"), TelcoEnv(None, lang="ar")
    for seed in range(5):
        english.reset(seed=seed)
        arabic.reset(seed=seed)
        assert english.trace.facts == arabic.trace.facts
        assert english.trace.start_state == arabic.trace.start_state
        assert english.trace.problem_statement != arabic.trace.problem_statement


def test_traces_recorded_under_the_earlier_field_names_still_load():
    """Before the domain-neutral names, the facts were ``sampled_kpis`` and the start state sat
    in ``network`` (network operations) or ``customer`` (customer care)."""
    for domain, older in (("network", "network"), ("bss", "customer")):
        env = TelcoEnv(None, domain=domain, embedder=None)
        env.reset(seed=3)
        env.step("hello")
        today = env.trace.model_dump(mode="json")
        recorded = {k: v for k, v in today.items() if k not in ("facts", "start_state")}
        recorded |= {"sampled_kpis": today["facts"], older: today["start_state"]}
        recorded |= {"customer": None} if older == "network" else {"network": {}}
        loaded = EpisodeTrace.model_validate_json(json.dumps(recorded))
        assert loaded.model_dump(mode="json") == today
        assert today["facts"] and today["start_state"]
