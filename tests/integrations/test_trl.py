"""TRL adapter contract: the class is called the way GRPOTrainer(environment_factory=...) does."""

from __future__ import annotations

import inspect
import json
import re
import typing
from typing import Any

import pytest

transformers_utils = pytest.importorskip("transformers.utils")
get_json_schema = transformers_utils.get_json_schema

from telcoenv.agents.care_investigator import read_identity  # noqa: E402
from telcoenv.domains.bss import customer  # noqa: E402
from telcoenv.env import TelcoEnv  # noqa: E402
from telcoenv.errors import EpisodeOptionError, UnknownIntentError  # noqa: E402
from telcoenv.integrations.trl import (  # noqa: E402
    ToolCallError,
    episode_info,
    prompt_rows,
    resolved_reward,
    trl_environment,
)
from tests.conftest import NETWORK_TOOLS, deep_list, gold_actions, make_env  # noqa: E402

pytestmark = pytest.mark.integration

TOOLS = {*NETWORK_TOOLS, "submit_resolution"}
NOT_TOOLS = {"reset", "get_reward"}  # TRL treats these two specially
ROW = {"prompt": [{"role": "user", "content": ""}], "seed": 7, "answer": "x", "blueprint": None}


@pytest.fixture(scope="module")
def troubleshooting() -> type:
    return trl_environment("troubleshooting")


@pytest.fixture(scope="module")
def beam() -> type:
    return trl_environment("beam_misalignment")


@pytest.fixture(scope="module")
def specs() -> dict:
    return dict(TelcoEnv(embedder=None).domain.catalog.tools)


def gold_episode(intent: str, seed: int, **kwargs: Any) -> tuple[TelcoEnv, list[dict]]:
    """A privileged reference env reset with ``seed`` and the gold actions of its episode."""
    env = make_env(intent, **kwargs)
    _, info = env.reset(seed=seed)
    return env, gold_actions(info)


def as_trl_kwargs(arguments: dict) -> dict:
    """Arguments as TRL passes them: parsed from the model's JSON tool call."""
    return json.loads(json.dumps(arguments))


def trl_tool_dict(instance: object) -> dict:
    """The tools TRL exposes for one instance (as in GRPOTrainer)."""
    return {
        name: getattr(instance, name)
        for name, _ in inspect.getmembers(type(instance), predicate=inspect.isfunction)
        if name not in NOT_TOOLS and not name.startswith("_")
    }


def test_no_argument_construction_and_reset_with_extra_columns(troubleshooting: type) -> None:
    instance = troubleshooting()
    statement = instance.reset(**ROW)
    expected, _ = TelcoEnv(embedder=None).reset(seed=7)
    assert isinstance(statement, str) and statement == expected


def test_public_methods_are_exactly_the_tools(troubleshooting: type, specs: dict) -> None:
    instance = troubleshooting()
    methods = {n for n, _ in inspect.getmembers(instance, inspect.ismethod) if n[0] != "_"}
    assert methods == TOOLS | NOT_TOOLS
    assert set(trl_tool_dict(instance)) == TOOLS == set(specs)
    public = {name for name in dir(instance) if not name.startswith("_")}
    assert public == methods  # every other attribute is private


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_json_schema_matches_the_spec(troubleshooting: type, specs: dict, name: str) -> None:
    schema = get_json_schema(getattr(troubleshooting(), name))["function"]
    spec = specs[name].parameters
    assert schema["name"] == name
    assert schema["description"].rstrip(".") == specs[name].description.rstrip(".")
    parameters = schema["parameters"]
    assert list(parameters["properties"]) == sorted(
        spec["properties"], key=lambda n: n not in spec.get("required", [])
    )
    assert sorted(parameters.get("required", [])) == sorted(spec.get("required", []))
    for parameter, expected in spec["properties"].items():
        got = parameters["properties"][parameter]
        assert got["type"] == expected["type"]
        assert got.get("enum") == expected.get("enum")
        assert expected["description"].rstrip(".") in got["description"]
        for key in expected.get("properties", {}):  # an object's keys are documented
            assert f"{key} (" in got["description"]


def test_submit_resolution_signature(troubleshooting: type) -> None:
    signature = inspect.signature(troubleshooting().submit_resolution)
    assert list(signature.parameters) == ["intent", "summary"]  # no answer: customer care's
    intent, summary = signature.parameters.values()
    assert intent.annotation is str and summary.annotation is str
    assert signature.return_annotation is str
    care = inspect.signature(trl_environment("customer_care")().submit_resolution)
    assert list(care.parameters) == ["intent", "summary", "answer"]
    assert care.parameters["answer"].default is None  # optional: only a question has one


