"""What a gold-path network episode is made of: the floors under the episode rate.

    python benchmarks/bench_anatomy.py [--episodes 300] [--rounds 5] [--only network,embedder]

``network`` (no embedding model, ``Troubleshooting-v0``, the oracle): the same episodes (seeds
0..N-1) are played, timed whole and by phase (reset, tool calls, the submitting step with
verification and scoring); then each part is run again alone:

* ``generation``: the episode's scenario in Python (KPI sampling, the network, the fault, the
  engineer's statement, the gold values and summaries), as ``NetworkDomain.start_episode``
  builds it, without the database;
* ``sql``: the episode's SQL statements, recorded from the played episodes and replayed on the
  same connection without the Python around them (the SQLite floor of the state held in SQL).

``embedder`` (the default multilingual model, as an RL loop on defaults runs): the episode with
in-episode IRA/RA against the same episode without, and within the encoding the time of the
new 9-token windows' features (their matrix products, the gathers of kept products, the layer
norms) and of the dense heads.

Each figure is the median over rounds of the mean per episode (ms); machines are shared, so
compare ratios (``compare.py``) and read the parts against the whole of the same run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


def _env(embedder: Any = None) -> Any:
    import telcoenv

    kwargs = {} if embedder == "default" else {"embedder": None}
    return telcoenv.make("troubleshooting", privileged=True, **kwargs).unwrapped


def _play(env: Any, agent: Any, seed: int) -> tuple[float, float, float, int]:
    """One oracle episode: seconds of the reset, of the tool steps and of the submitting
    step, and the number of tool steps."""
    start = time.perf_counter()
    observation, info = env.reset(seed=seed)
    reset = time.perf_counter() - start
    agent.reset(observation, info)
    tools = last = 0.0
    calls = 0
    while True:
        action = agent.act(observation, info)
        start = time.perf_counter()
        observation, _, terminated, truncated, info = env.step(action)
        took = time.perf_counter() - start
        if terminated or truncated:
            last = took
            break
        tools += took
        calls += 1
    return reset, tools, last, calls


class _Recorder:
    """A DB-API cursor that keeps what it runs (the benchmark's own instrument)."""

    def __init__(self, cursor: Any, log: list[tuple[Any, ...]]) -> None:
        self._cursor, self._log = cursor, log

    def execute(self, sql: str, params: Any = ()) -> Any:
        self._log.append(("execute", sql, params))
        return self._cursor.execute(sql, params)

    def executemany(self, sql: str, params: Any) -> Any:
        params = list(params)
        self._log.append(("executemany", sql, params))
        return self._cursor.executemany(sql, params)

    def fetchall(self) -> Any:
        self._log.append(("fetchall",))
        return self._cursor.fetchall()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)


@contextmanager
def _recording(database: Any, log: list[tuple[Any, ...]]) -> Iterator[None]:
    cursor = database._cursor
    database._cursor = _Recorder(cursor, log)
    try:
        yield
    finally:
        database._cursor = cursor


def _replay(connection: Any, episodes: list[tuple[list[Any], list[Any]]]) -> tuple[float, float]:
    """Run the recorded statements again; seconds spent on the resets' and on the steps'."""
    cursor = connection.cursor()
    spent = [0.0, 0.0]
    for logs in episodes:
        for phase, log in enumerate(logs):
            start = time.perf_counter()
            for entry in log:
                if entry[0] == "fetchall":
                    cursor.fetchall()
                elif entry[1] == "BEGIN":  # the shared database commits, then begins (a reset)
                    if connection.in_transaction:
                        connection.commit()
                    cursor.execute("BEGIN")
                elif entry[0] == "execute":
                    cursor.execute(entry[1], entry[2])
                else:
                    cursor.executemany(entry[1], entry[2])
            spent[phase] += time.perf_counter() - start
    return spent[0], spent[1]


