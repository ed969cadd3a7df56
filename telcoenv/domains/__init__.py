"""Domains: what a telcoenv environment simulates.

A domain is data (intents, blueprints, tool specs in a :class:`~telcoenv.catalog.Catalog`) plus
a seeded state, tool implementations and a simulated counterpart (the network engineer of
:mod:`telcoenv.domains.network`, the customer of :mod:`telcoenv.domains.bss`). The environment
drives any object that satisfies :class:`Domain`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from telcoenv.catalog import Catalog
from telcoenv.specs import Blueprint, Intent, Language
from telcoenv.tooling import Toolbox
from telcoenv.trace import EpisodeTrace


@dataclass(slots=True)
class EpisodeSetup:
    """What a domain hands the environment at reset."""

    sampled_kpis: dict[str, float]
    state: Any
    gold_values: dict[str, Any]
    problem_statement: str
    gold_summary: dict[str, str]  # per language: the reference RA compares summaries with
    gold_answer: str | None = None  # the exact answer to the counterpart's question, if any
    # The ground truth the simulation needs and no tool may read (the network's fault and fix,
    # the caller's identity and facts): the domain hands tools the live state only.
    truth: Any = None


class Domain(Protocol):
    name: str
    taxonomy_env: str  # the Gymnasium name of the environment over all its intents
    counterpart: str  # who the agent talks to ("engineer", "customer")
    counterpart_required: bool  # whether only the counterpart can give what the agent needs
    snapshot_field: str  # the EpisodeTrace field that holds the starting state
    instructions: str  # the agent's system prompt: a template of {language} and {intent_list}
    catalog: Catalog
    toolbox: Toolbox

    def connect(self, url: str | None = None) -> Any:
        """The database of one environment's episodes: private and in memory unless ``url``.

        The object has ``persistent`` (episodes are kept) and ``close()``.
        """

    def start_episode(
        self,
        intent: Intent,
        blueprint: Blueprint,
        rng: np.random.Generator,
        lang: Language,
        database: Any,
        episode_id: str,
    ) -> EpisodeSetup:
        """Sample the episode from ``rng`` and load its state into ``database``."""

    def tool_context(self, setup: EpisodeSetup, seed: Callable[[], list[int]], step: int) -> Any:
        """The object passed to tool implementations; ``seed()`` seeds the call's generator.

        It must not reach ``setup.truth`` or the gold values: tools see the live state only."""

    def reply(
        self,
        setup: EpisodeSetup,
        blueprint: Blueprint,
        message: str,
        lang: Language,
        rng: np.random.Generator,
        *,
        ended: bool,
    ) -> str: ...

    def snapshot(self, setup: EpisodeSetup) -> dict[str, Any]:
        """The episode's starting state as JSON-ready data (for the trace)."""

    def privileged(self, setup: EpisodeSetup, intent: Any) -> dict[str, Any]:
        """Domain-specific privileged information (the gold fix, the gold answer, ...)."""

    def asks_approval(self, message: str) -> bool:
        """Whether a plain agent message asks the counterpart to approve a change."""

    def verify(self, setup: EpisodeSetup, intent: Any, trace: EpisodeTrace) -> dict[str, Any]:
        """Verdict on the final state: ``resolved``, ``checks``, ``collateral_changes``."""


DOMAINS = ("network", "bss")


def get_domain(name: str) -> Domain:
    """The packaged domain of that name (``"network"`` or ``"bss"``), shared per process."""
    if name == "network":
        from telcoenv.domains.network import network_domain

        return network_domain()
    if name == "bss":
        from telcoenv.domains.bss import bss_domain

        return bss_domain()
    from telcoenv.errors import EpisodeOptionError

    raise EpisodeOptionError(f"unknown domain {name!r}; valid domains: {list(DOMAINS)}")
