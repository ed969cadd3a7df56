"""Evaluate a model served behind an OpenAI-compatible endpoint with verifiers' eval.

    python examples/evaluate_verifiers.py --model my-model --base-url http://localhost:8000/v1 \\
        --envs beam_misalignment,bill_shock --samples 2 --lang en,ar

The same run as ``vf-eval telcoenv -m my-model --client.base-url http://localhost:8000/v1
--env.taskset.envs beam_misalignment bill_shock --env.taskset.samples 2 --no-push``: verifiers
loads the ``telcoenv`` taskset (the grid of ``telcoenv evaluate``), plays each task as one
telcoenv episode (tool calls through ``env.step``, plain messages to the engineer or the
customer) and writes the traces under ``--output-dir``. Prints each episode's reward (SAS by
default) and metrics, and the means. Needs the ``verifiers`` extra.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics

import verifiers.v1 as vf
from verifiers.v1.cli.eval.runner import run_eval
from verifiers.v1.cli.output import output_path
from verifiers.v1.configs.cli.eval import EvalConfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--base-url", default=os.environ.get("OPENAI_BASE_URL"))
    parser.add_argument("--api-key-var", default="OPENAI_API_KEY", help="env var of the key")
    parser.add_argument("--envs", default="beam_misalignment,bill_shock")
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--lang", default="en")
    parser.add_argument("--max-steps", type=int, default=20)
    parser.add_argument("--output-dir", default="outputs")
    args = parser.parse_args()
    if not args.base_url:
        parser.error("give --base-url or set OPENAI_BASE_URL")

    taskset = {
        "id": "telcoenv",
        "envs": args.envs.split(","),
        "samples": args.samples,
        "lang": args.lang.split(","),
        "env_kwargs": {"max_steps": args.max_steps},
    }
    config = EvalConfig(
        env={"taskset": taskset},
        model=args.model,
        client=vf.EvalClientConfig(base_url=args.base_url, api_key_var=args.api_key_var),
        push=False,  # keep the run local (no Prime Intellect upload)
        rich=None,  # plain output instead of the live dashboard
        output_dir=args.output_dir,
    )
    episodes = asyncio.run(run_eval(config))
    traces = [trace for episode in episodes for trace in episode.traces]
    for trace in traces:
        metrics = trace.metrics
        print(
            f"{trace.task.data.id}: reward {trace.reward:.2f} SAS {metrics['sas']:.2f} "
            f"resolved {bool(metrics.get('resolved'))} steps {metrics['steps']:.0f} "
            f"invalid {metrics['invalid_actions']:.0f} ({trace.stop_condition})"
        )
    means = {
        name: round(statistics.mean(t.metrics[name] for t in traces), 3)
        for name in ("sas", "msc", "resolved")
    }
    print("MEAN", {"reward": round(statistics.mean(t.reward for t in traces), 3), **means})
    print("traces:", output_path(config))


if __name__ == "__main__":
    main()
