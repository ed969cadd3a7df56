"""Customer care (BSS): the cost of a reset, of a read API call and of a whole oracle episode.

Run with ``python benchmarks/bench_bss.py`` (``--json``: the figures as one JSON line, for
``benchmarks/compare.py``). Everything goes through the environment
(``TelcoEnv(domain="bss")``, no embedder), so the figures include what a training loop pays:

* reset: sample the caller from a care blueprint, generate the customer base, load it into the
  environment's in-memory database (rolling the previous episode back), write the opening;
* read call: ``env.step`` of one read API (argument validation, bound-parameter queries,
  the JSON observation and the trace record), per tool;
* oracle episode: reset, the customer questions, the gold chain, submit, the verification
  (which replays the gold writes on the episode's own database and undoes them) and the
  scoring.

Medians over every care blueprint x ``--samples`` samples, cycling through the blueprints; and
the memory of one more care environment after a reset (Python objects, resident memory).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from bench_core import bytes_per_extra_env

from telcoenv.agents import OracleAgent
from telcoenv.domains.bss import bss_domain
from telcoenv.env import TelcoEnv


def _reads(values: dict) -> dict[str, dict]:
    return {
        "get_customer": {"msisdn": values["msisdn"]},
        "get_bill": {"account_id": values["account_id"], "period": values["period"]},
        "get_usage": {"msisdn": values["msisdn"], "months": 12},
        "get_payment_history": {"account_id": values["account_id"]},
        "list_plans": {"payment": "postpaid"},
        "list_addons": {"kind": "roaming"},
        "get_realtime_charges": {"msisdn": values["msisdn"]},
    }


def _ms(times: list[float]) -> float:
    return round(1000 * statistics.median(times), 3)


def main(samples: int = 12, as_json: bool = False) -> dict[str, float]:
    blueprints = [b for family in bss_domain().catalog.blueprints.values() for b in family]
    env = TelcoEnv(domain="bss", embedder=None, privileged=True)
    resets: list[float] = []
    calls: dict[str, list[float]] = {}
    episodes: list[float] = []
    for index in range(samples):
        for blueprint in blueprints:
            options = {"blueprint": blueprint.blueprint_id, "sample_index": index}
            start = time.perf_counter()
            _, info = env.reset(options=options)
            resets.append(time.perf_counter() - start)
            for name, arguments in _reads(info["privileged"]["values"]).items():
                start = time.perf_counter()
                env.step({"name": name, "arguments": arguments})
                calls.setdefault(name, []).append(time.perf_counter() - start)
            start = time.perf_counter()
            observation, info = env.reset(options=options)
            agent = OracleAgent()
            agent.reset(observation, info)
            done = False
            while not done:
                observation, _, terminated, truncated, info = env.step(agent.act(observation, info))
                done = terminated or truncated
            episodes.append(time.perf_counter() - start)
            assert info["resolved"], (blueprint.blueprint_id, info["verification"])
    every = [t for times in calls.values() for t in times]
    result = {
        "episodes": len(episodes),
        "reset_ms_median": _ms(resets),
        "read_call_ms_median": _ms(every),
        "oracle_episode_ms_median": _ms(episodes),
        **{f"read_ms_median.{name}": _ms(times) for name, times in sorted(calls.items())},
    }
    # Memory of one more care environment after a reset (bench_core's measure).
    result.update(
        bytes_per_extra_env(
            30, lambda: TelcoEnv("contact_update", domain="bss", embedder=None), ".care"
        )
    )
    print(json.dumps(result) if as_json else json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=12, help="samples per blueprint")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON line")
    args = parser.parse_args()
    main(args.samples, args.json)
