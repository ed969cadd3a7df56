"""The settings of an environment and the options of a reset, checked once at the API edge.

``TelcoEnv(**kwargs)`` builds an :class:`EnvSettings`; ``reset(options=...)`` goes through
:func:`check_reset_options`. Both raise :class:`~telcoenv.errors.EpisodeOptionError` naming the
bad argument, so that nothing unchecked reaches an episode.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from telcoenv.domains import DEFAULT_DOMAIN, Domain, get_domain
from telcoenv.embeddings import Embedder, get_embedder
from telcoenv.errors import EpisodeOptionError
from telcoenv.rewards import (
    RewardMode,
    RewardSpec,
    Shaping,
    check_order_invariant,
    check_reward,
    check_shaping,
)
from telcoenv.specs import (
    HINTS,
    LANGUAGES,
    TOOL_FORMATS,
    TOOL_SETS,
    Hints,
    IntentModel,
    Language,
    ToolFormat,
    ToolSet,
)
from telcoenv.splits import check_split

#: The options ``reset`` takes, with the type each must have (``None`` means "not given").
OPTION_TYPES: dict[str, type] = {
    "intent": str,
    "blueprint": str,
    "sample_index": int,
    "lang": str,
    "privileged": bool,
    "intent_list": bool,
    "require_approval": bool,
    "difficulty": str,
    # Curriculum knobs (telcoenv.curriculum): the tools offered, hints, the step budget.
    "tool_set": str,
    "hints": str,
    "max_steps": int,
}
RESET_OPTIONS = frozenset(OPTION_TYPES)
RENDER_MODES = ("ansi",)
#: The tier every domain has: the counterpart's opening message is today's (the published
#: benchmark's); a domain may declare more in ``Domain.difficulties``.
GUIDED = "guided"
_TYPE_NAMES = {str: "a string", int: "an integer", bool: "a bool (True or False)"}


def typed_value(where: str, value: Any, kind: type) -> Any:
    """``value`` as ``kind`` (numpy scalars accepted), or an EpisodeOptionError naming ``where``.

    Only real booleans are booleans: ``"no"`` or ``0`` is refused, never taken as truthy.
    """
    if kind is bool and isinstance(value, bool | np.bool_):
        return bool(value)
    is_bool = isinstance(value, bool | np.bool_)
    if kind is int and isinstance(value, int | np.integer) and not is_bool:
        return int(value)
    if kind is str and isinstance(value, str):
        return value
    raise EpisodeOptionError(f"{where} must be {_TYPE_NAMES[kind]}, got {value!r}")


def check_lang(lang: Any) -> Language:
    if lang not in LANGUAGES:
        raise EpisodeOptionError(f"lang must be one of {list(LANGUAGES)}, got {lang!r}")
    return lang


#: The most bits of a seed or a sample index: a number past 4,300 digits has no JSON form
#: (Python refuses to write it), and the trace and the recorder write both.
MAX_INDEX_BITS = 1023


def _index(name: str, value: int) -> int:
    """``value``, a non-negative integer of at most :data:`MAX_INDEX_BITS` bits, or raise."""
    if value < 0 or value.bit_length() > MAX_INDEX_BITS:
        shown = value if value.bit_length() <= 64 else f"an integer of {value.bit_length()} bits"
        raise EpisodeOptionError(
            f"{name} must be a non-negative integer below 2**{MAX_INDEX_BITS}, got {shown}"
        )
    return value


def check_seed(seed: Any) -> int | None:
    if seed is None:
        return None
    return _index("seed", typed_value("seed", seed, int))


def check_reset_options(options: Any) -> dict[str, Any]:
    """The reset options, typed; unknown names, a non-mapping or a wrong type raise."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise EpisodeOptionError(
            f"reset options must be a dict, got {type(options).__name__}; "
            f"valid options: {sorted(RESET_OPTIONS)}"
        )
    unknown = [name for name in options if name not in RESET_OPTIONS]
    if unknown:
        raise EpisodeOptionError(
            f"unknown reset option(s) {sorted(map(str, unknown))}; "
            f"valid options: {sorted(RESET_OPTIONS)}"
        )
    checked = {
        name: typed_value(f"reset option {name!r}", value, OPTION_TYPES[name])
        for name, value in options.items()
        if value is not None
    }
    if "sample_index" in checked:
        _index("sample_index", checked["sample_index"])
    if "tool_set" in checked:
        check_tool_set(checked["tool_set"], "reset option 'tool_set'")
    if "hints" in checked:
        check_hints(checked["hints"], "reset option 'hints'")
    if "max_steps" in checked:
        check_max_steps(checked["max_steps"], "reset option 'max_steps'")
    return checked


def difficulties(domain: Domain) -> tuple[str, ...]:
    """The difficulty tiers a domain offers (``guided`` always)."""
    return tuple(getattr(domain, "difficulties", (GUIDED,)))


def check_difficulty(domain: Domain, difficulty: Any, where: str = "difficulty") -> str:
    typed_value(where, difficulty, str)
    if difficulty not in difficulties(domain):
        raise EpisodeOptionError(
            f"{where} must be one of {list(difficulties(domain))} for the {domain.name} domain, "
            f"got {difficulty!r}"
        )
    return difficulty


def check_tool_format(tool_format: Any) -> ToolFormat:
    typed_value("tool_format", tool_format, str)
    if tool_format not in TOOL_FORMATS:
        raise EpisodeOptionError(
            f"tool_format must be one of {list(TOOL_FORMATS)}, got {tool_format!r}"
        )
    return tool_format


