"""TelcoEnv: the Gymnasium shell around a domain's episodes.

One episode = one sampled scenario of an intent's blueprint. The observation is text: the
counterpart's opening message at reset, then a tool's JSON output, the counterpart's reply, or a
JSON error. The agent acts with tool calls (see :mod:`telcoenv.actions`) and ends the episode
with the reserved tool ``submit_resolution``.

This module only draws episodes and keeps Gymnasium's contract; the step itself lives in
:class:`telcoenv.episode.Episode`, its rules in :mod:`telcoenv.policies`, the settings' checks in
:mod:`telcoenv.options`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar, SupportsFloat

import gymnasium
import numpy as np
import orjson
from gymnasium.error import ResetNeeded

from telcoenv import splits
from telcoenv.actions import receive, replayed
from telcoenv.domains import Domain
from telcoenv.embeddings import Embedder
from telcoenv.episode import Episode
from telcoenv.errors import EpisodeOptionError
from telcoenv.metrics.scoring import EpisodeMetrics
from telcoenv.options import (
    GUIDED,
    RENDER_MODES,
    EnvSettings,
    check_blueprint,
    check_difficulty,
    check_lang,
    check_reset_options,
    check_seed,
)
from telcoenv.rewards import DEFAULT_REWARD, RewardMode, RewardSpec, Shaping
from telcoenv.snapshot import EnvState, EpisodeStart
from telcoenv.spaces import ToolCallSpace, Unicode
from telcoenv.specs import IntentModel, Language, ToolFormat
from telcoenv.tooling import canonical_json
from telcoenv.trace import EpisodeTrace


class TelcoEnv(gymnasium.Env[str, Any]):
    """Episodes of one intent, or of a domain's whole taxonomy.

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
        reward: the reward at the end of an episode: ``"outcome"`` (the default, for training:
            0.6 to 1.0 for a resolved episode by how it got there, at most 0.5 of partial credit
            for an unresolved one, nothing without a submission; see
            ``telcoenv.rewards.outcome_components``), ``"resolved"`` (1 or 0), a metric name
            (``"sas"``, ``"msc"``, ``"eap"``, ``"ira"``, ``"ra"``, ...: evaluation metrics), a
            dict of weights of these, or a callable ``(EpisodeMetrics, EpisodeTrace) -> float``.
            Earlier steps get 0; a run cut off by the step budget earns no terminal reward.
            Weights are finite numbers >= 0, not all zero; a callable that raises or returns a
            non-finite number raises :class:`~telcoenv.errors.RewardError` from the step that
            ends the episode.
        reward_mode: ``"sparse"`` (default: only the last step is rewarded) or ``"shaped"``
            (per-step terms for invalid actions, distractor calls and gold steps done in
            order, bounded in total, and a bonus for a resolved episode; see
            ``telcoenv.rewards``). Every step's ``info["reward_components"]`` holds the named
            parts of its reward.
        shaping: the weights of the shaped terms (a ``Shaping`` or a dict).
        embedder: the sentence embedder of IRA and RA: ``"multilingual"`` (default, one model
            for both languages), ``"english"``, ``"e5"``, a local sentence-transformers model
            directory (nothing is downloaded; an unknown name or path raises
            :class:`~telcoenv.errors.EmbedderUnavailableError`), an ``Embedder``, or ``None`` to
            skip IRA and RA (``None`` in the metrics; fastest).
        require_approval: a change tool runs only after the agent asked the counterpart for
            approval in a plain message (one approval per change).
        difficulty: how much the counterpart's opening message gives away: ``"guided"``
            (default; the published benchmark's statements, which quote the telling KPIs), or a
            tier the domain offers (``domain.difficulties``; the network domain: ``"symptom"``,
            only what users observe, and ``"noisy"``, the same plus a confounder; customer
            care: ``"symptom"``, only what the customer sees). Recorded in the trace.
        tool_format: how the tools and the system prompt are offered: ``"full"`` (default: the
            specs as written) or ``"compact"`` (each tool's summary and a minimal schema, and
            short instructions: under 2,250 tokens with the intent list, for small models with
            short contexts; calls are still checked against the full specs).
        domain: the domain to simulate, by name or as a ``Domain`` (default: ``"network"``).
        database_url: where the episodes' state lives. ``None`` (default): in memory, in the
            SQLite database the process's environments of the domain share (each episode
            under its own row id, deleted at the next reset). Any SQLAlchemy URL
            (``sqlite:///network.sqlite``, PostgreSQL): every episode is committed and kept
            under its own id (``info["database_episode_id"]``) for inspection.
        render_mode: ``"ansi"`` to render the transcript as text.
        split: ``"all"`` (default: every episode), ``"train"`` or ``"test"``: only that
            split's episodes, blueprints and phrasings (:mod:`telcoenv.splits`; the test split
            holds out whole blueprints, one episode in five of the others, and a third of the
            phrasings). Shown in ``info["split"]`` and recorded in snapshots.
        tool_set: the tools offered: ``"all"`` (default) or ``"core"`` (no distractor: they
            are left out of ``info["tools"]``, and a call of one is refused as an unknown
            tool). A curriculum knob (:mod:`telcoenv.curriculum`).
        hints: after every step (and in the opening message) a hint: ``"none"`` (default),
            ``"tool"`` (the next gold step's tool, then "submit") or ``"call"`` (the next gold
            call with its arguments, then the submission's intent: a demonstration). A
            curriculum knob.

    ``reset(seed, options)`` options: ``intent`` (whole-taxonomy env only), ``blueprint``,
    ``sample_index`` (with the blueprint, fixes the episode independently of the seed), ``lang``,
    ``privileged``, ``intent_list``, ``require_approval``, ``difficulty`` and the curriculum
    knobs ``tool_set``, ``hints`` and ``max_steps`` (override the settings). Unknown options raise
    :class:`~telcoenv.errors.EpisodeOptionError`.

    ``step`` never raises on agent input: unknown tools, malformed JSON, invalid arguments and
    actions after the end return a JSON error observation, are counted in ``info`` and recorded
    in the episode trace. ``terminated`` is set by ``submit_resolution``; ``truncated`` when
    ``max_steps`` actions were taken. At the end of an episode (either way) ``info["metrics"]``
    holds IRA, MSC, EAP, SAS and RA with the chains and the embedder name, and the reward is
    computed from them.
    """

    # render_fps only silences the checker's warning: rendering is text.
    metadata: ClassVar[dict[str, Any]] = {"render_modes": list(RENDER_MODES), "render_fps": 4}

    def __init__(
        self,
        intent: str | None = None,
        *,
        lang: Language = "en",
        blueprint: str | None = None,
        max_steps: int = 20,
        intent_list: bool = True,
        privileged: bool = False,
        reward: RewardSpec = DEFAULT_REWARD,
        reward_mode: RewardMode = "sparse",
        shaping: Shaping | Mapping[str, float] | None = None,
        embedder: str | Embedder | None = "multilingual",
        require_approval: bool = False,
        difficulty: str = "guided",
        tool_format: ToolFormat = "full",
        domain: Domain | str | None = None,
        database_url: str | None = None,
        render_mode: str | None = None,
        split: str = "all",
        tool_set: str = "all",
        hints: str = "none",
    ) -> None:
        self.settings = settings = EnvSettings.check(
            intent=intent,
            lang=lang,
            blueprint=blueprint,
            max_steps=max_steps,
            intent_list=intent_list,
            privileged=privileged,
            reward=reward,
            reward_mode=reward_mode,
            shaping=shaping,
            embedder=embedder,
            require_approval=require_approval,
            difficulty=difficulty,
            tool_format=tool_format,
            domain=domain,
            database_url=database_url,
            render_mode=render_mode,
            split=split,
            tool_set=tool_set,
            hints=hints,
        )
        self.domain: Domain = settings.domain
        catalog = self.domain.catalog
        self.fixed_intent = catalog.intent(intent) if intent is not None else None
        self.fixed_blueprint = check_blueprint(self.domain, blueprint, self.fixed_intent)
        if self.fixed_blueprint is not None:
            self._check_in_split(self.fixed_blueprint, "blueprint")
        self.render_mode = render_mode
        self.observation_space = Unicode()
        self.action_space = ToolCallSpace(
            {name: catalog.tools[name] for name in catalog.offered(settings.tool_set)}
        )
        self.tools = catalog.openai_tools(settings.tool_format, settings.tool_set)
        self._instructions: dict[tuple[str, bool], str] = {}
        self._episode: Episode | None = None
        self._start: EpisodeStart | None = None
        # A kept database opens now, so that a bad URL fails here; the private in-memory one
        # at the first reset. close() releases either.
        self._database: Any = (
            self.domain.connect(database_url) if database_url is not None else None
        )

    # --- settings, read-only ----------------------------------------------------------------------

    lang = property(lambda self: self.settings.lang)
    max_steps = property(lambda self: self.settings.max_steps)
    intent_list = property(lambda self: self.settings.intent_list)
    privileged = property(lambda self: self.settings.privileged)
    reward_spec = property(lambda self: self.settings.reward)
    reward_mode = property(lambda self: self.settings.reward_mode)
    shaping = property(lambda self: self.settings.shaping)
    embedder = property(lambda self: self.settings.embedder)
    require_approval = property(lambda self: self.settings.require_approval)
    difficulty = property(lambda self: self.settings.difficulty)
    tool_format = property(lambda self: self.settings.tool_format)
    database_url = property(lambda self: self.settings.database_url)
    split = property(lambda self: self.settings.split)
    tool_set = property(lambda self: self.settings.tool_set)
    hints = property(lambda self: self.settings.hints)

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
            listing = ""
            if key[1]:
                intents = self.domain.catalog.intents
                labels = "\n".join(f"- {i.label.in_lang(lang)}" for i in intents)
                listing = "\nThe intent is one of:\n" + labels
            language = "English" if lang == "en" else "Arabic"
            template = self.domain.instructions
            if self.tool_format == "compact":
                template = getattr(self.domain, "compact_instructions", template)
            self._instructions[key] = template.format(language=language, intent_list=listing)
        return self._instructions[key]

    # --- reset ------------------------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        seed = check_seed(seed)
        options = check_reset_options(options)
        if "difficulty" in options:
            check_difficulty(self.domain, options["difficulty"], "reset option 'difficulty'")
        elif self.difficulty != GUIDED:  # kept with the snapshot: the tier makes the statement
            options["difficulty"] = self.difficulty
        lang = check_lang(options.get("lang", self.lang))
        chosen = self._chosen(options)
        if chosen[1] is not None:  # a held-out blueprint has no train episode to draw
            self._check_in_split(chosen[1], "blueprint", options.get("sample_index"))
        # Reseeded only once every option is accepted: a refused reset leaves later ones as
        # they were.
        super().reset(seed=seed)
        with splits.phrasing(self.split):
            intent, blueprint = self._drawn(*chosen)
            key = self._episode_key(blueprint, options.get("sample_index"))
            self._start = EpisodeStart.model_construct(  # trusted values: no validation
                seed=seed,
                episode_key=key,
                intent=intent.key,
                blueprint_id=blueprint.blueprint_id,
                lang=lang,
                options=options,
                np_random=self.np_random.bit_generator.state,
                world_model=getattr(self.domain, "world_model", None),
                split=self.split,
            )
            return self._begin(intent, blueprint, key, lang, seed, options)

    def _check_in_split(self, blueprint: Any, what: str, sample_index: int | None = None) -> None:
        """Refuse a blueprint (or its sample) that is not in this environment's split."""
        if self.split == "all":
            return
        siblings = self._siblings(blueprint)
        held = blueprint.blueprint_id in splits.held_out(siblings)
        if self.split == "train" and held:
            raise EpisodeOptionError(
                f"{what} {blueprint.blueprint_id!r} is held out for the test split; this "
                "environment draws the train split"
            )
        if sample_index is not None:
            key = splits.sample_key(blueprint.blueprint_id, sample_index)
            found = splits.episode_split(blueprint.blueprint_id, siblings, key)
            if found != self.split:
                raise EpisodeOptionError(
                    f"sample_index {sample_index} of {blueprint.blueprint_id!r} is in the "
                    f"{found} split; this environment draws the {self.split} split "
                    "(telcoenv.splits.split_samples lists a split's samples)"
                )

    def _siblings(self, blueprint: Any) -> list[str]:
        family = self.domain.catalog.blueprints[blueprint.intent]
        return [b.blueprint_id for b in family]

    def _chosen(self, options: dict[str, Any]) -> tuple[IntentModel | None, Any]:
        """The intent and blueprint the options and the settings fix (``None``: to be drawn);
        raises on options this environment refuses."""
        catalog = self.domain.catalog
        intent = self.fixed_intent
        if "intent" in options:
            if intent is not None and catalog.intent(options["intent"]) != intent:
                raise EpisodeOptionError(
                    f"this environment is fixed to {intent.key}; the 'intent' option is for "
                    f"telcoenv/{self.domain.taxonomy_env}-v0"
                )
            intent = catalog.intent(options["intent"])
        blueprint = check_blueprint(self.domain, options.get("blueprint"), intent)
        fixed = self.fixed_blueprint
        fits = fixed is not None and (intent is None or fixed.intent == intent.key)
        if blueprint is None and fits:
            blueprint = fixed
        return intent, blueprint

    def _drawn(self, intent: IntentModel | None, blueprint: Any) -> tuple[IntentModel, Any]:
        """The episode's intent and blueprint: those chosen, the rest from the generator."""
        catalog = self.domain.catalog
        if blueprint is not None:
            return catalog.intent(blueprint.intent), blueprint
        if intent is None:
            intent = catalog.intents[int(self.np_random.integers(len(catalog.intents)))]
        family = catalog.blueprints[intent.key]
        if self.split == "train":  # the test split's own blueprints are never drawn
            held = splits.held_out(self._siblings(family[0]))
            family = [b for b in family if b.blueprint_id not in held]
        return intent, family[int(self.np_random.integers(len(family)))]

    def _episode_key(self, blueprint: Any, sample_index: int | None) -> list[int]:
        if sample_index is not None:
            return splits.sample_key(blueprint.blueprint_id, sample_index)
        key = [int(self.np_random.integers(2**63))]
        if self.split != "all":  # drawn again until the episode is the split's (one in 5 or 4/5)
            siblings = self._siblings(blueprint)
            while splits.episode_split(blueprint.blueprint_id, siblings, key) != self.split:
                key = [int(self.np_random.integers(2**63))]
        return key

    def _begin(
        self,
        intent: IntentModel,
        blueprint: Any,
        key: list[int],
        lang: Language,
        seed: int | None,
        options: dict[str, Any],
    ) -> tuple[str, dict[str, Any]]:
        """Start the episode drawn by ``reset`` (or restored by ``set_state``)."""
        if self._database is None:
            self._database = self.domain.connect(self.database_url)
        self._episode = episode = Episode(
            settings=self.settings,
            env_id=self.env_id,
            intent=intent,
            blueprint=blueprint,
            key=key,
            lang=lang,
            seed=seed,
            options=options,
            database=self._database,
        )
        instructions = self.instructions(lang, episode.trace.intent_list)
        statement = episode.opening
        # A fresh copy at every reset: decoding the catalogue's encoded specs (shared by its
        # environments, 30 KB each) is ten times faster than deepcopy.
        tools_json = self.domain.catalog.openai_tools_json(self.tool_format, episode.tool_set)
        info: dict[str, Any] = {
            "episode_id": episode.episode_id,
            "env_id": self.env_id,
            "domain": self.domain.name,
            "language": lang,
            "split": splits.current(),
            "require_approval": episode.require_approval,
            "tools": orjson.loads(tools_json),
            "instructions": instructions,
            "messages": [
                {"role": "system", "content": instructions},
                {"role": "user", "content": statement},
            ],
            **episode.counts(),
        }
        if episode.stored_id is not None:
            info["database_episode_id"] = episode.stored_id
        if episode.privileged:
            info["privileged"] = episode.privileged_info()
        return statement, info

    # --- step -------------------------------------------------------------------------------------

    def step(self, action: Any) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        """Take one action; never raises on what the agent sends (see the class docstring)."""
        self._check_running("step()")
        with splits.phrasing(self._episode_split):
            return self._episode.step(receive(action))  # type: ignore[union-attr]

    @property
    def _episode_split(self) -> str:
        """The split of the running episode (a restored snapshot's may be narrower than the
        environment's ``"all"``)."""
        return self._start.split if self._start is not None else self.split

    def _check_running(self, call: str) -> None:
        """Raise ``ResetNeeded`` unless an episode was started and the environment is open: a
        closed one has released the database its episode's state is in."""
        if self._episode is None:
            raise ResetNeeded(f"call reset() before {call}")
        if self._database is None:
            raise ResetNeeded(f"the environment was closed: call reset() before {call}")

    def truncate(self, reason: str) -> tuple[float, dict[str, Any]]:
        """End the running episode as truncated (a limit outside the task, e.g. a tool budget).

        The episode is verified and scored as at ``max_steps``; returns the terminal reward and
        the final info. Raises ``ResetNeeded`` when no episode is running.
        """
        self._check_running("truncate()")
        if self._episode.ended:  # type: ignore[union-attr]
            raise ResetNeeded("no running episode to truncate")
        with splits.phrasing(self._episode_split):
            return self._episode.truncate(reason)  # type: ignore[union-attr]

    # --- snapshots and async ----------------------------------------------------------------------

    def get_state(self) -> EnvState:
        """A snapshot of the current episode and the actions taken in it (JSON-serialisable)."""
        if self._episode is None or self._start is None:
            raise ResetNeeded("call reset() before get_state()")
        actions = [json.loads(text) for text in self._episode.actions_log]
        return EnvState(env_id=self.env_id, start=self._start, actions=actions)

    def _check_world_model(self, start: EpisodeStart) -> None:
        """Refuse a snapshot taken in another model of the domain's world: its actions would
        replay against different KPIs."""
        recorded = (
            start.world_model
            if "world_model" in start.model_fields_set
            else getattr(self.domain, "legacy_world_model", None)
        )
        current = getattr(self.domain, "world_model", None)
        if recorded != current:
            raise EpisodeOptionError(
                f"the snapshot was taken in the {recorded!r} model of the {self.domain.name} "
                f"domain's world and this environment runs the {current!r} model: make the "
                f"environment with the snapshot's (for the network domain: "
                f"telcoenv.make(..., domain=NetworkDomain(model={recorded!r})))"
            )

    def set_state(self, state: EnvState | dict[str, Any]) -> None:
        """Put this environment in the snapshot's state: the same episode, the same actions.

        The snapshot's episode must be one this environment can run (same intent if the
        environment is fixed to one); its environment generator state is restored too, so later
        resets continue as they would have in the original.
        """
        state = state if isinstance(state, EnvState) else EnvState.model_validate(state)
        start = state.start
        check_seed(start.seed)
        options = check_reset_options(start.options)
        if "difficulty" in options:
            check_difficulty(self.domain, options["difficulty"], "the snapshot's 'difficulty'")
        intent = self.domain.catalog.intent(start.intent)
        if self.fixed_intent is not None and intent != self.fixed_intent:
            raise EpisodeOptionError(
                f"snapshot of a {intent.key} episode cannot be restored in an environment "
                f"fixed to {self.fixed_intent.key}"
            )
        blueprint = check_blueprint(self.domain, start.blueprint_id, intent)
        self._check_world_model(start)
        generator = np.random.Generator(np.random.PCG64())
        try:
            generator.bit_generator.state = start.np_random
        except (KeyError, TypeError, ValueError) as exc:
            raise EpisodeOptionError(
                f"the snapshot's np_random is not a PCG64 generator state: {exc!r}"
            ) from None
        split = splits.check_split(start.split, "the snapshot's split")
        if self.split not in ("all", split):
            raise EpisodeOptionError(
                f"the snapshot is of a {split} split episode; this environment draws the "
                f"{self.split} split"
            )
        self._np_random, self._np_random_seed = generator, start.seed
        self._start = start
        lang = check_lang(start.lang)
        with splits.phrasing(split):
            self._begin(intent, blueprint, list(start.episode_key), lang, start.seed, options)
            assert self._episode is not None
            for entry in state.actions:  # each action takes the branch it took when first sent
                self._episode.step(replayed(entry) or receive(entry))

    def clone(self) -> TelcoEnv:
        """A new environment with the same settings, in this one's state (see ``get_state``)."""
        twin = type(self)(**self.settings.as_kwargs())
        twin.spec = self.spec
        if self._episode is not None:
            twin.set_state(self.get_state())
        return twin

    async def areset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """``reset`` for async trainers: runs in a worker thread, so the event loop stays free.

        One environment serves one coroutine at a time; run several environments concurrently.
        """
        import asyncio  # here: asyncio (and ssl) cost a tenth of the import of telcoenv

        return await asyncio.to_thread(self.reset, seed=seed, options=options)

    async def astep(self, action: Any) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        """``step`` for async trainers (see ``areset``)."""
        import asyncio

        return await asyncio.to_thread(self.step, action)

    # --- accessors --------------------------------------------------------------------------------

    @property
    def episode(self) -> Episode | None:
        """The current episode (``None`` before the first reset): its ``setup`` (the sampled
        scenario and live ``state``), ``trace``, counts and rules. For inspection and tests;
        agents see only observations."""
        return self._episode

    @property
    def metrics(self) -> EpisodeMetrics | None:
        """The metrics of the current episode once it has ended (``None`` before)."""
        episode = self._episode
        return episode.metrics if episode is not None and episode.ended else None

    @property
    def trace(self) -> EpisodeTrace | None:
        """The current episode's trace (``None`` before the first reset)."""
        return self._episode.trace if self._episode is not None else None

    @property
    def database(self) -> Any:
        """The episodes' database (``None`` before the first reset and after ``close``)."""
        return self._database

    def close(self) -> None:
        """Release the episode database (an in-memory one is discarded)."""
        if self._database is not None:
            self._database.close()
            self._database = None
        super().close()

    def render(self) -> str | None:
        trace = self.trace
        if self.render_mode != "ansi" or trace is None:
            return None
        counterpart = self.domain.counterpart
        lines = [f"[{counterpart}] {trace.problem_statement}"]
        for record in trace.actions:
            what = record.tool or record.kind
            if record.arguments is not None:
                what += " " + canonical_json(record.arguments)
            lines.append(f"[agent:{record.kind}] {what}")
            lines.append(
                f"[{counterpart if record.kind == 'message' else 'env'}] {record.observation}"
            )
        return "\n".join(lines)
