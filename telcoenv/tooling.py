"""Bind tool specs to their implementations, validate arguments with jsonschema, run calls.

The spec in ``tools/<name>.json`` is the interface and the only source of argument rules;
every non-reserved spec has exactly one implementation and every implementation has a spec.
A domain collects its implementations in a :class:`ToolRegistry` and binds them to its specs
in a :class:`Toolbox`.
"""

from __future__ import annotations

import functools
import json
import re
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import fastjsonschema
import orjson

from telcoenv.errors import TelcoEnvError, ToolError
from telcoenv.specs import ToolSpec

if TYPE_CHECKING:
    import jsonschema

RESERVED_SUBMIT = "submit_resolution"

#: A tool implementation: ``function(context, **arguments) -> JSON-ready dict``.
ToolFunction = Callable[..., dict[str, Any]]
_F = TypeVar("_F", bound=ToolFunction)

_ORJSON_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


def canonical_json(value: Any) -> str:
    """Deterministic compact JSON (sorted keys, UTF-8 kept) used for every tool output.

    orjson writes it (it was about a tenth of an episode's time with the standard library);
    values orjson refuses, such as integers beyond 64 bits in an agent's arguments, go through
    the standard library with the same conventions.
    """
    try:
        return orjson.dumps(value, option=_ORJSON_OPTIONS).decode()
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


#: Arguments that change how much of an output is shown, not what is measured: a call draws the
#: same data and re-measures the same read with or without them.
VIEW_ARGUMENTS = frozenset({"detail"})


#: The values of ``detail``, and what a summary's ``truncated`` field says about the rest.
DETAIL_VALUES = ("summary", "full")
FULL_HINT = 'call again with detail="full"'


def full_detail(detail: str | None) -> bool:
    """Whether a call asks for the full output (``detail="full"``; absent: the summary)."""
    if detail is None:
        return False
    if detail not in DETAIL_VALUES:  # the spec refuses it first; a direct call lands here
        raise ToolError(f"detail must be 'summary' or 'full', got {detail!r}", kind="bad_args")
    return detail == "full"


def truncated(shown: int, total: int, **more: Any) -> dict[str, Any]:
    """The ``truncated`` field of a summary: how many items it shows, of how many."""
    return {"shown": shown, "total": total, **more, "full": FULL_HINT}


