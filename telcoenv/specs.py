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
    # Infinity or NaN in a data file would only fail later, when an episode samples it.
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


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


class IntentModel(_Frozen):
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


class CareIntent(IntentModel):
    """A customer-care intent of the BSS domain: what the customer wants, the gold API chain
    (argument templates filled from the episode's data) and, for a question, the exact answer
    (a template of the episode's facts)."""

    domain: Literal["bss"]
    description: Bilingual
    customer: Bilingual  # the customer's opening message (a template)
    answer: str | None = None


class CareCustomer(_Frozen):
    """Who calls in a care blueprint: ranges are inclusive ``[min, max]``."""

    age: tuple[int, int]
    segment: Literal["consumer", "business"] = "consumer"
    plans: tuple[str, ...]  # the line's current plan, drawn uniformly
    family_size: tuple[int, int] = (1, 1)  # lines in the family group (1: none)
    data_use: tuple[float, float]  # monthly data use as a share of the plan's allowance


class CareBlueprint(_Frozen):
    """One scenario family of a customer-care intent: who calls and what is in their data.

    Every field is data the episode sampler draws from (see ``telcoenv.domains.bss.scenario``);
    a field left out plants nothing.
    """

    intent: str
    blueprint_id: str
    description: str
    customer: CareCustomer
    period: tuple[int, int] = (0, 0)  # the month concerned, in months before the latest bill
    roaming_bill: bool = False  # pay-as-you-go roaming on the period's bill (destinations)
    destinations: tuple[str, ...] = ()  # countries of the catalogue (the trip's or the bill's)
    trip_days_ahead: tuple[int, int] | None = None  # a trip starting this many days from today
    duplicate_invoice: bool = False  # the period's billing run fired twice
    failed_payment: bool = False  # the latest payment failed
    active_addons: tuple[str, ...] = ()  # one of them is active on the line
    data_need_gb: tuple[int, int] | None = None  # extra data the customer asks for
    budget_slack: tuple[float, float] | None = None  # budget above the cheapest fitting plan
    target_plans: tuple[str, ...] = ()  # the plan the customer asks to move to
    new_email: bool = False  # the customer gives a new email address


class Intent(IntentModel):
    """A troubleshooting intent of the taxonomy (one row of the paper's Table I)."""

    evidence: tuple[str, ...]
    description: Bilingual
    fault: Fault
    resolution: ResolutionTemplate


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
    domain: str = "network"  # the catalogue that loads it ("all": every domain's)
    # Parameters in the agent's own words (a ticket summary): argument accuracy skips them.
    free_text: tuple[str, ...] = ()

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
