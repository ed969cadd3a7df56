"""verl adapter contract: the classes are driven the way verl 0.9's agent loop drives them.

Tool calls go through verl's own ``ToolAgentLoop._call_tool`` (create -> execute -> release per
call, ``agent_data.request_id`` naming the trajectory), tools are loaded from the written YAML
with verl's ``initialize_tools_from_config``, the agent loop is built from the agent-loop YAML
with ``hydra.utils.instantiate`` as ``AgentLoopWorker`` does and run against a scripted LLM
server with a byte-level tokenizer, and rows are read back with verl's ``RLHFDataset``.
"""

from __future__ import annotations

import asyncio
import json
import runpy
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest.mock import MagicMock

import pytest

pytest.importorskip("verl")

import hydra
from omegaconf import OmegaConf
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast
from verl.experimental.agent_loop.agent_loop import (
    DictConfigWrap,
    ToolListWrap,
    _agent_loop_registry,
)
from verl.experimental.agent_loop.tool_agent_loop import AgentData, ToolAgentLoop
from verl.experimental.agent_loop.tool_parser import FunctionCall
from verl.tools.tool_registry import initialize_tools_from_config
from verl.utils.dataset.rl_dataset import RLHFDataset
from verl.workers.rollout.replica import TokenOutput

from telcoenv.env import TelcoEnv
from telcoenv.errors import TelcoEnvError
from telcoenv.integrations import verl as tv
from tests.conftest import EXAMPLES, HOSTILE_ACTIONS, solving_actions

pytestmark = pytest.mark.integration

