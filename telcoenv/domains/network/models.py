"""The network domain's data-file models: troubleshooting intents (fault, resolution) and
blueprints (context, priors, KPI sampling rules, fault overrides)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from telcoenv.specs import Bilingual, BlueprintModel, FrozenModel, IntentModel


class FaultParameter(FrozenModel):
    """A configuration parameter that is wrong in the intent's episodes.

    ``faulty`` is a ``[min, max]`` range or a list of choices; ``None`` means the current value
    comes from the blueprint's sampled KPI. ``healthy`` is the corrective value.
    """

    faulty: list[Any] | None = None
    healthy: Any


class Fault(FrozenModel):
    target: Literal["cell", "backhaul", "slice", "config"]
    alarm: str
    parameters: dict[str, FaultParameter]


class TicketTemplate(FrozenModel):
    team: str
    severity: Literal["critical", "major", "minor"]


class ResolutionTemplate(FrozenModel):
    root_cause: Bilingual
    corrective_action: Bilingual
    ticket_required: bool
    ticket: TicketTemplate | None = None


class Intent(IntentModel):
    """A troubleshooting intent of the taxonomy (one row of the paper's Table I)."""

    evidence: tuple[str, ...]
    description: Bilingual
    fault: Fault
    resolution: ResolutionTemplate

    def show_lines(self) -> list[str]:
        fault = f"fault: {self.fault.target} {dict(self.fault.parameters)}"
        return [self.description.en, *super().show_lines(), fault]


class KPIConstraint(FrozenModel):
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


class BlueprintContext(FrozenModel):
    area: Literal["urban", "suburban", "rural", "indoor", "stadium"]
    cell_role: Literal["macro", "micro", "pico"]
    tech: Literal["NR", "LTE"]
    time_window: str
    alarm: bool


class Blueprint(BlueprintModel):
    """One scenario family of an intent."""

    description: str
    notes: str = ""
    context: BlueprintContext
    priors: dict[str, dict[str, float]]
    constraints: dict[str, KPIConstraint]
    fault: dict[str, list[Any]] = Field(default_factory=dict)

    def show_lines(self) -> list[str]:
        lines = [f"context: {self.context.model_dump()}", f"priors: {self.priors}"]
        for kpi, rule in self.constraints.items():
            extra = f" {rule.dist}" if rule.dist != "uniform" else ""
            if rule.parent:
                extra += f" <- {rule.parent} ({rule.corr or f'slope {rule.slope:g}'})"
            lines.append(f"  {kpi:<26} [{rule.min:g}, {rule.max:g}]{extra}")
        return lines
