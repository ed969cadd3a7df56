"""Episodes in local worker processes: ``evaluate(..., workers=N)`` on this machine.

Each process gets its episodes on a pipe of its own and sends each spec and record back on
another; the runner waits on all of them in one call, and checks its processes after it. No
thread in the runner shuffles tasks or results, so a finished episode costs the runner a read
and a write (a :class:`multiprocessing.pool.Pool` kept three threads busy for it: about 2.5 s of
the runner's CPU on the 2,940-episode grid with 2 workers).

A process that dies fails the episodes it was playing at once, with its exit code, and is
replaced; one that returns nothing long past its episodes' timeout is taken for hung, killed and
replaced. An episode queued behind the one that died goes to another process.

A process plays one episode at a time (:func:`serve_one_at_a_time`) or many on an event loop
(:mod:`telcoenv.evaluation.concurrent`). One at a time, a process whose episodes are quick gets
one more queued behind the one it plays, so that it never waits for the runner.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.connection import wait as ready_connections
from multiprocessing.process import BaseProcess
from typing import Any

from telcoenv.evaluation.runner import (
    _POLL_S,
    EMBEDDER_THREADS,
    LOST_WORKER_GRACE_S,
    EpisodeSpec,
    RunConfig,
    _describe,
    _Finished,
    _Worker,
    failed_record,
)

# Seconds to wait, when a run ends, for a process (or an event loop's episodes) to stop.
CLOSE_S = 10.0
# An episode that took less than this gets another queued behind it in its process: the
# runner's turnaround (storing, claiming) would otherwise idle the process between quick
# episodes, while a slow episode would hold the one behind it back from an idle process.
QUICK_S = 1.0

Record = dict[str, Any]
# Episodes in flight: key -> (spec, when it was handed out).
Running = dict[str, tuple[EpisodeSpec, float]]
# A process's main: (config, BLAS threads, episodes at once, tasks in, results out).
Serve = Callable[[RunConfig, int, int, Connection, Connection], None]


def patience(config: RunConfig) -> float | None:
    """How long an episode may go without a record before it is given up: its timeout, as long
    again for the one before it in its process (or its process's start-up), and a grace."""
    timeout = config.episode_timeout
    return 2 * timeout + LOST_WORKER_GRACE_S if timeout > 0 else None


def late(running: Running, patience: float | None) -> list[str]:
    """The keys of the episodes in ``running`` that are past ``patience``."""
    if patience is None:
        return []
    now = time.monotonic()
    return [key for key, (_, since) in running.items() if now - since > patience]


def given_up(running: Running, keys: list[str], error: str) -> _Finished:
    """The episodes ``keys``, taken out of ``running`` as failed with ``error``."""
    return [(spec, failed_record(spec, error)) for spec, _ in map(running.pop, keys)]


@dataclass(frozen=True)
class _Main:
    """``serve`` as a process's main: Ctrl-C left to the parent, and a process that cannot set
    up (its agent fails to load there) fails each episode it is given, with the reason. (A
    dataclass, not a closure: the spawn start method pickles it.)"""

    serve: Serve

    def __call__(
        self, config: RunConfig, threads: int, at_once: int, tasks: Connection, results: Connection
    ) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is handled by the parent
        try:
            self.serve(config, threads, at_once, tasks, results)
        except Exception as exc:
            problem = f"the worker process could not start: {_describe(exc)}"
            _fail_all(tasks, results, problem)


def _fail_all(tasks: Connection, results: Connection, problem: str) -> None:
    with suppress(OSError):  # the parent is gone
        for spec in incoming(tasks):
            results.send((spec, failed_record(spec, problem)))


def incoming(tasks: Connection) -> Iterator[EpisodeSpec]:
    """The specs that come in on ``tasks`` until the parent is gone (a parent killed outright
    closes no pipe that its other children hold: it is watched instead)."""
    parent = os.getppid()
    with suppress(EOFError, OSError):
        while os.getppid() == parent:
            if tasks.poll(_POLL_S):
                yield tasks.recv()


def serve_one_at_a_time(
    config: RunConfig, threads: int, at_once: int, tasks: Connection, results: Connection
) -> None:
    """A worker process that plays its episodes one after the other."""
    worker = _Worker(config, threads)
    with suppress(OSError):  # the parent is gone
        for spec in incoming(tasks):
            send_record(results, spec, worker.run(spec))


def send_record(results: Connection, spec: EpisodeSpec, record: Record) -> None:
    """Send ``spec`` and ``record`` back; a record that does not pickle as the episode's
    failure (pickling comes before anything is written). OSError: the parent is gone."""
    try:
        results.send((spec, record))
    except OSError:
        raise
    except Exception as exc:
        error = f"the worker process could not return the episode: {_describe(exc)}"
        results.send((spec, failed_record(spec, error)))


@dataclass
class _Process:
    """A worker process: where its episodes go, where their records come back, its episodes
    in flight, and whether its last one was quick."""

    process: BaseProcess
    tasks: Connection
    results: Connection
    running: Running = field(default_factory=dict)
    quick: bool = False


class LocalProcesses:
    """``workers`` local processes, each playing ``at_once`` episodes at a time with
    ``serve`` (one more queued where ``queue_behind`` and its episodes are quick). A process
    that dies, or that returns nothing long past its episodes' timeout, is replaced and its
    episodes in flight are stored as failed (``hangs``: what a hang means for ``serve``)."""

    def __init__(
        self,
        config: RunConfig,
        workers: int,
        serve: Serve = serve_one_at_a_time,
        *,
        at_once: int = 1,
        queue_behind: bool = True,
        hangs: str = "it hangs (an agent's call blocks the episode timeout)",
    ) -> None:
        self.context = multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")
        self.main, self.args = _Main(serve), (config, EMBEDDER_THREADS, at_once)
        self.at_once, self.queue_behind, self.hangs = at_once, queue_behind, hangs
        self.patience = patience(config)
        self.processes = [self._start() for _ in range(workers)]

    def _start(self) -> _Process:
        tasks, to_child = self.context.Pipe(duplex=False)
        from_child, results = self.context.Pipe(duplex=False)
        process = self.context.Process(
            target=self.main,
            args=(*self.args, tasks, results),
            name="telcoenv-episodes",
            daemon=True,
        )
        process.start()
        tasks.close()  # the child's ends
        results.close()
        return _Process(process, to_child, from_child)

    def _room(self, worker: _Process) -> int:
        return self.at_once + (1 if self.queue_behind and worker.quick else 0)

    @property
    def capacity(self) -> int:
        return sum(map(self._room, self.processes))

    @property
    def busy(self) -> int:
        return sum(len(worker.running) for worker in self.processes)

    def submit(self, spec: EpisodeSpec) -> None:
        free = [w for w in self.processes if len(w.running) < self._room(w)] or self.processes
        worker = min(free, key=lambda w: len(w.running))
        worker.running[spec.key] = (spec, time.monotonic())
        with suppress(OSError):  # a process that died: wait finds it, with its episodes
            worker.tasks.send(spec)

    def wait(self) -> _Finished:
        ready = ready_connections([worker.results for worker in self.processes], _POLL_S)
        finished: _Finished = []
        for worker in self.processes:
            if worker.results in ready:
                finished += self._received(worker)
        return finished + self._lost()

    @staticmethod
    def _received(worker: _Process) -> _Finished:
        finished: _Finished = []
        with suppress(EOFError, OSError):  # a process that died: _lost finds it
            while worker.results.poll():
                spec, record = worker.results.recv()
                worker.quick = record.get("duration_s", QUICK_S) < QUICK_S
                if worker.running.pop(spec.key, None) is not None:  # not given up on already
                    finished.append((spec, record))
        return finished

    def _lost(self) -> _Finished:
        ended: _Finished = []
        for index, worker in enumerate(self.processes):
            if not worker.process.is_alive():
                error = f"the worker process died (exit code {worker.process.exitcode})"
            elif late(worker.running, self.patience):  # its other episodes wait behind it
                error = f"no result from the worker process after {self.patience:g} s: "
                error += self.hangs
            else:
                continue
            ended += self._received(worker)  # what it sent before it died or hung
            # One at a time, only the first episode was playing: those queued behind it go to
            # another process. With several at once, all of them were playing.
            playing = list(worker.running)[: self.at_once]
            queued = [spec for spec, _ in worker.running.values()][len(playing) :]
            ended += given_up(worker.running, playing, error)
            self._end(worker)
            self.processes[index] = self._start()
            for spec in queued:
                self.submit(spec)
        return ended

    @staticmethod
    def _end(worker: _Process) -> None:
        worker.process.terminate()
        worker.process.join(CLOSE_S)
        if worker.process.is_alive():  # SIGTERM ignored or blocked
            worker.process.kill()
            worker.process.join(CLOSE_S)
        worker.tasks.close()
        worker.results.close()

    def close(self) -> None:
        for worker in self.processes:
            self._end(worker)
