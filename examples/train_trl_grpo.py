"""GRPO on telcoenv with TRL's ``GRPOTrainer(environment_factory=...)``, on a CPU, offline.

    python examples/train_trl_grpo.py --max-steps 2

Needs ``pip install "telcoenv[trl]"``. Nothing is downloaded: the chat model is tiny, random
and built here (``examples/_tiny_model.py``: a BPE tokenizer trained on telcoenv's texts, a
ChatML tool-calling template, a two-layer Qwen2). The steps:

1. ``trl_environment("load_balancing_needed")`` turns the environment into the class TRL wants:
   ``reset(**row)`` returns the engineer's statement, one method per tool, ``get_reward()``.
   ``prompt_rows`` makes the dataset: the system prompt and one ``seed`` per row, so the
   ``--num-generations`` rollouts of a GRPO group play the same episode.
2. Warm-up (``--warmup-steps``, 0 to skip): a random model writes no tool calls, so every
   rollout would end at its first turn and score 0. A few supervised steps on the gold
   trajectories of the training episodes (taken from ``privileged=True``) teach it the
   tool-call format; its sampled rollouts then differ, and so do their rewards.
3. GRPO: TRL generates, parses tool calls, calls the environment's methods and appends the
   results, turn after turn. Rewards: ``get_reward`` (telcoenv's SAS, logged under the class
   name) and ``resolved_reward`` (1 when the fault is verified fixed on the simulated network).
   The rewards logged at each step are printed.

With ``--curriculum`` the episodes come from ``telcoenv.curriculum``: each row's seed gets the
curriculum's task (its rung's knobs: the demonstration first, with the next call written out
after every step), ``curriculum_reward`` feeds each rollout's outcome back, and the
curriculum's table (rung, recent success, episodes) is printed at the end.

The point is the plumbing, not the learning: the model is far too small to learn the task.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach the Hugging Face Hub
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is experimental

import torch
from _tiny_model import build_model, build_tokenizer
from datasets import Dataset
from transformers import (
    PreTrainedModel,
    PreTrainedTokenizerFast,
    PrinterCallback,
    TrainerCallback,
)
from transformers.utils import get_json_schema
from trl import GRPOConfig, GRPOTrainer

from telcoenv.curriculum import Curriculum
from telcoenv.env import TelcoEnv
from telcoenv.integrations.trl import (
    curriculum_reward,
    episode_info,
    prompt_rows,
    resolved_reward,
    trl_environment,
)

ENV_NAME = "load_balancing_needed"  # gold chain: neighbor_audit -> optimize_cell
Conversation = list[dict[str, Any]]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-steps", type=int, default=4, help="GRPO optimisation steps")
    parser.add_argument("--warmup-steps", type=int, default=70, help="supervised warm-up steps")
    parser.add_argument("--episodes", type=int, default=2, help="training episodes (seeds)")
    parser.add_argument("--num-generations", type=int, default=4, help="rollouts per episode")
    parser.add_argument("--max-completion-length", type=int, default=640)
    parser.add_argument("--temperature", type=float, default=0.7, help="sampling temperature")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--curriculum", action="store_true", help="draw the episodes from telcoenv.curriculum"
    )
    return parser.parse_args(argv)


def trl_tools(environment: object) -> list[Callable[..., str]]:
    """The tool methods of an environment instance, listed the way GRPOTrainer lists them."""
    return [
        getattr(environment, name)
        for name, _ in inspect.getmembers(type(environment), predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    ]


def tool_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    call = {"type": "function", "function": {"name": name, "arguments": arguments}}
    return {"role": "assistant", "content": "", "tool_calls": [call]}


def gold_conversation(environment_class: type, row: dict[str, Any]) -> Conversation:
    """The gold trajectory of a row's episode, played through the TRL class's tool methods."""
    privileged = TelcoEnv(ENV_NAME, privileged=True, embedder=None, intent_list=False)
    info = privileged.reset(seed=row["seed"])[1]["privileged"]
    environment = environment_class()
    messages = [row["prompt"][0], {"role": "user", "content": environment.reset(**row)}]
    submit = {"intent": info["label"]["en"], "summary": info["root_cause"]["en"]}
    calls = [(c["tool"], c["arguments"]) for c in info["gold_chain"]]
    for name, arguments in [*calls, ("submit_resolution", submit)]:
        observation = getattr(environment, name)(**arguments)
        messages += [
            tool_call(name, arguments),
            {"role": "tool", "name": name, "content": observation},
        ]
    return [*messages, {"role": "assistant", "content": "Resolved."}]


def corpus(conversations: list[Conversation], tools: list[Callable[..., str]]) -> list[str]:
    """The texts the tokenizer is trained on: the conversations and the tool schemas."""
    texts = [json.dumps(get_json_schema(tool)) for tool in tools]
    for messages in conversations:
        for message in messages:
            texts.append(message["content"])
            texts += [json.dumps(call["function"]) for call in message.get("tool_calls", [])]
    return texts


def assistant_tokens(
    tokenizer: PreTrainedTokenizerFast, messages: Conversation, tools: list[Callable[..., str]]
) -> tuple[list[int], list[int]]:
    """Token ids of a conversation and labels that keep only the assistant turns."""

    def render(upto: int, prompt: bool = False) -> list[int]:
        return tokenizer.apply_chat_template(
            messages[:upto], tools=tools, add_generation_prompt=prompt, return_dict=False
        )

    ids = render(len(messages))
    labels = [-100] * len(ids)
    for index, message in enumerate(messages):
        if message["role"] == "assistant":
            start, end = len(render(index, prompt=True)), len(render(index + 1))
            labels[start:end] = ids[start:end]
    return ids, labels


def warm_up(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerFast,
    conversations: list[Conversation],
    tools: list[Callable[..., str]],
    steps: int,
) -> None:
    """Supervised steps on the assistant turns of the gold conversations."""
    examples = [assistant_tokens(tokenizer, messages, tools) for messages in conversations]
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for step in range(1, steps + 1):
        total = 0.0
        for ids, labels in examples:
            loss = model(input_ids=torch.tensor([ids]), labels=torch.tensor([labels])).loss
            loss.backward()
            total += loss.item()
        optimizer.step()
        optimizer.zero_grad()
        if step == 1 or step % 10 == 0 or step == steps:
            print(f"warm-up step {step}: loss={total / len(examples):.3f}", flush=True)


class PrintRewards(TrainerCallback):
    """Print the rewards that GRPOTrainer logs at each step."""

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict | None = None, **_: Any
    ) -> None:
        if logs and "reward" in logs:
            parts = [f"reward={logs['reward']:.3f}"]
            parts += [
                f"{key.split('/')[1]}={value:.3f}"
                for key, value in logs.items()
                if key.startswith("rewards/") and key.endswith("/mean")
            ]
            parts += [
                f"{key}={value:.2f}" for key, value in logs.items() if key.startswith("tools/")
            ]
            print(f"step {state.global_step}: " + " ".join(parts), flush=True)


def grpo_config(args: argparse.Namespace, output_dir: str) -> GRPOConfig:
    """A few small CPU steps: one episode per step, ``--num-generations`` rollouts of it."""
    return GRPOConfig(
        output_dir=output_dir,
        max_steps=args.max_steps,
        per_device_train_batch_size=args.num_generations,
        num_generations=args.num_generations,
        max_completion_length=args.max_completion_length,  # all turns, tool results included
        max_tool_calling_iterations=6,
        learning_rate=1e-4,
        temperature=args.temperature,
        disable_tqdm=True,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        bf16=False,
        activation_checkpointing=False,
        shuffle_dataset=False,
        seed=args.seed,
    )


def train(args: argparse.Namespace) -> tuple[GRPOTrainer, Curriculum | None]:
    """Build the environment class, data, tokenizer and model; warm up; run GRPO."""
    curriculum, reward_funcs = None, [resolved_reward]
    if args.curriculum:  # English only: the warm-up's gold episodes are read in English
        curriculum = Curriculum("network", intents=[ENV_NAME], langs=["en"], min_episodes=2)
        reward_funcs = [curriculum_reward(curriculum)]
    # No intent list in the system prompt: shorter prompts for the CPU run.
    environment_class = trl_environment(ENV_NAME, intent_list=False, curriculum=curriculum)
    rows = prompt_rows(environment_class, range(args.episodes))
    tools = trl_tools(environment_class())
    conversations = [gold_conversation(environment_class, row) for row in rows]
    tokenizer = build_tokenizer(corpus(conversations, tools))
    model = build_model(tokenizer, seed=args.seed)
    if args.warmup_steps > 0:
        warm_up(model, tokenizer, conversations, tools, args.warmup_steps)
    with tempfile.TemporaryDirectory() as output_dir:
        trainer = GRPOTrainer(
            model=model,
            processing_class=tokenizer,
            reward_funcs=reward_funcs,
            args=grpo_config(args, output_dir),
            train_dataset=Dataset.from_list(rows),
            environment_factory=environment_class,
            callbacks=[PrintRewards()],
        )
        trainer.remove_callback(PrinterCallback)  # PrintRewards prints what matters here
        trainer.train()
    return trainer, curriculum


def main(argv: Sequence[str] | None = None) -> int:
    started = time.perf_counter()
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    torch.set_num_threads(min(2, torch.get_num_threads()))
    trainer, curriculum = train(args)
    for environment in trainer.environments or []:  # the last batch's rollouts
        info = episode_info(environment)
        chain = info["metrics"]["predicted_chain"] if info else "(not submitted)"
        print(f"rollout: reward={environment.get_reward():.3f} tools={chain}")
    for row in curriculum.table() if curriculum is not None else ():
        print(f"curriculum: {json.dumps(row)}")
    print(f"done in {time.perf_counter() - started:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
