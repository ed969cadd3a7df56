"""Typed, immutable models of what every domain's data files share: bilingual texts, gold
steps, the fields of an intent and tool specs.

A domain's own models extend these (``telcoenv.domains.<name>.models``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Language = Literal["en", "ar"]
LANGUAGES: tuple[Language, ...] = ("en", "ar")
#: How tools are offered to the agent: as written, or compact (see ToolSpec.openai).
ToolFormat = Literal["full", "compact"]
TOOL_FORMATS: tuple[ToolFormat, ...] = ("full", "compact")
#: The tools an episode offers: every tool, or the core tools only (no distractors).
ToolSet = Literal["all", "core"]
TOOL_SETS: tuple[ToolSet, ...] = ("all", "core")
#: What a hint after each step gives: nothing, the next gold step's tool, or its whole call.
Hints = Literal["none", "tool", "call"]
HINTS: tuple[Hints, ...] = ("none", "tool", "call")

# Words written in capitals inside env ids (BLERAnomaly rather than BlerAnomaly).
_ACRONYMS = {
    "dl": "DL",
    "ul": "UL",
    "prb": "PRB",
    "pci": "PCI",
    "sla": "SLA",
    "qos": "QoS",
    "hqos": "HQoS",
    "rlf": "RLF",
    "bler": "BLER",
    "ta": "TA",
    "ho": "HO",
}


def gym_name(env_name: str) -> str:
    """CamelCase name used in Gymnasium ids: ``bler_anomaly`` -> ``BLERAnomaly``."""
    return "".join(_ACRONYMS.get(part, part.capitalize()) for part in env_name.split("_"))


class FrozenModel(BaseModel):
    """The base of every data-file model: immutable, no unknown field, finite numbers."""

    # Infinity or NaN in a data file would only fail later, when an episode samples it.
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class Bilingual(FrozenModel):
    """A text in English and Modern Standard Arabic."""

    en: str
    ar: str

    def in_lang(self, lang: Language) -> str:
        return self.en if lang == "en" else self.ar


class Synonyms(FrozenModel):
    """An intent's other names, per language: documented synonyms, abbreviations and short
    forms that name it and no other intent (a diagnosis is judged by them too,
    :mod:`telcoenv.metrics.diagnosis`)."""

    en: tuple[str, ...] = ()
    ar: tuple[str, ...] = ()

    def in_lang(self, lang: Language) -> tuple[str, ...]:
        return self.en if lang == "en" else self.ar


class GoldStep(FrozenModel):
    """One step of a gold tool chain: a tool name and argument templates."""

    tool: str
    arguments: dict[str, Any]


class EventSpec(FrozenModel):
    """A milestone or a minefield of an intent (:mod:`telcoenv.events`): what happened in
    words, its kind, and for a call the tool and the argument values it must have."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    name: str = Field(min_length=3, max_length=120)
    event: str = Field(min_length=2, max_length=40)
    tool: str | None = None
    # Argument values the call must have (templates filled from the episode's values).
    arguments: dict[str, Any] = Field(default_factory=dict, alias="with")
    # A milestone the resolution needs (the evidence it rests on, the change that fixes it);
    # an optional one (a re-measurement) only earns its share of the required-steps credit.
    required: bool = True


class IntentModel(FrozenModel):
    """What every domain's intent has: the environment drives episodes with these fields alone.
    A domain's intent model extends it with its own (a fault, a customer's opening, ...)."""

    key: str
    env_name: str
    category: str
    label: Bilingual
    gold_chain: tuple[GoldStep, ...]
    synonyms: Synonyms = Synonyms()
    milestones: tuple[EventSpec, ...] = ()  # required (or credited) events
    minefields: tuple[EventSpec, ...] = ()  # forbidden events

    @property
    def gym_name(self) -> str:
        """CamelCase name used in the Gymnasium id, e.g. ``BeamMisalignment``."""
        return gym_name(self.env_name)

    @property
    def gold_tools(self) -> tuple[str, ...]:
        return tuple(step.tool for step in self.gold_chain)

    def show_lines(self) -> list[str]:
        """What ``telcoenv show`` prints of the intent below its labels; a domain's intent
        adds its own fields."""
        return [f"gold chain: {' -> '.join(self.gold_tools)}"]


class BlueprintModel(FrozenModel):
    """What every domain's blueprint has (a domain's blueprint model extends it)."""

    intent: str
    blueprint_id: str
    description: str = ""

    def show_lines(self) -> list[str]:
        """What ``telcoenv show`` prints of the blueprint below its id: its own fields."""
        return show_fields(self)


def show_fields(blueprint: Any) -> list[str]:
    """One line per field of a blueprint model other than its id, intent and description."""
    fields = blueprint.model_dump(exclude={"intent", "blueprint_id", "description"})
    return [f"  {field:<18} {value}" for field, value in fields.items()]


