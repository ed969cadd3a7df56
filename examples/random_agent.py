"""A random agent in a synchronous vector environment: schema-valid random tool calls.

    python examples/random_agent.py --num-envs 4 --steps 50 --seed 0

Shows the vector API (``gymnasium.make_vec``; text observations come back as a tuple of
strings), the per-step reward breakdown of the shaped reward mode, and the episode metrics that
end-of-episode infos carry. No embedding model is loaded (``embedder=None``: IRA and RA are
None).
"""

from __future__ import annotations

import argparse
import statistics

import gymnasium

import telcoenv  # noqa: F401  (registers the environments)
from telcoenv.spaces import ToolCallSpace


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="telcoenv/Troubleshooting-v0")
    parser.add_argument("--num-envs", type=int, default=4)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    envs = gymnasium.make_vec(
        args.env,
        num_envs=args.num_envs,
        vectorization_mode="sync",
        embedder=None,
        reward_mode="shaped",
        max_steps=10,
    )
    # Random actions from a seeded space: a tool and arguments valid under its schema.
    space = ToolCallSpace(envs.unwrapped.envs[0].unwrapped.domain.catalog.tools, seed=args.seed)
    observations, _ = envs.reset(seed=[args.seed + i for i in range(args.num_envs)])
    print(f"{args.num_envs} episodes started; first statement: {observations[0][:90]}...")
    returns, finished = [0.0] * args.num_envs, []
    for _ in range(args.steps):
        actions = tuple(space.sample() for _ in range(args.num_envs))
        _, rewards, terminated, truncated, infos = envs.step(actions)
        for i in range(args.num_envs):
            returns[i] += float(rewards[i])
            if terminated[i] or truncated[i]:
                sas = infos["metrics"]["sas"][i]  # nested dicts are merged key by key
                finished.append(returns[i])
                print(f"env {i}: episode over, return {returns[i]:+.2f}, SAS {sas:.2f}")
                returns[i] = 0.0
    envs.close()
    if finished:
        print(f"{len(finished)} episodes, mean return {statistics.mean(finished):+.3f}")


if __name__ == "__main__":
    main()
