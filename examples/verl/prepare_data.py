"""Write verl's tool and agent-loop configs and the Parquet datasets for GRPO on telcoenv.

Usage: ``python examples/verl/prepare_data.py --out telcoenv_verl --train 512 --val 64``, then
train with ``examples/verl/run_grpo.sh telcoenv_verl`` (verl on GPUs). Every row is one seeded
episode: its prompt is the episode's system prompt and problem statement, and
``extra_info.tools_kwargs`` / ``interaction_kwargs`` tell the tools and the engineer which episode
to open, so the GRPO rollouts of a row share one scenario.

``--curriculum --intents a,b`` draws the training rows from ``telcoenv.curriculum`` instead
(each row one of its tasks: intent, rung, language) and has the agent loop append each
trajectory's outcome to ``outcomes.jsonl`` (``Curriculum.record_log`` reads it between stages).
``--tool-set core --tool-format compact`` offer what ``telcoenv generate --trajectories`` showed
an SFT warm start (``examples/train_sft_cpu.py``), whose adapter ``run_grpo.sh`` continues.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from telcoenv.curriculum import Curriculum
from telcoenv.integrations.verl import build_rows, write_configs, write_parquet


def _episodes(first_seed: int, count: int, langs: list[str]) -> list[dict]:
    """``count`` episode specs with consecutive seeds, the languages in turn."""
    return [{"seed": first_seed + i, "lang": langs[i % len(langs)]} for i in range(count)]


def main(argv: list[str] | None = None) -> dict[str, Path]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("telcoenv_verl"))
    parser.add_argument("--intent", default=None, help="one intent; default: the whole taxonomy")
    parser.add_argument("--train", type=int, default=512, help="training episodes")
    parser.add_argument("--val", type=int, default=64, help="validation episodes")
    parser.add_argument("--seed", type=int, default=0, help="first training seed")
    parser.add_argument("--lang", default="en", help="comma-separated: en, ar or en,ar")
    parser.add_argument("--max-steps", type=int, default=20)
    parser.add_argument(
        "--embedder", default="multilingual", help="IRA/RA embedder ('none' to skip them)"
    )
    parser.add_argument("--split", default="train", choices=["train", "test", "all"])
    parser.add_argument("--tool-set", default="all", choices=["all", "core"])
    parser.add_argument("--tool-format", default="full", choices=["full", "compact"])
    parser.add_argument("--curriculum", action="store_true", help="rows from the curriculum")
    parser.add_argument("--intents", default=None, help="the curriculum's (comma-separated)")
    args = parser.parse_args(argv)
    if args.curriculum and args.intent is not None:
        parser.error("--curriculum draws its intents (--intents), not one --intent")
    env_kwargs: dict = {"max_steps": args.max_steps, "split": args.split}
    env_kwargs["embedder"] = None if args.embedder == "none" else args.embedder
    env_kwargs.update(tool_set=args.tool_set, tool_format=args.tool_format)
    if args.intent is not None:
        env_kwargs["intent"] = args.intent
    langs = args.lang.split(",")
    outcome_log = args.out.resolve() / "outcomes.jsonl" if args.curriculum else None
    configs = write_configs(args.out, env_kwargs=env_kwargs, outcome_log=outcome_log)
    specs = _episodes(args.seed, args.train, langs)
    if args.curriculum:
        intents = args.intents.split(",") if args.intents else None
        curriculum = Curriculum("network", intents=intents, langs=langs, seed=args.seed)
        specs = curriculum.specs(args.train)
        curriculum.save(args.out / "curriculum.json")
    train = build_rows(specs, env_kwargs=env_kwargs)
    val_specs = _episodes(args.seed + args.train, args.val, langs)  # seeds after the training ones
    val = build_rows(val_specs, env_kwargs=env_kwargs, split="val")
    paths = {
        "tool_config": configs.tool_config,
        "agent_loop_config": configs.agent_loop_config,
        "train_files": write_parquet(train, args.out / "train.parquet"),
        "val_files": write_parquet(val, args.out / "val.parquet"),
    }
    for name, path in paths.items():
        print(f"{name}: {path}")
    return paths


if __name__ == "__main__":
    main()
