"""verl adapter: telcoenv episodes as verl tools, a simulated engineer and an agent loop.

verl's contract (verl 0.9: ``verl.tools.base_tool``, ``verl.experimental.agent_loop``):

* Tools are listed in a YAML file (``actor_rollout_ref.rollout.multi_turn.tool_config_path``):
  ``tools: [{class_name, config: {type: native, ...}, tool_schema: {type: function, function}}]``.
  Each entry becomes one ``BaseTool`` instance per agent-loop worker, shared by every trajectory
  of that worker. ``ToolAgentLoop`` runs each call as ``create(create_kwargs=...)`` ->
  ``execute(instance_id, arguments, agent_data=...)`` -> ``release(instance_id)``, where
  ``create_kwargs`` comes from the row's ``extra_info.tools_kwargs[tool_name]`` and
  ``agent_data.request_id`` names the trajectory.
* A dataset row (``RLHFDataset``) has ``prompt`` (chat messages), ``agent_name`` (the agent loop
  that runs it), ``data_source``, ``reward_model`` and ``extra_info`` (``index``,
  ``tools_kwargs``, ``interaction_kwargs``).
* Agent loops are registered with ``@register(name)`` or listed in a YAML file
  (``actor_rollout_ref.rollout.agent.agent_loop_config_path``: ``[{name, _target_, ...}]``; the
  extra keys are constructor arguments). A loop returns ``AgentLoopOutput``; a ``reward_score``
  set there is the trajectory's reward (no reward function is called).

verl 0.8 removed ``verl.interactions`` (``BaseInteraction`` and ``interaction_config_path``), so
the simulated engineer is driven by this module's agent loop:

* :class:`TelcoTool`: one class for every telcoenv tool (the YAML gives each instance its
  schema). All tools of a process share an :class:`EpisodeRegistry`, keyed by trajectory id
  (``agent_data.request_id``), so every call of one trajectory steps the same
  :class:`~telcoenv.env.TelcoEnv` episode, whatever tool instance or call it comes from.
* :class:`TelcoEngineerInteraction`: the simulated engineer with ``BaseInteraction``'s methods
  (``start_interaction``, ``generate_response``, ``calculate_score``, ``finalize_interaction``):
  a plain assistant message is sent to the episode, the engineer's reply comes back.
* :class:`TelcoAgentLoop` (``agent_name="telcoenv_agent"``): verl's ``ToolAgentLoop`` plus the
  engineer. When the model answers without a tool call while the episode is open, the reply
  becomes a user message (response mask 0) and generation goes on; the trajectory ends when
  ``submit_resolution`` (or ``max_steps``) ends the episode. ``reward_score`` is the episode's
  return (the sum of TelcoEnv's rewards: the outcome reward at the end by default); the registry
  entry is closed when the loop returns.
* :func:`write_configs` writes the tool YAML (every tool schema, from the environment's tool
  specs) and the agent-loop YAML; :func:`build_rows` and :func:`write_parquet` make the dataset.

Every behaviour (scenarios, tool results, errors, engineer replies, metrics, rewards) comes from
TelcoEnv: the same seed and actions give the same observations and reward as a local episode.
Differences come from verl itself: a call to a tool not in the YAML or with arguments that are not
JSON is answered by ``ToolAgentLoop`` without reaching the environment, and parallel calls of one
assistant turn are separate environment steps, run in order.

Install verl with the ``verl`` extra (see the README).

>>> rows = build_rows([{"seed": 0, "intent": "beam_misalignment"}], env_kwargs={"embedder": None})
>>> rows[0]["agent_name"], rows[0]["extra_info"]["interaction_kwargs"]["seed"]
('telcoenv_agent', 0)
>>> sorted(rows[0]["extra_info"]["tools_kwargs"])[:2]
['complaint_trend_analysis', 'coverage_map']
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import yaml

try:
    from omegaconf import DictConfig, ListConfig, OmegaConf
    from verl.experimental.agent_loop.agent_loop import AgentLoopOutput, register
    from verl.experimental.agent_loop.tool_agent_loop import AgentData, AgentState, ToolAgentLoop
    from verl.tools.base_tool import BaseTool
    from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse
    from verl.utils.rollout_trace import rollout_trace_op
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "telcoenv.integrations.verl needs verl 0.9 (install the 'verl' extra, see the README)"
    ) from exc

from telcoenv.actions import message_action
from telcoenv.env import TelcoEnv
from telcoenv.options import RESET_OPTIONS
from telcoenv.splits import CANARY

__all__ = [
    "AGENT_LOOP_CLASS",
    "AGENT_NAME",
    "DATA_SOURCE",
    "INTERACTION_NAME",
    "TOOL_CLASS",
    "Episode",
    "EpisodeRegistry",
    "TelcoAgentLoop",
    "TelcoEngineerInteraction",
    "TelcoTool",
    "VerlConfigPaths",
    "agent_loop_config",
    "build_rows",
    "episode_spec",
    "get_registry",
    "tool_config",
    "verl_tool_schema",
    "write_configs",
    "write_parquet",
]

logger = logging.getLogger(__name__)

AGENT_NAME = "telcoenv_agent"
"""The ``agent_name`` of telcoenv rows: :class:`TelcoAgentLoop`."""
INTERACTION_NAME = "telco_engineer"
"""``extra_info.interaction_kwargs.name`` of telcoenv rows."""
DATA_SOURCE = "telcoenv"
TOOL_CLASS = f"{__name__}.TelcoTool"
AGENT_LOOP_CLASS = f"{__name__}.TelcoAgentLoop"

EPISODE_FIELDS = frozenset({"seed"}) | RESET_OPTIONS
"""Keys of an episode spec: the reset ``seed`` and TelcoEnv's reset options."""
ENV_KWARGS = frozenset(
    {
        "intent",
        "lang",
        "blueprint",
        "max_steps",
        "intent_list",
        "privileged",
        "reward",
        "reward_mode",
        "shaping",
        "embedder",
        "require_approval",
        "tool_format",
        "database_url",
        "difficulty",
        "split",
        "tool_set",
        "hints",
    }
)
"""TelcoEnv constructor arguments that the YAML configs may set (plain YAML values only)."""
# What shapes a row's prompt, its tool list or its split: the prompt environment takes these.
_PROMPT_ENV_KWARGS = frozenset(
    {
        "intent",
        "lang",
        "blueprint",
        "intent_list",
        "require_approval",
        "tool_format",
        "difficulty",
        "split",
        "tool_set",
        "hints",
    }
)
_VERL_PROPERTY_KEYS = frozenset({"type", "description", "enum"})  # what verl's schema keeps


