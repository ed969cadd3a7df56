"""TRL adapter: a telcoenv environment as a ``GRPOTrainer(environment_factory=...)`` class.

TRL's contract (``trl.GRPOTrainer``, ``environment_factory``): the class is built without
arguments, ``reset(**row)`` starts an episode from a dataset row and returns text appended to
the last user message, every other public method is a tool whose JSON schema TRL reads from the
signature and Google-style docstring (``transformers.utils.get_json_schema``), an exception
raised by a tool goes back to the model as the tool's response, and ``get_reward()`` scores the
finished rollout. :func:`trl_environment` builds such a class from the environment's tool specs;
every behaviour comes from :class:`telcoenv.env.TelcoEnv`. Install TRL with the ``trl`` extra.

>>> TelcoTroubleshooting = trl_environment("troubleshooting")
>>> environment = TelcoTroubleshooting()
>>> statement = environment.reset(seed=0, prompt="ignored")
>>> import inspect
>>> [n for n, _ in inspect.getmembers(environment, inspect.ismethod) if n[0] != "_"][:3]
['complaint_trend_analysis', 'coverage_map', 'create_ticket']
>>> environment.get_reward()  # no submit_resolution yet
0.0
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar, Literal

import telcoenv
from telcoenv.actions import message_action
from telcoenv.curriculum import Curriculum, Task
from telcoenv.errors import ToolCallError
from telcoenv.registration import env_id as resolve_env_id
from telcoenv.specs import ToolSpec
from telcoenv.splits import CANARY

__all__ = [
    "ROW_FIELDS",
    "ToolCallError",
    "curriculum_reward",
    "episode_info",
    "prompt_rows",
    "resolved_reward",
    "trl_environment",
]

ROW_FIELDS = (
    "seed",
    "intent",
    "blueprint",
    "sample_index",
    "lang",
    "difficulty",
    "tool_set",
    "hints",
    "max_steps",
)
"""Dataset columns that ``reset(**row)`` reads; other columns (``prompt``, ...) are ignored."""

_RESERVED_NAMES = frozenset({"reset", "get_reward"})  # TRL does not expose these as tools
_JSON_TYPES: dict[str, Any] = {
    "string": str,
    "number": float,
    "integer": int,
    "boolean": bool,
    "object": dict,
    "array": list,
    "null": type(None),
}


# --- schemas and docstrings from the tool specs ---------------------------------------------------


def _annotation(schema: Mapping[str, Any]) -> Any:
    """The Python type hint of a JSON Schema (enums become ``Literal``)."""
    if "enum" in schema:
        return Literal[tuple(schema["enum"])]
    kind = schema.get("type")
    if isinstance(kind, list):
        hints = [_JSON_TYPES.get(k, Any) for k in kind]
        union = hints[0]
        for hint in hints[1:]:
            union = union | hint
        return union
    if kind == "array" and isinstance(schema.get("items"), Mapping):
        return list[_annotation(schema["items"])]
    return _JSON_TYPES.get(kind, Any)


def _constraints(schema: Mapping[str, Any]) -> list[str]:
    """Short notes on a value's bounds, which a Python type hint cannot carry."""
    notes = []
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and high is not None:
        notes.append(f"from {low} to {high}")
    elif low is not None:
        notes.append(f"at least {low}")
    elif high is not None:
        notes.append(f"at most {high}")
    if "multipleOf" in schema:
        notes.append(f"in steps of {schema['multipleOf']}")
    if "maxLength" in schema:
        notes.append(f"at most {schema['maxLength']} characters")
    if "minProperties" in schema:
        count = schema["minProperties"]
        notes.append(f"at least {count} key{'s' if count != 1 else ''}")
    return notes


def _key_summary(name: str, schema: Mapping[str, Any]) -> str:
    """One key of an object parameter: ``name (type, bounds): description``."""
    kind = "one of " + ", ".join(json.dumps(v) for v in schema["enum"]) if "enum" in schema else ""
    details = [kind or str(schema.get("type", "any")), *_constraints(schema)]
    return f"{name} ({', '.join(details)}): {_one_line(schema.get('description', ''))}"


def _one_line(text: str) -> str:
    return " ".join(str(text).split()).rstrip(".")


def _describe(name: str, schema: Mapping[str, Any]) -> str:
    """A parameter's docstring line: the spec's description, bounds and an object's keys."""
    text = _one_line(schema.get("description", "")) or f"The {name} argument"
    notes = _constraints(schema)
    if notes:
        text += "; " + ", ".join(notes)
    keys = schema.get("properties")
    if isinstance(keys, Mapping) and keys:
        text += ". Keys: " + "; ".join(_key_summary(k, v) for k, v in keys.items())
    return text + "."


