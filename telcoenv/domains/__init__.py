"""Domains: what a telcoenv environment simulates.

A domain is data (intents, blueprints, tool specs in a :class:`~telcoenv.catalog.Catalog`) plus
a seeded state, tool implementations and a simulated counterpart (the network engineer of
:mod:`telcoenv.domains.network`, the customer of :mod:`telcoenv.domains.bss`). The environment
drives any object that satisfies :class:`Domain`.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from telcoenv.errors import EpisodeOptionError

if TYPE_CHECKING:  # annotations only: ``import telcoenv`` stays light (no jsonschema, numpy)
    import numpy as np

    from telcoenv.catalog import Catalog
    from telcoenv.specs import IntentModel, Language
    from telcoenv.tooling import Toolbox
    from telcoenv.trace import EpisodeTrace


@dataclass(slots=True)
class EpisodeSetup:
    """What a domain hands the environment at reset."""

    facts: dict[str, float]  # the sampled numbers the counterpart may quote (KPIs, an age, ...)
    state: Any
    gold_values: dict[str, Any]
    problem_statement: str
    gold_summary: dict[str, str]  # per language: the reference RA compares summaries with
    gold_answer: str | None = None  # the exact answer to the counterpart's question, if any
    # The ground truth the simulation needs and no tool may read (the network's fault and fix,
    # the caller's identity and facts): the domain hands tools the live state only.
    truth: Any = None
    # What the counterpart said at the start and must keep to in its replies (a place, a time),
    # and what it has heard since (whether its question was answered).
    counterpart_context: dict[str, Any] = field(default_factory=dict)
    # Tools of the intent's gold chain this episode does without: the change an impostor asks
    # for, which the operator's rules refuse (the gold chain stops at the failed check).
    gold_skips: frozenset[str] = frozenset()


class Domain(Protocol):
    """What the environment needs of a domain. Intents extend
    :class:`~telcoenv.specs.IntentModel`; a blueprint is the domain's own model with
    ``intent`` and ``blueprint_id``.

    Optional members, which the CLI looks up and refuses in one line when missing:
    ``load_catalog(intents, blueprints, tools) -> Catalog`` (``telcoenv validate``),
    ``generate_dataset(out, samples, seed, fmt) -> int`` (``telcoenv generate``),
    ``rescore_release(release, weights, *, check_blueprints, warn) -> (blueprints, report)``
    (``telcoenv rescore``), ``validate_data(catalog, seeds)`` (``telcoenv validate --data``)
    and ``policy_pages() -> {page id: Document}`` (``telcoenv policy``: a
    :class:`telcoenv.documents.Document`, as text, HTML or PDF).
    ``report_section`` names the table ``telcoenv report`` gives the domain's episodes:
    ``"benchmark"`` (the TelcoAgent-Bench tables: IRA by condition, MSC/EAP/SAS, reliability,
    RA), ``"care"`` (the customer-care table), or, when absent, a table of
    the domain's own under ``domains``. ``compact_instructions`` is the system prompt of the
    compact tool format (default: ``instructions``); ``next_steps`` overrides the advice of
    error kinds (``not_found``: which tool lists the valid ids). ``difficulties`` lists the
    tiers the domain offers besides ``"guided"`` (which every domain has): ``start_episode``
    then takes a keyword ``difficulty`` (passed only for a tier other than guided).
    ``prepare()`` does the one-time work of a process's first episode (``telcoenv evaluate``'s
    workers call it before they time any episode). ``changes(setup)`` returns what the agent
    has changed in the world so far, as any value that compares equal when nothing changed:
    the episode compares it before and after each write call, so that a write that changed
    nothing (the value already there, a dry run) is no step of the plan and earns nothing.
    ``consent(setup, message)`` reads a message that asks for approval as the counterpart
    would (a :class:`~telcoenv.policies.Consent`: whether they agree, and whether their yes
    allows a given change), and ``how_to_ask`` says what such a message must state: without
    them, any yes allows the next change. ``world_model`` names which of the domain's models of
    its world runs the episodes (the
    network's ``"physical"`` or ``"blueprint"``): every snapshot records it and a snapshot
    restores only in the same model; ``legacy_world_model`` is the model of snapshots taken
    before they recorded one.

    ``verify`` returns the domain's verdict on the final state: ``fixed`` (the fault removed;
    ``None`` when the task asks for no change), ``answered`` (the exact answer given; ``None``:
    no question), ``collateral_changes``, ``checks`` and optionally ``minefields`` (name ->
    triggered). The environment grades the episode from it (:mod:`telcoenv.grading`: the
    submission, the diagnosis, the milestones) and sets ``resolved``; a domain that gives only
    ``resolved`` has it read as ``fixed``.
    """

    name: str
    taxonomy_env: str  # the Gymnasium name of the environment over all its intents
    counterpart: str  # who the agent talks to ("engineer", "customer")
    counterpart_required: bool  # whether only the counterpart can give what the agent needs
    instructions: str  # the agent's system prompt: a template of {language} and {intent_list}
    catalog: Catalog
    toolbox: Toolbox

    def connect(self, url: str | None = None) -> Any:
        """The database of one environment's episodes: private and in memory unless ``url``.

        The object has ``persistent`` (episodes are kept) and ``close()``, and may have
        ``row_id(episode_id)``: the id to store an episode's rows under (see
        :class:`telcoenv.database.EpisodeDatabase`).
        """

    def start_episode(
        self,
        intent: IntentModel,
        blueprint: Any,
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
        blueprint: Any,
        message: str,
        lang: Language,
        rng: np.random.Generator,
        *,
        ended: bool,
    ) -> str: ...

    def start_state(self, setup: EpisodeSetup) -> dict[str, Any]:
        """The episode's starting state as JSON-ready data (for the trace)."""

    def privileged(self, setup: EpisodeSetup, intent: IntentModel) -> dict[str, Any]:
        """Domain-specific privileged information (the gold fix, the gold answer, ...)."""

    def asks_approval(self, message: str) -> bool:
        """Whether a plain agent message asks the counterpart to approve a change."""

    def verify(
        self, setup: EpisodeSetup, intent: IntentModel, trace: EpisodeTrace
    ) -> dict[str, Any]:
        """Verdict on the final state: ``resolved``, ``checks``, ``collateral_changes``."""