def measured(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments that say what a call measures (without :data:`VIEW_ARGUMENTS`)."""
    return {k: v for k, v in arguments.items() if k not in VIEW_ARGUMENTS}


def call_key(name: str, arguments: Mapping[str, Any]) -> int:
    """A stable 32-bit key of a call, so that the same call draws the same random data (a
    call that only shows more or less of it, ``detail``, draws the same)."""
    return zlib.crc32(f"{name}:{canonical_json(measured(arguments))}".encode())


#: Characters of an argument's value quoted in an error message.
_QUOTED = 60


def _short(value: Any) -> str:
    """The value as an error message quotes it: whole when short, else a prefix and its size."""
    shown = repr(value)
    if len(shown) <= _QUOTED:
        return shown
    size = f"{len(value)} characters" if isinstance(value, str) else f"{len(shown)} characters"
    return f"{shown[:_QUOTED]}… ({size})"


def _without_long_values(message: str, arguments: Mapping[str, Any]) -> str:
    """A tool's error ``message`` with each long text argument it quotes shortened as
    :func:`_short` quotes it (a tool names the id it could not find; the agent should not get
    a megabyte of it back)."""
    for value in arguments.values():
        if isinstance(value, str) and len(value) > _QUOTED:
            message = message.replace(repr(value), _short(value))
            message = message.replace(value, _short(value))
    return message


def _problem(error: jsonschema.ValidationError) -> str:
    """jsonschema's message, with a long value shortened and length limits stated."""
    if error.validator in ("maxLength", "minLength") and isinstance(error.instance, str):
        bound = "at most" if error.validator == "maxLength" else "at least"
        text = error.instance
        shown = repr(text) if len(text) <= _QUOTED else f"{text[:_QUOTED]!r}…"
        return f"{shown} has {len(text)} characters; {bound} {error.validator_value} allowed"
    shown = repr(error.instance)
    return (
        error.message.replace(shown, _short(error.instance))
        if len(shown) > _QUOTED
        else error.message
    )


def _describe(error: jsonschema.ValidationError, optional: frozenset[str] = frozenset()) -> str:
    path = ".".join(str(p) for p in error.absolute_path)
    if len(path) > _QUOTED:  # a key of the agent's making
        path = f"{path[:_QUOTED]}… ({len(path)} characters)"
    if path in optional and error.instance in ("", None):
        # Small models fill every parameter: an empty optional one is better left out.
        empty = json.dumps(error.instance)
        return f"argument {path!r} is optional and was given empty ({empty}): leave it out"
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        where = f" in {path!r}" if path else ""
        return f"missing required argument {missing!r}{where}"
    if error.validator in ("minProperties", "maxProperties"):  # e.g. "msisdn or customer_id"
        names = ", ".join(sorted(error.schema.get("properties", {})))
        bound = "at least" if error.validator == "minProperties" else "at most"
        where = f" in {path!r}" if path else ""
        return f"give {bound} {error.validator_value} of the arguments ({names}){where}"
    if error.validator == "additionalProperties" and not path:
        known = error.schema.get("properties", {})
        names = ", ".join(sorted(known)) or "none"
        extra = [_short(key) for key in error.instance if key not in known]
        unexpected = f"{', '.join(extra)} {'was' if len(extra) == 1 else 'were'} unexpected"
        return f"unexpected argument(s): {unexpected}; this tool takes: {names}"
    if error.validator == "pattern" and path and error.schema.get("description"):
        # A regex means little to a model; the parameter's own description says what is
        # expected and where the value comes from ("Customer id from get_customer").
        return f"argument {path!r}: {_short(error.instance)} is not {_expected(error.schema)}"
    return f"argument {path!r}: {_problem(error)}" if path else _problem(error)


def _advice(errors: list[jsonschema.ValidationError], optional: frozenset[str]) -> str | None:
    """The advice that fits argument errors better than "correct the argument", by kind
    (:mod:`telcoenv.feedback`): ``not_found`` (where the real ids come from) when an id
    argument (``customer_id``, ``cell_id``) has the wrong form, a made-up id; ``empty_optional``
    (call again without them) when the only problems are optional arguments sent empty, which
    the 1.5B model "corrected" by filling in a value nobody asked for; ``unexpected_arguments``
    (only the arguments the tool takes) when the only problem is arguments it does not take
    (submit_resolution with "root cause" and "evidence" beside intent and summary)."""
    named = [(e, ".".join(map(str, e.absolute_path))) for e in errors]
    if any(e.validator == "pattern" and path.endswith("_id") for e, path in named):
        return "not_found"
    if all(path in optional and e.instance in ("", None) for e, path in named):
        return "empty_optional"
    if all(e.validator == "additionalProperties" and not path for e, path in named):
        return "unexpected_arguments"
    return None


#: Characters of a parameter's description quoted when a value has the wrong form.
_DESCRIBED = 120


def _expected(schema: Mapping[str, Any]) -> str:
    """'of the expected form (<the parameter's description>)', the description shortened."""
    text = str(schema["description"]).strip().rstrip(".")
    if len(text) > _DESCRIBED:
        text = text[:_DESCRIBED].rsplit(" ", 1)[0] + "…"
    return f"of the expected form ({text})"


def _crowded(errors: list[jsonschema.ValidationError], arguments: Mapping[str, Any]) -> str:
    """Advice when a settings object (``changes``) holds several refused values: small models
    fill in every parameter the schema lists instead of the ones they mean to change."""
    for error in errors:
        path = list(error.absolute_path)
        value = arguments.get(path[0]) if len(path) > 1 else None
        wrong = sum(1 for e in errors if list(e.absolute_path)[:1] == path[:1])
        if isinstance(value, dict) and len(value) > 2 and wrong > 1:
            return f"; put in {path[0]!r} only the parameters you mean to change"
    return ""


@dataclass(frozen=True, slots=True)
class ToolResult:
    """Outcome of one call: a JSON-ready output, or an error kind and message. ``advice`` names
    the kind whose advice (:func:`telcoenv.feedback.next_step`) fits the error better than its
    own: an id of the wrong form needs where ids come from, as an unknown one does."""

    output: dict[str, Any] | None
    error_kind: str | None = None
    error: str | None = None
    advice: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class ToolRegistry(Mapping[str, ToolFunction]):
    """A domain's tool implementations by name; ``@registry.tool`` adds a function under its
    own name, which is the name of its spec.

    >>> tools = ToolRegistry()
    >>> @tools.tool
    ... def ping(context, host):
    ...     return {"host": host}
    >>> sorted(tools), tools["ping"](None, host="a")
    (['ping'], {'host': 'a'})
    """

    def __init__(self) -> None:
        self._functions: dict[str, ToolFunction] = {}

    def tool(self, function: _F) -> _F:
        """Register ``function`` as the implementation of the spec with the same name."""
        name = function.__name__
        if name in self._functions:  # a second definition would silently replace the first
            raise TelcoEnvError(f"tool {name!r} is implemented twice")
        self._functions[name] = function
        return function

    def __getitem__(self, name: str) -> ToolFunction:
        return self._functions[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._functions)

    def __len__(self) -> int:
        return len(self._functions)


class Toolbox:
    """The tools of a domain: specs, compiled validators and implementations."""

    def __init__(
        self,
        specs: Mapping[str, ToolSpec],
        implementations: Mapping[str, ToolFunction],
    ) -> None:
        needed = {name for name, spec in specs.items() if spec.kind != "reserved"}
        missing, orphans = needed - set(implementations), set(implementations) - needed
        if missing or orphans:
            raise TelcoEnvError(
                f"tool specs and implementations disagree: specs without an "
                f"implementation {sorted(missing)}, implementations without a "
                f"spec {sorted(orphans)}"
            )
        self.specs = dict(specs)
        self.implementations = dict(implementations)
        self._validators: dict[str, jsonschema.protocols.Validator] = {}
        # Compiled checkers answer "valid?" ~20x faster; jsonschema explains the rare failures
        # (its validators are made at the first one: importing it costs start-up ~60 ms).
        self._fast_checks = {
            name: fastjsonschema.compile(spec.parameters, use_default=False)
            for name, spec in specs.items()
        }

    def _validator(self, name: str) -> jsonschema.protocols.Validator:
        import jsonschema

        validator = self._validators.get(name)
        if validator is None:
            validator = self._validators[name] = jsonschema.Draft202012Validator(
                self.specs[name].parameters
            )
        return validator

    @property
    def tool_names(self) -> list[str]:
        return sorted(n for n, s in self.specs.items() if s.kind != "reserved")

    def validate(self, name: str, arguments: Mapping[str, Any]) -> str | None:
        """None when the arguments satisfy the spec, else a precise description of the problem."""
        checked = self.check(name, arguments)
        return None if checked is None else checked[0]

    def check(self, name: str, arguments: Mapping[str, Any]) -> tuple[str, str | None] | None:
        """None when the arguments satisfy the spec, else the problem and the kind of advice
        that fits it better than "correct the argument" (see :func:`_advice`)."""
        try:
            self._fast_checks[name](arguments)
            return None
        except fastjsonschema.JsonSchemaException as exc:
            fast_error = exc
        errors = list(self._validator(name).iter_errors(dict(arguments)))
        if not errors:
            # The two disagree only where Python's ``$`` accepts a trailing newline that the
            # compiled check refuses: the stricter verdict stands.
            where = str(fast_error.name or "").removeprefix("data").lstrip(".")
            problem = f"{fast_error.rule or 'schema'} not satisfied (the whole value must match)"
            return (f"argument {where!r}: {problem}" if where else problem), None
        errors.sort(key=lambda e: (e.validator != "required", list(map(str, e.absolute_path))))
        parameters = self.specs[name].parameters
        optional = frozenset(parameters.get("properties", {})) - set(parameters.get("required", ()))
        # One problem per line: a null breaks both a type and an enum, told once.
        described = dict.fromkeys(_describe(e, optional) + self._other_form(e) for e in errors)
        problem = "; ".join(list(described)[:3])
        advice = _advice(errors, optional)
        if advice == "not_found":  # an id that has the form of another parameter: which one
            advice = next((f"not_found.{p}" for p in map(self._form_of, errors) if p), advice)
        return problem + _crowded(errors, arguments), advice

    def _other_form(self, error: jsonschema.ValidationError) -> str:
        """For a value of the wrong form that has the form of another parameter of the
        domain's tools, which one (the 1.5B model passed the customer's line number as
        ``account_id`` after get_customer had listed the account)."""
        parameter = self._form_of(error)
        if parameter is None:
            return ""
        path = ".".join(map(str, error.absolute_path))
        return f" ({_short(error.instance)} has the form of {parameter!r}, not of {path!r})"

    def _form_of(self, error: jsonschema.ValidationError) -> str | None:
        """The other parameter whose form a value of the wrong form has, or None."""
        value, path = error.instance, ".".join(map(str, error.absolute_path))
        if error.validator != "pattern" or not isinstance(value, str):
            return None
        for parameter, pattern in self._patterns.items():
            if parameter != path and pattern.search(value):
                return parameter
        return None

    @functools.cached_property
    def _patterns(self) -> dict[str, re.Pattern[str]]:
        """Each top-level parameter's pattern, from the first tool (by name) that has one."""
        patterns: dict[str, re.Pattern[str]] = {}
        for name in sorted(self.specs):
            for parameter, schema in self.specs[name].parameters.get("properties", {}).items():
                if "pattern" in schema and parameter not in patterns:
                    patterns[parameter] = re.compile(schema["pattern"])
        return patterns

    def run(self, name: str, arguments: dict[str, Any], context: Any) -> ToolResult:
        """Validate and execute a call; every failure is reported, none raised."""
        if name not in self.specs or self.specs[name].kind == "reserved":
            known = ", ".join(self.tool_names)
            return ToolResult(
                None,
                "unknown_tool",
                f"unknown tool {_short(name)}; available tools: {known}, {RESERVED_SUBMIT}",
            )
        checked = self.check(name, arguments)
        if checked is not None:
            problem, advice = checked
            return ToolResult(
                None, "invalid_arguments", f"invalid arguments for {name}: {problem}", advice
            )
        try:
            return ToolResult(self.implementations[name](context, **arguments))
        except ToolError as exc:
            return ToolResult(
                None, exc.kind, f"{name} failed: {_without_long_values(str(exc), arguments)}"
            )
