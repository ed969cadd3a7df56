"""Run an agent over the benchmark grid and commit every finished episode to the results store.

The grid is blueprint x sample x language x IRA condition, over the network intents, the
customer-care intents or both (``domain``). An episode is fixed by
``(blueprint, sample_index)``, so re-running a run resumes it: episodes already stored are
skipped (failed ones are run again unless ``retry_failed=False``), and every finished episode is
committed at once, so a run killed at any moment (SIGKILL included) loses only the episodes in
flight. Ctrl-C stops cleanly after saving what finished. A run keeps the configuration it was
started with (:func:`run_settings`); resuming it with another one is refused.

With ``RunConfig.repeats`` K above 1, every episode is played K times (``EpisodeSpec.repeat``
0..K-1, part of its key): the same environment episode, so only the agent's randomness differs
(the agent reads the repeat as ``info["repeat"]`` at reset). A run may be resumed with a larger
K, which plays only the new repeats, never with a smaller one.

Episodes run in this process (``workers=1``), in local worker processes
(:mod:`telcoenv.evaluation.processes`) or on a Ray cluster; this process is the only writer.
With ``concurrency`` above 1, each of them plays that many episodes at once, for an agent that
awaits its I/O (:mod:`telcoenv.evaluation.concurrent`).
Each episode is claimed in the store before it is computed, so two processes on one run split
the work instead of computing an episode twice. Any failure
inside an episode (the agent raising, hanging past ``episode_timeout`` or returning garbage, the
environment, the scoring, a trace that does not serialise, a record the database refuses) is
stored as that episode's failure, with its error, steps and trace, and the run goes on.
"""

from __future__ import annotations

import json
import math
import signal
import socket
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol

from sqlalchemy.exc import SQLAlchemyError

from telcoenv import __version__
from telcoenv.agents import Agent, check_domains, load_agent
from telcoenv.domains import DEFAULT_DOMAIN, domain_names, get_domain
from telcoenv.embeddings import check_embedder, get_embedder
from telcoenv.env import TelcoEnv
from telcoenv.errors import (
    EpisodeOptionError,
    TelcoEnvError,
    UnknownEnvironmentError,
    UnknownIntentError,
)
from telcoenv.evaluation.scoring import (
    DIAGNOSIS,
    EMBEDDER_THREADS,
    MAX_WAITING,
    METRICS,
    PAIRS,
    Scorer,
    make_embedder,
)
from telcoenv.evaluation.store import HEARTBEAT_S, Owner, ResultStore, StoreError, without_secrets
from telcoenv.grading import needs_meaning
from telcoenv.metrics.scoring import EpisodeMetrics, score_episode, text_pairs
from telcoenv.options import GUIDED, check_difficulty, check_seed, check_tool_format
from telcoenv.registration import env_id, list_envs
from telcoenv.rewards import outcome_record
from telcoenv.splits import check_split, split_samples
from telcoenv.trace import EpisodeTrace

# Seconds to wait for a Ray cluster's port to answer before giving up.
RAY_CONNECT_TIMEOUT_S = 10.0
# A worker process that has not returned an episode this long past the time it may take (its
# wait in the queue and its timeout) hangs (one that dies is seen at once).
LOST_WORKER_GRACE_S = 60.0
_POLL_S = 1.0
# Episodes claimed in one transaction: fewer commits, while other processes still find work.
CLAIM_BATCH = 8
# Finished episodes stored in one transaction: at most this many, and none waits longer than
# STORE_WAIT_S (a commit per episode cost about a third of a fast agent's run).
STORE_BATCH = 32
STORE_WAIT_S = 0.25
# The HTTP/2 client connection preface, then an empty SETTINGS frame (type 4).
_HTTP2_SETTINGS = 0x04
_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes(
    [0, 0, 0, _HTTP2_SETTINGS, 0, 0, 0, 0, 0]
)


@dataclass(frozen=True, slots=True)
class EpisodeSpec:
    """One cell of the evaluation grid."""

    intent: str
    category: str
    blueprint_id: str
    sample_index: int
    language: str
    intent_list: bool
    domain: str = DEFAULT_DOMAIN
    difficulty: str = GUIDED
    repeat: int = 0  # which play of the same episode (evaluate --repeats)
    split: str = "all"  # the split it was drawn in (telcoenv.splits); not part of the key

    @property
    def key(self) -> str:
        condition = "with" if self.intent_list else "without"
        # A guided episode keeps the key it had before tiers existed (runs stay resumable), and
        # a first play the key it had before repeats existed.
        tier = "" if self.difficulty == GUIDED else f"|{self.difficulty}"
        repeat = f"|r{self.repeat}" if self.repeat else ""
        return f"{self.blueprint_id}|{self.sample_index}|{self.language}|{condition}{tier}{repeat}"

    def reset_options(self) -> dict[str, Any]:
        """The options ``env.reset`` takes to play this cell (difficulty only off the guided
        tier, as before tiers existed)."""
        options: dict[str, Any] = {
            "blueprint": self.blueprint_id,
            "sample_index": self.sample_index,
            "lang": self.language,
            "intent_list": self.intent_list,
        }
        if self.difficulty != GUIDED:
            options["difficulty"] = self.difficulty
        return options


