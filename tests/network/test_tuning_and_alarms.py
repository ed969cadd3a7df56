"""The network model's configuration is no answer key, and its alarms come from its counters.

Local tuning spreads every cell's non-fault parameters around the role profile, a harmless
fault-like legacy value (a decoy) sits on some serving cells, and alarms are threshold crossings
named for the symptom (``tuning.py``, ``alarms.py``).
"""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pytest

import telcoenv
from telcoenv.agents import OracleAgent, run_episode
from telcoenv.agents.investigator import RULES as INVESTIGATOR_RULES
from telcoenv.domains.network import NetworkDomain, tuning
from telcoenv.domains.network import alarms as alarm_model
from telcoenv.domains.network.counters import CELL_COUNTERS
from telcoenv.domains.network.kpis import kpi_definitions
from telcoenv.domains.network.loading import network_catalog
from telcoenv.domains.network.parameters import PROFILE, change_schemas
from telcoenv.domains.network.topology import _UNRELATED_ALARMS

ROLES = tuple(PROFILE)


def _cause_holds(parameter: str, value) -> list[str]:
    """Intents whose investigator cause check holds on this one configuration value."""
    evidence = {f"config.{parameter}": value}
    return [key for key, rules in INVESTIGATOR_RULES.items() if rules.cause.holds(evidence)]


def _tuned_values(role: str, parameter: str) -> list:
    if parameter in tuning.OFFSETS:
        return [PROFILE[role][parameter] + o for o in tuning.OFFSETS[parameter]]
    return list(tuning.ALTERNATIVES[parameter])


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("parameter", tuning.TUNABLE)
def test_every_tuned_value_is_legal_and_looks_like_no_fault(role, parameter):
    schema = change_schemas()[parameter]
    for value in _tuned_values(role, parameter):
        jsonschema.validate(value, schema)
        assert value != PROFILE[role][parameter]
        assert _cause_holds(parameter, value) == [], (parameter, value)


@pytest.mark.parametrize("parameter", tuning.DECOYS)
def test_every_decoy_is_legal_and_looks_like_another_intents_fault(parameter):
    values, watched = tuning.DECOYS[parameter]
    assert set(watched) <= set(CELL_COUNTERS)
    for value in values:
        jsonschema.validate(value, change_schemas()[parameter])
        assert _cause_holds(parameter, value), (parameter, value)


def test_tuning_draws_its_share_and_never_touches_the_fault(catalog):
    """Every episode's serving cell keeps its fault parameter (and what a drift moved); about
    TUNED_SHARE of every cell's tunable values leave the profile."""
    tuned = total = 0
    for intent in catalog.intents:
        env = telcoenv.make(intent.env_name, domain=NetworkDomain(model="physical"), embedder=None)
        env.reset(seed=3)
        setup = env.unwrapped._episode.setup
        state = setup.state
        config = state.configuration()
        serving = config[f"cell:{state.serving_id}"]
        for name, value in setup.gold_values["fix"].items():
            if name in serving:  # a cell parameter (a link's or a slice's is not tuned)
                assert serving[name] != value, (intent.key, name)
        audit = _oss(env, state.serving_id)["config_audit"]["parameters_off_baseline"]
        assert bool(audit) == (intent.key == "CONFIG_MISMATCH"), (intent.key, audit)
        for cell_id in state.cell_ids:
            cell = config[f"cell:{cell_id}"]
            role = state.initial.cells[state.cell_ids.index(cell_id)].role
            for name in tuning.TUNABLE:
                total += 1
                tuned += cell[name] != PROFILE[role][name]
    assert 0.2 <= tuned / total <= 0.45, tuned / total


def _oss(env, cell_id: str) -> dict:
    call = {"name": "oss_query", "arguments": {"cell_id": cell_id, "window": "1h"}}
    return json.loads(env.step(call)[0])


def _decoy_of(state, intent) -> tuple[str, object] | None:
    serving = state.configuration()[f"cell:{state.serving_id}"]
    baseline = state.baseline_of(state.serving_id)  # a drifted value is no decoy
    for name, (values, _) in tuning.DECOYS.items():
        if name in intent.fault.parameters or serving[name] != baseline[name]:
            continue
        if serving[name] in values:
            return name, serving[name]
    return None


