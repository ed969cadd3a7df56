"""The starting network of one episode: serving cell, neighbours, slices, backhaul, alarms.

:func:`build_network` turns a sampled scenario into an :class:`InitialNetwork` whose
configuration carries the intent's fault. It is loaded into the episode's database (see
``state.py``) and kept as the starting state that the verification diffs the final state
against. The corrective values (the gold fix) are derived here from the intent's ``fault`` entry
in intents.yaml.
"""

from __future__ import annotations

import bisect
import datetime as dt
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from telcoenv.domains.network.kpis import background_kpis, kpi_definitions
from telcoenv.domains.network.models import Blueprint, Intent
from telcoenv.domains.network.parameters import (
    KPI_TO_CELL_PARAMETER,
    KPI_TO_SLICE_POLICY,
    PROFILE,
    SLICE_POLICY,
    change_schemas,
    legal_values,
    parse_window,
)

AREA_CODE = {"urban": "URB", "suburban": "SUB", "rural": "RUR", "indoor": "IND", "stadium": "STD"}
# Identifiers: [low, high) of the numbers drawn with the episode's generator. The all-zero ones
# are reserved for examples (the tool specs' NR-URB-MACRO-000, CL-URB-000, SL-EMBB-00 and
# CFG-NR-URB-MACRO-000-BASELINE), so that an example never names an episode's object.
CELL_NUMBERS = (100, 1000)  # cell <tech>-<area>-<role>-<n> (no leading zero); site S0<n>
CLUSTER_NUMBERS = (1, 100)  # cluster CL-<area>-<nn>, zero-padded: never 000
SLICE_NUMBER = "01"  # slice SL-<service>-01 (one slice per service type; 00 is the example)
_NEIGHBOUR_KM = {
    "urban": (0.4, 1.3),
    "suburban": (1.0, 3.0),
    "rural": (3.0, 10.0),
    "indoor": (0.05, 0.2),
    "stadium": (0.1, 0.45),
}
_BAND = {
    "macro": "n78 (3.5 GHz, 100 MHz)",
    "micro": "n78 (3.5 GHz, 40 MHz)",
    "pico": "n78 (3.5 GHz, 20 MHz)",
}
_BACKHAUL_MBPS = {"macro": 1000.0, "micro": 500.0, "pico": 200.0}
_HOURS = {
    "peak_morning": (7, 9),
    "peak_evening": (18, 21),
    "shoulder": (10, 16),
    "off_peak": (22, 23),
    "night": (1, 5),
    "event_pre": (17, 18),
    "event_live": (19, 21),
    "event_post": (22, 23),
}
_UNRELATED_ALARMS = (
    "Fan Speed Abnormal",
    "Battery Discharge Test Due",
    "Door Intrusion (cabinet)",
    "NTP Server Unreachable",
)

# Where each area's clusters lie (site coordinates are offsets from the serving site).
_ANCHOR = {
    "urban": (24.7136, 46.6753),
    "suburban": (24.8210, 46.7420),
    "rural": (25.3860, 46.1310),
    "indoor": (24.6900, 46.6850),
    "stadium": (24.7890, 46.8390),
}
_KM_PER_DEGREE = 111.32
# Parameters a configuration drift may touch (CONFIG_MISMATCH).
_DRIFTABLE = (
    "tilt_deg",
    "tx_power_dbm",
    "a3_offset_db",
    "hysteresis_db",
    "ttt_ms",
    "cio_db",
    "max_ue_per_tti",
    "prb_reservation_pct",
    "mlb_threshold_pct",
    "olla_bler_target_pct",
    "t310_ms",
    "hqos_priority_weight_pct",
    "beam_azimuth_offset_deg",
)


