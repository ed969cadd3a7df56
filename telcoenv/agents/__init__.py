"""Agents that play telcoenv episodes, and the protocol a user's own agent follows.

An agent is any object with ``reset(observation, info)`` (called at the start of each episode
with what ``env.reset`` returned) and ``act(observation, info) -> action`` (called after every
step with what ``env.step`` returned; the action is anything ``step`` accepts). An agent that
sets ``needs_privileged = True`` is given ``info["privileged"]`` (the oracle); others are not.

Reference agents: ``oracle`` (gold chain with correct arguments; the upper bound), ``random``
(random tools with schema-valid arguments), ``heuristic`` (keywords of the problem statement
only), ``investigator`` (diagnoses from tool outputs with explicit decision rules, no
privileged information) and ``openai`` (any OpenAI-compatible chat-completions endpoint). A
user's agent is loaded from ``"module:factory"``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from telcoenv.agents.heuristic import HeuristicAgent
from telcoenv.agents.investigator import InvestigatorAgent
from telcoenv.agents.oracle import OracleAgent
from telcoenv.agents.random_agent import RandomAgent
from telcoenv.errors import UnknownAgentError


@runtime_checkable
class Agent(Protocol):
    """The agent protocol: reset per episode, then one action per step."""

    def reset(self, observation: str, info: dict[str, Any]) -> None: ...

    def act(self, observation: str, info: dict[str, Any]) -> Any: ...


def _openai(**options: Any) -> Agent:
    from telcoenv.agents.openai_agent import OpenAIAgent

    return OpenAIAgent(**options)


AGENTS: dict[str, Callable[..., Agent]] = {
    "oracle": OracleAgent,
    "random": RandomAgent,
    "heuristic": HeuristicAgent,
    "investigator": InvestigatorAgent,
    "openai": _openai,
}


def load_agent(spec: str, **options: Any) -> Agent:
    """A reference agent by name, or a user's agent from ``"module:factory"``."""
    if spec in AGENTS:
        return AGENTS[spec](**options)
    if ":" not in spec:
        raise UnknownAgentError(
            f"unknown agent {spec!r}: use one of {sorted(AGENTS)} or 'module:factory'"
        )
    module_name, _, attribute = spec.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise UnknownAgentError(f"cannot load agent {spec!r}: {exc}") from exc
    agent = factory(**options)
    if not isinstance(agent, Agent):
        raise UnknownAgentError(
            f"{spec!r} returned {type(agent).__name__}, which has no "
            "reset(observation, info) and act(observation, info)"
        )
    return agent


def run_episode(
    env: Any, agent: Any, *, seed: int | None = None, options: dict[str, Any] | None = None
) -> tuple[float, dict[str, Any]]:
    """Play one episode; returns the total reward and the last info (with the trace)."""
    observation, info = env.reset(seed=seed, options=options)
    agent.reset(observation, info)
    total, done = 0.0, False
    while not done:
        observation, reward, terminated, truncated, info = env.step(agent.act(observation, info))
        total += float(reward)
        done = terminated or truncated
    return total, info


__all__ = [
    "AGENTS",
    "Agent",
    "HeuristicAgent",
    "InvestigatorAgent",
    "OracleAgent",
    "RandomAgent",
    "UnknownAgentError",
    "load_agent",
    "run_episode",
]