def _docstring(spec: ToolSpec, names: Sequence[str]) -> str:
    """A Google-style docstring that ``transformers.utils.get_json_schema`` parses."""
    properties = spec.parameters.get("properties", {})
    lines = [_one_line(spec.description) + ".", ""]
    if names:
        lines.append("Args:")
        lines += [f"    {name}: {_describe(name, properties[name])}" for name in names]
        lines.append("")
    lines += ["Returns:", "    The tool's output as a JSON string."]
    return "\n".join(lines)


def _signature(spec: ToolSpec) -> inspect.Signature:
    """``(self, <required>, <optional>=None) -> str`` with the spec's types."""
    properties = spec.parameters.get("properties", {})
    required = set(spec.parameters.get("required", []))
    ordered = [n for n in properties if n in required] + [
        n for n in properties if n not in required
    ]
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    for name in ordered:
        hint = _annotation(properties[name])
        default = inspect.Parameter.empty if name in required else None
        parameters.append(
            inspect.Parameter(
                name,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                annotation=hint if name in required else hint | None,
                default=default,
            )
        )
    return inspect.Signature(parameters, return_annotation=str)


def _tool_method(spec: ToolSpec) -> Callable[..., str]:
    """A method that sends one call of ``spec`` to the environment and returns its output.

    Arguments that are ``None`` are left out (an optional argument not given). Arguments are
    not checked here: the environment validates them against the spec and its error message
    is raised as :class:`ToolCallError`.
    """
    signature = _signature(spec)
    names = list(signature.parameters)[1:]

    def method(self: _TRLEnvironment, *args: Any, **kwargs: Any) -> str:
        if len(args) > len(names):
            raise TypeError(f"{spec.name}() takes at most {len(names)} positional arguments")
        for name, value in zip(names, args, strict=False):
            if name in kwargs:
                raise TypeError(f"{spec.name}() got multiple values for argument {name!r}")
            kwargs[name] = value
        arguments = {key: value for key, value in kwargs.items() if value is not None}
        return self._call(spec.name, arguments)

    method.__name__ = spec.name
    method.__signature__ = signature  # type: ignore[attr-defined]
    method.__annotations__ = {
        **{name: signature.parameters[name].annotation for name in names},
        "return": str,
    }
    method.__doc__ = _docstring(spec, names)
    return method


# --- the environment class ------------------------------------------------------------------------


class _TRLEnvironment:
    """Base of the classes that :func:`trl_environment` builds (one TelcoEnv per instance)."""

    _env_name: ClassVar[str]
    _env_kwargs: ClassVar[dict[str, Any]]
    _tool_names: ClassVar[tuple[str, ...]]
    _curriculum: ClassVar[Curriculum | None] = None

    def __init__(self) -> None:
        self._env = telcoenv.make(self._env_name, **self._env_kwargs)
        self._started = False
        self._reward = 0.0
        self._final_info: dict[str, Any] | None = None
        self._task: Task | None = None  # the curriculum's task of the episode, if any

    def reset(self, **row: Any) -> str:
        """Start an episode from a dataset row; return the engineer's problem statement.

        Reads ``seed`` and, when present and not ``None``, the reset options ``intent``,
        ``blueprint``, ``sample_index``, ``lang``, ``difficulty`` and the curriculum knobs
        ``tool_set``, ``hints`` and ``max_steps``; ignores every other column (such as
        ``prompt``). Rows with the same seed give the same episode, so the rollouts of a GRPO
        group share their task. With a curriculum (``trl_environment(..., curriculum=)``), a
        row without ``intent`` plays the curriculum's task for its seed.
        """
        seed = row.get("seed")
        options = {k: row[k] for k in ROW_FIELDS[1:] if row.get(k) is not None}
        self._task = None
        if self._curriculum is not None and "intent" not in options:
            if seed is None:
                raise ValueError("a curriculum's rows need a seed (see prompt_rows)")
            self._task = self._curriculum.task_for(int(seed))
            options = dict(self._task.options)
        statement, _ = self._env.reset(seed=None if seed is None else int(seed), options=options)
        self._started, self._reward, self._final_info = True, 0.0, None
        return statement

    def get_reward(self) -> float:
        """The episode's return: the sum of TelcoEnv's rewards (``reward=``; by default the
        sparse outcome reward: 0.6-1.0 resolved, at most 0.5 unresolved, 0 without a
        submission; with ``reward_mode="shaped"`` the step terms are in it too).

        The episode ends with ``submit_resolution`` or after ``max_steps`` actions. A rollout
        that stopped before either (the model stopped calling tools, or TRL's length or
        tool-iteration limit was reached) scores what its steps earned: 0.0 in the sparse mode,
        at most the bounded step terms when shaped.
        """
        return self._reward

    def _call(self, name: str, arguments: dict[str, Any] | None, message: str = "") -> str:
        """Step the environment with one tool call (or, with ``arguments=None``, a plain
        message to the counterpart); raise ToolCallError on an error output."""
        if not self._started:
            raise ToolCallError("no episode: call reset() before any tool", kind="reset_needed")
        action = (
            message_action(message) if arguments is None else {"name": name, "arguments": arguments}
        )
        observation, reward, terminated, truncated, info = self._env.step(action)
        if self._final_info is None:  # the episode's return: shaped terms are paid per step
            self._reward += float(reward)
            if terminated or truncated:
                self._final_info = info
        if not info.get("action", {}).get("valid", True):
            raise _error(observation)
        return observation

    def _close(self) -> None:
        """Release the environment's episode database."""
        self._env.close()


