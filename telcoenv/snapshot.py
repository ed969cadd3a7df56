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

from pydantic import BaseModel, ConfigDict


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


class EnvState(BaseModel):
    """An environment's episode and the actions taken in it so far."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    env_id: str
    start: EpisodeStart
    # Every action sent to step, as JSON; an action that was not JSON-serialisable is kept as
    # its repr (and replays as that string).
    actions: list[Any]
