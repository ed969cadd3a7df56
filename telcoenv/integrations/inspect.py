"""Inspect adapter: every telcoenv environment as an Inspect task (``inspect eval telcoenv/<env>``).

Inspect's contract (``inspect_ai``): a :class:`~inspect_ai.Task` is a dataset of samples, a solver
that plays each sample against the model under evaluation and a scorer whose ``Score`` values the
metrics aggregate; a package registers tasks through the ``inspect_ai`` entry-point group, which
Inspect loads when a task is named ``<package>/<task>``. This module maps one episode onto one
sample; every behaviour (episodes, tools, counterpart replies, errors, metrics) comes from
:class:`telcoenv.env.TelcoEnv`:

* :func:`telcoenv_dataset`: the grid ``telcoenv evaluate`` plays (blueprint x sample, one
  language and intent-list condition), one sample per episode: its input is the counterpart's
  opening statement, its target the true intent label, and its metadata (``env``, ``seed``,
  ``lang``, ``blueprint``, ``sample_index``, ...) fix the episode, as the runner's reset does.
* :func:`telcoenv_solver`: resets a TelcoEnv of its own for the sample (kept in the sample's
  store under :data:`ENV_KEY`), puts the system prompt first and the episode's tools in the
  state, built from the tools' JSON Schemas, and loops: a model turn, then its tool calls, each
  a step of the environment, or its plain message, which goes to the simulated engineer or
  customer and whose reply comes back as a user message. It stops when the episode ends
  (``submit_resolution`` or ``max_steps``) or an Inspect limit (messages, turns, tokens, time)
  ends the sample (the task's turn limit is ``2 * max_steps``).
* :func:`telcoenv_scorer`: the episode's metrics (:data:`METRICS`) as a dict ``Score`` with one
  mean per metric; a metric that does not apply to the episode is NaN, Inspect's mark for
  "not scored", so it is left out of the mean rather than counted 0. An episode a limit cut
  short is scored as truncated, as at ``max_steps``.
* :func:`telcoenv_task`: the three together; ``telcoenv.integrations._inspect_registry``
  registers one per environment as ``telcoenv/<env>`` for ``inspect eval``.

The environment, not Inspect, validates the calls: every call reaches it (an unknown tool or bad
arguments included), is answered with its feedback and counts as it does in ``telcoenv
evaluate``. Only arguments that are not JSON at all are answered by Inspect (it keeps no text of
them to pass on). Install with the ``inspect`` extra (``pip install "telcoenv[inspect]"``).

>>> task = telcoenv_task("beam_misalignment", embedder=None)
>>> sample = task.dataset[0]
>>> sample.id, sample.target, sample.metadata["blueprint"]
('BEAM_INDOOR_GRID|0|en|with', 'Beam Misalignment', 'BEAM_INDOOR_GRID')
>>> sample.input[:42]
"Hi, we're seeing problems on NR-IND-PICO-1"
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping
from typing import Any

try:
    from inspect_ai import Task
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import (
        ChatMessage,
        ChatMessageAssistant,
        ChatMessageSystem,
        ChatMessageUser,
        execute_tools,
    )
    from inspect_ai.scorer import Score, Scorer, Target, mean, scorer
    from inspect_ai.solver import Generate, Solver, TaskState, solver
    from inspect_ai.tool import ToolDef, ToolError, ToolParams
except ModuleNotFoundError as exc:  # pragma: no cover - exercised only without the extra
    if not (exc.name or "").startswith("inspect_ai"):
        raise
    raise ModuleNotFoundError(
        "telcoenv.integrations.inspect needs inspect-ai: pip install 'telcoenv[inspect]'"
    ) from exc

import telcoenv
from telcoenv.actions import message_action
from telcoenv.env import TelcoEnv
from telcoenv.evaluation.runner import EpisodeSpec, build_grid
from telcoenv.options import GUIDED, typed_value
from telcoenv.registration import env_id, list_envs
from telcoenv.rewards import outcome_components

__all__ = [
    "ENV_KEY",
    "METRICS",
    "env_task",
    "telcoenv_dataset",
    "telcoenv_scorer",
    "telcoenv_solver",
    "telcoenv_task",
]

ENV_KEY = "telcoenv_env"
"""Where a sample's store keeps its TelcoEnv (from the solver's reset to the task's cleanup)."""

METRICS = ("outcome", "resolved", "diagnosed", "sas", "ira", "ra", "args", "answer")
"""The metrics the scorer reports (``outcome``: the default training reward of the episode;
``resolved``, ``diagnosed`` and ``answer`` as 1.0 or 0.0)."""

# The reset options a sample's metadata carries (the runner's, for the same episode).
_RESET_OPTIONS = ("blueprint", "sample_index", "lang", "intent_list", "difficulty")
# Execution accepts any arguments: the environment validates them and answers with its feedback.
_ANY_ARGUMENTS = ToolParams(additionalProperties=True)


