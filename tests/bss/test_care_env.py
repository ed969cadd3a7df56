"""Customer-care episodes end to end: env ids, the simulated customer, the missing-parameter flow,
verification on the final BSS state, exact answers, and the oracle on every care blueprint."""

from __future__ import annotations

import json
import subprocess
import sys

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env

import telcoenv
from telcoenv.agents import OracleAgent, run_episode
from telcoenv.domains.bss import bss_domain
from telcoenv.env import TelcoEnv
from telcoenv.errors import EpisodeOptionError
from tests.conftest import ARABIC, error_of, gold_actions, make_env, play, submit, tool_call

CARE = bss_domain().catalog


def care_env(intent: str | None = None, **kwargs) -> TelcoEnv:
    return make_env(intent, domain="bss", **kwargs)


def play_oracle(env: TelcoEnv, **reset) -> dict:
    return run_episode(env, OracleAgent(), **reset)[1]


# --- registration and construction -----------------------------------------------------------


def test_every_care_intent_has_an_env_id_and_the_domain_one_more():
    entries = {e.id: e for e in telcoenv.list_envs() if e.domain == "bss"}
    assert len(entries) == 13
    for intent in CARE.intents:
        env = gymnasium.make(f"telcoenv/{intent.gym_name}-v0", embedder=None)
        assert env.unwrapped.fixed_intent.key == intent.key
        assert env.unwrapped.domain.name == "bss"
    env = telcoenv.make("customer_care", embedder=None)
    assert env.unwrapped.fixed_intent is None and env.unwrapped.env_id.endswith("CustomerCare-v0")


def test_care_envs_pass_the_gymnasium_checker():
    check_env(care_env("bill_shock").unwrapped, skip_render_check=True)


def test_an_unknown_domain_is_named():
    with pytest.raises(EpisodeOptionError, match="unknown domain 'oss'"):
        TelcoEnv(domain="oss")


def test_tools_and_instructions_are_the_care_ones():
    env = care_env("bill_shock")
    names = {tool["function"]["name"] for tool in env.tools}
    assert {"get_customer", "get_bill", "submit_resolution", "get_store_locations"} <= names
    assert "oss_query" not in names
    _, info = env.reset(seed=0)
    assert "customer-care agent" in info["instructions"]
    assert "Bill Shock Explanation" in info["instructions"]  # the intent list
    assert info["domain"] == "bss"


# --- the oracle -------------------------------------------------------------------------------


@pytest.mark.parametrize("blueprint", [b for f in CARE.blueprints.values() for b in f], ids=str)
def test_the_oracle_solves_every_care_blueprint(blueprint):
    env = care_env()
    for lang in ("en", "ar"):
        for index in range(3):
            info = play_oracle(
                env,
                options={"blueprint": blueprint.blueprint_id, "sample_index": index, "lang": lang},
            )
            metrics = info["metrics"]
            assert info["resolved"] is True, info["verification"]
            assert metrics["sas"] == metrics["msc"] == metrics["eap"] == 1.0
            assert metrics["args"] == 1.0
            intent = CARE.intent(blueprint.intent)
            assert metrics["answer"] is (True if intent.answer else None)
            assert metrics["ra"] is None  # no reference summary in customer care


def test_the_oracle_asks_for_approval_when_required():
    env = care_env("plan_change", require_approval=True)
    info = play_oracle(env, seed=4)
    assert info["resolved"] is True
    assert [a.kind for a in env.trace.actions].count("message") >= 2  # number + approval


# --- the customer ----------------------------------------------------------------------------


def test_the_opening_never_gives_the_line_number_and_the_customer_does_when_asked():
    env = care_env("data_topup")
    for lang, question in (("en", "What is your mobile number?"), ("ar", "ما رقم جوالك؟")):
        observation, info = env.reset(seed=1, options={"lang": lang})
        msisdn = info["privileged"]["values"]["msisdn"]
        assert msisdn not in observation
        reply, *_ = env.step(question)
        assert msisdn in reply
        assert (lang == "ar") == bool(ARABIC.search(reply))


