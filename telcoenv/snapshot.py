"""Snapshots of an environment: the same episode, at the same point, in another instance.

An :class:`EnvState` records how ``reset`` drew the episode (its key, intent, blueprint and
options, and the environment generator's state after the draws) and every action sent to
``step`` since. Restoring it starts that episode again and replays the actions; since the
environment is deterministic, the restored instance is in exactly the same state (transcript,
network database, engineer, metrics). G rollouts of a GRPO group can therefore start from one
snapshot. The state is JSON-serialisable (``model_dump_json``), so it can cross processes.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from telcoenv.actions import REPLAY_MARKER


class EpisodeStart(BaseModel):
    """How ``reset`` drew an episode."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seed: int | None
    episode_key: list[int]
    intent: str
    blueprint_id: str
    lang: str
    options: dict[str, Any]
    np_random: dict[str, Any]  # the environment generator's state after the reset's draws
    # Which of the domain's models of its world ran the episode (the domain's ``world_model``);
    # absent from snapshots taken before it was recorded (see ``legacy_world_model``).
    world_model: str | None = None
    # The split the episode was drawn in (telcoenv.splits): its phrasings are that split's.
    split: str = "all"


class _LoggedCall(BaseModel):
    """A parsed tool call in the log (:func:`telcoenv.actions.encode_parsed`)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    name: str
    arguments: dict[str, Any] | None
    id: str | None
    error: str | None
    error_kind: str | None
    raw_arguments: Any


class _LoggedError(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    type: str
    message: str


class _LoggedParse(BaseModel):
    """What an action was parsed into: a message, an error or tool calls (one of them)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    message: str | None = None
    error: _LoggedError | None = None
    calls: list[_LoggedCall] | None = None

    @model_validator(mode="after")
    def _one_of(self) -> _LoggedParse:
        if [self.message, self.error, self.calls].count(None) != 2:
            raise ValueError("holds exactly one of 'message', 'error' and 'calls'")
        return self


class _ParsedEntry(BaseModel):
    """A log entry that holds a parsed action (an action that was no plain JSON) and the
    action as received."""

    model_config = ConfigDict(extra="forbid")

    parsed: _LoggedParse = Field(alias=REPLAY_MARKER)
    raw: Any


class EnvState(BaseModel):
    """An environment's episode and the actions taken in it so far."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    env_id: str
    start: EpisodeStart
    # Every action sent to step, as JSON; an action that was not JSON-serialisable is kept as
    # its repr (and replays as that string).
    actions: list[Any]

    @field_validator("actions")
    @classmethod
    def _parsed_entries_are_whole(cls, actions: list[Any]) -> list[Any]:
        """A log entry of a parsed action is replayed as it is: refuse a malformed one here,
        not halfway through the replay."""
        for entry in actions:
            if isinstance(entry, dict) and REPLAY_MARKER in entry:
                _ParsedEntry.model_validate(entry)
        return actions
