"""The ``telcoenv`` command line: list environments, validate data folders, run the demo,
evaluate agents and report (network operations and customer care)."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from telcoenv.errors import TelcoEnvError, UsageError
from telcoenv.evaluation import DEFAULT_DB
from telcoenv.specs import BlueprintModel, show_fields

if TYPE_CHECKING:
    from telcoenv.evaluation.runner import RunSummary

LANGUAGES = ("en", "ar")
CONDITIONS = {"with": True, "without": False}


MIN_WIDTH = 40  # demo's lines: a label, an arrow and a tool name before the text


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _cmd_list(_: argparse.Namespace) -> int:
    from telcoenv.registration import list_envs

    for entry in list_envs():
        print(f"{entry.name:<26} {entry.id:<40} {entry.category or 'all intents'}")
    return 0


def _domain_that_can(name: str, capability: str, what: str) -> Any:
    """The domain ``name``, which must have the optional ``capability`` (a Domain member)."""
    from telcoenv.domains import get_domain

    domain = get_domain(name)
    if not hasattr(domain, capability):
        raise UsageError(f"the {name} domain cannot {what}")
    return domain


def _cmd_validate(args: argparse.Namespace) -> int:
    domain = _domain_that_can(args.domain, "load_catalog", "validate data folders")
    if args.data:  # checked before the catalogue loads: a usage error costs nothing
        _domain_that_can(args.domain, "validate_data", "validate generated data")
        if args.seeds < 1:
            raise UsageError(f"--seeds must be at least 1, got {args.seeds}")
    catalog = domain.load_catalog(args.intents, args.blueprints, args.tools)
    count = sum(len(family) for family in catalog.blueprints.values())
    print(f"ok: {len(catalog.intents)} intents, {count} blueprints, {len(catalog.tools)} tools")
    if not args.data:
        return 0
    report = domain.validate_data(catalog, args.seeds)
    scope = (
        f"{report.episodes} episodes ({args.seeds} seeds x {count} blueprints), "
        f"{report.customers} customers, {report.invoices} invoices"
    )
    if not report.violations:
        print(f"ok: every ledger invariant holds in {scope}")
        return 0
    for violation in report.violations[: args.show]:
        print(f"violation: {violation}")
    print(f"{len(report.violations)} violations in {scope}")
    return 1


def _cmd_policy(args: argparse.Namespace) -> int:
    pages = _domain_that_can(args.domain, "policy_pages", "show a written policy").policy_pages()
    written = False
    for kind, folder_name in (("html", args.html), ("pdf", args.pdf)):
        if not folder_name:
            continue
        folder = Path(folder_name)
        folder.mkdir(parents=True, exist_ok=True)
        for page_id, page in pages.items():
            body = page.html.encode("utf-8") if kind == "html" else page.pdf()
            (folder / f"{page_id}.{kind}").write_bytes(body)
        print(f"wrote {len(pages)} pages as {kind.upper()} to {folder}")
        written = True
    if written:
        return 0
    if args.page is None:
        for page_id, page in pages.items():
            print(f"{page_id:24} {page.status:10} {page.segment:8} {page.title}")
        return 0
    if args.page not in pages:
        raise UsageError(f"unknown page {args.page!r}; pages: {', '.join(pages)}")
    print(pages[args.page].text, end="")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from telcoenv.agents import OracleAgent
    from telcoenv.domains import get_domain
    from telcoenv.env import TelcoEnv

    if args.width < MIN_WIDTH:
        raise UsageError(f"--width must be at least {MIN_WIDTH} characters, got {args.width}")
    agent = OracleAgent()
    episodes = 0
    domain = get_domain(args.domain)
    label = f"{domain.counterpart}: "
    languages = _items("--lang", args.lang, LANGUAGES)
    for intent in domain.catalog.intents:
        for lang in languages:
            env = TelcoEnv(intent.env_name, lang=lang, privileged=True, domain=domain)
            observation, info = env.reset(seed=args.seed)
            agent.reset(observation, info)
            print(f"\n=== {intent.key} [{lang}] {info['episode_id']}")
            print(
                textwrap.fill(
                    _short(observation, args.width * 3),
                    args.width,
                    initial_indent=label,
                    subsequent_indent=" " * len(label),
                )
            )
            done, reward = False, 0.0
            while not done:
                action = agent.act(observation, info)
                observation, reward, terminated, truncated, info = env.step(action)
                done = terminated or truncated
                if isinstance(action, str):  # a message to the counterpart
                    print(f"  -> (message) {_short(action, args.width - 15)}")
                else:
                    arguments = json.dumps(action["arguments"], ensure_ascii=False)
                    print(f"  -> {action['name']}({_short(arguments, args.width - 10)})")
                print(f"     {_short(observation, args.width - 5)}")
            metrics = info["metrics"]
            scores = " ".join(
                f"{name.upper()}={float(metrics[name]):.2f}"
                for name in ("ira", "msc", "eap", "sas", "ra", "args", "answer")
                if metrics[name] is not None
            )
            print(
                f"  reward={reward:.2f} {scores} resolved={info['resolved']} "
                f"chain={' > '.join(info['predicted_chain'])}"
            )
            episodes += 1
    print(f"\n{episodes} episodes completed; IRA/RA embedder: {metrics['embedder']}")
    return 0


def _cmd_rescore(args: argparse.Namespace) -> int:
    domain = _domain_that_can(args.domain, "rescore_release", "re-score a published release")

    def warn(message: str) -> None:  # a repaired or skipped release file: one line each
        print(f"telcoenv: warning: {message}", file=sys.stderr)

    loaded, report = domain.rescore_release(
        args.release, args.weights, check_blueprints=args.check_blueprints, warn=warn
    )
    if args.format == "json":
        print(report.model_dump_json(indent=2))
    else:
        if loaded:
            print(f"{loaded} blueprints load as telcoenv blueprints")
        print(f"{report.records} evaluation records; BRS weights {report.weights}")
        print("values: recomputed / stored\n")
        print(report.markdown())
        verdict = "all equal to the stored values" if report.all_exact else "MISMATCHES found"
        print(f"\nMSC, EAP and SAS per sample: {verdict}")
    return 0 if report.all_exact else 1


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _items(flag: str, text: str, valid: Sequence[str] | None = None) -> list[str]:
    """The comma-separated values of ``flag``: at least one, each of ``valid`` when given."""
    hint = f"give {' and/or '.join(valid)}" if valid else "give at least one"
    items = _split(text)
    if not items:
        raise UsageError(f"{flag} is empty; {hint}")
    unknown = [item for item in items if valid is not None and item not in valid]
    if unknown:
        raise UsageError(f"{flag}: unknown {', '.join(map(repr, unknown))}; {hint}")
    return items


def _text(flag: str, value: str) -> str:
    """``value`` of ``flag``, refused if it cannot be stored as text (bytes that are not UTF-8
    in the command line reach Python as lone surrogates)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"{flag} {value!r} holds bytes that are not UTF-8 text") from None
    return value


