"""The typed record of one episode: what was sampled, what the agent did, what it saw.

A trace is self-contained: the metrics score it without re-running the environment, and it
round-trips through JSON (``EpisodeTrace.model_validate_json(trace.model_dump_json())``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

from telcoenv.specs import Language


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


class Submission(BaseModel):
    model_config = ConfigDict(extra="forbid")

    intent: str
    summary: str
    answer: str | None = None  # the exact answer to the customer's question (customer care)


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
    def predicted_chain(self) -> list[str]:
        """Tool names of every tool call attempt, valid or not, in order (submit excluded),
        without re-measurements after a change (see ``ActionRecord.remeasure``)."""
        return [
            a.tool
            for a in self.actions
            if a.kind == "tool_call" and a.tool is not None and not a.remeasure
        ]

    @property
    def gold_tools(self) -> list[str]:
        return [call.tool for call in self.gold_chain]
