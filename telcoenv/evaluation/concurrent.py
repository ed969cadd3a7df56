"""Many episodes in flight in one process, for an agent that waits on I/O (a served model):
``evaluate(..., concurrency=N)``, ``telcoenv evaluate --concurrency N``.

Each process (this one, each of ``workers`` local processes, or each Ray actor) plays N
episodes at once as asyncio tasks of one event loop. An episode in flight has a slot of its own,
an agent and environments (environments are synchronous and fast: they step in the loop's
thread), and every slot shares the process's embedder. The agent's ``aact`` is awaited; an
agent with ``copies(n)`` makes the N agents itself, sharing what they can (the OpenAI agent: one
async client whose pool keeps N connections). An episode plays exactly as it does one at a time
(same seed, same record but for its timing); its timeout is asyncio's, and any failure (the agent
raising, the server failing, the timeout) is that episode's failed record.

An agent without ``aact`` is refused for ``concurrency`` above 1 rather than run in threads: a
thread stuck in a blocking call can be neither timed out nor stopped, a CPU-bound agent gains
nothing under the GIL, and nothing says a user's agent is thread-safe. Such agents run in
parallel with ``workers``.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import suppress
from functools import cached_property, partial
from multiprocessing.connection import Connection
from typing import Any

from telcoenv.agents import AsyncAgent, load_agent
from telcoenv.errors import TelcoEnvError
from telcoenv.evaluation.processes import (
    CLOSE_S,
    LocalProcesses,
    given_up,
    incoming,
    late,
    patience,
    send_record,
)
from telcoenv.evaluation.runner import (
    _POLL_S,
    EMBEDDER_THREADS,
    EpisodeSpec,
    RunConfig,
    _describe,
    _EpisodeTimeout,
    _Executor,
    _Finished,
    _Ray,
    _Worker,
    failed_record,
)

Record = dict[str, Any]
Done = Callable[[EpisodeSpec, Record], None]
# Episodes in flight: key -> (spec, when it was handed out).
Running = dict[str, tuple[EpisodeSpec, float]]


def check_concurrent(agent: Any, name: str, concurrency: int) -> None:
    """Refuse, in one line, to play ``concurrency`` episodes at once with an agent that has no
    async ``aact``."""
    if not isinstance(agent, AsyncAgent):
        raise TelcoEnvError(
            f"concurrency {concurrency} needs an agent with an async aact(observation, info), "
            f"which {name!r} has not (the openai agent has one); run it with concurrency 1, "
            "in parallel with workers"
        )


def concurrent_executor(
    backend: str, config: RunConfig, workers: int, address: str | None, concurrency: int
) -> _Executor:
    """``concurrency`` episodes at once in this process, in each of ``workers`` local processes
    or in each of ``workers`` Ray actors."""
    if backend == "ray":
        return _RayConcurrent(config, workers, address, concurrency)
    if workers > 1:
        hangs = "it hangs (an agent blocks its event loop)"
        return LocalProcesses(
            config, workers, _serve, at_once=concurrency, queue_behind=False, hangs=hangs
        )
    return _Concurrent(config, concurrency)


class _Slot(_Worker):
    """The place of one episode in flight: an agent and environments of its own, the rest (the
    settings, the embedder) shared with the worker it is made from. ``arun`` never raises."""

    @classmethod
    def sharing(cls, worker: _Worker, agent: Any) -> _Slot:
        slot = cls.__new__(cls)
        vars(slot).update(vars(worker))
        slot.agent, slot.envs, slot.trace, slot.steps = agent, {}, None, 0
        return slot

    async def arun(self, spec: EpisodeSpec) -> Record:
        """:meth:`_Worker.run` with the agent awaited."""
        started = time.perf_counter()
        try:
            record = await self._aattempt(spec)
        except Exception as exc:  # even the failure record failed: keep the episode's error
            record = self._unbuilt(spec, exc)
        record["duration_s"] = time.perf_counter() - started
        return record

    async def _aattempt(self, spec: EpisodeSpec) -> Record:
        """:meth:`_Worker._attempt` with the agent awaited."""
        record = self._fresh(spec)
        try:
            record.update(self._scored(await self._aplay_in_time(spec)))
            error = None
        except (_EpisodeTimeout, Exception, SystemExit) as exc:  # the episode's, not the run's
            error = self._episode_error(exc)
        return self._completed(spec, record, error)

    async def _aplay_in_time(self, spec: EpisodeSpec) -> dict[str, Any]:
        """Play within the episode timeout, asyncio's (a task cannot take SIGALRM)."""
        self._env(spec.domain)  # made and prepared before the episode's clock starts
        try:
            async with asyncio.timeout(self.config.episode_timeout or None) as deadline:
                return await self._aplay(spec)
        except TimeoutError:
            if deadline.expired():
                raise _EpisodeTimeout from None
            raise  # the agent's own timeout: a failure like any other

    async def _aplay(self, spec: EpisodeSpec) -> dict[str, Any]:
        observation, info = self._begin(spec)
        while True:
            action = await self.agent.aact(observation, info)
            observation, info, done = self._step(spec, action)
            if done:
                return info


