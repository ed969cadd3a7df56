"""IRA and RA of an evaluation's episodes, computed beside the episodes instead of inside them.

IRA and RA embed texts: on a CPU that is most of an oracle episode's cost. When ``evaluate``
runs on this machine, its workers play their episodes with no embedder and hand over each
episode's text pairs (:func:`telcoenv.metrics.scoring.text_pairs`); one scoring process embeds
them while the next episodes are played, on another core, and the runner stores each record once
its scores are in. The scores are those the environment computes: the same pairs, one episode
per call, through the same :func:`~telcoenv.metrics.semantic.similarities`. The model is loaded
once per run instead of once per worker.

A record waiting for its scores is in flight like a running episode: a run killed meanwhile
loses it (its claim expires and a resumed run plays it again), so at most
:data:`MAX_WAITING` wait; Ctrl-C waits for them. If the scoring process dies, the runner scores
what it was given itself.
"""

from __future__ import annotations

import dataclasses
import math
import multiprocessing
import signal
import sys
import time
import traceback
from contextlib import suppress
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from telcoenv.domains import get_domain
from telcoenv.embeddings import MULTILINGUAL, Embedder, USEEmbedder, get_embedder
from telcoenv.errors import EmbedderUnavailableError
from telcoenv.grading import with_diagnosis
from telcoenv.metrics.diagnosis import DiagnosisMatch, match_diagnosis
from telcoenv.metrics.scoring import score_episode
from telcoenv.metrics.semantic import similarities
from telcoenv.rewards import outcome_record
from telcoenv.trace import EpisodeTrace

#: The key under which a worker hands over an episode's (text, reference) pairs.
PAIRS = "_pairs"
#: The key under which it hands over a diagnosis its words did not name (no intent's name in
#: it): the scoring process judges it by meaning, as the environment does with an embedder.
DIAGNOSIS = "_diagnosis"
#: Records that may wait for their scores before the runner stops handing out episodes.
MAX_WAITING = 64
#: Episodes the scoring process lets queue up before it encodes them together (it costs about
#: 3 ms per episode in batches of 64 on the grid's texts, 5.5 ms one at a time)...
BATCH_EPISODES = 32
#: ... unless the first of them has waited this long (an agent that takes seconds per episode
#: gets its records stored at once), or the runner waits for the scores (:data:`FLUSH`).
BATCH_WAIT_S = 0.5
#: The runner's message that it waits for the scores of what it sent.
FLUSH = "flush"
#: Seconds the runner waits for a batch of scores before it takes the scoring process for hung
#: and scores itself (a batch takes well under a second; loading the model a few).
PATIENCE_S = 300.0
# BLAS threads of an embedder in a worker or the scoring process, whatever the cores: an
# episode's texts are small matrix products, which a second thread slows down (about ten times
# the time per episode with two).
EMBEDDER_THREADS = 1

#: The scores of a record (the runner stores them; a failed episode has none).
METRICS = ("ira", "msc", "eap", "sas", "ra", "args", "answer", "embedder")

Pairs = list[tuple[str, str]]


@dataclass(frozen=True, slots=True)
class Scores:
    """IRA and RA of one episode with the embedder's name; ``error`` when the embedder was
    unavailable (the episode is kept without them) or, with ``failed``, when it broke (the
    episode fails, as it would have inside the environment)."""

    ira: float | None
    ra: float | None
    embedder: str | None
    error: str | None = None
    failed: bool = False
    diagnosis: DiagnosisMatch | None = None  # the diagnosis judged by meaning, if asked


#: What the scoring process gets per episode: its pairs, and a diagnosis to judge (or None):
#: ``{"text", "gold", "domain"}``.
Job = tuple[list[tuple[str, str]], dict[str, str] | None]


def make_embedder(spec: Any, threads: int = EMBEDDER_THREADS) -> Embedder:
    """The run's embedder: the multilingual one with ``threads`` BLAS threads, else
    :func:`~telcoenv.embeddings.get_embedder`'s."""
    return USEEmbedder(threads=threads) if spec == MULTILINGUAL else get_embedder(spec)