def test_a_planted_decoy_is_harmless_and_the_fault_still_the_one_to_fix(catalog):
    """Where the serving cell carries a decoy, putting the profile value back moves none of the
    counters its mechanism reaches by more than the harmless share; the oracle (which fixes the
    fault only) still resolves the episode."""
    found = 0
    for intent in catalog.intents:
        domain = NetworkDomain(model="physical")
        env = telcoenv.make(
            intent.env_name, domain=domain, embedder=None, privileged=True, reward="resolved"
        )
        for seed in range(4):
            env.reset(seed=seed)
            state = env.unwrapped._episode.setup.state
            decoy = _decoy_of(state, intent)
            if decoy is None:
                continue
            found += 1
            name, value = decoy
            simulation = state.model.simulation
            config = state.configuration()
            undone = {k: dict(v) for k, v in config.items()}
            undone[f"cell:{state.serving_id}"][name] = PROFILE[state.initial.serving.role].get(
                name, value
            )
            now = simulation.kpis(state.serving_id, config)
            then = simulation.kpis(state.serving_id, undone)
            for counter in tuning.DECOYS[name][1]:
                if counter not in then:  # a cell off air has no samples of it
                    continue
                step = 1.0 / kpi_definitions().kpis[counter].scale
                allowed = max(tuning.HARMLESS_SHARE * abs(then[counter]), 0.5 * step)
                # The replaced value may itself be a tuned one: allow twice the share.
                assert abs(now[counter] - then[counter]) <= 2 * allowed + 1e-9, (name, counter)
            _, info = run_episode(env, OracleAgent(), seed=seed)
            assert info["resolved"] is True, (intent.key, seed, info["verification"]["checks"])
    assert found >= 10


def test_relations_carry_tuned_offsets_and_some_a_harmless_large_one():
    """About RELATION_TUNED_SHARE of the relations carry ±1-3 dB (the hotspot's own relation
    keeps its fault), differently in every episode; some serving cells keep a large offset on a
    relation nobody hands over on, and taking it away moves none of the cell's handover
    counters by more than the harmless share."""
    tuned = total = decoys = 0
    patterns = set()
    for key in ("pingpong_handovers", "ho_failure_hotspot", "rlf_spike"):
        env = telcoenv.make(key, domain=NetworkDomain(model="physical"), embedder=None)
        for seed in range(12):
            env.reset(seed=seed)
            setup = env.unwrapped._episode.setup
            state, serving = setup.state, setup.state.serving_id
            fix = setup.gold_values["fix"].get("neighbour_cio_db", {})
            offsets = state.initial.relation_cio_db
            patterns.add(tuple(sorted(v for v in offsets.values())))
            for (cell, neighbour), value in offsets.items():
                if cell == serving and neighbour in fix:
                    assert value >= 6, value  # the fault's own offset, never tuned over
                    continue
                total += 1
                tuned += value != 0
                if abs(value) <= 3:
                    continue
                assert cell == serving and value in (6, 8, 10, -6, -8, -10), (cell, value)
                decoys += 1
                simulation = state.model.simulation
                config = state.configuration()
                undone = {k: dict(v) for k, v in config.items()}
                undone[f"relation:{cell}->{neighbour}"]["cio_db"] = 0.0
                now, then = simulation.kpis(cell, config), simulation.kpis(cell, undone)
                for counter in ("HO_success", "ho_fail_rate", "ping_pong_rate", "RLF_rate"):
                    step = 1.0 / kpi_definitions().kpis[counter].scale
                    allowed = max(tuning.HARMLESS_SHARE * abs(then[counter]), 0.5 * step)
                    assert abs(now[counter] - then[counter]) <= allowed + 1e-9, (key, counter)
    assert 0.2 <= tuned / total <= 0.45, tuned / total
    assert len(patterns) > 20  # no two episodes alike
    assert decoys >= 3


def test_the_one_value_off_its_profile_no_longer_names_the_intent(catalog):
    """The red team's lookup (the single parameter off the role profile names the intent that
    owns it) is right about half the time in the blueprint model and almost never here."""
    owner: dict[str, str] = {}
    for intent in catalog.intents:
        for name in intent.fault.parameters:
            owner.setdefault(name, intent.key)
    right = {"blueprint": 0, "physical": 0}
    episodes = 0
    for intent in catalog.intents:
        for model in right:
            env = telcoenv.make(intent.env_name, domain=NetworkDomain(model=model), embedder=None)
            for seed in range(3):
                env.reset(seed=seed)
                record = _oss(env, env.unwrapped._episode.setup.state.serving_id)
                role = record["cell"]["role"]
                config = record["configuration"]
                off = [n for n, v in config.items() if n in PROFILE[role] and v != PROFILE[role][n]]
                right[model] += len(off) == 1 and owner.get(off[0]) == intent.key
                episodes += model == "physical"
    assert right["blueprint"] / episodes >= 0.35
    assert right["physical"] / episodes <= 0.05


# --- alarms ---------------------------------------------------------------------------------