@dataclass(frozen=True, slots=True)
class RunConfig:
    """How the agent plays (see :func:`run_settings` for what a run is compared on)."""

    agent: str
    agent_options: dict[str, Any]
    seed: int = 0
    embedder: str | None = "multilingual"
    max_steps: int = 20
    episode_timeout: float = 300.0
    tool_format: str = "full"  # "compact": short tool specs and instructions (small models)
    repeats: int = 1  # plays of each episode of the grid (pass^k, pass@k in the report)
    # The model of its world a domain runs, where not its default ({"network": "blueprint"}).
    world_models: dict[str, str] = field(default_factory=dict)
    # The split the episodes are drawn in (telcoenv.splits): "all", "train" or "test".
    split: str = "all"
    # Set by evaluate, not part of a run's settings: the workers leave IRA and RA to the
    # runner's scoring process (telcoenv.evaluation.scoring) and hand over the texts.
    deferred_scoring: bool = False

    def __post_init__(self) -> None:
        # Refused here, not by every episode's reset: a run of failed episodes otherwise.
        check_seed(self.seed)
        check_split(self.split, "split")
        for domain, model in self.world_models.items():
            get_domain(domain, model)  # an unknown domain or model raises EpisodeOptionError

    def domain(self, name: str) -> Any:
        """The domain ``name`` as this run plays it (with its world model, if one is set)."""
        return get_domain(name, self.world_models.get(name))


def run_settings(config: RunConfig, grid: Sequence[EpisodeSpec]) -> dict[str, Any]:
    """The configuration a run is stored with and compared on when it is resumed: the agent and
    its options without credentials, embedder, max steps, seed, languages, intent-list
    conditions, repeats, the domains' world models and telcoenv version (the intents, samples
    and repeats may grow; the timeout may change)."""
    settings = {
        "agent": config.agent,
        "agent_options": without_secrets(config.agent_options),
        "embedder": config.embedder,
        "max_steps": config.max_steps,
        "seed": config.seed,
        "languages": sorted({spec.language for spec in grid}),
        "intent_list": sorted({"with" if spec.intent_list else "without" for spec in grid}),
        "telcoenv": __version__,
    }
    tiers = sorted({spec.difficulty for spec in grid})
    if tiers != [GUIDED]:  # a guided-only run compares as runs did before tiers existed
        settings["difficulty"] = tiers
    if config.tool_format != "full":  # so does a run with the specs as written
        settings["tool_format"] = config.tool_format
    if config.repeats != 1:  # and one played once (ResultStore.ensure_run lets K grow)
        settings["repeats"] = config.repeats
    if config.split != "all":  # a split's episodes are no other split's run
        settings["split"] = config.split
    # Which model of its world each domain ran (the network's "physical" or "blueprint"), so
    # that episodes of two models are never one run.
    models = {d: getattr(config.domain(d), "world_model", None) for d in {s.domain for s in grid}}
    if any(models.values()):
        settings["world_models"] = {d: m for d, m in sorted(models.items()) if m is not None}
    # Stored as JSON: a value that is not JSON (an option given as an object) by its type name.
    return json.loads(json.dumps(settings, default=lambda v: f"<{type(v).__name__}>"))


def _domains(domain: str) -> list[str]:
    if domain == "all":
        return list(domain_names())
    if domain not in domain_names():
        valid = ", ".join(domain_names())
        raise EpisodeOptionError(f"unknown domain {domain!r}; use {valid} or all")
    return [domain]


def _resolve(name: str) -> list[tuple[str, Any]]:
    """The (domain, intent) pairs a name stands for: an intent key, an env name or a Gymnasium
    id as ``make`` takes it, one intent or a whole domain (``telcoenv/Troubleshooting-v0``)."""
    try:
        gym_id = env_id(name)
    except UnknownEnvironmentError:
        valid = [e.name for e in list_envs()]
        raise UnknownIntentError(
            f"unknown intent {name!r}; valid intents: {', '.join(valid)}"
        ) from None
    entry = next(e for e in list_envs() if e.id == gym_id)
    catalog = get_domain(entry.domain).catalog
    if entry.intent is None:
        return [(entry.domain, intent) for intent in catalog.intents]
    return [(entry.domain, catalog.intent(entry.intent))]