def _at_least(flag: str, value: int) -> None:
    if value < 1:
        raise UsageError(f"{flag} must be at least 1, got {value}")


def _workers(text: str) -> int:
    """--workers as a number; ``auto``: one per core this process may run on."""
    if text.strip().lower() == "auto":
        try:
            return len(os.sched_getaffinity(0))
        except AttributeError:  # not on Linux
            return os.cpu_count() or 1
    try:
        return int(text)
    except ValueError:
        raise UsageError(f"--workers must be a number or auto, got {text!r}") from None


def _repeats(text: str) -> int:
    """--repeats as a whole number of at least 1 (read here: argparse would print its usage too)."""
    try:
        repeats = int(text)
    except ValueError:
        raise UsageError(f"--repeats must be a whole number, got {text!r}") from None
    _at_least("--repeats", repeats)
    return repeats


def _agent_options(text: str) -> dict[str, Any]:
    """--agent-options as a dict (its text is never echoed: it may hold an API key)."""
    if not text.strip():
        return {}
    try:
        options = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--agent-options is not valid JSON: {exc}") from None
    if not isinstance(options, dict):
        raise UsageError(
            '--agent-options must be a JSON object such as \'{"model": "m"}\', '
            f"got a JSON {type(options).__name__}"
        )
    return options


