"""Reference agents that drive a TelcoEnv episode.

:class:`GoldPathAgent` follows the episode's gold chain (read from ``info["privileged"]``, so the
environment must be made with ``privileged=True``) and submits the true intent label with a
summary built from what the tools returned. It is the upper bound used by the demo, the tests and
the benchmarks; it has no use for evaluation of real agents.
"""

from __future__ import annotations

import json
from typing import Any

from telcoenv.tooling import RESERVED_SUBMIT


class GoldPathAgent:
    """Calls the gold chain in order, then ``submit_resolution``."""

    def __init__(self) -> None:
        self._plan: list[dict[str, Any]] = []
        self._label = ""
        self._notes: list[str] = []
        self._summary = ""

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        privileged = info.get("privileged")
        if privileged is None:
            raise ValueError("GoldPathAgent needs an environment made with privileged=True")
        self._plan = [
            {"name": c["tool"], "arguments": c["arguments"]} for c in privileged["gold_chain"]
        ]
        language = info["language"]
        self._label = privileged["label"][language]
        self._summary = (
            privileged["root_cause"][language] + " " + privileged["corrective_action"][language]
        )
        self._notes = []

    def act(self, observation: str, info: dict[str, Any]) -> dict[str, Any]:
        if self._plan and info.get("step", 0) > 0:
            self._note(observation)
        if self._plan:
            return self._plan.pop(0)
        return {
            "name": RESERVED_SUBMIT,
            "arguments": {
                "intent": self._label,
                "summary": " ".join([self._summary, *self._notes]).strip(),
            },
        }

    def _note(self, observation: str) -> None:
        if '"ticket_id"' not in observation and '"change_id"' not in observation:
            return  # only tickets and applied changes make it into the summary
        output = json.loads(observation)
        if "ticket_id" in output:
            self._notes.append(f"Ticket {output['ticket_id']} opened.")
        elif output.get("status") == "applied":
            self._notes.append(f"Change {output['change_id']} applied.")


def run_episode(
    env: Any, agent: Any, *, seed: int | None = None, options: dict[str, Any] | None = None
) -> tuple[float, dict[str, Any]]:
    """Play one episode; returns the total reward and the last info (with the trace)."""
    observation, info = env.reset(seed=seed, options=options)
    agent.reset(observation, info)
    total, done = 0.0, False
    while not done:
        observation, reward, terminated, truncated, info = env.step(agent.act(observation, info))
        total += float(reward)
        done = terminated or truncated
    return total, info
