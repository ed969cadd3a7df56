"""verifiers adapter: telcoenv episodes as a multi-turn tool environment of ``verifiers.v1``.

verifiers' contract (``verifiers.v1``, Prime Intellect): an environment is a taskset (``Taskset``:
config in, ``Task`` rows out), an ``Env`` whose ``run(task, agents)`` plays one episode, and a
``Harness``, the agent's program, whose model calls go through the rollout's interception
endpoint, which records the trace. ``vf.load_environment(config)`` finds all three by the
taskset id: it imports the top-level module of that name and takes the ``Taskset``, ``Env`` and
``Harness`` subclasses its ``__all__`` names. ``telcoenv`` names the classes of this module there,
loaded on first access, so ``import telcoenv`` never imports verifiers::

    import verifiers.v1 as vf

    config = vf.resolve_env_config({"taskset": {"id": "telcoenv", "envs": ["beam_misalignment"],
                                                "samples": 2, "lang": ["en", "ar"], "seed": 0}})
    env = vf.load_environment(config)  # TelcoVerifiersEnv: 2 blueprints x 2 samples x 2 languages

and on the command line ``vf-eval telcoenv -m MODEL --client.base-url URL --env.taskset.samples 2``.

* :class:`TelcoTaskset` draws the evaluation grid of ``telcoenv evaluate`` (blueprint x sample x
  language x intent-list condition x difficulty, :func:`~telcoenv.evaluation.runner.build_grid`):
  one :class:`TelcoTask` per episode, with the environment, seed and reset options that fix it
  and the agent's system prompt.
* :class:`TelcoVerifiersEnv` plays each task as one telcoenv episode: it resets the environment,
  opens the conversation with the problem statement, and plays the counterpart (the engineer or
  the customer): a reply without a tool call is stepped as a message, and the counterpart's answer
  is the next user turn. The episode ends when telcoenv terminates or truncates it (or, first, a
  verifiers limit or failure ends the rollout: telcoenv then truncates it). The rollout's reward
  is the sum of ``env.step``'s rewards (``telcoenv``); telcoenv's metrics are the trace's metrics
  (recorded, not summed) and its final ``info`` is ``trace.info["telcoenv"]``.
* :class:`TelcoHarness` is the agent's program, a chat loop that runs in this process: it asks
  the model with the episode's tool specs and runs every tool-call message through ``env.step``
  until the model answers without a tool call or the episode ends.

Install with the ``verifiers`` extra, then verifiers itself without its dependencies (its pins of
openai and mcp trail the core's): ``pip install "telcoenv[verifiers]"`` and ``pip install
--no-deps verifiers==0.4.0``.
"""

from __future__ import annotations

import math
from contextlib import closing
from typing import Any, Literal, Self

import openai
from pydantic import Field, JsonValue, field_validator, model_validator
from pydantic_core import to_jsonable_python

try:
    import verifiers.v1 as vf
    from verifiers.v1.dialects.chat import message_to_wire
    from verifiers.v1.types import content_text
except ModuleNotFoundError as exc:  # pragma: no cover - exercised only without the extra
    if not (exc.name or "").startswith("verifiers"):
        raise
    raise ModuleNotFoundError(
        "telcoenv.integrations.verifiers needs verifiers: pip install 'telcoenv[verifiers]' "
        "and pip install --no-deps verifiers==0.4.0"
    ) from exc

import telcoenv
from telcoenv.actions import message_action
from telcoenv.evaluation.runner import build_grid
from telcoenv.options import GUIDED

__all__ = [
    "TelcoHarness",
    "TelcoState",
    "TelcoTask",
    "TelcoTaskData",
    "TelcoTaskset",
    "TelcoTasksetConfig",
    "TelcoVerifiersEnv",
    "TelcoVerifiersEnvConfig",
]