def test_optional_parameters_default_to_none(troubleshooting: type) -> None:
    signature = inspect.signature(troubleshooting().kpi_timeseries)
    granularity = signature.parameters["granularity"]
    assert granularity.default is None
    assert typing.get_args(granularity.annotation)[-1] is type(None)


def test_gold_calls_with_parsed_json_return_the_env_observations(beam: type) -> None:
    reference, actions = gold_episode("beam_misalignment", seed=3)
    instance = beam()
    instance.reset(seed=3)
    tools = trl_tool_dict(instance)
    for action in actions:
        observation = tools[action["name"]](**as_trl_kwargs(action["arguments"]))
        expected = reference.step(action)[0]
        assert observation == expected
        assert "error" not in json.loads(observation)


def test_positional_arguments_follow_the_signature(beam: type) -> None:
    _, actions = gold_episode("beam_misalignment", seed=3)
    first = actions[0]  # coverage_map(area, resolution)
    by_keyword, by_position = beam(), beam()
    by_keyword.reset(seed=3)
    by_position.reset(seed=3)
    arguments = first["arguments"]
    expected = getattr(by_keyword, first["name"])(**arguments)
    assert getattr(by_position, first["name"])(*arguments.values()) == expected
    with pytest.raises(TypeError):
        by_position.neighbor_audit("a", "b")


@pytest.mark.parametrize(
    ("name", "arguments", "fragment"),
    [
        ("coverage_map", {"area": "CL-URB-005", "resolution": "3km"}, "resolution"),
        ("oss_query", {"cell_id": "NR-NOPE-1"}, "window"),
        ("neighbor_audit", {"cell_id": "NR-NOPE-1", "bogus": 1}, "bogus"),
        ("neighbor_audit", {"cell_id": "NR-NOPE-1"}, "NR-NOPE-1"),
        ("submit_resolution", {"intent": "x"}, "summary"),
    ],
)
def test_invalid_calls_raise_the_env_message(
    beam: type, name: str, arguments: dict, fragment: str
) -> None:
    instance = beam()
    instance.reset(seed=1)
    with pytest.raises(ValueError, match=fragment) as caught:
        trl_tool_dict(instance)[name](**arguments)
    assert isinstance(caught.value, ToolCallError) and caught.value.kind
    assert instance.get_reward() == 0.0 and episode_info(instance) is None


def test_submit_gives_the_env_reward_and_later_calls_raise(beam: type) -> None:
    reference, actions = gold_episode("beam_misalignment", seed=11)
    instance = beam()
    instance.reset(seed=11)
    submit = {"intent": "Beam Misalignment", "summary": "Beam re-aligned; field ticket opened."}
    for action in actions[:1]:  # a partial chain: the reward is neither 0 nor 1
        getattr(instance, action["name"])(**as_trl_kwargs(action["arguments"]))
        reference.step(action)
    instance.submit_resolution(**submit)
    _, reward, terminated, _, info = reference.step(
        {"name": "submit_resolution", "arguments": submit}
    )
    assert terminated and 0.0 < reward < 1.0
    assert instance.get_reward() == pytest.approx(reward)
    final = episode_info(instance)
    assert final is not None and final["metrics"] == info["metrics"]
    assert resolved_reward([instance]) == [0.0]  # no fix was applied
    with pytest.raises(ValueError, match="ended"):
        instance.oss_query(cell_id="NR-URB-MICRO-1", window="1h")
    assert instance.get_reward() == pytest.approx(reward)  # unchanged by calls after the end


def test_gold_episode_is_resolved(beam: type) -> None:
    _, actions = gold_episode("beam_misalignment", seed=2)
    instance = beam()
    instance.reset(seed=2)
    for action in actions:
        getattr(instance, action["name"])(**action["arguments"])
    instance.submit_resolution(intent="Beam Misalignment", summary="Beam weights re-aligned.")
    # Resolved: the outcome reward's floor and more; the optional re-measurement after the
    # change was not made (0.16 x 3/4 milestones met).
    assert instance.get_reward() == pytest.approx(0.96)
    assert resolved_reward([instance, beam()]) == [1.0, 0.0]


def test_unsubmitted_episode_scores_zero(beam: type) -> None:
    _, actions = gold_episode("beam_misalignment", seed=4)
    instance = beam()
    assert instance.get_reward() == 0.0  # before any reset
    instance.reset(seed=4)
    getattr(instance, actions[0]["name"])(**actions[0]["arguments"])
    assert instance.get_reward() == 0.0 and episode_info(instance) is None