def check_tool_set(tool_set: Any, where: str = "tool_set") -> ToolSet:
    typed_value(where, tool_set, str)
    if tool_set not in TOOL_SETS:
        raise EpisodeOptionError(f"{where} must be one of {list(TOOL_SETS)}, got {tool_set!r}")
    return tool_set


def check_hints(hints: Any, where: str = "hints") -> Hints:
    typed_value(where, hints, str)
    if hints not in HINTS:
        raise EpisodeOptionError(f"{where} must be one of {list(HINTS)}, got {hints!r}")
    return hints


def check_max_steps(max_steps: Any, where: str = "max_steps") -> int:
    max_steps = typed_value(where, max_steps, int)
    if max_steps < 1:
        raise EpisodeOptionError(f"{where} must be a positive integer, got {max_steps!r}")
    return max_steps


def check_render_mode(render_mode: Any) -> None:
    if render_mode is not None and (
        not isinstance(render_mode, str) or render_mode not in RENDER_MODES
    ):
        raise EpisodeOptionError(
            f"render_mode must be one of {list(RENDER_MODES)} or None, got {render_mode!r}"
        )


def check_domain(domain: Any) -> Domain:
    if isinstance(domain, str | None):
        return get_domain(DEFAULT_DOMAIN if domain is None else domain)
    if not all(hasattr(domain, name) for name in ("catalog", "toolbox", "start_episode")):
        raise EpisodeOptionError(f"domain must be a domain name or a Domain, got {domain!r}")
    return domain


def check_blueprint(domain: Domain, blueprint_id: str | None, intent: IntentModel | None) -> Any:
    """The blueprint of that id (``None`` for none), which must belong to ``intent`` if given."""
    if blueprint_id is None:
        return None
    blueprint = domain.catalog.blueprint(blueprint_id)
    if intent is not None and blueprint.intent != intent.key:
        valid = [b.blueprint_id for b in domain.catalog.blueprints[intent.key]]
        raise EpisodeOptionError(
            f"blueprint {blueprint_id!r} belongs to {blueprint.intent}, "
            f"not {intent.key}; its blueprints are {valid}"
        )
    return blueprint


@dataclass(frozen=True, slots=True)
class EnvSettings:
    """The checked keyword arguments of :class:`~telcoenv.env.TelcoEnv` (documented there).

    ``as_kwargs()`` rebuilds an equal environment (``clone``); the resolved domain and embedder
    are shared, not rebuilt.
    """

    intent: str | None
    lang: Language
    blueprint: str | None
    max_steps: int
    intent_list: bool
    privileged: bool
    reward: RewardSpec
    reward_mode: RewardMode
    shaping: Shaping
    embedder: Embedder | None
    require_approval: bool
    difficulty: str
    tool_format: ToolFormat
    domain: Domain
    database_url: str | None
    render_mode: str | None
    split: str = "all"
    tool_set: ToolSet = "all"
    hints: Hints = "none"

    @classmethod
    def check(
        cls,
        *,
        intent: Any,
        lang: Any,
        blueprint: Any,
        max_steps: Any,
        intent_list: Any,
        privileged: Any,
        reward: Any,
        reward_mode: Any,
        shaping: Any,
        embedder: Any,
        require_approval: Any,
        difficulty: Any,
        tool_format: Any,
        domain: Any,
        database_url: Any,
        render_mode: Any,
        split: Any = "all",
        tool_set: Any = "all",
        hints: Any = "none",
    ) -> EnvSettings:
        for name, value in (
            ("intent", intent),
            ("blueprint", blueprint),
            ("database_url", database_url),
        ):
            if value is not None:
                typed_value(name, value, str)
        max_steps = check_max_steps(max_steps)
        check_render_mode(render_mode)
        try:  # a copy of the weights: the caller's dict may change later
            reward = check_reward(reward, embedder is not None)
        except ValueError as exc:
            raise EpisodeOptionError(str(exc)) from None
        if reward_mode not in ("sparse", "shaped"):
            raise EpisodeOptionError(
                f"reward_mode must be 'sparse' or 'shaped', got {reward_mode!r}"
            )
        try:
            shaping = check_shaping(shaping)
        except (TypeError, ValueError) as exc:
            raise EpisodeOptionError(f"invalid shaping: {exc}") from None
        try:
            check_order_invariant(reward, reward_mode, shaping)
        except ValueError as exc:
            raise EpisodeOptionError(str(exc)) from None
        domain = check_domain(domain)
        return cls(
            intent=intent,
            lang=check_lang(lang),
            blueprint=blueprint,
            max_steps=max_steps,
            intent_list=typed_value("intent_list", intent_list, bool),
            privileged=typed_value("privileged", privileged, bool),
            reward=reward,
            reward_mode=reward_mode,
            shaping=shaping,
            # Resolving is cheap (a model loads at the first score); a missing package fails here.
            embedder=get_embedder(embedder) if embedder is not None else None,
            require_approval=typed_value("require_approval", require_approval, bool),
            difficulty=check_difficulty(domain, difficulty),
            tool_format=check_tool_format(tool_format),
            domain=domain,
            database_url=database_url,
            render_mode=render_mode,
            split=check_split(split),
            tool_set=check_tool_set(tool_set),
            hints=check_hints(hints),
        )

    def as_kwargs(self) -> dict[str, Any]:
        return {field.name: getattr(self, field.name) for field in fields(self)}