# --- the dataset --------------------------------------------------------------------------------


def telcoenv_dataset(
    env: str,
    samples: int = 1,
    lang: str = "en",
    seed: int = 0,
    intent_list: bool = True,
    difficulty: str = GUIDED,
    split: str = "all",
) -> MemoryDataset:
    """One sample per episode of the grid: every blueprint of ``env`` x ``samples`` indices
    (``split``: that split's first ``samples`` of each blueprint, :mod:`telcoenv.splits`).

    The same arguments give the same samples (the episodes of ``telcoenv evaluate --samples
    samples --lang lang --split split`` with ``seed``).
    """
    name = _env_name(env)
    grid = build_grid(
        [name], samples, [lang], (intent_list,), difficulties=(difficulty,), split=split
    )
    maker = telcoenv.make(name, embedder=None, privileged=True, split=split).unwrapped
    try:
        return MemoryDataset([_sample(maker, name, seed, spec) for spec in grid], name=name)
    finally:
        maker.close()


def _env_name(env: str) -> str:
    """The short name of an environment given by any name ``telcoenv.make`` takes."""
    gym_id = env_id(env)
    return next(entry.name for entry in list_envs() if entry.id == gym_id)


def _sample(env: TelcoEnv, name: str, seed: int, spec: EpisodeSpec) -> Sample:
    metadata = {
        "env": name,
        "seed": seed,
        "lang": spec.language,
        "blueprint": spec.blueprint_id,
        "sample_index": spec.sample_index,
        "intent": spec.intent,
        "intent_list": spec.intent_list,
        "difficulty": spec.difficulty,
        "split": spec.split,
    }
    statement, info = env.reset(seed=seed, options=_reset_options(metadata))
    label = info["privileged"]["label"][spec.language]
    return Sample(input=statement, target=label, id=spec.key, metadata=metadata)


def _reset_options(metadata: Mapping[str, Any]) -> dict[str, Any]:
    return {name: metadata[name] for name in _RESET_OPTIONS}


# --- the solver ---------------------------------------------------------------------------------


@solver
def telcoenv_solver(max_steps: int = 20, embedder: str | None = "multilingual") -> Solver:
    """Play the sample's episode with the model: tool calls step the environment, a plain
    message goes to the counterpart; until the episode ends or an Inspect limit is hit.

    ``max_steps`` and ``embedder`` are the TelcoEnv's (``embedder=None``: no IRA or RA).
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        env, info = _start(state, max_steps, embedder)
        state.messages.insert(0, ChatMessageSystem(content=info["instructions"]))
        state.tools = [_episode_tool(env, spec["function"]) for spec in info["tools"]]
        while _running(env):
            state = await generate(state, tool_calls="none")
            state.messages.extend(await _answers(env, state.messages))
        return state

    return solve


def _start(state: TaskState, max_steps: int, embedder: str | None) -> tuple[TelcoEnv, dict]:
    """The sample's environment, in its store before the reset so that cleanup closes it."""
    metadata = state.metadata
    split = metadata.get("split", "all")  # absent from datasets made before splits
    env = telcoenv.make(
        metadata["env"], max_steps=max_steps, embedder=embedder, split=split
    ).unwrapped
    state.store.set(ENV_KEY, env)
    statement, info = env.reset(seed=metadata["seed"], options=_reset_options(metadata))
    if statement != state.input_text:  # a dataset of another telcoenv version, or edited
        raise ValueError(
            f"sample {state.sample_id!r}: its metadata give an episode whose opening is not "
            "the sample's input; build the dataset with telcoenv_dataset"
        )
    return env, info


def _episode_tool(env: TelcoEnv, function: Mapping[str, Any]) -> ToolDef:
    """The tool of an OpenAI function spec, as the model sees it."""
    # Inspect's schema model keeps the keywords it knows (multipleOf, exclusiveMinimum, ... are
    # dropped); the environment still checks the whole schema.
    parameters = ToolParams.model_validate(function["parameters"])
    return _tool(env, function["name"], function["description"], parameters)


def _tool(env: TelcoEnv, name: str, description: str, parameters: ToolParams) -> ToolDef:
    """A tool whose call is one step of ``env``; a refused call raises ToolError with the
    environment's error observation, which Inspect hands to the model."""

    async def call(**arguments: Any) -> str:
        observation, info = _step(env, {"name": name, "arguments": arguments})
        if not info["action"]["valid"]:
            raise ToolError(observation)
        return observation

    # max_output=0: the model sees whole observations, as telcoenv evaluate's agents do.
    return ToolDef(call, name=name, description=description, parameters=parameters, max_output=0)


