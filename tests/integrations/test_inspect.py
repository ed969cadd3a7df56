"""The Inspect adapter (telcoenv.integrations.inspect) driven by Inspect itself: ``eval()`` with
its mock model provider playing scripted turns, and the ``inspect eval`` command through the
``inspect_ai`` entry point. Logs go to temporary folders; nothing touches the network."""

from __future__ import annotations

import math
import os
import runpy
import subprocess
import sys
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("inspect_ai")

from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.model import ModelOutput, ModelUsage, get_model

import telcoenv
from telcoenv.errors import TelcoEnvError
from telcoenv.integrations.inspect import METRICS, telcoenv_dataset, telcoenv_task
from telcoenv.metrics.scoring import EpisodeMetrics
from telcoenv.rewards import outcome_components
from tests.conftest import EXAMPLES, REPO_ROOT, gold_actions, play, solving_actions, submit

pytestmark = pytest.mark.integration

ENTRY_POINT = "telcoenv.integrations._inspect_registry"
RESET_OPTIONS = ("blueprint", "sample_index", "lang", "intent_list", "difficulty")
MODEL = "mockllm/model"

# `inspect eval` as its console script runs it. The mock provider counts the tokens of an
# output that has no usage with tiktoken, which downloads its encoding: the usage is given.
INSPECT_CLI = """
import sys
from inspect_ai._cli.main import main
from inspect_ai.model import ModelUsage
from inspect_ai.model._providers.mockllm import MockLLM

async def given_usage(self, output, input, tools):
    output.usage = output.usage or ModelUsage()

MockLLM._ensure_default_usage = given_usage
sys.argv = ["inspect", *sys.argv[1:]]
sys.exit(main())
"""


# --- helpers ------------------------------------------------------------------------------------


def model_output(action: dict | str) -> ModelOutput:
    """A mock model turn: a tool call or a plain message (with a usage: see INSPECT_CLI)."""
    if isinstance(action, str):
        output = ModelOutput.from_content(MODEL, action)
    else:
        output = ModelOutput.for_tool_call(MODEL, action["name"], action["arguments"])
    output.usage = ModelUsage()
    return output


def unparseable_call() -> ModelOutput:
    """A turn whose tool call has arguments the provider could not parse as JSON."""
    output = model_output({"name": "coverage_map", "arguments": {}})
    calls = output.message.tool_calls or []
    calls[0] = replace(calls[0], parse_error="Error parsing the following tool call arguments")
    return output


def sample_env(sample: Sample, **kwargs: Any) -> tuple[Any, dict]:
    """A privileged environment reset to the sample's episode, and its reset info."""
    metadata = sample.metadata or {}
    env = telcoenv.make(metadata["env"], privileged=True, **kwargs)
    options = {name: metadata[name] for name in RESET_OPTIONS}
    _, info = env.reset(seed=metadata["seed"], options=options)
    return env, info


def oracle_actions(privileged: dict, lang: str) -> list[dict]:
    """solving_actions, with the exact answer where the counterpart asked a question."""
    if privileged.get("gold_answer") is None:
        return solving_actions(privileged, lang)
    label = privileged["label"][lang]
    answer = submit(label, "Answered.", privileged["gold_answer"])
    return [*gold_actions({"privileged": privileged}), answer]


def as_scores(metrics: dict) -> dict[str, float]:
    """The environment's metrics as the scorer reports them (NaN: does not apply; ``outcome``:
    the outcome reward of those metrics)."""
    values = {**metrics, "outcome": sum(outcome_components(EpisodeMetrics(**metrics)).values())}
    return {name: math.nan if values[name] is None else float(values[name]) for name in METRICS}


def run(task: Any, outputs: list[ModelOutput], tmp_path: Path, **options: Any) -> EvalLog:
    """Inspect's eval of ``task`` with the mock model playing ``outputs`` in order (one sample
    at a time, so that the turns follow the samples)."""
    model = get_model(MODEL, custom_outputs=outputs)
    (log,) = inspect_eval(
        task, model=model, log_dir=str(tmp_path), display="none", max_samples=1, **options
    )
    assert log.status == "success", log.error
    return log


def means(log: EvalLog) -> dict[str, float]:
    assert log.results is not None
    return {score.name: score.metrics["mean"].value for score in log.results.scores}


