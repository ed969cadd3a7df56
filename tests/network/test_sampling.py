"""Scenario sampling: the guardrail (values inside ranges), dependencies and physical coherence."""

from __future__ import annotations

import numpy as np
import pytest

from telcoenv.domains.network import network_domain
from telcoenv.domains.network.models import Blueprint
from telcoenv.domains.network.parameters import legal_values
from telcoenv.domains.network.sampling import compile_plan, sample_kpis

SAMPLES = 300


def _samples(blueprint: Blueprint, count: int = SAMPLES) -> dict[str, np.ndarray]:
    plan = network_domain().plans[blueprint.blueprint_id]
    rng = np.random.default_rng(1234)
    rows = [sample_kpis(plan, blueprint.constraints, rng) for _ in range(count)]
    return {name: np.array([row[name] for row in rows]) for name in blueprint.constraints}


def _all_blueprints(catalog) -> list[Blueprint]:
    return [b for family in catalog.blueprints.values() for b in family]


def test_every_kpi_stays_inside_its_range(catalog):
    for blueprint in _all_blueprints(catalog):
        for name, values in _samples(blueprint).items():
            rule = blueprint.constraints[name]
            assert values.min() >= rule.min and values.max() <= rule.max, (
                blueprint.blueprint_id,
                name,
                values.min(),
                values.max(),
            )
            # and the samples spread over the range rather than sticking to a bound
            assert values.max() - values.min() > 0.3 * (rule.max - rule.min), (
                blueprint.blueprint_id,
                name,
            )


def _corr(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.corrcoef(a, b)[0, 1])


def test_every_declared_dependency_has_its_sign(catalog):
    checked = 0
    for blueprint in _all_blueprints(catalog):
        samples = _samples(blueprint)
        for name, rule in blueprint.constraints.items():
            if rule.depends_on:
                r = _corr(samples[name], samples[rule.depends_on])
                assert (r > 0.3) if rule.corr == "positive" else (r < -0.3), (
                    blueprint.blueprint_id,
                    name,
                    rule.depends_on,
                    r,
                )
                checked += 1
            elif rule.corr_with:
                r = _corr(samples[name], samples[rule.corr_with])
                assert np.sign(r) == np.sign(rule.slope) and abs(r) > 0.1, (
                    blueprint.blueprint_id,
                    name,
                    r,
                )
                checked += 1
    assert checked > 60


@pytest.mark.parametrize(
    ("child", "parent", "sign"),
    [
        ("throughput_p50_mbps", "sinr_dB", 1),
        ("DL_thr_Mbps", "PRB_util", -1),
        ("BLER", "PRB_util", 1),
        ("sinr_dB", "rsrq_dB", 1),
        ("throughput_p50_mbps", "PRB_util", -1),
    ],
)
def test_domain_couplings_hold_wherever_both_kpis_exist(catalog, child, parent, sign):
    """Physics the reference gives hold even where a blueprint declares no dependency."""
    found = 0
    for blueprint in _all_blueprints(catalog):
        if child in blueprint.constraints and parent in blueprint.constraints:
            samples = _samples(blueprint)
            assert np.sign(_corr(samples[child], samples[parent])) == sign, blueprint.blueprint_id
            found += 1
    assert found > 0


def test_triangular_distribution_centres_on_its_mean(catalog):
    blueprint = catalog.blueprint("DL_DROP_URBAN_PEAK")
    users = _samples(blueprint, 2000)["users"]
    expected = (180 + 260 + 320) / 3
    assert abs(users.mean() - expected) < 3
    assert np.all(users == np.round(users))  # counts are whole numbers


def test_configuration_readouts_snap_to_legal_values(catalog):
    blueprint = catalog.blueprint("PPHO_DENSE_URBAN")
    samples = _samples(blueprint)
    assert set(samples["ttt_ms"]) <= set(legal_values("ttt_ms"))
    assert np.all(samples["hysteresis_dB"] * 2 == np.round(samples["hysteresis_dB"] * 2))


def test_same_generator_seed_same_sample(catalog):
    blueprint = catalog.blueprint("BEAM_MMWAVE_STREET_CANYON")
    plan = compile_plan(blueprint)
    first = sample_kpis(plan, blueprint.constraints, np.random.default_rng(7))
    second = sample_kpis(plan, blueprint.constraints, np.random.default_rng(7))
    third = sample_kpis(plan, blueprint.constraints, np.random.default_rng(8))
    assert first == second and first != third


def test_sampling_never_touches_the_global_generators(catalog):
    blueprint = catalog.blueprint("DL_DROP_URBAN_PEAK")
    np.random.seed(0)
    import random

    random.seed(0)
    before = (np.random.get_state()[1].copy(), random.getstate())
    _samples(blueprint, 20)
    assert np.array_equal(np.random.get_state()[1], before[0]) and random.getstate() == before[1]
