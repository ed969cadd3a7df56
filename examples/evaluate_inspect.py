"""Evaluate with Inspect: the beam-misalignment task, played by a scripted model.

With a real model, from the command line (any Inspect provider; -T sets the task's options):

    inspect eval telcoenv/beam_misalignment --model openai/gpt-4o-mini -T samples=2 -T lang=ar

Here Inspect's mock provider replays the oracle's turns (the gold tool calls, then the true
resolution), so that the example runs offline. The scores are the environment's metrics, one
mean each; a metric that does not apply (answer: no question was asked) is NaN. Logs go to
$INSPECT_LOG_DIR (./logs by default): ``inspect view`` shows them.
"""

from __future__ import annotations

from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model

import telcoenv
from telcoenv.integrations.inspect import telcoenv_task

MODEL = "mockllm/model"


def oracle_turns(sample: Sample) -> list[ModelOutput]:
    """The oracle's turns for the sample's episode, which its metadata fix."""
    metadata = sample.metadata or {}
    env = telcoenv.make(metadata["env"], privileged=True, embedder=None)
    options = {k: metadata[k] for k in ("blueprint", "sample_index", "lang", "intent_list")}
    _, info = env.reset(seed=metadata["seed"], options=options)
    env.close()
    gold = info["privileged"]
    calls = [(call["tool"], call["arguments"]) for call in gold["gold_chain"]]
    resolution = {"intent": gold["label"]["en"], "summary": gold["gold_summary"]["en"]}
    turns = [ModelOutput.for_tool_call(MODEL, name, arguments) for name, arguments in calls]
    turns.append(ModelOutput.for_tool_call(MODEL, "submit_resolution", resolution))
    for turn in turns:  # given: the mock provider would count tokens with a downloaded encoding
        turn.usage = ModelUsage()
    return turns


def main() -> None:
    task = telcoenv_task("beam_misalignment", lang="en", embedder=None)  # None: no IRA/RA
    turns = [turn for sample in task.dataset for turn in oracle_turns(sample)]
    model = get_model(MODEL, custom_outputs=turns)
    # One sample at a time, so that the scripted turns follow the samples.
    (log,) = inspect_eval(task, model=model, max_samples=1, display="none")
    for sample in log.samples or []:
        print(sample.id, sample.scores["telcoenv_scorer"].value if sample.scores else None)
    for score in log.results.scores if log.results else []:
        print(score.name.upper(), round(score.metrics["mean"].value, 3))


if __name__ == "__main__":
    main()