def _counterpart_method(counterpart: str) -> Callable[..., str]:
    """``ask_<counterpart>(message)``: a plain message to the simulated counterpart."""

    def method(self: _TRLEnvironment, message: str) -> str:
        if not isinstance(message, str) or not message.strip():
            raise ToolCallError("message must be a non-empty string", kind="invalid_arguments")
        return self._call("", None, message)

    method.__name__ = f"ask_{counterpart}"
    method.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
            inspect.Parameter("message", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=str),
        ],
        return_annotation=str,
    )
    method.__annotations__ = {"message": str, "return": str}
    method.__doc__ = (
        f"Send a plain message to the {counterpart} and return the reply: ask for details the "
        f"tools cannot give (such as the line number) or for approval of a change.\n\n"
        f"Args:\n    message: What to say to the {counterpart}.\n"
    )
    return method


def _error(observation: str) -> ToolCallError:
    """The ToolCallError of an error observation ``{"error": {"type", "message"}}``."""
    try:
        error = json.loads(observation)["error"]
        return ToolCallError(str(error["message"]), kind=str(error["type"]))
    except (ValueError, KeyError, TypeError):
        return ToolCallError(observation, kind="error")


def trl_environment(
    env_id: str = "troubleshooting", *, curriculum: Curriculum | None = None, **env_kwargs: Any
) -> type:
    """A class for ``GRPOTrainer(environment_factory=...)`` over one telcoenv environment.

    Args:
        env_id: a name of :func:`telcoenv.list_envs` (``"troubleshooting"``,
            ``"beam_misalignment"``, ...) or a Gymnasium id (``"telcoenv/Troubleshooting-v0"``).
        curriculum: a :class:`telcoenv.curriculum.Curriculum` of the environment's domain:
            a row without ``intent`` plays the curriculum's task for its seed (intent, rung,
            language), and :func:`curriculum_reward` feeds the outcomes back. It lives in this
            process: each training process has its own.
        **env_kwargs: keyword arguments of :class:`telcoenv.env.TelcoEnv` (``lang``,
            ``reward``, ``max_steps``, ...); ``embedder`` defaults to ``None`` (no IRA/RA, no
            embedding model), so the default reward is SAS. With ``tool_format="compact"`` the
            tool methods' docstrings (the schemas TRL shows the model) are the compact ones;
            with ``tool_set="core"`` the class has methods for the core tools only. TRL lists
            a class's tools once, so a curriculum's rungs cannot change them per episode: on
            its core-tools rungs a distractor the model is shown is refused when called.

    The class has a no-argument ``__init__``, ``reset(**row) -> str``, ``get_reward() ->
    float`` and one method per tool of the catalogue, ``submit_resolution(intent, summary)``
    included, each returning the tool's JSON output and raising :class:`ToolCallError` with the
    environment's message when the call is refused or the episode has ended. Everything else is
    private. In TRL a turn without a tool call ends the rollout, so messages to the counterpart
    are a tool where the domain needs them: ``ask_customer(message)`` in customer care (only
    the customer knows their line number), which also makes ``require_approval=True``
    possible there. The network engineer's information is in the tools, so network classes have
    no such method and refuse ``require_approval=True``.
    """
    kwargs = {"embedder": None, **env_kwargs}
    gym_id = resolve_env_id(env_id)
    probe = telcoenv.make(gym_id, **kwargs)  # fails here on bad kwargs, and lists the tools
    try:
        domain = probe.unwrapped.domain
        compact = probe.unwrapped.tool_format == "compact"
        offered = domain.catalog.offered(probe.unwrapped.settings.tool_set)  # core: no distractor
        specs = {
            name: spec.compact() if compact else spec
            for name, spec in domain.catalog.tools.items()
            if name in offered
        }
    finally:
        probe.close()
    if curriculum is not None:
        _check_curriculum(curriculum, probe.unwrapped)
    if env_kwargs.get("require_approval") and not domain.counterpart_required:
        raise ValueError(
            f"require_approval=True needs messages to the {domain.counterpart}, which TRL "
            f"rollouts of {gym_id} cannot send"
        )
    clashes = sorted(n for n in specs if n in _RESERVED_NAMES or n.startswith("_"))
    if clashes:
        raise ValueError(f"tool names {clashes} clash with TRL's reserved or private names")
    class_name = "Telco" + gym_id.split("/", 1)[1].rsplit("-v", 1)[0]
    namespace: dict[str, Any] = {
        "__doc__": f"TRL environment over {gym_id} (built by telcoenv.integrations.trl).",
        "__module__": __name__,
        "_env_name": gym_id,
        "_env_kwargs": kwargs,
        "_tool_names": tuple(specs),
        "_curriculum": curriculum,
    }
    methods = {name: _tool_method(spec) for name, spec in specs.items()}
    if domain.counterpart_required:  # e.g. only the customer knows their line number
        methods[f"ask_{domain.counterpart}"] = _counterpart_method(domain.counterpart)
    for name, method in methods.items():
        method.__qualname__ = f"{class_name}.{name}"
        namespace[name] = method
    return type(class_name, (_TRLEnvironment,), namespace)


