"""OpenEnv adapter: serve a telcoenv environment to remote trainers with ``openenv-core``.

OpenEnv's contract (``openenv.core.env_server``): an :class:`~openenv.core.env_server.Environment`
subclass with ``reset(seed, episode_id, **kwargs) -> Observation``,
``step(action, timeout_s) -> Observation`` and a ``state`` property; pydantic ``Action``,
``Observation`` and ``State`` models (the reward and ``done`` travel inside the observation); and
``create_app(factory, Action, Observation, max_concurrent_envs=N)``, a FastAPI app whose WebSocket
``/ws`` gives every connection its own environment instance (a stateful session), next to
stateless HTTP ``/reset``, ``/step`` and ``/state`` (each request gets a fresh instance), plus
``/schema``, ``/metadata`` and ``/health``.

This module maps that contract onto :class:`telcoenv.env.TelcoEnv`; every behaviour (episodes,
tools, engineer replies, errors, metrics, rewards) comes from TelcoEnv:

* :class:`TelcoAction`: a tool call ``{"tool_name", "arguments"}`` or a ``{"message"}`` to the
  simulated engineer. Structural problems (neither or both) fail validation (HTTP 422, a WebSocket
  ``VALIDATION_ERROR``); anything TelcoEnv can judge (unknown tool, bad arguments, empty message,
  action after the end) is an error observation, never a server error.
* :class:`TelcoObservation`: ``text`` (the problem statement at reset; the tool's JSON result,
  the engineer's reply or a ``{"error": {"type", "message"}}`` JSON after a step), ``reward``,
  ``done`` and JSON-safe fields for what ``info`` holds: the instructions and OpenAI tool specs at
  reset, the metrics and resolution at the end. openenv-core strips ``metadata`` from observations
  on the wire, so everything a remote trainer needs is a field; ``metadata`` repeats the whole
  JSON-safe ``info`` for in-process use.
* :class:`TelcoState`: ``episode_id`` and ``step_count`` plus the episode's counters.
* :class:`TelcoOpenEnv`: the environment (``SUPPORTS_CONCURRENT_SESSIONS = True``: every
  instance owns its TelcoEnv and its private in-memory network database; the caches TelcoEnv
  shares between instances are read-only or lock-protected).
* :func:`create_telcoenv_app`: the FastAPI app, and :class:`TelcoEnvClient`, OpenEnv's typed
  WebSocket client for it.

Install with the ``openenv`` extra (``pip install "telcoenv[openenv]"``).

>>> env = TelcoOpenEnv("beam_misalignment", embedder=None)
>>> observation = env.reset(seed=0)
>>> observation.done, observation.reward, len(observation.tools) > 0
(False, None, True)
>>> observation = env.step(TelcoAction(tool_name="no_such_tool", arguments={}))
>>> observation.error["type"], observation.done
('unknown_tool', False)
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import Field, ValidationError, model_validator
from pydantic_core import PydanticCustomError, to_jsonable_python

try:
    from openenv.core.client_types import StepResult
    from openenv.core.env_client import EnvClient
    from openenv.core.env_server import (
        Action,
        ConcurrencyConfig,
        Environment,
        Observation,
        State,
        create_app,
    )
    from openenv.core.env_server.types import EnvironmentMetadata
    from starlette.responses import JSONResponse
except ModuleNotFoundError as exc:  # pragma: no cover - exercised only without the extra
    if not (exc.name or "").startswith("openenv"):
        raise
    raise ModuleNotFoundError(
        "telcoenv.integrations.openenv needs openenv-core: pip install 'telcoenv[openenv]'"
    ) from exc

import telcoenv
from telcoenv.actions import message_action
from telcoenv.errors import TelcoEnvError
from telcoenv.options import RESET_OPTIONS

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = [
    "DEFAULT_MAX_CONCURRENT_ENVS",
    "TelcoAction",
    "TelcoEnvClient",
    "TelcoObservation",
    "TelcoOpenEnv",
    "TelcoState",
    "create_telcoenv_app",
]

DEFAULT_MAX_CONCURRENT_ENVS = 8
"""WebSocket sessions a served app holds at once unless told otherwise (one TelcoEnv each)."""

_COUNTERS = ("steps", "tool_calls", "invalid_actions", "engineer_messages")


class TelcoAction(Action):
    """One agent action: a tool call, or a plain message to the simulated engineer.

    Exactly one of ``tool_name`` and ``message`` must be set (else a validation error).
    ``arguments`` is the call's JSON object, or its JSON text as LLMs emit it; TelcoEnv validates
    it against the tool's schema and answers bad arguments with an error observation.
    """

    tool_name: str | None = Field(
        default=None, description="Tool to call (see the reset observation's tools)"
    )
    arguments: dict[str, Any] | str = Field(
        default_factory=dict, description="The tool's arguments: a JSON object or its JSON text"
    )
    message: str | None = Field(
        default=None, description="A message to the engineer instead of a tool call"
    )

    @model_validator(mode="after")
    def _one_kind(self) -> TelcoAction:
        # PydanticCustomError, not ValueError: openenv-core's WebSocket server serialises
        # ``errors()`` as JSON, and a ValueError in their context would end the session.
        if (self.tool_name is None) == (self.message is None):
            raise PydanticCustomError(
                "telco_action", "set exactly one of 'tool_name' (a tool call) and 'message'"
            )
        if self.message is not None and self.arguments:
            raise PydanticCustomError(
                "telco_action", "'arguments' belong to a tool call, not to a message"
            )
        return self

    def to_telco(self) -> dict[str, Any]:
        """The action in TelcoEnv's format (a tool call dict or an assistant message)."""
        if self.tool_name is not None:
            return {"name": self.tool_name, "arguments": self.arguments}
        # An assistant message, so that text starting with "{" is not read as a JSON tool call.
        return message_action(self.message)


