"""ToolBudget: end an episode once the agent has used its tool calls."""

from __future__ import annotations

import numbers
from typing import Any

import gymnasium


class ToolBudget(gymnasium.Wrapper):
    """Truncate the episode after ``max_tool_calls`` tool calls (``submit_resolution`` excluded).

    Checked after each step: the step that reaches the budget runs in full, then the episode is
    verified, scored and returned with ``truncated=True`` and
    ``info["truncation_reason"]``; its reward includes the terminal reward.
    """

    def __init__(self, env: gymnasium.Env, max_tool_calls: int) -> None:
        super().__init__(env)
        if (
            isinstance(max_tool_calls, bool)
            or not isinstance(max_tool_calls, numbers.Integral)
            or max_tool_calls < 1
        ):
            raise ValueError(f"max_tool_calls must be a positive integer, got {max_tool_calls!r}")
        self.max_tool_calls = int(max_tool_calls)

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated or info.get("tool_calls", 0) < self.max_tool_calls:
            return observation, reward, terminated, truncated, info
        final, final_info = self.env.unwrapped.truncate(
            f"tool budget of {self.max_tool_calls} calls used"
        )
        final_info["reward_components"] = {
            **info.get("reward_components", {}),
            **final_info["reward_components"],
        }
        final_info["messages"] = info.get("messages", [])
        return observation, float(reward) + final, False, True, final_info