class ToolSpec(FrozenModel):
    """A tool's interface, loaded from its ``tools/<name>.json`` file."""

    name: str
    description: str
    parameters: dict[str, Any]
    kind: Literal["core", "distractor", "reserved"]
    effect: Literal["read", "write", "control"]
    approval: bool = False  # a change: gated when the counterpart must approve it
    domain: str = "network"  # the catalogue that loads it ("all": every domain's)
    # Parameters in the agent's own words (a ticket summary): argument accuracy skips them.
    free_text: tuple[str, ...] = ()
    # A spec of every domain: parameters only some domains offer (``answer``: customer care).
    domain_fields: dict[str, tuple[str, ...]] = {}
    # The tool in a few words: its description in the compact format (small models, short
    # prompts); the full description's first sentence when absent.
    summary: str = ""

    def for_domain(self, domain: str) -> ToolSpec:
        """The spec as ``domain`` offers it: without the parameters only other domains have."""
        dropped = {p for p, owners in self.domain_fields.items() if domain not in owners}
        if not dropped:
            return self
        parameters = dict(self.parameters)
        parameters["properties"] = {
            name: schema for name, schema in parameters["properties"].items() if name not in dropped
        }
        if "required" in parameters:
            parameters["required"] = [p for p in parameters["required"] if p not in dropped]
        return self.model_copy(update={"parameters": parameters})

    def openai(self, tool_format: ToolFormat = "full") -> dict[str, Any]:
        """The spec in OpenAI function-calling format: ``full`` as written, or ``compact``
        (:func:`compact_schema`: the summary and the parameters' names, types, enums and
        required list, for small models with short contexts)."""
        spec = self.compact() if tool_format == "compact" else self
        return {
            "type": "function",
            "function": {
                "name": spec.name,
                "description": spec.description,
                "parameters": spec.parameters,
            },
        }

    def compact(self) -> ToolSpec:
        """The spec as the compact format offers it: the summary (else the description's first
        sentence) and :func:`compact_schema` of the parameters."""
        return self.model_copy(
            update={
                "description": self.summary or _first_sentence(self.description),
                "parameters": compact_schema(self.parameters),
            }
        )


def compact_schema(schema: Mapping[str, Any], nested: bool = False) -> dict[str, Any]:
    """A JSON Schema cut to what a model needs to form a call: ``type`` (or a string ``enum``
    instead), ``items``, ``required``, the parameters without a default (an optional
    one with a default, ``detail``, is left out), the example of a parameter with a format
    (``e.g. "3h"``) as its description, the parameters of a nested object (a cell's
    configuration changes) as a list of names with their ranges (``tilt_deg 0..15``), and
    where an id comes from ("Customer id from get_customer"). Other bounds, patterns and prose
    are left to the error messages: the environment still validates every call against the
    full schema."""
    compact: dict[str, Any] = {}
    enum = schema.get("enum")
    if enum and all(isinstance(value, str) for value in enum):
        compact["enum"] = list(enum)
    elif "type" in schema:
        compact["type"] = schema["type"]
    # A format's short example ("3h"), never an id's: a small model copies an example id.
    example = _EXAMPLE.search(str(schema.get("description", ""))) if "pattern" in schema else None
    if example and len(example.group(1)) <= _SHORT_EXAMPLE:
        compact["description"] = "e.g. " + example.group(1)
    # Where an id comes from, never its example: without it a small model invents ids.
    source = _SOURCE.match(str(schema.get("description", "")))
    if source:
        compact["description"] = source.group(0)
    if "properties" in schema and nested:
        # "only ...": a small model otherwise sets every listed parameter. With the names alone
        # it guessed values too ("round_robin", 100 UEs per TTI): each name carries its range.
        compact["description"] = "only those to change: " + ", ".join(
            f"{name} {_value_range(name, sub)}".rstrip()
            for name, sub in schema["properties"].items()
        )
    elif "properties" in schema:
        # An optional parameter with a default (detail="full") is left out: the output says
        # when it was cut and how to ask for the rest.
        required = set(schema.get("required", ()))
        compact["properties"] = {
            name: compact_schema(sub, nested=True)
            for name, sub in schema["properties"].items()
            if name in required or "default" not in sub
        }
        if schema.get("required"):
            compact["required"] = list(schema["required"])
    if "items" in schema:
        compact["items"] = compact_schema(schema["items"], nested=True)
    return compact


def _value_range(name: str, schema: Mapping[str, Any]) -> str:
    """A parameter's values in few tokens (Qwen's tokenizer spends one per digit): ``0..15``,
    ``PF|RR|MAX_CI``, ``0|50|100`` (a short list), ``0..5120`` (a long one: the error message
    lists its values); nothing for a boolean, an unbounded number or a percentage's 0..100."""
    enum = schema.get("enum")
    if enum and (len(enum) <= _LISTED_VALUES or any(isinstance(v, str) for v in enum)):
        return "|".join(str(value) for value in enum)
    low, high = (min(enum), max(enum)) if enum else (schema.get("minimum"), schema.get("maximum"))
    if low is None or high is None or (name.endswith("_pct") and (low, high) == (0, 100)):
        return ""
    return f"{low}..{high}"


_LISTED_VALUES = 4  # a numeric enum up to this long is listed whole; longer ones cost tokens
_SHORT_EXAMPLE = 8  # characters, quotes included: "30m", "2026-08", never "966500000000"
_EXAMPLE = re.compile(r"e\.g\. (\"[^\"]+\")")
# "... from get_customer", "... from the customer": a tool (its name has an underscore) or a
# counterpart; "from boresight" is not a source.
_SOURCE = re.compile(
    r"[^.,]*?\bfrom (?:the (?:customer|engineer)|[a-z]+_[a-z_]+(?: or [a-z]+_[a-z_]+)*)"
)


def _first_sentence(text: str) -> str:
    match = re.match(r"(.+?[.!?])(?:\s|$)", text)
    return match.group(1) if match else text
