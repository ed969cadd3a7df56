"""GRPO on telcoenv with TRL's ``GRPOTrainer(environment_factory=...)``: offline on a CPU with
a tiny local model, or a real chat model from its SFT warm start on a GPU.

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

The point of the default run is the plumbing, not the learning: the tiny model is far too
small to learn the task. **With a real model** (``--model``: a Hugging Face id or folder, or a
GGUF file read through transformers) the warm-up is skipped (``--adapter`` is the warm start:
the LoRA adapter ``examples/train_sft_cpu.py`` wrote, trained further here), and on a CUDA
device the run uses bfloat16, activation checkpointing and, where ``vllm`` is installed, vLLM
generation colocated with training (``--vllm auto|on|off``). The GPU recipe (not run by the
test suite; sizes for one 80 GB GPU, untested on one)::

    python examples/train_trl_grpo.py --model qwen2.5-coder-0.5b-instruct-q4_k_m.gguf \\
        --adapter runs/sft/adapter --curriculum --intents load_balancing_needed,pci_collision \\
        --episodes 64 --num-generations 8 --max-steps 40 --max-completion-length 4096 \\
        --learning-rate 5e-5 --output-dir runs/grpo

The tests run the same path on the CPU with a tiny model and its SFT adapter (two steps).
"""

from __future__ import annotations

import argparse
import importlib.util
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
    AutoModelForCausalLM,
    AutoTokenizer,
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
TINY = "tiny"
Conversation = list[dict[str, Any]]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-steps", type=int, default=4, help="GRPO optimisation steps")
    parser.add_argument(
        "--model",
        default=TINY,
        help=f'"{TINY}" (built here, random), a Hugging Face model id or folder, or a .gguf file',
    )
    parser.add_argument("--adapter", default=None, help="a LoRA adapter to start from (SFT's)")
    parser.add_argument(
        "--warmup-steps",
        type=int,
        default=None,
        help="supervised warm-up steps on the gold episodes (default 70 for the tiny model, "
        "0 for a real one)",
    )
    parser.add_argument(
        "--intents", default=ENV_NAME, help="comma-separated (several: --curriculum)"
    )
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--vllm", default="auto", choices=["auto", "on", "off"])
    parser.add_argument("--output-dir", default=None, help="keep the trained model here")
    parser.add_argument("--episodes", type=int, default=2, help="training episodes (seeds)")
    parser.add_argument("--num-generations", type=int, default=4, help="rollouts per episode")
    parser.add_argument("--max-completion-length", type=int, default=640)
    parser.add_argument("--temperature", type=float, default=0.7, help="sampling temperature")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--curriculum", action="store_true", help="draw the episodes from telcoenv.curriculum"
    )
    args = parser.parse_args(argv)
    args.intents = args.intents.split(",")
    if len(args.intents) > 1 and not args.curriculum:
        parser.error("several --intents are drawn by --curriculum")
    if args.warmup_steps is None:
        args.warmup_steps = 70 if args.model == TINY else 0
    if args.warmup_steps > 0 and len(args.intents) > 1:
        parser.error("the warm-up plays one intent's gold episodes: give one --intents")
    if args.adapter is not None and args.model == TINY:
        parser.error("--adapter needs the --model it was trained on")
    return args


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


def gold_conversation(environment_class: type, row: dict[str, Any], env_id: str) -> Conversation:
    """The gold trajectory of a row's episode, played through the TRL class's tool methods."""
    privileged = TelcoEnv(env_id, privileged=True, embedder=None, intent_list=False)
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


def on_gpu() -> bool:
    return torch.cuda.is_available()


def use_vllm(choice: str) -> bool:
    """vLLM generation: ``on``, ``off``, or (``auto``) on a GPU where vllm is installed."""
    if choice != "auto":
        return choice == "on"
    return on_gpu() and importlib.util.find_spec("vllm") is not None


