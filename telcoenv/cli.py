"""The ``telcoenv`` command line: list environments, validate data folders, run the demo."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from collections.abc import Sequence

from telcoenv.errors import TelcoEnvError


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _cmd_list(_: argparse.Namespace) -> int:
    from telcoenv.registration import list_envs

    for entry in list_envs():
        print(f"{entry.name:<26} {entry.id:<40} {entry.category or 'all intents'}")
    return 0


def _cmd_validate(args: argparse.Namespace) -> int:
    from telcoenv.catalog import load_catalog
    from telcoenv.domains.network.kpis import kpi_catalogue

    catalog = load_catalog(
        args.intents, args.blueprints, args.tools, known_kpis=kpi_catalogue().kpis
    )
    count = sum(len(family) for family in catalog.blueprints.values())
    print(f"ok: {len(catalog.intents)} intents, {count} blueprints, {len(catalog.tools)} tools")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from telcoenv.agents import OracleAgent
    from telcoenv.catalog import default_catalog
    from telcoenv.env import TelcoEnv

    agent = OracleAgent()
    episodes = 0
    for intent in default_catalog().intents:
        for lang in args.lang.split(","):
            env = TelcoEnv(intent.env_name, lang=lang, privileged=True)
            observation, info = env.reset(seed=args.seed)
            agent.reset(observation, info)
            print(f"\n=== {intent.key} [{lang}] {info['episode_id']}")
            print(
                textwrap.fill(
                    _short(observation, args.width * 3),
                    args.width,
                    initial_indent="engineer: ",
                    subsequent_indent="          ",
                )
            )
            done, reward = False, 0.0
            while not done:
                action = agent.act(observation, info)
                observation, reward, terminated, truncated, info = env.step(action)
                done = terminated or truncated
                arguments = json.dumps(action["arguments"], ensure_ascii=False)
                print(f"  -> {action['name']}({_short(arguments, args.width - 10)})")
                print(f"     {_short(observation, args.width - 5)}")
            metrics = info["metrics"]
            scores = " ".join(
                f"{name.upper()}={metrics[name]:.2f}"
                for name in ("ira", "msc", "eap", "sas", "ra")
                if metrics[name] is not None
            )
            print(f"  reward={reward:.2f} {scores} chain={' > '.join(info['predicted_chain'])}")
            episodes += 1
    print(f"\n{episodes} episodes completed; IRA/RA embedder: {metrics['embedder']}")
    return 0


def _cmd_rescore(args: argparse.Namespace) -> int:
    from telcoenv.release import load_evaluations, load_release_blueprints, rescore

    blueprints = load_release_blueprints(args.release) if args.check_blueprints else []
    report = rescore(load_evaluations(args.release), weights=args.weights)
    if args.format == "json":
        print(report.model_dump_json(indent=2))
    else:
        if blueprints:
            print(f"{len(blueprints)} blueprints load as telcoenv blueprints")
        print(f"{report.records} evaluation records; BRS weights {report.weights}")
        print("values: recomputed / stored\n")
        print(report.markdown())
        verdict = "all equal to the stored values" if report.all_exact else "MISMATCHES found"
        print(f"\nMSC, EAP and SAS per sample: {verdict}")
    return 0 if report.all_exact else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="telcoenv", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="list the registered environments").set_defaults(
        func=_cmd_list
    )
    validate = commands.add_parser("validate", help="validate intents, blueprints and tools")
    validate.add_argument("--intents", help="intents YAML file (default: packaged)")
    validate.add_argument("--blueprints", help="blueprints folder (default: packaged)")
    validate.add_argument("--tools", help="tool specs folder (default: packaged)")
    validate.set_defaults(func=_cmd_validate)
    rescore = commands.add_parser(
        "rescore", help="recompute the metrics of a TelcoAgent-Bench release from its predictions"
    )
    rescore.add_argument("release", help="folder of the release (BLUEPRINTS/, TelcoAgent-Metrics/)")
    rescore.add_argument(
        "--weights",
        default="equal",
        choices=["equal", "paper"],
        help="BRS weights: equal thirds or (0.5, 0.3, 0.2)",
    )
    rescore.add_argument("--format", default="md", choices=["md", "json"])
    rescore.add_argument(
        "--no-blueprints",
        dest="check_blueprints",
        action="store_false",
        help="do not load the release's blueprints",
    )
    rescore.set_defaults(func=_cmd_rescore)
    demo = commands.add_parser("demo", help="run a gold-path agent through every intent")
    demo.add_argument("--lang", default="en,ar", help="comma-separated languages (en,ar)")
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--width", type=int, default=110, help="characters per printed line")
    demo.set_defaults(func=_cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except TelcoEnvError as exc:
        print(f"telcoenv: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
