"""The typed record of one episode: what was sampled, what the agent did, what it saw.

A trace is self-contained: the metrics score it without re-running the environment, and it
round-trips through JSON (``EpisodeTrace.model_validate_json(trace.model_dump_json())``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

from telcoenv.specs import Language

#: The predicted chains MSC/EAP/SAS can compare with the gold chain: ``executed`` (the calls
#: that ran: the closed loop's default) or ``attempted`` (every attempt, the published
#: open-loop definition).
ChainKind = Literal["executed", "attempted"]
CHAINS: tuple[ChainKind, ...] = ("executed", "attempted")


class GoldCall(BaseModel):
    """A gold step with its arguments filled for the episode."""

    model_config = ConfigDict(extra="forbid")

    tool: str
    arguments: dict[str, Any]
    free_text: list[str] = []  # arguments in the agent's own words: not compared


class ActionRecord(BaseModel):
    """One agent action (or one tool call of a multi-call message) and its outcome."""

    model_config = ConfigDict(extra="forbid")

    step: int
    kind: Literal["tool_call", "message", "submit", "invalid", "after_end"]
    tool: str | None = None
    arguments: dict[str, Any] | None = None
    raw: Any = None
    valid: bool
    error_kind: str | None = None
    error: str | None = None
    observation: str
    # A repeat of an earlier read with the same arguments after a change was applied: the
    # re-measurement that verifies a fix. It is kept here but is not part of the diagnostic
    # chain that MSC/EAP/SAS compare with the gold chain.
    remeasure: bool = False
    # For a call of a tool that changes the world (a write): whether the world changed (a
    # write of the value already there, a dry run or a duplicate ticket changes nothing).
    # None: not a write, or recorded before telcoenv measured it.
    changed: bool | None = None


class Submission(BaseModel):
    model_config = ConfigDict(extra="forbid")

    intent: str
    summary: str
    answer: str | None = None  # the exact answer to the customer's question (customer care)


class Outcome(BaseModel):
    """How a finished episode went, part by part: what ``resolved`` rests on and what the
    rewards pay for. :func:`telcoenv.grading.grade` computes it once, at the end, from the
    domain's verdict on the final state and the trace."""

    model_config = ConfigDict(extra="forbid")

    submitted: bool  # a valid submit_resolution ended the episode (not the step budget)
    diagnosed: bool  # the submitted intent names the episode's intent
    diagnosis: str  # how it was judged (telcoenv.metrics.diagnosis), or "no submission"
    fixed: bool | None  # the state shows the fault removed (None: the task changes nothing)
    answered: bool | None  # the exact answer was submitted (None: no question was asked)
    collateral: int  # changes outside the fault (harm)
    milestones: dict[str, bool] = {}  # the intent's milestones: met or not
    required: list[str] = []  # the milestones the resolution needs (the others earn credit)
    minefields: dict[str, bool] = {}  # the intent's forbidden events: triggered or not
    required_steps: float  # the share of milestones met
    efficiency: float  # EAP of the executed chain: 1.0 when no call beyond the gold chain's
    format: float  # the share of the agent's actions that were valid
    resolved: bool
    unresolved_because: list[str] = []  # one reason per failed part, in words


class EpisodeTrace(BaseModel):
    """Everything about one episode, in order."""

    model_config = ConfigDict(extra="forbid")

    episode_id: str
    env_id: str
    domain: str = "network"
    intent: str
    category: str
    blueprint_id: str
    language: Language
    seed: int | None
    sample_index: int | None
    episode_key: list[int]
    intent_list: bool
    # How much the opening message gave away ("guided": the published benchmark's statements).
    difficulty: str = "guided"
    # The curriculum knobs (telcoenv.curriculum): the tools offered, hints, the step budget
    # (None: recorded before the budget was kept in the trace).
    tool_set: str = "all"
    hints: str = "none"
    max_steps: int | None = None
    problem_statement: str
    gold_label: dict[str, str]
    gold_summary: dict[str, str]
    # The scenario's sampled numbers the counterpart may quote (KPIs, a customer's age, ...).
    facts: dict[str, float]
    # What the domain's world looked like at the start (the network around the serving cell,
    # the customer who called, ...), as the domain describes it.
    start_state: dict[str, Any] = {}
    gold_chain: list[GoldCall]
    gold_answer: str | None = None  # the exact answer, when the counterpart asked a question
    actions: list[ActionRecord] = []
    submission: Submission | None = None
    verification: dict[str, Any] | None = None  # verified resolution of the final state
    outcome: Outcome | None = None  # None: still running, or recorded before outcomes existed
    terminated: bool = False
    truncated: bool = False

    @model_validator(mode="before")
    @classmethod
    def _earlier_field_names(cls, data: Any) -> Any:
        """Traces recorded by earlier versions named the facts ``sampled_kpis`` and kept the
        start in ``network`` or ``customer``: they still load, under today's names."""
        if not isinstance(data, dict) or not {"sampled_kpis", "network", "customer"} & set(data):
            return data
        data = dict(data)
        if data.get("start_state", {}) is None:
            del data["start_state"]
        if "sampled_kpis" in data:
            data.setdefault("facts", data.pop("sampled_kpis"))
        for older in ("network", "customer"):
            value = data.pop(older, None)
            if value:
                data.setdefault("start_state", value)
        return data

    @property
    def executed_chain(self) -> list[str]:
        """Tool names of the calls that ran, in order (submit excluded): what the closed loop's
        MSC/EAP/SAS compare with the gold chain. A refused call (unknown tool, invalid
        arguments, an id that does not exist, a change without approval) did nothing and is
        not a step of the plan; re-measurements after a change are left out as well (see
        ``ActionRecord.remeasure``)."""
        return [
            a.tool
            for a in self.actions
            if a.kind == "tool_call" and a.tool is not None and a.valid and not a.remeasure
        ]

    @property
    def attempted_chain(self) -> list[str]:
        """Tool names of every tool-call attempt, valid or not (submit and re-measurements
        excluded): the open-loop chain of the published benchmark, whose agents' calls were
        never run (``telcoenv rescore`` scores releases this way)."""
        return [
            a.tool
            for a in self.actions
            if a.kind == "tool_call" and a.tool is not None and not a.remeasure
        ]

    def chain(self, kind: ChainKind = "executed") -> list[str]:
        """The predicted chain of that kind (see :data:`CHAINS`)."""
        if kind not in CHAINS:
            raise ValueError(f"chain must be one of {list(CHAINS)}, got {kind!r}")
        return self.executed_chain if kind == "executed" else self.attempted_chain

    @property
    def predicted_chain(self) -> list[str]:
        """The executed chain (:attr:`executed_chain`), which the closed loop scores."""
        return self.executed_chain

    @property
    def gold_tools(self) -> list[str]:
        return [call.tool for call in self.gold_chain]