# The telcoenv metrics recorded on the trace, then the episode's counts.
_METRICS = (
    "ira",
    "msc",
    "eap",
    "sas",
    "ra",
    "resolved",
    "diagnosed",
    "args",
    "answer",
    "submitted",
)
_COUNTS = ("steps", "tool_calls", "invalid_actions", "engineer_messages")


# --- the taskset ----------------------------------------------------------------------------------


class TelcoTasksetConfig(vf.TasksetConfig):
    """The grid of episodes (``--env.taskset.*``), as ``telcoenv evaluate`` builds it."""

    envs: list[str] = Field(default_factory=lambda: ["troubleshooting"])
    """Intents, environment names or Gymnasium ids (``troubleshooting``: every network intent)."""
    samples: int = Field(1, ge=1)
    """Episodes per blueprint (``sample_index`` 0 to samples - 1)."""
    lang: list[Literal["en", "ar"]] = Field(default_factory=lambda: ["en"])
    intent_list: list[bool] = Field(default_factory=lambda: [True])
    """Whether the system prompt lists the intent labels (both conditions: ``[true, false]``)."""
    difficulty: list[str] = Field(default_factory=lambda: [GUIDED])
    seed: int = 0
    """The reset seed of every episode (an episode is fixed by its blueprint and sample)."""
    split: Literal["all", "train", "test"] = "all"
    """The episodes of one split (:mod:`telcoenv.splits`): each blueprint's first ``samples``
    of it (none of a held-out blueprint in ``train``)."""
    env_kwargs: dict[str, JsonValue] = Field(default_factory=dict)
    """Keyword arguments of ``telcoenv.make`` (``max_steps``, ``reward``, ``tool_format``, ...);
    ``embedder`` defaults to ``None`` (no IRA/RA, no embedding model)."""

    @field_validator("envs", "lang", "intent_list", "difficulty", mode="before")
    @classmethod
    def _listed(cls, value: Any) -> Any:
        # One value stands for a list of one (``lang="ar"``).
        return [value] if isinstance(value, str | bool) else value


class TelcoTaskData(vf.TaskData):
    """One episode: the environment made for it and how it is reset (``system_prompt`` is the
    agent's instructions; the conversation opens with the problem statement)."""

    env: str
    """Gymnasium id, e.g. ``telcoenv/BeamMisalignment-v0``."""
    seed: int
    options: dict[str, JsonValue]
    """Reset options: ``blueprint``, ``sample_index``, ``lang``, ``intent_list``, and
    ``difficulty`` unless guided."""
    env_kwargs: dict[str, JsonValue]


class TelcoState(vf.State):
    """The rollout's running episode, which the env (messages) and the harness (tool calls) both
    step; set while the conversation runs, never serialised."""

    episode: Any = Field(default=None, exclude=True)


class TelcoTask(vf.Task[TelcoTaskData, TelcoState]):
    """A telcoenv episode; :class:`TelcoVerifiersEnv` scores it with telcoenv's reward."""


class TelcoTaskset(vf.Taskset[TelcoTask, TelcoTasksetConfig]):
    """The grid's episodes in a fixed order.

    Built when the taskset is read (an env server, which gets its tasks over the wire, never
    reads it): unknown names or languages and bad environment arguments fail then.
    """

    def load(self) -> list[TelcoTask]:
        return _grid_tasks(self.config)


def _grid_tasks(config: TelcoTasksetConfig) -> list[TelcoTask]:
    """One task per grid cell."""
    grid = build_grid(
        config.envs,
        config.samples,
        config.lang,
        config.intent_list,
        difficulties=config.difficulty,
        split=config.split,
    )
    gym_ids = {(entry.domain, entry.intent): entry.id for entry in telcoenv.list_envs()}
    kwargs = {"embedder": None, **config.env_kwargs}
    if config.split != "all":
        kwargs["split"] = config.split
    prompts = _system_prompts({gym_ids[s.domain, s.intent] for s in grid}, kwargs, config)
    tasks = []
    for spec in grid:
        env = gym_ids[spec.domain, spec.intent]
        data = TelcoTaskData(
            id=spec.key,
            name=spec.intent,
            system_prompt=prompts[env, spec.language, spec.intent_list],
            env=env,
            seed=config.seed,
            options=spec.reset_options(),
            env_kwargs=kwargs,
        )
        tasks.append(TelcoTask(data, config.task))
    return tasks


