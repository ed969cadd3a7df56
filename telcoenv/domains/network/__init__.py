"""The network-operations domain: the 20 troubleshooting intents of TelcoAgent-Bench."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from telcoenv.catalog import Catalog
from telcoenv.database import EpisodeDatabase
from telcoenv.domains import EpisodeSetup
from telcoenv.domains.network import engineer
from telcoenv.domains.network.alarms import raise_alarms
from telcoenv.domains.network.dynamics import key_kpis_recovered, recompute
from telcoenv.domains.network.kpis import COUPLINGS, background_kpis, kpi_definitions
from telcoenv.domains.network.loading import load_catalog, network_catalog
from telcoenv.domains.network.models import Blueprint, Intent
from telcoenv.domains.network.parameters import KPI_TO_CELL_PARAMETER, legal_values
from telcoenv.domains.network.sampling import SamplingPlan, compile_plan, sample_kpis
from telcoenv.domains.network.schema import network_schema
from telcoenv.domains.network.simulation import (
    EpisodeModel,
    observe_start,
    recovery,
    remeasure,
    start_model,
)
from telcoenv.domains.network.state import NetworkState
from telcoenv.domains.network.summaries import gold_summaries
from telcoenv.domains.network.tools import TOOLS, ToolContext
from telcoenv.domains.network.topology import (
    Fault,
    InitialNetwork,
    add_confounders,
    baseline_id,
    build_network,
    fault_of,
    fault_relation,
)
from telcoenv.domains.network.tuning import plant_decoy, plant_relation_decoy, tune
from telcoenv.domains.network.verification import unrelated_changes, verify
from telcoenv.errors import EpisodeOptionError
from telcoenv.specs import LANGUAGES, EventSpec, Language
from telcoenv.text import asks_for_approval
from telcoenv.tooling import Toolbox
from telcoenv.trace import EpisodeTrace

if TYPE_CHECKING:
    from telcoenv.domains.network.release import RescoreReport

INSTRUCTIONS = (
    "You are a network operations agent in a mobile operator's NOC. A network engineer reports a "
    "problem with the radio access network. Diagnose it with the tools: query the OSS, pull KPI "
    "time series, inspect coverage and neighbours, and apply or escalate a fix. Use only the tools "
    "the problem needs, in a sensible order. Tool results are JSON. A message without a tool call "
    "goes to the engineer, who can confirm the cell, the time window or approve a change.\n"
    "When you are done, call submit_resolution with the intent (the problem you identified) and a "
    "resolution summary: root cause, evidence, actions taken and follow-up. Write the summary in "
    "the engineer's language ({language}).{intent_list}"
)
# The same for small models with short contexts (tool_format="compact").
COMPACT_INSTRUCTIONS = (
    "You are a NOC agent. An engineer reports a radio network problem. Diagnose it with the "
    "tools (results are JSON) and apply or escalate a fix. Text without a tool call goes to the "
    "engineer (cell, time window, approval). Finish by calling the tool submit_resolution with "
    "the intent and a summary (root cause, evidence, actions) in {language}.{intent_list}"
)


def _render_changes(fix: dict[str, Any]) -> str:
    """``tilt_deg → 4``; a relation's offset ``neighbour_cio_db[NR-URB-MACRO-412] → 0``."""
    return ", ".join(
        f"{name}[{key}] → {item}" if isinstance(value, dict) else f"{name} → {value}"
        for name, value in fix.items()
        for key, item in (value.items() if isinstance(value, dict) else [(None, value)])
    )


