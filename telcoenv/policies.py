"""The per-episode rules an :class:`~telcoenv.episode.Episode` composes.

Each rule is a small object with its own state, built fresh for every episode:

* :class:`StepBudget`: ``max_steps`` actions; every call of a multi-call message takes a step.
* :class:`ApprovalGate`: with ``require_approval``, a change waits for the counterpart's yes.
* :class:`Remeasurements`: which reads repeat an earlier read after a change (they verify the
  change and do not count twice in the predicted chain).
* :class:`GoldProgress`: how far along the gold chain the agent is, for the ``hints`` knob
  (the next step's tool) and the shaped reward's gold-step credit.

Reward shaping is the fourth rule, :class:`telcoenv.rewards.ShapingTracker`, kept with the rest
of the reward code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from telcoenv.specs import ToolSpec
from telcoenv.tooling import ToolResult, canonical_json, measured
from telcoenv.trace import ActionRecord


@dataclass(slots=True)
class GoldProgress:
    """The gold chain's tools done in order: a call of the next one counts when it ran and,
    for a write, changed something; a re-measurement does not count again."""

    gold: list[str]
    done: int = 0

    def advance(self, record: ActionRecord) -> bool:
        """Count ``record`` if it is the next gold step; whether it was."""
        if record.kind != "tool_call" or record.tool is None or self.next_tool != record.tool:
            return False
        if not record.valid or record.changed is False or record.remeasure:
            return False
        self.done += 1
        return True

    @property
    def next_tool(self) -> str | None:
        """The next gold step's tool (``None`` once the chain is done)."""
        return self.gold[self.done] if self.done < len(self.gold) else None


@dataclass(slots=True)
class StepBudget:
    """``max_steps`` steps per episode; the step that uses the last one truncates it."""

    max_steps: int
    used: int = 0

    def take(self) -> None:
        self.used += 1

    @property
    def exhausted(self) -> bool:
        return self.used >= self.max_steps

    def refusal(self) -> str:
        return (
            f"call refused: the episode's {self.max_steps} steps are used up "
            "(every tool call takes one step)"
        )


class Consent(Protocol):
    """A counterpart's answer to a request for approval, as a domain reads it: whether they
    agreed, and whether their yes allows a given change (the one they were told of)."""

    @property
    def agreed(self) -> bool: ...

    def covers(self, tool: str, arguments: Mapping[str, Any]) -> str | None:
        """Why the yes does not allow this call (None: it does)."""
        ...


@dataclass(slots=True)
class ApprovalGate:
    """One approval per change: a change tool runs only after the counterpart said yes.

    A domain that reads what a request describes (``Domain.consent``) ties the yes to that
    change: another change is refused as ``approval_mismatch``, and a no withdraws an earlier
    yes. Otherwise any yes allows the next change. With ``required=False`` every call passes.
    """

    required: bool
    counterpart: str
    # How to ask (the refusal's advice): a domain that ties a yes to a change says what to name.
    how_to_ask: str = "a plain message such as 'May I apply this change?'"
    approved: Consent | bool | None = None

    def heard(self, consent: Consent | bool | None) -> None:
        """The agent sent the counterpart a message: ``None`` or ``False`` if it asked for no
        approval, ``True`` for a yes to any change, or the counterpart's :class:`Consent`."""
        if consent is None or consent is False:
            return
        self.approved = consent if consent is True or consent.agreed else None

    def refusal(
        self, name: str, spec: ToolSpec | None, arguments: Mapping[str, Any] | None = None
    ) -> ToolResult | None:
        """The refusal of a call that needs an approval not given yet (``None``: it may run)."""
        if not self.required or spec is None or not spec.approval:
            return None
        if self.approved is None:
            return ToolResult(
                None,
                "approval_required",
                f"{name} makes a change: ask the {self.counterpart} for approval first "
                f"({self.how_to_ask}), then call it again",
            )
        if self.approved is True:
            return None
        mismatch = self.approved.covers(name, arguments or {})
        if mismatch is None:
            return None
        return ToolResult(
            None,
            "approval_mismatch",
            f"{name} is not the change the {self.counterpart} approved: {mismatch}; describe "
            f"this change and ask again ({self.how_to_ask})",
        )

    def ran(self, spec: ToolSpec | None, result: ToolResult) -> None:
        if result.ok and spec is not None and spec.approval:
            self.approved = None  # the next change needs its own approval


@dataclass(slots=True)
class Remeasurements:
    """Successful reads, and which of them were made before the latest applied change."""

    reads: set[str] = field(default_factory=set)
    verifiable: set[str] = field(default_factory=set)

    def ran(self, name: str, arguments: Any, spec: ToolSpec | None, result: ToolResult) -> bool:
        """Note a call's result; returns whether it re-measures a read made before a change."""
        if not result.ok or spec is None:
            return False
        if spec.approval:  # a change: every read so far can now verify it
            self.verifiable = set(self.reads)
            return False
        if spec.effect != "read":
            return False
        read = canonical_json([name, measured(arguments)])  # detail="full" re-reads the same
        self.reads.add(read)
        return read in self.verifiable