def _chosen(intents: str | Sequence[str], domain: str | None) -> list[tuple[str, Any]]:
    """(domain, intent) pairs: every intent of the domain(s), or the named ones (of ``domain``
    when it is given, of any domain when it is None)."""
    if intents == "all":
        chosen = _domains(domain or DEFAULT_DOMAIN)
        return [(d, i) for d in chosen for i in get_domain(d).catalog.intents]
    if not intents:
        raise EpisodeOptionError("no intents given: name at least one, or all")
    allowed = _domains(domain) if domain is not None else list(domain_names())
    chosen: dict[str, tuple[str, Any]] = {}  # by intent key: a name given twice counts once
    for name in intents:
        for owner, intent in _resolve(name):
            if owner not in allowed:
                raise EpisodeOptionError(
                    f"intent {name!r} belongs to the {owner} domain, not to {domain}"
                )
            chosen.setdefault(intent.key, (owner, intent))
    return list(chosen.values())


def build_grid(
    intents: str | Sequence[str] = "all",
    samples: int = 30,
    languages: Sequence[str] = ("en", "ar"),
    conditions: Sequence[bool] = (True,),
    domain: str | None = None,
    difficulties: Sequence[str] = (GUIDED,),
    split: str = "all",
) -> list[EpisodeSpec]:
    """The grid in a fixed order; unknown or empty intents, domains or languages fail at once.

    ``intents="all"`` takes every intent of ``domain`` (``"network"`` by default, ``"bss"`` or
    ``"all"``). Named intents (keys, env names or Gymnasium ids) are looked up in ``domain``, or
    in every domain when it is None. ``difficulties`` are the tiers to play (each must be one
    every chosen domain offers). ``split``: ``"train"`` or ``"test"`` plays that split's first
    ``samples`` samples of each blueprint (:func:`telcoenv.splits.split_samples`; the train
    split has none of a held-out blueprint).
    """
    split = check_split(split, "split")
    chosen = _chosen(intents, domain)
    if not languages:
        raise EpisodeOptionError("no languages given: use en and/or ar")
    for lang in languages:
        if lang not in ("en", "ar"):
            raise EpisodeOptionError(f"unknown language {lang!r}; use en and/or ar")
    if not conditions:
        raise EpisodeOptionError("no intent-list conditions given: use with and/or without")
    if samples < 1:
        raise EpisodeOptionError(f"samples must be at least 1, got {samples}")
    if not difficulties:
        raise EpisodeOptionError("no difficulties given: use guided, symptom and/or noisy")
    for name in dict.fromkeys(name for name, _ in chosen):
        for tier in difficulties:
            check_difficulty(get_domain(name), tier)
    return [
        EpisodeSpec(
            intent.key,
            intent.category,
            blueprint.blueprint_id,
            index,
            lang,
            condition,
            name,
            tier,
            split=split,
        )
        for name, intent in chosen
        for blueprint, siblings in _family(name, intent.key)
        for index in split_samples(blueprint.blueprint_id, siblings, split, samples)
        for lang in dict.fromkeys(languages)
        for condition in dict.fromkeys(conditions)
        for tier in dict.fromkeys(difficulties)
    ]


def _family(domain: str, intent: str) -> list[tuple[Any, list[str]]]:
    """An intent's blueprints, each with the ids of all of them (a split holds some out)."""
    family = get_domain(domain).catalog.blueprints[intent]
    ids = [b.blueprint_id for b in family]
    return [(blueprint, ids) for blueprint in family]


class _EpisodeTimeout(BaseException):
    """Raised by SIGALRM; a BaseException so that an agent catching Exception cannot swallow it."""


def _alarm(*_: Any) -> None:
    raise _EpisodeTimeout


def _safe_repr(value: Any, width: int = 100_000) -> str:
    try:
        return repr(value)[:width]
    except Exception:  # a repr that raises must not cost the episode
        return f"<{type(value).__name__} (repr failed)>"


def _describe(exc: BaseException) -> str:
    try:
        message = str(exc)
    except Exception:  # a broken __str__ must not cost the episode either
        message = ""
    return f"{type(exc).__name__}: {message or _safe_repr(exc)}"


def _new_record(spec: EpisodeSpec) -> dict[str, Any]:
    return {
        **asdict(spec),
        "key": spec.key,
        "status": "ok",
        "error": None,
        "predicted_chain": [],
        "gold_chain": [],
        "steps": 0,
        "trace": None,
        "duration_s": 0.0,
        "agent_usage": None,
    }


def failed_record(spec: EpisodeSpec, error: str) -> dict[str, Any]:
    """The record of an episode that failed before anything of it could be kept."""
    return {**_new_record(spec), "status": "failed", "error": error}


class _TraceError(Exception):
    """A finished episode whose trace does not serialise."""


def _trace_json(trace: EpisodeTrace) -> tuple[str, str | None]:
    """The trace as JSON, and what went wrong when it does not serialise (then the values that
    do not serialise are kept as their repr, or the whole trace is)."""
    try:
        return trace.model_dump_json(), None
    except Exception as exc:
        problem = f"the trace could not be serialised: {_describe(exc)}"
    try:
        return trace.model_dump_json(fallback=_safe_repr), problem
    except Exception:
        return json.dumps({"unserialisable_trace": _safe_repr(trace)}), problem