# --- episode specs and environment arguments ------------------------------------------------------


def _plain(value: Any) -> Any:
    """A YAML/Hydra value as plain Python containers (OmegaConf configs are converted)."""
    if isinstance(value, DictConfig | ListConfig):
        return OmegaConf.to_container(value, resolve=True)
    return value


def episode_spec(kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    """Normalise an episode spec: ``seed`` (required) and TelcoEnv reset options.

    ``None`` values (absent columns after a Parquet round trip) and ``name`` (the interaction's
    name in ``interaction_kwargs``) are dropped. Raises ``ValueError`` for unknown keys or a
    missing seed, since an unseeded episode would not be reproducible.
    """
    spec = {k: v for k, v in dict(_plain(kwargs) or {}).items() if v is not None and k != "name"}
    unknown = set(spec) - EPISODE_FIELDS
    if unknown:
        raise ValueError(
            f"unknown episode field(s) {sorted(unknown)}; valid: {sorted(EPISODE_FIELDS)}"
        )
    if "seed" not in spec:
        raise ValueError("a telcoenv episode spec needs a 'seed' (build rows with build_rows)")
    spec["seed"] = int(spec["seed"])
    if "sample_index" in spec:
        spec["sample_index"] = int(spec["sample_index"])
    return spec


def _env_kwargs(kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    """Check TelcoEnv constructor arguments from a YAML config."""
    env_kwargs = dict(_plain(kwargs) or {})
    unknown = set(env_kwargs) - ENV_KWARGS
    if unknown:
        raise ValueError(f"unknown env_kwargs {sorted(unknown)}; valid: {sorted(ENV_KWARGS)}")
    # Every value checked now (a bad one would otherwise fail each rollout); a database is
    # opened only by the episodes.
    TelcoEnv(**{**env_kwargs, "database_url": None}).close()
    return env_kwargs


def _reset_args(spec: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
    options = {k: v for k, v in spec.items() if k != "seed"}
    return int(spec["seed"]), options


# --- episodes and the per-process registry --------------------------------------------------------


_SUMMARY_COUNTS = ("steps", "tool_calls", "invalid_actions", "engineer_messages")


@dataclass
class Episode:
    """One trajectory's TelcoEnv episode.

    ``step`` is serialised by a lock (parallel tool calls of one turn run one after the other,
    in call order) and runs the environment in a worker thread (``TelcoEnv.astep``).
    ``episode_return`` sums the rewards; ``final_info`` is the ``info`` of the step that ended
    the episode (``None`` while it is open).
    """

    env: TelcoEnv
    spec: dict[str, Any]
    env_kwargs: dict[str, Any]
    statement: str
    reset_info: dict[str, Any]
    episode_return: float = 0.0
    final_info: dict[str, Any] | None = None
    last_info: dict[str, Any] = field(default_factory=dict)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)

    @classmethod
    def start(cls, spec: Mapping[str, Any], env_kwargs: Mapping[str, Any]) -> Episode:
        """Make the environment and reset it to the spec's episode."""
        env = TelcoEnv(**env_kwargs)
        seed, options = _reset_args(spec)
        statement, info = env.reset(seed=seed, options=options)
        return cls(env, dict(spec), dict(env_kwargs), statement, info, last_info=info)

    @property
    def done(self) -> bool:
        """Whether the episode has ended (terminated or truncated)."""
        return self.final_info is not None

    async def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """``TelcoEnv.step`` for this episode; the reward is added to ``episode_return``."""
        async with self._lock:
            observation, reward, terminated, truncated, info = await self.env.astep(action)
        reward = float(reward)
        self.episode_return += reward
        self.last_info = info
        if (terminated or truncated) and self.final_info is None:
            self.final_info = info
        return observation, reward, bool(terminated), bool(truncated), info

    def summary(self) -> dict[str, float]:
        """Scalars for verl's ``reward_extra_info`` (the same keys for every episode)."""
        final = self.final_info or {}
        trace = final.get("trace")
        return {
            "telcoenv_return": self.episode_return,
            "telcoenv_submitted": float(bool(trace is not None and trace.terminated)),
            "telcoenv_truncated": float(bool(trace is not None and trace.truncated)),
            "telcoenv_resolved": float(bool(final.get("resolved"))),
            **{f"telcoenv_{k}": float(self.last_info.get(k, 0)) for k in _SUMMARY_COUNTS},
        }

    def report(self) -> dict[str, Any]:
        """The episode's id, end state and metrics (``None`` while it is open)."""
        final = self.final_info or {}
        return {
            "episode_id": self.reset_info.get("episode_id"),
            "done": self.done,
            "resolved": final.get("resolved"),
            "metrics": final.get("metrics"),
        }

    def close(self) -> None:
        self.env.close()


class EpisodeRegistry:
    """Episodes of one process keyed by trajectory id (verl's ``request_id``).

    ``open`` is synchronous, so two coroutines opening the same trajectory get one episode. At
    most ``max_episodes`` are kept: beyond that the oldest is closed (with a warning), which
    only happens when trajectories are never closed (``TelcoAgentLoop`` closes its own).
    """

    def __init__(self, max_episodes: int = 4096) -> None:
        self.max_episodes = max_episodes
        self._episodes: OrderedDict[str, Episode] = OrderedDict()

    def open(self, key: str, spec: Mapping[str, Any], env_kwargs: Mapping[str, Any]) -> Episode:
        """The trajectory's episode, started from ``spec`` and ``env_kwargs`` on first use.

        Raises ``ValueError`` if the trajectory is already open with another spec or other
        environment arguments (the tool and agent-loop configs disagree).
        """
        episode = self._episodes.get(key)
        if episode is not None:
            if episode.spec != dict(spec) or episode.env_kwargs != dict(env_kwargs):
                raise ValueError(
                    f"trajectory {key!r} is open with spec {episode.spec} and env_kwargs "
                    f"{episode.env_kwargs}, not {dict(spec)} and {dict(env_kwargs)}"
                )
            return episode
        episode = Episode.start(spec, env_kwargs)
        self._episodes[key] = episode
        while len(self._episodes) > self.max_episodes:
            old_key, old = self._episodes.popitem(last=False)
            logger.warning("telcoenv registry full: closing trajectory %s", old_key)
            old.close()
        return episode

    def get(self, key: str) -> Episode | None:
        return self._episodes.get(key)

    def close(self, key: str) -> Episode | None:
        """Forget the trajectory and release its environment; returns the closed episode."""
        episode = self._episodes.pop(key, None)
        if episode is not None:
            episode.close()
        return episode

    def clear(self) -> None:
        """Close every episode."""
        while self._episodes:
            self._episodes.popitem(last=False)[1].close()

    def __contains__(self, key: object) -> bool:
        return key in self._episodes

    def __len__(self) -> int:
        return len(self._episodes)


_REGISTRIES: dict[str, EpisodeRegistry] = {}


def get_registry(name: str = "default") -> EpisodeRegistry:
    """The process's registry called ``name`` (tools, interaction and loop share it by name)."""
    if name not in _REGISTRIES:
        _REGISTRIES[name] = EpisodeRegistry()
    return _REGISTRIES[name]


def _trajectory_key(instance_id: str, kwargs: Mapping[str, Any]) -> str:
    """``agent_data.request_id`` when verl passes it, else the instance id itself."""
    request_id = getattr(kwargs.get("agent_data"), "request_id", None)
    return str(request_id) if request_id is not None else str(instance_id)


# --- verl tool --------------------------------------------------------------------------------


class TelcoTool(BaseTool):
    """Any telcoenv tool, as a verl ``BaseTool``; its name and schema come from ``tool_schema``.

    ``config``: ``type: native``, ``registry`` (default ``"default"``) and ``env_kwargs``
    (TelcoEnv constructor arguments). ``create(create_kwargs=spec)`` records the episode spec
    of the row (see :func:`episode_spec`); ``execute`` opens the trajectory's episode on first
    use and steps it with ``{"name": tool, "arguments": parameters}``, returning the
    environment's observation (JSON, an ``{"error": ...}`` for a refused call), the step's
    reward and ``{"terminated", "truncated", "valid"}``. The trajectory is
    ``agent_data.request_id`` (verl's ToolAgentLoop passes ``agent_data``); callers without it
    must use the trajectory id as ``instance_id``. ``release`` forgets the call, not the episode.
    """

    def __init__(self, config: dict[str, Any], tool_schema: OpenAIFunctionToolSchema) -> None:
        super().__init__(config, tool_schema)
        self.registry = get_registry(str(config.get("registry", "default")))
        self.env_kwargs = _env_kwargs(config.get("env_kwargs"))
        self._specs: dict[str, dict[str, Any]] = {}
        self._ids = itertools.count()

    @property
    def open_calls(self) -> frozenset[str]:
        """The instance ids created and not yet released (empty once verl has released every
        call: the episodes themselves stay in the registry)."""
        return frozenset(self._specs)

    async def create(
        self, instance_id: str | None = None, **kwargs: Any
    ) -> tuple[str, ToolResponse]:
        """Record the episode spec (``create_kwargs``) of one call; returns its instance id."""
        if instance_id is None:
            instance_id = f"{self.name}-{next(self._ids)}"
        self._specs[instance_id] = episode_spec(kwargs.get("create_kwargs"))
        return instance_id, ToolResponse()

    @rollout_trace_op
    async def execute(
        self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
    ) -> tuple[ToolResponse, float, dict[str, Any]]:
        """Step the trajectory's episode with this tool call."""
        if instance_id not in self._specs:
            raise ValueError(f"{self.name}: execute({instance_id!r}) before create()")
        key = _trajectory_key(instance_id, kwargs)
        episode = self.registry.open(key, self._specs[instance_id], self.env_kwargs)
        action = {"name": self.name, "arguments": parameters}
        observation, reward, terminated, truncated, info = await episode.step(action)
        valid = (info.get("action") or {}).get("valid")
        metrics = {"terminated": terminated, "truncated": truncated, "valid": valid}
        return ToolResponse(text=observation), reward, metrics

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        """The trajectory's return so far (0.0 for an unknown trajectory)."""
        episode = self.registry.get(_trajectory_key(instance_id, kwargs))
        return episode.episode_return if episode is not None else 0.0

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        """Forget the call; the episode stays open for the trajectory's next calls."""
        self._specs.pop(instance_id, None)


# --- simulated engineer -----------------------------------------------------------------------


def _text(content: Any) -> Any:
    """The text of a message content (a string or a list of typed parts); any other value is
    returned as it is, for the environment to refuse with an error observation."""
    if isinstance(content, list):
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )  # image parts carry no text
    return "" if content is None else content


def _last_assistant_text(messages: Iterable[Mapping[str, Any]]) -> Any:
    for message in reversed(list(messages)):
        if message.get("role") == "assistant":
            return _text(message.get("content"))
    return ""


class TelcoEngineerInteraction:
    """The simulated engineer, with the methods of verl's former ``BaseInteraction``.

    ``config``: ``name`` (default ``"telco_engineer"``), ``registry`` and ``env_kwargs`` as for
    :class:`TelcoTool`. The instance id is the trajectory id, shared with the tools.

    * ``start_interaction(instance_id, **interaction_kwargs)`` opens the episode (idempotent);
    * ``generate_response(instance_id, messages, content=None)`` sends ``content`` (default: the
      last assistant message's text) to the engineer and returns ``(should_terminate, reply,
      step_reward, extra)``; ``should_terminate`` is true once the episode has ended;
    * ``calculate_score(instance_id)`` is the episode's return;
    * ``finalize_interaction(instance_id)`` closes the episode.
    """

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        self.config = dict(_plain(config) or {})
        self.name = str(self.config.get("name", INTERACTION_NAME))
        self.registry = get_registry(str(self.config.get("registry", "default")))
        self.env_kwargs = _env_kwargs(self.config.get("env_kwargs"))
        self._ids = itertools.count()

    def episode(self, instance_id: str | None) -> Episode | None:
        """The open episode of a trajectory (``None`` if it has none)."""
        return self.registry.get(instance_id) if instance_id is not None else None

    async def start_interaction(self, instance_id: str | None = None, **kwargs: Any) -> str:
        """Open the trajectory's episode from ``kwargs`` (an episode spec); returns its id."""
        if instance_id is None:
            instance_id = f"{self.name}-{next(self._ids)}"
        self.registry.open(instance_id, episode_spec(kwargs), self.env_kwargs)
        return instance_id

    async def generate_response(
        self, instance_id: str, messages: list[dict[str, Any]], **kwargs: Any
    ) -> tuple[bool, str, float, dict[str, Any]]:
        """The engineer's reply to the agent's message (one environment step)."""
        episode = self.registry.get(instance_id)
        if episode is None:
            raise KeyError(f"no telcoenv episode for {instance_id!r}: call start_interaction")
        content = kwargs.get("content")
        if content is None:
            content = _last_assistant_text(messages)
        observation, reward, terminated, truncated, info = await episode.step(
            message_action(_text(content))
        )
        extra = {"action": info.get("action"), "terminated": terminated, "truncated": truncated}
        return terminated or truncated, observation, reward, extra

    async def calculate_score(self, instance_id: str, **kwargs: Any) -> float:
        """The episode's return: TelcoEnv's reward summed over the trajectory's steps."""
        episode = self.registry.get(instance_id)
        return episode.episode_return if episode is not None else 0.0

    async def finalize_interaction(self, instance_id: str, **kwargs: Any) -> None:
        """Close the trajectory's episode."""
        self.registry.close(instance_id)


# --- agent loop -------------------------------------------------------------------------------


def _row_spec(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The episode spec of a row: ``interaction_kwargs`` (top level or in ``extra_info``)."""
    spec = _plain(kwargs.get("interaction_kwargs"))
    if not spec:
        spec = (_plain(kwargs.get("extra_info")) or {}).get("interaction_kwargs")
    if not spec:
        raise ValueError("a telcoenv row needs extra_info.interaction_kwargs (see build_rows)")
    return episode_spec(spec)


@register(AGENT_NAME)
class TelcoAgentLoop(ToolAgentLoop):
    """verl's ``ToolAgentLoop`` with the simulated engineer and TelcoEnv's reward.

    Constructor arguments (besides verl's): ``registry``, ``env_kwargs`` (as in the tool
    config: both must match), ``max_engineer_turns`` (``None``: bounded by ``max_steps`` and
    verl's ``max_user_turns``) and ``outcome_log`` (a file path: every trajectory appends a JSON
    line ``{"spec", "resolved", "return"}``, which
    :meth:`telcoenv.curriculum.Curriculum.record_log` reads). ``run`` opens the row's episode,
    runs the tool loop, answers plain assistant messages with the engineer's reply while the
    episode is open, stops once the episode ends, sets ``reward_score`` to the episode's return and
    ``extra_fields["reward_extra_info"]`` to :meth:`Episode.summary`, then closes the episode.
    """

    def __init__(
        self,
        *args: Any,
        registry: str = "default",
        env_kwargs: Mapping[str, Any] | None = None,
        max_engineer_turns: int | None = None,
        outcome_log: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.interaction = TelcoEngineerInteraction(
            {"registry": registry, "env_kwargs": _plain(env_kwargs)}
        )
        self.max_engineer_turns = max_engineer_turns
        self.outcome_log = Path(outcome_log) if outcome_log else None
        self._spec: dict[str, Any] = {}
        self._trajectory: str | None = None
        self._engineer_turns = 0

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        self._spec, self._trajectory, self._engineer_turns = _row_spec(kwargs), None, 0
        try:
            output = await super().run(sampling_params, **kwargs)
            return self._scored(output)
        finally:
            if self._trajectory is not None:
                await self.interaction.finalize_interaction(self._trajectory)

    def _scored(self, output: AgentLoopOutput) -> AgentLoopOutput:
        episode = self.interaction.episode(self._trajectory)
        if episode is None:  # pragma: no cover - the pending state always opens it
            raise RuntimeError("the trajectory's telcoenv episode is missing")
        output.reward_score = episode.episode_return
        output.extra_fields["reward_extra_info"] = episode.summary()
        output.extra_fields["telcoenv"] = report = episode.report()
        if self.outcome_log is not None:
            _append_outcome(self.outcome_log, episode.spec, report, episode.episode_return)
        return output

    def _episode_open(self) -> bool:
        episode = self.interaction.episode(self._trajectory)
        return episode is not None and not episode.done

    async def _handle_pending_state(
        self, agent_data: AgentData, sampling_params: dict[str, Any]
    ) -> AgentState:
        self._trajectory = await self.interaction.start_interaction(
            agent_data.request_id, **self._spec
        )
        return await super()._handle_pending_state(agent_data, sampling_params)

    async def _handle_generating_state(
        self,
        agent_data: AgentData,
        sampling_params: dict[str, Any],
        ignore_termination: bool = False,
    ) -> AgentState:
        before = len(agent_data.messages)
        state = await super()._handle_generating_state(
            agent_data, sampling_params, ignore_termination
        )
        # A new assistant message without tool calls is addressed to the engineer (limits reached
        # in the parent end the loop before the message is appended).
        spoke = len(agent_data.messages) > before and not agent_data.tool_calls
        if state == AgentState.TERMINATED and spoke and self._engineer_may_answer():
            return await self._handle_engineer_turn(agent_data)
        return state

    def _engineer_may_answer(self) -> bool:
        limit = self.max_engineer_turns
        return self._episode_open() and (limit is None or self._engineer_turns < limit)

    async def _handle_processing_tools_state(self, agent_data: AgentData) -> AgentState:
        state = await super()._handle_processing_tools_state(agent_data)
        return state if self._episode_open() else AgentState.TERMINATED

    def _engineer_text(self, agent_data: AgentData) -> str:
        """The assistant's last message without the tokenizer's special tokens."""
        text = _text(agent_data.messages[-1].get("content"))
        for token in getattr(self.tokenizer, "all_special_tokens", None) or []:
            text = text.replace(token, "")
        return text.strip()

    async def _handle_engineer_turn(self, agent_data: AgentData) -> AgentState:
        """Send the assistant's message to the engineer and append the reply (mask 0)."""
        should_end, reply, score, _ = await self.interaction.generate_response(
            self._trajectory, agent_data.messages, content=self._engineer_text(agent_data)
        )
        self._engineer_turns += 1
        agent_data.user_turns += 1
        agent_data.turn_scores.append(score)
        if should_end:
            return AgentState.TERMINATED
        previous = list(agent_data.messages)
        agent_data.messages.append({"role": "user", "content": reply})
        schemas = getattr(agent_data, "_active_tool_schemas", self.tool_schemas)
        merged, response_mask, response_logprobs = await self.ct_merge_context_msg(
            previous,
            agent_data.messages,
            agent_data.prompt_ids,
            agent_data.response_mask,
            agent_data.response_logprobs or None,
            tools=schemas,
        )
        if len(response_mask) >= self.response_length:
            return AgentState.TERMINATED
        agent_data.prompt_ids = merged.token_ids
        agent_data.response_mask = response_mask
        if agent_data.response_logprobs:
            agent_data.response_logprobs = response_logprobs or []
        return AgentState.GENERATING


# --- configuration files ----------------------------------------------------------------------


def _append_outcome(
    path: Path, spec: Mapping[str, Any], report: Mapping[str, Any], episode_return: float
) -> None:
    """One line of the outcome log, written whole in one call (O_APPEND: the lines of the
    loops of one machine do not interleave)."""
    line = {"spec": dict(spec), "resolved": bool(report.get("resolved")), "return": episode_return}
    data = (json.dumps(line, sort_keys=True) + "\n").encode()
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(descriptor, data)
    finally:
        os.close(descriptor)


def verl_tool_schema(tool: Mapping[str, Any]) -> dict[str, Any]:
    """An OpenAI tool spec as verl's ``OpenAIFunctionToolSchema`` keeps it.

    verl keeps only ``type``, ``description`` and ``enum`` of each parameter; the other JSON
    Schema keywords (nested ``properties``, ``items``, ``pattern``, bounds) are appended to the
    parameter's description, so the model still sees them. The environment validates the calls
    against the full schema.
    """
    function = tool["function"]
    parameters = function.get("parameters") or {"type": "object", "properties": {}}
    properties = {}
    for name, schema in (parameters.get("properties") or {}).items():
        kept = {k: v for k, v in schema.items() if k in _VERL_PROPERTY_KEYS}
        rest = {k: v for k, v in schema.items() if k not in _VERL_PROPERTY_KEYS}
        if rest:
            hint = "JSON Schema: " + json.dumps(rest, ensure_ascii=False, separators=(",", ":"))
            description = kept.get("description")
            kept["description"] = f"{description} {hint}" if description else hint
        if "type" not in kept:  # verl requires one; the compact format leaves it to the enum
            kept["type"] = _json_type(schema)
        properties[name] = kept
    return {
        "type": "function",
        "function": {
            "name": function["name"],
            "description": function.get("description", ""),
            "parameters": {
                "type": parameters.get("type", "object"),
                "properties": properties,
                "required": list(parameters.get("required") or []),
            },
        },
    }


def _json_type(schema: Mapping[str, Any]) -> str:
    """A parameter's JSON type when its schema names none: its enum values' (else string)."""
    names = {bool: "boolean", int: "integer", float: "number", str: "string"}
    kinds = {names.get(type(value), "string") for value in schema.get("enum") or ["text"]}
    return kinds.pop() if len(kinds) == 1 else "string"


def _prompt_env(env_kwargs: Mapping[str, Any]) -> TelcoEnv:
    """An environment for prompts and tool specs (privileged, no embedder, no scoring)."""
    kwargs = {k: v for k, v in env_kwargs.items() if k in _PROMPT_ENV_KWARGS}
    return TelcoEnv(**kwargs, privileged=True, embedder=None)


def tool_config(
    env_kwargs: Mapping[str, Any] | None = None, registry: str = "default"
) -> dict[str, Any]:
    """The tool YAML content: one :class:`TelcoTool` entry per tool of the environment."""
    env_kwargs = _env_kwargs(env_kwargs)
    env = _prompt_env(env_kwargs)
    try:
        tools = list(env.tools)
    finally:
        env.close()
    return {
        "tools": [
            {
                "class_name": TOOL_CLASS,
                "config": {"type": "native", "registry": registry, "env_kwargs": dict(env_kwargs)},
                "tool_schema": verl_tool_schema(tool),
            }
            for tool in tools
        ]
    }


def agent_loop_config(
    env_kwargs: Mapping[str, Any] | None = None,
    registry: str = "default",
    max_engineer_turns: int | None = None,
    outcome_log: str | Path | None = None,
) -> list[dict[str, Any]]:
    """The agent-loop YAML content: :class:`TelcoAgentLoop` under :data:`AGENT_NAME`
    (``outcome_log``: where each trajectory's outcome goes, for a curriculum)."""
    return [
        {
            "name": AGENT_NAME,
            "_target_": AGENT_LOOP_CLASS,
            "registry": registry,
            "env_kwargs": _env_kwargs(env_kwargs),
            "max_engineer_turns": max_engineer_turns,
            "outcome_log": None if outcome_log is None else str(outcome_log),
        }
    ]


class VerlConfigPaths(NamedTuple):
    """Where :func:`write_configs` wrote the two files."""

    tool_config: Path
    """For ``actor_rollout_ref.rollout.multi_turn.tool_config_path``."""
    agent_loop_config: Path
    """For ``actor_rollout_ref.rollout.agent.agent_loop_config_path``."""


def _dump(content: Any, path: Path) -> Path:
    path.write_text(yaml.safe_dump(content, allow_unicode=True, sort_keys=False), "utf-8")
    return path


def write_configs(
    directory: str | Path,
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    registry: str = "default",
    max_engineer_turns: int | None = None,
    outcome_log: str | Path | None = None,
) -> VerlConfigPaths:
    """Write ``telcoenv_tools.yaml`` and ``telcoenv_agent_loop.yaml`` into ``directory``.

    Both carry the same ``env_kwargs`` (TelcoEnv constructor arguments, e.g. ``max_steps``,
    ``reward``, ``embedder``) and ``registry``; ``outcome_log`` goes to the agent loop (see
    :class:`TelcoAgentLoop`).
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    return VerlConfigPaths(
        _dump(tool_config(env_kwargs, registry), directory / "telcoenv_tools.yaml"),
        _dump(
            agent_loop_config(env_kwargs, registry, max_engineer_turns, outcome_log),
            directory / "telcoenv_agent_loop.yaml",
        ),
    )


# --- dataset rows -----------------------------------------------------------------------------


def _row(env: TelcoEnv, spec: dict[str, Any], index: int, split: str) -> dict[str, Any]:
    seed, options = _reset_args(spec)
    _, info = env.reset(seed=seed, options=options)
    privileged = info["privileged"]
    tool_names = [tool["function"]["name"] for tool in info["tools"]]
    return {
        "data_source": DATA_SOURCE,
        "agent_name": AGENT_NAME,
        "prompt": info["messages"],
        "ability": "network_troubleshooting",
        "reward_model": {"style": "rule", "ground_truth": privileged["intent"]},
        "extra_info": {
            "index": index,
            "split": split,
            "episode_id": info["episode_id"],
            "blueprint_id": privileged["blueprint_id"],
            "need_tools_kwargs": True,
            "tools_kwargs": {name: {"create_kwargs": dict(spec)} for name in tool_names},
            "interaction_kwargs": {"name": INTERACTION_NAME, **spec},
            **_split_marks(env.split),
        },
    }


def _split_marks(split: str) -> dict[str, str]:
    """A row of a telcoenv split names it (``telcoenv_split``: ``split`` is the row's verl
    dataset split); a test-split row carries the canary."""
    if split == "all":
        return {}
    return {"telcoenv_split": split, **({"canary": CANARY} if split == "test" else {})}


def build_rows(
    episodes: Iterable[Mapping[str, Any]],
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    split: str = "train",
) -> list[dict[str, Any]]:
    """verl dataset rows, one per episode spec (``seed`` plus reset options).

    Each row has ``prompt`` (TelcoEnv's system and user messages of that episode),
    ``agent_name`` (:data:`AGENT_NAME`), ``data_source``, ``reward_model`` (the true intent as
    ``ground_truth``, for reference: the reward comes from the environment) and ``extra_info``
    with ``index``, ``tools_kwargs`` (``{tool: {"create_kwargs": spec}}``) and
    ``interaction_kwargs`` (``{"name": "telco_engineer", **spec}``). ``env_kwargs`` must be the
    ones of the configs, since they can change the prompt (``intent``, ``intent_list``, ...);
    with a telcoenv ``split`` in them (:mod:`telcoenv.splits`), ``extra_info`` names it
    (``telcoenv_split``) and a test-split row carries :data:`telcoenv.splits.CANARY`.
    """
    env = _prompt_env(_env_kwargs(env_kwargs))
    try:
        return [_row(env, episode_spec(e), i, split) for i, e in enumerate(episodes)]
    finally:
        env.close()


def write_parquet(rows: Iterable[Mapping[str, Any]], path: str | Path) -> Path:
    """Write rows as the Parquet file that verl's ``data.train_files`` reads (needs pandas)."""
    import pandas

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pandas.DataFrame(list(rows)).to_parquet(path, index=False)
    return path
