"""The fault shows at the start (slow): in nearly every episode the engineer's key KPIs are off
their values without the fault, so the complaint is something the counters confirm and a fix
can be judged by its effect, not only by the parameter.

The measurement is benchmarks/check_fault_visibility.py's (loaded by path), at 10 seeds per
blueprint (490 episodes); docs/network_model.md ("Is the fault visible?") prints its table. The
intents not yet visible are listed with their reason, and the list is kept honest both ways: a
listed intent that becomes visible must leave it, and an unlisted one that falls under the bar
fails.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "check_fault_visibility.py"
#: Visible in at least this share of an intent's episodes.
VISIBLE = 0.85
#: The geometry faults, calibrated with the fault in place to the blueprint's own levels (RSRP,
#: SINR, users, load), so the world absorbs much of what the tilt or offset does: the cell's own
#: users move little, or the other way (measured 2026-12-07: coverage hole 20 %, overshooting
#: 50 %, timing-advance drift 45 %; docs/network_model.md).
NOT_YET = frozenset({"COVERAGE_HOLE", "OVERSHOOTING_CELL", "TA_DISTRIBUTION_DRIFT"})


def _measure(seeds: int) -> dict[str, float]:
    spec = importlib.util.spec_from_file_location("check_fault_visibility", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.shares(module.measure(seeds))


@pytest.mark.slow
def test_every_fault_shows_in_its_key_kpis_at_the_start():
    shares = _measure(10)
    assert len(shares) == 20
    for key, share in shares.items():
        if key in NOT_YET:
            assert share < VISIBLE, f"{key} is visible in {share:.0%}: take it off NOT_YET"
        else:
            assert share >= VISIBLE, f"{key}: the fault shows in only {share:.0%} of episodes"