class _Worker:
    """An agent and an environment, built once per worker process. ``run`` never raises."""

    def __init__(self, config: RunConfig, threads: int) -> None:
        self.config = config
        self.agent: Agent = load_agent(config.agent, **config.agent_options)
        # The name every score is recorded under (resolving it loads no model).
        self.embedder_name = get_embedder(config.embedder).name if config.embedder else None
        self.embedder: Any = None
        if not config.deferred_scoring and config.embedder is not None:
            self.embedder = make_embedder(config.embedder, threads)
        self.envs: dict[str, TelcoEnv] = {}
        self.trace: EpisodeTrace | None = None  # of the running episode, once it is reset
        self.steps = 0

    def _env(self, domain: str) -> TelcoEnv:
        """This worker's environment of a domain (made at its first episode)."""
        if domain not in self.envs:
            self.envs[domain] = TelcoEnv(
                None,
                privileged=getattr(self.agent, "needs_privileged", False),
                embedder=self.embedder,
                max_steps=self.config.max_steps,
                tool_format=self.config.tool_format,
                domain=self.config.domain(domain),
                split=self.config.split,
            )
            prepare = getattr(self.envs[domain].domain, "prepare", None)
            if prepare is not None:  # one-time work, not counted against an episode's timeout
                prepare()
        return self.envs[domain]

    def run(self, spec: EpisodeSpec) -> dict[str, Any]:
        started = time.perf_counter()
        try:
            record = self._attempt(spec)
        except Exception as exc:  # even the failure record failed: keep the episode's error
            record = self._unbuilt(spec, exc)
        record["duration_s"] = time.perf_counter() - started
        return record

    def _attempt(self, spec: EpisodeSpec) -> dict[str, Any]:
        record = self._fresh(spec)
        try:
            record.update(self._scored(self._play_in_time(spec)))
            error = None
        except (_EpisodeTimeout, Exception, SystemExit) as exc:  # the episode's, not the run's
            error = self._episode_error(exc)
        return self._completed(spec, record, error)

    # The steps of an attempt that the concurrent runner shares (it awaits the agent instead).

    def _fresh(self, spec: EpisodeSpec) -> dict[str, Any]:
        self.trace, self.steps = None, 0
        return _new_record(spec)

    def _episode_error(self, exc: BaseException) -> str:
        """What an episode's failure is stored as (called inside the ``except`` block)."""
        if isinstance(exc, _EpisodeTimeout):
            return f"timeout: episode exceeded {self.config.episode_timeout:g} s"
        if isinstance(exc, _TraceError):  # the episode ran; only its trace is in question
            return str(exc)
        return f"{_describe(exc)}\n" + "".join(traceback.format_exc(limit=3))

    def _completed(
        self, spec: EpisodeSpec, record: dict[str, Any], error: str | None
    ) -> dict[str, Any]:
        if error is not None:
            record.update(self._failure(spec, error))
        record["agent_usage"] = self._usage()
        return record

    def _unbuilt(self, spec: EpisodeSpec, exc: Exception) -> dict[str, Any]:
        record = failed_record(spec, f"the episode record could not be built: {_describe(exc)}")
        record["steps"] = self.steps
        return record

    def _play_in_time(self, spec: EpisodeSpec) -> dict[str, Any]:
        self._env(spec.domain)  # made and prepared before the episode's clock starts
        use_alarm = (
            self.config.episode_timeout > 0
            and hasattr(signal, "SIGALRM")
            and threading.current_thread() is threading.main_thread()
        )
        if use_alarm:
            signal.signal(signal.SIGALRM, _alarm)
            signal.setitimer(signal.ITIMER_REAL, self.config.episode_timeout)
        try:
            return self._play(spec)
        finally:
            if use_alarm:
                signal.setitimer(signal.ITIMER_REAL, 0)

    def _play(self, spec: EpisodeSpec) -> dict[str, Any]:
        observation, info = self._begin(spec)
        while True:
            observation, info, done = self._step(spec, self.agent.act(observation, info))
            if done:
                return info

    def _begin(self, spec: EpisodeSpec) -> tuple[str, dict[str, Any]]:
        """Reset the domain's environment to ``spec`` and the agent; the first observation and
        info (shared with the concurrent runner, which awaits the agent instead)."""
        env = self._env(spec.domain)
        observation, info = env.reset(seed=self.config.seed, options=spec.reset_options())
        self.trace = env.trace
        # The environment replays the same episode for every repeat: the agent is told which
        # play this is, so that a random agent can draw differently (and reproducibly).
        info = {**info, "repeat": spec.repeat}
        self.agent.reset(observation, info)
        return observation, info

    def _step(self, spec: EpisodeSpec, action: Any) -> tuple[str, dict[str, Any], bool]:
        """One step of the running episode: the observation, the info and whether it ended."""
        observation, _, terminated, truncated, info = self.envs[spec.domain].step(action)
        self.steps = int(info.get("steps", self.steps + 1))
        return observation, info, terminated or truncated

    def _scored(self, info: dict[str, Any]) -> dict[str, Any]:
        metrics = info["metrics"]
        trace, problem = _trace_json(info["trace"])
        if problem is not None:
            raise _TraceError(problem)
        scored = {k: metrics[k] for k in METRICS}
        scored.update(
            chain=metrics["chain"],
            outcome=outcome_record(EpisodeMetrics.model_validate(metrics)),
            predicted_chain=list(metrics["predicted_chain"]),
            gold_chain=list(metrics["gold_chain"]),
            resolved=info["resolved"],
            steps=info["steps"],
            trace=trace,
            error=info.get("metrics_error"),
        )
        if self.config.deferred_scoring and self.config.embedder is not None:
            scored[PAIRS] = text_pairs(info["trace"])  # IRA and RA: the runner's scorer
            trace = info["trace"]
            submission = trace.submission
            if needs_meaning(trace.outcome, submission.intent if submission else None):
                # The words named no intent: the scorer judges it by meaning (its embedder).
                scored[DIAGNOSIS] = {
                    "text": submission.intent,
                    "gold": trace.intent,
                    "domain": trace.domain,
                }
        return scored

    def _failure(self, spec: EpisodeSpec, error: str) -> dict[str, Any]:
        """A failed episode: its error, the steps it took, its trace so far and, where the
        environment still holds it, the verdict on the state it reached."""
        env = self.envs.get(spec.domain)
        failure: dict[str, Any] = {
            "status": "failed",
            "error": error,
            "steps": self.steps,
            # IRA and RA of this run are measured with this embedder: a failure scores 0 on them.
            "embedder": self.embedder_name if env is not None else None,
        }
        if self.trace is None:
            return failure
        steps, unverified = self._verified_end(env)
        failure["steps"] = steps if steps is not None else self.steps
        failure["resolved"] = (self.trace.verification or {}).get("resolved")
        failure["trace"], problem = _trace_json(self.trace)
        for extra in (unverified, problem):
            if extra is not None and extra not in failure["error"]:
                failure["error"] = f"{failure['error']}\n{extra}"
        failure["predicted_chain"] = list(self.trace.predicted_chain)
        failure["chain"] = "executed"
        if self.trace.outcome is not None:  # graded at the cut: why it is not resolved
            failure["outcome"] = outcome_record(score_episode(self.trace, None))
        failure["gold_chain"] = list(self.trace.gold_tools)
        if self.trace.gold_answer is not None:  # a question left unanswered
            failure["answer"] = False
        return failure

    def _verified_end(self, env: TelcoEnv | None) -> tuple[int | None, str | None]:
        """End the failed episode as truncated where ``env`` still holds it, so that its final
        state is verified as at ``max_steps``; the steps it took (None: ``env`` does not hold
        it) and what went wrong when it could not be verified."""
        episode = env.episode if env is not None else None
        if env is None or episode is None or episode.trace is not self.trace:
            return None, None
        problem = None
        if not episode.ended:
            try:
                env.truncate("the episode failed")
            except Exception as exc:  # a broken state must not cost the failure record
                problem = f"the final state could not be verified: {_describe(exc)}"
        return episode.counts()["steps"], problem

    def _usage(self) -> dict[str, Any] | None:
        """Tokens and cost, where the agent counts them, as plain JSON."""
        try:
            usage = getattr(self.agent, "usage", None)
            return json.loads(json.dumps(dict(usage), default=_safe_repr)) if usage else None
        except Exception as exc:  # usage is bookkeeping: its failure must not fail the episode
            return {"error": f"the agent's usage could not be read: {_describe(exc)}"}


