"""Domains: what a telcoenv environment simulates.

A domain is data (intents, blueprints, tool specs in a :class:`~telcoenv.catalog.Catalog`) plus
a seeded state, tool implementations and a simulated counterpart (here the network engineer).
The environment drives any object that satisfies :class:`Domain`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from telcoenv.catalog import Catalog
from telcoenv.specs import Blueprint, Intent, Language
from telcoenv.tooling import Toolbox


@dataclass(slots=True)
class EpisodeSetup:
    """What a domain hands the environment at reset."""

    sampled_kpis: dict[str, float]
    state: Any
    gold_values: dict[str, Any]
    problem_statement: str
    gold_summary: dict[str, str]  # per language: the reference RA compares summaries with


class Domain(Protocol):
    name: str
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

    def tool_context(self, state: Any, seed: Callable[[], list[int]], step: int) -> Any:
        """The object passed to tool implementations; ``seed()`` seeds the call's generator."""

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

    def snapshot(self, state: Any) -> dict[str, Any]: ...

    def asks_approval(self, message: str) -> bool:
        """Whether a plain agent message asks the counterpart to approve a change."""

    def verify(self, setup: EpisodeSetup, intent: Intent) -> dict[str, Any]:
        """Verdict on the final state: ``resolved``, ``checks``, ``collateral_changes``."""
