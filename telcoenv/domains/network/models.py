"""The network domain's data-file models: troubleshooting intents (fault, resolution) and
blueprints (context, priors, KPI sampling rules, fault overrides)."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field

from telcoenv.specs import Bilingual, BlueprintModel, FrozenModel, IntentModel


class FaultParameter(FrozenModel):
    """A configuration parameter that is wrong in the intent's episodes.

    ``faulty`` is a ``[min, max]`` range or a list of choices; ``None`` means the current value
    comes from the blueprint's sampled KPI. ``healthy`` is the corrective value; ``accept``
    what an operations centre accepts as the cause removed (a ``[min, max]`` range or a list
    of choices, as ``faulty``), where the network model judges fixes by their effect.
    """

    faulty: list[Any] | None = None
    healthy: Any
    accept: list[Any] | None = None

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` is inside the ``accept`` band (the cause removed); ``False`` with
        no band (a shaper's or a PCI's acceptance depends on the episode)."""
        return self.accept is not None and in_band(value, list(self.accept))


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def in_band(value: Any, band: list[Any]) -> bool:
    """``value`` inside ``band``: a ``[min, max]`` range of numbers (``None``: unbounded on
    that side) or a list of choices."""
    if len(band) == 2 and all(_number(v) for v in band if v is not None) and _number(value):
        low, high = band
        return (low is None or value >= low) and (high is None or value <= high)
    return value in band


class Fault(FrozenModel):
    """What is wrong: where (``target``), the alarm it raises, the faulty parameters and
    ``context_kpis``: KPIs the intent's blueprints sample that the fault does not cause (geometry,
    load, neighbours, the environment). The fix leaves them where they were sampled, and the
    engineer quotes them after the symptoms, never as the complaint's key figures."""

    target: Literal["cell", "backhaul", "slice", "config", "relation"]
    alarm: str
    parameters: dict[str, FaultParameter]
    context_kpis: tuple[str, ...] = ()


class TicketTemplate(FrozenModel):
    team: str
    severity: Literal["critical", "major", "minor"]


class ResolutionTemplate(FrozenModel):
    root_cause: Bilingual
    corrective_action: Bilingual
    ticket_required: bool
    ticket: TicketTemplate | None = None


#: Width of a ``telcoenv show`` line: a longer causality text is shown by its first sentence.
SHOW_WIDTH = 100
# A sentence ends at . ! or ? before a capital letter; "e.g." and "i.e." do not end one, nor does
# "(ref. 2.10)" (a digit follows).
_SENTENCE_END = re.compile(r"(?<=[.!?])(?<!e\.g\.)(?<!i\.e\.)\s+(?=[A-Z])")


def sentences(text: str) -> list[str]:
    """The sentences of an English text (see ``_SENTENCE_END``)."""
    return [part for part in _SENTENCE_END.split(" ".join(text.split())) if part]


class Intent(IntentModel):
    """A troubleshooting intent of the taxonomy (one row of the paper's Table I).

    ``causality`` is the engineering reasoning behind the intent, in English: how the fault
    produces the symptoms the blueprints sample, why the fix cures them and which symptom it
    would not cure, citing the domain reference's sections."""

    evidence: tuple[str, ...]
    description: Bilingual
    causality: str
    fault: Fault
    resolution: ResolutionTemplate

    def show_lines(self) -> list[str]:
        fault = f"fault: {self.fault.target} {dict(self.fault.parameters)}"
        causality = "causality: " + " ".join(self.causality.split())
        if len(causality) + 2 > SHOW_WIDTH:  # show indents each line by two spaces
            causality = "causality: " + sentences(self.causality)[0]
        lines = [self.description.en, *super().show_lines(), fault, causality]
        if self.fault.context_kpis:
            lines.append(f"not moved by the fix: {', '.join(self.fault.context_kpis)}")
        return lines


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
