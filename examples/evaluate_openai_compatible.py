"""Evaluate a model served behind an OpenAI-compatible chat-completions endpoint.

    OPENAI_BASE_URL=http://localhost:8000/v1 python examples/evaluate_openai_compatible.py \\
        --model my-model --intents beam_misalignment,pingpong_handovers --samples 2

Runs ``telcoenv.agents.OpenAIAgent`` (native tool calling, retries, token accounting) on each
intent and sample, in English, and prints per-episode metrics and the means. Works with vLLM,
llama.cpp, Ollama or any server with the OpenAI API; for the full grid with a results database,
resume and reports, use ``telcoenv evaluate --agent openai``.
"""

from __future__ import annotations

import argparse
import statistics

from telcoenv.agents import run_episode
from telcoenv.agents.openai_agent import OpenAIAgent
from telcoenv.env import TelcoEnv


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--base-url", default=None, help="default: $OPENAI_BASE_URL")
    parser.add_argument("--intents", default="beam_misalignment,pingpong_handovers")
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--lang", default="en", choices=["en", "ar"])
    parser.add_argument("--max-steps", type=int, default=20)
    parser.add_argument("--embedder", default=None, help="e.g. multilingual (IRA/RA); default off")
    args = parser.parse_args()

    agent = OpenAIAgent(model=args.model, base_url=args.base_url)
    scores: dict[str, list[float]] = {"sas": [], "msc": [], "resolved": []}
    for intent in args.intents.split(","):
        env = TelcoEnv(intent, lang=args.lang, max_steps=args.max_steps, embedder=args.embedder)
        for sample in range(args.samples):
            _, info = run_episode(env, agent, seed=sample)
            metrics = info["metrics"]
            scores["sas"].append(metrics["sas"])
            scores["msc"].append(metrics["msc"])
            scores["resolved"].append(float(bool(info["resolved"])))
            chain = " > ".join(metrics["predicted_chain"]) or "(no tool call)"
            print(
                f"{intent} #{sample}: SAS {metrics['sas']:.2f} MSC {metrics['msc']:.2f} "
                f"resolved {info['resolved']} chain {chain}"
            )
        env.close()
    means = {name: round(statistics.mean(values), 3) for name, values in scores.items()}
    print("MEAN", means)


if __name__ == "__main__":
    main()