def test_the_customer_gives_trip_budget_and_need_but_never_the_answer():
    env = care_env("roaming_pack")
    _, info = env.reset(seed=3, options={"lang": "en"})
    reply, *_ = env.step("Where are you travelling, and when do you leave?")
    start = next(c for c in info["privileged"]["gold_chain"] if c["tool"] == "subscribe_addon")
    assert start["arguments"]["start_date"] in reply
    env = care_env("plan_recommendation")
    _, info = env.reset(seed=3)
    plan = info["privileged"]["gold_answer"]
    reply, *_ = env.step("What is your budget per month?")
    assert "SAR" in reply and plan not in reply
    reply, *_ = env.step("Which plan do you want?")
    assert plan not in reply and ("don't know" in reply or "not sure" in reply)
    env = care_env("data_topup")
    env.reset(seed=3)
    reply, *_ = env.step("How much data do you need?")
    assert "GB" in reply


def test_the_customer_consents_restates_and_closes():
    env = care_env("addon_cancellation")
    observation, _ = env.reset(seed=2)
    subscription = env.unwrapped.episode.setup.gold_values["subscription_id"]
    assert "Yes" not in env.step("Shall I go ahead and cancel it?")[0]  # which one?
    assert "Yes" in env.step(f"Shall I go ahead and cancel {subscription}?")[0]
    unclear = env.step("The weather is nice today.")[0]
    assert "cancel the add-on" in unclear
    env.step(submit())
    closing, *_ = env.step("Anything else?")
    assert "Goodbye" in closing or "Bye" in closing


@pytest.mark.slow
def test_the_customer_is_deterministic_across_processes():
    script = (
        "import json, telcoenv\n"
        "env = telcoenv.make('roaming_pack', embedder=None)\n"
        "obs, _ = env.reset(seed=11, options={'lang': 'ar'})\n"
        "out = [obs] + [env.step(m)[0] for m in ('ما رقم جوالك؟', 'إلى أين ستسافر؟', 'hmm')]\n"
        "print(json.dumps(out))\n"
    )
    runs = [
        subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
        for _ in range(2)
    ]
    assert runs[0].stdout == runs[1].stdout
    env = telcoenv.make("roaming_pack", embedder=None)
    obs, _ = env.reset(seed=11, options={"lang": "ar"})
    here = [obs] + [env.step(m)[0] for m in ("ما رقم جوالك؟", "إلى أين ستسافر؟", "hmm")]
    assert json.loads(runs[0].stdout) == here


# --- missing parameters and hostile arguments ----------------------------------------------------


def test_a_missing_parameter_is_named_and_asking_the_customer_gets_it():
    env = care_env("roaming_pack")
    for seed in range(20):  # the first episode whose caller is the holder (no impostor)
        _, info = env.reset(seed=seed)
        gold = {c["tool"]: c["arguments"] for c in info["privileged"]["gold_chain"]}
        if "subscribe_addon" in gold:
            break
    env.step(tool_call("get_customer", **gold["get_customer"]))
    env.step(tool_call("verify_identity", **gold["verify_identity"]))
    env.step(tool_call("list_addons", **gold["list_addons"]))
    arguments = dict(gold["subscribe_addon"])
    start = arguments.pop("start_date")
    error, *_ = env.step(tool_call("subscribe_addon", **arguments))
    assert json.loads(error)["error"]["type"] == "invalid_arguments"
    assert "missing required argument 'start_date'" in error
    reply, *_ = env.step("When does your trip start?")
    assert start in reply
    output, *_ = env.step(tool_call("subscribe_addon", **arguments, start_date=start))
    assert json.loads(output)["start_date"] == start
    _, _, _, _, info = env.step(submit("Roaming Pack Activation"))
    assert info["resolved"] is True
    assert info["metrics"]["args"] == 1.0  # judged on the corrected retry