#: The entry-point group through which an installed package adds a domain: each entry point
#: names a zero-argument factory returning a :class:`Domain` (``"pkg.module:factory"``).
ENTRY_POINT_GROUP = "telcoenv.domains"
#: The domain of an environment, a CLI command or a stored record that names none.
DEFAULT_DOMAIN = "network"
#: The packaged domains, by name: where their factory lives.
BUILTIN_DOMAINS = {
    "network": "telcoenv.domains.network:network_domain",
    "bss": "telcoenv.domains.bss:bss_domain",
}
#: Their whole-taxonomy environments' Gymnasium names, known without importing the domains so that
#: ``import telcoenv`` registers every packaged environment at once (each domain's
#: ``taxonomy_env`` says the same; a test holds them equal).
BUILTIN_TAXONOMIES = {"network": "Troubleshooting", "bss": "CustomerCare"}
_FACTORIES: dict[str, str | Callable[[], Domain]] = dict(BUILTIN_DOMAINS)
_INSTANCES: dict[str, Domain] = {}
# Domains running another model of their world than the default: by (name, model).
_VARIANTS: dict[tuple[str, str], Domain] = {}
_LOCK = threading.Lock()
_DISCOVERED = False


def register_domain(name: str, factory: str | Callable[[], Domain]) -> None:
    """Add a domain under ``name``: a zero-argument factory, or its ``"module:attribute"``
    path (imported when the domain is first used). A packaged domain cannot be replaced."""
    if name in BUILTIN_DOMAINS and factory != BUILTIN_DOMAINS[name]:
        raise EpisodeOptionError(f"{name!r} is a packaged domain and cannot be replaced")
    with _LOCK:
        _FACTORIES[name] = factory
        _forget(name)


