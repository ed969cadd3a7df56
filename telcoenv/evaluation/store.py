"""The results database: one row per finished episode, with its metrics and full trace.

SQLAlchemy, so any URL works (PostgreSQL for a shared database); the embedded default is a
SQLite file. Each episode is committed on its own, so a run killed at any moment keeps every
episode it finished. ``(run, key)`` is unique: an episode is stored once, also when two
processes evaluate the same run. A database written by an earlier telcoenv gets the columns
added since (``domain``, ``resolved``, ``args``, ``answer``) when it is opened; its rows stay.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Float,
    Integer,
    String,
    Text,
    UniqueConstraint,
    create_engine,
    event,
    inspect,
    select,
    text,
)
from sqlalchemy.engine import Engine
from sqlalchemy.exc import ArgumentError, IntegrityError, OperationalError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from telcoenv.errors import TelcoEnvError

DEFAULT_DB = "sqlite:///telcoenv-results.sqlite"


class StoreError(TelcoEnvError):
    """The results database cannot be opened or used."""


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
    predicted_chain: Mapped[list[str]] = mapped_column(JSON)
    gold_chain: Mapped[list[str]] = mapped_column(JSON)
    steps: Mapped[int] = mapped_column(Integer)
    duration_s: Mapped[float] = mapped_column(Float)
    trace: Mapped[str | None] = mapped_column(Text, nullable=True)  # EpisodeTrace JSON
    agent_usage: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    finished_at: Mapped[str] = mapped_column(String(40))


COLUMNS = [c.name for c in EpisodeRow.__table__.columns if c.name != "id"]
# Columns added after the first release: an older database gets them (nullable) when opened.
ADDED_COLUMNS = ("domain", "resolved", "args", "answer")


def _add_missing_columns(engine: Engine) -> None:
    present = {c["name"] for c in inspect(engine).get_columns(EpisodeRow.__tablename__)}
    table = EpisodeRow.__table__
    with engine.begin() as connection:
        for name in ADDED_COLUMNS:
            if name not in present:
                column = table.c[name]
                kind = column.type.compile(dialect=engine.dialect)
                connection.execute(text(f"ALTER TABLE {table.name} ADD COLUMN {name} {kind}"))


def _sqlite_pragmas(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(connection: Any, _: Any) -> None:
        cursor = connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")  # readers and a writer at once; crash-safe
        cursor.execute("PRAGMA busy_timeout=30000")  # two writers wait instead of failing
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()


class ResultStore:
    """Open (and create) the results database at ``url``."""

    def __init__(self, url: str = DEFAULT_DB) -> None:
        try:
            self.engine = create_engine(url)
        except (ArgumentError, ValueError) as exc:
            raise StoreError(f"malformed database URL {url!r}: {exc}") from None
        except ImportError as exc:
            raise StoreError(f"the database driver for {url!r} is not installed: {exc}") from None
        if self.engine.dialect.name == "sqlite":
            _sqlite_pragmas(self.engine)
        try:
            Base.metadata.create_all(self.engine)
            _add_missing_columns(self.engine)
        except OperationalError as exc:
            raise StoreError(f"cannot open the database {url!r}: {exc.orig}") from None
        self.url = url

    def ensure_run(self, name: str, agent: str, config: dict[str, Any]) -> None:
        """Record a run once; re-running the same run name resumes it."""
        with Session(self.engine) as session:
            if session.get(RunRow, name) is None:
                session.add(RunRow(name=name, agent=agent, config=config, created_at=_now()))
                try:
                    session.commit()
                except IntegrityError:  # another process created it first
                    session.rollback()

    def done_keys(self, run: str) -> set[str]:
        with Session(self.engine) as session:
            return set(session.scalars(select(EpisodeRow.key).where(EpisodeRow.run == run)))

    def add(self, run: str, record: dict[str, Any]) -> bool:
        """Store one finished episode; False when it was already stored (by any process)."""
        row = EpisodeRow(
            run=run, finished_at=_now(), **{k: record[k] for k in record if k in COLUMNS}
        )
        with Session(self.engine) as session:
            session.add(row)
            try:
                session.commit()
            except IntegrityError:
                session.rollback()
                return False
        return True

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
                raise StoreError(f"no run named {missing} in {self.url}; runs: {self.runs()}")
            rows = session.scalars(
                select(EpisodeRow).where(EpisodeRow.run.in_(names)).order_by(EpisodeRow.id)
            )
            return [{c: getattr(row, c) for c in columns} for row in rows]


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