@dataclass(slots=True)
class Cell:
    cell_id: str
    site_id: str
    tech: str
    role: str
    area: str
    band: str
    pci: int
    azimuth_deg: int
    distance_km: float
    config: dict[str, Any]
    load: float
    kpi_seed: int
    latitude: float
    longitude: float
    position_km: tuple[float, float]  # east and north of the serving site
    measured: dict[str, float] | None = None  # the serving cell's; a neighbour's come later
    operational_state: str = "ENABLED"


def derived_kpis(load: float, area: str, role: str, kpi_seed: int) -> dict[str, float]:
    """A neighbour's KPIs, derived from its load with its own seed (collected on first request:
    deriving them for every neighbour at reset would cost more than the rest of the reset)."""
    derived = background_kpis({"PRB_util": load}, area, role, np.random.default_rng(kpi_seed))
    return {"PRB_util": load, **derived}


def _site_position(area: str, x_km: float, y_km: float) -> tuple[float, float]:
    latitude, longitude = _ANCHOR[area]
    return (
        round(latitude + y_km / _KM_PER_DEGREE, 6),
        round(longitude + x_km / (_KM_PER_DEGREE * math.cos(math.radians(latitude))), 6),
    )


def distance_km(a: Cell, b: Cell) -> float:
    """Distance between two cells' sites, in the cluster's plane."""
    return round(math.dist(a.position_km, b.position_km), 2)


@dataclass(slots=True)
class Slice:
    slice_id: str
    service_type: str
    policy: dict[str, Any]
    kpis: dict[str, float]


@dataclass(slots=True)
class BackhaulLink:
    link_id: str
    site_id: str
    capacity_mbps: float
    config: dict[str, Any]
    kpis: dict[str, float]


def new_alarm_id(rng: np.random.Generator, taken: Iterable[Alarm]) -> str:
    """A drawn ``ALM-nnnnnn`` id that none of ``taken`` has (an episode's ids are unique: the
    database keys alarms by them)."""
    used = {alarm.alarm_id for alarm in taken}
    while True:
        candidate = f"ALM-{int(rng.integers(100000, 999999))}"
        if candidate not in used:
            return candidate


@dataclass(slots=True)
class Alarm:
    alarm_id: str
    source: str
    name: str
    severity: str
    raised_at: str

    def to_dict(self) -> dict[str, str]:
        return {
            "alarm_id": self.alarm_id,
            "source": self.source,
            "name": self.name,
            "severity": self.severity,
            "raised_at": self.raised_at,
        }


@dataclass(slots=True)
class InitialNetwork:
    """The network of one episode as generated, before the agent acts (the starting state)."""

    cluster_id: str
    serving: Cell
    neighbours: list[Cell]
    slices: dict[str, Slice]
    backhaul: BackhaulLink
    alarms: list[Alarm]
    baselines: dict[str, tuple[str, dict[str, Any]]]  # config_id -> (cell_id, parameters)
    kpi_bounds: dict[str, tuple[float, float]]  # blueprint ranges of the serving cell's KPIs
    now: dt.datetime
    window: str
    fault_slice_id: str
    #: Each neighbour relation's cell individual offset (dB), by (cell id, neighbour id): what
    #: the cell's UEs add to that neighbour's measurement in event A3 (TS 38.331 Ocn; the
    #: relation's cellIndividualOffset of TS 28.541).
    relation_cio_db: dict[tuple[str, str], float] = field(default_factory=dict)

    @property
    def cells(self) -> list[Cell]:
        return [self.serving, *self.neighbours]

    def relation_pairs(self) -> list[tuple[Cell, Cell, float]]:
        """The neighbour relations (cell, neighbour, km): the serving cell and each neighbour
        relate both ways; a neighbour also relates to the two nearest other neighbours (its
        own neighbour list within the cluster)."""
        serving, neighbours = self.serving, self.neighbours
        by_id = {cell.cell_id: cell for cell in neighbours}
        pairs = [(serving, n, n.distance_km) for n in neighbours]
        pairs += [(n, serving, n.distance_km) for n in neighbours]
        for cell in neighbours:
            others = sorted((distance_km(cell, o), o.cell_id) for o in neighbours if o is not cell)
            pairs += [(cell, by_id[other], km) for km, other in others[:2]]
        return pairs

    def configuration(self) -> dict[str, dict[str, Any]]:
        """Every configurable value, per object (``"cell:<id>"``, ``"slice:<id>"``,
        ``"backhaul:<id>"``, ``"relation:<cell id>-><neighbour id>"``): what the verification
        diffs the final state against."""
        values = {
            f"cell:{cell.cell_id}": {
                "pci": cell.pci,
                "azimuth_deg": cell.azimuth_deg,
                **cell.config,
            }
            for cell in self.cells
        }
        for network_slice in self.slices.values():
            values[f"slice:{network_slice.slice_id}"] = dict(network_slice.policy)
        values[f"backhaul:{self.backhaul.link_id}"] = dict(self.backhaul.config)
        for (cell_id, neighbour_id), cio in self.relation_cio_db.items():
            values[f"relation:{relation_id(cell_id, neighbour_id)}"] = {"cio_db": cio}
        return values