def test_truncation_at_max_steps_gives_the_env_reward() -> None:
    short = trl_environment("beam_misalignment", max_steps=2)
    reference, actions = gold_episode("beam_misalignment", seed=5, max_steps=2)
    instance = short()
    instance.reset(seed=5)
    for action in actions[:2]:
        getattr(instance, action["name"])(**action["arguments"])
        *_, reward, _, truncated, _ = reference.step(action)
    assert truncated and instance.get_reward() == pytest.approx(reward)
    with pytest.raises(ValueError, match="ended"):
        instance.submit_resolution(intent="Beam Misalignment", summary="too late")


def test_tool_before_reset_raises(beam: type) -> None:
    with pytest.raises(ValueError, match="reset"):
        beam().neighbor_audit(cell_id="NR-URB-MICRO-1")


def test_same_seed_gives_the_same_episode(troubleshooting: type) -> None:
    first, second = troubleshooting(), troubleshooting()
    assert first.reset(**ROW) == second.reset(**ROW)
    assert first.reset(seed=8) != first.reset(seed=9)


def test_reset_reuses_the_instance_with_a_fresh_episode(beam: type) -> None:
    instance = beam()
    statement = instance.reset(seed=2)
    _, actions = gold_episode("beam_misalignment", seed=2)
    for action in actions:
        getattr(instance, action["name"])(**action["arguments"])
    instance.submit_resolution(intent="Beam Misalignment", summary="done")
    assert instance.get_reward() > 0.0
    assert instance.reset(seed=2) == statement  # pooled instances are reset, not rebuilt
    assert instance.get_reward() == 0.0 and episode_info(instance) is None
    assert json.loads(getattr(instance, actions[0]["name"])(**actions[0]["arguments"]))


def test_row_options_reach_reset(troubleshooting: type) -> None:
    row = {**ROW, "intent": "beam_misalignment", "lang": "ar", "sample_index": 4}
    statement = troubleshooting().reset(**row)
    options = {"intent": "beam_misalignment", "lang": "ar", "sample_index": 4}
    expected, _ = TelcoEnv(embedder=None).reset(seed=7, options=options)
    assert statement == expected


def test_prompt_rows_carry_the_system_prompt_and_seeds(troubleshooting: type) -> None:
    rows = prompt_rows(troubleshooting, range(3), lang="en")
    instructions = TelcoEnv(embedder=None).instructions("en")
    assert [row["seed"] for row in rows] == [0, 1, 2]
    assert rows[0]["prompt"] == [
        {"role": "system", "content": instructions},
        {"role": "user", "content": ""},
    ]
    assert troubleshooting().reset(**rows[1]) == TelcoEnv(embedder=None).reset(seed=1)[0]


def test_env_kwargs_are_checked_when_the_class_is_built() -> None:
    with pytest.raises(ValueError, match="engineer"):
        trl_environment("beam_misalignment", require_approval=True)
    with pytest.raises(ValueError):
        trl_environment("beam_misalignment", reward="ira")  # needs an embedder
    assert trl_environment("telcoenv/BeamMisalignment-v0").__name__ == "TelcoBeamMisalignment"


def test_a_care_rollout_asks_the_customer_and_is_rewarded() -> None:
    environment = trl_environment("plan_change", reward="resolved", require_approval=True)
    instance = environment()
    assert "ask_customer" in trl_tool_dict(instance)
    opening = instance.reset(seed=4)
    plan = re.search(r"[A-Z]+-[A-Z0-9]+", opening).group()
    msisdn = re.search(r"\d{9,15}", instance.ask_customer("What is your mobile number?")).group()
    found = json.loads(instance.get_customer(msisdn=msisdn))
    who = instance.ask_customer("Please confirm your full name and date of birth.")
    name, born = read_identity(who)
    checked = instance.verify_identity(
        customer_id=found["customer"]["customer_id"], full_name=name, birth_date=born
    )
    assert json.loads(checked)["verified"] is True
    price = json.loads(instance.get_plan(plan_id=plan))["plan"]["price"]
    with pytest.raises(ToolCallError, match="approval"):
        instance.change_plan(msisdn=msisdn, plan_id=plan)
    vague = instance.ask_customer("May I change your plan now?")  # which plan, at what price?
    assert vague in customer.phrases()["objections"]["what"]["en"]
    consent = instance.ask_customer(f"May I change your plan to {plan} at {price} SAR a month?")
    assert any(yes in consent for yes in customer.phrases()["answers"]["approval"]["en"])
    instance.change_plan(msisdn=msisdn, plan_id=plan)
    instance.submit_resolution(intent="Plan change", summary="Moved the line.")
    assert instance.get_reward() == 1.0
    with pytest.raises(ToolCallError, match="non-empty"):
        instance.ask_customer("  ")


