"""Catalogue values that used to load and then fail at ``reset`` (a database CHECK constraint, a
reversed range drawn by numpy, a window longer than the OSS keeps) or produce a broken episode are
refused at load time, with the file and the field."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from telcoenv.domains.bss.blueprints import load_care_catalog
from telcoenv.domains.network import NetworkDomain
from telcoenv.domains.network.kpis import kpi_definitions
from telcoenv.domains.network.loading import load_catalog
from telcoenv.env import TelcoEnv
from telcoenv.errors import CatalogError
from tests.conftest import edit_yaml, load_network_copy

Edit = Callable[[dict[str, Any]], Any]


def _edit_intent(root: Path, key: str, edit: Edit) -> int:
    """Edit the intent ``key`` of ``root/intents.yaml``; its index in the file."""
    path = root / "intents.yaml"
    keys = [intent["key"] for intent in yaml.safe_load(path.read_text("utf-8"))["intents"]]
    index = keys.index(key)
    edit_yaml(path, lambda document: edit(document["intents"][index]))
    return index


def _edit_blueprint(root: Path, intent: str, name: str, edit: Edit) -> Path:
    return edit_yaml(root / "blueprints" / intent / f"{name}.yaml", edit)


def _fault(parameter: str, **values: Any) -> Edit:
    return lambda intent: intent["fault"]["parameters"][parameter].update(values)


def _constraint(kpi: str, low: float, high: float) -> Edit:
    return lambda document: document["constraints"].update({kpi: {"min": low, "max": high}})


# intent key, edit, field after "intents.<index>.fault.parameters.", problem
INTENT_GAPS = [
    # faulty values outside the parameter's range: CHECK constraint failed at reset
    ("COVERAGE_HOLE", _fault("tilt_deg", faulty=[11, 40]), "tilt_deg.faulty.1", "maximum of 15"),
    (
        "DEGRADED_BACKHAUL",
        _fault("bh_shaper_mbps", faulty=[20000, 30000]),
        "bh_shaper_mbps.faulty.0",
        "maximum of 10000",
    ),
    (
        "SLICE_ADMISSION_FAILURE",
        _fault("admission_threshold_pct", faulty=[20, 40]),
        "admission_threshold_pct.faulty.0",
        "minimum of 50",
    ),
    (
        "RESOURCE_SCHED_ANOMALY",
        _fault("scheduler_type", faulty=["RR", "FIFO"]),
        "scheduler_type.faulty.1",
        "'FIFO' is not one of",
    ),
    # a reversed range: numpy raised "high - low < 0" at reset
    (
        "THROUGHPUT_DROP_DL",
        _fault("prb_reservation_pct", faulty=[30, 15]),
        "prb_reservation_pct.faulty",
        "reversed range [30, 15]",
    ),
    # accepted and stored as nonsense
    (
        "HIGH_PRB_UTILIZATION",
        _fault("mlb_enabled", faulty=["no"]),
        "mlb_enabled.faulty.0",
        "not of type 'boolean'",
    ),
    (
        "CELL_OUTAGE_DETECTION",
        _fault("operational_state", faulty=["EXPLODED"]),
        "operational_state.faulty.0",
        "unknown operational state 'EXPLODED'",
    ),
    ("PCI_COLLISION", _fault("pci", healthy="$bogus"), "pci.healthy", "unknown resolver"),
]


@pytest.mark.parametrize(("key", "edit", "field", "problem"), INTENT_GAPS)
def test_an_illegal_fault_value_is_refused_at_load(data_copy, key, edit, field, problem):
    index = _edit_intent(data_copy, key, edit)
    with pytest.raises(CatalogError) as caught:
        load_network_copy(data_copy)
    assert caught.value.file == str(data_copy / "intents.yaml")
    assert caught.value.field == f"intents.{index}.fault.parameters.{field}"
    assert problem in caught.value.problem


# intent folder, blueprint file, edit, field, problem
BLUEPRINT_GAPS = [
    # fault overrides: CHECK constraint failed or numpy error at reset
    (
        "COVERAGE_HOLE",
        "COV_HOLE_DOWNTOWN",
        lambda d: d.update(fault={"tilt_deg": [20, 30]}),
        "fault.tilt_deg.0",
        "maximum of 15",
    ),
    (
        "COVERAGE_HOLE",
        "COV_HOLE_DOWNTOWN",
        lambda d: d.update(fault={"tilt_deg": [14, 11]}),
        "fault.tilt_deg",
        "reversed range",
    ),
    (
        "RESOURCE_SCHED_ANOMALY",
        "SCHED_ANOMALY_DRIFT",
        lambda d: d.update(fault={"scheduler_type": ["FIFO"]}),
        "fault.scheduler_type.0",
        "is not one of",
    ),
    (
        "CELL_OUTAGE_DETECTION",
        "OUTAGE_SUDDEN_ALARM",
        lambda d: d.update(fault={"operational_state": ["BROKEN"]}),
        "fault.operational_state.0",
        "unknown operational state",
    ),
    # a window the OSS does not keep: ToolError at reset
    (
        "COVERAGE_HOLE",
        "COV_HOLE_DOWNTOWN",
        lambda d: d["context"].update(time_window="30d"),
        "context.time_window",
        "longer than the 7 days",
    ),
    # KPI read-outs stored as parameters: CHECK constraint failed at reset
    (
        "PCI_COLLISION",
        "PCI_COLLISION_DENSE",
        _constraint("pci_self", 1000, 3000),
        "constraints.pci_self",
        "legal range is [0, 1007]",
    ),
    (
        "PCI_COLLISION",
        "PCI_COLLISION_DENSE",
        _constraint("pci_neighbor", 2000, 3000),
        "constraints.pci_neighbor",
        "legal range is [0, 1007]",
    ),
    (
        "PINGPONG_HANDOVERS",
        "PPHO_DENSE_URBAN",
        _constraint("ttt_ms", 1, 30),
        "constraints.ttt_ms",
        "holds no legal ttt_ms value",
    ),
    (
        "PINGPONG_HANDOVERS",
        "PPHO_DENSE_URBAN",
        _constraint("a3_offset_dB", 50, 60),
        "constraints.a3_offset_dB",
        "legal range is [-15, 15]",
    ),
    (
        "SLICE_ADMISSION_FAILURE",
        "SLICE_ADM_EMBB_CAPACITY",
        _constraint("policy_priority_level", 50, 90),
        "constraints.policy_priority_level",
        "legal range is [1, 8]",
    ),
    # negative counts and impossible values: numpy errors at reset, or nonsense episodes
    (
        "CONFIG_MISMATCH",
        "CFG_MISMATCH_PARAM_DRIFT",
        _constraint("mismatch_count", -5, -1),
        "constraints.mismatch_count",
        "leaves the values the KPI can take, [0, inf]",
    ),
    (
        "CONFIG_MISMATCH",
        "CFG_MISMATCH_PARAM_DRIFT",
        _constraint("mismatch_count", 0, 3),
        "constraints.mismatch_count",
        "must be 1 or more",
    ),
    (
        "BEAM_MISALIGNMENT",
        "BEAM_INDOOR_GRID",
        _constraint("users", -300, -100),
        "constraints.users",
        "[0, inf]",
    ),
    (
        "OVERSHOOTING_CELL",
        "OVERSHOOT_RURAL_LONG_RANGE",
        _constraint("neighbor_distance_km", -5, -1),
        "constraints.neighbor_distance_km",
        "(unit 'km')",
    ),
    (
        "THROUGHPUT_DROP_DL",
        "DL_DROP_URBAN_PEAK",
        _constraint("PRB_util", 5, 9),
        "constraints.PRB_util",
        "[0, 1] (unit 'percent')",
    ),
    (
        "THROUGHPUT_DROP_DL",
        "DL_DROP_URBAN_PEAK",
        lambda d: d["constraints"]["DL_thr_Mbps"].update(max=float("inf")),
        "constraints.DL_thr_Mbps.max",
        "finite number",
    ),
    # the fault is taken from a KPI the blueprint does not sample: an episode without a fault
    (
        "PINGPONG_HANDOVERS",
        "PPHO_DENSE_URBAN",
        lambda d: d["constraints"].pop("ttt_ms"),
        "constraints",
        "no faulty ttt_ms value: constrain ttt_ms",
    ),
]


@pytest.mark.parametrize(("intent", "name", "edit", "field", "problem"), BLUEPRINT_GAPS)
def test_a_blueprint_that_would_fail_at_reset_is_refused(
    data_copy, intent, name, edit, field, problem
):
    path = _edit_blueprint(data_copy, intent, name, edit)
    with pytest.raises(CatalogError) as caught:
        load_network_copy(data_copy, known_kpis=kpi_definitions().kpis)
    assert caught.value.file == str(path)
    assert caught.value.field == field
    assert problem in caught.value.problem


def test_without_known_kpis_the_packaged_kpi_catalogue_applies(data_copy):
    """An unknown KPI used to load without ``known_kpis`` and fail building the domain."""
    path = _edit_blueprint(
        data_copy, "COVERAGE_HOLE", "COV_HOLE_DOWNTOWN", _constraint("warp_factor", 1, 2)
    )
    with pytest.raises(CatalogError, match="unknown KPI 'warp_factor'") as caught:
        load_network_copy(data_copy)
    assert caught.value.file == str(path)


def test_a_file_that_is_not_utf8_is_a_catalog_error(data_copy):
    path = data_copy / "blueprints" / "COVERAGE_HOLE" / "COV_HOLE_DOWNTOWN.yaml"
    path.write_bytes(path.read_bytes() + b"\xff\xfe")
    with pytest.raises(CatalogError, match="not UTF-8") as caught:
        load_network_copy(data_copy)
    assert caught.value.file == str(path)


def test_every_packaged_blueprint_still_loads():
    network = load_catalog()
    assert sum(len(family) for family in network.blueprints.values()) == 49
    care = load_care_catalog()
    assert sum(len(family) for family in care.blueprints.values()) >= 24


def test_legal_edge_values_load_and_reset(data_copy):
    """The checks refuse what cannot work, not what merely looks unusual."""
    _edit_intent(data_copy, "COVERAGE_HOLE", _fault("tilt_deg", faulty=[14, 15]))
    _edit_blueprint(
        data_copy,
        "PCI_COLLISION",
        "PCI_COLLISION_DENSE",
        lambda d: d["constraints"].update(
            pci_self={"min": 0, "max": 1007}, pci_neighbor={"min": 1000, "max": 1007}
        ),
    )
    domain = NetworkDomain(load_network_copy(data_copy))
    for intent, blueprint in (
        ("coverage_hole", "COV_HOLE_DOWNTOWN"),
        ("pci_collision", "PCI_COLLISION_DENSE"),
    ):
        env = TelcoEnv(intent, blueprint=blueprint, domain=domain, embedder=None)
        for seed in range(5):
            env.reset(seed=seed)
