"""How often an episode's fault shows in the engineer's key KPIs at its start (network model).

    python benchmarks/check_fault_visibility.py --seeds 20        # a table, then JSON

For every intent and blueprint, ``--seeds`` episodes: the complaint's two key KPIs at the
report, with the fault, against the same cell at the same moment without it (the model's normal
configuration, the physical cause removed). A fault is *visible* when at least one of them is
off its normal value by more than the verification's recovery allowance (the same test that
later judges a fix, :func:`telcoenv.domains.network.simulation.recovery`, which at the start
reads "recovered" when the fault moved nothing). An invisible fault is a complaint the
counters contradict: an agent can only find it by reading the configuration, and a fix can
only be judged by the parameter (an SLA breach, which has no cause in the model to remove, is
judged against its threshold instead). docs/network_model.md quotes the table; the slow test
``tests/network/test_fault_visibility.py`` keeps the list of intents not yet visible honest.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict

import telcoenv
from telcoenv.domains.network import NetworkDomain, network_domain
from telcoenv.domains.network.simulation import recovery


def measure(seeds: int) -> dict[str, dict[str, list[bool]]]:
    """Per intent key, per blueprint id: whether each seed's fault was visible at the start."""
    domain = NetworkDomain(model="physical")
    seen: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for intent in network_domain().catalog.intents:
        env = telcoenv.make(intent.env_name, domain=domain, embedder=None)
        for blueprint in network_domain().catalog.blueprints[intent.key]:
            for seed in range(seeds):
                env.reset(seed=seed, options={"blueprint": blueprint.blueprint_id})
                seen[intent.key][blueprint.blueprint_id].append(
                    visible(env.unwrapped.episode.setup)
                )
        env.close()
    return seen


def visible(setup) -> bool:
    """Whether the episode's fault shows at its start. An intent with no cause to remove (an SLA
    breached by load, escalated to service assurance: nothing in the model differs without the
    fault) is judged against its own threshold: the cell's QoS compliance under the SLA's."""
    intent, sampled = setup.truth.intent, setup.truth.sampled
    if not intent.fault.parameters and intent.fault.target != "config":
        return sampled["QoS"] < sampled["sla_threshold"]
    return not all(recovery(setup.state, setup.truth).values())


def shares(seen: dict[str, dict[str, list[bool]]]) -> dict[str, float]:
    """The visible share per intent, over all its blueprints."""
    return {
        key: round(sum(sum(v) for v in by.values()) / sum(len(v) for v in by.values()), 3)
        for key, by in seen.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    args = parser.parse_args()
    seen = measure(args.seeds)
    print("| intent | visible at the start | per blueprint |")
    print("|---|---|---|")
    for key, share in shares(seen).items():
        detail = ", ".join(f"{b} {sum(v)}/{len(v)}" for b, v in seen[key].items())
        print(f"| {key} | {share:.0%} | {detail} |")
    print(json.dumps({"seeds": args.seeds, "visible": shares(seen)}))


if __name__ == "__main__":
    main()
