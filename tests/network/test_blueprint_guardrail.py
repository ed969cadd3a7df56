"""The blueprint guardrail in the network model (slow): how many of the values the blueprints
sample the calibrated model shows inside their ranges, at 6 seeds per blueprint (294 episodes).

The calibrated levels must hold; the symptom families the model does not yet reproduce are
listed (:data:`NOT_YET`, with their reasons in docs/network_model.md, "Calibration against the
blueprints"). The list is kept honest both ways: a listed KPI that comes inside its ranges must
leave the list, and an unlisted one that falls out of them fails.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "check_blueprint_ranges.py"
#: The levels calibration sets: inside their ranges in most episodes.
LEVELS = ("rsrp_dBm", "sinr_dB", "rsrq_dB", "users", "PRB_util", "prb_util")
#: KPIs inside their ranges in under half the episodes today (measured 2026-12-08), by family.
NOT_YET = frozenset(
    {
        # handovers: ping-pong at a 3-6 dB margin stays under 10 %, handovers fail too late
        # at the borders of worlds calibrated to a low SINR with interference from beyond
        "HO_success", "ho_fail_rate", "ping_pong_rate", "ho_attempts_per_5min",
        "ho_out_rate_per_5min", "ho_in_rate_per_5min",
        # radio link failures and T310 expiries at calibrated low SINR
        "RLF_rate", "t310_expiry_rate", "blockage_events_per_hr",
        # throughput: an NR macro carries more than LTE-era ranges (the model wins); a max C/I
        # scheduler starves the median user where the SINR spreads as a real cell's does
        # (p50 1.8 Mbps at the event's load where 3-16; 25 Mbps before the spread, drift 6.1)
        "throughput_p50_mbps", "p50_thr_mbps",
        "p95_minus_p50_gap_mbps", "slice_throughput_p50", "slice_throughput_p95",
        # timing advance and overshoot in a single-layer grid
        "TA", "ta_p50", "ta_p95", "ta_std", "ta_p95_m", "ta_std_m", "ta_drift_index",
        "distant_serving_ratio", "dominance_ratio",
        # beams: the indoor grid's beam failure recoveries, 154 an hour at the median where
        # 5-40 (its beam failure rate is inside since the interference from beyond is shadowed
        # on its own links)
        "ssb_rsrp_var_dB", "bfr_events_per_hr",
        # cell DL throughput at 90 %+ PRB load (a stadium's event, a mall's peak): the users'
        # harmonic mean falls under the range; a congested backhaul's cell keeps more
        "DL_thr_Mbps",
        # backhaul loss: TCP at 80-91 % of a shaper with a deep buffer loses 0.01-0.05 %
        "bh_packet_loss",
        # X2 handovers in at the neighbours' borders
        "x2_ho_in_rate",
        # scheduler fairness under max C/I, neighbour load, delay and breaches
        "prb_fairness_index", "prb_allocation_skew", "icic_neighbor_load",
        "sched_latency_p95_ms",
        "neighbor_pci_overlap",
        # slice violations: the eMBB slice's median 34.5 % inside its 15-45 % but 2 of 6
        # episodes inside, the URLLC slice's median 56 % over 20-50 % (5 of 12 in all)
        "slice_violation_ratio",
    }
)  # fmt: skip


def _shares() -> tuple[float, dict[str, float]]:
    spec = importlib.util.spec_from_file_location("check_blueprint_ranges", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    values, ranges = module.measure(6)
    inside: dict[str, list[bool]] = {}
    for blueprint_id, found in values.items():
        for name, samples in found.items():
            low, high = ranges[f"{blueprint_id}.{name}"]
            inside.setdefault(name, []).extend(low <= v <= high for v in samples)
    every = [hit for hits in inside.values() for hit in hits]
    return sum(every) / len(every), {n: sum(h) / len(h) for n, h in inside.items()}


@pytest.mark.slow
def test_the_model_keeps_the_blueprint_ranges_it_can_and_lists_the_rest():
    overall, share = _shares()
    assert overall >= 0.55, overall
    for name in LEVELS:
        assert share[name] >= 0.7, (name, share[name])
    unlisted = {n: s for n, s in share.items() if n not in NOT_YET and s < 0.5}
    assert not unlisted, f"out of their ranges and not listed as a known gap: {unlisted}"
    calibrated = {n: share[n] for n in NOT_YET if share.get(n, 0.0) >= 0.5}
    assert not calibrated, f"now inside their ranges: take them off NOT_YET: {calibrated}"