def relation_id(cell_id: str, neighbour_id: str) -> str:
    """The id of a cell's relation to a neighbour (its configuration owner is
    ``"relation:<id>"``)."""
    return f"{cell_id}->{neighbour_id}"


def relation_cells(relation: str) -> tuple[str, str]:
    """(cell id, neighbour id) of a relation id."""
    cell_id, _, neighbour_id = relation.partition("->")
    return cell_id, neighbour_id


def owner_cell(owner: str) -> str | None:
    """The cell a configuration owner belongs to: a cell's own, a relation's cell (a relation
    is its cell's configuration); None for a link or a slice."""
    kind, _, name = owner.partition(":")
    if kind == "relation":
        return relation_cells(name)[0]
    return name if kind == "cell" else None


class FixSetting(NamedTuple):
    """One configuration value a fix sets: the intent's fault parameter, the configuration
    owner and that owner's parameter, and the corrective value."""

    name: str
    owner: str
    parameter: str
    value: Any


def fix_settings(
    target: str, fix: Mapping[str, Any], serving_id: str, link_id: str, slice_id: str
) -> list[FixSetting]:
    """Where a fault's corrective values go: the serving cell's (a drifted configuration's
    too), its link's, the faulty slice's parameters, or the offsets of the serving cell's
    relations (``{neighbour id: dB}``)."""
    if target == "relation":
        return [
            FixSetting(name, f"relation:{relation_id(serving_id, neighbour)}", "cio_db", value)
            for name, offsets in fix.items()
            for neighbour, value in offsets.items()
        ]
    owner = fault_owner(target, serving_id, link_id, slice_id)
    return [FixSetting(name, owner, name, value) for name, value in fix.items()]


def fault_owner(target: str, serving_id: str, link_id: str, slice_id: str) -> str:
    """The configuration owner of a cell, link, slice or drifted-configuration fault."""
    return {
        "cell": f"cell:{serving_id}",
        "config": f"cell:{serving_id}",
        "backhaul": f"backhaul:{link_id}",
        "slice": f"slice:{slice_id}",
    }[target]


def baseline_id(cell_id: str) -> str:
    """The id of a cell's approved configuration."""
    return f"CFG-{cell_id}-BASELINE"


def _draw_faulty(parameter: str, choices: list[Any], rng: np.random.Generator) -> Any:
    """Draw a faulty value: a [min, max] range of a continuous parameter, else a choice."""
    schema = change_schemas().get(parameter, {})
    numeric = schema.get("type") in ("number", "integer") and "enum" not in schema
    if numeric and len(choices) == 2 and all(isinstance(c, int | float) for c in choices):
        low, high = choices
        if schema["type"] == "integer":
            return int(rng.integers(low, high + 1))
        step = schema.get("multipleOf", 0.5)
        return round(round(float(rng.uniform(low, high)) / step) * step, 6)
    return choices[int(rng.integers(len(choices)))]


