"""BSS customer-care data: the cost of starting an episode and of a read API call.

Run with ``python benchmarks/bench_bss.py``. "Reset" is what a BSS episode's reset will do with
its data: generate the customer base from the episode's generator and load it into the
environment's in-memory database (rolling the previous episode back). Read calls are timed on
the implementations with the episode's focal ids, one by one. Medians over 300 episodes.
"""

from __future__ import annotations

import json
import statistics
import time
from types import SimpleNamespace

import numpy as np

from telcoenv.database import EpisodeDatabase
from telcoenv.domains.bss import tools
from telcoenv.domains.bss.generator import Focal, generate
from telcoenv.domains.bss.schema import bss_metadata
from telcoenv.domains.bss.state import BssState

FOCAL = Focal(family_size=3, duplicate_month="2026-09", roaming_month="2026-10")


def _reads(state: BssState) -> dict[str, dict]:
    data = state.data
    return {
        "get_customer": {"customer_id": data.customer_id},
        "get_bill": {"account_id": data.account_id, "period": "2026-09"},
        "get_usage": {"msisdn": data.msisdns[0], "period": "2026-10"},
        "get_payment_history": {"account_id": data.account_id},
        "get_family_usage": {"account_id": data.account_id},
        "list_plans": {},
        "get_realtime_charges": {"msisdn": data.msisdns[0]},
    }


def main(episodes: int = 300) -> None:
    db = EpisodeDatabase(bss_metadata())
    resets: list[float] = []
    calls: dict[str, list[float]] = {}
    for episode in range(episodes):
        start = time.perf_counter()
        state = BssState(db, generate(np.random.default_rng(episode), "ep", FOCAL), "ep")
        resets.append(time.perf_counter() - start)
        context = SimpleNamespace(state=state, step=1)
        for name, arguments in _reads(state).items():
            start = time.perf_counter()
            tools.IMPLEMENTATIONS[name](context, **arguments)
            calls.setdefault(name, []).append(time.perf_counter() - start)
    every = [t for times in calls.values() for t in times]
    result = {
        "reset_ms_median": round(1000 * statistics.median(resets[10:]), 3),
        "read_call_ms_median": round(1000 * statistics.median(every), 3),
        **{
            f"read_ms_median.{name}": round(1000 * statistics.median(times), 3)
            for name, times in sorted(calls.items())
        },
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