def _output_folder(flag: str, path: Path) -> Path:
    """Create ``path`` as a folder, or refuse it (a file, not creatable, not writable)."""
    if path.exists() and not path.is_dir():
        raise UsageError(f"{flag} {path} is a file, not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{flag} {path}: cannot create the folder: {exc.strerror}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {path} is not writable")
    return path


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None


def _cmd_evaluate(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from telcoenv.evaluation.runner import RunConfig, build_grid, check_agent, evaluate
    from telcoenv.evaluation.store import ResultStore

    options = _agent_options(args.agent_options)
    intents = "all" if args.intents.strip() == "all" else _items("--intents", args.intents)
    languages = _items("--lang", args.lang, LANGUAGES)
    conditions = _items("--intent-list", args.intent_list, list(CONDITIONS))
    difficulties = _items("--difficulty", args.difficulty)
    args.workers = _workers(args.workers)
    repeats = _repeats(args.repeats)
    for flag, value in (
        ("--samples", args.samples),
        ("--workers", args.workers),
        ("--concurrency", args.concurrency),
        ("--max-steps", args.max_steps),
    ):
        _at_least(flag, value)
    if not (math.isfinite(args.timeout) and args.timeout >= 0):
        raise UsageError(f"--timeout must be seconds >= 0 (0: no limit), got {args.timeout:g}")
    if args.address and args.backend != "ray":
        raise UsageError("--address is the address of a Ray cluster: add --backend ray")
    grid = build_grid(
        intents,
        args.samples,
        languages,
        [CONDITIONS[c] for c in conditions],
        domain=args.domain,
        difficulties=difficulties,
        split=args.split or "all",
    )
    config = RunConfig(
        agent=args.agent,
        agent_options=options,
        seed=args.seed,
        embedder=None if args.embedder == "none" else args.embedder,
        max_steps=args.max_steps,
        episode_timeout=args.timeout,
        tool_format=args.tool_format,
        repeats=repeats,
        world_models={"network": args.network_model} if args.network_model else {},
        split=args.split or "all",
    )
    if args.network_model and not any(spec.domain == "network" for spec in grid):
        raise UsageError("--network-model applies to the network domain only")
    # An agent that cannot play the grid (or not concurrently) fails before the store opens.
    check_agent(config, grid, args.concurrency)
    run = _text("--run", args.run) or f"{args.agent.replace(':', '_')}-seed{args.seed}"
    store = ResultStore(args.db)
    bars: list[Any] = []  # made at the first report, when the number of pending episodes is known

    def progress(done: int, pending: int) -> None:
        if not bars:
            bars.append(tqdm(total=pending, desc=run, unit="ep", disable=args.quiet))
        bars[0].update(done - bars[0].n)

    summary = evaluate(
        store,
        run,
        grid,
        config,
        workers=args.workers,
        concurrency=args.concurrency,
        backend=args.backend,
        address=args.address or None,
        progress=progress,
        retry_failed=args.retry_failed,
    )
    for bar in bars:
        bar.close()
    print(_summary_line(summary, store.where))
    if summary.interrupted:
        print("interrupted: everything finished so far is saved; re-run the command to resume")
        return 130
    if summary.failed and args.retry_failed:
        print("failed episodes are run again when this command is re-run (--no-retry-failed)")
    return 0


def _summary_line(summary: RunSummary, where: str) -> str:
    extras = [f"{summary.failed} failed"]
    if summary.retried:
        extras.append(f"{summary.retried} earlier failures retried")
    elsewhere = f"{summary.elsewhere} run by another process, " if summary.elsewhere else ""
    return (
        f"run {summary.run!r}: {summary.stored} episodes stored now ({', '.join(extras)}), "
        f"{summary.skipped} already stored, {elsewhere}of {summary.total}; "
        f"{summary.seconds:.1f} s ({summary.db_seconds:.1f} s of database writes) -> {where}"
    )


def _cmd_report(args: argparse.Namespace) -> int:
    from telcoenv.evaluation.html_report import check_output_path, write_html
    from telcoenv.evaluation.report import build_report, render, write_plots
    from telcoenv.evaluation.store import ResultStore

    runs = [_text("--run", run) for run in args.run]
    store = ResultStore(args.db, create=False)
    out = _output_folder("--out", Path(args.out)) if args.out else None
    html = check_output_path(Path(args.html)) if args.html else None
    records = {run: store.records([run], with_trace=html is not None) for run in runs}
    report = build_report(records, args.weights)
    print(render(report, args.format))
    if html is not None:
        count = write_html(records, html, args.weights, report)
        print(f"{count} episodes written to {html.resolve()}", file=sys.stderr)
    if out is not None:
        for fmt in ("md", "csv", "json"):
            _write(out / f"report.{fmt}", render(report, fmt))
        try:
            plots = write_plots(report, out)
        except OSError as exc:
            raise UsageError(f"cannot write the plots to {out}: {exc.strerror}") from None
        print(f"report and {len(plots)} plots written to {out.resolve()}", file=sys.stderr)
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    from telcoenv.domains import domain_names, get_domain

    for domain in domain_names():
        if _show(args.name, get_domain(domain).catalog):
            return 0
    valid = sorted(
        name
        for domain in domain_names()
        for name in [
            *(i.env_name for i in get_domain(domain).catalog.intents),
            *get_domain(domain).catalog.tools,
        ]
    )
    raise TelcoEnvError(
        f"nothing named {args.name!r}: give an intent, blueprint id or tool ({valid})"
    )


def _show(name: str, catalog: Any) -> bool:
    """Print the tool, blueprint or intent of ``catalog`` called ``name``; False if none."""
    if name in catalog.tools:
        print(json.dumps(catalog.tools[name].openai(), indent=2, ensure_ascii=False))
        return True
    try:
        blueprint = catalog.blueprint(name)
    except TelcoEnvError:
        blueprint = None
    if blueprint is not None:
        about = getattr(blueprint, "description", "")
        print(f"{blueprint.blueprint_id} ({blueprint.intent})" + (f": {about}" if about else ""))
        lines = (
            blueprint.show_lines()
            if isinstance(blueprint, BlueprintModel)
            else show_fields(blueprint)
        )
        print("\n".join(lines))
        return True
    intent = next(
        (i for i in catalog.intents if name in (i.key, i.env_name, f"telcoenv/{i.gym_name}-v0")),
        None,
    )
    if intent is None:
        return False
    print(f"{intent.key} / {intent.env_name} ({catalog.categories[intent.category]['en']})")
    print(f"  {intent.label.en} | {intent.label.ar}")
    for line in intent.show_lines():
        print(f"  {line}")
    print(f"  blueprints: {', '.join(b.blueprint_id for b in catalog.blueprints[intent.key])}")
    return True


def _cmd_generate(args: argparse.Namespace) -> int:
    from telcoenv.domains import DEFAULT_DOMAIN
    from telcoenv.options import GUIDED, check_difficulty, check_seed

    if args.trajectories:
        return _generate_trajectories(args)
    narrowed = [flag for flag, value in _TRAJECTORY_FLAGS.items() if getattr(args, value)]
    if narrowed:
        raise UsageError(f"{', '.join(narrowed)}: only with --trajectories")
    if args.domain == "all":
        raise UsageError("--domain all is for --trajectories; a dataset is one domain's")
    args.domain = args.domain or DEFAULT_DOMAIN

    domain = _domain_that_can(args.domain, "generate_dataset", "generate a dataset")
    if args.network_model:
        domain = _network_variant(args)
    _at_least("--samples", args.samples)
    tier = {}
    if args.difficulty != GUIDED:  # only a domain that offers tiers is told one
        tier["difficulty"] = check_difficulty(domain, args.difficulty, "--difficulty")
    check_seed(args.seed)  # before any folder is made for the dataset
    if not args.out:
        raise UsageError("--out is empty: give the dataset's folder (or a .jsonl file)")
    out = Path(args.out)
    if args.format == "jsonl" and out.suffix == ".jsonl":  # a file
        if out.is_dir():
            raise UsageError(f"--out {out} is a folder; give a .jsonl file or another name")
        _output_folder("--out", out.parent)
    else:
        _output_folder("--out", out)
    if args.split not in (None, "all"):  # only a domain that knows splits is told one
        tier["split"] = args.split
    count = domain.generate_dataset(args.out, args.samples, args.seed, args.format, **tier)
    unit = "samples" if args.format == "json" else "chat rows"
    print(f"{count} {unit} written to {args.out}")
    return 0


def _generate_trajectories(args: argparse.Namespace) -> int:
    from telcoenv.options import check_seed
    from telcoenv.trajectories import EXPERTS, write_trajectories

    _at_least("--samples", args.samples)
    check_seed(args.seed)
    if args.format != "json" or args.difficulty != "guided" or args.network_model:
        raise UsageError("--trajectories takes --samples, --seed, --domain, --split and --out")
    out = Path(args.out or "")
    if out.suffix != ".jsonl" or out.is_dir():
        raise UsageError(f"--out {str(out)!r}: give the .jsonl file the trajectories go to")
    _output_folder("--out", out.parent)
    domains = list(EXPERTS) if args.domain in (None, "all") else [args.domain]
    if any(domain not in EXPERTS for domain in domains):
        raise UsageError(f"--domain: trajectories are played in {', '.join(EXPERTS)} or all")
    split = args.split or "train"  # a warm-start set is the train split's
    narrowed = {
        "intents": _split(args.intents) if args.intents else None,
        "agents": _split(args.agents) if args.agents else None,
        "agent_options": _agent_options(args.agent_options),
        **({"tool_set": args.tool_set} if args.tool_set else {}),
        **({"tool_format": args.tool_format} if args.tool_format else {}),
    }
    count = write_trajectories(out, args.samples, args.seed, domains, split=split, **narrowed)
    print(f"{count} resolved {split}-split episodes written to {out}")
    return 0


#: The flags that narrow or shape the trajectories, by the argument they set.
_TRAJECTORY_FLAGS = {
    "--intents": "intents",
    "--agents": "agents",
    "--agent-options": "agent_options",
    "--tool-set": "tool_set",
    "--tool-format": "tool_format",
}


def _split_flag(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--split",
        default=None,
        choices=["all", "train", "test"],
        help="the episodes of one split: test holds out whole blueprints, one episode in five "
        "and a third of the phrasings (telcoenv.splits); default all (train for "
        "--trajectories)",
    )


def _network_model_flag(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--network-model",
        default=None,
        choices=["blueprint", "physical"],
        help="the network domain's KPI model (default: physical, docs/network_model.md; "
        "blueprint: the blueprint's sample and a causal model around it)",
    )


def _network_variant(args: argparse.Namespace) -> Any:
    """The network domain running ``--network-model`` (for a command on the network domain)."""
    from telcoenv.domains import get_domain

    if args.domain not in (None, "network"):
        raise UsageError("--network-model applies to the network domain only")
    return get_domain("network", world_model=args.network_model)


def _cmd_audit(args: argparse.Namespace) -> int:
    from telcoenv.audit import audit

    _at_least("--seeds", args.seeds)
    honest = _split(args.honest) if args.honest else None
    tiers = _split(args.tiers) if args.tiers else None

    def progress(what: str) -> None:
        if not args.quiet:
            print(f"playing {what}", file=sys.stderr, flush=True)

    domain: Any = args.domain
    if args.network_model:
        domain = _network_variant(args)
    report = audit(
        args.env,
        domain=domain,
        seeds=args.seeds,
        tiers=tiers,
        lang=args.lang,
        honest=honest,
        progress=progress,
    )
    if args.format == "json":
        print(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
    else:
        print(report.summary() if args.summary else report.table())
    failed = [f"{r.policy} ({r.tier}): {r.verdict}" for r in report.rows if not r.passes]
    if failed:
        _error("the reward pays for work not done, or refuses correct work: " + "; ".join(failed))
        return 1
    return 0


def _cmd_mcp(args: argparse.Namespace) -> int:
    try:
        from telcoenv.integrations.mcp import serve_mcp
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith(("mcp", "anyio")):
            raise
        raise UsageError("telcoenv mcp needs the mcp SDK: pip install 'telcoenv[mcp]'") from None
    if not 0 < args.port < 65536:
        raise UsageError(f"--port must be a TCP port (1-65535), got {args.port}")
    serve_mcp(
        args.env,
        transport=args.transport,
        host=args.host,
        port=args.port,
        seed=args.seed,
        lang=args.lang,
        embedder=None if args.embedder == "none" else args.embedder,
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    from telcoenv.domains import DEFAULT_DOMAIN, domain_names

    parser = argparse.ArgumentParser(prog="telcoenv", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="list the registered environments").set_defaults(
        func=_cmd_list
    )
    validate = commands.add_parser("validate", help="validate intents, blueprints and tools")
    validate.add_argument("--intents", help="intents YAML file (default: packaged)")
    validate.add_argument("--blueprints", help="blueprints folder (default: packaged)")
    validate.add_argument("--tools", help="tool specs folder (default: packaged)")
    validate.add_argument(
        "--domain", default=DEFAULT_DOMAIN, choices=domain_names(), help="which catalogue"
    )
    validate.add_argument(
        "--data",
        action="store_true",
        help="also generate episodes and check their data's invariants (customer care: the "
        "ledger's sums, dates, statuses, balances, usage against charges, eligibility)",
    )
    validate.add_argument(
        "--seeds", type=int, default=20, help="with --data: episodes per blueprint (default 20)"
    )
    validate.add_argument(
        "--show", type=int, default=20, help="with --data: violations printed (default 20)"
    )
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
    rescore.add_argument(
        "--domain", default=DEFAULT_DOMAIN, choices=domain_names(), help="whose release"
    )
    rescore.set_defaults(func=_cmd_rescore)
    evaluate = commands.add_parser("evaluate", help="run an agent over the benchmark grid")
    evaluate.add_argument(
        "--agent",
        required=True,
        help="oracle, investigator, care_investigator, heuristic, random, openai, or "
        "module:factory",
    )
    evaluate.add_argument("--agent-options", default="", help="JSON object of agent options")
    evaluate.add_argument(
        "--intents",
        default="all",
        help="all (of --domain), or comma-separated intents (names, keys or Gymnasium ids)",
    )
    evaluate.add_argument(
        "--domain",
        choices=[*domain_names(), "all"],
        help="network operations, customer care (bss) or both (default: network for --intents "
        "all, the intents' own domains for named intents)",
    )
    evaluate.add_argument("--samples", type=int, default=30, help="samples per blueprint")
    evaluate.add_argument("--lang", default="en,ar")
    evaluate.add_argument("--intent-list", default="with", help="with, without, or with,without")
    evaluate.add_argument(
        "--difficulty",
        default="guided",
        help="guided (the published statements), symptom, noisy, or several comma-separated",
    )
    evaluate.add_argument("--seed", type=int, default=0)
    _split_flag(evaluate)
    evaluate.add_argument(
        "--repeats",
        default="1",
        help="plays of each episode, for pass^k and pass@k in the report (a run may grow it)",
    )
    evaluate.add_argument(
        "--workers", default="1", help="local worker processes, or auto: one per usable core"
    )
    evaluate.add_argument(
        "--concurrency",
        type=int,
        default=1,
        help="episodes at once in each worker, for an agent that waits on a server (openai)",
    )
    evaluate.add_argument(
        "--backend",
        default="local",
        choices=["local", "ray"],
        help="local worker processes, or a Ray cluster",
    )
    evaluate.add_argument("--address", default="", help="Ray cluster address (default: local)")
    evaluate.add_argument(
        "--embedder",
        default="multilingual",
        help="multilingual, english, e5, a model path, or none",
    )
    evaluate.add_argument("--max-steps", type=int, default=20)
    evaluate.add_argument(
        "--tool-format",
        default="full",
        choices=["full", "compact"],
        help="compact: short tool specs and instructions (under 2,250 tokens) for small models",
    )
    evaluate.add_argument(
        "--timeout", type=float, default=300.0, help="seconds before an episode fails (0: none)"
    )
    evaluate.add_argument("--db", default=DEFAULT_DB, help="SQLAlchemy URL of the results store")
    evaluate.add_argument("--run", default="", help="run name (default: from agent and seed)")
    evaluate.add_argument(
        "--no-retry-failed",
        dest="retry_failed",
        action="store_false",
        help="on resume, keep the failed episodes instead of running them again",
    )
    evaluate.add_argument("--quiet", action="store_true", help="no progress bar")
    _network_model_flag(evaluate)
    evaluate.set_defaults(func=_cmd_evaluate)
    report = commands.add_parser("report", help="tables and plots of stored runs")
    report.add_argument("--db", default=DEFAULT_DB)
    report.add_argument("--run", action="append", required=True, help="a run (repeatable)")
    report.add_argument("--format", default="md", choices=["md", "csv", "json"])
    report.add_argument("--weights", default="equal", choices=["equal", "paper"])
    report.add_argument("--out", default="", help="folder for report.{md,csv,json} and PNG plots")
    report.add_argument(
        "--html", default="", help="one self-contained HTML page: tables, plots, every episode"
    )
    report.set_defaults(func=_cmd_report)
    generate = commands.add_parser("generate", help="write the TelcoAgent-Bench dataset")
    generate.add_argument("--samples", type=int, default=30, help="samples per blueprint")
    generate.add_argument("--seed", type=int, default=0)
    _split_flag(generate)
    generate.add_argument(
        "--trajectories",
        action="store_true",
        help="write expert trajectories instead (an SFT warm-start set: the oracle's and the "
        "investigators' resolved train-split episodes as chat transcripts, to --out FILE.jsonl)",
    )
    generate.add_argument("--intents", help="with --trajectories: comma-separated intents only")
    generate.add_argument(
        "--agents",
        help="with --trajectories: comma-separated experts only (e.g. oracle), or another agent "
        "(e.g. openai: its resolved episodes, a rejection-sampling set)",
    )
    generate.add_argument(
        "--agent-options",
        default="",
        help="with --trajectories: JSON object of options for an agent that is no expert "
        '(e.g. \'{"base_url": "http://127.0.0.1:8000/v1", "temperature": 0.7}\')',
    )
    generate.add_argument(
        "--tool-set",
        choices=["all", "core"],
        help="with --trajectories: the tools the episodes offer (as the agent will be offered)",
    )
    generate.add_argument(
        "--tool-format", choices=["full", "compact"], help="with --trajectories: as --tool-set"
    )
    generate.add_argument("--out", required=True, help="output folder (or .jsonl file)")
    generate.add_argument("--format", default="json", choices=["json", "jsonl"])
    generate.add_argument(
        "--difficulty", default="guided", help="guided (the published statements), symptom or noisy"
    )
    generate.add_argument(
        "--domain",
        default=None,
        choices=[*domain_names(), "all"],
        help="whose dataset (default network), or whose trajectories (default all)",
    )
    _network_model_flag(generate)
    generate.set_defaults(func=_cmd_generate)
    policy = commands.add_parser(
        "policy", help="the operator's written policy: its pages, one page, or all as HTML or PDF"
    )
    policy.add_argument("page", nargs="?", help="print this page (an -ar page is in Arabic)")
    policy.add_argument("--html", metavar="DIR", help="write every page as HTML into DIR")
    policy.add_argument(
        "--pdf", metavar="DIR", help='write every page as PDF into DIR (the "pdf" extra)'
    )
    policy.add_argument("--domain", default="bss", choices=domain_names(), help="whose policy")
    policy.set_defaults(func=_cmd_policy)
    show = commands.add_parser("show", help="an intent, blueprint or tool at a glance")
    show.add_argument("name")
    show.set_defaults(func=_cmd_show)
    demo = commands.add_parser("demo", help="run a gold-path agent through every intent")
    demo.add_argument("--lang", default="en,ar", help="comma-separated languages (en,ar)")
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--width", type=int, default=110, help="characters per printed line")
    demo.add_argument("--domain", default=DEFAULT_DOMAIN, choices=domain_names())
    demo.set_defaults(func=_cmd_demo)
    audit = commands.add_parser(
        "audit",
        help="play exploit policies against the honest agents in every reward mode",
        description="Play scripted exploit policies (refused calls, blind fixes, constant "
        "answers, never submitting, ...) and the honest baselines over the same seeded "
        "episodes, and print each one's resolve rate and mean reward per reward mode. Exits "
        "with 1 when an exploit earns within the margin of the honest agents, or correct work "
        "in other words is refused.",
    )
    audit.add_argument("--env", required=True, help="environment name or id (e.g. troubleshooting)")
    audit.add_argument("--domain", default=None, help="the domain, for a plug-in domain's env")
    _network_model_flag(audit)
    audit.add_argument("--seeds", type=int, default=50, help="episodes per policy and tier")
    audit.add_argument("--tiers", default="", help="difficulty tiers (default: all of the domain)")
    audit.add_argument("--lang", default="en", choices=LANGUAGES)
    audit.add_argument(
        "--honest", default="", help="honest agents (default: the domain's baselines and oracle)"
    )
    audit.add_argument("--format", default="md", choices=["md", "json"])
    audit.add_argument(
        "--summary", action="store_true", help="one line per policy: its worst case over tiers"
    )
    audit.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    audit.set_defaults(func=_cmd_audit)
    mcp = commands.add_parser("mcp", help="serve one episode at a time over MCP")
    mcp.add_argument("--env", default="troubleshooting", help="telcoenv name or Gymnasium id")
    mcp.add_argument("--seed", type=int, default=0, help="the first episode's seed")
    mcp.add_argument("--lang", default="en", choices=LANGUAGES)
    mcp.add_argument("--transport", default="stdio", choices=["stdio", "http"])
    mcp.add_argument("--host", default="127.0.0.1", help="address to serve HTTP on")
    mcp.add_argument("--port", type=int, default=8000, help="port to serve HTTP on")
    mcp.add_argument(
        "--embedder",
        default="multilingual",
        help="embedder of IRA and RA: multilingual, english, e5, a model path, or none",
    )
    mcp.set_defaults(func=_cmd_mcp)
    return parser


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that flushing it at exit does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, AttributeError, ValueError):  # stdout without a file descriptor
        pass


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code = args.func(args)
        if sys.stdout is not None:  # None: started with stdout closed
            sys.stdout.flush()  # a reader gone (| head) fails here, not at interpreter exit
        return code
    except TelcoEnvError as exc:
        _error(str(exc))
        return 2
    except BrokenPipeError:  # the reader of our output stopped reading: nothing to report
        _quiet_stdout()
        return 1
    except OSError as exc:  # a file, folder or device failed under us: full, too long a name...
        if not _flushed():
            _quiet_stdout()
        where = f"{exc.filename}: " if exc.filename else ""
        _error(f"{where}{exc.strerror or exc}")
        return 1
    except KeyboardInterrupt:
        return 130


def _error(message: str) -> None:
    """The one line a user mistake gets, also for a message of several (a database server's)."""
    line = "; ".join(part.strip() for part in message.splitlines() if part.strip())
    print(f"telcoenv: error: {line}", file=sys.stderr)


def _flushed() -> bool:
    """Whether what was written to stdout went out (False: stdout itself failed)."""
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except (OSError, ValueError):
        return False
    return True


if __name__ == "__main__":
    raise SystemExit(main())
