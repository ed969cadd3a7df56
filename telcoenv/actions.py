"""Parse what an agent sends to ``step`` into tool calls or a plain message.

Accepted actions (see docs/environments.md, "Actions"):

* an OpenAI-style assistant message ``{"role": "assistant", "content": ..., "tool_calls": [...]}``
  whose calls carry ``{"function": {"name", "arguments"}}`` with arguments as a JSON string or dict;
* a single tool call ``{"name": ..., "arguments": ...}`` (or ``{"function": {...}}``);
* the JSON string of either;
* any other string, or a message without tool calls: a plain message to the engineer.

Any Python value may arrive (trainers and real models send tuples, numpy scalars, bytes, NaN,
cut emoji as lone UTF-16 surrogates, text nested 100,000 brackets deep). :func:`receive` first
turns the action into plain JSON data (:func:`json_data`): tuples become lists, numpy scalars and
arrays their Python values; a value that has no faithful JSON form becomes a :class:`BadValue`
that names its problem. Parsing never raises: a malformed action becomes a :class:`ParseError`,
a call whose arguments hold a bad value a :class:`ToolCall` with an error, and the environment
turns either into an error observation.

:func:`receive` also gives the action's *log entry*, the canonical JSON that ``get_state``
replays: the action itself when it is plain JSON data, else a marker holding its parsed form, so
that a replay takes exactly the branch the original step took.
"""

from __future__ import annotations

import json
import math
import re
import reprlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from telcoenv.tooling import RESERVED_SUBMIT, canonical_json

#: Deepest nesting of lists and objects an action may have (real tool calls need 4 or 5).
MAX_DEPTH = 32
#: Bits of the largest integer an action may hold (2**1023 - 1, about 9e307): a double holds
#: it. Beyond, ``float()`` overflows (argument accuracy compares numbers as floats), and past
#: 4,300 digits Python refuses to read or write the number as text (JSON).
MAX_INT_BITS = 1023
#: The key of a log entry that holds a parsed action instead of the action itself.
REPLAY_MARKER = "$telcoenv_parsed"
#: Characters of a bad value quoted in an error message.
_SHOWN = 60


@dataclass(frozen=True, slots=True)
class BadValue:
    """A value with no faithful JSON form; ``problem`` completes "argument 'x' ..."."""

    kind: str  # invalid_text, non_finite_number, number_too_large, unsupported_value, too_deep
    problem: str
    shown: str  # a short, printable description of what was received

    def describe(self, where: str) -> str:
        return f"{where} {self.problem}"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call as the agent wrote it; ``error`` is set when its arguments are unusable."""

    name: str
    arguments: dict[str, Any] | None
    call_id: str | None = None
    error: str | None = None
    error_kind: str | None = None  # malformed_arguments or invalid_arguments, with ``error``
    raw_arguments: Any = None  # with ``error``: the arguments as sent (JSON data)


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


@dataclass(frozen=True, slots=True)
class Received:
    """An action as the environment keeps it: parsed, and as its replayable log entry."""

    parsed: Parsed
    log_entry: str

    @property
    def raw(self) -> Any:
        """The action as the trace records it (JSON data; a value with no JSON form becomes a
        short description). Decoded from the log entry, so a replay records the same."""
        entry = json.loads(self.log_entry)
        return entry["raw"] if _is_marker(entry) else entry


# --- plain JSON data -----------------------------------------------------------------------------


def _escaped(text: str) -> str:
    """``text`` with lone surrogates written as ``\\udc80`` escapes (printable, serialisable)."""
    return "".join(f"\\u{ord(c):04x}" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)


_REPR = reprlib.Repr()  # Python 3.11 takes no keyword arguments here
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 3, _SHOWN, _SHOWN


def _shown(value: Any) -> str:
    """Text kept whole (lone surrogates escaped), else a short printable description; safe for
    any object (deep, huge, or with a broken repr)."""
    if isinstance(value, str):
        return _escaped(value)
    try:
        text = _escaped(_REPR.repr(value))
    except Exception:  # a foreign object's __repr__ may raise anything
        text = f"<{type(value).__name__} object>"
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def clean_text(text: str) -> str | BadValue:
    """``text`` as valid Unicode: surrogate pairs are joined, a lone surrogate is a BadValue."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:  # a pair written as two code points (e.g. "\ud83d\ude00") is one character
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    except UnicodeDecodeError:
        position = next(i for i, c in enumerate(text) if 0xD800 <= ord(c) <= 0xDFFF)
        return BadValue(
            "invalid_text",
            f"holds a lone UTF-16 surrogate (U+{ord(text[position]):04X} at character "
            f"{position}), which is not valid Unicode: send the text without it",
            _shown(text),
        )