@pytest.mark.parametrize(
    "msisdn",
    ["1' OR '1'='1", "966500000000; DROP TABLE lines", "9" * 15, "٩٦٦٥٠", ""],
)
def test_hostile_arguments_are_errors_and_change_nothing(msisdn):
    env = care_env("contact_update")
    env.reset(seed=6)
    state = env.episode.setup.state
    before = state.rows_json()
    for action in (
        tool_call("get_customer", msisdn=msisdn),
        tool_call("change_plan", msisdn=msisdn, plan_id="POST-PLUS"),
        tool_call("update_contact", customer_id=msisdn, email="x@y.example"),
        tool_call("get_bill", account_id=msisdn, period="2026-13"),
    ):
        observation, reward, terminated, truncated, info = env.step(action)
        assert "error" in json.loads(observation)
        assert not terminated and not truncated
    assert state.rows_json() == before
    assert info["invalid_actions"] == 4


def test_a_contact_detail_with_a_trailing_newline_is_refused_by_the_schema():
    env = care_env("contact_update")
    _, info = env.reset(seed=0)
    call = next(c for c in info["privileged"]["gold_chain"] if c["tool"] == "update_contact")
    arguments = {**call["arguments"], "email": call["arguments"]["email"] + "\n"}
    error = error_of(env.step(tool_call("update_contact", **arguments))[0])
    assert error["type"] == "invalid_arguments" and "argument 'email'" in error["message"]


def test_wrong_types_and_unknown_tools_are_error_observations():
    env = care_env("family_data")
    env.reset(seed=1)
    for action, kind in (
        (tool_call("get_usage", msisdn=966500000000, months="12"), "invalid_arguments"),
        (tool_call("oss_query", cell_id="X"), "unknown_tool"),
        ('{"name": "get_customer", "arguments": {"msisdn": ', "malformed_json"),
    ):
        observation, *_ = env.step(action)
        assert json.loads(observation)["error"]["type"] == kind, observation


# --- verification and scoring -------------------------------------------------------------------


def test_a_wrong_answer_or_no_answer_is_not_resolved():
    env = care_env("duplicate_charge")
    _, info = env.reset(seed=8)
    gold = info["privileged"]["gold_answer"]
    play(env, gold_actions(info))
    doubled = f"{2 * float(gold):.2f}"  # the naive sum of the two invoices
    label = info["privileged"]["label"]["en"]
    *_, info = env.step(submit(label, answer=doubled))
    assert info["resolved"] is False and info["metrics"]["answer"] is False
    assert info["verification"]["answer_correct"] is False
    env.reset(seed=8)
    play(env, gold_actions(info))
    *_, info = env.step(submit(label, answer=f"SAR {float(gold):,.2f}"))  # formatting normalised
    assert info["resolved"] is True and info["metrics"]["answer"] is True


def test_an_extra_change_is_collateral_and_a_wrong_add_on_misses_the_expected_change():
    env = care_env("contact_update")
    _, info = env.reset(seed=9)
    values = info["privileged"]["values"]
    play(env, gold_actions(info))
    env.step(tool_call("update_contact", customer_id=values["customer_id"], phone="+966511111111"))
    *_, info = env.step(submit())
    assert info["resolved"] is False
    assert info["collateral_changes"][0]["column"] == "phone"
    env = care_env("data_topup")
    for seed in range(9, 40):  # the holder calls (an impostor's gold chain changes nothing)
        _, info = env.reset(seed=seed)
        if not info["privileged"]["values"]["impostor"]:
            break
    gold = gold_actions(info)
    chosen = gold[-1]["arguments"]["addon_id"]
    other = next(a for a in ("DATA-5GB", "DATA-1GB") if a != chosen)  # sold to every line
    gold[-1]["arguments"]["addon_id"] = other
    play(env, gold)
    *_, info = env.step(submit())
    verdict = info["verification"]
    assert info["resolved"] is False and not verdict["checks"][0]["passed"]
    assert verdict["collateral_changes"] and info["metrics"]["args"] < 1.0


def test_a_ticket_summary_in_the_agents_words_still_verifies():
    env = care_env("duplicate_charge")
    _, info = env.reset(seed=10)
    gold = gold_actions(info)
    gold[-1]["arguments"]["summary"] = "Customer billed twice; please refund."
    play(env, gold)
    privileged = info["privileged"]
    *_, info = env.step(submit(privileged["label"]["ar"], answer=privileged["gold_answer"]))
    assert info["resolved"] is True and info["metrics"]["args"] == 1.0