_Done = tuple[EpisodeSpec, dict[str, Any]]
_Finished = list[_Done]


class _Executor(Protocol):
    @property
    def capacity(self) -> int:
        """Episodes it takes at once now (may change as it learns how long they take)."""
        ...

    @property
    def busy(self) -> int: ...

    def submit(self, spec: EpisodeSpec) -> None: ...

    def wait(self) -> _Finished:
        """The episodes finished since the last call (possibly none, after a short wait)."""
        ...

    def close(self) -> None: ...


class _InProcess:
    """Episodes run one at a time in this process."""

    capacity = 1

    def __init__(self, config: RunConfig) -> None:
        self.worker = _Worker(config, EMBEDDER_THREADS)
        self.todo: deque[EpisodeSpec] = deque()

    @property
    def busy(self) -> int:
        return len(self.todo)

    def submit(self, spec: EpisodeSpec) -> None:
        self.todo.append(spec)

    def wait(self) -> _Finished:
        spec = self.todo.popleft()
        return [(spec, self.worker.run(spec))]

    def close(self) -> None:
        pass


def _check_reachable(address: str) -> None:
    """Fail within 2 x RAY_CONNECT_TIMEOUT_S when no Ray cluster answers at ``address``: Ray
    itself would retry for minutes. Ray's endpoints (GCS, Ray Client) are gRPC servers, which
    answer the HTTP/2 connection preface with a SETTINGS frame."""
    if address in ("auto", "local"):
        return
    host, colon, port = address.removeprefix("ray://").rpartition(":")
    if not colon or not host or not port.isdigit():
        raise TelcoEnvError(
            f"malformed Ray address {address!r}: use host:port, ray://host:port or auto"
        )
    hint = "is a Ray cluster running there? start one with: ray start --head"
    try:
        with socket.create_connection((host.strip("[]"), int(port)), RAY_CONNECT_TIMEOUT_S) as s:
            s.sendall(_HTTP2_PREFACE)
            reply = b""
            while len(reply) < 4 and (chunk := s.recv(4 - len(reply))):
                reply += chunk
    except TimeoutError:
        raise TelcoEnvError(f"no answer from the Ray cluster at {address} ({hint})") from None
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        raise TelcoEnvError(
            f"cannot reach the Ray cluster at {address}: {reason} ({hint})"
        ) from None
    if len(reply) < 4 or reply[3] != _HTTP2_SETTINGS:
        raise TelcoEnvError(f"{address} answers, but not as a Ray cluster ({hint})")


