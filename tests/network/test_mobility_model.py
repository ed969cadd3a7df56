"""The mobility model's mechanisms: each handover parameter moves the counters its mechanism
reaches, in the direction RAN engineering expects, and no timer moves RSRP."""

from __future__ import annotations

import math

import numpy as np
import pytest

from telcoenv.domains.network import layout, mobility
from telcoenv.domains.network.parameters import PROFILE

N = 7


@pytest.fixture(scope="module")
def cluster():
    rng = np.random.default_rng(11)
    angles = np.radians(np.arange(N - 1) * 60.0)
    positions = [(0.0, 0.0)] + [(600 * math.sin(a), 600 * math.cos(a)) for a in angles]
    azimuths = [90.0] + [float((math.degrees(a) + 180) % 360) for a in angles]
    configs = [dict(PROFILE["macro"]) for _ in range(N)]
    cells = layout.cells_of("urban", "macro", positions, azimuths, list(range(1, N + 1)),
                            configs, [True] * N)  # fmt: skip
    walk = mobility.tracks(cells, 450.0, rng.choice([1.4, 8.0, 14.0], 96), rng)
    geometry = mobility.track_geometry(cells, walk, rng)
    return cells, geometry, mobility.track_radio(cells, geometry)


def _run(cluster, **changes):
    cells, _, radio = cluster
    p = {"a3": 3.0, "hys": 2.0, "ttt": 480.0, "cio": 0.0, "t310": 1000.0, "pci": None}
    p.update(changes)
    cio = np.zeros(N)
    cio[0] = p["cio"]
    return mobility.handovers(
        radio,
        np.full(N, 0.5),
        cells.pci if p["pci"] is None else np.array(p["pci"]),
        np.full(N, p["a3"]),
        np.full(N, p["hys"]),
        np.full(N, p["ttt"]),
        cio,
        np.full(N, p["t310"]),
    )


def _rate(result, numerator: str) -> float:
    return float(getattr(result, numerator).sum()) / max(float(result.attempts.sum()), 1.0)


def test_short_ttt_and_low_hysteresis_cause_ping_pong(cluster):
    tight = _run(cluster, ttt=64.0, hys=0.5, a3=0.0)
    normal = _run(cluster)
    loose = _run(cluster, ttt=1024.0, hys=4.0)
    assert tight.pingpong.sum() > normal.pingpong.sum() >= loose.pingpong.sum()
    assert tight.attempts.sum() > normal.attempts.sum() > loose.attempts.sum()


def test_a_long_time_to_trigger_makes_handovers_late(cluster):
    late = _run(cluster, ttt=2560.0)
    normal = _run(cluster)
    assert late.too_late.sum() > normal.too_late.sum()
    assert late.rlf.sum() > normal.rlf.sum()


@pytest.mark.parametrize(("short", "long"), [(50.0, 200.0), (200.0, 1000.0), (1000.0, 2000.0)])
def test_a_longer_t310_never_causes_more_radio_link_failures(cluster, short, long):
    assert _run(cluster, t310=short).rlf.sum() >= _run(cluster, t310=long).rlf.sum()


def test_a_very_short_t310_turns_every_fade_into_a_failure(cluster):
    assert _run(cluster, t310=50.0).rlf.sum() > _run(cluster, t310=1000.0).rlf.sum()


def test_the_serving_cells_cio_moves_its_border(cluster):
    """A negative CIO on the serving cell pushes its UEs out sooner (more handovers out of it);
    a positive one holds them (fewer)."""
    pushed = _run(cluster, cio=-6.0)
    held = _run(cluster, cio=6.0)
    exposure = lambda r: r.attempts[0] / max(r.served_steps[0], 1.0)  # noqa: E731
    assert exposure(pushed) > exposure(held)
    assert held.served_steps[0] > pushed.served_steps[0]


def test_a_pci_shared_with_a_neighbour_fails_handovers_to_the_wrong_cell(cluster):
    clean = _run(cluster)
    shared = _run(cluster, pci=[1, 3, 3, 4, 5, 6, 7])  # cells 1 and 2 share PCI 3
    assert shared.wrong_cell.sum() > clean.wrong_cell.sum() == 0
    assert _rate(shared, "successes") < _rate(clean, "successes")


def test_no_timer_or_offset_moves_rsrp(cluster):
    """RSRP depends on the radio configuration only: the handover parameters act through the
    procedures, never on the signal."""
    cells, geometry, radio = cluster
    again = mobility.track_radio(cells, geometry)
    assert np.array_equal(again.rsrp_dbm, radio.rsrp_dbm)
    tilted = mobility.track_radio(cells.with_(tilt_deg=cells.tilt_deg + 4.0), geometry)
    assert not np.array_equal(tilted.rsrp_dbm, radio.rsrp_dbm)


def test_relation_counts_add_up(cluster):
    result = _run(cluster, ttt=64.0, hys=0.5)
    assert result.relation_attempts.sum() == result.attempts.sum()
    assert result.relation_successes.sum() == result.successes.sum()
    assert (result.relation_successes <= result.relation_attempts).all()
    assert np.trace(result.relation_attempts) == 0  # no handover to itself