def _episode_time(blueprint: Blueprint, rng: np.random.Generator) -> tuple[str, dt.datetime]:
    prior = blueprint.priors.get("event_phase") or blueprint.priors.get("time_of_day") or {}
    names = sorted(prior)
    phase = "shoulder"
    if names:
        cumulative = list(itertools.accumulate(prior[n] for n in names))
        phase = names[bisect.bisect_right(cumulative, rng.random() * cumulative[-1])]
    low, high = _HOURS.get(phase, (10, 16))
    start = dt.datetime(2026, 1, 1, tzinfo=dt.UTC) + dt.timedelta(days=int(rng.integers(0, 365)))
    now = start.replace(hour=int(rng.integers(low, high + 1)), minute=5 * int(rng.integers(0, 12)))
    return phase, now


def _traffic(blueprint: Blueprint) -> str:
    mix = blueprint.priors.get("traffic_mix", {"eMBB": 1.0})
    return max(sorted(mix), key=lambda k: mix[k])


def _new_cell(
    prefix: str,
    number: int,
    site: str,
    area: str,
    role: str,
    tech: str,
    pci: int,
    azimuth: int,
    distance: float,
    load: float,
    kpi_seed: int,
) -> Cell:
    cell = Cell(
        cell_id=f"{prefix}-{number}",
        site_id=site,
        tech=tech,
        role=role,
        area=area,
        band=_BAND[role],
        pci=pci,
        azimuth_deg=azimuth,
        distance_km=round(distance, 2),
        config={**PROFILE[role]},
        load=round(load, 2),
        kpi_seed=kpi_seed,
        latitude=0.0,
        longitude=0.0,
        position_km=(0.0, 0.0),
    )
    # Bearing from the site number (golden angle): places sites without drawing from rng.
    bearing = math.radians((number * 137.508) % 360)
    cell.position_km = (distance * math.sin(bearing), distance * math.cos(bearing))
    cell.latitude, cell.longitude = _site_position(area, *cell.position_km)
    return cell


def _neighbours(
    serving: Cell, prefix: str, used: set[int], sampled: dict[str, float], rng: np.random.Generator
) -> list[Cell]:
    count = int(rng.integers(4, 8))
    low, high = _NEIGHBOUR_KM[serving.area]
    mean_km = sampled.get("neighbor_distance_km") or sampled.get("intersite_distance_km")
    if mean_km:
        low, high = mean_km * 0.7, mean_km * 1.3
    loads = rng.uniform(0.25, 0.7, count)
    if "neighbor_avg_PRB_util" in sampled:
        loads = np.clip(loads - loads.mean() + sampled["neighbor_avg_PRB_util"], 0.05, 0.99)
    own = int(serving.cell_id.rsplit("-", 1)[1])
    numbers = _distinct(rng, *CELL_NUMBERS, count, {own})
    pcis = _distinct(rng, 0, 1008, count, used)
    used.update(pcis)
    azimuths = rng.integers(0, 360, count).tolist()
    distances = rng.uniform(low, high, count).tolist()
    seeds = rng.integers(2**32, size=count).tolist()
    load_values = loads.tolist()
    cells = [
        _new_cell(
            prefix,
            number,
            f"S{number:04d}",
            serving.area,
            serving.role,
            serving.tech,
            pcis[i],
            azimuths[i],
            distances[i],
            load_values[i],
            seeds[i],
        )
        for i, number in enumerate(numbers)
    ]
    cells.sort(key=lambda c: c.distance_km)
    return cells


def _distinct(
    rng: np.random.Generator, low: int, high: int, count: int, exclude: set[int]
) -> list[int]:
    """``count`` distinct integers in ``[low, high)`` outside ``exclude`` (one vector draw)."""
    chosen: list[int] = []
    while len(chosen) < count:
        for value in rng.integers(low, high, count + 4).tolist():
            if value not in exclude and value not in chosen:
                chosen.append(value)
    return chosen[:count]


