"""Run an agent over the benchmark grid and commit every finished episode to the results store.

The grid is blueprint x sample x language x IRA condition, over the network intents, the
customer-care intents or both (``domain``). An episode is fixed by
``(blueprint, sample_index)``, so re-running a run resumes it: episodes already stored are
skipped, and every finished episode is committed at once, so a run killed at any moment (SIGKILL
included) loses only the episodes in flight. Ctrl-C stops cleanly after saving what finished.

Episodes run in local worker processes (``workers``); the parent process is the only writer.
An agent that raises, hangs past ``episode_timeout`` or returns garbage fails that episode (the
error is stored) and the run goes on.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from telcoenv.agents import Agent, load_agent
from telcoenv.domains import DOMAINS, get_domain
from telcoenv.env import TelcoEnv
from telcoenv.errors import EpisodeOptionError, TelcoEnvError, UnknownIntentError
from telcoenv.evaluation.store import ResultStore
from telcoenv.metrics.embeddings import MULTILINGUAL, USEEmbedder


@dataclass(frozen=True, slots=True)
class EpisodeSpec:
    """One cell of the evaluation grid."""

    intent: str
    category: str
    blueprint_id: str
    sample_index: int
    language: str
    intent_list: bool
    domain: str = "network"

    @property
    def key(self) -> str:
        condition = "with" if self.intent_list else "without"
        return f"{self.blueprint_id}|{self.sample_index}|{self.language}|{condition}"


@dataclass(frozen=True, slots=True)
class RunConfig:
    """Everything that defines a run (stored with it)."""

    agent: str
    agent_options: dict[str, Any]
    seed: int = 0
    embedder: str | None = "multilingual"
    max_steps: int = 20
    episode_timeout: float = 300.0


def _domains(domain: str) -> list[str]:
    if domain == "all":
        return list(DOMAINS)
    if domain not in DOMAINS:
        raise EpisodeOptionError(f"unknown domain {domain!r}; use {', '.join(DOMAINS)} or all")
    return [domain]


def _chosen(intents: str | Sequence[str], domain: str) -> list[tuple[str, Any]]:
    """(domain, intent) pairs: every intent of the domains, or the named ones (any domain)."""
    if intents == "all":
        return [(d, i) for d in _domains(domain) for i in get_domain(d).catalog.intents]
    chosen = []
    for name in intents:
        for candidate in DOMAINS:
            try:
                chosen.append((candidate, get_domain(candidate).catalog.intent(name)))
                break
            except UnknownIntentError:
                continue
        else:
            valid = [i.env_name for d in DOMAINS for i in get_domain(d).catalog.intents]
            raise UnknownIntentError(f"unknown intent {name!r}; valid intents: {', '.join(valid)}")
    return chosen


def build_grid(
    intents: str | Sequence[str] = "all",
    samples: int = 30,
    languages: Sequence[str] = ("en", "ar"),
    conditions: Sequence[bool] = (True,),
    domain: str = "network",
) -> list[EpisodeSpec]:
    """The grid in a fixed order; unknown intents, domains or languages fail at once.

    ``intents="all"`` takes every intent of ``domain`` (``"network"``, ``"bss"`` or ``"all"``);
    named intents are looked up in every domain.
    """
    chosen = _chosen(intents, domain)
    for lang in languages:
        if lang not in ("en", "ar"):
            raise EpisodeOptionError(f"unknown language {lang!r}; use en and/or ar")
    if samples < 1:
        raise EpisodeOptionError(f"samples must be at least 1, got {samples}")
    return [
        EpisodeSpec(
            intent.key, intent.category, blueprint.blueprint_id, index, lang, condition, name
        )
        for name, intent in chosen
        for blueprint in get_domain(name).catalog.blueprints[intent.key]
        for index in range(samples)
        for lang in languages
        for condition in conditions
    ]


class _EpisodeTimeout(Exception):
    pass


def _alarm(*_: Any) -> None:
    raise _EpisodeTimeout


class _Worker:
    """An agent and an environment, built once per worker process."""

    def __init__(self, config: RunConfig, threads: int) -> None:
        self.config = config
        self.agent: Agent = load_agent(config.agent, **config.agent_options)
        self.embedder: Any = config.embedder
        if self.embedder == MULTILINGUAL:  # its own instance: BLAS threads sized to the workers
            self.embedder = USEEmbedder(threads=threads)
        self.envs: dict[str, TelcoEnv] = {}
        self.env: TelcoEnv | None = None

    def _env(self, domain: str) -> TelcoEnv:
        """This worker's environment of a domain (made at its first episode)."""
        if domain not in self.envs:
            self.envs[domain] = TelcoEnv(
                None,
                privileged=getattr(self.agent, "needs_privileged", False),
                embedder=self.embedder,
                max_steps=self.config.max_steps,
                domain=domain,
            )
        return self.envs[domain]

    def run(self, spec: EpisodeSpec) -> dict[str, Any]:
        started = time.perf_counter()
        record: dict[str, Any] = {
            **asdict(spec),
            "key": spec.key,
            "status": "ok",
            "error": None,
            "predicted_chain": [],
            "gold_chain": [],
            "steps": 0,
            "trace": None,
        }
        use_alarm = (
            self.config.episode_timeout > 0
            and hasattr(signal, "SIGALRM")
            and threading.current_thread() is threading.main_thread()
        )
        if use_alarm:
            signal.signal(signal.SIGALRM, _alarm)
            signal.setitimer(signal.ITIMER_REAL, self.config.episode_timeout)
        try:
            info = self._play(spec)
            metrics = info["metrics"]
            record.update(
                {
                    k: metrics[k]
                    for k in (
                        "ira",
                        "msc",
                        "eap",
                        "sas",
                        "ra",
                        "args",
                        "answer",
                        "embedder",
                        "predicted_chain",
                        "gold_chain",
                    )
                }
            )
            record["resolved"] = info["resolved"]
            record["steps"] = info["steps"]
            record["trace"] = info["trace"].model_dump_json()
            if info.get("metrics_error"):
                record["error"] = info["metrics_error"]
        except _EpisodeTimeout:
            record.update(
                status="failed",
                error=f"timeout: episode exceeded {self.config.episode_timeout:g} s",
            )
        except Exception as exc:  # the agent's failure is this episode's result, not the run's
            record.update(
                status="failed",
                error=f"{type(exc).__name__}: {exc}\n" + "".join(traceback.format_exc(limit=3)),
            )
        finally:
            if use_alarm:
                signal.setitimer(signal.ITIMER_REAL, 0)
        trace = self.env.trace if self.env is not None else None
        if trace is not None and record["status"] == "failed":
            record["predicted_chain"] = trace.predicted_chain
            record["gold_chain"] = trace.gold_tools
            record["trace"] = trace.model_dump_json()
            if trace.gold_answer is not None:  # a question left unanswered
                record["answer"] = False
        record["duration_s"] = time.perf_counter() - started
        usage = getattr(self.agent, "usage", None)  # tokens and cost, where the agent counts them
        record["agent_usage"] = dict(usage) if usage else None
        return record

    def _play(self, spec: EpisodeSpec) -> dict[str, Any]:
        options = {
            "blueprint": spec.blueprint_id,
            "sample_index": spec.sample_index,
            "lang": spec.language,
            "intent_list": spec.intent_list,
        }
        self.env = env = self._env(spec.domain)
        observation, info = env.reset(seed=self.config.seed, options=options)
        self.agent.reset(observation, info)
        while True:
            observation, _, terminated, truncated, info = env.step(
                self.agent.act(observation, info)
            )
            if terminated or truncated:
                return info


