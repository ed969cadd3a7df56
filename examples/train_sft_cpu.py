"""Supervised fine-tuning of a small chat model on telcoenv's expert trajectories, on a CPU.

A LoRA warm start for Qwen2.5-Coder-0.5B-Instruct (or any Qwen2 GGUF): the weights are read
from a GGUF file with transformers' GGUF support (dequantised to float32), the loss is taken on
the assistant turns only (tool calls and submission included; the system prompt, the engineer's
messages and the tool results are context), and the tuned model is written back as a GGUF that a
llama.cpp server plays (``--export``): the LoRA deltas merged into the attention and MLP weights,
which are stored as Q8_0; every other tensor is copied as it was.

    telcoenv generate --trajectories --domain network --samples 3 --out runs/sft/train.jsonl
    python examples/train_sft_cpu.py --gguf qwen2.5-coder-0.5b-instruct-q4_k_m.gguf \\
        --trajectories runs/sft/train.jsonl --out runs/sft --max-minutes 60 --export

Writes to ``--out``: ``adapter/`` (the LoRA adapter, peft's format), ``curve.jsonl`` (loss per
step, minutes since the start), ``tuned.gguf`` with ``--export``. Trajectories of the test split
are refused (they carry the canary). ``benchmarks/bench_sft.py`` runs this end to end and plays
the held-out episodes with the base and the tuned model; its figures are in docs/training.md.
``--model-dir`` trains a Hugging Face model directory instead (the tests use a tiny one).

Rejection-sampling fine-tuning: let the tuned model play train-split episodes (``telcoenv
generate --trajectories --agents openai --agent-options '{"base_url": ..., "temperature":
0.7}'`` keeps the resolved ones) and train its adapter again on them with ``--adapter
runs/sft/adapter``.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import AutoModelForCausalLM, AutoTokenizer

from telcoenv.splits import CANARY

#: The linear layers LoRA adapts, and their names in a GGUF file (llama.cpp's qwen2 names).
TARGETS = {
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}
IGNORE = -100  # the label of a token the loss leaves out

Example = tuple[list[int], list[int]]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--gguf", type=Path, help="the base model as a GGUF file")
    source.add_argument("--model-dir", type=Path, help="or a Hugging Face model directory")
    parser.add_argument("--trajectories", type=Path, required=True, help="telcoenv generate's")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--max-steps", type=int, default=None, help="stop after this many steps")
    parser.add_argument("--max-minutes", type=float, default=90.0, help="stop after this long")
    parser.add_argument("--max-length", type=int, default=4096, help="longer ones are left out")
    parser.add_argument("--lr", type=float, default=2e-4)
    parser.add_argument("--rank", type=int, default=16)
    parser.add_argument("--layers", type=int, default=12, help="adapt the top N layers (0: all)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (all cores)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--loss", default="tokens", choices=["tokens", "turns"], help="mean over tokens or turns"
    )
    parser.add_argument("--balance", action="store_true", help="as many of each intent")
    parser.add_argument(
        "--adapter",
        type=Path,
        default=None,
        help="continue this LoRA adapter (an earlier run's adapter/; its rank and layers): "
        "rejection-sampling fine-tuning on the tuned model's own resolved episodes",
    )
    parser.add_argument("--export", action="store_true", help="write tuned.gguf (needs --gguf)")
    args = parser.parse_args(argv)
    args.layers = args.layers or None
    if args.export and args.gguf is None:
        parser.error("--export writes a GGUF from the --gguf base model")
    return args


def load_model(args: argparse.Namespace) -> tuple[Any, Any]:
    """The base model (float32) and its tokenizer, chat template included."""
    if args.gguf is not None:
        where = {"pretrained_model_name_or_path": args.gguf.parent, "gguf_file": args.gguf.name}
    else:
        where = {"pretrained_model_name_or_path": args.model_dir}
    tokenizer = AutoTokenizer.from_pretrained(**where)
    model = AutoModelForCausalLM.from_pretrained(**where, dtype=torch.float32)
    return model, tokenizer


def read_trajectories(path: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]
    if any(row.get("canary") == CANARY or row.get("split") == "test" for row in rows):
        raise SystemExit(f"{path}: test-split trajectories are for evaluation, not training")
    return rows


def assistant_example(tokenizer: Any, messages: list[dict], tools: list[dict]) -> Example:
    """A conversation's token ids, and labels that keep only the assistant turns (each up to and
    including its end-of-turn token): what the model should say, given what it was told."""

    def render(upto: int, prompt: bool = False) -> list[int]:
        ids = tokenizer.apply_chat_template(
            messages[:upto], tools=tools, add_generation_prompt=prompt, tokenize=True
        )
        return list(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)

    ids = render(len(messages))
    labels = [IGNORE] * len(ids)
    for index, message in enumerate(messages):
        if message["role"] == "assistant":
            start, end = len(render(index, prompt=True)), len(render(index + 1))
            labels[start:end] = ids[start:end]
    return ids, labels


def build_examples(
    tokenizer: Any, rows: Iterable[dict[str, Any]], max_length: int
) -> tuple[list[Example], int]:
    """The training examples, and how many trajectories were too long to keep."""
    examples, dropped = [], 0
    for row in rows:
        ids, labels = assistant_example(tokenizer, row["hf_messages"], row["tools"])
        if len(ids) > max_length or all(label == IGNORE for label in labels):
            dropped += 1
            continue
        examples.append((ids, labels))
    return examples, dropped


def with_lora(model: Any, rank: int, layers: int | None) -> Any:
    """LoRA on the attention and MLP projections of the top ``layers`` decoder layers (all when
    None). The layers below then need no backward pass: on a CPU the top half trains in about
    half the time of all layers, which buys twice the trajectories in the same minutes."""
    depth = model.config.num_hidden_layers
    config = LoraConfig(
        r=rank,
        lora_alpha=2 * rank,
        lora_dropout=0.0,
        target_modules=[name.split(".")[-1] for name in TARGETS],
        layers_to_transform=None if layers is None else list(range(depth - layers, depth)),
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, config)


def train(model: Any, examples: list[Example], args: argparse.Namespace) -> list[dict[str, Any]]:
    """One trajectory per step, AdamW with a linear warm-up and a cosine decay; stops at the end
    of the last epoch, at ``max_steps`` or at ``max_minutes``. Returns the learning curve."""
    order = random.Random(args.seed)
    total = args.epochs * len(examples)
    if args.max_steps is not None:
        total = min(total, args.max_steps)
    warmup = max(1, total // 20)

    def schedule(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, total - warmup)))

    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=args.lr, weight_decay=0.0)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    curve_path = args.out / "curve.jsonl"
    curve: list[dict[str, Any]] = []
    started, step = time.perf_counter(), 0
    model.train()
    for epoch in range(args.epochs):
        for ids, labels in order.sample(examples, len(examples)):
            if step >= total or (time.perf_counter() - started) / 60 >= args.max_minutes:
                return curve
            loss = assistant_loss(model, ids, labels, per_turn=args.loss == "turns")
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trainable, 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            step += 1
            point = {
                "step": step,
                "epoch": epoch + 1,
                "loss": round(loss.item(), 4),
                "tokens": len(ids),
                "minutes": round((time.perf_counter() - started) / 60, 2),
            }
            curve.append(point)
            with curve_path.open("a", encoding="utf-8") as out:
                out.write(json.dumps(point) + "\n")
            print(json.dumps(point), flush=True)
    return curve


def assistant_loss(model: Any, ids: list[int], labels: list[int], per_turn: bool = False) -> Any:
    """The cross-entropy of the labelled tokens: their mean, or (``per_turn``) the mean over
    the assistant turns of each turn's mean, so that a short decision (which tool, which
    intent) weighs as much as a long submission summary. Only the logits that predict
    labelled tokens are computed: most of a trajectory is context, and the 152k-word output
    layer over every position would cost a fifth of the step and gigabytes of memory."""
    targets = [position for position in range(1, len(ids)) if labels[position] != IGNORE]
    keep = torch.tensor([position - 1 for position in targets])
    logits = model(input_ids=torch.tensor([ids]), logits_to_keep=keep).logits[0]
    expected = torch.tensor([ids[position] for position in targets])
    losses = torch.nn.functional.cross_entropy(logits.float(), expected, reduction="none")
    if not per_turn:
        return losses.mean()
    weights = torch.tensor(turn_weights(targets))
    return (losses * weights).sum() / weights.sum()


def turn_weights(targets: list[int]) -> list[float]:
    """1 / (the length of its turn) for each labelled position; a turn is a run of
    consecutive positions (the context between two assistant turns is never labelled)."""
    runs: list[list[int]] = []
    for position in targets:
        if runs and position == runs[-1][-1] + 1:
            runs[-1].append(position)
        else:
            runs.append([position])
    return [1.0 / len(run) for run in runs for _ in run]


def balanced(rows: list[dict[str, Any]], seed: int) -> list[dict[str, Any]]:
    """As many trajectories of each intent as the rarest has (a seeded draw): a majority
    intent would otherwise teach its chain as the answer to every statement."""
    by_intent: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_intent.setdefault(row["intent"], []).append(row)
    fewest = min(len(group) for group in by_intent.values())
    draw = random.Random(seed)
    return [row for key in sorted(by_intent) for row in draw.sample(by_intent[key], fewest)]


def lora_deltas(model: Any) -> dict[str, np.ndarray]:
    """Each adapted weight's LoRA delta (scale x B @ A), by its GGUF tensor name."""
    deltas = {}
    for name, module in model.named_modules():
        if not hasattr(module, "lora_A") or "default" not in module.lora_A:
            continue
        layer = name.split(".layers.")[1].split(".")[0]
        target = next(gguf for hf, gguf in TARGETS.items() if name.endswith(hf))
        a = module.lora_A["default"].weight.detach().double()
        b = module.lora_B["default"].weight.detach().double()
        delta = (b @ a) * module.scaling["default"]
        deltas[f"blk.{layer}.{target}.weight"] = delta.float().numpy()
    return deltas