def free_pci(pcis: Iterable[int], nearest: Sequence[int]) -> int:
    """Lowest PCI not in ``pcis``, outside the mod-3 group of the two ``nearest`` neighbours."""
    used = set(pcis)
    avoid = {pci % 3 for pci in nearest[:2]}
    candidates = [p for p in range(1008) if p not in used]
    preferred = [p for p in candidates if p % 3 not in avoid]
    return (preferred or candidates)[0]


def _apply_fault(
    state: InitialNetwork,
    intent: Intent,
    blueprint: Blueprint,
    sampled: dict[str, float],
    rng: np.random.Generator,
) -> None:
    fault = intent.fault
    if fault.target == "config":
        _drift_configuration(state, int(sampled.get("mismatch_count", 3)), rng)
        return
    for name, parameter in fault.parameters.items():
        choices = blueprint.fault.get(name, parameter.faulty)
        if name == "operational_state":
            state.serving.operational_state = choices[int(rng.integers(len(choices)))]
        elif name == "pci":
            _inject_pci_conflict(state)
        elif choices is None:  # the blueprint's sampled read-out already set the faulty value
            continue  # (outside the accepted band: the catalogue refuses a range that reaches it)
        elif fault.target == "slice":
            state.slices[state.fault_slice_id].policy[name] = _draw_faulty(name, choices, rng)
        elif fault.target == "backhaul":
            state.backhaul.config[name] = _draw_faulty(name, choices, rng)
        elif fault.target == "relation":
            state.relation_cio_db[fault_relation(state)] = _draw_faulty(name, choices, rng)
        else:
            state.serving.config[name] = _draw_faulty(name, choices, rng)


def fault_relation(state: InitialNetwork) -> tuple[str, str]:
    """The relation a relation fault is on: the serving cell's to its nearest neighbour."""
    return state.serving.cell_id, state.neighbours[0].cell_id


def _inject_pci_conflict(state: InitialNetwork) -> None:
    """The nearest neighbour reuses the serving PCI: a collision between the two, and a confusion
    for every cell that neighbours both (it cannot tell them apart as handover targets). A new
    PCI for the serving cell clears both; a confusion between two other neighbours would not
    be cleared by it, so none is planted."""
    state.neighbours[0].pci = state.serving.pci


def _drift_configuration(state: InitialNetwork, count: int, rng: np.random.Generator) -> None:
    schemas = change_schemas()
    config = state.serving.config
    for name in rng.choice(_DRIFTABLE, size=min(count, len(_DRIFTABLE)), replace=False):
        name = str(name)
        legal = legal_values(name)
        if legal:
            options = [v for v in legal if v != config[name]]
            config[name] = options[int(rng.integers(len(options)))]
        else:
            schema = schemas[name]
            shift = float(rng.uniform(0.15, 0.4)) * (schema["maximum"] - schema["minimum"])
            value = config[name] + (shift if rng.random() < 0.5 else -shift)
            value = min(max(value, schema["minimum"]), schema["maximum"])
            if value == config[name]:
                value = schema["minimum"] if value == schema["maximum"] else schema["maximum"]
            config[name] = round(value) if schema["type"] == "integer" else round(value, 1)