class TelcoObservation(Observation):
    """What the agent sees after ``reset`` or ``step``, with the reward and ``done``.

    ``reward`` is ``None`` at reset and TelcoEnv's step reward after (the episode's score at the
    end under the default sparse reward, 0 before); ``done`` is ``terminated or truncated``.
    """

    text: str = Field(
        default="",
        description="Problem statement at reset; tool JSON, engineer reply or error JSON after",
    )
    episode_id: str | None = Field(default=None, description="The episode's id")
    instructions: str | None = Field(default=None, description="The system prompt (reset only)")
    tools: list[dict[str, Any]] = Field(
        default_factory=list, description="OpenAI function specs of the tools (reset only)"
    )
    messages: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Chat messages to append: system + user at reset, tool/user after a step",
    )
    lang: str | None = Field(default=None, description="The engineer's language (reset only)")
    terminated: bool = Field(default=False, description="submit_resolution ended the episode")
    truncated: bool = Field(default=False, description="max_steps ended the episode")
    action_status: dict[str, Any] | None = Field(
        default=None, description="The last action's kind, validity and error type"
    )
    error: dict[str, Any] | None = Field(
        default=None, description="{'type', 'message'} when the action was refused"
    )
    counts: dict[str, int] = Field(
        default_factory=dict,
        description="steps, tool_calls, invalid_actions and engineer_messages so far",
    )
    reward_components: dict[str, float] = Field(
        default_factory=dict, description="The terms of this step's reward"
    )
    metrics: dict[str, Any] | None = Field(
        default=None, description="IRA, MSC, EAP, SAS, RA and the chains (episode end only)"
    )
    resolved: bool | None = Field(
        default=None, description="Whether the network fault was fixed (episode end only)"
    )
    metrics_error: str | None = Field(default=None, description="Why a metric was skipped")
    privileged: dict[str, Any] | None = Field(
        default=None, description="Gold intent, chain and summary (privileged environments only)"
    )


class TelcoState(State):
    """The session's episode: OpenEnv's ``episode_id`` and ``step_count`` plus TelcoEnv's counters.

    ``step_count`` counts the actions taken in the episode (actions after its end are refused and
    not counted). The true intent is never here; it is in ``privileged`` observations only.
    """

    env_id: str = Field(default="", description="Gymnasium id of the environment")
    telco_episode_id: str | None = Field(default=None, description="TelcoEnv's episode id")
    seed: int | None = Field(default=None, description="The reset seed")
    lang: str | None = Field(default=None, description="The engineer's language")
    max_steps: int = Field(default=0, description="Actions allowed before truncation")
    terminated: bool = False
    truncated: bool = False
    done: bool = False
    total_reward: float = Field(default=0.0, description="Sum of the episode's step rewards")
    tool_calls: int = 0
    invalid_actions: int = 0
    engineer_messages: int = 0


def _jsonable(value: Any) -> Any:
    """``value`` as plain JSON types (pydantic models dumped, tuples as lists)."""
    return to_jsonable_python(value, fallback=repr)


def _error(text: str, status: dict[str, Any]) -> dict[str, Any] | None:
    """The error of a refused action: its JSON error, or (an empty message, which the
    counterpart answers in words) its type and the counterpart's words."""
    return _decode_error(text) or {"type": status.get("error_type"), "message": text}