def export_gguf(base: Path, deltas: dict[str, np.ndarray], out: Path) -> None:
    """``base`` with ``deltas`` added to its tensors (those stored as Q8_0), everything else
    (metadata, tokenizer, chat template, the other tensors) copied as it is."""
    import gguf

    reader = gguf.GGUFReader(base)
    arch = reader.get_field(gguf.Keys.General.ARCHITECTURE).contents()
    writer = gguf.GGUFWriter(out, arch)
    for field in reader.fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue
        kind = field.types[0]
        sub_type = field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), kind, sub_type=sub_type)
    missing = set(deltas) - {tensor.name for tensor in reader.tensors}
    if missing:
        raise ValueError(f"{base} has no tensors {sorted(missing)[:3]}")
    tensors = []
    for tensor in reader.tensors:
        data, kind = tensor.data, tensor.tensor_type
        if tensor.name in deltas:
            weight = gguf.quants.dequantize(data, kind).reshape(deltas[tensor.name].shape)
            kind = gguf.GGMLQuantizationType.Q8_0
            data = gguf.quants.quantize(weight + deltas[tensor.name], kind)
        tensors.append((tensor.name, data, kind))
        writer.add_tensor_info(tensor.name, data.shape, data.dtype, data.nbytes, kind)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for _, data, _ in tensors:
        writer.write_tensor_data(data, tensor_endianess=reader.endianess)
    writer.close()


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    if args.threads:
        torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "curve.jsonl").unlink(missing_ok=True)
    started = time.perf_counter()
    model, tokenizer = load_model(args)
    rows = read_trajectories(args.trajectories)
    if args.balance:
        rows = balanced(rows, args.seed)
    examples, dropped = build_examples(tokenizer, rows, args.max_length)
    if not examples:
        raise SystemExit(f"{args.trajectories}: no trajectory of at most {args.max_length} tokens")
    tokens = sum(len(ids) for ids, _ in examples)
    print(
        f"{len(examples)} trajectories ({tokens} tokens; {dropped} longer than "
        f"{args.max_length} left out), model loaded in {time.perf_counter() - started:.0f} s",
        flush=True,
    )
    if args.adapter is not None:
        model = PeftModel.from_pretrained(model, args.adapter, is_trainable=True)
    else:
        model = with_lora(model, args.rank, args.layers)
    curve = train(model, examples, args)
    model.save_pretrained(args.out / "adapter")
    summary = {
        "trajectories": len(examples),
        "tokens": tokens,
        "steps": len(curve),
        "train_minutes": curve[-1]["minutes"] if curve else 0.0,
        "first_loss": curve[0]["loss"] if curve else None,
        "last_loss": curve[-1]["loss"] if curve else None,
    }
    if args.export:
        export_gguf(args.gguf, lora_deltas(model), args.out / "tuned.gguf")
        summary["gguf"] = str(args.out / "tuned.gguf")
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