class NetworkDomain:
    """Seeded network state, network tools and the bilingual engineer for a catalogue."""

    name = "network"
    counterpart = "engineer"
    taxonomy_env = "Troubleshooting"
    report_section = "benchmark"
    # guided: the published statements, which quote the telling KPIs; symptom: what users see;
    # noisy: that and a red herring planted in the network (see engineer.symptom_statement).
    difficulties = ("guided", "symptom", "noisy")
    counterpart_required = False  # the agent needs the counterpart's information to succeed
    instructions = INSTRUCTIONS
    compact_instructions = COMPACT_INSTRUCTIONS
    # An unknown id: where the valid ones are (feedback.next_step overrides).
    next_steps: ClassVar[dict[str, dict[str, str]]] = {
        "not_found": {
            "en": "Use the cell, cluster or slice id the engineer's report names (ask the engineer "
            "if it names none); oss_query on that cell lists its site, neighbours and slices.",
            "ar": "استخدم معرّف الخلية أو المجموعة أو الشريحة الوارد في بلاغ المهندس (واسأل المهندس "
            "إن لم يذكره)؛ واستدعاء oss_query على تلك الخلية يسرد موقعها وجيرانها وشرائحها.",
        }
    }

    #: How the network's KPIs come about: ``"blueprint"``, the blueprint's sample and a causal
    #: model around it (dynamics.py); ``"physical"``, the network model (model.py: radio,
    #: traffic, mobility, transport and slices, calibrated to the blueprint's level KPIs).
    MODELS = ("blueprint", "physical")
    #: The model of snapshots and traces taken before snapshots recorded it (it was the only
    #: default then).
    legacy_world_model = "blueprint"

    def __init__(self, catalog: Catalog | None = None, model: str = "physical") -> None:
        if model not in self.MODELS:
            raise EpisodeOptionError(f"model must be one of {list(self.MODELS)}, got {model!r}")
        self.model = model
        self.catalog = catalog or network_catalog()
        engineer.check_phrases(self.catalog.intents)
        self.toolbox = Toolbox(self.catalog.tools, TOOLS)
        kpis = kpi_definitions()
        grids = {kpi: legal_values(parameter) for kpi, parameter in KPI_TO_CELL_PARAMETER.items()}
        grids = {k: v for k, v in grids.items() if v is not None}
        # Compiled once: sampling plans are immutable and shared by every episode.
        self.plans: dict[str, SamplingPlan] = {
            b.blueprint_id: compile_plan(b, COUPLINGS, kpis.digits, grids)
            for family in self.catalog.blueprints.values()
            for b in family
        }

    @property
    def world_model(self) -> str:
        """The model, as every snapshot records it (:mod:`telcoenv.snapshot`)."""
        return self.model

    def load_catalog(
        self, intents: Any = None, blueprints: Any = None, tools: Any = None
    ) -> Catalog:
        """Load and validate a network data folder (``None``: the packaged file or folder)."""
        catalog = load_catalog(intents, blueprints, tools, known_kpis=kpi_definitions().kpis)
        engineer.check_phrases(catalog.intents)
        return catalog

    # --- optional capabilities (the CLI's ``generate`` and ``rescore``) -----------------------
    # Imported when used: the dataset drives environments (telcoenv.env), which drive domains,
    # and no episode needs either.

    def generate_dataset(
        self,
        out: str | Path,
        samples: int,
        seed: int,
        fmt: str,
        difficulty: str = "guided",
        split: str = "all",
    ) -> int:
        """Write the TelcoAgent-Bench dataset; the number of samples (json) or rows (jsonl)."""
        from telcoenv.domains.network.dataset import generate

        return generate(
            out,
            samples=samples,
            seed=seed,
            fmt=fmt,
            difficulty=difficulty,
            domain=self,
            split=split,
        )

    def rescore_release(
        self,
        release: str | Path,
        weights: str,
        *,
        check_blueprints: bool,
        warn: Callable[[str], None],
    ) -> tuple[int, RescoreReport]:
        """Re-score the predictions of a published TelcoAgent-Bench release: how many of its
        blueprints load as this domain's (0 unless ``check_blueprints``; ``warn`` reports each
        file repaired or skipped), and the report."""
        from telcoenv.domains.network import release as published

        loaded = published.load_release_blueprints(release, warn) if check_blueprints else []
        report = published.rescore(published.load_evaluations(release), weights=weights)
        return len(loaded), report

    def connect(self, url: str | None = None) -> EpisodeDatabase:
        """A network database for one environment: in memory, shared with the process's other
        environments (each episode under its own row id), unless ``url``."""
        return EpisodeDatabase(network_schema(), url, shared=True)

    def start_episode(
        self,
        intent: Intent,
        blueprint: Blueprint,
        rng: np.random.Generator,
        lang: Language,
        database: EpisodeDatabase,
        episode_id: str,
        difficulty: str = "guided",
    ) -> EpisodeSetup:
        sampled = sample_kpis(self.plans[blueprint.blueprint_id], blueprint.constraints, rng)
        background = background_kpis(
            sampled, blueprint.context.area, blueprint.context.cell_role, rng
        )
        initial = build_network(intent, blueprint, sampled, background, rng)
        fault = fault_of(initial, intent, sampled)
        if self.model == "physical":
            return self._start_physical(
                intent, blueprint, rng, lang, database, episode_id, difficulty, initial, fault
            )
        # The red herrings are planted in the network before the engineer talks of them.
        planted = add_confounders(initial, rng) if difficulty == "noisy" else None
        opening = self._opening(intent, blueprint, initial, sampled, lang, rng, difficulty, planted)
        state = NetworkState(database, initial, episode_id)
        return self._setup(intent, initial, fault, sampled, state, opening)

    def _start_physical(
        self,
        intent: Intent,
        blueprint: Blueprint,
        rng: np.random.Generator,
        lang: Language,
        database: EpisodeDatabase,
        episode_id: str,
        difficulty: str,
        initial: InitialNetwork,
        fault: Fault,
    ) -> EpisodeSetup:
        """An episode whose counters come from the network model: the red herrings are
        planted first (a busier neighbour is load the model carries), then the cluster is
        tuned, the model calibrated to the sample, a decoy tried, and what the OSS shows
        replaces the sample everywhere (the engineer quotes it, the verification judges
        against it)."""
        planted = add_confounders(initial, rng) if difficulty == "noisy" else None
        parameters = set(intent.fault.parameters)
        tune(initial, parameters, rng)
        model = start_model(initial, blueprint, fault, rng)
        plant_decoy(initial, model, parameters, rng)
        plant_relation_decoy(initial, model, parameters)
        observed = observe_start(initial, blueprint, fault, model)
        fault = replace(fault, sampled=observed)
        blueprint = self._model_alarms(initial, intent, blueprint, model, rng)
        opening = self._opening(
            intent, blueprint, initial, observed, lang, rng, difficulty, planted
        )
        state = NetworkState(database, initial, episode_id, model)
        return self._setup(intent, initial, fault, observed, state, opening)

    @staticmethod
    def _opening(
        intent: Intent,
        blueprint: Blueprint,
        initial: InitialNetwork,
        sampled: dict[str, float],
        lang: Language,
        rng: np.random.Generator,
        difficulty: str,
        planted: dict[str, str] | None,
    ) -> tuple[str, dict[str, str]]:
        """The engineer's opening statement of the tier, and the place and time it named."""
        if difficulty == "guided":
            return engineer.problem_statement(intent, blueprint, initial, sampled, lang, rng)
        return engineer.symptom_statement(intent, blueprint, initial, lang, rng, planted)

    def _setup(
        self,
        intent: Intent,
        initial: InitialNetwork,
        fault: Fault,
        sampled: dict[str, float],
        state: NetworkState,
        opening: tuple[str, dict[str, str]],
    ) -> EpisodeSetup:
        statement, said = opening
        values = self.gold_values(intent, initial, fault.fix)
        summaries = gold_summaries(intent, values, sampled)
        return EpisodeSetup(
            sampled, state, values, statement, summaries, truth=fault, counterpart_context=said
        )

    @staticmethod
    def _model_alarms(
        initial: InitialNetwork,
        intent: Intent,
        blueprint: Blueprint,
        model: EpisodeModel,
        rng: np.random.Generator,
    ) -> Blueprint:
        """Replace the generated fault alarm with the model's threshold-crossing alarms (the
        site housekeeping ones stay); the blueprint returned says whether the faulty object
        raised one, which is what the engineer reports."""
        backhaul = intent.fault.target == "backhaul"
        fault_object = initial.backhaul.link_id if backhaul else initial.serving.cell_id
        activated = blueprint.context.alarm
        housekeeping = [a for a in initial.alarms if a.name != intent.fault.alarm]
        raised = raise_alarms(initial, model, fault_object, activated, rng)
        initial.alarms = housekeeping + raised
        sources = {fault_object, initial.serving.cell_id}
        alarm = any(a.source in sources for a in raised)
        context = blueprint.context.model_copy(update={"alarm": alarm})
        return blueprint.model_copy(update={"context": context})

    def gold_values(
        self, intent: Intent, initial: InitialNetwork, fix: dict[str, Any]
    ) -> dict[str, Any]:
        """Values that fill the gold chain's argument templates (see intents.yaml)."""
        values = {
            "cell_id": initial.serving.cell_id,
            "cluster_id": initial.cluster_id,
            "window": initial.window,
            "slice_id": initial.fault_slice_id,
            "config_id": baseline_id(initial.serving.cell_id),
            "fix": fix,
            "changes": _render_changes(fix) or "no parameter change",
        }
        if intent.fault.target == "relation":
            values["neighbour_id"] = fault_relation(initial)[1]
        ticket = intent.resolution.ticket
        values["ticket_severity"] = ticket.severity if ticket else "minor"
        values["ticket_team"] = ticket.team if ticket else "ran_optimization"
        values["ticket_summary"] = (
            intent.resolution.root_cause.en.format_map(values)
            + " "
            + intent.resolution.corrective_action.en.format_map(values)
        )
        return values

    def asks_approval(self, message: str) -> bool:
        return asks_for_approval(message)

    def privileged(self, setup: EpisodeSetup, intent: Intent) -> dict[str, Any]:
        """The corrective change and the intent's root cause and action, filled, per language."""
        values = setup.gold_values
        return {
            "fix": dict(values["fix"]),
            "root_cause": {
                lang: intent.resolution.root_cause.in_lang(lang).format_map(values)
                for lang in LANGUAGES
            },
            "corrective_action": {
                lang: intent.resolution.corrective_action.in_lang(lang).format_map(values)
                for lang in LANGUAGES
            },
        }

    def verify(self, setup: EpisodeSetup, intent: Intent, trace: EpisodeTrace) -> dict[str, Any]:
        """The verified-resolution verdict on the episode's final state (JSON-ready)."""
        return verify(setup.state, setup.truth).model_dump()

    #: The intents' own event kinds (intents.yaml milestones and minefields).
    event_kinds = ("unrelated_change",)

    def event(self, event: EventSpec, setup: EpisodeSetup, trace: EpisodeTrace) -> bool:
        """Whether a network event happened: ``unrelated_change``, a change to a cell the
        engineer did not report (see :func:`unrelated_changes`)."""
        if event.event == "unrelated_change":
            return bool(unrelated_changes(setup.state, setup.truth))
        raise ValueError(f"the network domain has no event kind {event.event!r}")

    def changes(self, setup: EpisodeSetup) -> tuple[Any, ...]:
        """What the agent changed so far: the configuration diff and the tickets opened."""
        state = setup.state
        return (tuple(state.diff()), state.ticket_count())

    def tool_context(
        self, setup: EpisodeSetup, seed: Callable[[], list[int]], step: int
    ) -> ToolContext:
        state, fault = setup.state, setup.truth
        if state.model is not None:
            return ToolContext(state, seed, step, lambda: remeasure(state))
        return ToolContext(state, seed, step, lambda: recompute(state, fault))

    def prepare(self) -> None:
        """The one-time work of a process's first episode (the counterpart's routing
        prototypes), done before an episode is timed."""
        engineer.question_router().warm()

    def reply(
        self,
        setup: EpisodeSetup,
        blueprint: Blueprint,
        message: str,
        lang: Language,
        rng: np.random.Generator,
        *,
        ended: bool,
    ) -> str:
        state, fault = setup.state, setup.truth
        return engineer.reply(
            message,
            state.initial,
            blueprint,
            lang,
            rng,
            ended=ended,
            intent=fault.intent,
            recovered=lambda: all(
                (
                    recovery(state, fault) if state.model else key_kpis_recovered(state, fault)
                ).values()
            ),
            changed=lambda: bool(state.diff()),
            said=setup.counterpart_context,
        )

    def start_state(self, setup: EpisodeSetup) -> dict[str, Any]:
        """The network of an episode at its start as plain JSON-ready data (for the trace)."""
        initial = setup.state.initial
        serving = initial.serving
        return {
            "cluster_id": initial.cluster_id,
            "now": initial.now.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "window": initial.window,
            "baseline_config_id": baseline_id(serving.cell_id),
            "serving_cell": {
                "cell_id": serving.cell_id,
                "site_id": serving.site_id,
                "technology": serving.tech,
                "role": serving.role,
                "area": serving.area,
                "pci": serving.pci,
                "operational_state": serving.operational_state,
                "config": dict(serving.config),
            },
            "neighbours": [
                {
                    "cell_id": c.cell_id,
                    "pci": c.pci,
                    "distance_km": c.distance_km,
                    "prb_util": c.load,
                    # The serving cell's relation to the neighbour: its offset.
                    "cio_db": initial.relation_cio_db.get((serving.cell_id, c.cell_id), 0.0),
                }
                for c in initial.neighbours
            ],
            "slices": {
                s.slice_id: {"service_type": s.service_type, "policy": dict(s.policy)}
                for s in initial.slices.values()
            },
            "backhaul": {
                "link_id": initial.backhaul.link_id,
                "config": dict(initial.backhaul.config),
            },
            "alarms": [alarm.to_dict() for alarm in initial.alarms],
        }


@cache
def network_domain() -> NetworkDomain:
    """The packaged network domain, built once per process and shared by environments."""
    return NetworkDomain()