def _decode_error(text: str) -> dict[str, Any] | None:
    try:
        decoded = json.loads(text)
    except ValueError:
        return None
    error = decoded.get("error") if isinstance(decoded, dict) else None
    return error if isinstance(error, dict) else None


def _as_telco(action: Any) -> Any:
    """The action in TelcoEnv's format. Anything that is not a valid TelcoAction goes to
    TelcoEnv as it is, which takes its other action forms or answers with an error observation."""
    if isinstance(action, TelcoAction):
        return action.to_telco()
    try:
        return TelcoAction.model_validate(action).to_telco()
    except (ValidationError, TypeError, ValueError):
        return action


class TelcoOpenEnv(Environment[TelcoAction, TelcoObservation, TelcoState]):
    """A telcoenv environment behind OpenEnv's ``Environment`` interface.

    Args:
        env_id: a telcoenv name or Gymnasium id (``"troubleshooting"``, the whole taxonomy, or
            an intent such as ``"beam_misalignment"``); built with :func:`telcoenv.make`.
        **env_kwargs: keyword arguments of :class:`telcoenv.env.TelcoEnv` (``lang``,
            ``max_steps``, ``embedder``, ``reward``, ``privileged``, ...). Bad values raise
            :class:`telcoenv.errors.TelcoEnvError` here.

    ``reset(seed, episode_id, *, options=None, **reset_options)`` takes TelcoEnv's reset options
    (``intent``, ``blueprint``, ``sample_index``, ``lang``, ...) as keywords or in ``options``;
    unknown ones raise :class:`~telcoenv.errors.EpisodeOptionError` (a reset request error, not an
    agent error). ``step`` never raises on agent input. A ``step`` before any ``reset`` (as on
    openenv-core's stateless HTTP ``/step``, which builds a fresh instance per request) returns a
    ``reset_needed`` error observation with ``done=True``.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, env_id: str = "troubleshooting", **env_kwargs: Any) -> None:
        super().__init__()
        self._env_name = env_id
        self.env = telcoenv.make(env_id, **env_kwargs)
        self._state = TelcoState(env_id=self.telco_env.env_id, max_steps=self.telco_env.max_steps)

    @property
    def telco_env(self) -> Any:
        """The unwrapped :class:`telcoenv.env.TelcoEnv` (its ``trace``, ``domain``, ...)."""
        return self.env.unwrapped

    # --- OpenEnv interface ------------------------------------------------------------------------

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        options: Mapping[str, Any] | None = None,
        **reset_options: Any,
    ) -> TelcoObservation:
        """Start an episode; the observation carries the problem statement and the tools.

        The same ``seed`` and options give the same episode (TelcoEnv's determinism).
        ``episode_id`` names the episode in :attr:`state` and observations (default: TelcoEnv's
        deterministic id).
        """
        merged = {**dict(options or {}), **reset_options}
        statement, info = self.env.reset(seed=seed, options=merged or None)
        telco_id = info["episode_id"]
        self._state = TelcoState(
            episode_id=episode_id or telco_id,
            step_count=0,
            env_id=self.telco_env.env_id,
            telco_episode_id=telco_id,
            seed=seed,
            lang=info["language"],
            max_steps=self.telco_env.max_steps,
        )
        return TelcoObservation(
            text=statement,
            episode_id=self._state.episode_id,
            instructions=info["instructions"],
            tools=_jsonable(info["tools"]),
            messages=_jsonable(info["messages"]),
            lang=info["language"],
            counts={k: int(info[k]) for k in _COUNTERS},
            privileged=_jsonable(info.get("privileged")),
            reward=None,
            done=False,
            metadata=self._metadata(info),
        )

    def step(
        self, action: TelcoAction, timeout_s: float | None = None, **kwargs: Any
    ) -> TelcoObservation:
        """Take one action; returns the tool result / engineer reply with reward and ``done``.

        ``timeout_s`` is accepted for the interface and ignored (tools run in-process, in
        milliseconds).
        """
        if self._state.telco_episode_id is None:
            text = json.dumps(
                {
                    "error": {
                        "type": "reset_needed",
                        "message": "call reset() before step(); over HTTP every request gets a "
                        "fresh environment, so run episodes over the WebSocket /ws session",
                    }
                }
            )
            return TelcoObservation(
                text=text, error=_decode_error(text), reward=0.0, done=True, metadata={}
            )
        text, reward, terminated, truncated, info = self.env.step(_as_telco(action))
        reward = float(reward)
        status = info.get("action")
        state = self._state
        state.step_count = int(info["steps"])
        state.terminated, state.truncated = bool(terminated), bool(truncated)
        state.done = state.terminated or state.truncated
        state.total_reward += reward
        state.tool_calls = int(info["tool_calls"])
        state.invalid_actions = int(info["invalid_actions"])
        state.engineer_messages = int(info["engineer_messages"])
        invalid = status is not None and not status.get("valid", True)
        return TelcoObservation(
            text=text,
            episode_id=state.episode_id,
            messages=_jsonable(info.get("messages", [])),
            terminated=state.terminated,
            truncated=state.truncated,
            action_status=_jsonable(status),
            error=_error(text, status) if invalid else None,
            counts={k: int(info[k]) for k in _COUNTERS},
            reward_components={k: float(v) for k, v in info.get("reward_components", {}).items()},
            metrics=_jsonable(info.get("metrics")),
            resolved=info.get("resolved"),
            metrics_error=info.get("metrics_error"),
            privileged=_jsonable(info.get("privileged")),
            reward=reward,
            done=state.done,
            metadata=self._metadata(info),
        )

    @property
    def state(self) -> TelcoState:
        """The current episode's state (a copy; ``episode_id`` ``None`` before the first reset)."""
        return self._state.model_copy()

    def get_metadata(self) -> EnvironmentMetadata:
        """Name, description and version shown by the server's ``/metadata``."""
        return EnvironmentMetadata(
            name=self.telco_env.env_id,
            description=(
                "telcoenv: troubleshoot a simulated mobile network with OSS/KPI tools, talk to "
                "the reporting engineer, fix the fault and submit_resolution "
                f"(reset options: {', '.join(sorted(RESET_OPTIONS))})"
            ),
            version=telcoenv.__version__,
        )

    def close(self) -> None:
        """Release the TelcoEnv (its episode database); idempotent."""
        self.env.close()

    # --- helpers ----------------------------------------------------------------------------------

    @staticmethod
    def _metadata(info: Mapping[str, Any]) -> dict[str, Any]:
        """The whole ``info`` minus the trace, as JSON types (in-process use; not on the wire)."""
        return _jsonable({k: v for k, v in info.items() if k != "trace"})


def create_telcoenv_app(
    env_id: str = "troubleshooting",
    *,
    max_concurrent_envs: int = DEFAULT_MAX_CONCURRENT_ENVS,
    session_timeout_s: float | None = None,
    **env_kwargs: Any,
) -> FastAPI:
    """The FastAPI app serving ``TelcoOpenEnv(env_id, **env_kwargs)`` with openenv-core.

    Every WebSocket ``/ws`` connection gets its own environment, up to ``max_concurrent_envs``
    at once (more are refused with ``CAPACITY_REACHED``); sessions idle for
    ``session_timeout_s`` seconds are closed (``None``: never). One environment is built and
    closed here, so a bad ``env_id`` or keyword fails now rather than at the first session.
    Serve it with ``uvicorn`` (see ``examples/serve_openenv.py``).
    """
    TelcoOpenEnv(env_id, **env_kwargs).close()
    factory = functools.partial(TelcoOpenEnv, env_id, **env_kwargs)
    config = ConcurrencyConfig(
        max_concurrent_envs=max_concurrent_envs, session_timeout=session_timeout_s
    )
    app = create_app(
        factory,
        TelcoAction,
        TelcoObservation,
        env_name="telcoenv",
        concurrency_config=config,
    )
    # openenv-core answers what reset raises over HTTP with a bare 500; a refused reset option
    # is the client's mistake, answered as the WebSocket answers it: with its message.
    app.add_exception_handler(TelcoEnvError, _client_error)
    return app


async def _client_error(request: Any, error: Exception) -> JSONResponse:
    return JSONResponse(status_code=422, content={"detail": str(error)})


class TelcoEnvClient(EnvClient[TelcoAction, TelcoObservation, TelcoState]):
    """OpenEnv's WebSocket client for a served telcoenv (``async with``, or ``.sync()``).

    >>> # async with TelcoEnvClient(base_url="http://localhost:8000") as client:
    >>> #     result = await client.reset(seed=0, intent="beam_misalignment")
    >>> #     result = await client.step(TelcoAction(tool_name="oss_query", arguments={...}))
    """

    def _step_payload(self, action: TelcoAction) -> dict[str, Any]:
        return action.model_dump(exclude={"metadata"}, exclude_none=True)

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[TelcoObservation]:
        observation = TelcoObservation.model_validate(
            {
                **payload.get("observation", {}),
                "reward": payload.get("reward"),
                "done": payload.get("done", False),
            }
        )
        return StepResult(observation=observation, reward=observation.reward, done=observation.done)

    def _parse_state(self, payload: dict[str, Any]) -> TelcoState:
        return TelcoState.model_validate(payload)