def grpo_config(args: argparse.Namespace, output_dir: str) -> GRPOConfig:
    """One episode per step, ``--num-generations`` rollouts of it; bfloat16, activation
    checkpointing and (where installed) vLLM on a GPU, float32 on the CPU."""
    gpu, vllm = on_gpu(), use_vllm(args.vllm)
    return GRPOConfig(
        output_dir=output_dir,
        max_steps=args.max_steps,
        per_device_train_batch_size=args.num_generations,
        num_generations=args.num_generations,
        max_completion_length=args.max_completion_length,  # all turns, tool results included
        max_tool_calling_iterations=6 if args.model == TINY else 12,
        learning_rate=args.learning_rate,
        temperature=args.temperature,
        disable_tqdm=True,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=not gpu,
        bf16=gpu,
        activation_checkpointing=gpu,
        use_vllm=vllm,
        **({"vllm_mode": "colocate"} if vllm else {}),
        shuffle_dataset=False,
        seed=args.seed,
    )


def load_model(
    args: argparse.Namespace, conversations: list[Conversation], tools: list[Callable[..., str]]
) -> tuple[PreTrainedModel, PreTrainedTokenizerFast]:
    """The tiny model built here, or ``--model`` (with ``--adapter`` trainable on top)."""
    if args.model == TINY:
        tokenizer = build_tokenizer(corpus(conversations, tools))
        return build_model(tokenizer, seed=args.seed), tokenizer
    where: dict[str, Any] = {"pretrained_model_name_or_path": args.model}
    if args.model.endswith(".gguf"):  # read and dequantised by transformers
        where = {"pretrained_model_name_or_path": os.path.dirname(args.model) or ".",
                 "gguf_file": os.path.basename(args.model)}  # fmt: skip
    tokenizer = AutoTokenizer.from_pretrained(**where)
    dtype = torch.bfloat16 if on_gpu() else torch.float32
    model = AutoModelForCausalLM.from_pretrained(**where, dtype=dtype)
    if args.adapter is not None:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, args.adapter, is_trainable=True)
    return model, tokenizer


def train(args: argparse.Namespace) -> tuple[GRPOTrainer, Curriculum | None]:
    """Build the environment class, data, tokenizer and model; warm up; run GRPO."""
    curriculum, reward_funcs = None, [resolved_reward]
    langs = ["en"] if args.model == TINY else ["en", "ar"]
    if args.curriculum:  # the tiny model's warm-up reads its gold episodes in English
        curriculum = Curriculum("network", intents=args.intents, langs=langs, min_episodes=2)
        reward_funcs = [curriculum_reward(curriculum)]
    env_id = args.intents[0] if len(args.intents) == 1 else "troubleshooting"
    # No intent list in the system prompt: shorter prompts for the CPU run.
    environment_class = trl_environment(env_id, intent_list=False, curriculum=curriculum)
    rows = prompt_rows(environment_class, range(args.episodes))
    tools = trl_tools(environment_class())
    conversations = []
    if args.model == TINY or args.warmup_steps > 0:
        conversations = [gold_conversation(environment_class, row, env_id) for row in rows]
    model, tokenizer = load_model(args, conversations, tools)
    if args.warmup_steps > 0:
        warm_up(model, tokenizer, conversations, tools, args.warmup_steps)
    with tempfile.TemporaryDirectory() as scratch:
        trainer = GRPOTrainer(
            model=model,
            processing_class=tokenizer,
            reward_funcs=reward_funcs,
            args=grpo_config(args, args.output_dir or scratch),
            train_dataset=Dataset.from_list(rows),
            environment_factory=environment_class,
            callbacks=[PrintRewards()],
        )
        trainer.remove_callback(PrinterCallback)  # PrintRewards prints what matters here
        trainer.train()
        if args.output_dir:
            trainer.save_model(args.output_dir)
    return trainer, curriculum


def main(argv: Sequence[str] | None = None) -> int:
    started = time.perf_counter()
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    if not on_gpu():
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