def unregister_domain(name: str) -> None:
    """Remove a domain added with :func:`register_domain` (a packaged one stays). Its
    environments stay registered with Gymnasium for this process."""
    if name in BUILTIN_DOMAINS:
        raise EpisodeOptionError(f"{name!r} is a packaged domain and cannot be removed")
    with _LOCK:
        _FACTORIES.pop(name, None)
        _forget(name)


def _forget(name: str) -> None:
    """Drop the built domain of that name and its variants (the lock held)."""
    _INSTANCES.pop(name, None)
    for key in [k for k in _VARIANTS if k[0] == name]:
        del _VARIANTS[key]


def _discover() -> None:
    """Register the domains that installed packages declare (once per process)."""
    global _DISCOVERED
    if _DISCOVERED:
        return
    _DISCOVERED = True
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if entry.name not in _FACTORIES:
            _FACTORIES[entry.name] = entry.value


def domain_names() -> tuple[str, ...]:
    """Every domain: the packaged ones first, then registered and installed ones by name."""
    _discover()
    extra = sorted(name for name in _FACTORIES if name not in BUILTIN_DOMAINS)
    return (*BUILTIN_DOMAINS, *extra)


def _build(name: str, factory: str | Callable[[], Domain]) -> Domain:
    if isinstance(factory, str):
        module, _, attribute = factory.partition(":")
        try:
            factory = getattr(importlib.import_module(module), attribute)
        except (ImportError, AttributeError) as exc:
            raise EpisodeOptionError(f"domain {name!r}: cannot load {factory!r}: {exc}") from exc
    domain = factory()
    missing = [a for a in _REQUIRED if not hasattr(domain, a)]
    if missing:
        raise EpisodeOptionError(
            f"domain {name!r} does not implement the Domain contract: {missing}"
        )
    return domain


def get_domain(name: str, world_model: str | None = None) -> Domain:
    """The domain of that name, built once per process and shared by environments; with
    ``world_model``, the domain running that model of its world (a domain with ``MODELS``
    builds one with ``model=``; the network's ``"blueprint"``), also built once."""
    _discover()
    if name not in _FACTORIES:
        raise EpisodeOptionError(f"unknown domain {name!r}; valid domains: {list(domain_names())}")
    with _LOCK:
        if name not in _INSTANCES:
            _INSTANCES[name] = _build(name, _FACTORIES[name])
        domain = _INSTANCES[name]
        if world_model is None or getattr(domain, "world_model", None) == world_model:
            return domain
        models = getattr(domain, "MODELS", ())
        if world_model not in models:
            raise EpisodeOptionError(
                f"domain {name!r} has no world model {world_model!r}"
                + (f"; its models: {list(models)}" if models else "")
            )
        key = (name, world_model)
        if key not in _VARIANTS:
            _VARIANTS[key] = type(domain)(model=world_model)  # type: ignore[call-arg]
        return _VARIANTS[key]


def answer_vocabulary(name: str) -> Any:
    """The vocabulary a domain's answers are judged with (``answer_vocabulary``: the display
    names of ids, the phrasings of stored texts; :mod:`telcoenv.metrics.answers`), or ``None``
    for a domain without one or one not installed here."""
    try:
        return getattr(get_domain(name), "answer_vocabulary", None)
    except EpisodeOptionError:
        return None


# What a domain object must have (the Domain protocol's members).
_REQUIRED = (
    "name",
    "taxonomy_env",
    "counterpart",
    "instructions",
    "catalog",
    "toolbox",
    "connect",
    "start_episode",
    "tool_context",
    "reply",
    "start_state",
    "privileged",
    "asks_approval",
    "verify",
)
