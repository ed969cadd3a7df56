"""The conversation of an episode as OpenAI chat messages, and the ChatMessages wrapper."""

from __future__ import annotations

import json
from typing import Any

import gymnasium

from telcoenv.actions import ParseError, PlainMessage, parse_action
from telcoenv.spaces import Messages


class ChatTranscript:
    """Builds ``[system, user, assistant, tool, ...]`` as an episode runs.

    ``start(info)`` takes the reset info; ``assistant(action)`` records the agent's turn and
    returns the action to send (tool calls get ids, so that the environment's tool messages
    answer them); ``observe(info)`` appends the environment's messages of the step.
    """

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.tools: list[dict[str, Any]] = []
        self._turn = 0

    def start(self, info: dict[str, Any]) -> None:
        self.messages = [dict(message) for message in info["messages"]]
        self.tools = list(info.get("tools", []))
        self._turn = 0

    def assistant(self, action: Any) -> Any:
        self._turn += 1
        parsed = parse_action(action)
        if isinstance(parsed, ParseError):  # sent as is; the environment reports the error
            content = action if isinstance(action, str) else json.dumps(action, default=repr)
            self.messages.append({"role": "assistant", "content": content})
            return action
        if isinstance(parsed, PlainMessage):
            self.messages.append({"role": "assistant", "content": parsed.content})
            return action
        message = self._with_ids(action if isinstance(action, dict) else json.loads(action))
        self.messages.append(message)
        return message

    def observe(self, info: dict[str, Any]) -> None:
        self.messages.extend(info.get("messages", []))

    def _with_ids(self, action: dict[str, Any]) -> dict[str, Any]:
        """An assistant message with ``tool_calls`` whose calls all carry an id."""
        entries = action["tool_calls"] if action.get("tool_calls") else [action]
        calls = []
        for index, entry in enumerate(entries):
            function = dict(entry.get("function", entry))
            arguments = function.get("arguments", function.get("parameters", {}))
            calls.append(
                {
                    "id": entry.get("id") or f"call_{self._turn}_{index}",
                    "type": "function",
                    "function": {
                        "name": function.get("name"),
                        "arguments": arguments
                        if isinstance(arguments, str)
                        else json.dumps(arguments, ensure_ascii=False),
                    },
                }
            )
        content = action.get("content") if action.get("tool_calls") else None
        return {"role": "assistant", "content": content, "tool_calls": calls}


class ChatMessages(gymnasium.Wrapper):
    """Observations are the whole conversation so far: a list of OpenAI chat messages.

    The list is a new object each step (safe to keep). Tool calls without ids get
    ``call_<turn>_<index>``, and the tool messages answer them.
    """

    def __init__(self, env: gymnasium.Env) -> None:
        super().__init__(env)
        self.transcript = ChatTranscript()
        self.observation_space = Messages()

    def reset(self, **kwargs: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        _, info = self.env.reset(**kwargs)
        self.transcript.start(info)
        return list(self.transcript.messages), info

    def step(self, action: Any) -> tuple[list[dict[str, Any]], Any, bool, bool, dict[str, Any]]:
        sent = self.transcript.assistant(action)
        _, reward, terminated, truncated, info = self.env.step(sent)
        self.transcript.observe(info)
        return list(self.transcript.messages), reward, terminated, truncated, info