_WORKER: _Worker | None = None


def _init_worker(config: RunConfig, threads: int) -> None:
    global _WORKER
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is handled by the parent
    _WORKER = _Worker(config, threads)


def _run_in_worker(spec: EpisodeSpec) -> dict[str, Any]:
    assert _WORKER is not None
    return _WORKER.run(spec)


def _results(
    pending: list[EpisodeSpec], config: RunConfig, workers: int
) -> Iterator[dict[str, Any]]:
    threads = max(1, (os.cpu_count() or 1) // workers)
    if workers <= 1:
        worker = _Worker(config, threads)
        for spec in pending:
            yield worker.run(spec)
        return
    context = multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")
    with context.Pool(workers, initializer=_init_worker, initargs=(config, threads)) as pool:
        try:
            yield from pool.imap_unordered(_run_in_worker, pending, chunksize=1)
        finally:
            pool.terminate()


def _ray_results(
    pending: list[EpisodeSpec], config: RunConfig, workers: int, address: str | None
) -> Iterator[dict[str, Any]]:
    """Episodes on a Ray cluster: one actor per worker, results streamed back as they finish."""
    try:
        import ray
        from ray.util import ActorPool
    except ImportError as exc:
        raise TelcoEnvError("the Ray backend needs ray: pip install 'telcoenv[ray]'") from exc
    started_here = not ray.is_initialized()
    if started_here:
        ray.init(
            address=address,
            include_dashboard=False,
            log_to_driver=False,
            num_cpus=None if address else workers,
            configure_logging=False,
        )
    try:
        remote_worker = ray.remote(num_cpus=1)(_Worker)
        threads = 1  # one CPU per actor
        pool = ActorPool([remote_worker.remote(config, threads) for _ in range(workers)])
        yield from pool.map_unordered(lambda actor, spec: actor.run.remote(spec), pending)
    finally:
        if started_here:
            ray.shutdown()


@dataclass
class RunSummary:
    run: str
    total: int
    skipped: int
    stored: int
    failed: int
    interrupted: bool
    seconds: float
    db_seconds: float


def evaluate(
    store: ResultStore,
    run: str,
    grid: Sequence[EpisodeSpec],
    config: RunConfig,
    *,
    workers: int = 1,
    backend: str = "local",
    address: str | None = None,
    progress: Callable[[int, int], Any] | None = None,
) -> RunSummary:
    """Run the grid's episodes that ``run`` has not stored yet; returns what happened.

    ``backend="local"`` uses worker processes on this machine; ``"ray"`` runs the episodes on a
    Ray cluster (``address`` of an existing one, else a local instance) while this process
    writes the results.
    """
    load_agent(config.agent, **config.agent_options)  # fail at once on an unknown agent
    if workers < 1:
        raise TelcoEnvError(f"workers must be at least 1, got {workers}")
    if backend not in ("local", "ray"):
        raise TelcoEnvError(f"unknown backend {backend!r}; use local or ray")
    store.ensure_run(run, config.agent, asdict(config))
    done = store.done_keys(run)
    pending = [spec for spec in grid if spec.key not in done]
    stored = failed = 0
    db_seconds = 0.0
    started = time.perf_counter()
    interrupted = False
    try:
        results = (
            _ray_results(pending, config, workers, address)
            if backend == "ray"
            else _results(pending, config, workers)
        )
        for record in results:
            tick = time.perf_counter()
            if store.add(run, record):
                stored += 1
                failed += record["status"] == "failed"
            db_seconds += time.perf_counter() - tick
            if progress is not None:
                progress(stored, len(pending))
    except KeyboardInterrupt:
        interrupted = True
    return RunSummary(
        run,
        len(grid),
        len(grid) - len(pending),
        stored,
        failed,
        interrupted,
        time.perf_counter() - started,
        db_seconds,
    )
