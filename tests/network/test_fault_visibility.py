"""The fault shows at the start (slow): in nearly every episode the engineer's key KPIs are off
their values without the fault, so the complaint is something the counters confirm and a fix
can be judged by its effect, not only by the parameter.

The measurement is benchmarks/check_fault_visibility.py's (loaded by path), at 10 seeds per
blueprint (490 episodes); docs/network_model.md ("Is the fault visible?") prints its table. The
intents not yet visible, and the blueprints whose fault cannot cause their symptom, are listed
with their reason, and the lists are kept honest both ways: a listed one that becomes visible
must leave its list, and an unlisted intent that falls under the bar fails.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "check_fault_visibility.py"
#: Visible in at least this share of an intent's episodes.
VISIBLE = 0.85
#: Two geometry faults move too little of what their key KPIs count (measured 2026-12-07, with
#: the sites' other sectors and their users: overshooting 70 %, timing-advance drift 55 %;
#: docs/network_model.md): the users an uptilted cell wins beyond its neighbours are drawn
#: sparsely and each counts as one of its own, and a stadium cell's offset moves its median TA
#: by less than one 39 m step.
NOT_YET = frozenset({"OVERSHOOTING_CELL", "TA_DISTRIBUTION_DRIFT"})
#: Blueprints whose fault cannot cause their symptom in the model (the model wins), left out of
#: their intent's share: a 10 m indoor micro panel over a 50 m building already looks down at
#: its far part, so more downtilt brings that part nearer its main beam (0 of 10 visible).
REFUSED = frozenset({"COV_HOLE_SUBURBAN_INDOOR"})


def _measure(seeds: int) -> tuple[dict[str, float], dict[str, float]]:
    """The visible share per intent (its refused blueprints left out) and per refused one."""
    spec = importlib.util.spec_from_file_location("check_fault_visibility", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    seen = module.measure(seeds)
    refused = {b: sum(v) / len(v) for by in seen.values() for b, v in by.items() if b in REFUSED}
    kept = {k: {b: v for b, v in by.items() if b not in REFUSED} for k, by in seen.items()}
    return module.shares(kept), refused


@pytest.mark.slow
def test_every_fault_shows_in_its_key_kpis_at_the_start():
    shares, refused = _measure(10)
    assert len(shares) == 20
    for key, share in shares.items():
        if key in NOT_YET:
            assert share < VISIBLE, f"{key} is visible in {share:.0%}: take it off NOT_YET"
        else:
            assert share >= VISIBLE, f"{key}: the fault shows in only {share:.0%} of episodes"
    assert set(refused) == REFUSED
    for blueprint_id, share in refused.items():
        assert share < VISIBLE, f"{blueprint_id} is visible in {share:.0%}: take it off REFUSED"