def _system_prompts(
    envs: set[str], kwargs: dict[str, Any], config: TelcoTasksetConfig
) -> dict[tuple[str, str, bool], str]:
    """The instructions of each environment, language and intent-list condition."""
    prompts = {}
    for env_id in sorted(envs):
        with closing(telcoenv.make(env_id, **kwargs)) as env:
            for lang in config.lang:
                for listed in config.intent_list:
                    prompts[env_id, lang, listed] = env.unwrapped.instructions(lang, listed)
    return prompts


# --- one episode ----------------------------------------------------------------------------------


class _Episode:
    """A rollout's telcoenv episode: reset at construction, then stepped by the env and the
    harness; keeps the summed reward and the last info."""

    def __init__(self, data: TelcoTaskData) -> None:
        self.env = telcoenv.make(data.env, **data.env_kwargs)
        self.statement, self.info = self.env.reset(seed=data.seed, options=dict(data.options))
        self.tools: list[dict[str, Any]] = self.info["tools"]
        self.reward = 0.0
        self.terminated = self.truncated = False

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated

    def step(self, action: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        """``env.step``; the observation and the chat messages that answer the action."""
        observation, reward, self.terminated, self.truncated, self.info = self.env.step(action)
        self.reward += float(reward)
        return observation, self.info["messages"]

    def run_tools(self, reply: dict[str, Any]) -> list[dict[str, Any]]:
        """Step an assistant message with tool calls; one tool message answers each call."""
        observation, messages = self.step(reply)
        answers = [m for m in messages if m["role"] == "tool"]
        answered = {m["tool_call_id"] for m in answers}
        # A message refused as a whole (a call without a name) answers no call by its id: each
        # call gets the refusal, so that the conversation stays valid for strict servers.
        return answers + [
            {"role": "tool", "tool_call_id": call["id"], "content": observation}
            for call in reply["tool_calls"]
            if call["id"] not in answered
        ]

    def say(self, text: str) -> str:
        """Step a reply without a tool call (a message to the counterpart); the answer."""
        # As an assistant message, so that text starting with "{" is not read as a JSON call.
        observation, _ = self.step(message_action(text))
        return observation

    def truncate(self, reason: str) -> None:
        """End the episode early (the rollout ended first), as telcoenv truncates it."""
        reward, self.info = self.env.unwrapped.truncate(reason)
        self.reward += reward
        self.truncated = True

    def close(self) -> None:
        self.env.close()


# --- the agent's program --------------------------------------------------------------------------


class TelcoHarness(vf.Harness[vf.HarnessConfig]):
    """An in-process chat loop over the episode's tools (the ``telcoenv`` harness).

    Each segment asks the model (through the rollout's interception endpoint, so verifiers
    records every turn) with the conversation so far and the episode's tool specs, runs every
    message with tool calls through ``env.step`` and sends the tool results back, until the model
    answers without a tool call (the counterpart's turn) or the episode ends. Later segments
    replay the conversation from the trace (verifiers' default ``resume``).
    """

    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_RESUME = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(
        self,
        ctx: vf.ModelContext,
        trace: vf.Trace,
        runtime: vf.Runtime,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: vf.TaskData,
    ) -> vf.ProgramResult:
        episode = getattr(trace.state, "episode", None)
        if episode is None:
            raise vf.HarnessError(
                "the telcoenv harness plays the episodes TelcoVerifiersEnv runs; run it there"
            )
        messages = _wire(*self.resolve_prompt(data))
        # No read timeout: the rollout's agent timeout bounds a segment. No retries: the
        # interception server answers a retried request with the policy's next completion, so
        # a failed turn would be silently replaced (and the trace disagree with the episode).
        async with openai.AsyncOpenAI(
            base_url=endpoint, api_key=secret, timeout=None, max_retries=0
        ) as client:
            while not episode.done:
                completion = await client.chat.completions.create(
                    model=ctx.model, messages=messages, tools=episode.tools
                )
                reply = completion.choices[0].message.model_dump(exclude_none=True)
                messages.append(reply)
                if not reply.get("tool_calls"):
                    break
                messages += episode.run_tools(reply)
        return vf.ProgramResult(exit_code=0, stdout="", stderr="")


def _wire(system: str | None, prompt: str | vf.Messages | None) -> list[dict[str, Any]]:
    """The chat messages of a segment's prompt (verifiers' typed messages as JSON)."""
    conversation = [vf.UserMessage(content=prompt)] if isinstance(prompt, str) else prompt or []
    head = [{"role": "system", "content": system}] if system else []
    return head + [message_to_wire(message) for message in conversation]


# --- the environment ------------------------------------------------------------------------------


class TelcoVerifiersEnvConfig(vf.EnvConfig):
    """The env's one seat, ``agent`` (``--env.agent.*``): the policy, on the telcoenv harness."""

    agent: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())

    @model_validator(mode="after")
    def _in_process(self) -> Self:
        # The harness steps this process's environment: a container or sandbox cannot host it.
        if not isinstance(self.agent.runtime, vf.SubprocessConfig):
            raise ValueError(
                "the telcoenv harness runs in the eval process: keep env.agent.runtime.type "
                f"subprocess, not {self.agent.runtime.type}"
            )
        return self


