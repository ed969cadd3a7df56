"""Typed, immutable models of what every domain's data files share: bilingual texts, gold
steps, the fields of an intent and tool specs.

A domain's own models extend these (``telcoenv.domains.<name>.models``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

Language = Literal["en", "ar"]
LANGUAGES: tuple[Language, ...] = ("en", "ar")

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


class GoldStep(FrozenModel):
    """One step of a gold tool chain: a tool name and argument templates."""

    tool: str
    arguments: dict[str, Any]


class IntentModel(FrozenModel):
    """What every domain's intent has: the environment drives episodes with these fields alone.
    A domain's intent model extends it with its own (a fault, a customer's opening, ...)."""

    key: str
    env_name: str
    category: str
    label: Bilingual
    gold_chain: tuple[GoldStep, ...]

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

    def openai(self) -> dict[str, Any]:
        """The spec in OpenAI function-calling format."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }
