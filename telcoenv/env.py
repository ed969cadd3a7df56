"""TelcoEnv: a Gymnasium environment in which an agent troubleshoots a simulated network.

One episode = one sampled scenario of an intent's blueprint. The observation is text: the
engineer's problem statement at reset, then a tool's JSON output, an engineer's reply, or a JSON
error. The agent acts with tool calls (see :mod:`telcoenv.actions`) and ends the episode with the
reserved tool ``submit_resolution(intent, summary)``.
"""

from __future__ import annotations

import asyncio
import copy
import json
import uuid
import zlib
from collections.abc import Mapping
from typing import Any, ClassVar, SupportsFloat

import gymnasium
import numpy as np
import orjson
from gymnasium.error import ResetNeeded

from telcoenv.actions import ParseError, PlainMessage, Received, ToolCall, receive, replayed
from telcoenv.catalog import fill_gold_arguments
from telcoenv.domains import Domain, EpisodeSetup, get_domain
from telcoenv.errors import EmbedderUnavailableError, EpisodeOptionError
from telcoenv.metrics.embeddings import Embedder, get_embedder
from telcoenv.metrics.scoring import EpisodeMetrics, score_episode
from telcoenv.rewards import (
    RewardMode,
    RewardSpec,
    Shaping,
    ShapingTracker,
    check_reward,
    check_shaping,
    reward_from,
    terminal_components,
)
from telcoenv.snapshot import EnvState, EpisodeStart
from telcoenv.spaces import ToolCallSpace, Unicode
from telcoenv.specs import LANGUAGES, Blueprint, Intent, Language
from telcoenv.tooling import RESERVED_SUBMIT, ToolResult, call_key, canonical_json
from telcoenv.trace import ActionRecord, EpisodeTrace, GoldCall, Submission

#: The options ``reset`` takes, with the type each must have (``None`` means "not given").
OPTION_TYPES: dict[str, type] = {
    "intent": str,
    "blueprint": str,
    "sample_index": int,
    "lang": str,
    "privileged": bool,
    "intent_list": bool,
    "require_approval": bool,
}
RESET_OPTIONS = frozenset(OPTION_TYPES)
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
    return {
        name: typed_value(f"reset option {name!r}", value, OPTION_TYPES[name])
        for name, value in options.items()
        if value is not None
    }


