"""In-memory databases without SQLAlchemy: the schema's SQLite DDL and columns and the statements
compiled for SQLite come from the user's cache, so a warm process never imports SQLAlchemy; what
the cache holds is what SQLAlchemy would build, and a broken or foreign cache is never used."""

from __future__ import annotations

import os
import pickle
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import MetaData, create_engine
from sqlalchemy.pool import StaticPool

from telcoenv import datafiles
from telcoenv.database import Schema, SchemaPlan
from telcoenv.domains.bss.schema import bss_metadata, bss_schema
from telcoenv.domains.network.schema import network_metadata, network_schema

# Plays an oracle episode of each domain and says whether SQLAlchemy was imported.
_EPISODES = """
import sys, telcoenv
from telcoenv.agents import OracleAgent, run_episode
for name in ("beam_misalignment", "bill_shock", "contact_update"):
    env = telcoenv.make(name, embedder=None, privileged=True)
    _, info = run_episode(env, OracleAgent(), seed=5)
    assert info["verification"]["resolved"], name
    env.close()
print("sqlalchemy" in sys.modules)
"""


def _run(code: str, cache: Path, **extra: str) -> str:
    env = {**os.environ, "TELCOENV_CACHE_DIR": str(cache)}
    env.pop("TELCOENV_NO_CACHE", None)
    env.update(extra)
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.split()[-1]


def _statements(cache: Path) -> dict[str, tuple[str, tuple[str, ...] | None]]:
    (path,) = cache.glob("sqlite-statements.*.pickle")
    return pickle.loads(path.read_bytes())


def test_a_warm_process_plays_both_domains_without_importing_sqlalchemy(tmp_path: Path) -> None:
    assert _run(_EPISODES, tmp_path) == "True"  # the first process compiles and keeps
    assert _run(_EPISODES, tmp_path) == "False"
    kept = _statements(tmp_path)
    assert any(key.startswith("network:") for key in kept)
    assert any(key.startswith("bss:") for key in kept)


# The command line's lookups, which open no results store (``--db`` names its default without
# importing the store): each one says whether SQLAlchemy was imported.
_LOOKUPS = """
import contextlib, io, sys
from telcoenv.cli import main
for argv in (["list"], ["show", "beam_misalignment"], ["evaluate", "--help"]):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        main(argv)
print("sqlalchemy" in sys.modules)
"""


def test_the_command_lines_lookups_do_not_import_sqlalchemy(tmp_path: Path) -> None:
    _run(_EPISODES, tmp_path)  # a warm cache
    assert _run(_LOOKUPS, tmp_path) == "False"


def test_a_broken_statement_cache_is_compiled_again(tmp_path: Path) -> None:
    _run(_EPISODES, tmp_path)
    (path,) = tmp_path.glob("sqlite-statements.*.pickle")
    path.write_bytes(b"not a pickle")
    assert _run(_EPISODES, tmp_path) == "True"  # SQLAlchemy compiled them again
    assert _statements(tmp_path)  # and kept them


def test_no_cache_keeps_nothing(tmp_path: Path) -> None:
    assert _run(_EPISODES, tmp_path, TELCOENV_NO_CACHE="1") == "True"
    assert not list(tmp_path.glob("*.pickle"))


@pytest.mark.parametrize(
    ("schema", "metadata"), [(network_schema, network_metadata), (bss_schema, bss_metadata)]
)
def test_the_plan_is_what_sqlalchemy_builds(schema, metadata) -> None:
    """The cached DDL gives the database SQLAlchemy's create_all gives; columns, keys and
    Boolean columns are the MetaData's, as plain strings."""
    plan = schema().plan
    assert plan == SchemaPlan.of(metadata())
    built = sqlite3.connect(":memory:")
    metadata().create_all(create_engine("sqlite://", creator=lambda: built, poolclass=StaticPool))
    from_plan = sqlite3.connect(":memory:")
    for statement in plan.sqlite_ddl:
        from_plan.execute(statement)
    master = "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name"
    assert from_plan.execute(master).fetchall() == built.execute(master).fetchall()
    for table in metadata().sorted_tables:
        assert plan.columns[table.name] == tuple(table.columns.keys())
        assert plan.primary_keys[table.name] == tuple(c.name for c in table.primary_key)
    assert list(plan.columns) == [t.name for t in metadata().sorted_tables]
    assert "tilt_deg" not in plan.booleans.get("cells", set())
    assert all(type(name) is str for columns in plan.columns.values() for name in columns)


def test_a_schema_builds_its_metadata_only_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TELCOENV_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TELCOENV_NO_CACHE", raising=False)
    built: list[int] = []

    def build() -> MetaData:
        built.append(1)
        return network_metadata()

    assert Schema("network", build).plan == network_schema().plan
    assert built == [1]  # nothing cached yet: the plan was built from the MetaData
    schema = Schema("network", build)  # as in a new process
    assert schema.plan == network_schema().plan and built == [1]  # from the cache
    assert schema.metadata is network_metadata() and built == [1, 1]
    assert datafiles.load_cached("schema-network") == schema.plan