def test_trl_tools_raise_only_the_tool_error_trl_expects():
    pytest.importorskip("trl")
    environment = trl_environment("beam_misalignment", embedder=None)()
    environment.reset(seed=0)
    for value in (float("nan"), "\udc80", b"x", {1}, deep_list(1000)):
        with pytest.raises(ToolCallError) as error:
            environment.oss_query(cell_id=value, window="1h")
        assert error.value.kind == "invalid_arguments"


# A submission written as JSON text: a message the counterpart reads, never a call.
JSON_SUBMISSION = json.dumps(
    {"name": "submit_resolution", "arguments": {"intent": "Bill Shock", "summary": "done"}}
)


def test_ask_customer_sends_json_text_as_a_message_not_as_a_call() -> None:
    instance = trl_environment("customer_care")()
    instance.reset(seed=0)
    reply = instance.ask_customer(JSON_SUBMISSION)
    assert "submitted" not in reply and episode_info(instance) is None
    assert instance._env.unwrapped.trace.submission is None


def test_prompt_rows_refuse_fields_that_every_reset_would_refuse(troubleshooting: type) -> None:
    for fields in ({"lang": "xx"}, {"intent": "nope"}):
        with pytest.raises((EpisodeOptionError, UnknownIntentError)):
            prompt_rows(troubleshooting, seeds=[0], **fields)
    assert len(prompt_rows(troubleshooting, seeds=[0, 1], lang="ar")) == 2


def test_a_curriculum_picks_each_seeds_task_and_learns_from_the_rewards() -> None:
    """GRPO's rollouts of one row (one seed) play the curriculum's task for that seed; the
    reward function records each finished rollout once, and a solved intent moves up."""
    from telcoenv.curriculum import Curriculum
    from telcoenv.feedback import hint
    from telcoenv.integrations.trl import curriculum_reward

    curriculum = Curriculum("network", intents=["beam_misalignment"], min_episodes=2, seed=4)
    environment_class = trl_environment("troubleshooting", curriculum=curriculum)
    reward = curriculum_reward(curriculum)
    group = [environment_class() for _ in range(2)]
    statements = [environment.reset(seed=11, prompt="ignored") for environment in group]
    assert statements[0] == statements[1]
    task = curriculum.task_for(11)
    assert task.rung_name == "demonstration"
    env = group[0]._env.unwrapped
    assert env.trace.intent == "BEAM_MISALIGNMENT" and env.trace.hints == "call"
    assert env.trace.language == task.lang
    privileged = env.episode.privileged_info()
    first = privileged["gold_chain"][0]
    arguments = json.dumps(first["arguments"], separators=(",", ":"), sort_keys=True)
    written = f'{{"name":"{first["tool"]}","arguments":{arguments}}}'
    assert statements[0].endswith(f"{hint(first['tool'], task.lang, call=True)} {written}")
    for environment in group:  # both solve it
        for call in privileged["gold_chain"]:
            getattr(environment, call["tool"])(**as_trl_kwargs(call["arguments"]))
        environment.submit_resolution(
            intent=privileged["label"]["en"], summary=privileged["gold_summary"]["en"]
        )
    assert reward(environments=group) == [1.0, 1.0]
    assert reward(environments=group) == [1.0, 1.0]  # counted once: no second record
    assert curriculum.level("beam_misalignment") == 1
    assert curriculum.table()[0]["rung_name"] == "walkthrough"
    # A row that names its intent plays it as given: the curriculum is not asked.
    group[0].reset(seed=12, intent="beam_misalignment")
    assert group[0]._task is None and group[0]._env.unwrapped.trace.hints == "none"
    for environment in group:
        environment._close()


def test_a_curriculum_of_another_domain_or_intent_is_refused() -> None:
    from telcoenv.curriculum import Curriculum

    with pytest.raises(ValueError, match="bss domain"):
        trl_environment("troubleshooting", curriculum=Curriculum("bss"))
    with pytest.raises(ValueError, match="plays only beam_misalignment"):
        trl_environment("beam_misalignment", curriculum=Curriculum("network"))


def test_a_core_tool_set_class_has_no_distractor_methods() -> None:
    """tool_set="core": the class's methods (the tools TRL shows the model) are the core
    tools the environment offers, not the whole catalogue."""
    core = trl_environment("beam_misalignment", tool_set="core", tool_format="compact")
    every = trl_environment("beam_misalignment")
    env = TelcoEnv("beam_misalignment", embedder=None, tool_set="core")
    offered = {tool["function"]["name"] for tool in env.tools}
    methods = {name for name in vars(core) if not name.startswith("_")} - {"reset", "get_reward"}
    assert methods == offered
    assert offered < {name for name in vars(every) if not name.startswith("_")}
