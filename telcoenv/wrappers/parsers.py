"""Parsers of raw model completions into telcoenv actions (for :class:`RawTextAction`).

A parser takes the completion text and returns an action ``TelcoEnv.step`` understands: an
OpenAI-style assistant message with ``tool_calls``, or the text itself (a message to the
engineer). It never raises: a tool call it cannot decode is passed on with its raw arguments, so
the environment answers with a precise error observation (``malformed_arguments`` or "no tool
name") instead of taking the text as a message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

Parser = Callable[[str], Any]

# Bodies are stripped in code, not by ``\s*`` around a lazy group: the two would try every
# split of a long run of spaces against each other (quadratic time on an unclosed block).
_FENCE = re.compile(r"```(?:json)?(.*?)```", re.DOTALL)
_HERMES = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)
_NAME = re.compile(r'"name"\s*:\s*"([^"]*)"')
# <function name="X" arguments='{...}'/> (what Qwen2.5-Coder wrote inside <tools>) and
# <function=X>{...}</function> (Llama 3.1's custom format): the name, then the arguments as an
# attribute or as the element's body. Neither runs past the next "<function" (a text of many
# unclosed tags would otherwise be searched to its end from each of them: quadratic time).
_WITHIN = r"(?:(?!<function).)*?"
_FUNCTION_TAG = re.compile(
    r"""<function(?:\s+name\s*=\s*(?P<quote>["'])(?P<name>[^"']+)(?P=quote)|=(?P<bare>[\w.-]+))"""
    rf"""(?:\s+(?:arguments|parameters)\s*=\s*(?P<aquote>["'])(?P<attribute>{_WITHIN})(?P=aquote))?"""
    rf"""\s*(?:/>|>(?P<body>{_WITHIN})</function>)""",
    re.DOTALL,
)
_TOOLS_WRAPPER = re.compile(r"</?tools>")


def _assistant(content: str | None, calls: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": content or None,
        "tool_calls": [{"type": "function", "function": call} for call in calls],
    }


def _call(decoded: Any) -> dict[str, Any] | None:
    """``{"name", "arguments"}`` from a decoded JSON value that looks like one tool call."""
    if not isinstance(decoded, dict):
        return None
    function = decoded.get("function", decoded)
    if not isinstance(function, dict) or "name" not in function:
        return None
    parameters = function.get("parameters")
    if "arguments" not in function and isinstance(parameters, dict) and "properties" in parameters:
        return None  # the model echoed a tool's schema: no call
    arguments = function.get("arguments", function.get("parameters", {}))
    return {"name": function["name"], "arguments": arguments}


def _decoded(text: str) -> tuple[Any, bool]:
    """(value, True) when ``text`` is JSON; (None, False) when it does not parse, including
    text nested too deeply for Python's decoder or holding a number of over 4,300 digits
    (a ValueError that is no JSONDecodeError)."""
    try:
        return json.loads(text), True
    except (ValueError, RecursionError):
        return None, False


def _objects(text: str) -> list[Any]:
    """Every JSON object that starts at a ``{`` of ``text`` and is not inside an earlier one."""
    decoder, found, index = json.JSONDecoder(), [], text.find("{")
    while index >= 0:
        try:
            value, end = decoder.raw_decode(text, index)
        except (ValueError, RecursionError):  # see _decoded
            end = index + 1
        else:
            found.append(value)
        index = text.find("{", end)
    return found


def _undecodable(body: str) -> dict[str, Any]:
    """A call whose JSON does not parse: keep its name if visible and its raw arguments."""
    match = _NAME.search(body)
    return {"name": match.group(1) if match else "", "arguments": body}


def parse_json_call(text: str) -> Any:
    """A completion that is (or contains, e.g. in a code fence) a JSON tool call or a list of
    them; several code fences are the calls among them, in order (a 1.5B model wrote
    kpi_timeseries and subscriber_insight as two fences in one reply). Anything else is
    returned unchanged: a message to the engineer."""
    fenced_calls = _fenced_calls(text)
    if len(fenced_calls) > 1:
        return _assistant(None, fenced_calls)
    fenced = _FENCE.search(text)
    candidate = (fenced.group(1) if fenced else text).strip()
    if not candidate.startswith(("{", "[")):
        start, end = candidate.find("{"), candidate.rfind("}")
        if start < 0 or end < start:
            return text
        candidate = candidate[start : end + 1]
    decoded, ok = _decoded(candidate)
    if not ok:
        # Several objects with prose between them (``{...} then {...}``) or one object with
        # trailing text: the calls among them, else the one that does not parse.
        found = [call for call in map(_call, _objects(candidate)) if call is not None]
        return _assistant(None, found or [_undecodable(candidate)])
    entries = decoded if isinstance(decoded, list) else [decoded]
    calls = [_call(entry) for entry in entries]
    if not calls or any(call is None for call in calls):
        return text
    return _assistant(None, calls)  # type: ignore[arg-type]


def _fenced_calls(text: str) -> list[dict[str, Any]]:
    """The tool calls of every code fence of ``text`` that holds one (or a list of them)."""
    calls = []
    for body in _FENCE.findall(text):
        decoded, ok = _decoded(body.strip())
        entries = decoded if ok and isinstance(decoded, list) else [decoded] if ok else []
        calls += [call for call in map(_call, entries) if call is not None]
    return calls


def parse_hermes(text: str) -> Any:
    """Hermes-style ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks (one or
    more; the text outside them is the message content). Without a block, the text is a message
    to the engineer."""
    bodies = _HERMES.findall(text)
    if not bodies:
        return text
    calls = []
    for body in map(str.strip, bodies):
        decoded, ok = _decoded(body)
        call = _call(decoded) if ok else None
        calls.append(call if call is not None else _undecodable(body))
    content = _HERMES.sub("", text).strip()
    return _assistant(content, calls)


def parse_function_tags(text: str) -> Any:
    """Calls written as XML-like ``<function>`` elements, one or more, optionally inside
    ``<tools>``: ``<function name="X" arguments='{"a": 1}'/>`` or
    ``<function=X>{"a": 1}</function>`` (the text outside them is the message content).
    Without such an element, the text is a message to the engineer."""
    calls = []
    for match in _FUNCTION_TAG.finditer(text):
        name = match.group("name") or match.group("bare")
        raw = (match.group("attribute") or match.group("body") or "").strip() or "{}"
        arguments, ok = _decoded(raw)
        calls.append({"name": name, "arguments": arguments if ok else raw})
    if not calls:
        return text
    content = _TOOLS_WRAPPER.sub("", _FUNCTION_TAG.sub("", text)).strip()
    return _assistant(content, calls)


PARSERS: dict[str, Parser] = {
    "json": parse_json_call,
    "hermes": parse_hermes,
    "function_tags": parse_function_tags,
}