@contextmanager
def _clocks(spent: dict[str, float], targets: dict[str, tuple[Any, str]]) -> Iterator[None]:
    """Time every call of ``owner.attribute`` into ``spent[name]`` (``targets``: name ->
    (owner, attribute)), the originals restored afterwards."""
    kept = {name: getattr(owner, attribute) for name, (owner, attribute) in targets.items()}

    def clock(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[name] += time.perf_counter() - start

        return timed

    for name, (owner, attribute) in targets.items():
        spent.setdefault(name, 0.0)
        setattr(owner, attribute, clock(name, kept[name]))
    try:
        yield
    finally:
        for name, (owner, attribute) in targets.items():
            setattr(owner, attribute, kept[name])


def _timed(function: Callable[[], None], count: int) -> float:
    start = time.perf_counter()
    function()
    return 1000 * (time.perf_counter() - start) / count


def network(episodes: int, rounds: int) -> dict[str, float]:
    import numpy as np

    import telcoenv.domains.network as network_domain
    import telcoenv.episode as episode_module
    from telcoenv.agents import OracleAgent
    from telcoenv.tooling import Toolbox

    env, agent = _env(), OracleAgent()
    _play(env, agent, 0)  # warm caches (catalogue, compiled statements)
    seeds = range(episodes)

    # The episodes as played, and their SQL statements (recorded in a pass of its own).
    database = env.episode.setup.state.db
    logs: list[tuple[list[Any], list[Any]]] = []
    draws = []
    for seed in seeds:
        reset_log: list[Any] = []
        step_log: list[Any] = []
        with _recording(database, reset_log):
            observation, info = env.reset(seed=seed)
        agent.reset(observation, info)
        with _recording(database, step_log):
            done = False
            while not done:
                observation, _, terminated, truncated, info = env.step(agent.act(observation, info))
                done = terminated or truncated
        logs.append((reset_log, step_log))
        episode = env.episode
        draws.append((episode.intent, episode.blueprint, episode.key, episode.trace.language))
    last_rows = env.episode.row_id
    statements = statistics.mean(
        sum(e[0] != "fetchall" for log in both for e in log) for both in logs
    )

    def generate() -> None:
        domain = env.domain
        for intent, blueprint, key, lang in draws:
            domain.start_episode(intent, blueprint, np.random.default_rng(key), lang, None, "x")

    figures: dict[str, list[float]] = {}

    def add(name: str, value: float) -> None:
        figures.setdefault(name, []).append(value)

    kept_state = network_domain.NetworkState
    domain_class = type(env.domain)
    # Where the time of an episode goes, by the functions that do each part.
    parts_of = {
        "start_episode": (domain_class, "start_episode"),  # the scenario and its rows
        "state_load": (network_domain, "NetworkState"),  # the rows: built and inserted
        "tool_bodies": (Toolbox, "run"),  # the tools (their SQL included)
        "verification": (domain_class, "verify"),
        "scoring": (episode_module, "_scored"),
    }
    for _ in range(rounds):
        parts = [_play(env, agent, seed) for seed in seeds]
        whole = 1000 * sum(sum(p[:3]) for p in parts) / episodes
        add("episode_ms", whole)
        add("reset_ms", 1000 * sum(p[0] for p in parts) / episodes)
        add("tool_steps_ms", 1000 * sum(p[1] for p in parts) / episodes)
        add("submit_step_ms", 1000 * sum(p[2] for p in parts) / episodes)
        add("tool_steps_per_episode", sum(p[3] for p in parts) / episodes)
        spent: dict[str, float] = {}
        with _clocks(spent, parts_of):
            clocked = [_play(env, agent, seed) for seed in seeds]
        share = {name: 1000 * seconds / episodes for name, seconds in spent.items()}
        add("scenario_ms", share["start_episode"] - share["state_load"])
        add("state_load_ms", share["state_load"])
        add("tool_bodies_ms", share["tool_bodies"])
        add("verification_ms", share["verification"])
        add("scoring_ms", share["scoring"])
        clocked_whole = 1000 * sum(sum(p[:3]) for p in clocked) / episodes
        add("clocked_episode_ms", clocked_whole)  # the parts above and below sum to it
        add("environment_ms", clocked_whole - sum(share.values()) + share["state_load"])
        network_domain.NetworkState = lambda *args: None  # the scenario without the database
        try:
            add("generation_ms", _timed(generate, episodes))
        finally:
            network_domain.NetworkState = kept_state
        env.close()  # the replay inserts the episodes' rows again: none may be left
        connection = database._dbapi
        reset_sql, step_sql = _replay(connection, logs)
        add("sql_ms", 1000 * (reset_sql + step_sql) / episodes)
        add("sql_of_reset_ms", 1000 * reset_sql / episodes)
        if connection.in_transaction:
            connection.commit()
        database._delete_rows(last_rows)
        connection.commit()
    result = {name: round(statistics.median(values), 4) for name, values in figures.items()}
    result["sql_statements_per_episode"] = round(statements, 2)
    result["beyond_floors_ms"] = round(
        result["episode_ms"] - result["generation_ms"] - result["sql_ms"], 4
    )
    return result


def embedder(episodes: int, rounds: int) -> dict[str, float]:
    from telcoenv.agents import OracleAgent
    from telcoenv.embeddings import use_windows

    with_model, without, agent = _env("default"), _env(), OracleAgent()
    for seed in range(50):  # load the model; fill the caches as a running loop has them
        _play(with_model, agent, 10_000 + seed)
    figures: dict[str, list[float]] = {}
    seed = 20_000
    for _ in range(rounds):
        seeds = range(seed, seed + episodes)  # new episodes each round, as in training
        seed += episodes
        base = [_play(without, agent, s) for s in seeds]
        spent: dict[str, float] = {}
        parts = {
            "features": (use_windows.WindowedUSE, "_features"),
            "head": (use_windows.WindowedUSE, "_heads"),
        }
        with _clocks(spent, parts):
            scored = [_play(with_model, agent, s) for s in seeds]
        whole = 1000 * sum(sum(p[:3]) for p in scored) / episodes
        figures.setdefault("episode_with_embedder_ms", []).append(whole)
        figures.setdefault("episode_without_ms", []).append(
            1000 * sum(sum(p[:3]) for p in base) / episodes
        )
        figures.setdefault("encoding_ms", []).append(
            1000 * (sum(p[2] for p in scored) - sum(p[2] for p in base)) / episodes
        )
        figures.setdefault("window_features_ms", []).append(1000 * spent["features"] / episodes)
        figures.setdefault("dense_head_ms", []).append(1000 * spent["head"] / episodes)
    return {name: round(statistics.median(values), 4) for name, values in figures.items()}


MEASURES = {"network": network, "embedder": embedder}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(MEASURES), help="comma-separated measures")
    parser.add_argument("--episodes", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="figures as one JSON line")
    args = parser.parse_args()
    results: dict[str, float] = {}
    for name in args.only.split(","):
        results.update(MEASURES[name](args.episodes, args.rounds))
    print(json.dumps(results) if args.json else json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
