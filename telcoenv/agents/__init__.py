"""Agents that play telcoenv episodes, and the protocol a user's own agent follows.

An agent is any object with ``reset(observation, info)`` (called at the start of each episode
with what ``env.reset`` returned) and ``act(observation, info) -> action`` (called after every
step with what ``env.step`` returned; the action is anything ``step`` accepts). An agent that
sets ``needs_privileged = True`` is given ``info["privileged"]`` (the oracle); others are not.
An agent that sets ``domains`` (e.g. ``("network",)``) plays those domains only, and
``telcoenv evaluate`` refuses to run it on another (:func:`check_domains`); without it, or with
``None``, it plays every domain. An agent that waits on I/O (a served model) may also follow
:class:`AsyncAgent`, so that ``telcoenv evaluate --concurrency N`` plays N episodes at once in
one process.

Reference agents: ``oracle`` (gold chain with correct arguments; the upper bound), ``random``
(random tools with schema-valid arguments), ``heuristic`` (keywords of the problem statement
only), ``investigator`` (diagnoses from tool outputs with explicit decision rules, no
privileged information), ``care_investigator`` (its customer-care counterpart: the customer's
words, their answers and the account data, no privileged information) and ``openai`` (any
OpenAI-compatible chat-completions endpoint). A user's agent is loaded from
``"module:factory"``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from typing import Any, Protocol, runtime_checkable

from telcoenv.agents.care_investigator import CareInvestigatorAgent
from telcoenv.agents.heuristic import HeuristicAgent
from telcoenv.agents.investigator import InvestigatorAgent
from telcoenv.agents.oracle import OracleAgent
from telcoenv.agents.random_agent import RandomAgent
from telcoenv.errors import EpisodeOptionError, UnknownAgentError


class UnsupportedDomainError(EpisodeOptionError):
    """An agent asked to play a domain it does not declare (see ``domains``)."""


@runtime_checkable
class Agent(Protocol):
    """The agent protocol: reset per episode, then one action per step."""

    def reset(self, observation: str, info: dict[str, Any]) -> None: ...

    def act(self, observation: str, info: dict[str, Any]) -> Any: ...


@runtime_checkable
class AsyncAgent(Protocol):
    """An agent that plays many episodes at once in one process (``evaluate`` with
    ``concurrency``): ``aact`` is ``act`` as a coroutine, which awaits its I/O and never blocks
    the event loop (a blocked loop stalls every episode in flight). The runner plays each
    episode in flight with an agent of its own: those of ``copies(n)`` where the agent has it
    (so that they share what they can, such as a connection pool), else ``n`` made by
    :func:`load_agent`."""

    def reset(self, observation: str, info: dict[str, Any]) -> None: ...

    async def aact(self, observation: str, info: dict[str, Any]) -> Any: ...


def _openai(**options: Any) -> Agent:
    from telcoenv.agents.openai_agent import OpenAIAgent

    return OpenAIAgent(**options)


AGENTS: dict[str, Callable[..., Agent]] = {
    "oracle": OracleAgent,
    "random": RandomAgent,
    "heuristic": HeuristicAgent,
    "investigator": InvestigatorAgent,
    "care_investigator": CareInvestigatorAgent,
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


def agent_domains(agent: Any) -> tuple[str, ...] | None:
    """The domains an agent declares it plays (``None``: every domain, also when undeclared)."""
    declared = getattr(agent, "domains", None)
    if declared is None:
        return None
    # A bare string would be read letter by letter: a collection of domain names or nothing.
    if isinstance(declared, str) or not isinstance(declared, Iterable):
        raise UnknownAgentError(
            f"{type(agent).__name__}.domains must be a tuple of domain names such as "
            f"('network',), got {declared!r}"
        )
    return tuple(declared)


def check_domains(agent: Any, name: str, domains: Iterable[str]) -> None:
    """Refuse, in one line, to play ``domains`` with an agent that does not play them all."""
    supported = agent_domains(agent)
    wanted = sorted(set(domains))
    if supported is None:
        return
    missing = [domain for domain in wanted if domain not in supported]
    if missing:
        plural = "s" if len(supported) != 1 else ""
        raise UnsupportedDomainError(
            f"agent {name!r} plays only the {', '.join(supported)} domain{plural}, not "
            f"{', '.join(missing)}: choose another agent or domain"
        )


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
    "AsyncAgent",
    "CareInvestigatorAgent",
    "HeuristicAgent",
    "InvestigatorAgent",
    "OracleAgent",
    "RandomAgent",
    "UnknownAgentError",
    "UnsupportedDomainError",
    "agent_domains",
    "check_domains",
    "load_agent",
    "run_episode",
]
