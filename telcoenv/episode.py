"""One episode: its sampled setup, its trace, its rules and the step that advances it.

:class:`~telcoenv.env.TelcoEnv` draws the episode and builds an :class:`Episode`; every
``step`` then goes here. One step:

1. :func:`telcoenv.actions.receive` has turned the action into tool calls, a plain message or a
   :class:`~telcoenv.actions.ParseError` (never an exception).
2. A message goes to the domain's counterpart (``domain.reply``); a tool call runs through the
   domain's toolbox with a ``domain.tool_context`` that cannot reach the ground truth;
   ``submit_resolution`` ends the episode. The rules of :mod:`telcoenv.policies` (step budget,
   approval gate, re-measurements) and the reward shaper see every call.
3. Every action becomes an :class:`~telcoenv.trace.ActionRecord` of the trace.
4. At the end the domain verifies the final state, the metrics are computed and the reward
   comes from them (:mod:`telcoenv.rewards`).
"""

from __future__ import annotations

import copy
import json
import math
import uuid
import zlib
from typing import Any

import numpy as np
import orjson

from telcoenv.actions import ParseError, PlainMessage, Received, ToolCall
from telcoenv.catalog import fill_gold_arguments
from telcoenv.domains import Domain
from telcoenv.errors import EmbedderUnavailableError
from telcoenv.events import evaluate
from telcoenv.feedback import hint, next_step, not_their_tool_reply, silence_reply
from telcoenv.grading import grade
from telcoenv.metrics.scoring import EpisodeMetrics, score_episode
from telcoenv.options import GUIDED, EnvSettings
from telcoenv.policies import ApprovalGate, GoldProgress, Remeasurements, StepBudget
from telcoenv.rewards import ShapingTracker, reward_from, terminal_components
from telcoenv.specs import IntentModel, Language
from telcoenv.text import handed_over_tool
from telcoenv.tooling import RESERVED_SUBMIT, call_key, canonical_json
from telcoenv.trace import ActionRecord, EpisodeTrace, GoldCall, Submission

#: What ``step`` returns: observation, reward, terminated, truncated, info.
StepResult = tuple[str, float, bool, bool, dict[str, Any]]


def error_observation(kind: str, message: str, next_step: str | None = None) -> str:
    error = {"type": kind, "message": message}
    if next_step is not None:  # what to do about it, in the episode's language
        error["next"] = next_step
    return canonical_json({"error": error})


def _row_id(database: Any, episode_id: str) -> str | None:
    """The id an episode's rows are stored under (see ``EpisodeDatabase.row_id``); a domain's
    own database without ``row_id`` keeps a kept episode under a unique id."""
    if hasattr(database, "row_id"):
        return database.row_id(episode_id)
    return f"{episode_id}-{uuid.uuid4().hex[:12]}" if database.persistent else None


def episode_id_of(key: list[int]) -> str:
    return f"ep-{zlib.crc32(repr(key).encode()):08x}"