def _check_curriculum(curriculum: Curriculum, env: Any) -> None:
    """A curriculum fits the environment: its domain, and its intents if the env has one."""
    if curriculum.domain.name != env.domain.name:
        raise ValueError(
            f"the curriculum is of the {curriculum.domain.name} domain, the environment of "
            f"the {env.domain.name} domain"
        )
    fixed = env.fixed_intent
    if fixed is not None and curriculum.intents != [fixed.env_name]:
        raise ValueError(
            f"the environment plays only {fixed.env_name}; give the curriculum that intent "
            f"alone or use the domain's whole-taxonomy environment"
        )


# --- helpers for datasets and reward functions ----------------------------------------------------


def prompt_rows(environment: type, seeds: Iterable[int], **fields: Any) -> list[dict[str, Any]]:
    """Dataset rows for GRPOTrainer: the environment's system prompt and one ``seed`` per row.

    Each row is ``{"prompt": [system, user], "seed": seed, **fields}``. The user message is
    empty: TRL appends the statement that ``reset`` returns. ``fields`` (``lang``, ``intent``,
    ``blueprint``, ``sample_index``) are copied into every row; ``lang`` also picks the
    language of the system prompt.
    """
    seeds = list(seeds)
    instance = environment()
    try:
        env = instance._env.unwrapped
        # The fields checked as every row's reset will take them: a bad one fails here, not
        # in the middle of training (TRL does not catch what reset raises).
        instance.reset(seed=seeds[0] if seeds else 0, **fields)
        instructions = env.instructions(fields.get("lang", env.lang))
        # A split environment's rows name it; a test split's carry the canary (telcoenv.splits).
        marks = {"split": env.split} if env.split != "all" else {}
        if env.split == "test":
            marks["canary"] = CANARY
    finally:
        instance._close()
    return [
        {
            "prompt": [
                {"role": "system", "content": instructions},
                {"role": "user", "content": ""},
            ],
            "seed": int(seed),
            **fields,
            **marks,
        }
        for seed in seeds
    ]


def episode_info(environment: Any) -> dict[str, Any] | None:
    """The ``info`` of the step that ended the instance's episode, or ``None`` while it is open.

    It holds ``metrics`` (msc, eap, sas, ...), ``resolved`` and the episode ``trace``: use it in
    reward functions, which TRL calls with ``environments=[...]``.
    """
    return environment._final_info


def resolved_reward(environments: Sequence[Any], **_: Any) -> list[float]:
    """A TRL reward function: 1.0 where the episode ended with the fault verified fixed.

    ``info["resolved"]`` is checked on the simulated network's state; an open episode scores 0.
    """
    rewards = []
    for environment in environments:
        info = episode_info(environment)
        rewards.append(1.0 if info is not None and info.get("resolved") else 0.0)
    return rewards


def curriculum_reward(curriculum: Curriculum) -> Callable[..., list[float]]:
    """A TRL reward function that feeds the curriculum: 1.0 for a resolved episode, else 0.0,
    each episode of a curriculum task recorded once (:meth:`Curriculum.record`)."""

    def curriculum_resolved(environments: Sequence[Any], **_: Any) -> list[float]:
        rewards = resolved_reward(environments)
        for environment, reward in zip(environments, rewards, strict=True):
            task = getattr(environment, "_task", None)
            if task is not None:
                curriculum.record(task, reward)
                environment._task = None  # counted once
        return rewards

    return curriculum_resolved