def _agents(agent: Any, config: RunConfig, n: int) -> list[Any]:
    """``n`` agents, one per episode in flight: the agent's own ``copies(n)`` where it makes
    them, else ``agent`` and ``n - 1`` more made as the run makes its agent."""
    copies = getattr(agent, "copies", None)
    if callable(copies):
        return list(copies(n))
    return [agent, *(load_agent(config.agent, **config.agent_options) for _ in range(n - 1))]


class Episodes:
    """``concurrency`` episodes at once on the running event loop, each in a slot of its own; a
    Ray actor as it is (``max_concurrency`` keeps its calls within the slots). ``run`` never
    raises."""

    def __init__(self, config: RunConfig, threads: int, concurrency: int) -> None:
        worker = _Worker(config, threads)
        agents = _agents(worker.agent, config, concurrency)
        self.slots = [_Slot.sharing(worker, agent) for agent in agents]
        self.free: asyncio.Queue[_Slot] = asyncio.Queue()
        for slot in self.slots:
            self.free.put_nowait(slot)

    async def run(self, spec: EpisodeSpec) -> Record:
        # The executors hand out one episode per slot; one given up on as overdue (an agent
        # blocked the loop) may still hold its slot, and the next waits for it.
        slot = await self.free.get()
        try:
            return await slot.arun(spec)
        finally:
            self.free.put_nowait(slot)

    async def aclose(self) -> None:
        """Close the agents' connections (the episodes have stopped)."""
        for slot in self.slots:
            aclose = getattr(slot.agent, "aclose", None)
            if callable(aclose):
                with suppress(Exception):  # closing must not fail the end of a run
                    await aclose()


class _Loop:
    """:class:`Episodes` on an event loop in a thread of this process: ``start`` hands it an
    episode, whose record goes to ``done`` (called from the loop's thread)."""

    def __init__(self, config: RunConfig, threads: int, concurrency: int) -> None:
        self.episodes = Episodes(config, threads, concurrency)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="telcoenv-episodes", daemon=True
        )
        self.thread.start()

    def start(self, spec: EpisodeSpec, done: Done) -> None:
        future = asyncio.run_coroutine_threadsafe(self.episodes.run(spec), self.loop)
        future.add_done_callback(partial(_deliver, spec, done))

    def close(self) -> None:
        stopping = asyncio.run_coroutine_threadsafe(self._stop(), self.loop)
        with suppress(Exception):  # a loop that an agent blocks dies with the process
            stopping.result(timeout=CLOSE_S)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=CLOSE_S)
        if not self.thread.is_alive():
            self.loop.close()

    async def _stop(self) -> None:
        """Cancel the episodes in flight (a stopped run keeps what it stored) and close the
        agents' connections."""
        tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.episodes.aclose()


def _deliver(spec: EpisodeSpec, done: Done, future: Future[Record]) -> None:
    if future.cancelled():  # the run stopped: nothing to store
        return
    problem = future.exception()
    if problem is None:
        done(spec, future.result())
    else:
        done(spec, failed_record(spec, f"the episode could not be run: {_describe(problem)}"))