class Episode:
    """The mutable state of one episode (``TelcoEnv.episode``); built by ``reset``."""

    def __init__(
        self,
        *,
        settings: EnvSettings,
        env_id: str,
        intent: IntentModel,
        blueprint: Any,
        key: list[int],
        lang: Language,
        seed: int | None,
        options: dict[str, Any],
        database: Any,
    ) -> None:
        domain: Domain = settings.domain
        self.settings, self.domain = settings, domain
        self.intent, self.blueprint, self.key = intent, blueprint, key
        self.episode_id = episode_id_of(key)
        # A kept or shared database may already hold this episode (same seed): its rows go
        # under a unique id there; a kept one's is shown (info["database_episode_id"]).
        self.row_id = _row_id(database, self.episode_id)
        self.stored_id = self.row_id if database.persistent else None
        self.difficulty: str = options.get("difficulty", settings.difficulty)
        # Only a domain that offers tiers is told one: guided is every domain's default.
        tier = {"difficulty": self.difficulty} if self.difficulty != GUIDED else {}
        self.setup = domain.start_episode(
            intent,
            blueprint,
            np.random.default_rng(key),
            lang,
            database,
            self.row_id or self.episode_id,
            **tier,
        )
        self.privileged: bool = options.get("privileged", settings.privileged)
        # The curriculum knobs (telcoenv.curriculum): an option overrides the setting.
        self.tool_set: str = options.get("tool_set", settings.tool_set)
        self.hints: str = options.get("hints", settings.hints)
        self.budget = StepBudget(options.get("max_steps", settings.max_steps))
        self.approval = ApprovalGate(
            options.get("require_approval", settings.require_approval), domain.counterpart
        )
        if hasattr(domain, "how_to_ask"):
            self.approval.how_to_ask = domain.how_to_ask
        self.remeasurements = Remeasurements()
        # Whether the domain can tell what changed (Domain.changes): a write that changed
        # nothing is then no step of the plan.
        self._sees_changes = hasattr(domain, "changes")
        self.shaper = (
            ShapingTracker(intent.gold_tools, _distractors(domain), settings.shaping)
            if settings.reward_mode == "shaped"
            else None
        )
        self.tool_calls = self.invalid_actions = self.counterpart_messages = 0
        self.turn = 0  # actions taken; the calls of one message share their record's ``step``
        self.actions_log: list[str] = []  # every action as received, for snapshots
        self.metrics: EpisodeMetrics | None = None
        self.metrics_error: str | None = None
        self._privileged_json: bytes | None = None  # see privileged_info
        self.trace = self._start_trace(env_id, lang, seed, options)
        self.progress = GoldProgress([call.tool for call in self.trace.gold_chain])

    def _start_trace(
        self, env_id: str, lang: Language, seed: int | None, options: dict[str, Any]
    ) -> EpisodeTrace:
        intent, setup, domain = self.intent, self.setup, self.domain
        tools = domain.catalog.tools
        # Trusted internal values: construct without re-validation on the reset hot path.
        gold = [
            GoldCall.model_construct(
                tool=step.tool,
                arguments=fill_gold_arguments(step.arguments, setup.gold_values),
                free_text=list(tools[step.tool].free_text),
            )
            for step in intent.gold_chain
            if step.tool not in setup.gold_skips
        ]
        return EpisodeTrace.model_construct(
            episode_id=self.episode_id,
            env_id=env_id,
            domain=domain.name,
            intent=intent.key,
            category=intent.category,
            blueprint_id=self.blueprint.blueprint_id,
            language=lang,
            intent_list=options.get("intent_list", self.settings.intent_list),
            difficulty=self.difficulty,
            tool_set=self.tool_set,
            hints=self.hints,
            max_steps=self.budget.max_steps,
            gold_label=intent.label.model_dump(),
            gold_summary=setup.gold_summary,
            seed=seed,
            sample_index=options.get("sample_index"),
            episode_key=self.key,
            problem_statement=setup.problem_statement,
            facts=setup.facts,
            gold_answer=setup.gold_answer,
            start_state=domain.start_state(setup),
            gold_chain=gold,
            actions=[],
            submission=None,
            verification=None,
            terminated=False,
            truncated=False,
        )

    # --- what callers read ------------------------------------------------------------------------

    @property
    def ended(self) -> bool:
        return self.trace.terminated or self.trace.truncated

    @property
    def require_approval(self) -> bool:
        return self.approval.required

    @property
    def opening(self) -> str:
        """The counterpart's opening message, as the agent sees it (with the hint, if on)."""
        return self._hinted(self.setup.problem_statement)

    def _hinted(self, observation: str) -> str:
        """``observation`` with the next step's hint (``hints``; not after the end): a JSON
        object's last member ``"hint"``, an array's last element, a paragraph after text. JSON
        stays JSON, for agents that read tool outputs as data; last, because a small model
        reads the end of a long output (the 1.5B model passed over a hint ahead of a coverage
        map's 64 bins). A call is written as the model writes one, ``{"name", "arguments"}``:
        in JSON an object (``{"text", "call"}``), not a string of escaped quotes."""
        if self.hints == "none" or self.ended:
            return observation
        text, call = self._hint()
        if call is None:
            value = orjson.dumps(text).decode()
        else:
            value = '{"text":' + orjson.dumps(text).decode() + ',"call":' + call + "}"
        member = '{"hint":' + value + "}"
        if observation.startswith("{") and observation.endswith("}"):
            return observation[:-1] + ("," if observation != "{}" else "") + member[1:]
        if observation.startswith("[") and observation.endswith("]"):
            return observation[:-1] + ("," if observation != "[]" else "") + member + "]"
        return f"{observation}\n\n{text}" + ("" if call is None else f" {call}")

    def _hint(self) -> tuple[str, str | None]:
        """The hint's words and (``"call"``) the call they introduce, as JSON: the next gold
        call, or once the chain is done the submission's intent (and exact answer)."""
        trace, lang, done = self.trace, self.trace.language, self.progress.done
        if self.hints == "tool":
            return hint(self.progress.next_tool, lang), None
        if done < len(trace.gold_chain):
            step = trace.gold_chain[done]
            call = {"name": step.tool, "arguments": step.arguments}
            return hint(step.tool, lang, call=True), _call_json(call)
        arguments = {"intent": trace.gold_label.get(lang, trace.gold_label["en"])}
        if trace.gold_answer is not None:
            arguments["answer"] = trace.gold_answer
        call = {"name": RESERVED_SUBMIT, "arguments": arguments}
        return hint(None, lang, call=True), _call_json(call)

    def counts(self) -> dict[str, int]:
        """The running counts every ``info`` carries."""
        return {
            "steps": self.budget.used,
            "tool_calls": self.tool_calls,
            "invalid_actions": self.invalid_actions,
            "engineer_messages": self.counterpart_messages,
        }

    def privileged_info(self) -> dict[str, Any]:
        """The answers (given at reset and at the end): a fresh copy each time, nothing shared
        with the trace or the domain. Built once: none of it changes during the episode."""
        if self._privileged_json is None:
            intent, trace = self.intent, self.trace
            self._privileged_json = orjson.dumps(
                {
                    "intent": intent.key,
                    "label": intent.label.model_dump(),
                    "category": intent.category,
                    "blueprint_id": trace.blueprint_id,
                    "gold_chain": [c.model_dump() for c in trace.gold_chain],
                    "facts": trace.facts,
                    "gold_summary": trace.gold_summary,
                    **self.domain.privileged(self.setup, intent),
                }
            )
        return orjson.loads(self._privileged_json)

    def info(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """A step's info: counts and the last action; at the end the trace, metrics, verdict."""
        trace = self.trace
        info: dict[str, Any] = {"episode_id": trace.episode_id, "messages": messages}
        info.update(self.counts())
        if trace.actions:
            last = trace.actions[-1]
            info["action"] = {"kind": last.kind, "valid": last.valid, "error_type": last.error_kind}
        if self.ended:
            assert self.metrics is not None
            info["trace"] = trace
            info["predicted_chain"] = trace.predicted_chain
            info["metrics"] = self.metrics.model_dump()
            # Copies: a caller may keep and change what it gets (Gymnasium's data-reuse rule).
            verification = copy.deepcopy(trace.verification or {})
            info["resolved"] = verification.get("resolved")
            info["verification"] = verification
            info["collateral_changes"] = copy.deepcopy(verification.get("collateral_changes", []))
            if trace.outcome is not None:
                info["outcome"] = trace.outcome.model_dump()
            if self.metrics_error:
                info["metrics_error"] = self.metrics_error
            if self.privileged:
                info["privileged"] = self.privileged_info()
        return info

    # --- the step ---------------------------------------------------------------------------------

    def step(self, received: Received) -> StepResult:
        """Advance the episode by one action; never raises on what the agent sent."""
        # Every action is logged, also after the end: a snapshot replays the whole transcript.
        self.actions_log.append(received.log_entry)
        if self.ended:
            return self._step_after_end(received)
        trace = self.trace
        self.budget.take()  # one more per extra call of a multi-call action (see _tool_calls)
        self.turn += 1
        first_record = len(trace.actions)
        parsed = received.parsed
        submitted = False
        if isinstance(parsed, ParseError) and parsed.kind == "empty_action":
            observation = self._silence(received.raw)
            messages = [{"role": "user", "content": observation}]
        elif isinstance(parsed, ParseError):
            observation = self._refused("invalid", parsed.kind, parsed.message, raw=received.raw)
            messages = [{"role": "user", "content": observation}]
        elif isinstance(parsed, PlainMessage):
            observation = self._message(parsed.content)
            messages = [{"role": "user", "content": observation}]
        else:
            observation, messages, submitted = self._tool_calls(parsed, received.raw)
        if submitted:
            trace.terminated = True
        elif self.budget.exhausted:
            trace.truncated = True
        taken = trace.actions[first_record:]
        for record in taken:
            self.progress.advance(record)
        components = self.shaper.step(taken) if self.shaper is not None else {}
        if self.ended:
            components.update(self._finish())
        elif self.hints != "none":
            observation = self._hinted(observation)
            messages[-1] = {**messages[-1], "content": self._hinted(messages[-1]["content"])}
        info = self.info(messages)
        info["reward_components"] = components
        reward = math.fsum(components.values())
        return observation, reward, trace.terminated, trace.truncated, info

    def truncate(self, reason: str) -> tuple[float, dict[str, Any]]:
        """End the running episode as truncated by a limit outside the task (see TelcoEnv)."""
        self.trace.truncated = True
        components = self._finish()
        info = self.info([])
        info["reward_components"] = components
        info["truncation_reason"] = reason
        return math.fsum(components.values()), info

    def _message(self, content: str) -> str:
        self.counterpart_messages += 1
        handed_over = handed_over_tool(content, self.domain.catalog.tools)
        if handed_over is not None:  # the counterpart has no tools: the agent is told to call it
            observation = not_their_tool_reply(handed_over, self.trace.language)
        else:
            rng = np.random.default_rng([*self.key, 1, self.turn])
            observation = self.domain.reply(
                self.setup, self.blueprint, content, self.trace.language, rng, ended=False
            )
        self.approval.heard(self._consent(content))
        self._record(kind="message", raw=content, valid=True, observation=observation)
        return observation

    def _consent(self, content: str) -> Any:
        """The counterpart's answer to a message, if it asks for approval: the domain's reading
        of the change it describes (``Domain.consent``), else a yes to any change."""
        if not self.domain.asks_approval(content):
            return None
        consent = getattr(self.domain, "consent", None)
        return True if consent is None else consent(self.setup, content)

    def _step_after_end(self, received: Received) -> StepResult:
        trace = self.trace
        observation = self._error(
            "episode_ended", "the episode has ended; call reset() to start a new one"
        )
        if isinstance(received.parsed, PlainMessage):  # the counterpart says the case is closed
            rng = np.random.default_rng([*self.key, 2, len(trace.actions)])
            observation = self.domain.reply(
                self.setup, self.blueprint, "", trace.language, rng, ended=True
            )
        # A new trace object: the one returned at the end of the episode stays as it was.
        self.trace = trace.model_copy(update={"actions": list(trace.actions)})
        self._record(
            kind="after_end",
            raw=received.raw,
            valid=False,
            error_kind="episode_ended",
            error="action after the end",
            observation=observation,
        )
        return observation, 0.0, trace.terminated, trace.truncated, self.info([])

    def _tool_calls(self, calls: list[ToolCall], raw: Any) -> tuple[str, list[dict], bool]:
        # Every call past the first takes one more step of the budget; calls past the budget or
        # after a submission are refused, not run.
        outputs: list[tuple[str, str]] = []
        messages: list[dict[str, Any]] = []
        submitted = False
        for index, call in enumerate(calls):
            over_budget = index > 0 and self.budget.exhausted
            if index > 0 and not submitted and not over_budget:
                self.budget.take()
            if submitted or over_budget:
                observation = self._refuse(call, submitted)
            else:
                observation, submitted = self._call(call, raw)
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
        combined = canonical_json([{"name": n, "output": _decoded(o)} for n, o in outputs])
        return combined, messages, submitted

    def _refuse(self, call: ToolCall, submitted: bool) -> str:
        if submitted:
            kind, message = "episode_ended", "call after submit_resolution refused"
        else:
            kind, message = "step_budget_exhausted", self.budget.refusal()
        return self._refused("after_end", kind, message, tool=call.name)

    def _call(self, call: ToolCall, raw: Any) -> tuple[str, bool]:
        """Run one tool call (or the submission); returns (observation, submitted).

        The raw action is kept only when the arguments could not be parsed, so that nothing
        the agent sent is lost.
        """
        kind = "submit" if call.name == RESERVED_SUBMIT else "tool_call"
        if call.error is not None:
            error_kind = call.error_kind or "malformed_arguments"
            return self._refused(kind, error_kind, call.error, tool=call.name, raw=raw), False
        arguments = call.arguments or {}
        if kind == "submit":
            return self._submit(arguments)
        self.tool_calls += 1
        key, spec = self.key, self.domain.toolbox.specs.get(call.name)
        if self.tool_set == "core" and spec is not None and spec.kind == "distractor":
            return self._not_offered(call.name), False
        result = self.approval.refusal(call.name, spec, arguments)
        changed = None
        if result is None:
            context = self.domain.tool_context(  # the call's seed is computed only if drawn
                self.setup, lambda: [*key, call_key(call.name, arguments)], self.turn
            )
            writes = spec is not None and spec.effect == "write" and self._sees_changes
            before = self.domain.changes(self.setup) if writes else None
            result = self.domain.toolbox.run(call.name, arguments, context)
            if writes and result.ok:
                changed = self.domain.changes(self.setup) != before
            self.approval.ran(spec, result)
        remeasure = self.remeasurements.ran(call.name, arguments, spec, result)
        observation = (
            canonical_json(result.output)
            if result.ok
            else self._error(result.error_kind or "execution", result.error or "", result.advice)
        )
        self._record(
            kind="tool_call",
            tool=call.name,
            arguments=arguments,
            valid=result.ok,
            error_kind=result.error_kind,
            error=result.error,
            observation=observation,
            remeasure=remeasure,
            changed=changed,
        )
        return observation, False

    def _not_offered(self, tool: str) -> str:
        """A distractor called in a core-tools episode: refused as a tool it does not have."""
        offered = ", ".join(self.domain.catalog.offered(self.tool_set))
        return self._refused(
            "tool_call",
            "unknown_tool",
            f"{tool} is not offered in this episode (core tools only); the tools are: {offered}",
            tool=tool,
        )

    def _submit(self, arguments: dict[str, Any]) -> tuple[str, bool]:
        checked = self.domain.toolbox.check(RESERVED_SUBMIT, arguments)
        if checked is not None:
            problem, advice = checked
            observation = self._error(
                "invalid_arguments", f"invalid arguments for {RESERVED_SUBMIT}: {problem}", advice
            )
            self._record(
                kind="submit",
                tool=RESERVED_SUBMIT,
                arguments=arguments,
                valid=False,
                error_kind="invalid_arguments",
                error=problem,
                observation=observation,
            )
            return observation, False
        self.trace.submission = Submission(**arguments)
        observation = canonical_json({"status": "submitted", "episode_id": self.episode_id})
        self._record(
            kind="submit",
            tool=RESERVED_SUBMIT,
            arguments=arguments,
            valid=True,
            observation=observation,
        )
        return observation, True

    def _refused(
        self, kind: str, error_kind: str, error: str, *, tool: str | None = None, raw: Any = None
    ) -> str:
        """Record an action refused with ``error`` (nothing ran); its error observation."""
        observation = self._error(error_kind, error)
        self._record(
            kind=kind,
            tool=tool,
            raw=raw,
            valid=False,
            error_kind=error_kind,
            error=error,
            observation=observation,
        )
        return observation

    def _silence(self, raw: Any) -> str:
        """An empty message: the counterpart says nothing came and what to do, in words; the
        action is recorded and counted as invalid (``empty_action``)."""
        observation = silence_reply(self.trace.language, self.domain.counterpart)
        self._record(
            kind="invalid",
            raw=raw,
            valid=False,
            error_kind="empty_action",
            error="the message is empty: no tool call and no text",
            observation=observation,
        )
        return observation

    def _error(self, kind: str, message: str, advice_of: str | None = None) -> str:
        """An error observation of ``kind``, with the advice of ``advice_of`` (default: of
        ``kind``) in the episode's language."""
        overrides = getattr(self.domain, "next_steps", None)
        advice = next_step(
            advice_of or kind, self.trace.language, self.domain.counterpart, overrides
        )
        return error_observation(kind, message, advice)

    def _record(self, **fields: Any) -> ActionRecord:
        # Built from trusted internal values: skip validation on this hot path.
        fields.setdefault("error_kind", None)
        fields.setdefault("error", None)
        fields.setdefault("arguments", None)
        fields.setdefault("tool", None)
        fields.setdefault("raw", None)
        fields.setdefault("remeasure", False)
        fields.setdefault("changed", None)
        record = ActionRecord.model_construct(step=self.turn, **fields)
        self.trace.actions.append(record)
        if not record.valid:
            self.invalid_actions += 1
        return record

    # --- the end ----------------------------------------------------------------------------------

    def _finish(self) -> dict[str, float]:
        """Verify, grade and score the ended episode; returns the terminal reward terms (never
        raises)."""
        trace, settings = self.trace, self.settings
        verdict = self.domain.verify(self.setup, self.intent, trace)
        # A step the episode does without (gold_skips) is no milestone of it either.
        skipped = self.setup.gold_skips
        milestones = [m for m in getattr(self.intent, "milestones", ()) if m.tool not in skipped]
        met = self._events(milestones)
        trace.outcome = grade(
            trace,
            verdict,
            self.domain.catalog.intents,
            milestones=met or None,
            required=[event.name for event in milestones if event.required],
            minefields=self._events(getattr(self.intent, "minefields", ())),
            embedder=settings.embedder,
        )
        # The verdict as the domain gave it, with the episode's resolution as graded.
        trace.verification = {**verdict, "resolved": trace.outcome.resolved}
        self.metrics, self.metrics_error = _scored(trace, settings.embedder)
        try:
            terminal = reward_from(settings.reward, self.metrics, trace)
            return terminal_components(
                settings.reward, terminal, self.metrics, settings.reward_mode, settings.shaping
            )
        except (ValueError, TypeError) as exc:
            self.metrics_error = f"reward: {exc}"
            return {"terminal": 0.0}

    def _events(self, events: Any) -> dict[str, bool]:
        """Which of the intent's events happened (the domain checks its own kinds)."""
        domain, setup, trace = self.domain, self.setup, self.trace
        check = getattr(domain, "event", None)
        return evaluate(
            events,
            trace,
            setup.gold_values,
            (lambda event: check(event, setup, trace)) if check is not None else None,
        )


def _scored(trace: EpisodeTrace, embedder: Any) -> tuple[EpisodeMetrics, str | None]:
    try:
        return score_episode(trace, embedder), None
    except EmbedderUnavailableError as exc:  # report it; a training loop must not die
        return score_episode(trace, None), str(exc)


def _distractors(domain: Domain) -> list[str]:
    return [name for name, spec in domain.catalog.tools.items() if spec.kind == "distractor"]


def _call_json(call: dict[str, Any]) -> str:
    """A call as a model writes it: ``name`` first, then the arguments (keys sorted)."""
    name = orjson.dumps(call["name"]).decode()
    return '{"name":' + name + ',"arguments":' + canonical_json(call["arguments"]) + "}"


def _decoded(observation: str) -> Any:
    return json.loads(observation) if observation.startswith(("{", "[")) else observation