class _Ray:
    """Episodes on a Ray cluster: one actor per worker; a dead actor is replaced."""

    def __init__(self, config: RunConfig, workers: int, address: str | None) -> None:
        try:
            import ray
        except ImportError as exc:
            raise TelcoEnvError("the Ray backend needs ray: pip install 'telcoenv[ray]'") from exc
        self.ray = ray
        self.started_here = not ray.is_initialized()
        if self.started_here:
            try:
                ray.init(
                    address=address,
                    include_dashboard=False,
                    log_to_driver=False,
                    num_cpus=None if address else workers,
                    configure_logging=False,
                )
            except Exception as exc:
                raise TelcoEnvError(
                    f"cannot start or join Ray at {address or 'a local instance'}: {exc}"
                ) from None
        self.config = config
        self.capacity = workers
        self.remote_worker = ray.remote(num_cpus=1)(_Worker)
        self.idle = [self._actor() for _ in range(workers)]
        self.running: dict[Any, tuple[EpisodeSpec, Any]] = {}  # object ref -> (spec, actor)

    def _actor(self) -> Any:
        return self.remote_worker.remote(self.config, 1)  # one CPU per actor

    def _replacement(self, dead: Any) -> Any:
        """A new actor in place of one that died."""
        return self._actor()

    @property
    def busy(self) -> int:
        return len(self.running)

    def submit(self, spec: EpisodeSpec) -> None:
        actor = self.idle.pop()
        self.running[actor.run.remote(spec)] = (spec, actor)

    def wait(self) -> _Finished:
        ready, _ = self.ray.wait(list(self.running), num_returns=1, timeout=_POLL_S)
        finished = []
        for ref in ready:
            spec, actor = self.running.pop(ref)
            try:
                record = self.ray.get(ref)
            except self.ray.exceptions.RayActorError as exc:
                record = failed_record(spec, f"the Ray actor died: {_describe(exc)}")
                actor = self._replacement(actor)
            except Exception as exc:
                record = failed_record(spec, f"Ray could not return the episode: {_describe(exc)}")
            self.idle.append(actor)
            finished.append((spec, record))
        return finished

    def close(self) -> None:
        if self.started_here:
            self.ray.shutdown()


@contextmanager
def _executor(
    backend: str, config: RunConfig, workers: int, address: str | None, concurrency: int = 1
) -> Iterator[_Executor]:
    executor: _Executor
    if concurrency > 1:  # imported here: the module builds on this one
        from telcoenv.evaluation.concurrent import concurrent_executor

        executor = concurrent_executor(backend, config, workers, address, concurrency)
    elif backend == "ray":
        executor = _Ray(config, workers, address)
    elif workers > 1:
        from telcoenv.evaluation.processes import LocalProcesses

        executor = LocalProcesses(config, workers)
    else:
        executor = _InProcess(config)
    try:
        yield executor
    finally:
        executor.close()