# --- the dataset --------------------------------------------------------------------------------


def test_the_dataset_is_the_evaluation_grid_and_fixes_each_episode():
    first = telcoenv_dataset("beam_misalignment", samples=2, lang="ar", seed=7)
    again = telcoenv_dataset("telcoenv/BeamMisalignment-v0", samples=2, lang="ar", seed=7)
    assert [s.model_dump() for s in first] == [s.model_dump() for s in again]
    assert [s.id for s in first] == [
        f"{blueprint}|{index}|ar|with"
        for blueprint in ("BEAM_INDOOR_GRID", "BEAM_MMWAVE_STREET_CANYON")
        for index in (0, 1)
    ]
    for sample in first:
        assert sample.metadata is not None
        assert sample.metadata["env"] == "beam_misalignment" and sample.metadata["seed"] == 7
        env, info = sample_env(sample, embedder=None)
        assert info["messages"][1]["content"] == sample.input  # the opening statement
        assert sample.target == info["privileged"]["label"]["ar"]
        env.close()


def test_a_split_dataset_holds_that_splits_episodes_only():
    from telcoenv import splits

    test = telcoenv_dataset("beam_misalignment", samples=2, split="test")
    train = telcoenv_dataset("beam_misalignment", samples=2, split="train")
    addresses = {
        name: {(s.metadata["blueprint"], s.metadata["sample_index"]) for s in dataset}
        for name, dataset in (("test", test), ("train", train))
    }
    assert addresses["test"] and addresses["train"] and not addresses["test"] & addresses["train"]
    family = ["BEAM_INDOOR_GRID", "BEAM_MMWAVE_STREET_CANYON"]
    assert not {b for b, _ in addresses["train"]} & splits.held_out(family)
    for sample in test:
        assert sample.metadata["split"] == "test"
        env, info = sample_env(sample, embedder=None, split="test")
        assert info["messages"][1]["content"] == sample.input and info["split"] == "test"
        env.close()


# --- the episode through eval() -----------------------------------------------------------------


@pytest.mark.parametrize("env_name", ["beam_misalignment", "bill_shock"])
def test_scores_are_the_metrics_of_the_same_actions_through_step(env_name, tmp_path):
    """The oracle's tool calls, as mock model turns, over every sample of the task: each score
    is what the same actions get through env.step, and each mean leaves out the samples a
    metric does not apply to (ira and ra with the real embedder, answer only in care)."""
    task = telcoenv_task(env_name)
    outputs, expected = [], {}
    for sample in task.dataset:
        env, info = sample_env(sample)
        actions = oracle_actions(info["privileged"], "en")
        outputs += [model_output(action) for action in actions]
        expected[sample.id] = as_scores(play(env, actions)["metrics"])
        env.close()
    assert len(expected) >= 2

    log = run(task, outputs, tmp_path)
    assert log.samples is not None
    scores = {s.id: s.scores["telcoenv_scorer"].value for s in log.samples if s.scores}
    assert scores.keys() == expected.keys()
    for sample_id, value in scores.items():
        assert value == pytest.approx(expected[sample_id], nan_ok=True), sample_id
    for name in METRICS:
        values = [v[name] for v in expected.values() if not math.isnan(v[name])]
        mean = sum(values) / len(values) if values else math.nan
        assert means(log)[name] == pytest.approx(mean, nan_ok=True), name
    assert means(log)["sas"] == 1.0 and means(log)["resolved"] == 1.0


def test_a_message_reaches_the_counterpart_and_a_wrong_call_is_an_error_result(tmp_path):
    task = telcoenv_task("beam_misalignment", embedder=None)
    sample = task.dataset[0]
    actions = [
        "Which cell is affected?",
        {"name": "no_such_tool", "arguments": {}},
        {"name": "coverage_map", "arguments": {"area": 1}},
        submit("Beam Misalignment", "Beams steered off boresight."),
    ]
    env, _ = sample_env(sample, embedder=None)
    reply = env.step(actions[0])[0]
    final = play(env, actions[1:])
    env.close()

    log = run(task, [model_output(action) for action in actions], tmp_path, limit=1)
    assert log.samples is not None
    played = log.samples[0]
    roles = [message.role for message in played.messages]
    assert roles == ["system", "user", "assistant", "user", *["assistant", "tool"] * 3]
    assert played.messages[3].text == reply  # the engineer's answer, as a user message
    unknown, invalid = played.messages[5], played.messages[7]
    assert unknown.error is not None and '"type":"unknown_tool"' in unknown.error.message
    assert invalid.error is not None and '"type":"invalid_arguments"' in invalid.error.message
    assert played.scores is not None
    score = played.scores["telcoenv_scorer"]
    assert score.value == pytest.approx(as_scores(final["metrics"]), nan_ok=True)
    assert score.metadata is not None
    # Both calls were refused: no step of the executed chain the metrics compare.
    assert score.metadata["predicted_chain"] == [] and score.metadata["chain"] == "executed"
    assert score.answer == "Beam Misalignment"


