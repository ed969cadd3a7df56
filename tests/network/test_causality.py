"""Every intent's fault -> symptoms -> fix chain holds together: its `causality` states the
mechanism (naming the fault and an evidence family, citing the domain reference), the blueprints
sample no symptom the fix cannot cure, and the gold fix brings back every KPI the engineer quotes,
while the KPIs the fault does not cause (`fault.context_kpis`) stay as sampled."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from telcoenv.domains.network.dynamics import healthy_target
from telcoenv.domains.network.engineer import phrases
from telcoenv.domains.network.kpis import kpi_definitions
from telcoenv.domains.network.models import SHOW_WIDTH, Intent, sentences
from telcoenv.errors import CatalogError
from tests.conftest import (
    blueprint_model,
    gold_actions,
    load_network_copy,
    make_env,
    network_catalog,
    play,
    submit,
    tool_call,
)
from tests.network.test_catalog_gaps import _edit_intent

CATALOG = network_catalog()
INTENTS = {intent.key: intent for intent in CATALOG.intents}
DEFINITIONS = kpi_definitions().kpis

# How a causality text may name a fault without parameters (the documented aliases of the
# intents.yaml header): a configuration drift by its baseline, an SLA breach by the SLA.
PARAMETER_ALIASES = {"CONFIG_MISMATCH": ("baseline",), "SLA_VIOLATION_REPORT": ("SLA",)}
# Words that name an evidence family in English text.
FAMILY_WORDS = {
    "DL": ("DL", "downlink"),
    "UL": ("UL", "uplink"),
    "BLER": ("BLER", "block error"),
    "RLF": ("RLF", "radio link failure"),
    "latency": ("latency", "delay"),
    "HO": ("handover",),
    "PRB": ("PRB",),
    "TA": ("TA", "timing advance"),
    "QoS": ("QoS",),
    "RF": ("RSRP", "RSRQ", "SINR"),
    "beam": ("beam", "SSB"),
    "backhaul": ("backhaul", "transport"),
    "slice": ("slice",),
    "availability": ("availability",),
    "config": ("configuration", "baseline", "parameter"),
    "users": ("users",),
    "coverage": ("coverage",),
}

# Symptoms a blueprint once sampled that its intent's fix cannot cure, and must not sample:
# a shaper (or any queue setting) does not repair a flapping link or its interface errors, and
# p95 throughput is no free KPI (it is the p50 plus the p95-p50 gap, which the fix restores).
UNCURABLE = {
    "DEGRADED_BACKHAUL": ("bh_link_flaps_per_hr", "interface_errors"),
    "RESOURCE_SCHED_ANOMALY": ("p95_thr_mbps",),
    "SLICE_ADMISSION_FAILURE": ("policy_threshold_param",),
    "PCI_COLLISION": ("pci_neighbor",),
}
# Words of the engineer's phrases that would report such a symptom.
UNCURABLE_WORDS = {"DEGRADED_BACKHAUL": ("flap", "blink", "interface error")}

FIXABLE = [
    intent.key
    for intent in CATALOG.intents
    if {"optimize_cell", "optimize_slice", "push_config"} & set(intent.gold_tools)
]


def _names(text: str, word: str) -> bool:
    return re.search(rf"(?<![\w`]){re.escape(word)}(?![\w`])", text, re.IGNORECASE) is not None


@pytest.mark.parametrize("key", sorted(INTENTS))
def test_every_intent_states_its_causality(key):
    intent: Intent = INTENTS[key]
    text = intent.causality
    assert text.strip(), key
    assert 2 <= len(sentences(text)) <= 5, (key, sentences(text))
    assert re.search(r"\(ref\. \d", text), f"{key}: cite the domain reference, e.g. (ref. 2.10)"
    parameters = [name for name in intent.fault.parameters] or list(PARAMETER_ALIASES[key])
    for name in parameters:
        assert f"`{name}`" in text or _names(text, name), (key, name)
    assert any(_names(text, word) for f in intent.evidence for word in FAMILY_WORDS[f]), key


def test_telcoenv_show_prints_the_causality_or_its_first_sentence():
    for intent in CATALOG.intents:
        lines = intent.show_lines()
        shown = next(line for line in lines if line.startswith("causality: "))
        assert (
            len(shown) + 2 <= SHOW_WIDTH or shown == "causality: " + sentences(intent.causality)[0]
        ), intent.key
    short = INTENTS["PINGPONG_HANDOVERS"].model_copy(update={"causality": "Short. Enough."})
    assert "causality: Short. Enough." in short.show_lines()


def test_the_context_kpis_are_sampled_by_the_intent_and_are_no_key_symptom():
    for intent in CATALOG.intents:
        blueprints = CATALOG.blueprints[intent.key]
        sampled = set().union(*(b.constraints for b in blueprints))
        assert set(intent.fault.context_kpis) <= sampled, intent.key
        assert set(intent.fault.context_kpis) <= set(DEFINITIONS), intent.key


@pytest.mark.parametrize(("key", "names"), sorted(UNCURABLE.items()))
def test_no_blueprint_samples_a_symptom_its_fix_cannot_cure(key, names):
    for blueprint in CATALOG.blueprints[key]:
        assert not set(names) & set(blueprint.constraints), (blueprint.blueprint_id, names)
    for lang in ("en", "ar"):
        for phrase in phrases()["symptoms"][key][lang]:
            assert not any(w in phrase.lower() for w in UNCURABLE_WORDS.get(key, ())), phrase


def test_the_backhaul_fault_is_the_shaper_and_the_radio_is_not_the_bottleneck():
    intent = INTENTS["DEGRADED_BACKHAUL"]
    assert set(intent.fault.parameters) == {"bh_shaper_mbps"}
    assert intent.fault.parameters["bh_shaper_mbps"].healthy == "$link_capacity"
    healthy_prb = DEFINITIONS["PRB_util"].healthy
    for blueprint in CATALOG.blueprints["DEGRADED_BACKHAUL"]:
        # Reference 3.2: throughput down with low PRB utilisation and a clean radio.
        assert blueprint.constraints["PRB_util"].max <= healthy_prb, blueprint.blueprint_id
        assert {"bh_util", "bh_loss_burst_rate"} & set(blueprint.constraints)


def test_the_handover_faults_are_the_only_deviation_of_their_blueprints():
    """An eager trigger is the ping-pong fault (margin too small and TTT too short, reference
    2.8), a relation's large offset the hotspot's: every ping-pong blueprint reads its offset,
    hysteresis and time-to-trigger out inside the fault (margin at most 1.5 dB, TTT at most
    160 ms), and a hotspot blueprint carries neither (margin at least 3 dB, TTT at least 480
    ms), which its fix would not cure."""
    for blueprint in CATALOG.blueprints["PINGPONG_HANDOVERS"]:
        rules = blueprint.constraints
        margin = rules["a3_offset_dB"].max + rules["hysteresis_dB"].max
        assert margin <= 1.5 and rules["ttt_ms"].max <= 160, blueprint.blueprint_id
    for blueprint in CATALOG.blueprints["HO_FAILURE_HOTSPOT"]:
        rules = blueprint.constraints
        assert rules["ttt_ms"].min >= 480, blueprint.blueprint_id
        hysteresis = rules["hysteresis_dB"].min if "hysteresis_dB" in rules else 2.0
        assert rules["a3_offset_dB"].min + hysteresis >= 3.0, blueprint.blueprint_id


def test_link_adaptation_and_scheduler_faults_match_their_symptoms():
    # OLLA converges BLER to its target (reference 2.4): the sampled BLER is near the faulty one.
    target = INTENTS["BLER_ANOMALY"].fault.parameters["olla_bler_target_pct"].faulty
    for blueprint in CATALOG.blueprints["BLER_ANOMALY"]:
        rule = blueprint.constraints["BLER"]
        assert rule.min >= 0.15 and rule.max <= (target[1] + 2) / 100, blueprint.blueprint_id
    # Round robin shares PRBs evenly: only max-C/I skews them (reference 2.7).
    assert INTENTS["RESOURCE_SCHED_ANOMALY"].fault.parameters["scheduler_type"].faulty == ["MAX_CI"]
    # A slice rejects at a utilisation above its faulty threshold and below the standard one.
    threshold = INTENTS["SLICE_ADMISSION_FAILURE"].fault.parameters["admission_threshold_pct"]
    for blueprint in CATALOG.blueprints["SLICE_ADMISSION_FAILURE"]:
        rule = blueprint.constraints["slice_utilization"]
        assert threshold.faulty[1] < rule.min and rule.max < threshold.healthy


def _quoted(statement: str, sampled: dict[str, float]) -> list[str]:
    """The sampled KPIs the engineer's English statement quotes ("<name> at <value>"), in the
    order it quotes them."""
    definitions = kpi_definitions()
    found = {}
    for name, value in sampled.items():
        quote = f"{DEFINITIONS[name].name.en} at {definitions.quote(name, value, 'en')}"
        if quote in statement:
            found[name] = statement.index(quote)
    return sorted(found, key=found.__getitem__)


@pytest.mark.parametrize("key", FIXABLE)
def test_the_gold_fix_brings_back_every_kpi_the_engineer_quotes(key):
    intent = INTENTS[key]
    context = intent.fault.context_kpis
    # The blueprint model's tolerance (the network model judges against its own run without
    # the fault: test_network_model.py).
    env = make_env(intent.env_name, max_steps=50, domain=blueprint_model())
    quoted_any = set()
    for blueprint in CATALOG.blueprints[key]:
        for sample in range(3):
            options = {"blueprint": blueprint.blueprint_id, "sample_index": sample, "lang": "en"}
            statement, info = env.reset(options=options)
            state, fault = env.episode.setup.state, env.episode.setup.truth
            quoted = _quoted(statement, fault.sampled)
            assert len(quoted) >= 2, (blueprint.blueprint_id, statement)
            # The first two quotes are symptoms, never KPIs the fault does not cause.
            assert not set(quoted[:2]) & set(context), (blueprint.blueprint_id, quoted)
            for name in UNCURABLE.get(key, ()):
                assert f"{DEFINITIONS[name].name.en} at " not in statement
            final = play(env, [*gold_actions(info), submit(intent.label.en)])
            assert final["resolved"] is True, (blueprint.blueprint_id, final["verification"])
            now = state.kpis(state.serving_id)
            for name in quoted:
                sampled = fault.sampled[name]
                target = healthy_target(name, sampled, context)
                # the verification's tolerance: within a quarter of the degradation
                assert abs(now[name] - target) <= 0.25 * abs(sampled - target) + 1e-9, name
                if name in context:
                    assert now[name] == pytest.approx(sampled), (name, "a context KPI moved")
                elif target != sampled:
                    assert now[name] == pytest.approx(target, abs=1e-6), name
            quoted_any.update(quoted)
    assert quoted_any - set(context), key


def _audit(env: Any, cell: str) -> set[str]:
    """The types of the neighbour audit's findings for ``cell``."""
    observation, *_ = env.step(tool_call("neighbor_audit", cell_id=cell))
    return {finding["type"] for finding in json.loads(observation)["findings"]}