def _alarms(
    state: InitialNetwork, intent: Intent, blueprint: Blueprint, rng: np.random.Generator
) -> list[Alarm]:
    alarms: list[Alarm] = []
    span = parse_window(blueprint.context.time_window).total_seconds() / 60

    def raised() -> str:
        minutes = int(rng.integers(5, max(6, int(span))))
        return (state.now - dt.timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")

    if blueprint.context.alarm:
        source = (
            state.backhaul.link_id if intent.fault.target == "backhaul" else state.serving.cell_id
        )
        severity = intent.resolution.ticket.severity if intent.resolution.ticket else "major"
        alarms.append(
            Alarm(
                new_alarm_id(rng, alarms),
                source,
                intent.fault.alarm,
                severity,
                raised(),
            )
        )
    if rng.random() < 0.35:  # unrelated housekeeping noise on a neighbour's site
        neighbour = state.neighbours[int(rng.integers(len(state.neighbours)))]
        name = _UNRELATED_ALARMS[int(rng.integers(len(_UNRELATED_ALARMS)))]
        alarms.append(
            Alarm(
                new_alarm_id(rng, alarms),
                neighbour.site_id,
                name,
                "minor",
                raised(),
            )
        )
    return alarms


def _slices(serving: Cell, sampled: dict[str, float], fault_type: str) -> dict[str, Slice]:
    slice_kpis = {n: v for n, v in sampled.items() if kpi_definitions().kpis[n].family == "slice"}
    slices = {}
    for service, policy in SLICE_POLICY.items():
        slice_id = f"SL-{service.upper()}-{SLICE_NUMBER}"
        kpis = (
            slice_kpis
            if service == fault_type
            else {"slice_utilization": 40.0, "admission_denial_rate": 0.2}
        )
        policy = dict(policy)
        if service == fault_type:
            for kpi, key in KPI_TO_SLICE_POLICY.items():
                if kpi in sampled:
                    policy[key] = round(sampled[kpi])
        slices[slice_id] = Slice(slice_id, service, policy, dict(kpis))
    return slices


def build_network(
    intent: Intent,
    blueprint: Blueprint,
    sampled: dict[str, float],
    background: dict[str, float],
    rng: np.random.Generator,
) -> InitialNetwork:
    """Build the episode's network from its sampled KPIs; the intent's fault is injected."""
    context = blueprint.context
    _, now = _episode_time(blueprint, rng)
    prefix = f"{context.tech}-{AREA_CODE[context.area]}-{context.cell_role.upper()}"
    number = int(rng.integers(*CELL_NUMBERS))
    pci = int(sampled.get("pci_self", rng.integers(0, 1008)))
    load = next(
        (sampled[k] for k in ("PRB_util", "prb_util") if k in sampled),
        background.get("PRB_util", 0.4),
    )
    serving = _new_cell(
        prefix,
        number,
        f"S{number:04d}",
        context.area,
        context.cell_role,
        context.tech,
        pci,
        int(rng.integers(0, 360)),
        0.0,
        load,
        0,
    )
    for kpi, parameter in KPI_TO_CELL_PARAMETER.items():
        if kpi in sampled and parameter != "pci":
            serving.config[parameter] = sampled[kpi]
    serving.measured = {**background, **sampled}
    if "availability" in sampled and sampled["availability"] < 10:
        serving.operational_state = "DOWN"
    neighbours = _neighbours(serving, prefix, {pci}, sampled, rng)
    fault_type = "URLLC" if _traffic(blueprint) == "URLLC" else "eMBB"
    family = {n: kpi_definitions().kpis[n].family for n in sampled}
    link_kpis = {n: v for n, v in sampled.items() if family[n] == "backhaul"} or {
        "bh_util": 35.0,
        "bh_latency_ms": 4.0,
        "bh_packet_loss": 0.0,
    }
    capacity = _BACKHAUL_MBPS[context.cell_role]
    backhaul = BackhaulLink(
        f"BH-{serving.site_id}",
        serving.site_id,
        capacity,
        {"bh_rt_queue_weight_pct": 40, "bh_shaper_mbps": capacity},
        link_kpis,
    )
    state = InitialNetwork(
        cluster_id=f"CL-{AREA_CODE[context.area]}-{int(rng.integers(*CLUSTER_NUMBERS)):03d}",
        serving=serving,
        neighbours=neighbours,
        slices=_slices(serving, sampled, fault_type),
        backhaul=backhaul,
        alarms=[],
        baselines={},
        kpi_bounds={n: (c.min, c.max) for n, c in blueprint.constraints.items()},
        now=now,
        window=context.time_window,
        fault_slice_id=f"SL-{fault_type.upper()}-{SLICE_NUMBER}",
    )
    state.relation_cio_db = {
        (cell.cell_id, other.cell_id): 0.0 for cell, other, _ in state.relation_pairs()
    }
    # The approved baseline is the configuration before any drift: only CONFIG_MISMATCH differs.
    for cell in state.cells:
        state.baselines[baseline_id(cell.cell_id)] = (cell.cell_id, dict(cell.config))
    _apply_fault(state, intent, blueprint, sampled, rng)
    if intent.fault.target != "config":
        state.baselines[baseline_id(serving.cell_id)] = (
            serving.cell_id,
            dict(serving.config),
        )
    state.alarms = _alarms(state, intent, blueprint, rng)
    return state


def add_confounders(state: InitialNetwork, rng: np.random.Generator) -> dict[str, str]:
    """The noisy tier's red herrings, made real so that the tools show what the engineer says:
    the busiest neighbour carries more load than usual (a mild anomaly its KPIs follow), and a
    neighbouring site has an unrelated housekeeping alarm. Returns what the engineer may name
    (``neighbour_id``, ``alarm``). Called after the fault is injected, so the fault and its fix
    are the same as in the guided tier."""
    # Not a neighbour that is part of the fault (one sharing the serving cell's PCI).
    bystanders = [c for c in state.neighbours if c.pci != state.serving.pci] or state.neighbours
    busiest = max(bystanders, key=lambda cell: (cell.load, cell.cell_id))
    busiest.load = round(min(0.92, busiest.load + float(rng.uniform(0.12, 0.2))), 3)
    unrelated = [a for a in state.alarms if a.name in _UNRELATED_ALARMS]
    if not unrelated:
        site = state.neighbours[int(rng.integers(len(state.neighbours)))].site_id
        name = _UNRELATED_ALARMS[int(rng.integers(len(_UNRELATED_ALARMS)))]
        minutes = int(rng.integers(5, 50))
        raised = (state.now - dt.timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")
        unrelated = [Alarm(new_alarm_id(rng, state.alarms), site, name, "minor", raised)]
        state.alarms.append(unrelated[0])
    return {"neighbour_id": busiest.cell_id, "alarm": unrelated[0].name}


@dataclass(frozen=True)
class Fault:
    """The episode's ground truth, for the causal model and the verification only: the intent,
    its fix, the original sample and the number of parameters drifted at the start. Tools never
    see it (their context holds the live network, and a hook that recomputes the KPIs)."""

    intent: Intent
    fix: dict[str, Any]
    sampled: dict[str, float]
    start_drift: int


def fault_of(initial: InitialNetwork, intent: Intent, sampled: dict[str, float]) -> Fault:
    """The ground truth of a network built by :func:`build_network` for ``intent``."""
    serving = initial.serving
    _, baseline = initial.baselines[baseline_id(serving.cell_id)]
    drift = sum(serving.config.get(n) != v for n, v in baseline.items())
    return Fault(intent, gold_fix(initial, intent), dict(sampled), drift)


def gold_fix(state: InitialNetwork, intent: Intent) -> dict[str, Any]:
    """The corrective values of the intent's fault for this episode (``"{fix}"`` in gold chains)."""
    fix: dict[str, Any] = {}
    for name, parameter in intent.fault.parameters.items():
        if name == "operational_state":
            continue
        if parameter.healthy == "$free_pci":
            nearest = [cell.pci for cell in state.neighbours]
            fix[name] = free_pci((cell.pci for cell in state.cells), nearest)
        elif parameter.healthy == "$link_capacity":  # a shaper back at the link's line rate
            fix[name] = state.backhaul.capacity_mbps
        elif intent.fault.target == "relation":  # {neighbour id: offset} of the faulty relation
            fix[name] = {fault_relation(state)[1]: parameter.healthy}
        else:
            fix[name] = parameter.healthy
    return fix