def test_unparseable_calls_meet_the_turn_limit_and_the_episode_is_scored_truncated(tmp_path):
    """Calls whose arguments are not JSON are answered by Inspect and never step the
    environment; the task's turn limit (2 x max_steps) ends the sample, which is scored."""
    task = telcoenv_task("beam_misalignment", embedder=None, max_steps=2)
    turns = [model_output("Hello?")] + [unparseable_call() for _ in range(4)]
    log = run(task, turns, tmp_path, limit=1)
    assert log.samples is not None
    played = log.samples[0]
    assert played.limit is not None and played.limit.type == "turn"
    results = [m for m in played.messages if m.role == "tool"]
    assert len(results) == 3 and all(m.error and m.error.type == "parsing" for m in results)
    assert played.scores is not None
    value = played.scores["telcoenv_scorer"].value
    assert isinstance(value, dict) and value["sas"] == 0.0 and value["resolved"] == 0.0


# --- inspect eval telcoenv/<env> ----------------------------------------------------------------


def test_pyproject_declares_the_entry_point():
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["entry-points"]["inspect_ai"] == {"telcoenv": ENTRY_POINT}


@pytest.mark.slow
def test_inspect_eval_runs_the_registered_task(tmp_path):
    """The command line finds ``telcoenv/beam_misalignment`` through the entry point (declared
    by a dist-info on the path, so that the test does not need the package reinstalled)."""
    dist_info = tmp_path / "site" / "telcoenv_inspect_entry_point-0.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: telcoenv-inspect-entry-point\nVersion: 0\n"
    )
    (dist_info / "entry_points.txt").write_text(f"[inspect_ai]\ntelcoenv = {ENTRY_POINT}\n")
    logs = tmp_path / "logs"
    command = [sys.executable, "-c", INSPECT_CLI, "eval", "telcoenv/beam_misalignment"]
    command += ["--model", MODEL, "--limit", "1", "-T", "max_steps=3", "--display", "none"]
    environment = {**os.environ, "PYTHONPATH": str(dist_info.parent)}
    environment["INSPECT_LOG_DIR"] = str(logs)
    done = subprocess.run(
        command, cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]

    log = read_eval_log(str(next(logs.glob("*.eval"))))
    assert log.status == "success" and log.eval.task == "telcoenv/beam_misalignment"
    assert log.eval.task_args["max_steps"] == 3
    assert set(means(log)) == set(METRICS)
    assert log.samples is not None and log.samples[0].scores is not None
    value = log.samples[0].scores["telcoenv_scorer"].value
    assert isinstance(value, dict)
    # The mock model only talks: never submitted, truncated at 3 steps; IRA is measured.
    assert value["sas"] == 0.0 and value["ira"] == 0.0 and math.isnan(value["answer"])


def test_the_example_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("INSPECT_LOG_DIR", str(tmp_path))
    runpy.run_path(str(EXAMPLES / "evaluate_inspect.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "SAS 1.0" in out and "RESOLVED 1.0" in out and "ANSWER nan" in out


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"max_steps": "x"}, "max_steps must be an integer"),
        ({"max_steps": 0}, "max_steps must be a positive integer"),
        ({"embedder": "bogus"}, "unknown embedder 'bogus'"),
        ({"samples": "2"}, "samples must be an integer"),
    ],
)
def test_a_task_with_bad_settings_is_refused_when_it_is_made(options, words):
    with pytest.raises(TelcoEnvError, match=words):
        telcoenv_task("beam_misalignment", **{"embedder": None, **options})
