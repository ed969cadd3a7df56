"""Gymnasium registration of every telcoenv environment, and ``make`` / ``list_envs``.

Importing :mod:`telcoenv` registers ``telcoenv/<Intent>-v0`` for each network intent of
intents.yaml and ``telcoenv/Troubleshooting-v0`` over the whole taxonomy. Registration reads only
the intent names (a fast YAML parse); the full catalogue is loaded and validated when the first
environment is made.
"""

from __future__ import annotations

from functools import cache
from typing import Any, NamedTuple

import gymnasium
import yaml

from telcoenv.catalog import data_root
from telcoenv.errors import UnknownEnvironmentError
from telcoenv.specs import gym_name

NAMESPACE = "telcoenv"
VERSION = 0
TAXONOMY_NAME = "troubleshooting"
ENTRY_POINT = "telcoenv.env:TelcoEnv"


class EnvEntry(NamedTuple):
    """One registered environment."""

    name: str  # short name for telcoenv.make, e.g. "beam_misalignment"
    id: str  # Gymnasium id, e.g. "telcoenv/BeamMisalignment-v0"
    intent: str | None  # intent key, None for the whole taxonomy
    category: str | None


@cache
def _entries() -> tuple[EnvEntry, ...]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with (data_root() / "intents.yaml").open(encoding="utf-8") as handle:
        document = yaml.load(handle, Loader=loader)
    entries = [
        EnvEntry(
            i["env_name"],
            f"{NAMESPACE}/{gym_name(i['env_name'])}-v{VERSION}",
            i["key"],
            i["category"],
        )
        for i in document["intents"]
        # Customer-care (BSS) intents get their environments with the BSS domain; until then
        # only the network intents are registered.
        if i.get("domain", "network") == "network"
    ]
    entries.append(EnvEntry(TAXONOMY_NAME, f"{NAMESPACE}/Troubleshooting-v{VERSION}", None, None))
    return tuple(entries)


def register_envs() -> None:
    """Register every environment with Gymnasium (idempotent)."""
    for entry in _entries():
        if entry.id in gymnasium.registry:
            continue
        kwargs = {"intent": entry.intent} if entry.intent else {}
        gymnasium.register(
            id=entry.id, entry_point=ENTRY_POINT, kwargs=kwargs, nondeterministic=False
        )


def list_envs() -> list[EnvEntry]:
    """Every telcoenv environment: 20 intents and the whole-taxonomy environment."""
    return list(_entries())


def env_id(name: str) -> str:
    """Gymnasium id of a short name, intent key or id; raises UnknownEnvironmentError."""
    for entry in _entries():
        if name in (entry.name, entry.id, entry.intent, entry.id.split("/")[1]):
            return entry.id
    valid = ", ".join(entry.name for entry in _entries())
    raise UnknownEnvironmentError(f"unknown telcoenv environment {name!r}; valid names: {valid}")


def make(name: str, **kwargs: Any) -> gymnasium.Env:
    """Create an environment by short name (``"beam_misalignment"``) or Gymnasium id.

    Equivalent to ``gymnasium.make(env_id(name), **kwargs)``; keyword arguments go to
    :class:`telcoenv.env.TelcoEnv` (``lang``, ``blueprint``, ``max_steps``, ...).
    """
    return gymnasium.make(env_id(name), **kwargs)