def score_pairs(pairs: Pairs, embedder: Embedder) -> Scores:
    """IRA and RA of one episode's pairs, as :func:`~telcoenv.metrics.score_episode` computes
    them: an unavailable embedder leaves both unset with its error, as the environment does;
    any other exception fails the episode (never raises)."""
    try:
        scores = similarities(pairs, embedder)
    except EmbedderUnavailableError as exc:
        return Scores(None, None, None, str(exc))
    except Exception as exc:  # the embedder broke: the episode's failure, not the run's
        error = f"{type(exc).__name__}: {exc}\n" + traceback.format_exc(limit=3)
        return Scores(None, None, getattr(embedder, "name", None), error, failed=True)
    return Scores(scores[0], scores[1] if len(pairs) > 1 else None, embedder.name)


def judged(request: dict[str, str] | None, embedder: Embedder) -> DiagnosisMatch | None:
    """A diagnosis its words did not name, judged by meaning among its domain's intents (None:
    nothing to judge, or the embedder failed: the words' verdict stands)."""
    if request is None:
        return None
    try:
        intents = get_domain(request["domain"]).catalog.intents
        return match_diagnosis(request["text"], request["gold"], intents, embedder=embedder)
    except Exception:  # the episode keeps the verdict the environment gave it
        return None


def score_job(job: Job, embedder: Embedder) -> Scores:
    """IRA, RA and, if asked, the diagnosis by meaning of one episode."""
    pairs, request = job
    scores = score_pairs(pairs, embedder)
    if scores.failed or request is None:
        return scores
    return dataclasses.replace(scores, diagnosis=judged(request, embedder))


def with_scores(record: dict[str, Any], scores: Scores) -> dict[str, Any]:
    """``record`` with its IRA, RA and embedder (the pairs taken out); with failed scores, the
    record of a failed episode (its trace, chains and steps kept, no metrics)."""
    record.pop(PAIRS, None)
    record.pop(DIAGNOSIS, None)
    if scores.failed:
        answer = record.get("answer")
        for name in METRICS:
            record.pop(name, None)
        record.update(status="failed", error=scores.error, embedder=scores.embedder)
        if answer is not None:  # a question left unanswered
            record["answer"] = False
        return record
    record.update(ira=scores.ira, ra=scores.ra, embedder=scores.embedder)
    if scores.error is not None:
        record["error"] = scores.error
    if scores.diagnosis is not None and scores.diagnosis.matched:
        _diagnosed(record, scores.diagnosis)
    return record


def _diagnosed(record: dict[str, Any], match: DiagnosisMatch) -> None:
    """The record of an episode whose diagnosis the scorer found by meaning: its trace's outcome
    regraded, and resolved and the outcome columns with it."""
    trace = EpisodeTrace.model_validate_json(record["trace"])
    if trace.outcome is None:
        return
    trace.outcome = with_diagnosis(trace.outcome, match)
    trace.verification = {**(trace.verification or {}), "resolved": trace.outcome.resolved}
    record["trace"] = trace.model_dump_json()
    record["resolved"] = trace.outcome.resolved
    record["outcome"] = outcome_record(score_episode(trace, None))


