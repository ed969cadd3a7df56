"""The conversation of an episode as OpenAI chat messages, and the ChatMessages wrapper."""

from __future__ import annotations

from typing import Any

import gymnasium

from telcoenv.actions import PlainMessage, ToolCall, decode_json, receive
from telcoenv.spaces import Messages
from telcoenv.tooling import canonical_json


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
        """Record the agent's turn; return the action to send to the environment (unchanged).

        Whatever the action holds (values with no JSON form included), the recorded message is
        valid chat data: a tool-call turn gets ids, and ``observe`` answers them in order.
        """
        self._turn += 1
        received = receive(action)
        parsed = received.parsed
        if isinstance(parsed, list):
            self.messages.append(self._with_ids(parsed, received.raw))
            return action
        if isinstance(parsed, PlainMessage):
            content = parsed.content
        else:  # sent as is; the environment reports the error
            raw = received.raw
            content = raw if isinstance(raw, str) else canonical_json(raw)
        self.messages.append({"role": "assistant", "content": content})
        return action

    def observe(self, info: dict[str, Any]) -> None:
        """Append the step's messages; tool messages answer the last turn's call ids in order."""
        last = self.messages[-1] if self.messages else {}
        ids = [call["id"] for call in last.get("tool_calls", [])]
        for message in info.get("messages", []):
            message = dict(message)
            if message.get("role") == "tool" and ids:
                message["tool_call_id"] = ids.pop(0)
            self.messages.append(message)

    def _with_ids(self, calls: list[ToolCall], raw: Any) -> dict[str, Any]:
        """An assistant message with ``tool_calls`` whose calls all carry an id."""
        entries = []
        for index, call in enumerate(calls):
            arguments = call.arguments if call.error is None else call.raw_arguments
            entries.append(
                {
                    "id": call.call_id or f"call_{self._turn}_{index}",
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": arguments
                        if isinstance(arguments, str)
                        else canonical_json(arguments if arguments is not None else {}),
                    },
                }
            )
        data = decode_json(raw)[0] if isinstance(raw, str) else raw
        content = data.get("content") if isinstance(data, dict) and data.get("tool_calls") else None
        return {
            "role": "assistant",
            "content": content if isinstance(content, str) else None,
            "tool_calls": entries,
        }


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