def test_a_pci_fix_clears_every_pci_finding_of_the_cell():
    """The gold PCI removes the collision and the confusion it causes at the common neighbours;
    no confusion between two other neighbours, which a new serving PCI could not clear, is
    planted (reference 2.9)."""
    env = make_env("pci_collision", max_steps=50)
    for seed in range(5):
        _, info = env.reset(seed=seed)
        cell = info["privileged"]["gold_chain"][0]["arguments"]["cell_id"]
        before = _audit(env, cell)
        assert "pci_collision" in before and "pci_confusion" not in before, before
        play(env, [step for step in gold_actions(info) if step["name"] == "optimize_cell"])
        assert not {"pci_collision", "pci_confusion", "pci_mod3_clash"} & _audit(env, cell)


def test_the_loader_refuses_a_network_intent_without_causality(data_copy):
    index = _edit_intent(data_copy, "DEGRADED_BACKHAUL", lambda intent: intent.pop("causality"))
    with pytest.raises(CatalogError) as caught:
        load_network_copy(data_copy)
    assert caught.value.file == str(data_copy / "intents.yaml")
    assert caught.value.field.startswith(f"intents.{index}")
    assert "causality" in caught.value.problem


def test_the_loader_refuses_an_unknown_context_kpi(data_copy):
    def edit(intent: dict) -> None:
        intent["fault"]["context_kpis"] = ["rsrp_dBm", "no_such_kpi"]

    index = _edit_intent(data_copy, "DEGRADED_BACKHAUL", edit)
    with pytest.raises(CatalogError) as caught:
        load_network_copy(data_copy)
    assert caught.value.field == f"intents.{index}.fault.context_kpis.1"
    assert "no_such_kpi" in caught.value.problem


def test_a_resolver_only_resolves_its_own_parameter(data_copy):
    def edit(intent: dict) -> None:
        intent["fault"]["parameters"] = {
            "bh_shaper_mbps": {"faulty": [100, 200], "healthy": "$free_pci"}
        }

    index = _edit_intent(data_copy, "DEGRADED_BACKHAUL", edit)
    with pytest.raises(CatalogError) as caught:
        load_network_copy(data_copy)
    assert caught.value.field == f"intents.{index}.fault.parameters.bh_shaper_mbps.healthy"
    assert "resolves pci" in caught.value.problem