def _serve(connection: Connection, spec: Any) -> None:
    """The scoring process: lists of (token, pairs) in, lists of (token, scores) out; the
    episodes :func:`_received` gives are scored together."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the runner's: it waits for us
    embedder = make_embedder(spec)
    done = False
    while not done:
        batch, done = _received(connection)
        if len(batch) > 1 and getattr(embedder, "batch_invariant", False):
            _encode_together(embedder, [pairs for _, (pairs, _) in batch])
        if batch:
            connection.send([(token, score_job(job, embedder)) for token, job in batch])


def _received(
    connection: Connection, wait_s: float = BATCH_WAIT_S
) -> tuple[list[tuple[int, Job]], bool]:
    """The episodes to score now, and whether the runner is done (it sent None or closed its
    end): after a first episode, what comes until :data:`BATCH_EPISODES` are in, the runner
    sends :data:`FLUSH` or the first has waited ``wait_s``."""
    batch: list[tuple[int, Job]] = []
    deadline = math.inf
    try:
        while len(batch) < BATCH_EPISODES:
            left = None if not batch else max(0.0, deadline - time.monotonic())
            if not connection.poll(left):
                break  # the first one waited long enough
            message = connection.recv()
            if message is None:
                return batch, True
            if message == FLUSH:
                if batch:
                    break
                continue  # its scores were sent already
            if not batch:
                deadline = time.monotonic() + wait_s
            batch.extend(message)
    except EOFError:
        return batch, True
    return batch, False


def _encode_together(embedder: Embedder, episodes: list[Pairs]) -> None:
    """Encode the texts of several episodes in one call, which fills the embedder's cache: an
    embedder whose vectors do not depend on their batch (``batch_invariant``) then scores each
    episode from the cache, with the vectors it would have computed alone, at a fraction of the
    cost (one matrix product per stage for all the texts)."""
    texts = list(dict.fromkeys(t for pairs in episodes for p in pairs for t in p if t.strip()))
    with suppress(Exception):  # an embedder that fails here fails each episode on its own
        embedder.encode(texts)


class Scorer:
    """The scoring process of one run, and the records waiting for it (in submission order)."""

    def __init__(self, spec: Any) -> None:
        self.spec = spec
        context = multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")
        self.connection, child = context.Pipe()
        self.process = context.Process(
            target=_serve, args=(child, spec), name="telcoenv-scorer", daemon=True
        )
        self.process.start()
        child.close()
        self.waiting: dict[int, tuple[Any, dict[str, Any]]] = {}
        self.done: list[tuple[Any, dict[str, Any]]] = []
        self._tokens = 0
        self._fallback: Embedder | None = None

    @property
    def pending(self) -> int:
        return len(self.waiting)

    def submit(self, spec: Any, record: dict[str, Any]) -> None:
        """Score ``record`` (it carries :data:`PAIRS`)."""
        self._tokens += 1
        self.waiting[self._tokens] = (spec, record)
        if self._fallback is not None:
            return  # scored at the next call of finished
        try:
            self.connection.send([(self._tokens, _job(record))])
        except (OSError, ValueError):  # the process is gone: score here
            self._score_here()

    def finished(self, block: bool = False) -> list[tuple[Any, dict[str, Any]]]:
        """The records scored since the last call; with ``block``, at least one while any
        waits."""
        self._receive(timeout=None if block else 0.0)
        done, self.done = self.done, []
        return done

    def drain(self) -> list[tuple[Any, dict[str, Any]]]:
        """Every waiting record, scored."""
        done = []
        while self.waiting:
            done.extend(self.finished(block=True))
        return done

    def close(self) -> None:
        if self.process.is_alive():
            with suppress(OSError, ValueError):
                self.connection.send(None)
            self.process.join(timeout=5)
            if self.process.is_alive():
                self.process.kill()
        self.connection.close()

    # --- the pipe ------------------------------------------------------------------------------

    def _receive(self, timeout: float | None) -> None:
        """Collect what the process scored; with ``timeout=None``, wait for a first batch, up
        to :data:`PATIENCE_S` (then the process is taken for hung)."""
        if self._fallback is not None:
            self._score_here()
            return
        first, received = (PATIENCE_S if timeout is None else timeout), False
        try:
            if timeout is None and self.waiting:  # score what you have now
                self.connection.send(FLUSH)
            while self.waiting and self.connection.poll(first):
                for token, scores in self.connection.recv():
                    spec, record = self.waiting.pop(token)
                    self.done.append((spec, with_scores(record, scores)))
                first, received = 0.0, True  # then only what is already there
        except (EOFError, OSError):  # the process died: what it had is scored here
            self._score_here()
            return
        if timeout is None and self.waiting and not received:  # it hangs
            self.process.kill()
            self._score_here()

    def _score_here(self) -> None:
        if self._fallback is None:
            self._fallback = make_embedder(self.spec)
        for token in list(self.waiting):
            spec, record = self.waiting.pop(token)
            scores = score_job(_job(record), self._fallback)
            self.done.append((spec, with_scores(record, scores)))


def _job(record: dict[str, Any]) -> Job:
    return record[PAIRS], record.get(DIAGNOSIS)
