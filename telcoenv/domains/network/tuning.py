"""Local tuning: in a live network no two cells carry quite the same configuration.

Vendor software loads ship different defaults and optimisation teams tune cells one by one, so
the cluster's non-fault parameters spread around their role profile (``PROFILE``). Without that
spread the one value off its profile names the fault. The spread stays inside what an engineer
calls normal: each alternative below is on the healthy side of every threshold the investigator
and the SON advisor use, so the fault is still the cause to find, and the model (calibrated
after tuning) carries the tuned values' small effects into every counter.

The tuned value is also the approved one: it is written into the cell's baseline as well, so a
configuration audit shows only real drift.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from telcoenv.domains.network.parameters import KPI_TO_CELL_PARAMETER
from telcoenv.domains.network.topology import baseline_id, fault_relation, relation_id

#: Alternatives to the profile value per parameter: absolute values, or (for the two whose profile
#: depends on the role) offsets from it. Tilt moves one degree at most: a micro cell at 8 + 2 would
#: already look like a coverage-hole downtilt, a pico at 4 - 2 like an overshoot. T310 only
#: lengthens: 500 ms (a valid value) is shorter than a 480-640 ms time-to-trigger plus the
#: handover's execution, so every handover that began below Qout failed (93 % of one healthy
#: world's); an operator who shortened T310 would have shortened the TTT too, and each
#: parameter here is drawn alone.
ALTERNATIVES: dict[str, tuple[Any, ...]] = {
    "a3_offset_db": (2.0, 2.5, 3.5, 4.0),
    "hysteresis_db": (1.0, 1.5, 2.5, 3.0),
    "ttt_ms": (512, 640),
    "cio_db": (-1, 1, 2),
    "max_ue_per_tti": (12, 20, 24),
    "prb_reservation_pct": (0, 3, 8),
    "mlb_threshold_pct": (65, 75, 80),
    "olla_bler_target_pct": (8, 12),
    "t310_ms": (2000,),
    "hqos_priority_weight_pct": (30, 50, 60),
    "beam_azimuth_offset_deg": (-5, 5),
}
OFFSETS: dict[str, tuple[float, ...]] = {
    "tilt_deg": (-1.0, 1.0),
    "tx_power_dbm": (-3.0, -2.0, -1.0, 1.0),
}
#: Legacy values that look like another intent's fault (each past that intent's threshold), with
#: the serving-cell counters their mechanism reaches: a decoy stays only where the model shows it
#: harmless here (see :func:`harmless`), as a disabled feature on a cell that never needs it is.
#: Load reaches latency and QoS compliance too: near saturation a few points of PRB load are
#: tens of milliseconds of queueing (an SLA breach's cell).
_LOAD = ("PRB_util", "DL_thr_Mbps", "latency_ms", "QoS")
DECOYS: dict[str, tuple[tuple[Any, ...], tuple[str, ...]]] = {
    "prb_reservation_pct": ((15, 20), _LOAD),
    "olla_bler_target_pct": ((16, 18), ("BLER", "DL_thr_Mbps")),
    "t310_ms": ((100, 200), ("RLF_rate", "t310_expiry_rate")),
    "hqos_priority_weight_pct": ((15, 20), ("latency_ms", "QoS")),
    "mlb_enabled": ((False,), (*_LOAD, "imbalance_index")),
    "mlb_threshold_pct": ((90, 95), (*_LOAD, "imbalance_index")),
    "scheduler_type": (("RR",), ("prb_fairness_index", "prb_allocation_skew")),
}
# No short-TTT or steered-beam decoy yet: the model's ping-pong and SSB counters do not yet tell
# those faults from others (docs/network_model.md, calibration), so no tool could show one
# harmless and the episode would have two equally likely causes.
#: Counters the UE tracks feed (costly: computed only where watched): the handovers', and the
#: radio link failures, whose mobile users' part comes from the tracks (a short T310 fails
#: users at the borders while the static ones hold).
TRACK_COUNTERS = frozenset(
    {"ping_pong_rate", "ho_attempts_per_5min", "HO_success", "RLF_rate", "t310_expiry_rate"}
)
#: Share of episodes whose serving cell is given a decoy, and how many candidates are tried.
DECOY_SHARE, DECOY_TRIES = 0.5, 3
#: How much a harmless decoy may move a counter it reaches: a share of its value, or absolutely.
HARMLESS_SHARE, HARMLESS_ABSOLUTE = 0.1, 0.5
#: Share of (cell, parameter) pairs that carry a tuned value rather than the profile's.
TUNED_SHARE = 0.3
TUNABLE: tuple[str, ...] = (*ALTERNATIVES, *OFFSETS)
#: Neighbour relations' tuned offsets (dB): a border nudged either way, within the margin an
#: A3 offset and hysteresis of 3-6 dB keep (the investigator's and the advisor's threshold is 4),
#: and the share of relations that carry one.
RELATION_ALTERNATIVES = (-3.0, -2.0, -1.0, 1.0, 2.0, 3.0)
RELATION_TUNED_SHARE = 0.3
#: Mixed into the cells' KPI seeds for the relations' own generator: their tuning leaves every
#: other draw of the episode where it was.
_RELATION_STREAM = 0x52454C


def _relation_rng(initial: Any, purpose: int) -> np.random.Generator:
    """The relations' generator for ``purpose`` (0 tuning, 1 the decoy), seeded by every cell's
    KPI seed (drawn from the episode's generator; the serving cell's is always 0)."""
    return np.random.default_rng([*(c.kpi_seed for c in initial.cells), _RELATION_STREAM, purpose])


def kept(initial: Any, fault_parameters: set[str]) -> set[str]:
    """The serving cell's parameters tuning leaves alone: the fault's, those a configuration
    drift moved off the baseline, and those the blueprint published as read-outs."""
    serving = initial.serving
    _, baseline = initial.baselines[baseline_id(serving.cell_id)]
    drifted = {name for name, value in baseline.items() if serving.config.get(name) != value}
    readouts = {p for kpi, p in KPI_TO_CELL_PARAMETER.items() if kpi in serving.measured}
    return fault_parameters | drifted | readouts


def tune(initial: Any, fault_parameters: set[str], rng: np.random.Generator) -> dict[str, int]:
    """Tune the cluster: each cell's tunable parameters take a tuned value with probability
    :data:`TUNED_SHARE`, in the live configuration and the baseline alike (one draw per cell and
    parameter, in a fixed order). Returns how many values each cell carries off its profile."""
    serving_kept = kept(initial, fault_parameters)
    cells = initial.cells
    tuned = rng.random((len(cells), len(TUNABLE))) < TUNED_SHARE
    picks = rng.integers(0, 1 << 16, (len(cells), len(TUNABLE)))
    counts: dict[str, int] = {}
    for row, cell in enumerate(cells):
        _, baseline = initial.baselines[baseline_id(cell.cell_id)]
        skip = serving_kept if cell is initial.serving else set()
        counts[cell.cell_id] = 0
        for column, name in enumerate(TUNABLE):
            if not tuned[row, column] or name in skip:
                continue
            value = _tuned_value(name, cell.config[name], int(picks[row, column]))
            cell.config[name] = baseline[name] = value
            counts[cell.cell_id] += 1
    _tune_relations(initial, fault_parameters)
    return counts


def _tune_relations(initial: Any, fault_parameters: set[str]) -> None:
    """Each neighbour relation takes a tuned offset with probability
    :data:`RELATION_TUNED_SHARE` (a relation fault's own relation keeps its faulty one), from a
    generator of their own (:func:`_relation_rng`)."""
    rng = _relation_rng(initial, 0)
    pairs = sorted(initial.relation_cio_db)
    tuned = rng.random(len(pairs)) < RELATION_TUNED_SHARE
    picks = rng.integers(0, len(RELATION_ALTERNATIVES), len(pairs))
    faulty = fault_relation(initial) if "neighbour_cio_db" in fault_parameters else None
    for pair, chosen, pick in zip(pairs, tuned.tolist(), picks.tolist(), strict=True):
        if chosen and pair != faulty:
            initial.relation_cio_db[pair] = RELATION_ALTERNATIVES[pick]


def _tuned_value(name: str, profile: Any, pick: int) -> Any:
    if name in OFFSETS:
        offsets = OFFSETS[name]
        return profile + offsets[pick % len(offsets)]
    options = ALTERNATIVES[name]
    return options[pick % len(options)]


@dataclass(frozen=True)
class Decoy:
    """A fault-like legacy value on the serving cell, and the value it replaced."""

    parameter: str
    value: Any
    replaced: Any


def plant_decoy(
    initial: Any, model: Any, fault_parameters: set[str], rng: np.random.Generator
) -> Decoy | None:
    """With probability :data:`DECOY_SHARE`, give the serving cell one of :data:`DECOYS` (not a
    parameter of the fault, nor one tuning keeps) that the model shows harmless here: up to
    :data:`DECOY_TRIES` candidates in a random order, the first harmless one kept, in the
    configuration, its baseline and every epoch of the model (a legacy value is old)."""
    draw = rng.random()
    barred = kept(initial, fault_parameters)
    candidates = [(n, v) for n, (values, _) in DECOYS.items() if n not in barred for v in values]
    order = rng.permutation(len(candidates)).tolist()
    if draw >= DECOY_SHARE:
        return None
    serving = initial.serving
    for index in order[:DECOY_TRIES]:
        name, value = candidates[index]
        decoy = Decoy(name, value, serving.config[name])
        if harmless(model, serving.cell_id, decoy):
            _, baseline = initial.baselines[baseline_id(serving.cell_id)]
            serving.config[name] = baseline[name] = value
            for epoch in model.epochs:
                epoch.config[f"cell:{serving.cell_id}"][name] = value
            return decoy
    return None


def harmless(model: Any, cell_id: str, decoy: Decoy) -> bool:
    """Whether the model shows the decoy harmless on ``cell_id``, with the fault and without it
    (so that the fault's own fix still works): every counter its mechanism reaches within
    :data:`HARMLESS_SHARE` (or :data:`HARMLESS_ABSOLUTE` display steps) of its value with the
    setting it replaces, at the demand of the report."""

    def plant(config: dict[str, dict[str, Any]]) -> None:
        config[f"cell:{cell_id}"][decoy.parameter] = decoy.value

    return _unchanged(model, cell_id, plant, DECOYS[decoy.parameter][1])


#: Share of episodes whose serving cell keeps a legacy offset on a relation its users never
#: hand over on (a neighbour behind a hill, a relation kept from an old plan), and its sizes:
#: as large as the handover failure hotspot's cause (6-16 dB), and changing nothing here.
RELATION_DECOY_SHARE = 0.3
RELATION_DECOY_DB = (6.0, 8.0, 10.0)
#: The counters a relation's offset reaches: the handovers' and the link failures'.
_RELATION_WATCHED = (*sorted(TRACK_COUNTERS), "ho_fail_rate")


def plant_relation_decoy(
    initial: Any, model: Any, fault_parameters: set[str]
) -> tuple[str, float] | None:
    """With probability :data:`RELATION_DECOY_SHARE` (from the relations' own generator), give
    a relation of the serving cell that no track hands over on (not a relation fault's own)
    one of :data:`RELATION_DECOY_DB` (else its opposite), where the model shows it harmless with
    the fault and without it; in the configuration and every epoch of the model. Returns
    (neighbour id, offset) or None."""
    rng = _relation_rng(initial, 1)
    draw, pick, value = rng.random(), rng.integers(1 << 16), rng.choice(RELATION_DECOY_DB)
    if draw >= RELATION_DECOY_SHARE:
        return None
    simulation, serving = model.simulation, initial.serving.cell_id
    attempts = simulation.moves(model.epochs[-1].config).counts.relation_attempts
    source = simulation.index[serving]
    faulty = fault_relation(initial) if "neighbour_cio_db" in fault_parameters else None
    quiet = [
        neighbour
        for cell_id, neighbour in sorted(initial.relation_cio_db)
        if cell_id == serving
        and (cell_id, neighbour) != faulty
        and attempts[source, simulation.index[neighbour]] == 0
    ]
    if not quiet:
        return None
    neighbour = quiet[int(pick) % len(quiet)]
    owner = f"relation:{relation_id(serving, neighbour)}"
    # Toward the neighbour first, as the hotspot's cause is; where that would hand users over,
    # away from it (an offset that only delays handovers nobody makes changes nothing).
    for offset in (float(value), -float(value)):

        def plant(config: dict[str, dict[str, Any]], offset: float = offset) -> None:
            config[owner]["cio_db"] = offset

        if _unchanged(model, serving, plant, _RELATION_WATCHED):
            initial.relation_cio_db[(serving, neighbour)] = offset
            for epoch in model.epochs:
                plant(epoch.config)
            return neighbour, offset
    return None


def _unchanged(
    model: Any,
    cell_id: str,
    plant: Callable[[dict[str, dict[str, Any]]], None],
    watched: tuple[str, ...],
) -> bool:
    """Whether every ``watched`` counter of ``cell_id`` stays within the harmless tolerance
    when ``plant`` changes the configuration, with the fault and without it."""
    simulation = model.simulation
    tracks = any(counter in TRACK_COUNTERS for counter in watched)  # the costly part
    for config, faulty in ((model.epochs[-1].config, True), (model.epochs[0].config, False)):
        planted = {key: dict(values) for key, values in config.items()}
        plant(planted)
        then = simulation.kpis(cell_id, config, 1.0, faulty, handovers=tracks)
        now = simulation.kpis(cell_id, planted, 1.0, faulty, handovers=tracks)
        for counter in watched:
            a, b = now.get(counter), then.get(counter)
            if a is None or b is None:
                continue
            if abs(a - b) > max(HARMLESS_SHARE * abs(b), HARMLESS_ABSOLUTE * _unit(counter)):
                return False
    return True


def _unit(counter: str) -> float:
    """One display step of ``counter`` in raw units (a share counter's percent is 0.01)."""
    from telcoenv.domains.network.kpis import kpi_definitions

    return 1.0 / kpi_definitions().kpis[counter].scale