class TelcoEnv(gymnasium.Env[str, Any]):
    """Troubleshooting episodes of one intent, or of the whole taxonomy.

    Args:
        intent: intent key or env name (e.g. ``"beam_misalignment"``); ``None`` draws the intent
            at every reset, so that recognising it is part of the task.
        lang: ``"en"`` or ``"ar"``, the engineer's language.
        blueprint: pin one blueprint id of the intent (default: drawn per reset).
        max_steps: actions allowed before ``truncated`` (default 20, as in TelAgentBench).
        intent_list: list the intent labels in the instructions (the paper's "with list" IRA
            condition) or not ("without list").
        privileged: put the true intent, blueprint, gold chain and gold summary in
            ``info["privileged"]``.
        reward: the reward at the end of an episode: a metric name (``"sas"``, the default;
            ``"msc"``, ``"eap"``, ``"ira"``, ``"ra"``), a dict of metric weights, or a callable
            ``(EpisodeMetrics, EpisodeTrace) -> float``. Earlier steps get 0. Weights are finite
            numbers >= 0, not all zero; a callable that raises or returns a non-finite number
            raises :class:`~telcoenv.errors.RewardError` from the step that ends the episode.
        reward_mode: ``"sparse"`` (default: only the last step is rewarded) or ``"shaped"``
            (per-step terms for invalid actions, distractor calls and gold steps matched in
            order, and a bonus for a verified resolution; see ``telcoenv.rewards``). Every step's
            ``info["reward_components"]`` holds the terms of its reward.
        shaping: the weights of the shaped terms (a ``Shaping`` or a dict).
        embedder: the sentence embedder of IRA and RA: ``"multilingual"`` (default, one model
            for both languages), ``"english"``, ``"e5"``, a local sentence-transformers model
            directory (nothing is downloaded; an unknown name or path raises
            :class:`~telcoenv.errors.EmbedderUnavailableError`), an ``Embedder``, or ``None`` to
            skip IRA and RA (``None`` in the metrics; fastest).
        domain: the domain to simulate (default: the packaged network domain).
        database_url: where the episodes' network state lives. ``None`` (default): a private
            in-memory SQLite database, reset per episode by a rollback. Any SQLAlchemy URL
            (``sqlite:///network.sqlite``, PostgreSQL): every episode is committed and kept
            under its own id (``info["database_episode_id"]``) for inspection.
        render_mode: ``"ansi"`` to render the transcript as text.

    ``reset(seed, options)`` options: ``intent`` (whole-taxonomy env only), ``blueprint``,
    ``sample_index`` (with the blueprint, fixes the episode independently of the seed), ``lang``,
    ``privileged``. Unknown options raise :class:`~telcoenv.errors.EpisodeOptionError`.

    ``step`` never raises on agent input: unknown tools, malformed JSON, invalid arguments and
    actions after the end return a JSON error observation, are counted in ``info`` and recorded
    in the episode trace. ``terminated`` is set by ``submit_resolution``; ``truncated`` when
    ``max_steps`` actions were taken. At the end of an episode (either way) ``info["metrics"]``
    holds IRA, MSC, EAP, SAS and RA with the chains and the embedder name, and the reward is
    computed from them.
    """

    # render_fps only silences the checker's warning: rendering is text.
    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(
        self,
        intent: str | None = None,
        *,
        lang: Language = "en",
        blueprint: str | None = None,
        max_steps: int = 20,
        intent_list: bool = True,
        privileged: bool = False,
        reward: RewardSpec = "sas",
        reward_mode: RewardMode = "sparse",
        shaping: Shaping | Mapping[str, float] | None = None,
        embedder: str | Embedder | None = "multilingual",
        require_approval: bool = False,
        domain: Domain | str | None = None,
        database_url: str | None = None,
        render_mode: str | None = None,
    ) -> None:
        if isinstance(domain, str | None):
            domain = get_domain(domain or "network")
        elif not all(hasattr(domain, name) for name in ("catalog", "toolbox", "start_episode")):
            raise EpisodeOptionError(f"domain must be a domain name or a Domain, got {domain!r}")
        self.domain: Domain = domain
        catalog = domain.catalog
        self.lang = self._check_lang(lang)
        for name, value, kind in (
            ("intent", intent, str),
            ("blueprint", blueprint, str),
            ("database_url", database_url, str),
        ):
            if value is not None:
                typed_value(name, value, kind)
        intent_list, privileged, require_approval = (
            typed_value(name, value, bool)
            for name, value in (
                ("intent_list", intent_list),
                ("privileged", privileged),
                ("require_approval", require_approval),
            )
        )
        self.fixed_intent = catalog.intent(intent) if intent is not None else None
        self.fixed_blueprint = self._check_blueprint(blueprint, self.fixed_intent)
        max_steps = typed_value("max_steps", max_steps, int)
        if max_steps < 1:
            raise EpisodeOptionError(f"max_steps must be a positive integer, got {max_steps!r}")
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise EpisodeOptionError(
                f"render_mode must be one of {self.metadata['render_modes']}"
                f" or None, got {render_mode!r}"
            )
        self.max_steps, self.intent_list, self.privileged = max_steps, intent_list, privileged
        try:  # a copy of the weights: the caller's dict may change later
            self.reward_spec = check_reward(reward, embedder is not None)
        except ValueError as exc:
            raise EpisodeOptionError(str(exc)) from None
        if reward_mode not in ("sparse", "shaped"):
            raise EpisodeOptionError(
                f"reward_mode must be 'sparse' or 'shaped', got {reward_mode!r}"
            )
        try:
            self.shaping = check_shaping(shaping)
        except (TypeError, ValueError) as exc:
            raise EpisodeOptionError(f"invalid shaping: {exc}") from None
        self.reward_mode: RewardMode = reward_mode
        self._distractors = [n for n, spec in catalog.tools.items() if spec.kind == "distractor"]
        self.require_approval = require_approval
        self._approval_needed = require_approval
        self._approved = False
        # Resolving is cheap (a model loads at the first score); a missing package fails here.
        self.embedder = get_embedder(embedder) if embedder is not None else None
        self.render_mode = render_mode
        self.observation_space = Unicode()
        self.action_space = ToolCallSpace(catalog.tools)
        self.tools = catalog.openai_tools()
        # Every reset hands out a fresh copy; decoding this is ten times faster than deepcopy.
        self._tools_json = orjson.dumps(self.tools)
        self._trace: EpisodeTrace | None = None
        self._setup: EpisodeSetup | None = None
        self._blueprint: Blueprint | None = None
        self._intent: Intent | None = None
        self._key: list[int] = []
        self._counts: dict[str, int] = {}
        self._instructions: dict[tuple[str, bool], str] = {}
        self._metrics: EpisodeMetrics | None = None
        self._metrics_error: str | None = None
        self._intent_list = intent_list
        self.database_url = database_url
        # What clone() builds its twin with (the resolved embedder and domain are shared).
        self._init_kwargs: dict[str, Any] = {
            "intent": intent,
            "lang": lang,
            "blueprint": blueprint,
            "max_steps": max_steps,
            "intent_list": intent_list,
            "privileged": privileged,
            "reward": self.reward_spec,
            "reward_mode": reward_mode,
            "shaping": self.shaping,
            "embedder": self.embedder,
            "require_approval": require_approval,
            "domain": domain,
            "database_url": database_url,
            "render_mode": render_mode,
        }
        # A kept database opens now, so that a bad URL fails here; the private in-memory one
        # at the first reset. close() releases either.
        self._database: Any = domain.connect(database_url) if database_url is not None else None

    # --- construction helpers ---------------------------------------------------------------------

    @staticmethod
    def _check_lang(lang: Any) -> Language:
        if lang not in LANGUAGES:
            raise EpisodeOptionError(f"lang must be one of {list(LANGUAGES)}, got {lang!r}")
        return lang

    def _check_blueprint(self, blueprint_id: str | None, intent: Intent | None) -> Blueprint | None:
        if blueprint_id is None:
            return None
        blueprint = self.domain.catalog.blueprint(blueprint_id)
        if intent is not None and blueprint.intent != intent.key:
            valid = [b.blueprint_id for b in self.domain.catalog.blueprints[intent.key]]
            raise EpisodeOptionError(
                f"blueprint {blueprint_id!r} belongs to {blueprint.intent}, "
                f"not {intent.key}; its blueprints are {valid}"
            )
        return blueprint

    @property
    def env_id(self) -> str:
        if self.spec is not None:
            return self.spec.id
        name = self.fixed_intent.gym_name if self.fixed_intent else self.domain.taxonomy_env
        return f"telcoenv/{name}-v0"

    def instructions(self, lang: Language, intent_list: bool | None = None) -> str:
        """The agent's system prompt, with or without the list of intent labels."""
        key = (lang, self.intent_list if intent_list is None else intent_list)
        if key not in self._instructions:
            self._instructions[key] = self._compose_instructions(*key)
        return self._instructions[key]

    def _compose_instructions(self, lang: Language, intent_list: bool) -> str:
        listing = ""
        if intent_list:
            labels = "\n".join(f"- {i.label.in_lang(lang)}" for i in self.domain.catalog.intents)
            listing = "\nThe intent is one of:\n" + labels
        language = "English" if lang == "en" else "Arabic"
        return self.domain.instructions.format(language=language, intent_list=listing)

    # --- reset ------------------------------------------------------------------------------------

    def _episode_choice(self, options: dict[str, Any]) -> tuple[Intent, Blueprint]:
        catalog = self.domain.catalog
        intent = self.fixed_intent
        if "intent" in options:
            if intent is not None and catalog.intent(options["intent"]) != intent:
                raise EpisodeOptionError(
                    f"this environment is fixed to {intent.key}; the "
                    "'intent' option is for telcoenv/Troubleshooting-v0"
                )
            intent = catalog.intent(options["intent"])
        blueprint = self._check_blueprint(options.get("blueprint"), intent)
        fixed = self.fixed_blueprint
        if (
            blueprint is None
            and fixed is not None
            and (intent is None or fixed.intent == intent.key)
        ):
            blueprint = fixed
        if blueprint is not None:
            return catalog.intent(blueprint.intent), blueprint
        if intent is None:
            intent = catalog.intents[int(self.np_random.integers(len(catalog.intents)))]
        family = catalog.blueprints[intent.key]
        return intent, family[int(self.np_random.integers(len(family)))]

    def _episode_key(self, blueprint: Blueprint, sample_index: Any) -> list[int]:
        if sample_index is None:
            return [int(self.np_random.integers(2**63))]
        if not isinstance(sample_index, int | np.integer) or sample_index < 0:
            raise EpisodeOptionError(
                f"sample_index must be a non-negative integer, got {sample_index!r}"
            )
        return [zlib.crc32(blueprint.blueprint_id.encode()), int(sample_index)]

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        if seed is not None:
            seed = typed_value("seed", seed, int)
            if seed < 0:
                raise EpisodeOptionError(f"seed must be a non-negative integer, got {seed}")
        options = check_reset_options(options)
        super().reset(seed=seed)
        lang = self._check_lang(options.get("lang", self.lang))
        intent, blueprint = self._episode_choice(options)
        key = self._episode_key(blueprint, options.get("sample_index"))
        self._start = EpisodeStart.model_construct(  # trusted values: no validation on reset
            seed=seed,
            episode_key=key,
            intent=intent.key,
            blueprint_id=blueprint.blueprint_id,
            lang=lang,
            options=options,
            np_random=self.np_random.bit_generator.state,
        )
        return self._begin(intent, blueprint, key, lang, seed, options)

    def _begin(
        self,
        intent: Intent,
        blueprint: Blueprint,
        key: list[int],
        lang: Language,
        seed: int | None,
        options: dict[str, Any],
    ) -> tuple[str, dict[str, Any]]:
        """Start the episode drawn by ``reset`` (or restored by ``set_state``)."""
        self._key = key
        self._actions_log: list[Any] = []
        episode_id = f"ep-{zlib.crc32(repr(self._key).encode()):08x}"
        if self._database is None:
            self._database = self.domain.connect(self.database_url)
        # A kept database may already hold this episode (same seed): give it a unique id there.
        stored_id = (
            f"{episode_id}-{uuid.uuid4().hex[:12]}" if self._database.persistent else episode_id
        )
        setup = self.domain.start_episode(
            intent, blueprint, np.random.default_rng(self._key), lang, self._database, stored_id
        )
        self._intent, self._blueprint, self._setup = intent, blueprint, setup
        self._privileged = options.get("privileged", self.privileged)
        intent_list = options.get("intent_list", self.intent_list)
        self._approval_needed = options.get("require_approval", self.require_approval)
        self._approved = False
        self._reads: set[str] = set()  # successful reads (name + arguments) of this episode
        self._verifiable: set[str] = set()  # reads made before the latest applied change
        self._shaper = (
            ShapingTracker(intent.gold_tools, self._distractors, self.shaping)
            if self.reward_mode == "shaped"
            else None
        )
        self._counts = {"steps": 0, "tool_calls": 0, "invalid_actions": 0, "engineer_messages": 0}
        self._turn = 0
        # Trusted internal values: construct without re-validation on the reset hot path.
        tools = self.domain.catalog.tools
        gold = [
            GoldCall.model_construct(
                tool=step.tool,
                arguments=fill_gold_arguments(step.arguments, setup.gold_values),
                free_text=list(tools[step.tool].free_text),
            )
            for step in intent.gold_chain
        ]
        self._trace = EpisodeTrace.model_construct(
            episode_id=episode_id,
            env_id=self.env_id,
            domain=self.domain.name,
            intent=intent.key,
            category=intent.category,
            blueprint_id=blueprint.blueprint_id,
            language=lang,
            intent_list=intent_list,
            gold_label=intent.label.model_dump(),
            gold_summary=setup.gold_summary,
            seed=seed,
            sample_index=options.get("sample_index"),
            episode_key=self._key,
            problem_statement=setup.problem_statement,
            sampled_kpis=setup.sampled_kpis,
            gold_answer=setup.gold_answer,
            **{self.domain.snapshot_field: self.domain.snapshot(setup)},
            gold_chain=gold,
            actions=[],
            submission=None,
            verification=None,
            terminated=False,
            truncated=False,
        )
        instructions = self.instructions(lang, intent_list)
        info: dict[str, Any] = {
            "episode_id": episode_id,
            "env_id": self.env_id,
            "domain": self.domain.name,
            "language": lang,
            "require_approval": self._approval_needed,
            "tools": orjson.loads(self._tools_json),
            "instructions": instructions,
            "messages": [
                {"role": "system", "content": instructions},
                {"role": "user", "content": setup.problem_statement},
            ],
            **self._counts,
        }
        if self._database.persistent:
            info["database_episode_id"] = stored_id
        if self._privileged:
            info["privileged"] = self._privileged_info()
        return setup.problem_statement, info

    def _privileged_info(self) -> dict[str, Any]:
        assert self._trace is not None and self._intent is not None and self._setup is not None
        return orjson.loads(  # a fresh copy: nothing shared with the trace or the domain
            orjson.dumps(
                {
                    "intent": self._intent.key,
                    "label": self._intent.label.model_dump(),
                    "category": self._intent.category,
                    "blueprint_id": self._trace.blueprint_id,
                    "gold_chain": [c.model_dump() for c in self._trace.gold_chain],
                    "sampled_kpis": self._trace.sampled_kpis,
                    "gold_summary": self._trace.gold_summary,
                    **self.domain.privileged(self._setup, self._intent),
                }
            )
        )

    # --- step -------------------------------------------------------------------------------------

    def _record(self, **fields: Any) -> ActionRecord:
        assert self._trace is not None
        # Built from trusted internal values: skip validation on this hot path.
        fields.setdefault("error_kind", None)
        fields.setdefault("error", None)
        fields.setdefault("arguments", None)
        fields.setdefault("tool", None)
        fields.setdefault("raw", None)
        fields.setdefault("remeasure", False)
        record = ActionRecord.model_construct(step=self._turn, **fields)
        self._trace.actions.append(record)
        if not record.valid:
            self._counts["invalid_actions"] += 1
        return record

    @staticmethod
    def _error(kind: str, message: str) -> str:
        return canonical_json({"error": {"type": kind, "message": message}})

    def _finish(self) -> float:
        """Score the finished episode; the reward comes from the metrics (never raises)."""
        assert self._trace is not None and self._setup is not None and self._intent is not None
        self._trace.verification = self.domain.verify(self._setup, self._intent, self._trace)
        self._metrics_error = None
        try:
            metrics = score_episode(self._trace, self.embedder)
        except EmbedderUnavailableError as exc:  # report it; a training loop must not die
            self._metrics_error = str(exc)
            metrics = score_episode(self._trace, None)
        self._metrics = metrics
        try:
            return reward_from(self.reward_spec, metrics, self._trace)
        except (ValueError, TypeError) as exc:
            self._metrics_error = f"reward: {exc}"
            return 0.0

    def _run_call(self, call: ToolCall, raw: Any) -> tuple[str, str, bool]:
        """Execute one tool call; returns (observation, tool name, submitted)."""
        assert self._trace is not None and self._setup is not None
        if call.error is not None:
            kind = call.error_kind or "malformed_arguments"
            observation = self._error(kind, call.error)
            self._record(
                kind="submit" if call.name == RESERVED_SUBMIT else "tool_call",
                tool=call.name,
                raw=raw,
                valid=False,
                error_kind=kind,
                error=call.error,
                observation=observation,
            )
            return observation, call.name, False
        raw = None
        arguments = call.arguments or {}
        if call.name == RESERVED_SUBMIT:
            problem = self.domain.toolbox.validate(RESERVED_SUBMIT, arguments)
            if problem is not None:
                observation = self._error(
                    "invalid_arguments", f"invalid arguments for {RESERVED_SUBMIT}: {problem}"
                )
                self._record(
                    kind="submit",
                    tool=call.name,
                    arguments=arguments,
                    raw=raw,
                    valid=False,
                    error_kind="invalid_arguments",
                    error=problem,
                    observation=observation,
                )
                return observation, call.name, False
            self._trace.submission = Submission(**arguments)
            observation = canonical_json(
                {"status": "submitted", "episode_id": self._trace.episode_id}
            )
            self._record(
                kind="submit",
                tool=call.name,
                arguments=arguments,
                raw=raw,
                valid=True,
                observation=observation,
            )
            return observation, call.name, True
        self._counts["tool_calls"] += 1
        key = self._key
        context = self.domain.tool_context(  # the call's seed is computed only if a tool draws
            self._setup, lambda: [*key, call_key(call.name, arguments)], self._turn
        )
        spec = self.domain.toolbox.specs.get(call.name)
        if self._approval_needed and spec is not None and spec.approval and not self._approved:
            result = ToolResult(
                None,
                "approval_required",
                f"{call.name} makes a change: ask the {self.domain.counterpart} for approval "
                "first (a plain message such as 'May I apply this change?'), then call it again",
            )
        else:
            result = self.domain.toolbox.run(call.name, arguments, context)
            if result.ok and spec is not None and spec.approval:
                self._approved = False  # one approval per change
        remeasure = False
        if result.ok and spec is not None:
            read = canonical_json([call.name, arguments])
            if spec.approval:  # a network change: every read so far can now verify it
                self._verifiable = set(self._reads)
            elif spec.effect == "read":
                remeasure = read in self._verifiable
                self._reads.add(read)
        observation = (
            canonical_json(result.output)
            if result.ok
            else self._error(result.error_kind or "execution", result.error or "")
        )
        self._record(
            kind="tool_call",
            tool=call.name,
            arguments=arguments,
            raw=raw,
            valid=result.ok,
            error_kind=result.error_kind,
            error=result.error,
            observation=observation,
            remeasure=remeasure,
        )
        return observation, call.name, False

    def _step_tool_calls(self, calls: list[ToolCall], raw: Any) -> tuple[str, list[dict], bool]:
        # A parsed call keeps its name and arguments; the raw action is kept only when the
        # arguments could not be parsed (so nothing the agent sent is lost). Every call past the
        # first takes one more step of the budget; calls past the budget are refused, not run.
        outputs: list[tuple[str, str]] = []
        messages: list[dict[str, Any]] = []
        submitted = False
        for index, call in enumerate(calls):
            over_budget = index > 0 and self._counts["steps"] >= self.max_steps
            if index > 0 and not submitted and not over_budget:
                self._counts["steps"] += 1
            if submitted or over_budget:
                kind, message = (
                    ("episode_ended", "call after submit_resolution refused")
                    if submitted
                    else (
                        "step_budget_exhausted",
                        f"call refused: the episode's {self.max_steps} steps are used up "
                        "(every tool call takes one step)",
                    )
                )
                observation = self._error(kind, message)
                self._record(
                    kind="after_end",
                    tool=call.name,
                    valid=False,
                    error_kind=kind,
                    error=message,
                    observation=observation,
                )
            else:
                observation, _, submitted = self._run_call(call, raw)
            outputs.append((call.name, observation))
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call.call_id or f"call_{index}",
                    "name": call.name,
                    "content": observation,
                }
            )
        if len(outputs) == 1:
            return outputs[0][1], messages, submitted
        combined = canonical_json([{"name": n, "output": _decode(o)} for n, o in outputs])
        return combined, messages, submitted

    def step(self, action: Any) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        """Take one action; never raises on what the agent sends (see the class docstring)."""
        if self._trace is None or self._setup is None or self._blueprint is None:
            raise ResetNeeded("call reset() before step()")
        return self._step(receive(action))

    def _step_after_end(
        self, received: Received
    ) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        assert self._trace is not None and self._setup is not None
        trace = self._trace
        observation = self._error(
            "episode_ended", "the episode has ended; call reset() to start a new one"
        )
        if isinstance(received.parsed, PlainMessage):  # the engineer says the case is closed
            rng = np.random.default_rng([*self._key, 2, len(trace.actions)])
            observation = self.domain.reply(
                self._setup, self._blueprint, "", trace.language, rng, ended=True
            )
        # A new trace object: the one returned at the end of the episode stays as it was.
        self._trace = trace.model_copy(update={"actions": list(trace.actions)})
        self._record(
            kind="after_end",
            raw=received.raw,
            valid=False,
            error_kind="episode_ended",
            error="action after the end",
            observation=observation,
        )
        return observation, 0.0, trace.terminated, trace.truncated, self._step_info([])

    def _step(self, received: Received) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        assert self._trace is not None and self._setup is not None
        trace = self._trace
        if trace.terminated or trace.truncated:
            return self._step_after_end(received)
        self._counts["steps"] += 1  # budget steps: one more per extra call of a multi-call action
        self._turn += 1  # actions: the calls of one message share their record's ``step``
        self._actions_log.append(received.log_entry)
        first_record = len(trace.actions)
        parsed = received.parsed
        reward, submitted = 0.0, False
        if isinstance(parsed, ParseError):
            observation = self._error(parsed.kind, parsed.message)
            self._record(
                kind="invalid",
                raw=received.raw,
                valid=False,
                error_kind=parsed.kind,
                error=parsed.message,
                observation=observation,
            )
            messages = [{"role": "user", "content": observation}]
        elif isinstance(parsed, PlainMessage):
            self._counts["engineer_messages"] += 1
            rng = np.random.default_rng([*self._key, 1, self._turn])
            observation = self.domain.reply(
                self._setup, self._blueprint, parsed.content, trace.language, rng, ended=False
            )
            self._approved = self._approved or self.domain.asks_approval(parsed.content)
            self._record(kind="message", raw=parsed.content, valid=True, observation=observation)
            messages = [{"role": "user", "content": observation}]
        else:
            observation, messages, submitted = self._step_tool_calls(parsed, received.raw)
        if submitted:
            trace.terminated = True
        elif self._counts["steps"] >= self.max_steps:
            trace.truncated = True
        components = (
            self._shaper.step(trace.actions[first_record:]) if self._shaper is not None else {}
        )
        if trace.terminated or trace.truncated:
            terminal = self._finish()  # verifies the final state, then scores
            resolved = (trace.verification or {}).get("resolved")
            components.update(
                terminal_components(terminal, resolved, self.reward_mode, self.shaping)
            )
        reward = float(sum(components.values()))
        info = self._step_info(messages)
        info["reward_components"] = components
        return observation, reward, trace.terminated, trace.truncated, info

    def _step_info(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        assert self._trace is not None
        info: dict[str, Any] = {
            "episode_id": self._trace.episode_id,
            "messages": messages,
            **self._counts,
        }
        last = self._trace.actions[-1] if self._trace.actions else None
        if last is not None:
            info["action"] = {"kind": last.kind, "valid": last.valid, "error_type": last.error_kind}
        if self._trace.terminated or self._trace.truncated:
            info["trace"] = self._trace
            info["predicted_chain"] = self._trace.predicted_chain
            info["metrics"] = self._metrics.model_dump()
            # Copies: a caller may keep and change what it gets (Gymnasium's data-reuse rule).
            verification = copy.deepcopy(self._trace.verification or {})
            info["resolved"] = verification.get("resolved")
            info["verification"] = verification
            info["collateral_changes"] = copy.deepcopy(verification.get("collateral_changes", []))
            if self._metrics_error:
                info["metrics_error"] = self._metrics_error
            if self._privileged:
                info["privileged"] = self._privileged_info()
        return info

    def truncate(self, reason: str) -> tuple[float, dict[str, Any]]:
        """End the running episode as truncated (a limit outside the task, e.g. a tool budget).

        The episode is verified and scored as at ``max_steps``; returns the terminal reward and
        the final info. Raises ``ResetNeeded`` when no episode is running.
        """
        trace = self._trace
        if trace is None or trace.terminated or trace.truncated:
            raise ResetNeeded("no running episode to truncate")
        trace.truncated = True
        terminal = self._finish()
        resolved = (trace.verification or {}).get("resolved")
        components = terminal_components(terminal, resolved, self.reward_mode, self.shaping)
        info = self._step_info([])
        info["reward_components"] = components
        info["truncation_reason"] = reason
        return float(sum(components.values())), info

    # --- snapshots and async ----------------------------------------------------------------------

    def get_state(self) -> EnvState:
        """A snapshot of the current episode and the actions taken in it (JSON-serialisable)."""
        if self._trace is None:
            raise ResetNeeded("call reset() before get_state()")
        actions = [json.loads(text) for text in self._actions_log]
        return EnvState(env_id=self.env_id, start=self._start, actions=actions)

    def set_state(self, state: EnvState | dict[str, Any]) -> None:
        """Put this environment in the snapshot's state: the same episode, the same actions.

        The snapshot's episode must be one this environment can run (same intent if the
        environment is fixed to one); its environment generator state is restored too, so later
        resets continue as they would have in the original.
        """
        state = state if isinstance(state, EnvState) else EnvState.model_validate(state)
        start = state.start
        options = check_reset_options(start.options)
        intent = self.domain.catalog.intent(start.intent)
        if self.fixed_intent is not None and intent != self.fixed_intent:
            raise EpisodeOptionError(
                f"snapshot of a {intent.key} episode cannot be restored in an environment "
                f"fixed to {self.fixed_intent.key}"
            )
        blueprint = self._check_blueprint(start.blueprint_id, intent)
        assert blueprint is not None
        generator = np.random.Generator(np.random.PCG64())
        generator.bit_generator.state = start.np_random
        self._np_random, self._np_random_seed = generator, start.seed
        self._start = start
        self._begin(
            intent,
            blueprint,
            list(start.episode_key),
            self._check_lang(start.lang),
            start.seed,
            options,
        )
        for entry in state.actions:  # each action takes the branch it took when first sent
            self._step(replayed(entry) or receive(entry))

    def clone(self) -> TelcoEnv:
        """A new environment with the same settings, in this one's state (see ``get_state``)."""
        twin = type(self)(**self._init_kwargs)
        twin.spec = self.spec
        if self._trace is not None:
            twin.set_state(self.get_state())
        return twin

    async def areset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """``reset`` for async trainers: runs in a worker thread, so the event loop stays free.

        One environment serves one coroutine at a time; run several environments concurrently.
        """
        return await asyncio.to_thread(self.reset, seed=seed, options=options)

    async def astep(self, action: Any) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        """``step`` for async trainers (see ``areset``)."""
        return await asyncio.to_thread(self.step, action)

    # --- accessors --------------------------------------------------------------------------------

    @property
    def metrics(self) -> EpisodeMetrics | None:
        """The metrics of the current episode once it has ended (``None`` before)."""
        trace = self._trace
        return (
            self._metrics if trace is not None and (trace.terminated or trace.truncated) else None
        )

    @property
    def trace(self) -> EpisodeTrace | None:
        """The current episode's trace (``None`` before the first reset)."""
        return self._trace

    def close(self) -> None:
        """Release the episode database (an in-memory one is discarded)."""
        if self._database is not None:
            self._database.close()
            self._database = None
        super().close()

    def render(self) -> str | None:
        if self.render_mode != "ansi" or self._trace is None:
            return None
        counterpart = self.domain.counterpart
        lines = [f"[{counterpart}] {self._trace.problem_statement}"]
        for record in self._trace.actions:
            what = record.tool or record.kind
            if record.arguments is not None:
                what += " " + canonical_json(record.arguments)
            lines.append(f"[agent:{record.kind}] {what}")
            lines.append(
                f"[{counterpart if record.kind == 'message' else 'env'}] {record.observation}"
            )
        return "\n".join(lines)


def _decode(observation: str) -> Any:
    return json.loads(observation) if observation.startswith(("{", "[")) else observation
