"""The blueprint model's causal model (``dynamics.py``): the right fix heals the symptoms, a wrong
one does not, a harmful one hurts. The network model's responses: test_network_model.py."""

from __future__ import annotations

import pytest

from telcoenv.domains.network.dynamics import healthy_target, key_kpis_recovered
from telcoenv.domains.network.engineer import ranked_evidence
from telcoenv.domains.network.kpis import kpi_definitions
from tests.conftest import blueprint_model, call_tool, gold_actions, network_episode, play


@pytest.mark.parametrize(
    "intent",
    [
        "beam_misalignment",
        "pingpong_handovers",
        "degraded_backhaul",
        "slice_admission_failure",
        "config_mismatch",
        "pci_collision",
        "bler_anomaly",
    ],
)
def test_the_right_fix_brings_the_key_kpis_back(intent):
    for seed in range(4):
        env, info, cell = network_episode(intent, seed, domain=blueprint_model())
        state, fault = env.episode.setup.state, env.episode.setup.truth
        assert not all(key_kpis_recovered(state, fault).values())
        play(env, gold_actions(info))
        assert all(key_kpis_recovered(state, fault).values()), (intent, seed)
        context = fault.intent.fault.context_kpis  # not symptoms: never key KPIs
        for name in ranked_evidence(fault.sampled, fault.intent.evidence, context)[:2]:
            assert state.kpis(state.serving_id)[name] == pytest.approx(
                healthy_target(name, fault.sampled[name]), abs=1e-6
            )


def test_a_wrong_fix_leaves_the_symptoms_and_a_harmful_one_worsens_them():
    env, info, cell = network_episode("beam_misalignment", 3, domain=blueprint_model())
    state, fault = env.episode.setup.state, env.episode.setup.truth
    name = ranked_evidence(fault.sampled, fault.intent.evidence)[0]
    before = state.kpis(state.serving_id)[name]
    call_tool(env, "optimize_cell", cell_id=cell, changes={"cio_db": 1})  # wrong parameter
    assert not all(key_kpis_recovered(state, fault).values())
    call_tool(env, "optimize_cell", cell_id=cell, changes={"tilt_deg": 15, "tx_power_dbm": 10})
    after = state.kpis(state.serving_id)[name]
    direction = kpi_definitions().kpis[name].worse
    assert (after > before) if direction == "higher" else (after < before), (name, before, after)
    neighbour = state.cell_ids[1]
    load, sinr = state.cell(neighbour).load, state.kpis(neighbour)["sinr_dB"]
    call_tool(env, "optimize_cell", cell_id=neighbour, changes={"tilt_deg": 15})
    assert state.cell(neighbour).load > load
    assert state.kpis(neighbour)["sinr_dB"] < sinr


def test_series_continue_after_a_change_so_the_agent_can_remeasure():
    env, info, cell = network_episode("pingpong_handovers", 1, domain=blueprint_model())
    fault = env.episode.setup.truth
    before = call_tool(env, "kpi_timeseries", cell_id=cell, kpi="HO", window="1h", detail="full")
    play(env, gold_actions(info))
    after = call_tool(env, "kpi_timeseries", cell_id=cell, kpi="HO", window="1h", detail="full")
    assert after["timestamps"][-1] > before["timestamps"][-1]  # the clock moved on
    series = after["series"]["ping_pong_rate"]["values"]
    healthy = healthy_target("ping_pong_rate", fault.sampled["ping_pong_rate"])
    assert series[-1] == pytest.approx(healthy, abs=1.0)  # the newest points: fixed
    assert series[0] > healthy + 2  # the oldest: still the symptom


def test_a_partial_fix_moves_the_kpis_part_of_the_way():
    env, info, cell = network_episode("overshooting_cell", 2, domain=blueprint_model())
    state, fault = env.episode.setup.state, env.episode.setup.truth
    name = ranked_evidence(fault.sampled, fault.intent.evidence)[0]
    sampled, healthy = fault.sampled[name], healthy_target(name, fault.sampled[name])
    start = state.serving.config["tilt_deg"]
    call_tool(env, "optimize_cell", cell_id=cell, changes={"tilt_deg": (start + 6) / 2})
    current = state.kpis(state.serving_id)[name]
    assert min(sampled, healthy) < current < max(sampled, healthy)