class TelcoVerifiersEnv(vf.Env[TelcoVerifiersEnvConfig]):
    """One telcoenv episode per rollout; the env plays the counterpart (see the module)."""

    async def run(self, task: TelcoTask, agents: vf.Agents) -> None:
        with closing(_Episode(task.data)) as episode:
            async with agents.agent.interaction(task) as interaction:
                trace = interaction.trace
                trace.state.episode = episode
                try:
                    await _converse(interaction, episode)
                finally:
                    trace.state.episode = None  # the kept trace holds no environment
            if not episode.done:  # a verifiers limit or failure ended the rollout first
                episode.truncate(f"verifiers: {trace.stop_condition}")
            _record(trace, episode)


async def _converse(interaction: vf.Interaction, episode: _Episode) -> None:
    """Open with the statement; answer each reply without a tool call as the counterpart."""
    segment = await interaction.turn(episode.statement)
    while not (segment.terminated or episode.done):
        reply = next(m for m in reversed(segment.messages) if isinstance(m, vf.AssistantMessage))
        if reply.tool_calls:  # its calls wait for results: a limit stopped the harness mid-way
            return
        answer = episode.say(content_text(reply.content))
        if not episode.done:
            segment = await interaction.turn(answer)
    if episode.done:
        ending = "terminated" if episode.terminated else "truncated"
        interaction.trace.stop(f"telcoenv_{ending}")


def _record(trace: vf.Trace, episode: _Episode) -> None:
    """telcoenv's reward, metrics and final info onto the trace."""
    info = episode.info
    trace.record_reward("telcoenv", episode.reward)
    values = {name: info["metrics"][name] for name in _METRICS}
    values.update({name: info[name] for name in _COUNTS})
    trace.record_metrics(
        {k: float(v) for k, v in values.items() if v is not None and math.isfinite(v)}
    )
    final = {k: v for k, v in info.items() if k != "trace"}
    final.update(terminated=episode.terminated, truncated=episode.truncated, reward=episode.reward)
    trace.info["telcoenv"] = to_jsonable_python(final, fallback=repr)