def is_plain(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` is already plain JSON data: exact dict, list, str, int, float, bool or
    None, valid text, finite numbers, at most :data:`MAX_DEPTH` deep. The common case, checked
    without building anything (every action passes here on the hot path)."""
    kind = type(value)
    if kind is str:
        return value.isascii() or _is_utf8(value)
    if value is None or kind is bool:
        return True
    if kind is int:
        return value.bit_length() <= MAX_INT_BITS
    if kind is float:
        return math.isfinite(value)
    if depth >= MAX_DEPTH:
        return False
    if kind is dict:
        for key, item in value.items():  # loops, not all(...): this runs on every step
            if type(key) is not str or not (key.isascii() or _is_utf8(key)):
                return False
            if not is_plain(item, depth + 1):
                return False
        return True
    if kind is list:
        for item in value:  # noqa: SIM110 (all() over a generator is twice as slow here)
            if not is_plain(item, depth + 1):
                return False
        return True
    return False  # tuples, numpy values, subclasses, objects: converted by json_data


def _is_utf8(text: str) -> bool:
    """Whether ``text`` holds no surrogate code point (lone, or a pair written as two)."""
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def json_data(value: Any, depth: int = 0) -> Any:
    """``value`` as plain JSON data (dict with str keys, list, str, int, float, bool, None).

    Plain data is returned as it is. Tuples become lists and numpy scalars and arrays their
    Python values. What has no faithful JSON form (NaN, infinities, lone surrogates, bytes,
    sets, other objects, nesting deeper than :data:`MAX_DEPTH`) becomes a :class:`BadValue` in
    place, so the rest stays usable.
    """
    return value if is_plain(value, depth) else _converted(value, depth)


def _converted(value: Any, depth: int) -> Any:
    if value is None or value is True or value is False:
        return value
    if isinstance(value, str):
        return clean_text(value if type(value) is str else str(value))
    if isinstance(value, float):
        if math.isfinite(value):
            return float(value)
        problem = "is NaN" if math.isnan(value) else "is infinite"
        return BadValue("non_finite_number", f"{problem}: send a finite number", repr(value))
    if isinstance(value, int):  # bool is handled above; IntEnum and friends: plain ints
        if value.bit_length() > MAX_INT_BITS:
            return BadValue("number_too_large", _too_large(value), _digits(value))
        return int(value)
    if isinstance(value, np.ndarray):
        return _converted(value.tolist(), depth)
    if isinstance(value, np.generic):
        return _converted(_numpy_item(value), depth)
    if isinstance(value, Mapping | list | tuple) and depth >= MAX_DEPTH:
        return BadValue(
            "too_deep", f"nests lists or objects deeper than {MAX_DEPTH} levels", _shown(value)
        )
    if isinstance(value, Mapping):
        data: dict[str, Any] = {}
        for key, item in value.items():
            name = clean_text(key) if isinstance(key, str) else None
            if not isinstance(name, str):
                return BadValue(
                    "unsupported_value",
                    f"has the key {_shown(key)[:_SHOWN]}: object keys must be valid text",
                    _shown(value),
                )
            data[name] = _converted(item, depth + 1)
        return data
    if isinstance(value, list | tuple):
        return [_converted(item, depth + 1) for item in value]
    kind = type(value).__name__
    return BadValue(
        "unsupported_value",
        f"is a Python {kind}, not a JSON value (text, number, true/false, null, list, object)",
        _shown(value),
    )


def _numpy_item(value: np.generic) -> Any:
    """The Python value of a numpy scalar. ``item()`` gives a long double (and a complex one)
    back as itself, which would be converted forever: it becomes a float (a complex)."""
    item = value.item()
    if isinstance(item, np.generic):
        return complex(item) if isinstance(item, np.complexfloating) else float(item)
    return item


def _too_large(value: int) -> str:
    return f"is too large ({_digits(value)}): send a number of at most 307 digits"


def _digits(value: int) -> str:
    """How long an integer is, not the integer itself (an error quotes it)."""
    try:
        return f"an integer of {len(str(abs(value)))} digits"
    except ValueError:  # Python writes no integer of more than 4,300 digits
        return "an integer of more than 4,300 digits"


def first_bad(data: Any, path: str = "") -> tuple[str, BadValue] | None:
    """The first BadValue in ``data`` and its dotted path (``a.b[2]``), or None."""
    if isinstance(data, BadValue):
        return path, data
    if isinstance(data, dict):
        items = ((f"{path}.{key}" if path else key, item) for key, item in data.items())
    elif isinstance(data, list):
        items = ((f"{path}[{index}]", item) for index, item in enumerate(data))
    else:
        return None
    for where, item in items:
        found = first_bad(item, where)
        if found is not None:
            return found
    return None


def printable(data: Any) -> Any:
    """``data`` with every BadValue replaced by its short description (JSON-serialisable)."""
    if isinstance(data, BadValue):
        return data.shown
    if isinstance(data, dict):
        return {key: printable(item) for key, item in data.items()}
    if isinstance(data, list):
        return [printable(item) for item in data]
    return data


def decode_json(text: str) -> tuple[Any, str | None]:
    """Decode JSON text into plain JSON data; (None, problem) when it does not parse."""
    try:
        return json_data(json.loads(text)), None
    except json.JSONDecodeError as exc:
        return None, f"{exc.msg} at line {exc.lineno}, column {exc.colno}"
    except RecursionError:
        return None, "it nests lists or objects too deeply to parse"
    except ValueError:  # Python reads no integer of more than 4,300 digits
        return None, "it holds a number of more than 4,300 digits"


# --- parsing -------------------------------------------------------------------------------------


def _arguments(raw: Any, name: str) -> tuple[dict[str, Any] | None, str | None, str | None]:
    """(arguments, error, error kind) of one call."""
    if raw is None:
        return {}, None, None
    if isinstance(raw, str):
        if not raw.strip():
            return {}, None, None
        raw, problem = decode_json(raw)
        if problem is not None:
            error = f"arguments of {name!r} are not valid JSON ({problem})"
            return None, error, "malformed_arguments"
    if isinstance(raw, BadValue):
        return None, raw.describe(f"the arguments of {name!r}"), "invalid_arguments"
    if not isinstance(raw, dict):
        kind = {list: "array", int: "number", float: "number", bool: "boolean"}.get(
            type(raw), type(raw).__name__
        )
        error = f"arguments of {name!r} must be a JSON object, got {kind}"
        return None, error, "malformed_arguments"
    found = None if is_plain(raw) else first_bad(raw)
    if found is not None:
        where, bad = found
        error = f"invalid arguments for {name}: " + bad.describe(f"argument {where!r}")
        return None, error, "invalid_arguments"
    return _sorted_keys(raw), None, None


def _sorted_keys(data: Any) -> Any:
    """``data`` (plain JSON data) with every object's keys in sorted order. JSON leaves the
    order of an object's keys open, and a snapshot logs actions as canonical JSON (sorted), so
    a tool that reads arguments in their order (``changes`` applied and reported one by one)
    must see the same order live and in a replay."""
    if type(data) is dict:
        return {key: _sorted_keys(data[key]) for key in sorted(data)}
    if type(data) is list:
        return [_sorted_keys(item) for item in data]
    return data


def _tool_call(entry: Any, index: int) -> ToolCall | ParseError:
    where = f"tool_calls[{index}]"
    if not isinstance(entry, dict):
        return ParseError("malformed_action", f"{where} must be an object, got {_kind(entry)}")
    function = entry.get("function", entry)
    if not isinstance(function, dict):
        return ParseError("malformed_action", f"{where}.function must be an object")
    name = function.get("name")
    if isinstance(name, BadValue):
        return ParseError(name.kind, name.describe(f"the tool name of {where}"))
    if not isinstance(name, str) or not name.strip():
        return ParseError(
            "malformed_action",
            f'{where} has no tool name (expected {{"name": ..., "arguments": {{...}}}})',
        )
    arguments, error, kind = _arguments(function.get("arguments", function.get("parameters")), name)
    call_id = entry.get("id")
    call_id = call_id if isinstance(call_id, str) else None
    if error is None:
        return ToolCall(name, arguments, call_id)
    raw = printable(function.get("arguments", function.get("parameters")))
    return ToolCall(name, None, call_id, error, kind, raw)


def _kind(value: Any) -> str:
    return "a value that is not JSON" if isinstance(value, BadValue) else type(value).__name__


# Keys of an assistant message (OpenAI and compatible servers) that carry no action.
_MESSAGE_KEYS = frozenset(
    {
        "role",
        "tool_calls",
        "refusal",
        "reasoning_content",
        "reasoning",
        "audio",
        "annotations",
        "function_call",
        "id",
        "type",
    }
)


def message_action(text: Any) -> dict[str, Any]:
    """The action that sends ``text`` to the counterpart as a message: an assistant message,
    so that a text that looks like a JSON tool call is still a message, never run as a call
    (what an adapter's "say this to the engineer" means)."""
    return {"role": "assistant", "content": text}


def _parts_text(content: list[Any]) -> str | BadValue | None:
    """The text of OpenAI-style content parts (``[{"type": "text", "text": ...}, ...]``;
    other parts, e.g. images, carry none); ``None`` for a list that is not parts."""
    if not content or not all(
        isinstance(p, dict) and isinstance(p.get("type"), str) for p in content
    ):
        return None
    texts = [part.get("text") for part in content if part["type"] == "text"]
    bad = next((text for text in texts if isinstance(text, BadValue)), None)
    return bad if bad is not None else "".join(t for t in texts if isinstance(t, str))


def _from_dict(action: dict[str, Any]) -> Parsed:
    calls = action.get("tool_calls")
    if calls:
        if isinstance(calls, BadValue):
            return ParseError(calls.kind, calls.describe("tool_calls"))
        if not isinstance(calls, list):
            return ParseError("malformed_action", "tool_calls must be a list")
        parsed = [_tool_call(entry, i) for i, entry in enumerate(calls)]
        errors = [p for p in parsed if isinstance(p, ParseError)]
        return errors[0] if errors else parsed  # type: ignore[return-value]
    if "name" in action or "function" in action:
        call = _tool_call(action, 0)
        return call if isinstance(call, ParseError) else [call]
    content = action.get("content")
    if isinstance(content, list):
        joined = _parts_text(content)
        content = content if joined is None else joined
    if isinstance(content, BadValue):
        return ParseError(content.kind, content.describe("the message content"))
    if "content" not in action and set(action) - _MESSAGE_KEYS:
        # {"tool": ..., "args": ...}: a call in another framework's shape, not a silent message.
        keys = ", ".join(sorted(map(repr, set(action) - _MESSAGE_KEYS))[:5])
        return ParseError(
            "malformed_action",
            f"the action has neither tool_calls, a tool name nor text content (unknown keys: "
            f'{keys}); send {{"name": <tool>, "arguments": {{...}}}} or {{"content": <text>}}',
        )
    if isinstance(content, str) and content.strip():
        return _message(content)
    if content is None or (isinstance(content, str) and not content.strip()):
        return ParseError("empty_action", "the message is empty: no tool call and no text")
    return ParseError(
        "malformed_action", "the action has neither tool_calls, a tool name nor text content"
    )


# A submission written as text: "submit_resolution: The intent is ..." (a 1.5B model wrote
# this in 11 of 12 steps, copying "Finish with submit_resolution: ..." of its instructions), or
# a {"intent": ..., "summary": ...} object in the text, bare or fenced. The counterpart could
# not act on any of them; the agent is told how to submit instead.
_SUBMISSION_PROSE = re.compile(rf"[\W_]*{RESERVED_SUBMIT}\b", re.IGNORECASE)
_LEADING_FENCE = re.compile(r"```(?:json)?\s*(.*?)(?:```|$)", re.DOTALL | re.IGNORECASE)


def _message(content: str) -> PlainMessage | ParseError:
    """A text for the counterpart, unless it is a submission written as text."""
    text = content.strip()
    if _SUBMISSION_PROSE.match(text) is None and not _submission_object(text):
        return PlainMessage(content)
    start = text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"
    return ParseError(
        "submission_as_text",
        f"this message is a submission written as text ({start!r}): nothing was submitted and "
        f"it was not passed on; call the tool {RESERVED_SUBMIT} with its arguments intent and "
        "summary",
    )


def _submission_object(text: str) -> bool:
    """Whether ``text`` is a JSON object with a submission's ``intent`` and ``summary`` and no
    tool name, bare or as the message's leading ```` ```json ```` block (a 1.5B model wrote
    ``{"intent": "submit_resolution", "summary": ...}`` in a fence eight times in one episode,
    each answered by the engineer as a question about the cell)."""
    fenced = _LEADING_FENCE.match(text)
    if fenced is not None:
        text = fenced.group(1).strip()
    if not text.startswith("{") or '"summary"' not in text:
        return False
    decoded, problem = decode_json(text)
    return (
        problem is None
        and isinstance(decoded, dict)
        and {"intent", "summary"} <= decoded.keys()
        and "name" not in decoded
    )


def _parse_data(data: dict[str, Any] | str | BadValue) -> Parsed:
    """Parse an action (a mapping or a string) already turned into plain JSON data."""
    if isinstance(data, dict):
        return _from_dict(data)
    if isinstance(data, BadValue):
        kind = "unsupported_action" if data.kind == "unsupported_value" else data.kind
        return ParseError(kind, data.describe("the action"))
    text = data.strip()
    if not text:
        return ParseError("empty_action", "the action is an empty string")
    if text[0] not in "{[":
        return _message(data)
    decoded, problem = decode_json(text)
    if problem is not None:
        return ParseError(
            "malformed_json", f"the action looks like JSON but does not parse: {problem}"
        )
    if isinstance(decoded, dict):
        return _from_dict(decoded)
    return ParseError(
        "malformed_action",
        "a JSON action must be an object (a tool call or an assistant message)",
    )


def parse_action(action: Any) -> Parsed:
    """Turn an action into tool calls, a plain message, or a ParseError (never raises)."""
    return receive(action).parsed


def receive(action: Any) -> Received:
    """Parse ``action`` and compute its log entry and raw record (never raises)."""
    if not isinstance(action, Mapping | str):
        parsed = ParseError(
            "unsupported_action",
            f"unsupported action type {type(action).__name__}: "
            "send a tool call dict, an assistant message dict or a string",
        )
        data = json_data(action)
        return _received(parsed, data, plain=False)
    plain = is_plain(action)
    data = action if plain else _converted(action, 0)
    parsed = _parse_data(data)
    plain = (plain or first_bad(data) is None) and not (
        isinstance(data, dict) and REPLAY_MARKER in data
    )
    return _received(parsed, data, plain)


def _received(parsed: Parsed, data: Any, plain: bool) -> Received:
    if plain:
        return Received(parsed, canonical_json(data))
    entry = {REPLAY_MARKER: encode_parsed(parsed), "raw": printable(data)}
    return Received(parsed, canonical_json(entry))


def _is_marker(entry: Any) -> bool:
    # An agent's own dict with this key is always logged inside a marker, never as itself.
    return isinstance(entry, Mapping) and REPLAY_MARKER in entry


# --- replay --------------------------------------------------------------------------------------


def encode_parsed(parsed: Parsed) -> dict[str, Any]:
    """A parsed action as JSON data (see :func:`decode_parsed`)."""
    if isinstance(parsed, PlainMessage):
        return {"message": parsed.content}
    if isinstance(parsed, ParseError):
        return {"error": {"type": parsed.kind, "message": parsed.message}}
    return {
        "calls": [
            {
                "name": call.name,
                "arguments": call.arguments,
                "id": call.call_id,
                "error": call.error,
                "error_kind": call.error_kind,
                "raw_arguments": call.raw_arguments,
            }
            for call in parsed
        ]
    }


def decode_parsed(data: Mapping[str, Any]) -> Parsed:
    """The parsed action of :func:`encode_parsed`'s data."""
    if "message" in data:
        return PlainMessage(data["message"])
    if "error" in data:
        return ParseError(data["error"]["type"], data["error"]["message"])
    fields = ("name", "arguments", "id", "error", "error_kind", "raw_arguments")
    return [ToolCall(*(call[field] for field in fields)) for call in data["calls"]]


def replayed(entry: Any) -> Received | None:
    """The received action of a log entry that holds a parsed action (None for a plain one)."""
    if _is_marker(entry):
        return Received(decode_parsed(entry[REPLAY_MARKER]), canonical_json(dict(entry)))
    return None