def test_a_crossing_raises_one_alarm_per_name_named_for_the_symptom():
    cell = {"availability": 0.0, "PRB_util": 0.9, "HO_success": 0.9, "ping_pong_rate": 20.0}
    assert alarm_model.crossings(cell, "cell") == {
        "Cell Unavailable": "critical",
        "Handover Performance Degraded": "major",
        "Cell Congestion": "major",
    }
    assert alarm_model.crossings({"availability": 99.0}, "cell") == {
        "Cell Availability Degraded": "major"
    }
    assert alarm_model.crossings({"availability": 99.9, "PRB_util": 0.85}, "cell") == {}
    assert alarm_model.crossings({"bh_latency_ms": 25.0}, "link") == {
        "Transmission Link Degraded": "major"
    }
    assert alarm_model.crossings({"bh_latency_ms": 25.0}, "cell") == {}


@pytest.fixture(scope="module")
def alarm_episodes():
    """Three episodes of each intent in the model: (intent, setup, its active alarms)."""
    rows = []
    for intent in network_catalog().intents:
        env = telcoenv.make(intent.env_name, domain=NetworkDomain(model="physical"), embedder=None)
        for seed in range(3):
            env.reset(seed=seed)
            setup = env.unwrapped._episode.setup
            rows.append((intent, setup, list(setup.state.initial.alarms)))
    return rows


def test_every_alarm_is_a_crossing_of_its_objects_counters_or_housekeeping(alarm_episodes):
    for intent, setup, alarms in alarm_episodes:
        state = setup.state
        model = state.model
        config = model.epochs[-1].config
        for alarm in alarms:
            if alarm.name in _UNRELATED_ALARMS:
                continue
            assert alarm.name in alarm_model.NAMES, alarm.name
            assert alarm.raised_at <= state.now.strftime("%Y-%m-%dT%H:%M:%SZ")
            if alarm.name == alarm_model.BASELINE_MISMATCH:
                assert intent.key == "CONFIG_MISMATCH"
                continue
            objects = [(alarm.source, "cell")]
            if alarm.source == state.link_id:
                objects = [(alarm.source, "link")]
            elif alarm.source == state.serving_id:
                objects.append((state.initial.fault_slice_id, "slice"))
            raised = {}
            for object_id, kind in objects:
                raised |= alarm_model.crossings(model.kpis(object_id, config, state.now), kind)
            assert alarm.name in raised, (intent.key, alarm)


def test_alarm_names_are_shared_across_causes_and_some_faults_raise_none(alarm_episodes):
    """No symptom alarm belongs to one intent: every name the fault object raised in these
    episodes was raised by at least two intents (or by a neighbour); some faults raise no
    alarm on their object at all."""
    by_name: dict[str, set[str]] = {}
    silent = 0
    for intent, setup, alarms in alarm_episodes:
        state = setup.state
        own = {state.serving_id, state.link_id}
        names = {a.name for a in alarms if a.source in own and a.name in alarm_model.NAMES}
        silent += not names
        for alarm in alarms:
            if alarm.name in alarm_model.NAMES and alarm.name != alarm_model.BASELINE_MISMATCH:
                key = intent.key if alarm.source in own else "neighbour"
                by_name.setdefault(alarm.name, set()).add(key)
    assert silent >= 3
    # A cell off air says so, and a degraded link says so, whatever degraded it (a shaper,
    # flaps, congestion): those name their object's state, not a cause.
    own_state = {"Cell Unavailable", "Transmission Link Degraded"}
    for name, raisers in by_name.items():
        if name not in own_state:
            assert len(raisers) >= 2, (name, raisers)


def test_an_outage_raises_cell_unavailable_where_alarms_are_on():
    env = telcoenv.make(
        "cell_outage_detection", domain=NetworkDomain(model="physical"), embedder=None
    )
    checked = 0
    for seed in range(6):
        env.reset(seed=seed)
        state = env.unwrapped._episode.setup.state
        if state.initial.serving.operational_state != "DOWN":
            continue
        names = {a.name for a in state.initial.alarms if a.source == state.serving_id}
        blueprint_alarm = any(
            b.context.alarm
            for b in network_catalog().blueprints["CELL_OUTAGE_DETECTION"]
            if {n: (c.min, c.max) for n, c in b.constraints.items()} == state.kpi_bounds
        )
        assert ("Cell Unavailable" in names) == blueprint_alarm, (seed, names)
        checked += 1
    assert checked


def test_an_alarm_id_already_taken_in_the_episode_is_drawn_again():
    """The database keys an episode's alarms by id: a drawn id that another alarm has is
    drawn again (two alarms of 1,000 or so in an episode would otherwise share one now and
    then, and the episode would fail to load)."""
    from telcoenv.domains.network.topology import Alarm, new_alarm_id

    first = new_alarm_id(np.random.default_rng(3), [])
    taken = [Alarm(first, "CELL-1", "x", "minor", "2026-01-01T00:00:00Z")]
    again = new_alarm_id(np.random.default_rng(3), taken)
    assert again != first and again.startswith("ALM-") and len(again) == 10
