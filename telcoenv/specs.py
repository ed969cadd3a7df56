"""Typed, immutable models of telcoenv's data files: intents, blueprints and tool specs."""

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


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Bilingual(_Frozen):
    """A text in English and Modern Standard Arabic."""

    en: str
    ar: str

    def in_lang(self, lang: Language) -> str:
        return self.en if lang == "en" else self.ar


class GoldStep(_Frozen):
    """One step of a gold tool chain: a tool name and argument templates."""

    tool: str
    arguments: dict[str, Any]


class FaultParameter(_Frozen):
    """A configuration parameter that is wrong in the intent's episodes.

    ``faulty`` is a ``[min, max]`` range or a list of choices; ``None`` means the current value
    comes from the blueprint's sampled KPI. ``healthy`` is the corrective value.
    """

    faulty: list[Any] | None = None
    healthy: Any


class Fault(_Frozen):
    target: Literal["cell", "backhaul", "slice", "config"]
    alarm: str
    parameters: dict[str, FaultParameter]


class TicketTemplate(_Frozen):
    team: str
    severity: Literal["critical", "major", "minor"]


class ResolutionTemplate(_Frozen):
    root_cause: Bilingual
    corrective_action: Bilingual
    ticket_required: bool
    ticket: TicketTemplate | None = None


class CareIntent(_Frozen):
    """A customer-care intent of the BSS domain: what the customer wants, the gold API chain
    (argument templates filled from the episode's data) and, for a question, the exact answer
    (a template of the episode's facts)."""

    key: str
    domain: Literal["bss"]
    env_name: str
    category: str
    label: Bilingual
    description: Bilingual
    customer: Bilingual  # the customer's opening message (a template)
    gold_chain: tuple[GoldStep, ...]
    answer: str | None = None

    @property
    def gold_tools(self) -> list[str]:
        return [step.tool for step in self.gold_chain]


class Intent(_Frozen):
    """A troubleshooting intent of the taxonomy (one row of the paper's Table I)."""

    key: str
    env_name: str
    category: str
    evidence: tuple[str, ...]
    label: Bilingual
    description: Bilingual
    gold_chain: tuple[GoldStep, ...]
    fault: Fault
    resolution: ResolutionTemplate

    @property
    def gym_name(self) -> str:
        """CamelCase name used in the Gymnasium id, e.g. ``BeamMisalignment``."""
        return gym_name(self.env_name)

    @property
    def gold_tools(self) -> tuple[str, ...]:
        return tuple(step.tool for step in self.gold_chain)


class KPIConstraint(_Frozen):
    """Sampling rule of one KPI inside a blueprint (the paper's guardrail: ``min <= v <= max``)."""

    min: float
    max: float
    dist: Literal["uniform", "triangular", "mixture"] = "uniform"
    mode: float | None = None
    # mixture: with probability p_hi a value in [hi_min, hi_max], else in [lo_min, lo_max]
    p_hi: float | None = None
    hi_min: float | None = None
    hi_max: float | None = None
    lo_min: float | None = None
    lo_max: float | None = None
    depends_on: str | None = None
    corr: Literal["positive", "negative"] | None = None
    strength: float = 0.75
    corr_with: str | None = None
    slope: float | None = None

    @property
    def parent(self) -> str | None:
        return self.depends_on or self.corr_with


class BlueprintContext(_Frozen):
    area: Literal["urban", "suburban", "rural", "indoor", "stadium"]
    cell_role: Literal["macro", "micro", "pico"]
    tech: Literal["NR", "LTE"]
    time_window: str
    alarm: bool


class Blueprint(_Frozen):
    """One scenario family of an intent."""

    intent: str
    blueprint_id: str
    description: str
    notes: str = ""
    context: BlueprintContext
    priors: dict[str, dict[str, float]]
    constraints: dict[str, KPIConstraint]
    fault: dict[str, list[Any]] = {}


class ToolSpec(_Frozen):
    """A tool's interface, loaded from its ``tools/<name>.json`` file."""

    name: str
    description: str
    parameters: dict[str, Any]
    kind: Literal["core", "distractor", "reserved"]
    effect: Literal["read", "write", "control"]
    approval: bool = False  # changes the network: gated when the engineer must approve
    domain: Literal["network", "bss"] = "network"  # the catalogue that loads it

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
