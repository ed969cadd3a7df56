"""One environment's episode database, and how episodes start and change it (any domain).

A domain describes its tables in a SQLAlchemy ``MetaData`` (``domains/network/schema.py``,
``domains/bss/schema.py``) whose every table is keyed by ``episode_id`` first.
The default is a private in-memory SQLite database per environment. Its schema is copied from a
template built once per process (SQLite's backup API), and an episode is one transaction: reset
rolls the previous episode back and loads the next, so no schema is built and no row deleted per
episode. Each change a tool makes runs in a savepoint, so a refused change leaves nothing behind;
a change the schema's constraints refuse becomes a ``rejected`` :class:`~telcoenv.errors.ToolError`
naming the system (the schema's ``info["system"]``, e.g. "the network"), which the toolbox
turns into an error observation.

With ``shared=True`` (the packaged domains) the environments of a process share one in-memory
database instead, each episode under its own row id: the schema, SQLite's page overhead and its
prepared statements are paid once per process, not per environment (an extra environment then
costs its rows and Python objects). A reset commits what the environments changed since the last
reset, then deletes the environment's previous episode and loads the next in a transaction that
stays open (SQLite would otherwise open one per statement); a lock serialises environments used
from several threads.

With ``url`` set (any SQLAlchemy URL, e.g. ``sqlite:///network.sqlite`` or a PostgreSQL URL) the
episodes are committed and kept, each under its own ``episode_id``, so the database can be
inspected while and after agents run.

Statements are SQLAlchemy Core constructs compiled once per dialect; execution goes straight to
the DBAPI cursor with the compiled SQL and bound parameters. SQLAlchemy's per-execution layer
costs 30-80 µs per statement against 5 µs here, which decides whether a reset fits in a
millisecond (see ``benchmarks/bench_core.py``). Tool arguments reach SQL only as bound
parameters.

An in-memory database opens SQLite directly: the schema's SQLite DDL and column lists
(:class:`SchemaPlan`) and the statements compiled for SQLite are kept in the user's cache
directory like the catalogue (:mod:`telcoenv.datafiles`), so a process that finds them there
starts without importing SQLAlchemy (about a third of the first ``make`` + ``reset``). A
statement missing from the cache is compiled by SQLAlchemy and added to it.
"""

from __future__ import annotations

import functools
import itertools
import operator
import re
import sqlite3
import threading
import uuid
import weakref
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext, suppress
from dataclasses import dataclass, field
from functools import cache, cached_property
from typing import TYPE_CHECKING, Any

from telcoenv.datafiles import cached_build, load_cached, store_cached
from telcoenv.errors import DatabaseError, ToolError

if TYPE_CHECKING:  # SQLAlchemy is imported where a statement is compiled or a URL opened
    from sqlalchemy import MetaData
    from sqlalchemy.engine import Dialect
    from sqlalchemy.sql import ClauseElement


@dataclass(frozen=True, slots=True)
class Prepared:
    """A statement compiled for one dialect: its SQL and the order of its named parameters
    for a positional paramstyle (None: the driver takes names)."""

    sql: str
    order: tuple[str, ...] | None
    _getter: Callable[[Mapping[str, Any]], Any] | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        getter = None
        if self.order is not None:
            getter = operator.itemgetter(*self.order) if self.order else (lambda _: ())
        object.__setattr__(self, "_getter", getter)

    def bind(self, params: Mapping[str, Any]) -> Sequence[Any] | Mapping[str, Any]:
        if self._getter is None:
            return params
        values = self._getter(params)
        return values if isinstance(values, tuple) else (values,)