def test_doing_nothing_resolves_nothing_and_scores_zero():
    for intent in ("bill_shock", "plan_change"):
        env = care_env(intent, reward="resolved")
        env.reset(seed=12)
        _, reward, *_, info = env.step(submit())
        assert info["resolved"] is False and reward == 0.0
        assert info["metrics"]["sas"] == 0.0 and info["metrics"]["args"] == 0.0


def test_rewards_on_answer_and_args():
    env = care_env("average_data_use", reward={"answer": 0.5, "args": 0.5})
    info = play_oracle(env, seed=13)
    assert info["metrics"]["answer"] is True
    env.reset(seed=13)
    _, reward, *_ = env.step(submit(answer="0"))
    assert reward == 0.0


def test_a_kept_database_holds_every_care_episode(tmp_path):
    url = f"sqlite:///{tmp_path / 'care.sqlite'}"
    env = care_env("contact_update", database_url=url)
    ids, holders = [], 0
    for seed in (1, 2, 3, 4):
        info = play_oracle(env, seed=seed)
        ids.append(info["trace"].episode_id)
        holders += info["trace"].start_state["caller"] == "holder"  # an impostor changes nothing
    env.close()
    from sqlalchemy import create_engine, text

    with create_engine(url).connect() as connection:
        stored = connection.execute(text("SELECT DISTINCT episode_id FROM customers")).all()
        emails = connection.execute(text("SELECT email FROM customers")).scalars().all()
    assert len(stored) == 4 and holders >= 2
    new = sum(email.startswith(("contact", "mail", "me", "inbox")) for email in emails)
    assert new >= holders


def test_snapshots_restore_a_care_episode():
    env = care_env("roaming_pack")
    env.reset(seed=14)
    env.step("What is your mobile number?")
    twin = env.clone()
    assert twin.trace.actions[0].observation == env.trace.actions[0].observation
    assert twin.episode.setup.state.rows_json() == env.episode.setup.state.rows_json()


def test_the_callers_stored_language_is_the_one_they_speak():
    """The record's preferred language agrees with the conversation (it was drawn apart from
    it); once verified, get_customer shows it. The rest of the data is the same in both."""
    rows = {}
    for spoken in ("en", "ar"):
        env = care_env("average_data_use", lang=spoken)
        _, info = env.reset(seed=12)
        values = info["privileged"]["values"]
        profile = json.loads(env.step(tool_call("get_customer", msisdn=values["msisdn"]))[0])
        assert profile["customer"]["language"] == spoken
        rows[spoken] = env.unwrapped.episode.setup.truth.rows["customers"]
    english, arabic = rows["en"], rows["ar"]
    changed = [(a, b) for a, b in zip(english, arabic, strict=True) if a[1:] != b[1:]]
    assert len(changed) <= 1 and all(a[5] != b[5] for a, b in changed)


def test_an_arabic_customer_names_their_plan_in_arabic_never_by_its_id():
    """The plan a customer asks for is said by its Arabic name in Arabic (its internal id in an
    Arabic sentence is no way a customer speaks), in the opening and when asked again; the
    honest baseline and the consent still read it."""
    from telcoenv.agents.care_investigator import CareInvestigatorAgent
    from telcoenv.domains.bss.catalogue import products

    ids = [p["plan_id"] for p in products()["plans"]]
    env = care_env("plan_change", lang="ar", require_approval=True)
    for seed in range(6):
        opening, info = env.reset(seed=seed)
        plan = info["privileged"]["values"]["plan_id"]
        name = next(p["name"]["ar"] for p in products()["plans"] if p["plan_id"] == plan)
        assert name in opening and not [i for i in ids if i in opening], opening
        again = env.step("ما الباقة التي تريدها؟")[0]
        assert name in again and not [i for i in ids if i in again], again
        resolved = run_episode(env, CareInvestigatorAgent(), seed=seed)[1]["resolved"]
        assert resolved is True