async def _answers(env: TelcoEnv, messages: list[ChatMessage]) -> list[ChatMessage]:
    """What the environment answers to the last (assistant) message: a result per tool call,
    or the counterpart's reply to a message without one."""
    message = messages[-1]
    if isinstance(message, ChatMessageAssistant) and message.tool_calls:
        names = dict.fromkeys(call.function for call in message.tool_calls)
        tools = [_tool(env, name, name, _ANY_ARGUMENTS) for name in names]
        return (await execute_tools(messages, tools)).messages
    # An assistant message, so that text starting with "{" is not read as a JSON tool call.
    reply, _ = _step(env, message_action(message.text))
    return [ChatMessageUser(content=reply)]


def _step(env: TelcoEnv, action: Any) -> tuple[str, dict[str, Any]]:
    observation, _, _, _, info = env.step(action)
    return observation, info


def _running(env: TelcoEnv) -> bool:
    episode = env.episode
    return episode is not None and not episode.ended


# --- the scorer ---------------------------------------------------------------------------------


@scorer(metrics={name: [mean()] for name in METRICS})
def telcoenv_scorer() -> Scorer:
    """The metrics of the episode :func:`telcoenv_solver` played (NaN where one does not
    apply); the answer is the submitted intent, the metadata all of ``info["metrics"]``."""

    async def score(state: TaskState, target: Target) -> Score:
        env = state.store.get(ENV_KEY)
        if env is None:
            raise ValueError("telcoenv_scorer scores the episode that telcoenv_solver played")
        if _running(env):  # a limit ended the sample first: verified and scored as truncated
            env.truncate("an Inspect limit ended the sample")
        metrics, submission = env.metrics, env.trace.submission
        details = {**metrics.model_dump(mode="json"), "metrics_error": env.episode.metrics_error}
        return Score(
            value={name: _value(_metric(metrics, name)) for name in METRICS},
            answer=submission.intent if submission is not None else None,
            explanation=f"tools {metrics.predicted_chain}; gold {metrics.gold_chain}",
            metadata=details,
        )

    return score


def _metric(metrics: Any, name: str) -> float | bool | None:
    """A metric of the episode; ``outcome`` is the outcome reward (``None`` for a trace graded
    before outcomes existed)."""
    if name != "outcome":
        return getattr(metrics, name)
    try:
        return sum(outcome_components(metrics).values())
    except ValueError:
        return None


def _value(metric: float | bool | None) -> float:
    # NaN is Inspect's "not scored": the metric's mean leaves the sample out.
    return math.nan if metric is None else float(metric)


# --- the task -----------------------------------------------------------------------------------


def telcoenv_task(
    env: str,
    samples: int = 1,
    lang: str = "en",
    seed: int = 0,
    intent_list: bool = True,
    difficulty: str = GUIDED,
    max_steps: int = 20,
    embedder: str | None = "multilingual",
    split: str = "all",
) -> Task:
    """The Inspect task of a telcoenv environment (any name ``telcoenv.make`` takes).

    ``samples`` per blueprint, in ``lang`` (en or ar), with the intent list in the system prompt
    or not, at a difficulty tier, in a split (``train``, ``test``; default ``all``):
    :func:`telcoenv_dataset`. ``max_steps`` and ``embedder``
    (``None``: no IRA or RA) are the TelcoEnv's; a sample has at most ``2 * max_steps`` turns.
    """
    name = _env_name(env)
    samples = typed_value("samples", samples, int)
    # The environment's settings checked now, not by every sample of the eval.
    telcoenv.make(name, max_steps=max_steps, embedder=embedder).close()
    return Task(
        dataset=telcoenv_dataset(name, samples, lang, seed, intent_list, difficulty, split),
        solver=telcoenv_solver(max_steps, embedder),
        scorer=telcoenv_scorer(),
        cleanup=_close,
        # Every turn steps the environment but one whose calls Inspect could not parse: the
        # turn limit (--turn-limit overrides it) bounds a model that keeps sending those.
        turn_limit=2 * max_steps,
        name=f"telcoenv/{name}",
        version=telcoenv.__version__,
    )


async def _close(state: TaskState) -> None:
    """Release the sample's environment (Inspect calls this even when the sample failed)."""
    env = state.store.get(ENV_KEY)
    if env is not None:
        env.close()


def env_task(env: str) -> Callable[..., Task]:
    """The task function ``inspect eval telcoenv/<env>`` runs: :func:`telcoenv_task` for
    ``env``, taking its other arguments (``-T samples=2 -T lang=ar``)."""

    def task_function(**options: Any) -> Task:
        return telcoenv_task(env, **options)

    task_function.__name__ = task_function.__qualname__ = env
    task_function.__doc__ = f"telcoenv's {env} environment (options: see telcoenv_task)."
    # Inspect reads a task's parameters from its signature: telcoenv_task's but for ``env``.
    signature = inspect.signature(telcoenv_task)
    options = list(signature.parameters.values())[1:]
    task_function.__signature__ = signature.replace(parameters=options)  # type: ignore[attr-defined]
    return task_function