@dataclass(frozen=True)
class SchemaPlan:
    """What an in-memory SQLite database needs of a schema, as plain data (cacheable)."""

    name: str
    system: str  # what a refused change's message calls the system ("the network")
    columns: dict[str, tuple[str, ...]]  # per table, in column order; parents before children
    primary_keys: dict[str, tuple[str, ...]]
    booleans: dict[str, frozenset[str]]  # the Boolean columns per table
    sqlite_ddl: tuple[str, ...]  # CREATE statements, as SQLAlchemy's create_all issues them

    @classmethod
    def of(cls, metadata: MetaData) -> SchemaPlan:
        from sqlalchemy.schema import CreateIndex, CreateTable

        dialect = _sqlite_dialect()
        tables = metadata.sorted_tables
        ddl: list[str] = []
        for table in tables:
            ddl.append(str(CreateTable(table).compile(dialect=dialect)))
            ddl.extend(str(CreateIndex(index).compile(dialect=dialect)) for index in table.indexes)
        # Plain str: SQLAlchemy's names are a str subclass that would import it when unpickled.
        return cls(
            name=str(metadata.info.get("name", id(metadata))),
            system=str(metadata.info.get("system", "the database")),
            columns={str(t.name): tuple(map(str, t.columns.keys())) for t in tables},
            primary_keys={str(t.name): tuple(str(c.name) for c in t.primary_key) for t in tables},
            booleans={
                str(t.name): frozenset(str(c.name) for c in t.columns if c.type.python_type is bool)
                for t in tables
            },
            sqlite_ddl=tuple(ddl),
        )


class Schema:
    """A domain's tables: the SQLAlchemy ``MetaData`` (built by ``build`` when first needed: to
    compile a statement or open a URL) and its :class:`SchemaPlan` (from the user's cache when
    ``cached``: the schema is built from packaged files alone)."""

    def __init__(self, name: str, build: Callable[[], MetaData], *, cached: bool = True) -> None:
        self.name, self._build, self.cached = name, build, cached

    @classmethod
    def of(cls, metadata: MetaData) -> Schema:
        """A schema of a ``MetaData`` at hand (a plugin's, a test's), its plan not cached."""
        return cls(str(metadata.info.get("name", id(metadata))), lambda: metadata, cached=False)

    @cached_property
    def metadata(self) -> MetaData:
        return self._build()

    @cached_property
    def plan(self) -> SchemaPlan:
        if not self.cached:
            return SchemaPlan.of(self.metadata)
        return cached_build(f"schema-{self.name}", lambda: SchemaPlan.of(self.metadata))


@dataclass(frozen=True, eq=False)  # identity hash: queries are constants, looked up per call
class Query:
    """``SELECT columns FROM table WHERE episode_id = ? AND <key> = ? ... ORDER BY order``.

    Parameters are passed by position: the episode id, then the keys' values. With ``count``
    the query selects ``count(DISTINCT count)`` instead of columns.
    """

    table: str
    columns: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()
    order: tuple[str, ...] = ()
    count: str | None = None

    @property
    def parameters(self) -> tuple[str, ...]:
        return ("episode_id", *self.keys)

    @property
    def key(self) -> str:
        """What the query is, as a cache key (equal queries share their compiled statement)."""
        return repr((self.table, self.columns, self.keys, self.order, self.count))

    def build(self, metadata: MetaData) -> ClauseElement:
        from sqlalchemy import bindparam, func, select

        t = metadata.tables[self.table]
        if self.count is not None:
            query = select(func.count(t.c[self.count].distinct()))
        else:
            query = select(*(t.c[c] for c in self.columns))
        for name in self.parameters:
            query = query.where(t.c[name] == bindparam(name))
        return query.order_by(*(t.c[c] for c in self.order))