@contextmanager
def _claims_kept(store: ResultStore, owner: Owner) -> Iterator[None]:
    """Refresh ``owner``'s claims while the run goes on (from a thread: an episode may run in
    this one), and drop those left when it ends."""
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(HEARTBEAT_S):
            # A missed beat at worst lets another process take an episode over later; the
            # store keeps one row of it anyway.
            with suppress(SQLAlchemyError):
                store.heartbeat(owner)

    thread = threading.Thread(target=beat, name="telcoenv-claims", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        with suppress(SQLAlchemyError):  # left claims expire anyway once this process is gone
            store.release(owner)


class _Keeper:
    """Stores a run's finished episodes, several in one transaction: once :data:`STORE_BATCH`
    are in or the first has waited :data:`STORE_WAIT_S`. A record waiting to be stored is in
    flight like a running episode: a run killed meanwhile loses it (its claim expires and a
    resumed run plays it again); an interrupted run stores it (:meth:`flush`)."""

    def __init__(self, store: ResultStore, run: str, owner: Owner) -> None:
        self.store, self.run, self.owner = store, run, owner
        self.stored = self.failed = 0
        self.db_seconds = 0.0
        self.waiting: _Finished = []
        self.since = 0.0  # when the first waiting record came

    def add(self, finished: _Finished) -> None:
        if finished and not self.waiting:
            self.since = time.monotonic()
        self.waiting.extend(finished)
        while len(self.waiting) >= STORE_BATCH:
            self._store(STORE_BATCH)
        if self.waiting and time.monotonic() - self.since >= STORE_WAIT_S:
            self.flush()

    def flush(self) -> None:
        """Store every waiting record now."""
        while self.waiting:
            self._store(STORE_BATCH)

    def _store(self, count: int) -> None:
        """Store the first ``count`` waiting records in one transaction."""
        tick = time.perf_counter()
        kept = _store_many(self.store, self.run, self.waiting[:count], self.owner)
        del self.waiting[:count]
        self.stored += len(kept)
        self.failed += sum(record["status"] == "failed" for record in kept)
        self.db_seconds += time.perf_counter() - tick


def _store_many(
    store: ResultStore, run: str, finished: _Finished, owner: Owner
) -> list[dict[str, Any]]:
    """Store records that finished together in one transaction; the records stored (an
    episode stored already is left out). When the database refuses the batch for a reason
    other than the database itself failing, each record is stored on its own (:func:`_store`):
    one bad record fails only its own episode."""
    if len(finished) > 1:
        try:
            added = store.add_many(run, [record for _, record in finished], owner)
        except StoreError:  # the database itself fails: nothing more can be stored
            raise
        except Exception:
            pass
        else:
            return [record for (_, record), new in zip(finished, added, strict=True) if new]
    kept = (_store(store, run, spec, record, owner) for spec, record in finished)
    return [record for record in kept if record is not None]


def _store(
    store: ResultStore, run: str, spec: EpisodeSpec, record: dict[str, Any], owner: Owner
) -> dict[str, Any] | None:
    """Store a record (None when the episode was stored already); one the database refuses is
    stored as the episode's failure."""
    try:
        return record if store.add(run, record, owner) else None
    except StoreError:  # the database itself fails: nothing more can be stored
        raise
    except Exception as exc:
        failure = failed_record(spec, f"the result could not be stored: {_describe(exc)}")
        failure.update(steps=record.get("steps", 0), duration_s=record.get("duration_s", 0.0))
        return failure if store.add(run, failure, owner) else None


def check_agent(config: RunConfig, grid: Sequence[EpisodeSpec], concurrency: int = 1) -> None:
    """Make the agent once here, so that a wrong name or option, a grid with a domain the
    agent does not play (its ``domains``), an embedder that does not load or a
    ``concurrency`` above 1 for an agent without an async ``aact`` fails at once, in one line,
    before any episode."""
    try:
        agent = load_agent(config.agent, **config.agent_options)
    except TelcoEnvError:
        raise
    except Exception as exc:
        options = sorted(without_secrets(config.agent_options))
        raise TelcoEnvError(
            f"cannot make the agent {config.agent!r} with options {options}: {_describe(exc)}"
        ) from None
    check_domains(agent, config.agent, {spec.domain for spec in grid})
    if config.embedder is not None:
        check_embedder(config.embedder)
    if concurrency > 1:
        from telcoenv.evaluation.concurrent import check_concurrent

        check_concurrent(agent, config.agent, concurrency)


def _check_run_inputs(
    config: RunConfig, workers: int, backend: str, address: str | None, concurrency: int = 1
) -> None:
    if workers < 1:
        raise TelcoEnvError(f"workers must be at least 1, got {workers}")
    if concurrency < 1:
        raise TelcoEnvError(f"concurrency must be at least 1, got {concurrency}")
    repeats = config.repeats
    if not isinstance(repeats, int) or isinstance(repeats, bool) or repeats < 1:
        raise TelcoEnvError(f"repeats must be an integer of at least 1, got {repeats!r}")
    if backend not in ("local", "ray"):
        raise TelcoEnvError(f"unknown backend {backend!r}; use local or ray")
    timeout = config.episode_timeout
    if not (isinstance(timeout, int | float) and math.isfinite(timeout) and timeout >= 0):
        raise TelcoEnvError(f"the episode timeout must be seconds >= 0 (0: none), got {timeout}")
    if config.max_steps < 1:
        raise TelcoEnvError(f"max_steps must be at least 1, got {config.max_steps}")
    check_tool_format(config.tool_format)
    if config.embedder is not None:  # an unknown embedder fails here, not in every episode
        get_embedder(config.embedder)
    if backend == "ray" and address:
        _check_reachable(address)


def _scorer(config: RunConfig, backend: str) -> Scorer | None:
    """The run's scoring process: for an embedder and local workers (a Ray cluster's workers
    score their own episodes: one process here would hold back many machines)."""
    if config.embedder is None or backend != "local":
        return None
    try:
        return Scorer(config.embedder)
    except (AssertionError, OSError):  # no child process here (a daemonic one): in the workers
        return None


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
    retried: int = 0  # failed episodes of an earlier attempt that were run again
    elsewhere: int = 0  # episodes another process was computing (or stored meanwhile)


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
    retry_failed: bool = True,
    concurrency: int = 1,
) -> RunSummary:
    """Run the grid's episodes that ``run`` has not stored yet (nor stored as failed, unless
    ``retry_failed``); returns what happened. ``progress(done, pending)`` follows the run.

    ``backend="local"`` uses worker processes on this machine; ``"ray"`` runs the episodes on a
    Ray cluster (``address`` of an existing one, else a local instance) while this process
    writes the results. ``concurrency`` above 1 runs that many episodes at once in each
    process or actor, for an agent that awaits its I/O (:mod:`telcoenv.evaluation.concurrent`).
    Each episode of ``grid`` is played ``config.repeats`` times, every episode's first play
    before any second one (an interrupted run has its tasks played evenly).
    Raises :class:`~telcoenv.evaluation.store.RunMismatchError` when the run was started with
    another configuration (or more repeats).
    """
    _check_run_inputs(config, workers, backend, address, concurrency)
    check_agent(config, grid, concurrency)
    store.ensure_run(run, config.agent, run_settings(config, grid))
    grid = [replace(spec, repeat=r) for r in range(config.repeats) for spec in grid]
    grid = list({spec.key: spec for spec in grid}.values())  # an episode given twice runs once
    stored_keys = store.done_keys(run)
    retry = store.failed_keys(run) if retry_failed else set()
    pending = [spec for spec in grid if spec.key not in stored_keys or spec.key in retry]
    todo = deque(pending)
    ready: deque[EpisodeSpec] = deque()  # claimed, not yet submitted
    owner = Owner.current()
    keeper = _Keeper(store, run, owner)
    elsewhere = 0
    claim_seconds = 0.0
    started = time.perf_counter()
    interrupted = False
    scorer = _scorer(config, backend) if pending else None
    if scorer is not None:
        config = replace(config, deferred_scoring=True)

    def keep(finished: _Finished) -> None:
        unscored = []
        for spec, record in finished:
            if scorer is not None and PAIRS in record:
                scorer.submit(spec, record)
            else:
                unscored.append((spec, record))
        keeper.add(unscored)

    try:
        with (
            _executor(backend, config, workers, address, concurrency) as executor,
            _claims_kept(store, owner),
        ):
            while todo or ready or executor.busy or (scorer and scorer.pending):
                if scorer is not None:
                    # Scores that came in; wait for some past MAX_WAITING waiting records, or
                    # when nothing else is left to do.
                    idle = not (todo or ready or executor.busy)
                    keep(scorer.finished(block=idle or scorer.pending >= MAX_WAITING))
                while (todo or ready) and executor.busy < executor.capacity:
                    if not ready:  # claim a batch ahead: one commit for several episodes
                        batch = [todo.popleft() for _ in range(min(CLAIM_BATCH, len(todo)))]
                        tick = time.perf_counter()
                        keys = set(
                            store.claim_many(
                                run, [s.key for s in batch], owner, retry_failed=retry_failed
                            )
                        )
                        claim_seconds += time.perf_counter() - tick
                        ready.extend(spec for spec in batch if spec.key in keys)
                        elsewhere += len(batch) - len(keys)
                        continue
                    executor.submit(ready.popleft())
                keep(executor.wait() if executor.busy else [])
                if progress is not None:
                    waiting = executor.busy + len(keeper.waiting)
                    waiting += scorer.pending if scorer else 0
                    progress(len(pending) - len(todo) - len(ready) - waiting, len(pending))
            if scorer is not None:
                keep(scorer.drain())
            keeper.flush()
            if progress is not None:
                progress(len(pending), len(pending))
    except KeyboardInterrupt:
        interrupted = True
        with suppress(KeyboardInterrupt):  # what finished playing is stored (with its scores)
            if scorer is not None:
                keep(scorer.drain())
            keeper.flush()
    finally:
        if scorer is not None:
            scorer.close()
    return RunSummary(
        run,
        len(grid),
        len(grid) - len(pending),
        keeper.stored,
        keeper.failed,
        interrupted,
        time.perf_counter() - started,
        keeper.db_seconds + claim_seconds,
        retried=len(retry & {s.key for s in pending}),
        elsewhere=elsewhere,
    )
