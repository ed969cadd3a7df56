"""TrajectoryRecorder: every episode as one JSON line, ready for supervised fine-tuning.

Each line holds the conversation (``messages``, OpenAI format, with native tool calls), the
``tools`` offered, the per-step ``rewards`` and their total, the ``metrics``, the verified
``resolved`` flag, and the environment ``state`` (``EnvState``), which replays the episode to the
same metrics (:func:`replay`). A line is written and flushed to disk as soon as its episode
ends, so a crash loses at most the running episode; an episode cut short by ``reset`` or
``close`` is written too, with ``finished: false``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import gymnasium

from telcoenv.wrappers.chat import ChatTranscript


class TrajectoryRecorder(gymnasium.Wrapper):
    """Append each episode to the JSONL file ``path`` (created with its folders if needed)."""

    def __init__(self, env: gymnasium.Env, path: str | os.PathLike[str]) -> None:
        super().__init__(env)
        self.path = Path(path)
        if not str(path) or self.path.is_dir():  # found out otherwise at the first episode's end
            raise ValueError(f"path {str(path)!r} is a folder: give the .jsonl file to append to")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._transcript = ChatTranscript()
        self._rewards: list[float] = []
        self._running = False
        self._start: dict[str, Any] = {}

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        if self._running:
            self._write(None)
        observation, info = self.env.reset(**kwargs)
        self._transcript.start(info)
        self._rewards, self._running = [], True
        self._start = {"seed": kwargs.get("seed"), "episode_id": info.get("episode_id")}
        return observation, info

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        sent = self._transcript.assistant(action) if self._running else action
        observation, reward, terminated, truncated, info = self.env.step(sent)
        if self._running:
            self._transcript.observe(info)
            self._rewards.append(float(reward))
            if terminated or truncated:
                self._write(info)
        return observation, reward, terminated, truncated, info

    def close(self) -> None:
        if self._running:
            self._write(None)
        super().close()

    def _write(self, final: dict[str, Any] | None) -> None:
        """Write the current episode; ``final`` is the last step's info (None: cut short)."""
        base = self.env.unwrapped
        trace = base.trace
        record = {
            "episode_id": self._start.get("episode_id"),
            "env_id": base.env_id,
            "seed": self._start.get("seed"),
            "intent": trace.intent if trace is not None else None,
            "language": trace.language if trace is not None else None,
            "finished": final is not None,
            "messages": self._transcript.messages,
            "tools": self._transcript.tools,
            "rewards": self._rewards,
            "reward": sum(self._rewards),
            "metrics": (final or {}).get("metrics"),
            "resolved": (final or {}).get("resolved"),
            "state": base.get_state().model_dump(mode="json") if trace is not None else None,
        }
        line = json.dumps(record, ensure_ascii=False) + "\n"
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())
        self._running = False


def load_trajectories(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The records of a JSONL file written by :class:`TrajectoryRecorder`."""
    with Path(path).open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def replay(record: dict[str, Any], env: gymnasium.Env) -> dict[str, Any]:
    """Replay a recorded episode in ``env`` (made with the same settings); the metrics of the
    replayed episode (``None`` if it did not finish)."""
    base = env.unwrapped
    base.set_state(record["state"])
    metrics = base.metrics
    return metrics.model_dump() if metrics is not None else None