def prepare(statement: ClauseElement, dialect: Dialect) -> Prepared:
    compiled = statement.compile(dialect=dialect)
    if not compiled.positional:
        return Prepared(compiled.string, None)
    order = tuple(compiled.positiontup or ())
    if statement.is_insert:  # insert_values passes the parameters row by row, column by column
        names = statement.table.columns.keys()  # type: ignore[attr-defined]
        rows = range(len(order) // len(names))
        assert order == tuple(f"{n}_{i}" for i in rows for n in names), order
    return Prepared(compiled.string, order)


def _multi_insert(metadata: MetaData, table: str, count: int) -> ClauseElement:
    """``INSERT INTO table VALUES`` with ``count`` rows of parameters named ``<column>_<row>``."""
    from sqlalchemy import bindparam, insert

    table_object = metadata.tables[table]
    names = table_object.columns.keys()
    return insert(table_object).values(
        [{name: bindparam(f"{name}_{i}") for name in names} for i in range(count)]
    )


# SQLite statements kept prepared per connection: multi-row inserts come in one variant per row
# count, and re-preparing a statement costs more than running it (the default keeps 128).
_STATEMENT_CACHE = 1024
_TEMPLATE_LOCK = threading.Lock()
_TEMPLATES: dict[tuple[str, ...], sqlite3.Connection] = {}  # per schema (its DDL)


def _copy_of_template(plan: SchemaPlan) -> sqlite3.Connection:
    """A new in-memory SQLite database with the schema, copied from a per-process template."""
    with _TEMPLATE_LOCK:
        template = _TEMPLATES.get(plan.sqlite_ddl)
        if template is None:
            template = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
            for statement in plan.sqlite_ddl:
                template.execute(statement)
            _TEMPLATES[plan.sqlite_ddl] = template
        connection = sqlite3.connect(
            ":memory:",
            check_same_thread=False,
            isolation_level=None,
            cached_statements=_STATEMENT_CACHE,
        )
        template.backup(connection)
    # Debian's SQLite is built with SECURE_DELETE: it zeroes the content of every deleted row
    # and freed page, which protects a file's deleted data from being read back. Memory holds
    # nothing to protect, and a reset deletes the previous episode's rows.
    connection.execute("PRAGMA secure_delete=OFF")
    return connection


# How to install a missing PostgreSQL driver: postgresql:// means psycopg (3) to SQLAlchemy 2.1.
_DRIVER_HINTS = {
    "psycopg": ' (pip install "telcoenv[postgres]")',
    "psycopg2": " (pip install psycopg2-binary, or use postgresql:// with telcoenv[postgres])",
}


_CREDENTIALS = re.compile(r"(://)[^/@\s]+@")


def without_credentials(text: str) -> str:
    """``text`` with the ``user:password@`` of every URL in it removed (messages, stored
    configurations)."""
    return _CREDENTIALS.sub(r"\1", text)


def driver_hint(exc: BaseException) -> str:
    """How to install the missing driver of a database URL (empty when telcoenv cannot tell)."""
    return _DRIVER_HINTS.get(exc.name or "", "") if isinstance(exc, ImportError) else ""


def share_sqlite_file(connection: sqlite3.Connection) -> None:
    """Set up a new connection to a SQLite file that several processes may use at once (the
    results store, an episode database kept at a URL)."""
    cursor = connection.cursor()
    # Two writers wait instead of failing (first: switching to WAL takes a lock too).
    cursor.execute("PRAGMA busy_timeout=30000")
    # WAL: readers and a writer at once, crash-safe. It is a property of the file: when it is
    # locked, the process holding it switches it.
    with suppress(sqlite3.OperationalError):
        cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _open_sqlite(connection: sqlite3.Connection, _: Any) -> None:
    connection.isolation_level = None  # transactions under our control (see _begin)
    share_sqlite_file(connection)


def _open_engine(metadata: MetaData, url: str) -> Any:
    from sqlalchemy import create_engine, event
    from sqlalchemy.exc import ArgumentError, SQLAlchemyError

    shown = without_credentials(url)
    try:
        engine = create_engine(url)
    except (ArgumentError, ImportError, ValueError) as exc:
        message = without_credentials(str(exc))
        raise DatabaseError(
            f"cannot use database URL {shown!r}: {message}{driver_hint(exc)}"
        ) from None
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _open_sqlite)
    attempts = 3  # elsewhere than SQLite and PostgreSQL, another process opening a new database
    while True:  # may create a table between the check and the CREATE: tried again, it is seen
        attempts -= 1
        try:
            _create_tables(engine, metadata, shown)
            return engine
        except SQLAlchemyError as exc:
            if not attempts:
                reason = getattr(exc, "orig", None) or exc  # the driver's words only
                raise DatabaseError(f"cannot open database {shown!r}: {reason}") from None