ENV_KWARGS = {"intent": "beam_misalignment", "embedder": None}
SPEC = {"seed": 11, "lang": "en"}
EOS = "<|im_end|>"
CHAT_TEMPLATE = (  # a small Hermes-style template: tools in the system turn, <tool_call> JSON
    "{%- if tools %}{{- '<|im_start|>system\\n' }}"
    "{%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n' }}{%- endif %}"
    "{%- for tool in tools %}{{- tool | tojson + '\\n' }}{%- endfor %}{{- '<|im_end|>\\n' }}"
    "{%- elif messages[0].role == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message.role == 'assistant' %}"
    "{{- '<|im_start|>assistant\\n' + (message.content or '') }}"
    "{%- for call in message.tool_calls or [] %}"
    "{{- '<tool_call>' + call.function | tojson + '</tool_call>' }}{%- endfor %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- elif message.role != 'system' %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


# --- helpers ------------------------------------------------------------------------------------


@pytest.fixture
def registry(request: pytest.FixtureRequest) -> Iterator[str]:
    """A registry name of the test's own, so that tests never share episodes."""
    name = f"test::{request.node.name}"
    yield name
    tv.get_registry(name).clear()


@pytest.fixture
def configs(tmp_path: Path, registry: str) -> tv.VerlConfigPaths:
    return tv.write_configs(tmp_path / "config", env_kwargs=ENV_KWARGS, registry=registry)


@pytest.fixture
def tools(configs: tv.VerlConfigPaths) -> list:
    """The tools as verl's AgentLoopWorker loads them from ``tool_config_path``."""
    return initialize_tools_from_config(str(configs.tool_config))


@pytest.fixture(scope="module")
def tokenizer() -> PreTrainedTokenizerFast:
    """A byte-level tokenizer (exact round trip of any text) with a chat template."""
    vocab = {ch: i for i, ch in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        eos_token=EOS,
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def row_for(spec: dict[str, Any]) -> dict[str, Any]:
    return tv.build_rows([spec], env_kwargs=ENV_KWARGS)[0]


def tool_loop(tools: list) -> ToolAgentLoop:
    """A ToolAgentLoop with only what its real ``_call_tool`` needs (as in verl's CPU tests)."""
    loop = MagicMock(spec=ToolAgentLoop)
    loop.tools = {tool.name: tool for tool in tools}
    loop.max_tool_response_length = 10**7
    loop.tool_response_truncate_side = "middle"
    loop._call_tool = ToolAgentLoop._call_tool.__get__(loop, ToolAgentLoop)
    return loop


def agent_data(row: dict[str, Any], request_id: str) -> AgentData:
    """verl's per-trajectory state, with the row's ``tools_kwargs`` as RLHFDataset gives them."""
    return AgentData(
        messages=list(row["prompt"]),
        image_data=None,
        video_data=None,
        audio_data=None,
        mm_processor_kwargs=None,
        metrics={},
        request_id=request_id,
        tools_kwargs=row["extra_info"]["tools_kwargs"],
    )


async def call(loop: ToolAgentLoop, data: AgentData, action: dict[str, Any]) -> tuple[str, float]:
    """One tool call through verl's ``_call_tool``: the model's JSON arguments, as parsed."""
    function_call = FunctionCall(name=action["name"], arguments=json.dumps(action["arguments"]))
    response, reward, _ = await loop._call_tool(function_call, data.tools_kwargs, data)
    return response.text, reward


def reference(spec: dict[str, Any]) -> tuple[TelcoEnv, dict[str, Any]]:
    """A privileged local environment reset to the spec's episode."""
    env = TelcoEnv(**ENV_KWARGS, privileged=True)
    options = {k: v for k, v in spec.items() if k != "seed"}
    _, info = env.reset(seed=spec["seed"], options=options)
    return env, info


def local_replay(spec: dict[str, Any], actions: list[Any]) -> tuple[list, float, dict]:
    """Observations and rewards of ``actions`` in a local episode, its return and last info."""
    env, _ = reference(spec)
    steps, total, info = [], 0.0, {}
    for action in actions:
        observation, reward, _, _, info = env.step(action)
        steps.append((observation, float(reward)))
        total += float(reward)
    return steps, total, info


def solution(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The gold chain and a submission with the true label and gold summary."""
    _, info = reference(spec)
    return solving_actions(info["privileged"], info["language"])


# --- configuration ------------------------------------------------------------------------------


def test_tool_yaml_loads_in_verl_and_lists_every_tool(tools: list) -> None:
    env = TelcoEnv(**ENV_KWARGS)
    specs = {tool["function"]["name"]: tool["function"] for tool in env.tools}
    assert sorted(tool.name for tool in tools) == sorted(specs)
    assert all(isinstance(tool, tv.TelcoTool) for tool in tools)
    for tool in tools:
        schema = tool.get_openai_tool_schema().function
        spec = specs[tool.name]
        assert schema.description == spec["description"]
        assert schema.parameters.required == spec["parameters"].get("required", [])
        assert set(schema.parameters.properties) == set(spec["parameters"]["properties"])
    # verl keeps type/description/enum only; nested structure is kept in the description.
    changes = next(t for t in tools if t.name == "optimize_cell")
    hint = changes.tool_schema.function.parameters.properties["changes"].description
    assert "JSON Schema" in hint and "tilt_deg" in hint


def test_agent_loop_yaml_names_the_registered_loop(configs: tv.VerlConfigPaths) -> None:
    entries = OmegaConf.load(configs.agent_loop_config)
    assert [entry.name for entry in entries] == [tv.AGENT_NAME]
    assert hydra.utils.get_class(entries[0]._target_) is tv.TelcoAgentLoop
    assert _agent_loop_registry[tv.AGENT_NAME]["_target_"] == tv.AGENT_LOOP_CLASS
    assert OmegaConf.to_container(entries[0].env_kwargs) == ENV_KWARGS


# --- tools --------------------------------------------------------------------------------------


def test_calls_of_one_trajectory_share_one_episode(tools: list, registry: str) -> None:
    actions = solution(SPEC)[:-1]
    expected, _, _ = local_replay(SPEC, actions)
    loop, data = tool_loop(tools), agent_data(row_for(SPEC), "trajectory-1")

    async def trajectory() -> list:
        return [await call(loop, data, action) for action in actions]

    assert asyncio.run(trajectory()) == expected
    episodes = tv.get_registry(registry)
    assert len(episodes) == 1 and "trajectory-1" in episodes
    assert episodes.get("trajectory-1").last_info["steps"] == len(actions)
    assert all(not tool.open_calls for tool in tools)  # every call instance was released


def test_final_reward_equals_the_local_episode(tools: list, registry: str) -> None:
    actions = solution(SPEC)
    expected, local_return, local_info = local_replay(SPEC, actions)
    assert local_return > 0.0  # the gold episode is rewarded: the comparison is meaningful
    loop, data = tool_loop(tools), agent_data(row_for(SPEC), "trajectory-1")
    submit_tool = loop.tools["submit_resolution"]

    async def trajectory() -> tuple[list, float, float]:
        steps = [await call(loop, data, action) for action in actions]
        return (
            steps,
            await submit_tool.calc_reward("call-0", agent_data=data),
            await episode_score(),
        )

    async def episode_score() -> float:
        engineer = tv.TelcoEngineerInteraction({"registry": registry, "env_kwargs": ENV_KWARGS})
        return await engineer.calculate_score("trajectory-1")

    steps, tool_reward, score = asyncio.run(trajectory())
    assert steps == expected
    assert steps[-1][1] == local_return == tool_reward == score
    episode = tv.get_registry(registry).get("trajectory-1")
    assert episode.done and episode.final_info["metrics"] == local_info["metrics"]
    assert episode.final_info["resolved"] == local_info["resolved"]


def test_parallel_trajectories_are_isolated(tools: list, registry: str) -> None:
    specs = {"a": {"seed": 1}, "b": {"seed": 2}, "c": {"seed": 1}}  # c: same episode as a
    scripts = {key: solution(spec) for key, spec in specs.items()}
    scripts["c"] = scripts["c"][:2]  # an unfinished trajectory next to a finished one
    loop = tool_loop(tools)

    async def trajectory(key: str) -> list:
        data = agent_data(row_for(specs[key]), f"trajectory-{key}")
        steps = []
        for action in scripts[key]:
            steps.append(await call(loop, data, action))
            await asyncio.sleep(0)  # interleave the trajectories
        return steps

    async def all_trajectories() -> list:
        return await asyncio.gather(*(trajectory(key) for key in specs))

    results = dict(zip(specs, asyncio.run(all_trajectories()), strict=True))
    for key, spec in specs.items():
        assert results[key] == local_replay(spec, scripts[key])[0]
    episodes = tv.get_registry(registry)
    assert len(episodes) == 3
    assert episodes.get("trajectory-a").done and not episodes.get("trajectory-c").done


def test_parallel_calls_of_one_turn_run_in_call_order(tools: list) -> None:
    actions = solution(SPEC)[:3]
    expected, _, _ = local_replay(SPEC, actions)
    loop, data = tool_loop(tools), agent_data(row_for(SPEC), "trajectory-1")

    async def one_turn() -> list:  # as ToolAgentLoop._handle_processing_tools_state gathers them
        return await asyncio.gather(*(call(loop, data, action) for action in actions))

    assert asyncio.run(one_turn()) == expected


def test_refused_calls_reach_the_model_as_errors(tools: list, registry: str) -> None:
    loop, data = tool_loop(tools), agent_data(row_for(SPEC), "trajectory-1")
    bad = {"name": "oss_query", "arguments": {"cell_id": 5}}
    expected, _, _ = local_replay(SPEC, [bad])

    async def trajectory() -> tuple:
        refused = await call(loop, data, bad)
        unknown = await call(loop, data, {"name": "reboot_everything", "arguments": {}})
        not_json = FunctionCall(name="oss_query", arguments="{cell_id:")
        malformed = await loop._call_tool(not_json, data.tools_kwargs, data)
        return refused, unknown, malformed[0].text

    refused, unknown, malformed = asyncio.run(trajectory())
    assert refused == expected[0] and "error" in json.loads(refused[0])
    # Unknown tools and non-JSON arguments are answered by verl, before the environment.
    assert "Unknown function" in unknown[0] and "Invalid JSON" in malformed
    assert tv.get_registry(registry).get("trajectory-1").last_info["steps"] == 1


def test_execute_without_create_is_refused(tools: list) -> None:
    with pytest.raises(ValueError, match="before create"):
        asyncio.run(tools[0].execute("nobody", {}))


# --- the simulated engineer -----------------------------------------------------------------------


def test_engineer_interaction_shares_the_trajectory_with_the_tools(
    tools: list, registry: str
) -> None:
    row = row_for(SPEC)
    question = "Which cell is affected, and since when?"
    actions = solution(SPEC)
    expected, local_return, _ = local_replay(SPEC, [question, *actions])
    engineer = tv.TelcoEngineerInteraction({"registry": registry, "env_kwargs": ENV_KWARGS})
    loop, data = tool_loop(tools), agent_data(row, "trajectory-1")

    async def conversation() -> tuple:
        instance = await engineer.start_interaction(
            "trajectory-1", **row["extra_info"]["interaction_kwargs"]
        )
        messages = [*row["prompt"], {"role": "assistant", "content": question}]
        reply = await engineer.generate_response(instance, messages)
        steps = [await call(loop, data, action) for action in actions]
        after = await engineer.generate_response(instance, messages, content="Thanks!")
        score = await engineer.calculate_score(instance)
        await engineer.finalize_interaction(instance)
        return reply, steps, after, score

    reply, steps, after, score = asyncio.run(conversation())
    should_end, text, turn_score, _ = reply
    assert (should_end, text, turn_score) == (False, *expected[0])
    assert steps == expected[1:]
    assert after[0] is True  # the episode has ended: the engineer closes the case
    assert score == local_return
    assert "trajectory-1" not in tv.get_registry(registry)


def test_mismatched_configs_are_refused(registry: str) -> None:
    episodes = tv.get_registry(registry)
    episodes.open("t", SPEC, ENV_KWARGS)
    with pytest.raises(ValueError, match="is open with"):
        episodes.open("t", {**SPEC, "seed": 12}, ENV_KWARGS)
    episodes.close("t")


def test_episode_spec_is_normalised_and_checked() -> None:
    assert tv.episode_spec({"name": "telco_engineer", "seed": 3, "intent": None}) == {"seed": 3}
    with pytest.raises(ValueError, match="seed"):
        tv.episode_spec({"lang": "en"})
    with pytest.raises(ValueError, match="unknown episode field"):
        tv.episode_spec({"seed": 1, "temperature": 0.7})


# --- dataset rows ---------------------------------------------------------------------------------


def test_rows_load_in_verl_rlhf_dataset(tmp_path: Path, tokenizer: PreTrainedTokenizerFast) -> None:
    specs = [{"seed": 1}, {"seed": 2, "lang": "ar"}, {"seed": 3, "sample_index": 4}]
    rows = tv.build_rows(specs, env_kwargs=ENV_KWARGS)
    path = tv.write_parquet(rows, tmp_path / "train.parquet")
    config = OmegaConf.create(
        {"filter_overlong_prompts": False, "cache_dir": str(tmp_path / "cache")}
    )
    dataset = RLHFDataset(str(path), tokenizer, config)
    assert len(dataset) == len(specs)
    tool_names = {tool["function"]["name"] for tool in TelcoEnv(**ENV_KWARGS).tools}
    for item, spec in zip(dataset, specs, strict=True):
        env, info = reference(spec)  # the rollout's episode has exactly the row's prompt
        assert item["raw_prompt"] == info["messages"]
        assert item["agent_name"] == tv.AGENT_NAME and item["data_source"] == tv.DATA_SOURCE
        assert item["reward_model"]["ground_truth"] == info["privileged"]["intent"]
        assert set(item["tools_kwargs"]) == tool_names
        for kwargs in item["tools_kwargs"].values():
            assert tv.episode_spec(kwargs["create_kwargs"]) == spec
        assert item["interaction_kwargs"]["name"] == tv.INTERACTION_NAME
        assert tv.episode_spec(item["interaction_kwargs"]) == spec


def test_example_prepares_what_verl_reads(
    tmp_path: Path, tokenizer: PreTrainedTokenizerFast
) -> None:
    script = EXAMPLES / "verl" / "prepare_data.py"
    argv = ["--out", str(tmp_path), "--intent", "beam_misalignment", "--embedder", "none"]
    paths = runpy.run_path(str(script))["main"]([*argv, "--train", "3", "--val", "2"])
    assert len(initialize_tools_from_config(str(paths["tool_config"]))) == len(
        TelcoEnv(embedder=None).tools
    )
    config = OmegaConf.create({"filter_overlong_prompts": False, "cache_dir": str(tmp_path)})
    train = RLHFDataset(str(paths["train_files"]), tokenizer, config)
    val = RLHFDataset(str(paths["val_files"]), tokenizer, config)
    seeds = [item["interaction_kwargs"]["seed"] for item in [*train, *val]]
    assert seeds == [0, 1, 2, 3, 4]  # validation episodes are not training episodes


def test_example_prepares_curriculum_rows_for_an_sft_warm_start(
    tmp_path: Path, tokenizer: PreTrainedTokenizerFast
) -> None:
    """--curriculum: the rows are the curriculum's tasks (its intents, rungs and languages), the
    agent loop logs outcomes where the curriculum reads them, and the tools offered are the
    core ones in the compact format (what the SFT trajectories showed)."""
    script = EXAMPLES / "verl" / "prepare_data.py"
    intents = "load_balancing_needed,pci_collision"
    argv = ["--out", str(tmp_path), "--curriculum", "--intents", intents, "--lang", "en,ar"]
    argv += ["--tool-set", "core", "--tool-format", "compact", "--embedder", "none"]
    paths = runpy.run_path(str(script))["main"]([*argv, "--train", "6", "--val", "2"])
    config = OmegaConf.create({"filter_overlong_prompts": False, "cache_dir": str(tmp_path)})
    train = RLHFDataset(str(paths["train_files"]), tokenizer, config)
    specs = [tv.episode_spec(item["interaction_kwargs"]) for item in train]
    assert {spec["intent"] for spec in specs} <= set(intents.split(","))
    assert all(spec["hints"] == "call" and spec["tool_set"] == "core" for spec in specs)
    loop = OmegaConf.load(paths["agent_loop_config"])
    assert str(tmp_path.resolve() / "outcomes.jsonl") in json.dumps(OmegaConf.to_container(loop))
    tools = initialize_tools_from_config(str(paths["tool_config"]))
    offered = TelcoEnv(embedder=None, tool_set="core").tools
    assert len(tools) == len(offered) < len(TelcoEnv(embedder=None).tools)
    assert (tmp_path / "curriculum.json").exists()


def test_the_grpo_script_sets_only_keys_verl_has() -> None:
    """run_grpo.sh's overrides (LoRA from the SFT adapter included) are keys of verl's own
    trainer config: a misspelt one would fail at the start of a GPU run."""
    import re

    import verl

    text = (EXAMPLES / "verl" / "run_grpo.sh").read_text()
    keys = set(re.findall(r"^\s*\(?([a-z_]+(?:\.[a-z_0-9]+)+)=", text, re.M))
    keys |= set(re.findall(r"\s([a-z_]+(?:\.[a-z_0-9]+)+)=", text))
    assert "actor_rollout_ref.model.lora_adapter_path" in keys and len(keys) > 20
    generated = Path(verl.__file__).parent / "trainer" / "config" / "_generated_ppo_trainer.yaml"
    config = OmegaConf.load(generated)

    def has(key: str) -> bool:  # a key whose value is mandatory (???) exists too
        parent, _, leaf = key.rpartition(".")
        node = OmegaConf.select(config, parent, default=None)
        return node is not None and leaf in node.keys()  # noqa: SIM118 - `in` skips ???

    assert [key for key in sorted(keys) if not has(key)] == []


# --- the agent loop -------------------------------------------------------------------------------


class ScriptedServer:
    """verl's LLM server client, answering each ``generate`` with the next scripted text."""

    def __init__(self, tokenizer: PreTrainedTokenizerFast, script: list[str]) -> None:
        self.tokenizer, self.script = tokenizer, list(script)
        self.generated: list[int] = []  # token counts of the answers

    async def generate(self, *, request_id: str, prompt_ids: list[int], **_: Any) -> TokenOutput:
        text = self.script.pop(0) + EOS
        token_ids = self.tokenizer.encode(text, add_special_tokens=False)
        self.generated.append(len(token_ids))
        return TokenOutput(token_ids=token_ids)


def tool_call_text(*actions: dict[str, Any]) -> str:
    return "".join(f"<tool_call>{json.dumps(a, ensure_ascii=False)}</tool_call>" for a in actions)


def build_agent_loop(
    configs: tv.VerlConfigPaths,
    tools: list,
    tokenizer: PreTrainedTokenizerFast,
    server: ScriptedServer,
    **overrides: Any,
) -> tv.TelcoAgentLoop:
    """The loop as ``AgentLoopWorker._run_agent_loop`` builds it from the agent-loop YAML."""
    trainer = OmegaConf.create(
        {
            "actor_rollout_ref": {
                "rollout": {
                    "prompt_length": 2**17,
                    "response_length": 2**18,
                    "full_determinism": False,
                    "multi_turn": {
                        "max_user_turns": None,
                        "max_assistant_turns": None,
                        "max_parallel_calls": 4,
                        "max_tool_response_length": 10**7,
                        "tool_response_truncate_side": "middle",
                        "format": "hermes",
                    },
                }
            },
            "data": {},
        }
    )
    entry = OmegaConf.load(configs.agent_loop_config)[0]
    entry = OmegaConf.merge(entry, overrides)
    return hydra.utils.instantiate(
        config=entry,
        trainer_config=DictConfigWrap(config=trainer),
        server_manager=server,
        tokenizer=tokenizer,
        processor=None,
        hf_model_type=None,
        dataset_cls=RLHFDataset,
        data_config=DictConfigWrap(trainer.data),
        tools=ToolListWrap(tools),
    )


def run_kwargs(row: dict[str, Any]) -> dict[str, Any]:
    """The dataset fields AgentLoopWorker passes to ``run`` (as RLHFDataset returns them)."""
    return {
        "raw_prompt": row["prompt"],
        "agent_name": row["agent_name"],
        "extra_info": row["extra_info"],
        "tools_kwargs": row["extra_info"]["tools_kwargs"],
        "interaction_kwargs": row["extra_info"]["interaction_kwargs"],
        "index": row["extra_info"]["index"],
    }


async def rollout(build: Any, *args: Any, **overrides: Any) -> Any:
    """Build the loop inside the event loop (it keeps the running loop) and run one row."""
    *args, row = args
    loop = build(*args, **overrides)
    return await loop.run({}, **run_kwargs(row))


def test_agent_loop_runs_a_trajectory_with_the_engineer(
    configs: tv.VerlConfigPaths, tools: list, tokenizer: PreTrainedTokenizerFast, registry: str
) -> None:
    row = row_for(SPEC)
    question = "Hello, which cell should I look at first?"
    actions = solution(SPEC)
    steps, local_return, local_info = local_replay(SPEC, [question, *actions])
    script = [
        question,
        "Let me look." + tool_call_text(*actions[:2]),  # two parallel calls in one turn
        *(tool_call_text(action) for action in actions[2:]),
    ]
    server = ScriptedServer(tokenizer, script)
    output = asyncio.run(rollout(build_agent_loop, configs, tools, tokenizer, server, row))

    assert server.script == []  # the loop stopped right after submit_resolution
    assert output.reward_score == local_return > 0.0
    info = output.extra_fields["reward_extra_info"]
    assert info["telcoenv_return"] == local_return and info["telcoenv_submitted"] == 1.0
    assert info["telcoenv_steps"] == local_info["steps"] == len(actions) + 1
    assert output.extra_fields["telcoenv"]["metrics"] == local_info["metrics"]
    assert output.extra_fields["turn_scores"] == [0.0]  # one engineer turn
    # Only generated tokens are trained on: the engineer's reply and tool results are masked.
    assert sum(output.response_mask) == sum(server.generated)
    observed = tokenizer.decode(
        [t for t, m in zip(output.response_ids, output.response_mask, strict=True) if m == 0]
    )
    assert steps[0][0] in observed and steps[1][0] in observed
    assert len(tv.get_registry(registry)) == 0  # the episode was closed


def test_agent_loop_bounds_engineer_turns(
    configs: tv.VerlConfigPaths, tools: list, tokenizer: PreTrainedTokenizerFast, registry: str
) -> None:
    server = ScriptedServer(tokenizer, ["Hi?", "Are you there?", "Still here?", "unused"])
    row = row_for(SPEC)
    output = asyncio.run(
        rollout(build_agent_loop, configs, tools, tokenizer, server, row, max_engineer_turns=2)
    )
    assert server.script == ["unused"]  # two replies, then the third message ends the loop
    assert output.reward_score == 0.0  # no submission: the episode is not scored
    info = output.extra_fields["reward_extra_info"]
    assert info["telcoenv_engineer_messages"] == 2.0 and info["telcoenv_submitted"] == 0.0
    assert len(tv.get_registry(registry)) == 0


def test_verl_episode_and_engineer_answer_anything():
    async def run() -> list[str]:
        episode = tv.Episode.start({"seed": 0}, {"intent": "beam_misalignment", "embedder": None})
        texts = []
        for action in HOSTILE_ACTIONS:
            texts.append((await episode.step(action))[0])
        interaction = tv.TelcoEngineerInteraction(
            {
                "registry": "hardening",
                "env_kwargs": {"intent": "beam_misalignment", "embedder": None},
            }
        )
        instance = await interaction.start_interaction("t1", seed=0)
        for content in ([{"type": "text", "text": 3}, {"text": "which cell?"}], object(), "\udc80"):
            texts.append((await interaction.generate_response(instance, [], content=content))[1])
        return texts

    assert all(asyncio.run(run()))


def test_an_engineer_turn_of_json_text_is_a_message_not_a_call() -> None:
    submission = json.dumps(
        {"name": "submit_resolution", "arguments": {"intent": "Coverage Hole", "summary": "x"}}
    )

    async def turn() -> tuple:
        interaction = tv.TelcoEngineerInteraction(
            {"registry": "json-text", "env_kwargs": ENV_KWARGS}
        )
        instance = await interaction.start_interaction("t-json", seed=0)
        return await interaction.generate_response(
            instance, [{"role": "assistant", "content": submission}]
        )

    should_end, _, _, extra = asyncio.run(turn())
    assert not should_end and extra["action"]["kind"] != "submit"


@pytest.mark.parametrize(
    "env_kwargs",
    [
        {"max_steps": "x"},
        {"max_steps": -3},
        {"reward_mode": "bogus"},
        {"reward": "no_such_metric"},
        {"embedder": "no_such_embedder"},
        {"shaping": {"nope": 1}},
    ],
)
def test_bad_env_kwargs_fail_when_the_configs_are_written(tmp_path: Path, env_kwargs: dict) -> None:
    with pytest.raises(TelcoEnvError):
        tv.write_configs(tmp_path, env_kwargs=env_kwargs)
    with pytest.raises(TelcoEnvError):
        tv.build_rows([SPEC], env_kwargs={**ENV_KWARGS, **env_kwargs})


def test_the_outcome_log_feeds_a_curriculum(
    configs: tv.VerlConfigPaths,
    tools: list,
    tokenizer: PreTrainedTokenizerFast,
    registry: str,
    tmp_path: Path,
) -> None:
    """A curriculum's spec (a rung's knobs) plays through verl's loop, which logs the outcome
    that the curriculum then reads."""
    from telcoenv.curriculum import Curriculum

    curriculum = Curriculum("network", intents=["beam_misalignment"], min_episodes=1, seed=2)
    spec = {**curriculum.specs(1)[0], "lang": "en"}
    spec.pop("intent")  # the environment of the configs plays that intent only
    row = row_for(spec)
    assert row["prompt"][-1]["content"].count("Hint") == 1  # the demonstration's hint
    log = tmp_path / "outcomes.jsonl"
    script = [tool_call_text(action) for action in solution(spec)]
    server = ScriptedServer(tokenizer, script)
    output = asyncio.run(
        rollout(build_agent_loop, configs, tools, tokenizer, server, row, outcome_log=str(log))
    )
    assert output.extra_fields["telcoenv"]["resolved"] is True
    [line] = [json.loads(text) for text in log.read_text().splitlines()]
    assert line["resolved"] is True and line["return"] == output.reward_score
    assert line["spec"]["hints"] == "call" and line["spec"]["seed"] == spec["seed"]
    line["spec"]["intent"] = "beam_misalignment"
    log.write_text(json.dumps(line) + "\n")
    assert curriculum.record_log(log) == log.stat().st_size
    assert curriculum.level("beam_misalignment") == 1


def test_rows_of_a_test_split_environment_carry_the_canary() -> None:
    from telcoenv.splits import CANARY

    rows = tv.build_rows(
        [{"seed": 3}], env_kwargs={**ENV_KWARGS, "split": "test", "tool_set": "core"}
    )
    extra = rows[0]["extra_info"]
    assert extra["telcoenv_split"] == "test" and extra["canary"] == CANARY
    distractors = {"complaint_trend_analysis", "device_cap_lookup"}
    assert not distractors & set(extra["tools_kwargs"])
    config = tv.tool_config({**ENV_KWARGS, "tool_set": "core"})
    names = {entry["tool_schema"]["function"]["name"] for entry in config["tools"]}
    assert names == set(extra["tools_kwargs"]) and not distractors & names
