"""The episode database: fast private episodes, kept episodes, constraints and hostile input
(on the network domain), and the core's column update and refused changes (on a plain table)."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import textwrap

import pytest
from sqlalchemy import CheckConstraint, Column, Float, MetaData, String, Table, create_engine, text
from sqlalchemy.engine import make_url

from telcoenv.agents import OracleAgent, run_episode
from telcoenv.database import DatabaseError, EpisodeDatabase, Query
from telcoenv.domains.network.loading import network_catalog
from telcoenv.domains.network.schema import network_metadata
from telcoenv.env import TelcoEnv
from telcoenv.errors import StoreError, ToolError
from telcoenv.evaluation.store import ResultStore
from tests.conftest import REPO_ROOT, call_tool, gold_actions, make_env, play
from tests.postgres import new_database

HOSTILE = [
    "x' OR '1'='1",
    'Robert"); DROP TABLE cells;--',
    "; DELETE FROM change_log WHERE 1=1; --",
    "NR-URB-MACRO-1' UNION SELECT * FROM tickets --",
]


def _rows_id(env: TelcoEnv) -> str:
    """The id the episode's rows are stored under (the environments of a process share one
    in-memory database)."""
    return env.episode.row_id or env.episode.episode_id


def _counts(env: TelcoEnv) -> dict[str, int]:
    return {
        table: env.database.fetch_all(
            f"SELECT count(*) FROM {table} WHERE episode_id = ?", (_rows_id(env),)
        )[0][0]
        for table in network_metadata().tables
    }


def test_an_episode_lives_in_the_database_and_the_next_reset_discards_it():
    env = make_env("pci_collision")
    env.reset(seed=0)
    state = env.episode.setup.state
    counts = _counts(env)
    assert counts["cells"] == len(state.cell_ids) and counts["sites"] == len(state.cell_ids)
    assert counts["config_baselines"] == len(state.cell_ids) and counts["slices"] == 2
    assert counts["kpi_samples"] >= 20 and counts["neighbour_relations"] >= 2 * (
        counts["cells"] - 1
    )
    # What the tools report is what the database holds.
    cell = call_tool(env, "oss_query", cell_id=state.serving_id, window="1h")["cell"]
    [(pci,)] = env.database.fetch_all(
        "SELECT pci FROM cells WHERE cell_id = ? AND episode_id = ?",
        (state.serving_id, _rows_id(env)),
    )
    assert cell["pci"] == pci
    first_cells, first_id = set(state.cell_ids), _rows_id(env)
    env.reset(seed=1)
    assert env.database.fetch_all(
        "SELECT count(*) FROM cells WHERE episode_id = ?", (first_id,)
    ) == [(0,)]
    ids = {
        r[0]
        for r in env.database.fetch_all(
            "SELECT cell_id FROM cells WHERE episode_id = ?", (_rows_id(env),)
        )
    }
    assert ids == set(env.episode.setup.state.cell_ids) and not ids & (first_cells - ids)
    assert _counts(env)["change_log"] == 0


def test_write_tools_change_rows_and_append_to_the_change_log():
    env = make_env("config_mismatch")
    _, info = env.reset(seed=2)
    state = env.episode.setup.state
    play(env, gold_actions(info))
    log = state.change_log()
    assert log and {entry["tool"] for entry in log} == {"push_config"}
    assert all(entry["object_id"] == state.serving_id for entry in log)
    baseline = state.baseline_of(state.serving_id)
    assert state.cell(state.serving_id).config == baseline
    assert [entry["parameter"] for entry in log] == sorted(entry["parameter"] for entry in log)
    assert len({entry["change_id"] for entry in log}) == 1  # one change, several parameters


@pytest.mark.parametrize(
    ("name", "arguments", "kind", "named"),
    [
        ("optimize_cell", {"cell_id": "{cell}", "changes": {"tilt_deg": 40}}, "invalid", "40"),
        ("optimize_cell", {"cell_id": "{cell}", "changes": {"foo_db": 1}}, "invalid", "foo_db"),
        (
            "optimize_cell",
            {"cell_id": "NR-NOPE-1", "changes": {"tilt_deg": 4}},
            "not_found",
            "NOPE",
        ),
        (
            "optimize_slice",
            {"slice_id": "SL-X", "policy": {"priority_level": 2}},
            "not_found",
            "SL-X",
        ),
        (
            "optimize_slice",
            {"slice_id": "SL-EMBB-01", "policy": {"priority_level": 0}},
            "invalid",
            "0",
        ),
        ("push_config", {"config_id": "CFG-NOPE"}, "not_found", "CFG-NOPE"),
    ],
)
def test_refused_changes_name_the_problem_and_change_nothing(name, arguments, kind, named):
    env = make_env("beam_misalignment")
    env.reset(seed=3)
    state = env.episode.setup.state
    before, counts = state.configuration(), _counts(env)
    filled = json.loads(json.dumps(arguments).replace("{cell}", state.serving_id))
    output = call_tool(env, name, **filled)
    assert output["error"]["type"] == {"invalid": "invalid_arguments"}.get(kind, kind)
    assert named in output["error"]["message"], output
    assert state.configuration() == before and _counts(env) == counts


def test_the_schema_refuses_what_the_tool_spec_forbids_and_rolls_back_all_of_it():
    env = make_env("degraded_backhaul")
    env.reset(seed=0)
    state = env.episode.setup.state
    before, counts = state.configuration(), _counts(env)
    # Bypass the JSON Schema check: the database's CHECK constraints are the backstop. The first
    # target is valid, the second is not, and neither may stay.
    targets = [
        ("cell", state.serving_id, [("tilt_deg", 6, 7.0)]),
        ("backhaul", state.link_id, [("bh_rt_queue_weight_pct", 40, 250.0)]),
    ]
    with pytest.raises(ToolError, match="refused") as error:
        state.apply("optimize_cell", 1, "test", targets)
    assert "bh_rt_queue_weight_pct" in str(error.value)
    assert state.configuration() == before and _counts(env) == counts
    with pytest.raises(ToolError, match="no parameter"):
        state.apply(
            "optimize_cell", 1, "test", [("cell", state.serving_id, [("episode_id", 0, 1)])]
        )


@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_arguments_are_bound_kept_verbatim_and_change_nothing_else(hostile):
    env = make_env("beam_misalignment")
    env.reset(seed=4)
    state = env.episode.setup.state
    before, counts = state.configuration(), _counts(env)
    for name, arguments in (
        ("oss_query", {"cell_id": hostile, "window": "1h"}),
        ("push_config", {"config_id": hostile}),
        ("optimize_slice", {"slice_id": hostile, "policy": {"priority_level": 2}}),
        ("create_ticket", {"summary": "x", "severity": "minor", "cell_id": hostile}),
    ):
        output = call_tool(env, name, **arguments)
        assert (
            output["error"]["type"] == "not_found" and repr(hostile) in output["error"]["message"]
        )
    assert state.configuration() == before and _counts(env) == counts
    call_tool(env, "create_ticket", summary=hostile, severity="minor")
    change = call_tool(
        env,
        "optimize_cell",
        cell_id=state.serving_id,
        changes={"beam_azimuth_offset_deg": 0},
        reason=hostile,
    )
    assert change["status"] == "applied"
    assert state.tickets()[0]["summary"] == hostile
    assert state.change_log()[0]["reason"] == hostile
    after = _counts(env)
    assert after["tickets"] == 1 and after["cells"] == counts["cells"]
    assert [d[0] for d in state.diff()] == [(f"cell:{state.serving_id}", "beam_azimuth_offset_deg")]


def test_kept_episodes_in_a_file_database(tmp_path):
    url = f"sqlite:///{tmp_path / 'network.sqlite'}"
    env = make_env("load_balancing_needed", database_url=url)
    ids = []
    for seed in (0, 0, 1):  # the same seed twice: two episodes, two ids
        _, info = env.reset(seed=seed)
        ids.append(info["database_episode_id"])
        play(env, gold_actions(info))
    env.close()
    assert len(set(ids)) == 3 and ids[-1].startswith(info["episode_id"] + "-")
    engine = create_engine(url)
    with engine.connect() as connection:
        episodes = {r[0] for r in connection.execute(text("SELECT DISTINCT episode_id FROM cells"))}
        assert episodes == set(ids)
        changes = connection.execute(
            text("SELECT episode_id, parameter, new_value FROM change_log ORDER BY episode_id")
        ).all()
        assert {row[0] for row in changes} == set(ids)
        assert all(row[1] == "mlb_threshold_pct" and json.loads(row[2]) == 70 for row in changes)
    engine.dispose()


@pytest.mark.slow
def test_a_kept_database_keeps_what_was_committed_when_the_process_is_killed(tmp_path):
    url = f"sqlite:///{tmp_path / 'network.sqlite'}"
    script = textwrap.dedent(
        f"""
        import os, signal
        from telcoenv.env import TelcoEnv
        env = TelcoEnv("beam_misalignment", privileged=True, embedder=None, database_url={url!r})
        _, info = env.reset(seed=7)
        cell = env.episode.setup.state.serving_id
        env.step({{"name": "optimize_cell", "arguments": {{"cell_id": cell,
                  "changes": {{"beam_azimuth_offset_deg": 0}}, "reason": "before the crash"}}}})
        print(info["database_episode_id"], flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == -9, done.stderr
    episode = done.stdout.strip()
    engine = create_engine(url)
    with engine.connect() as connection:
        reason = connection.execute(
            text("SELECT reason FROM change_log WHERE episode_id = :e"), {"e": episode}
        ).scalar_one()
        offset = connection.execute(
            text("SELECT beam_azimuth_offset_deg FROM cells WHERE episode_id = :e AND serving"),
            {"e": episode},
        ).scalar_one()
    engine.dispose()
    assert reason == "before the crash" and offset == 0


def test_a_bad_database_url_fails_at_construction_and_names_it():
    with pytest.raises(DatabaseError, match="nosuchdialect"):
        TelcoEnv("beam_misalignment", embedder=None, database_url="nosuchdialect://x")


def test_a_postgresql_url_without_its_driver_says_which_extra_installs_it(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "psycopg2", None)  # importing it fails as if not installed
    monkeypatch.setitem(sys.modules, "psycopg", None)
    url = "postgresql://tester@/telco"  # psycopg (3), SQLAlchemy 2.1's default
    extra = r'\(pip install "telcoenv\[postgres\]"\)'
    with pytest.raises(DatabaseError, match=rf"cannot use database URL .*psycopg.* {extra}"):
        TelcoEnv("beam_misalignment", embedder=None, database_url=url)
    with pytest.raises(StoreError, match=rf"driver .* is not installed: .*psycopg.* {extra}"):
        ResultStore(url)
    with pytest.raises(DatabaseError, match=r"pip install psycopg2-binary"):
        TelcoEnv("beam_misalignment", embedder=None, database_url="postgresql+psycopg2://t@/x")


def test_an_unreachable_database_is_named_without_its_password(tmp_path):
    pytest.importorskip("psycopg")
    url = f"postgresql://tester:s3cret@/telco?host={tmp_path / 'nowhere'}&port=1"
    with pytest.raises(DatabaseError) as refused:
        TelcoEnv("beam_misalignment", embedder=None, database_url=url)
    message = str(refused.value)
    assert "cannot open database 'postgresql:///telco?host=" in message
    assert "s3cret" not in message and "tester" not in message
    assert "nowhere" in message and "sqlalche.me" not in message  # the driver's words only
    with pytest.raises(DatabaseError) as malformed:
        TelcoEnv("beam_misalignment", embedder=None, database_url="nosuch://u:s3cret@h/x")
    assert "s3cret" not in str(malformed.value)


def test_a_database_holding_the_other_domains_tickets_is_refused_before_any_episode(tmp_path):
    url = f"sqlite:///{tmp_path / 'both.sqlite'}"
    make_env("beam_misalignment", database_url=url).close()  # the network's tickets table
    with pytest.raises(DatabaseError, match=r"its table tickets has no column\(s\) .*of its own"):
        make_env("bill_shock", domain="bss", database_url=url)


SHARING = """
import sys, telcoenv
from telcoenv.agents import OracleAgent, run_episode
env = telcoenv.make(sys.argv[1], database_url=sys.argv[2], embedder=None, privileged=True)
print(sum(bool(run_episode(env, OracleAgent(), seed=s)[1]["resolved"]) for s in range(8)))
"""


@pytest.mark.slow  # subprocesses
@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
@pytest.mark.parametrize(
    ("name", "table"), [("troubleshooting", "cells"), ("customer_care", "lines")]
)
def test_processes_sharing_a_new_database_create_it_together_and_keep_every_episode(
    request, tmp_path, database, name, table
):
    """Three processes open one new database at once: one creates the tables while the others
    wait (they failed with "table ... already exists"), then all write episodes side by side
    (SQLite: a busy timeout, WAL and write transactions that take their lock at once)."""
    if database == "sqlite":
        url = f"sqlite:///{tmp_path / 'shared.sqlite'}"
    else:
        url = new_database(request.getfixturevalue("postgres_url"))
    command = [sys.executable, "-c", SHARING, name, url]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    processes = [subprocess.Popen(command, cwd=REPO_ROOT, **pipes) for _ in range(3)]
    results = [p.communicate(timeout=300) for p in processes]
    assert [p.returncode for p in processes] == [0, 0, 0], [err[-1500:] for _, err in results]
    assert [out.split() for out, _ in results] == [["8"]] * 3  # every episode resolved
    engine = create_engine(url)
    with engine.connect() as connection:
        kept = connection.execute(text(f"SELECT count(DISTINCT episode_id) FROM {table}"))
        assert kept.scalar_one() == 24
    engine.dispose()


def test_close_releases_the_database_and_a_later_reset_opens_a_new_one():
    env = TelcoEnv("beam_misalignment", embedder=None)
    env.reset(seed=0)
    env.close()
    assert env.database is None
    observation, _ = env.reset(seed=0)
    assert observation


def test_every_changeable_parameter_has_a_typed_column_from_its_spec():
    changes = network_catalog().tools["optimize_cell"].parameters["properties"]["changes"]
    tables = network_metadata().tables
    columns = {**tables["cells"].c, **tables["transport_links"].c}
    for name, schema in changes["properties"].items():
        if name == "neighbour_cio_db":  # a map of the cell's relations, each a relation's row
            columns[name] = tables["neighbour_relations"].c["cio_db"]
            schema = schema["additionalProperties"]
        assert name in columns, name
        expected = {"number": float, "integer": int, "string": str, "boolean": bool}[schema["type"]]
        assert columns[name].type.python_type is expected, name


def test_the_oracle_remeasures_after_its_fix_and_the_repeat_is_not_in_the_chain():
    env = make_env("bler_anomaly")
    _, info = run_episode(env, OracleAgent(), seed=3)
    actions = [a for a in info["trace"].actions if a.kind == "tool_call"]
    # the symptom's series, re-pulled: its points after the change show the fix
    assert actions[-1].remeasure and actions[-1].tool == "kpi_timeseries"
    assert actions[-1].arguments == actions[1].arguments
    assert info["predicted_chain"] == info["trace"].gold_tools
    assert info["metrics"]["sas"] == 1.0 and info["resolved"]
    series = json.loads(actions[-1].observation)["series"]["BLER"]
    assert series["mean_after"] < series["mean_before"] - 5


def test_a_repeated_read_before_any_change_counts_in_the_chain():
    env = make_env("pingpong_handovers")
    _, info = env.reset(seed=3)
    first = gold_actions(info)[0]
    env.step(first)
    *_, info = env.step(first)
    assert not env.trace.actions[-1].remeasure
    assert env.trace.predicted_chain == [first["name"], first["name"]]


@pytest.mark.parametrize("driver", ["psycopg", "psycopg2"])
def test_a_postgresql_database_keeps_episodes_and_refuses_like_sqlite(postgres_url, driver):
    pytest.importorskip(driver)  # psycopg2: from the dev extra
    server = make_url(postgres_url).set(drivername=f"postgresql+{driver}").render_as_string(False)
    # Both domains: psycopg2's execute returns None where sqlite3's returns the cursor.
    played = [
        ("pci_collision", "network"),
        ("config_mismatch", "network"),
        ("slice_admission_failure", "network"),
        ("bill_shock", "bss"),
    ]
    databases = {"network": new_database(server), "bss": new_database(server)}  # both: tickets
    url = databases["network"]
    for intent, domain in played:
        env = make_env(intent, domain=domain, database_url=databases[domain])
        _, info = run_episode(env, OracleAgent(), seed=3)
        assert info["resolved"], (intent, info["verification"])
        env.close()
    env = make_env("degraded_backhaul", database_url=url)
    _, info = env.reset(seed=0)
    state = env.episode.setup.state
    before = state.configuration()
    assert (
        call_tool(env, "oss_query", cell_id=HOSTILE[0], window="1h")["error"]["type"] == "not_found"
    )
    targets = [
        ("cell", state.serving_id, [("tilt_deg", 6, 7.0)]),
        ("backhaul", state.link_id, [("bh_rt_queue_weight_pct", 40, 250.0)]),
    ]
    with pytest.raises(ToolError, match="refused"):
        state.apply("optimize_cell", 1, "test", targets)
    assert state.configuration() == before
    engine = create_engine(url)
    with engine.connect() as connection:
        stored = connection.execute(
            text("SELECT count(*) FROM cells WHERE episode_id = :e"),
            {"e": info["database_episode_id"]},
        ).scalar_one()
    engine.dispose()
    assert stored == len(state.cell_ids)


def _ledger(name: str = "test-ledger") -> EpisodeDatabase:
    """A one-table database of no domain: balances that must not go negative."""
    metadata = MetaData(info={"name": name, "system": "the ledger"})
    Table(
        "accounts",
        metadata,
        Column("episode_id", String(10), primary_key=True),
        Column("account_id", String(10), primary_key=True),
        Column("balance", Float, CheckConstraint("balance >= 0"), nullable=False),
    )
    db = EpisodeDatabase(metadata)
    db.start_episode(lambda d: d.insert_values("accounts", [("E1", "A1", 10.0), ("E1", "A2", 5.0)]))
    return db


def _set_balance(db: EpisodeDatabase, account: str, balance: float) -> int:
    return db.update_column(
        "accounts", "balance", balance, episode_id="E1", key="account_id", key_value=account
    )


def test_update_column_sets_one_column_of_the_episodes_row_and_counts_the_rows():
    db = _ledger()
    assert _set_balance(db, "A1", 7.5) == 1
    assert _set_balance(db, "NOPE", 1.0) == 0
    balances = Query("accounts", ("account_id", "balance"), order=("account_id",))
    assert db.select(balances, ("E1",)) == [("A1", 7.5), ("A2", 5.0)]


def test_a_change_the_schema_refuses_is_a_rejected_tool_error_and_undoes_all_of_it():
    db = _ledger()
    with pytest.raises(ToolError) as refused, db.change():
        _set_balance(db, "A2", 1.0)
        with db.change():  # a nested change joins the outer one
            _set_balance(db, "A1", -1.0)
    assert refused.value.kind == "rejected"
    message = str(refused.value)
    assert message.startswith("the ledger refused the change: ")
    assert message.endswith(" (nothing was changed)")
    balances = Query("accounts", ("account_id", "balance"), order=("account_id",))
    assert db.select(balances, ("E1",)) == [("A1", 10.0), ("A2", 5.0)]
    with db.change():  # the database still takes changes
        _set_balance(db, "A2", 0.0)
    assert db.select(balances, ("E1",))[1] == ("A2", 0.0)


def test_a_schema_at_hand_is_never_kept_in_the_cache(tmp_path, monkeypatch) -> None:
    """A MetaData passed directly (a plugin's, a test's) may change without the package
    changing: its statements stay in the process, even under a packaged schema's name."""
    monkeypatch.setenv("TELCOENV_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TELCOENV_NO_CACHE", raising=False)
    db = _ledger(name="network")
    assert not db.schema.cached
    assert _set_balance(db, "A1", 7.5) == 1
    db.close()
    for kept in tmp_path.glob("sqlite-statements.*.pickle"):  # other statements may be kept
        assert not any("accounts" in key for key in pickle.loads(kept.read_bytes()))


@pytest.mark.parametrize("count", [1, 2, 3, 63, 64, 65, 130, 200])
def test_many_rows_go_in_whole_and_in_order_through_a_few_statements(count):
    """A reset inserts a table's rows in statements of 64, 32, ... 1 rows: every row arrives,
    in order, and the row counts seen compile at most 7 statements per table (a statement per
    count grew SQLite's statement cache by 15 MB over 200 care resets)."""
    metadata = MetaData()
    Table(
        "readings",
        metadata,
        Column("episode_id", String(10), primary_key=True),
        Column("reading_id", String(10), primary_key=True),
        Column("value", Float, nullable=False),
    )
    db = EpisodeDatabase(metadata)
    rows = [("E1", f"R{i:04d}", float(i)) for i in range(count)]
    db.start_episode(lambda d: d.insert_values("readings", rows))
    stored = db.select(Query("readings", ("reading_id", "value"), order=("reading_id",)), ("E1",))
    assert stored == [row[1:] for row in rows]
    for other in range(1, 300):  # every count up to 300 uses the same few statements
        db.insert_values("readings", [("E2", f"S{other}-{i}", 0.0) for i in range(other)])
    assert len(db._multi_sql) <= 7