_SCHEMA_LOCK = zlib.crc32(b"telcoenv: creating tables")  # PostgreSQL's advisory lock key


def _create_tables(engine: Any, metadata: MetaData, shown: str) -> None:
    """Create the missing tables, one process at a time (SQLite and PostgreSQL run DDL in a
    transaction, which a lock keeps others out of), and check those already there."""
    with engine.connect() as connection:
        if engine.dialect.name == "sqlite":
            connection.exec_driver_sql("BEGIN IMMEDIATE")
        elif engine.dialect.name == "postgresql":
            connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_SCHEMA_LOCK})")
        metadata.create_all(connection)
        _check_columns(connection, metadata, shown)
        connection.commit()


def _check_columns(connection: Any, metadata: MetaData, shown: str) -> None:
    """Refuse a database whose table of one of our names lacks our columns: another schema's
    table (the other domain's ``tickets`` in a database both were given, an older telcoenv's),
    which ``create_all`` leaves as it is and the first insert would fail on, mid-episode."""
    from sqlalchemy import inspect

    inspector = inspect(connection)
    for table in metadata.sorted_tables:
        present = {column["name"] for column in inspector.get_columns(table.name)}
        missing = [column.name for column in table.columns if column.name not in present]
        if missing:
            system = metadata.info.get("system", "this domain")
            raise DatabaseError(
                f"cannot use database {shown!r}: its table {table.name} has no column(s) "
                f"{', '.join(missing)}: not a table of {system} but another domain's or an older "
                "telcoenv's of that name (give each domain a database of its own)"
            )


#: The most rows one INSERT statement carries (see ``EpisodeDatabase._insert``).
_CHUNK_ROWS = 64


class _SharedMemory:
    """The in-memory database that a process's shared environments use (one per schema)."""

    def __init__(self, plan: SchemaPlan) -> None:
        self.connection = _copy_of_template(plan)
        self.lock = threading.RLock()
        self.serial = itertools.count(1)
        # Children before parents.
        self.delete_order = tuple(reversed(plan.columns))
        # Row ids of environments dropped without close(): deleted at the next reset of any.
        self.abandoned: list[str] = []


_SHARED_LOCK = threading.Lock()
_SHARED: dict[tuple[str, ...], _SharedMemory] = {}  # per schema (its DDL)


def _shared_memory(plan: SchemaPlan) -> _SharedMemory:
    with _SHARED_LOCK:
        if plan.sqlite_ddl not in _SHARED:
            _SHARED[plan.sqlite_ddl] = _SharedMemory(plan)
        return _SHARED[plan.sqlite_ddl]


@cache
def _statement_caches(
    namespace: str, dialect: tuple[str, ...]
) -> tuple[dict[str, Prepared], dict[Query, Prepared], dict[tuple[str, int], str]]:
    """The compiled statements of one schema in one dialect: by key, by query, and the SQL of
    multi-row inserts by table and row count."""
    return {}, {}, {}


