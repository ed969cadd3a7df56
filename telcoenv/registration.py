"""Gymnasium registration of every telcoenv environment, and ``make`` / ``list_envs``.

Importing :mod:`telcoenv` registers ``telcoenv/<Intent>-v0`` for each intent of intents.yaml
(network operations and customer care), ``telcoenv/Troubleshooting-v0`` over the network
taxonomy and ``telcoenv/CustomerCare-v0`` over the customer-care intents. Registration reads only
the intent names (a fast YAML parse); the full catalogue is loaded and validated when the first
environment of a domain is made.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from typing import Any, NamedTuple

import gymnasium

from telcoenv.datafiles import data_root, parse_yaml
from telcoenv.domains import (
    BUILTIN_DOMAINS,
    BUILTIN_TAXONOMIES,
    DEFAULT_DOMAIN,
    domain_names,
    get_domain,
)
from telcoenv.errors import EpisodeOptionError, UnknownEnvironmentError
from telcoenv.specs import gym_name

NAMESPACE = "telcoenv"
VERSION = 0
ENTRY_POINT = "telcoenv.env:TelcoEnv"


class EnvEntry(NamedTuple):
    """One registered environment."""

    name: str  # short name for telcoenv.make, e.g. "beam_misalignment"
    id: str  # Gymnasium id, e.g. "telcoenv/BeamMisalignment-v0"
    intent: str | None  # intent key, None for the whole taxonomy
    category: str | None
    domain: str = DEFAULT_DOMAIN


@cache
def _packaged_entries() -> tuple[EnvEntry, ...]:
    """The packaged domains' environments, from a fast parse of intents.yaml alone."""
    path = data_root() / "intents.yaml"
    document = parse_yaml(path.read_text(encoding="utf-8"), str(path))
    entries = [
        EnvEntry(
            i["env_name"],
            f"{NAMESPACE}/{gym_name(i['env_name'])}-v{VERSION}",
            i["key"],
            i["category"],
            i.get("domain", DEFAULT_DOMAIN),
        )
        for i in document["intents"]
    ]
    entries += [_taxonomy_entry(name, taxonomy) for name, taxonomy in BUILTIN_TAXONOMIES.items()]
    return tuple(entries)


def _taxonomy_entry(domain: str, taxonomy_env: str) -> EnvEntry:
    """The environment over a domain's whole taxonomy: ``"CustomerCare"`` is made as
    ``telcoenv.make("customer_care")`` or ``telcoenv/CustomerCare-v0``."""
    name = re.sub(r"(?<!^)(?=[A-Z])", "_", taxonomy_env).lower()
    return EnvEntry(name, f"{NAMESPACE}/{taxonomy_env}-v{VERSION}", None, None, domain)


def _plugin_entries() -> list[EnvEntry]:
    """The environments of domains that other packages add (built on first use)."""
    entries = []
    for name in domain_names():
        if name in BUILTIN_DOMAINS:
            continue
        domain = get_domain(name)
        entries += [
            EnvEntry(
                intent.env_name,
                f"{NAMESPACE}/{gym_name(intent.env_name)}-v{VERSION}",
                intent.key,
                intent.category,
                name,
            )
            for intent in domain.catalog.intents
        ]
        entries.append(_taxonomy_entry(name, domain.taxonomy_env))
    return entries


def _entries() -> tuple[EnvEntry, ...]:
    return (*_packaged_entries(), *_plugin_entries())


def register_envs(*, plugins: bool = True) -> None:
    """Register every environment with Gymnasium (idempotent). ``import telcoenv`` registers
    the packaged domains' at once; those of domains other packages add are registered here, and
    by ``make``, ``env_id`` and ``list_envs`` (call this before ``gymnasium.make`` of one)."""
    for entry in _entries() if plugins else _packaged_entries():
        if entry.id in gymnasium.registry:
            continue
        kwargs: dict[str, Any] = {"intent": entry.intent} if entry.intent else {}
        if entry.domain != DEFAULT_DOMAIN:
            kwargs["domain"] = entry.domain
        # Gymnasium's passive checker is left off: it marks a reset as checked even when the
        # reset raised, and every later step then fails in it (a refused first reset would
        # break the environment for good). The tests run its full check_env instead.
        gymnasium.register(
            id=entry.id,
            entry_point=ENTRY_POINT,
            kwargs=kwargs,
            nondeterministic=False,
            disable_env_checker=True,
        )


def list_envs() -> list[EnvEntry]:
    """Every telcoenv environment: one per intent (20 network, 12 customer care, and those of
    added domains) and one per domain over all its intents."""
    register_envs()
    return list(_entries())


def _find(name: str, entries: Iterable[EnvEntry]) -> str | None:
    for entry in entries:
        if name in (entry.name, entry.id, entry.intent, entry.id.split("/")[1]):
            return entry.id
    return None


def env_id(name: str) -> str:
    """Gymnasium id of a short name, intent key or id; raises UnknownEnvironmentError."""
    found = _find(name, _packaged_entries())
    if found is not None:
        return found
    register_envs()  # another package's domain: registered, so that gymnasium.make finds it
    found = _find(name, _plugin_entries())
    if found is not None:
        return found
    valid = ", ".join(entry.name for entry in _entries())
    raise UnknownEnvironmentError(f"unknown telcoenv environment {name!r}; valid names: {valid}")


def make(name: str, **kwargs: Any) -> gymnasium.Env:
    """Create an environment by short name (``"beam_misalignment"``) or Gymnasium id.

    Equivalent to ``gymnasium.make(env_id(name), **kwargs)``; keyword arguments go to
    :class:`telcoenv.env.TelcoEnv` (``lang``, ``blueprint``, ``max_steps``, ...).
    """
    found = env_id(name)
    _check_fixed(found, kwargs)
    if "render_mode" in kwargs:  # gymnasium.make reads it first, as a string
        from telcoenv.options import check_render_mode

        check_render_mode(kwargs["render_mode"])
    return gymnasium.make(found, **kwargs)


def _check_fixed(found: str, kwargs: dict[str, Any]) -> None:
    """Refuse keyword arguments that would make another environment than ``found`` under its
    name (an intent's environment given another intent, a domain's another domain)."""
    for name, fixed in gymnasium.spec(found).kwargs.items():
        given = kwargs.get(name)
        named = given if isinstance(given, str) else getattr(given, "name", None)  # a Domain
        if given is None or (isinstance(named, str) and named.casefold() == fixed.casefold()):
            continue
        hint = (
            "make() the intended intent's environment by name"
            if name == "intent"
            else "make() that domain's environment"
        )
        raise EpisodeOptionError(f"{found} is fixed to {name} {fixed!r}, not {given!r}: {hint}")
