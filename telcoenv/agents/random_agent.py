"""A random baseline: random core and distractor tools with schema-valid arguments, then submit.

Deterministic: the generator is seeded from the agent's seed and the episode id, and from the
repeat (``info["repeat"]``, set by ``telcoenv evaluate --repeats``) after the first play.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from telcoenv.spaces import sample_from_schema
from telcoenv.tooling import RESERVED_SUBMIT


class RandomAgent:
    """Calls 1 to ``max_calls`` random tools, then submits a random intent label."""

    needs_privileged = False
    # Any domain: it draws from the tools and labels the episode hands it.
    domains: tuple[str, ...] | None = None

    def __init__(self, seed: int = 0, max_calls: int = 6) -> None:
        self.seed, self.max_calls = seed, max_calls
        self._rng = np.random.default_rng(seed)
        self._remaining = 0
        self._tools: list[dict[str, Any]] = []
        self._labels: list[str] = []

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        entropy = [self.seed, zlib.crc32(info["episode_id"].encode())]
        # Every repeat replays the same episode: each draws its own calls. The first play keeps
        # the draws it had before repeats existed.
        if repeat := int(info.get("repeat") or 0):
            entropy.append(repeat)
        self._rng = np.random.default_rng(entropy)
        self._tools = [
            t["function"] for t in info["tools"] if t["function"]["name"] != RESERVED_SUBMIT
        ]
        self._remaining = int(self._rng.integers(1, self.max_calls + 1))
        # The instructions list the labels in the "with list" condition; otherwise guess blind.
        self._labels = [
            line[2:] for line in info["instructions"].splitlines() if line.startswith("- ")
        ] or ["network problem"]

    def act(self, observation: str, info: dict[str, Any]) -> dict[str, Any]:
        if self._remaining > 0:
            self._remaining -= 1
            tool = self._tools[int(self._rng.integers(len(self._tools)))]
            return {
                "name": tool["name"],
                "arguments": sample_from_schema(tool["parameters"], self._rng),
            }
        label = self._labels[int(self._rng.integers(len(self._labels)))]
        return {
            "name": RESERVED_SUBMIT,
            "arguments": {"intent": label, "summary": f"Suspected {label}; checks run."},
        }