class EpisodeDatabase:
    """The database of one environment with the tables of ``schema`` (a :class:`Schema`, or a
    SQLAlchemy ``MetaData``): private and in memory, ``shared`` in memory with the process's
    other environments, or kept at ``url``. One environment uses it at a time."""

    def __init__(
        self, schema: Schema | MetaData, url: str | None = None, *, shared: bool = False
    ) -> None:
        self.schema = schema if isinstance(schema, Schema) else Schema.of(schema)
        self.url = url
        self.persistent = url is not None
        plan = self.schema.plan
        # Compiled statements are shared per dialect; the schema's name keeps two domains'
        # tables of the same name apart. Only a packaged schema's statements are kept in the
        # user's cache: a schema at hand may change without the package changing.
        self._namespace = plan.name if self.schema.cached else f"{_LOCAL}{plan.name}"
        self._shared = _shared_memory(plan) if shared and url is None else None
        self._engine: Any = None
        if self._shared is not None:
            self._dbapi: Any = self._shared.connection
            self._serial = next(self._shared.serial)
            self._row_id: list[str | None] = [None]  # this environment's rows now (a cell: the
            # finaliser must not hold the database itself)
            weakref.finalize(self, _abandon, self._shared, self._row_id)
        elif url is None:
            self._dbapi = _copy_of_template(plan)
        else:
            self._engine = _open_engine(self.schema.metadata, url)
            self._connection = self._engine.connect()
            self._dbapi = self._connection.connection.driver_connection
        self._cursor = self._dbapi.cursor()
        if self._engine is None:  # SQLite in memory, opened without SQLAlchemy
            self._dialect_names, paramstyle = ("sqlite", "pysqlite"), "qmark"
            self.integrity_error: type[Exception] = sqlite3.IntegrityError
        else:
            dialect = self._engine.dialect
            self._dialect_names, paramstyle = (dialect.name, dialect.driver), dialect.paramstyle
            #: What the driver raises when a constraint (a CHECK, a key) refuses a statement.
            self.integrity_error = dialect.loaded_dbapi.IntegrityError
        self._lock = self._shared.lock if self._shared is not None else nullcontext()
        self._sqlite = self._dialect_names[0] == "sqlite"
        # Statements compiled for this schema and dialect, shared by every database of them
        # (each environment kept its own copies: 20 KB of SQL text per care environment).
        # The queries are keyed by the query object, which the dict keeps alive.
        self._prepared, self._queries, self._multi_sql = _statement_caches(
            self._namespace, self._dialect_names
        )
        # With a positional paramstyle a multi-row insert repeats one compiled row group.
        self._row_group = paramstyle in ("qmark", "format") or None
        #: What a refused change's message calls the system the tables hold.
        self.system = plan.system
        self._open_episode = False
        self._changing = False  # inside change()
        self._undo: list[Callable[[], None]] = []  # what to call if that change is undone

    @property
    def metadata(self) -> MetaData:
        """The schema's SQLAlchemy ``MetaData`` (built, and SQLAlchemy imported, on first use)."""
        return self.schema.metadata

    def columns(self, table: str) -> tuple[str, ...]:
        """The columns of ``table``, in order (``episode_id`` first)."""
        return self.schema.plan.columns[table]

    def _sqlalchemy_dialect(self) -> Dialect:
        return self._engine.dialect if self._engine is not None else _sqlite_dialect()

    def row_id(self, episode_id: str) -> str | None:
        """The id to store an episode's rows under when ``episode_id`` alone could clash (a
        kept database may hold the same episode already; a shared one holds other
        environments' episodes), else None."""
        if self.persistent:
            return f"{episode_id}-{uuid.uuid4().hex[:12]}"
        if self._shared is not None:
            return f"{episode_id}~{self._serial}"
        return None

    # --- statements ---------------------------------------------------------------------------

    def statement(self, key: str, build: Callable[[], ClauseElement]) -> Prepared:
        """The statement ``key``, compiled for this database's dialect on first use."""
        prepared = self._prepared.get(key)
        if prepared is None:
            prepared = self._compiled(f"{self._namespace}:{key}", build)
            self._prepared[key] = prepared
        return prepared

    def _compiled(self, key: str, build: Callable[[], ClauseElement]) -> Prepared:
        return _prepared_for(self._dialect_names, key, build, self._sqlalchemy_dialect)

    def select(self, query: Query, values: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """The rows of ``query`` for ``values`` (the episode id, then the keys' values)."""
        prepared = self._queries.get(query)
        if prepared is None:
            prepared = self._queries[query] = self._prepare_query(query)
        if prepared._getter is None:  # a named paramstyle
            params: Any = dict(zip(query.parameters, values, strict=True))
        else:
            params = values
        with self._lock:  # psycopg2's execute returns None, not the cursor as sqlite3's does
            self._cursor.execute(prepared.sql, params)
            return self._cursor.fetchall()

    def _prepare_query(self, query: Query) -> Prepared:
        prepared = self._compiled(
            f"{self._namespace}:query:{query.key}", lambda: query.build(self.metadata)
        )
        # Positional: the values must come in this order (checked when it was compiled).
        assert prepared.order is None or prepared.order == query.parameters, query
        return prepared

    def fetch_all(
        self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()
    ) -> list[tuple[Any, ...]]:
        """The rows of a raw SQL query, run on this database's own connection, so inside the
        open episode (an in-memory episode is visible to no other connection).

        For inspection (tests, debugging): ``params`` are bound in the driver's paramstyle
        (``?`` placeholders for SQLite). Tools read through :class:`Query` and change rows
        through :meth:`update_column`, :meth:`insert` and :meth:`change`.
        """
        with self._lock:
            self._cursor.execute(sql, params)
            return self._cursor.fetchall()

    def execute(self, prepared: Prepared, params: Mapping[str, Any]) -> int:
        with self._lock:
            self._cursor.execute(prepared.sql, prepared.bind(params))
            return self._cursor.rowcount

    def update_column(
        self, table: str, column: str, value: Any, *, episode_id: str, key: str, key_value: Any
    ) -> int:
        """Set ``column`` to ``value`` on the episode's rows whose ``key`` is ``key_value``;
        the number of rows changed.

        One statement per column: a statement per combination of columns would be compiled
        anew for every combination an agent tries.
        """

        def build() -> ClauseElement:
            from sqlalchemy import bindparam, update

            t = self.metadata.tables[table]
            return (
                update(t)
                .where(t.c.episode_id == bindparam("episode_id"), t.c[key] == bindparam("key"))
                .values({column: bindparam("value")})
            )

        prepared = self.statement(f"update:{table}:{key}:{column}", build)
        return self.execute(prepared, {"episode_id": episode_id, "key": key_value, "value": value})

    def delete_row(self, table: str, *, episode_id: str, key: str, key_value: Any) -> int:
        """Delete the episode's rows whose ``key`` is ``key_value``; the number deleted."""

        def build() -> ClauseElement:
            from sqlalchemy import bindparam, delete

            t = self.metadata.tables[table]
            return delete(t).where(
                t.c.episode_id == bindparam("episode_id"), t.c[key] == bindparam("key")
            )

        prepared = self.statement(f"delete:{table}:{key}", build)
        return self.execute(prepared, {"episode_id": episode_id, "key": key_value})

    def insert(self, table: str, rows: Sequence[Mapping[str, Any]]) -> None:
        """Insert rows given as mappings of column names to values."""
        if rows:
            columns = self.columns(table)
            self.insert_values(table, [tuple(row[c] for c in columns) for row in rows])

    def insert_values(self, table: str, rows: Sequence[tuple[Any, ...]]) -> None:
        """Insert rows given as tuples in the table's column order (the fast path of a reset).

        One multi-row ``INSERT ... VALUES (...), (...)`` statement per call: on SQLite it cost
        about half of ``executemany`` for the same rows.
        """
        if not rows:
            return
        with self._lock:
            self._insert(table, rows)

    def _insert(self, table: str, rows: Sequence[tuple[Any, ...]]) -> None:
        # In chunks of powers of two up to 64 rows: a statement per row count would compile
        # (and the driver cache) one statement for every count a reset brings, 15 MB of
        # SQLite's memory after 200 resets; this way a table has at most 7.
        start = 0
        while start < len(rows):
            count = min(_CHUNK_ROWS, 1 << ((len(rows) - start).bit_length() - 1))
            self._insert_chunk(table, rows[start : start + count])
            start += count

    def _insert_chunk(self, table: str, rows: Sequence[tuple[Any, ...]]) -> None:
        count = len(rows)
        if self._row_group is not None:  # positional: repeat the compiled row group
            sql = self._multi_sql.get((table, count))
            if sql is None:
                head, group = self._single_row_sql(table)
                sql = self._multi_sql[(table, count)] = head + ", ".join([group] * count)
            self._cursor.execute(sql, list(itertools.chain.from_iterable(rows)))
            return
        # A named paramstyle: SQLAlchemy compiles the statement for this row count once.
        prepared = self.statement(
            f"insert:{table}:{count}", lambda: _multi_insert(self.metadata, table, count)
        )
        names = self.columns(table)
        self._cursor.execute(
            prepared.sql,
            {
                f"{name}_{i}": value
                for i, row in enumerate(rows)
                for name, value in zip(names, row, strict=True)
            },
        )

    def _single_row_sql(self, table: str) -> tuple[str, str]:
        """``INSERT INTO table (columns) VALUES`` and its ``(?, ?, ...)`` group, compiled by
        SQLAlchemy for this dialect."""
        prepared = self.statement(
            f"insert:{table}:1", lambda: _multi_insert(self.metadata, table, 1)
        )
        head, _, group = prepared.sql.rpartition(" VALUES ")
        assert group.startswith("(") and group.endswith(")"), prepared.sql
        return head + " VALUES ", group

    # --- transactions -------------------------------------------------------------------------

    def _begin(self) -> None:
        # Other drivers open a transaction implicitly. IMMEDIATE takes the write lock at once:
        # a transaction of a shared file that read first could otherwise fail to write when
        # another process wrote meanwhile (WAL's busy snapshot, which no timeout waits out).
        if self._sqlite:
            self._cursor.execute("BEGIN IMMEDIATE")

    def start_episode(
        self, load: Callable[[EpisodeDatabase], None], row_id: str | None = None
    ) -> None:
        """Discard the previous episode (in memory) and load the next with ``load(self)``; a
        shared database needs the id its rows are stored under (:meth:`row_id`)."""
        if self._shared is not None:
            self._start_shared(load, row_id)
            return
        if self._open_episode:
            self._dbapi.rollback()
            self._open_episode = False
        self._begin()
        try:
            load(self)
        except BaseException:
            self._dbapi.rollback()
            raise
        if self.persistent:
            self._dbapi.commit()
        else:
            self._open_episode = True

    def _start_shared(self, load: Callable[[EpisodeDatabase], None], row_id: str | None) -> None:
        if row_id is None:
            raise ValueError("a shared database keeps an episode under its row_id(): pass it")
        assert self._shared is not None
        with self._lock:
            gone, self._shared.abandoned[:] = [*self._shared.abandoned, self._row_id[0]], []
            # The transaction stays open between resets: SQLite would otherwise open one per
            # statement. Committing here bounds its journal to the changes since the last
            # reset of any environment, and leaves a failed load only its own work to undo.
            if self._dbapi.in_transaction:
                self._dbapi.commit()
            self._cursor.execute("BEGIN")
            try:
                for old in filter(None, gone):
                    self._delete_rows(old)
                load(self)
            except BaseException:
                self._dbapi.rollback()
                self._shared.abandoned.extend(filter(None, gone[:-1]))
                raise
            self._row_id[0] = row_id

    def _delete_rows(self, row_id: str) -> None:
        assert self._shared is not None
        for table in self._shared.delete_order:
            prepared = self.statement(
                f"delete:{table}", functools.partial(self.delete_statement, table)
            )
            self._cursor.execute(prepared.sql, prepared.bind({"episode_id": row_id}))

    def delete_statement(self, table: str) -> ClauseElement:
        """``DELETE FROM table WHERE episode_id = :episode_id``."""
        from sqlalchemy import bindparam, delete

        t = self.metadata.tables[table]
        return delete(t).where(t.c.episode_id == bindparam("episode_id"))

    @contextmanager
    def change(self) -> Iterator[None]:
        """All statements inside happen together or not at all (nested blocks join the
        outermost one). A change a constraint refuses is undone and raises a ``rejected``
        ToolError; an undone change also calls what :meth:`on_undo` registered."""
        if self._changing:
            yield
            return
        with self._lock:
            self._changing = True
            try:
                with self._transaction():
                    yield
            except BaseException as exc:
                for undo in reversed(self._undo):
                    undo()
                if isinstance(exc, self.integrity_error):
                    raise ToolError(
                        f"{self.system} refused the change: {exc} (nothing was changed)",
                        kind="rejected",
                    ) from None
                raise
            finally:
                self._changing, self._undo = False, []

    def on_undo(self, undo: Callable[[], None]) -> None:
        """Call ``undo`` if the change in progress is undone: for what a caller derives from
        the rows and keeps in Python (see ``NetworkState``), which must not outlive the rows.
        Outside a change there is nothing to undo."""
        if self._changing:
            self._undo.append(undo)

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """A kept database commits each change; an in-memory one (inside its episode, or
        in the open transaction when shared) runs it in a savepoint."""
        if self.persistent:
            self._begin()
        else:
            self._cursor.execute("SAVEPOINT tool_change")
        try:
            yield
        except BaseException:
            if self.persistent:
                self._dbapi.rollback()
            else:
                self._cursor.execute("ROLLBACK TO SAVEPOINT tool_change")
                self._cursor.execute("RELEASE SAVEPOINT tool_change")
            raise
        if self.persistent:
            self._dbapi.commit()
        else:
            self._cursor.execute("RELEASE SAVEPOINT tool_change")

    def close(self) -> None:
        if self._shared is not None:  # the process's other environments keep the database
            with self._lock:
                if self._row_id[0] is not None:
                    self._delete_rows(self._row_id[0])  # in the open transaction, if any
                    self._row_id[0] = None
            return
        if self._open_episode:
            self._dbapi.rollback()
            self._open_episode = False
        if self._engine is None:
            self._dbapi.close()
            return
        self._connection.close()
        self._engine.dispose()


def _abandon(shared: _SharedMemory, row_id: list[str | None]) -> None:
    """An environment dropped without close(): its rows go at the next reset of another."""
    if row_id[0] is not None:
        shared.abandoned.append(row_id[0])


_PREPARED_LOCK = threading.Lock()
_PREPARED: dict[tuple[str, str, str], Prepared] = {}
_SQLITE = ("sqlite", "pysqlite")
_SQLITE_CACHE = "sqlite-statements"  # the statements compiled for SQLite, in the user's cache
_LOCAL = "local:"  # the namespace of schemas not from the package: never kept in the cache
_sqlite_loaded = False


def _prepared_for(
    names: tuple[str, str],
    key: str,
    build: Callable[[], ClauseElement],
    dialect: Callable[[], Dialect],
) -> Prepared:
    """Compiled statements are shared by every database of the same dialect (``names``: its
    name and driver) in the process; SQLite's are also kept in the user's cache."""
    cache_key = (*names, key)
    prepared = _PREPARED.get(cache_key)
    if prepared is not None:
        return prepared
    with _PREPARED_LOCK:
        if names == _SQLITE:
            _load_sqlite_statements()
        prepared = _PREPARED.get(cache_key)
        if prepared is None:
            prepared = _PREPARED[cache_key] = prepare(build(), dialect())
            if names == _SQLITE and not key.startswith(_LOCAL):
                kept = {
                    k[2]: (p.sql, p.order)
                    for k, p in _PREPARED.items()
                    if k[:2] == _SQLITE and not k[2].startswith(_LOCAL)
                }
                store_cached(_SQLITE_CACHE, kept)
    return prepared


def _load_sqlite_statements() -> None:
    global _sqlite_loaded
    if not _sqlite_loaded:
        _sqlite_loaded = True
        stored = load_cached(_SQLITE_CACHE)
        if isinstance(stored, dict):
            for key, (sql, order) in stored.items():
                _PREPARED.setdefault((*_SQLITE, key), Prepared(sql, order))


@functools.cache
def _sqlite_dialect() -> Dialect:
    """The dialect SQLAlchemy uses for ``sqlite://``, initialised as on a first connection."""
    from sqlalchemy import create_engine

    engine = create_engine("sqlite://")
    with engine.connect():
        pass
    return engine.dialect