def _arrived(
    done: queue.SimpleQueue[tuple[EpisodeSpec, Record]], running: Running
) -> _Finished | None:
    """The episodes finished by now (stored together), after waiting up to :data:`_POLL_S` for
    a first (None when none came); those ``running`` no longer holds were given up on already
    (stored as overdue) and are not stored twice."""
    try:
        arrived = [done.get(timeout=_POLL_S)]
    except queue.Empty:
        return None
    with suppress(queue.Empty):
        while True:
            arrived.append(done.get_nowait())
    return [(spec, record) for spec, record in arrived if running.pop(spec.key, None) is not None]


class _Concurrent:
    """``concurrency`` episodes at once in this process, on an event loop in a thread of its
    own, while this thread stores them. An agent that blocks the loop stalls them all: they are
    stored as failed once overdue."""

    def __init__(self, config: RunConfig, concurrency: int) -> None:
        self.capacity = concurrency
        self.done: queue.SimpleQueue[tuple[EpisodeSpec, Record]] = queue.SimpleQueue()
        self.running: Running = {}
        self.patience = patience(config)
        self.loop = _Loop(config, EMBEDDER_THREADS, concurrency)

    @property
    def busy(self) -> int:
        return len(self.running)

    def submit(self, spec: EpisodeSpec) -> None:
        self.running[spec.key] = (spec, time.monotonic())
        self.loop.start(spec, self._finished)

    def _finished(self, spec: EpisodeSpec, record: Record) -> None:
        self.done.put((spec, record))

    def wait(self) -> _Finished:
        arrived = _arrived(self.done, self.running)
        if arrived is not None:
            return arrived
        overdue = late(self.running, self.patience)
        error = (
            f"no result after {self.patience:g} s: the agent's aact blocks the event loop "
            "(it must await, never block)"
        )
        return given_up(self.running, overdue, error) if overdue else []

    def close(self) -> None:
        self.loop.close()


def _serve(
    config: RunConfig, threads: int, concurrency: int, tasks: Connection, results: Connection
) -> None:
    """A worker process: play the episodes that come in on ``tasks``, ``concurrency`` at once,
    and send each one's spec and record back on ``results``, until the parent is gone."""
    outbox: queue.SimpleQueue[tuple[EpisodeSpec, Record]] = queue.SimpleQueue()
    # Sent from a thread of their own: a full pipe must not stall the event loop.
    threading.Thread(target=_send_all, args=(outbox, results), daemon=True).start()
    episodes = _Loop(config, threads, concurrency)
    for spec in incoming(tasks):
        episodes.start(spec, lambda spec, record: outbox.put((spec, record)))
    episodes.close()


def _send_all(outbox: queue.SimpleQueue[tuple[EpisodeSpec, Record]], results: Connection) -> None:
    with suppress(OSError):  # the parent is gone
        while True:
            send_record(results, *outbox.get())


class _RayConcurrent(_Ray):
    """Episodes on a Ray cluster, ``concurrency`` at once in each actor (an async actor, one
    idle entry per free slot). An actor that dies fails its episodes in flight and is replaced
    once."""

    def __init__(
        self, config: RunConfig, workers: int, address: str | None, concurrency: int
    ) -> None:
        self.concurrency = concurrency
        self.replacements: dict[Any, Any] = {}  # a dead actor -> the one in its place
        super().__init__(config, workers, address)
        self.capacity = workers * concurrency
        self.idle = [actor for actor in self.idle for _ in range(concurrency)]

    @cached_property
    def _remote(self) -> Any:
        return self.ray.remote(num_cpus=1, max_concurrency=self.concurrency)(Episodes)

    def _actor(self) -> Any:
        return self._remote.remote(self.config, 1, self.concurrency)  # one CPU per actor

    def _replacement(self, dead: Any) -> Any:
        if dead not in self.replacements:
            self.replacements[dead] = self._actor()
        return self.replacements[dead]
