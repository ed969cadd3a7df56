"""Parse what an agent sends to ``step`` into tool calls or a plain message.

Accepted actions (see the README's "Action format"):

* an OpenAI-style assistant message ``{"role": "assistant", "content": ..., "tool_calls": [...]}``
  whose calls carry ``{"function": {"name", "arguments"}}`` with arguments as a JSON string or dict;
* a single tool call ``{"name": ..., "arguments": ...}`` (or ``{"function": {...}}``);
* the JSON string of either;
* any other string, or a message without tool calls: a plain message to the engineer.

Parsing never raises: a malformed action becomes a :class:`ParseError` that the environment
turns into an error observation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call as the agent wrote it; ``error`` is set when its arguments are unusable."""

    name: str
    arguments: dict[str, Any] | None
    call_id: str | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class PlainMessage:
    """Text addressed to the engineer."""

    content: str


@dataclass(frozen=True, slots=True)
class ParseError:
    """An action that is neither a tool call nor a message."""

    kind: str
    message: str


Parsed = list[ToolCall] | PlainMessage | ParseError


def _arguments(raw: Any, name: str) -> tuple[dict[str, Any] | None, str | None]:
    if raw is None:
        return {}, None
    if isinstance(raw, str):
        if not raw.strip():
            return {}, None
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            return None, (
                f"arguments of {name!r} are not valid JSON ({exc.msg} at line "
                f"{exc.lineno}, column {exc.colno})"
            )
    if not isinstance(raw, dict):
        return None, (f"arguments of {name!r} must be a JSON object, got {type(raw).__name__}")
    return raw, None


def _tool_call(entry: Any, index: int) -> ToolCall | ParseError:
    if not isinstance(entry, dict):
        return ParseError(
            "malformed_action", f"tool_calls[{index}] must be an object, got {type(entry).__name__}"
        )
    function = entry.get("function", entry)
    if not isinstance(function, dict):
        return ParseError("malformed_action", f"tool_calls[{index}].function must be an object")
    name = function.get("name")
    if not isinstance(name, str) or not name.strip():
        return ParseError(
            "malformed_action",
            f"tool_calls[{index}] has no tool name "
            '(expected {"name": ..., "arguments": {...}})',
        )
    arguments, error = _arguments(function.get("arguments", function.get("parameters")), name)
    call_id = entry.get("id")
    return ToolCall(name, arguments, call_id if isinstance(call_id, str) else None, error)


def _from_dict(action: dict[str, Any]) -> Parsed:
    if action.get("tool_calls"):
        calls = action["tool_calls"]
        if not isinstance(calls, list):
            return ParseError("malformed_action", "tool_calls must be a list")
        parsed = [_tool_call(entry, i) for i, entry in enumerate(calls)]
        errors = [p for p in parsed if isinstance(p, ParseError)]
        return errors[0] if errors else parsed  # type: ignore[return-value]
    if "name" in action or "function" in action:
        call = _tool_call(action, 0)
        return call if isinstance(call, ParseError) else [call]
    content = action.get("content")
    if isinstance(content, str) and content.strip():
        return PlainMessage(content)
    return ParseError(
        "malformed_action", "the action has neither tool_calls, a tool name nor text content"
    )


def parse_action(action: Any) -> Parsed:
    """Turn an action into tool calls, a plain message, or a ParseError (never raises)."""
    if isinstance(action, dict):
        return _from_dict(action)
    if isinstance(action, str):
        text = action.strip()
        if not text:
            return ParseError("empty_action", "the action is an empty string")
        if text[0] in "{[":
            try:
                decoded = json.loads(text)
            except json.JSONDecodeError as exc:
                return ParseError(
                    "malformed_json",
                    f"the action looks like JSON but does not "
                    f"parse: {exc.msg} at line {exc.lineno}, column {exc.colno}",
                )
            if isinstance(decoded, dict):
                return _from_dict(decoded)
            return ParseError(
                "malformed_action",
                "a JSON action must be an object (a tool call or an assistant message)",
            )
        return PlainMessage(action)
    return ParseError(
        "unsupported_action",
        f"unsupported action type {type(action).__name__}: "
        "send a tool call dict, an assistant message dict or a string",
    )
