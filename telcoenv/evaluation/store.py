"""The results database: one row per finished episode, with its metrics and full trace.

SQLAlchemy, so any URL works (PostgreSQL for a shared database); the embedded default is a
SQLite file. Each episode is committed on its own, so a run killed at any moment keeps every
episode it finished. ``(run, key)`` is unique: an episode is stored once, also when two
processes evaluate the same run; a failed episode that is run again is replaced by its new result.

Before computing an episode a process claims it (``claims``: one transaction at a time per run
reads whether the episode is stored or held and inserts the claim), so two processes on one run
split the work and never play an episode twice. A claim expires when its process stops
refreshing it (``STALE_AFTER_S``), or at once when that process is gone from this machine
(killed). A run stores its configuration, without credentials; resuming it
with another configuration is refused (:class:`RunMismatchError`).

A database written by an earlier telcoenv gets the columns and tables added since (``domain``,
``resolved``, ``args``, ``answer``, ``difficulty``, ``repeat``, ``chain``, ``outcome``,
``claims``) when it is opened;
its rows stay, and credentials an earlier telcoenv stored with a run's agent options are removed.
A file that is not a SQLite database, or one that holds other tables, is refused with a message
naming it.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import socket
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Float,
    Integer,
    String,
    Text,
    UniqueConstraint,
    bindparam,
    create_engine,
    delete,
    event,
    insert,
    inspect,
    select,
    text,
    update,
)
from sqlalchemy.engine import Connection, Engine, ExceptionContext, make_url
from sqlalchemy.exc import (
    ArgumentError,
    DatabaseError,
    DBAPIError,
    IntegrityError,
    OperationalError,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from telcoenv.database import driver_hint, share_sqlite_file, without_credentials
from telcoenv.errors import RunMismatchError, StoreError
from telcoenv.evaluation import DEFAULT_DB

# A claim not refreshed for this long belongs to a process that died on another machine (or
# hangs); its episode is then free again. Claims are refreshed every HEARTBEAT_S.
STALE_AFTER_S = 120.0
HEARTBEAT_S = 15.0
#: The PostgreSQL advisory lock telcoenv processes take to create or migrate the tables (a
#: fixed key: "telcoenv" as a 64-bit integer).
_SCHEMA_LOCK = int.from_bytes(b"telcoenv", "big") - 2**63


class Base(DeclarativeBase):
    pass


class RunRow(Base):
    __tablename__ = "runs"

    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    agent: Mapped[str] = mapped_column(String(300))
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[str] = mapped_column(String(40))


class EpisodeRow(Base):
    __tablename__ = "episodes"
    __table_args__ = (UniqueConstraint("run", "key", name="one_row_per_episode"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run: Mapped[str] = mapped_column(String(200), index=True)
    key: Mapped[str] = mapped_column(String(300))
    domain: Mapped[str | None] = mapped_column(String(16), nullable=True)  # None: network
    intent: Mapped[str] = mapped_column(String(100))
    category: Mapped[str] = mapped_column(String(100))
    blueprint_id: Mapped[str] = mapped_column(String(100))
    sample_index: Mapped[int] = mapped_column(Integer)
    language: Mapped[str] = mapped_column(String(8))
    intent_list: Mapped[bool] = mapped_column(Boolean)
    # None: stored before difficulty tiers existed, so guided.
    difficulty: Mapped[str | None] = mapped_column(String(16), nullable=True)
    # Which play of the episode (evaluate --repeats); None: stored before repeats, so 0.
    repeat: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # The split it was drawn in (telcoenv.splits); None: stored before splits, so "all".
    split: Mapped[str | None] = mapped_column(String(8), nullable=True)
    status: Mapped[str] = mapped_column(String(16))  # "ok" or "failed"
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    ira: Mapped[float | None] = mapped_column(Float, nullable=True)
    msc: Mapped[float | None] = mapped_column(Float, nullable=True)
    eap: Mapped[float | None] = mapped_column(Float, nullable=True)
    sas: Mapped[float | None] = mapped_column(Float, nullable=True)
    ra: Mapped[float | None] = mapped_column(Float, nullable=True)
    resolved: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    args: Mapped[float | None] = mapped_column(Float, nullable=True)
    answer: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    embedder: Mapped[str | None] = mapped_column(String(200), nullable=True)
    # The chain MSC/EAP/SAS compared: "executed" (the calls that ran) or, None, "attempted"
    # (every attempt: how telcoenv scored before it told them apart).
    chain: Mapped[str | None] = mapped_column(String(16), nullable=True)
    predicted_chain: Mapped[list[str]] = mapped_column(JSON)
    gold_chain: Mapped[list[str]] = mapped_column(JSON)
    steps: Mapped[int] = mapped_column(Integer)
    duration_s: Mapped[float] = mapped_column(Float)
    trace: Mapped[str | None] = mapped_column(Text, nullable=True)  # EpisodeTrace JSON
    agent_usage: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    # The outcome's parts (submitted, diagnosed, fixed, answered, required steps, efficiency,
    # format, harm, minefield) and the outcome reward's named parts: telcoenv.grading.
    outcome: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    finished_at: Mapped[str] = mapped_column(String(40))


class ClaimRow(Base):
    """An episode a process is computing now (deleted when its result is stored)."""

    __tablename__ = "claims"

    run: Mapped[str] = mapped_column(String(200), primary_key=True)
    key: Mapped[str] = mapped_column(String(300), primary_key=True)
    owner: Mapped[str] = mapped_column(String(200))
    host: Mapped[str] = mapped_column(String(200))
    pid: Mapped[int] = mapped_column(Integer)
    heartbeat: Mapped[float] = mapped_column(Float)  # time.time() of the last refresh


_RUNS, _EPISODES, _CLAIMS = RunRow.__table__, EpisodeRow.__table__, ClaimRow.__table__
# The statements of storing an episode, built once with bound parameters: building them per call
# (``insert(...).values(**record)``) cost more than running them, in the process that stores
# what 64 episodes in flight finish.
_EPISODE_KEY = (_EPISODES.c.run == bindparam("run"), _EPISODES.c.key == bindparam("key"))
_DROP_FAILED = delete(_EPISODES).where(*_EPISODE_KEY, _EPISODES.c.status == "failed")
_INSERT_EPISODE = insert(_EPISODES)
_DROP_CLAIM = delete(_CLAIMS).where(
    _CLAIMS.c.run == bindparam("run"),
    _CLAIMS.c.key == bindparam("key"),
    _CLAIMS.c.owner == bindparam("owner"),
)
COLUMNS = [c.name for c in _EPISODES.columns if c.name != "id"]
# Columns added after the first release: an older database gets them (nullable) when opened.
ADDED_COLUMNS = (
    *("domain", "resolved", "args", "answer", "difficulty", "repeat", "chain", "outcome"),
    "split",
)
# What a telcoenv results database has had since the first release.
REQUIRED = {
    _RUNS.name: {c.name for c in _RUNS.columns},
    _EPISODES.name: {c.name for c in _EPISODES.columns} - set(ADDED_COLUMNS),
}

# Option names that hold credentials: never stored, never compared.
_SECRET_WORDS = frozenset(
    {"key", "apikey", "token", "password", "passwd", "pwd", "secret", "authorization", "auth"}
    | {"credential", "credentials", "cookie", "bearer", "signature"}
)


def _is_secret(name: str) -> bool:
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()
    return any(word in _SECRET_WORDS for word in re.split(r"[^a-z0-9]+", words))


def without_secrets(value: Any) -> Any:
    """``value`` with every credential-like key (api_key, token, ...) dropped, at any depth, and
    the user:password of URLs removed."""
    if isinstance(value, Mapping):
        return {str(k): without_secrets(v) for k, v in value.items() if not _is_secret(str(k))}
    if isinstance(value, list | tuple):
        return [without_secrets(v) for v in value]
    if isinstance(value, str):
        return without_credentials(value)
    return value


def config_differences(stored: Mapping[str, Any], wanted: Mapping[str, Any]) -> list[str]:
    """What differs between two run configurations, as ``name: stored X, now Y``."""
    differences = []
    for name in sorted(set(stored) | set(wanted)):
        before, after = stored.get(name), wanted.get(name)
        if before == after:
            continue
        if isinstance(before, Mapping) and isinstance(after, Mapping):
            differences += [f"{name}.{d}" for d in config_differences(before, after)]
        else:
            differences.append(f"{name}: stored {_short(before)}, now {_short(after)}")
    return differences


def _short(value: Any, width: int = 60) -> str:
    shown = repr(value)
    return shown if len(shown) <= width else shown[: width - 1] + "…"


@dataclass(frozen=True, slots=True)
class Owner:
    """The process that claims episodes (one per ``evaluate`` call)."""

    id: str
    host: str
    pid: int

    @classmethod
    def current(cls) -> Owner:
        host, pid = socket.gethostname(), os.getpid()
        return cls(f"{host}:{pid}:{os.urandom(4).hex()}", host, pid)


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by another user
        return True
    return True


def _claim_is_stale(host: str, pid: int, heartbeat: float, now: float) -> bool:
    if now - heartbeat > STALE_AFTER_S:
        return True
    return host == socket.gethostname() and not _process_alive(pid)


def _missing_columns(connection: Connection) -> list[str]:
    present = {c["name"] for c in inspect(connection).get_columns(_EPISODES.name)}
    return [name for name in ADDED_COLUMNS if name not in present]


def _add_missing_columns(connection: Connection) -> None:
    for name in _missing_columns(connection):
        kind = _EPISODES.c[name].type.compile(dialect=connection.dialect)
        column = connection.dialect.identifier_preparer.quote(name)  # REPEAT is MySQL's keyword
        connection.execute(text(f"ALTER TABLE {_EPISODES.name} ADD COLUMN {column} {kind}"))


def _stored_secrets(connection: Connection) -> dict[str, dict[str, Any]]:
    """The run configurations that hold credentials (an earlier telcoenv stored them), cleaned."""
    cleaned = {}
    for name, config in connection.execute(select(_RUNS.c.name, _RUNS.c.config)).all():
        stored = config if isinstance(config, dict) else {}
        if without_secrets(stored) != stored:
            cleaned[name] = without_secrets(stored)
    return cleaned


_DETAIL = 160  # characters of a driver's message in an error line


def _problem(doing: str, where: str, error: DBAPIError) -> str:
    # SQLite says "file is not a database" of a corrupted file or another kind of file, and
    # "database disk image is malformed" of one damaged further in.
    # "Could not decode to UTF-8" of a text damaged in place (it quotes the whole text).
    detail = str(error.orig)
    damaged = any(words in detail for words in ("not a database", "malformed", "decode"))
    what = "corrupted, or not a SQLite file: " if damaged else ""
    shown = detail if len(detail) <= _DETAIL else detail[: _DETAIL - 1] + "…"
    return f"{doing} the results database {where}: {what}{shown}"


def _sqlite_pragmas(engine: Engine) -> None:
    event.listen(engine, "connect", lambda connection, _: share_sqlite_file(connection))


def _sqlite_file(url: str) -> Path | None:
    """The file of a SQLite URL (None for other databases and in-memory SQLite)."""
    parsed = make_url(url)
    database = parsed.database or ""
    if parsed.get_backend_name() != "sqlite" or database in ("", ":memory:"):
        return None
    if database.startswith("file:"):  # a SQLite URI: leave its checks to SQLite
        return None
    return Path(database)


def _check_sqlite_file(path: Path, create: bool) -> None:
    """Refuse at once a database file that cannot be what it should be."""
    if path.is_dir():
        raise StoreError(f"the results database {path} is a folder, not a SQLite file")
    if path.exists():
        if create and not os.access(path, os.W_OK):
            raise StoreError(f"the results database {path} is not writable")
        return
    if not create:
        raise StoreError(
            f"no results database at {path}: run telcoenv evaluate with this --db first"
        )
    folder = path.parent
    if not folder.is_dir():
        raise StoreError(f"cannot create the results database {path}: no folder {folder}")
    if not os.access(folder, os.W_OK):
        raise StoreError(f"cannot create the results database {path}: {folder} is not writable")


class ResultStore:
    """Open the results database at ``url``; ``create=False`` refuses a missing SQLite file
    instead of creating it (for reading)."""

    def __init__(self, url: str = DEFAULT_DB, *, create: bool = True) -> None:
        shown = without_secrets(url)  # a malformed URL cannot be masked by parsing it
        try:
            path = _sqlite_file(url)
            self.engine = create_engine(url)
        except (ArgumentError, ValueError) as exc:
            message = str(exc).replace(url, shown)
            raise StoreError(
                f"malformed database URL {shown!r}: {message} "
                "(a SQLite file: sqlite:///path/file.sqlite)"
            ) from None
        except ImportError as exc:
            raise StoreError(
                f"the database driver for {shown!r} is not installed: {exc}{driver_hint(exc)}"
            ) from None
        self.url = url
        # Which database, as a message shows it: the file, or the URL without its password.
        self.where = str(path) if path else self.engine.url.render_as_string(hide_password=True)
        if path is not None:
            _check_sqlite_file(path, create)
        if self.engine.dialect.name == "sqlite":
            _sqlite_pragmas(self.engine)
        try:
            self._prepare()
        except DBAPIError as exc:
            raise StoreError(_problem("cannot open", self.where, exc)) from None
        # Opened: a later failure of the database itself (damaged past its first pages,
        # read-only, gone) stops the command with one StoreError naming it.
        event.listen(self.engine, "handle_error", self._as_store_error)

    def _as_store_error(self, context: ExceptionContext) -> StoreError | None:
        """The database's own failures as a StoreError; integrity errors (the claims expect
        them) and errors in our statements pass as they are."""
        error = context.sqlalchemy_exception
        if isinstance(error, OperationalError) or type(error) is DatabaseError:
            return StoreError(_problem("cannot use", self.where, error))
        return None

    def _prepare(self) -> None:
        """Check the tables, then create and migrate what is missing in one transaction, one
        process at a time (two opening a new database would both create its tables: on
        PostgreSQL the second fails on the catalog's unique index), under SQLite's write lock
        or a PostgreSQL advisory lock held to the commit. A database with nothing to change is
        only read, so a read-only one opens too."""
        with self.engine.connect() as connection:
            if not self._outdated(connection):
                return
        with self.engine.connect() as connection:
            if self.engine.dialect.name == "sqlite":
                connection.exec_driver_sql("BEGIN IMMEDIATE")
            elif self.engine.dialect.name == "postgresql":
                connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_SCHEMA_LOCK})")
            if self._outdated(connection):  # again, under the lock
                Base.metadata.create_all(connection)
                _add_missing_columns(connection)
                for name, config in _stored_secrets(connection).items():
                    connection.execute(
                        update(_RUNS).where(_RUNS.c.name == name).values(config=config)
                    )
            connection.commit()

    def _outdated(self, connection: Connection) -> bool:
        """Whether tables, columns or the removal of stored credentials are missing."""
        tables = self._check_tables(connection)
        if set(Base.metadata.tables) - tables:
            return True
        return bool(_missing_columns(connection) or _stored_secrets(connection))

    def _check_tables(self, connection: Connection) -> set[str]:
        """The tables of the database; refuses one that is not telcoenv's (rather than adding
        tables to it)."""
        inspector = inspect(connection)
        tables = set(inspector.get_table_names())
        if self.engine.dialect.name == "sqlite" and tables and not tables & set(REQUIRED):
            shown = ", ".join(sorted(tables)[:6])
            raise StoreError(
                f"{self.where} is not a telcoenv results database (its tables: {shown})"
            )
        for table, needed in REQUIRED.items():
            if table in tables:
                missing = needed - {c["name"] for c in inspector.get_columns(table)}
                if missing:
                    raise StoreError(
                        f"{self.where} is not a telcoenv results database: its table {table} "
                        f"has no column {', '.join(sorted(missing))}"
                    )
        return tables

    def ensure_run(self, name: str, agent: str, config: dict[str, Any]) -> None:
        """Record a run once; re-running it resumes it, with the same configuration only.

        A run stored by an earlier telcoenv (its configuration has no ``telcoenv`` version) is
        compared on the settings both have, then given the full configuration. ``repeats`` (1
        when absent) may grow, and the run then keeps the larger number; never shrink.
        """
        config = without_secrets(config)
        with Session(self.engine) as session:
            row = session.get(RunRow, name)
            if row is None:
                session.add(RunRow(name=name, agent=agent, config=config, created_at=_now()))
                try:
                    session.commit()
                except IntegrityError:  # another process created it first: compare with it
                    session.rollback()
                    self.ensure_run(name, agent, config)
                return
            stored = without_secrets(row.config if isinstance(row.config, dict) else {})
            legacy = "telcoenv" not in stored
            had, asked = stored.pop("repeats", 1), config.get("repeats", 1)
            wanted = {k: v for k, v in config.items() if k != "repeats"}  # compared apart
            if legacy:
                common = set(stored) & set(config)
                stored, wanted = {k: stored[k] for k in common}, {k: config[k] for k in common}
            differences = config_differences(
                {"agent": row.agent, **stored}, {"agent": agent, **wanted}
            )
            if differences:
                raise RunMismatchError(
                    f"run {name!r} was started with another configuration "
                    f"({'; '.join(differences)}): start a new --run instead"
                )
            # More repeats extend a run (each task gets more plays); fewer would leave some of
            # its tasks with more plays than others.
            if asked < had:
                raise RunMismatchError(
                    f"run {name!r} plays each episode {had} times: resume it with --repeats "
                    f"{had} or more, or start a new --run"
                )
            if legacy or asked > had:
                row.config = config
                session.commit()

    def done_keys(self, run: str) -> set[str]:
        """Keys of the stored episodes of ``run`` (failed ones included)."""
        with Session(self.engine) as session:
            return set(session.scalars(select(EpisodeRow.key).where(EpisodeRow.run == run)))

    def failed_keys(self, run: str) -> set[str]:
        with Session(self.engine) as session:
            return set(
                session.scalars(
                    select(EpisodeRow.key).where(
                        EpisodeRow.run == run, EpisodeRow.status == "failed"
                    )
                )
            )

    def claim(self, run: str, key: str, owner: Owner, *, retry_failed: bool = True) -> bool:
        """Claim an episode for ``owner``; False when it is stored (and not to be retried) or
        another live process holds it. The insert is atomic: of two claimers, one wins."""
        return bool(self.claim_many(run, [key], owner, retry_failed=retry_failed))

    def claim_many(
        self, run: str, keys: Sequence[str], owner: Owner, *, retry_failed: bool = True
    ) -> list[str]:
        """Claim several episodes in one transaction (one commit, not one per episode); the
        keys ``owner`` now holds, in order. When another process wins a race for one of them,
        each key is claimed on its own instead."""
        now = time.time()
        try:
            with self._claiming(run) as connection:
                # Claims first: a claim seen gone was dropped when its episode was stored, which
                # the second read then sees (see _claiming).
                held = {
                    row.key: row
                    for row in connection.execute(
                        select(
                            _CLAIMS.c.key,
                            _CLAIMS.c.owner,
                            _CLAIMS.c.host,
                            _CLAIMS.c.pid,
                            _CLAIMS.c.heartbeat,
                        ).where(_CLAIMS.c.run == run, _CLAIMS.c.key.in_(keys))
                    )
                }
                statuses = dict(
                    connection.execute(
                        select(_EPISODES.c.key, _EPISODES.c.status).where(
                            _EPISODES.c.run == run, _EPISODES.c.key.in_(keys)
                        )
                    ).all()
                )
                mine, fresh = set(), []
                for key in keys:
                    status = statuses.get(key)
                    if status is not None and (status != "failed" or not retry_failed):
                        continue
                    claim = held.get(key)
                    if claim is not None and claim.owner == owner.id:
                        mine.add(key)
                        continue
                    if claim is not None:
                        if not _claim_is_stale(claim.host, claim.pid, claim.heartbeat, now):
                            continue
                        connection.execute(  # only the stale claim seen, not a newer one
                            delete(_CLAIMS).where(
                                _CLAIMS.c.run == run,
                                _CLAIMS.c.key == key,
                                _CLAIMS.c.owner == claim.owner,
                                _CLAIMS.c.heartbeat == claim.heartbeat,
                            )
                        )
                    fresh.append(key)
                if fresh:
                    connection.execute(
                        insert(_CLAIMS),
                        [
                            {
                                "run": run,
                                "key": key,
                                "owner": owner.id,
                                "host": owner.host,
                                "pid": owner.pid,
                                "heartbeat": now,
                            }
                            for key in fresh
                        ],
                    )
        except IntegrityError:  # another process claimed one of them first
            if len(keys) == 1:
                return []
            return [k for k in keys if self.claim(run, k, owner, retry_failed=retry_failed)]
        return [key for key in keys if key in mine or key in fresh]

    @contextmanager
    def _claiming(self, run: str) -> Iterator[Connection]:
        """A transaction no other claim on ``run`` runs beside, so that no episode is played
        twice. pysqlite starts a transaction only at the first write: without ``BEGIN
        IMMEDIATE`` another process could store an episode and drop its claim between the
        reads of the stored episodes and of the claims, and the episode would be claimed again.
        Elsewhere the run's row is locked (``FOR UPDATE``): claimers of the run wait for each
        other, while storing does not wait, so a claim read absent may have been dropped by a
        store just before; the stored episodes, read after the claims, then show it."""
        with self.engine.connect() as connection:
            if self.engine.dialect.name == "sqlite":
                connection.exec_driver_sql("BEGIN IMMEDIATE")
            else:
                connection.execute(
                    select(_RUNS.c.name).where(_RUNS.c.name == run).with_for_update()
                )
            yield connection
            connection.commit()

    def heartbeat(self, owner: Owner) -> None:
        """Refresh every claim of ``owner`` (so that other processes do not take them over)."""
        with self.engine.begin() as connection:
            connection.execute(
                update(_CLAIMS).where(_CLAIMS.c.owner == owner.id).values(heartbeat=time.time())
            )

    def release(self, owner: Owner) -> None:
        """Drop every claim of ``owner`` (its episodes not finished are free again)."""
        with self.engine.begin() as connection:
            connection.execute(delete(_CLAIMS).where(_CLAIMS.c.owner == owner.id))

    def add(self, run: str, record: dict[str, Any], owner: Owner | None = None) -> bool:
        """Store one finished episode (replacing a failed result of it) and drop its claim;
        False when it was already stored (by any process)."""
        try:
            self._insert(run, [record], owner)
        except IntegrityError:
            return False
        return True

    def add_many(
        self, run: str, records: Sequence[dict[str, Any]], owner: Owner | None = None
    ) -> list[bool]:
        """Store several finished episodes as :meth:`add` does, in one transaction (one commit
        instead of one per episode); whether each was new. When one of them was stored already
        (by any process), each is stored on its own instead."""
        if len(records) < 2:
            return [self.add(run, record, owner) for record in records]
        try:
            self._insert(run, records, owner)
        except IntegrityError:
            return [self.add(run, record, owner) for record in records]
        return [True] * len(records)

    def _insert(self, run: str, records: Sequence[dict[str, Any]], owner: Owner | None) -> None:
        now = _now()
        rows = [
            {k: r[k] for k in r if k in COLUMNS} | {"run": run, "finished_at": now} for r in records
        ]
        episodes = [{"run": run, "key": row["key"]} for row in rows]
        with self.engine.begin() as connection:
            # A failed result gives way to the new one; a stored success makes the insert fail.
            connection.execute(_DROP_FAILED, episodes)
            # One statement per set of columns (a failed record has no metrics).
            for same in _grouped_by_columns(rows):
                connection.execute(_INSERT_EPISODE, same)
            if owner is not None:
                connection.execute(_DROP_CLAIM, [{**e, "owner": owner.id} for e in episodes])

    def runs(self) -> list[str]:
        with Session(self.engine) as session:
            return list(session.scalars(select(RunRow.name).order_by(RunRow.name)))

    def records(self, runs: Iterable[str], *, with_trace: bool = False) -> list[dict[str, Any]]:
        """The stored episodes of ``runs`` as dicts (without the trace JSON unless asked)."""
        names = list(runs)
        columns = [c for c in COLUMNS if with_trace or c != "trace"]
        with Session(self.engine) as session:
            known = set(session.scalars(select(RunRow.name).where(RunRow.name.in_(names))))
            missing = [n for n in names if n not in known]
            if missing:
                raise StoreError(f"no run named {missing} in {self.where}; runs: {self.runs()}")
            rows = session.scalars(
                select(EpisodeRow).where(EpisodeRow.run.in_(names)).order_by(EpisodeRow.id)
            )
            return [{c: getattr(row, c) for c in columns} for row in rows]


def _grouped_by_columns(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The rows grouped by the columns they give (one INSERT each), in order of appearance."""
    groups: dict[frozenset[str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(frozenset(row), []).append(row)
    return list(groups.values())


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
