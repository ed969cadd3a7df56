"""The CLI never shows a traceback for a user mistake: one line ``telcoenv: error: ...`` on
stderr and exit code 2, through the real ``telcoenv.cli.main`` or a real process."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from telcoenv.cli import main
from telcoenv.evaluation.store import ResultStore
from tests.conftest import REPO_ROOT

# One intent, one sample, English, no embedder: a two-episode grid.
TINY = [
    "--agent",
    "oracle",
    "--intents",
    "beam_misalignment",
    "--samples",
    "1",
    "--lang",
    "en",
    "--embedder",
    "none",
    "--quiet",
]


def _fails(capsys: pytest.CaptureFixture[str], argv: list[str], *expected: str) -> str:
    """Run the CLI; it must exit 2 with one error line holding ``expected``."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("telcoenv: error: "), err
    assert "Traceback" not in err
    for text in expected:
        assert text in lines[0], lines[0]
    return lines[0]


def _evaluate(db: str, *extra: str) -> list[str]:
    return ["evaluate", *TINY, "--db", db, *extra]


@pytest.fixture
def db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'results.sqlite'}"


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--agent-options", "{bad"], "--agent-options is not valid JSON"),
        (["--agent-options", "[1, 2]"], "--agent-options must be a JSON object"),
        (["--agent-options", '{"nope": 1}'], "cannot make the agent 'oracle'"),
        (["--lang", ""], "--lang is empty"),
        (["--lang", " , "], "--lang is empty"),
        (["--lang", "en,fr"], "--lang: unknown 'fr'"),
        (["--intents", ""], "--intents is empty"),
        (["--intent-list", ","], "--intent-list is empty"),
        (["--domain", "bss"], "'beam_misalignment' belongs to the network domain, not to bss"),
        (["--samples", "0"], "--samples must be at least 1, got 0"),
        (["--workers", "0"], "--workers must be at least 1"),
        (["--workers", "two"], "--workers must be a number or auto, got 'two'"),
        (["--max-steps", "-2"], "--max-steps must be at least 1"),
        (["--timeout", "-1"], "--timeout must be seconds >= 0"),
        (["--timeout", "nan"], "--timeout must be seconds >= 0"),
        (["--embedder", "nonsense"], "unknown embedder 'nonsense'"),
        (["--address", "127.0.0.1:1"], "--address is the address of a Ray cluster"),
    ],
)
def test_evaluate_usage_mistakes(capsys, db, extra, expected):
    _fails(capsys, _evaluate(db, *extra), expected)


def test_agent_options_are_never_echoed(capsys, db):
    line = _fails(capsys, _evaluate(db, "--agent-options", '{"api_key": "sk-9", "x": 1}'))
    assert "sk-9" not in line and "api_key" in line  # which options, not their values
    line = _fails(capsys, _evaluate(db, "--agent-options", '{"api_key": "sk-9",}'))
    assert "sk-9" not in line


def test_database_paths_that_cannot_be_a_results_database(capsys, tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir()
    _fails(capsys, _evaluate(f"sqlite:///{folder}"), f"{folder} is a folder, not a SQLite file")
    nowhere = tmp_path / "missing" / "r.sqlite"
    _fails(capsys, _evaluate(f"sqlite:///{nowhere}"), f"no folder {nowhere.parent}")
    _fails(capsys, _evaluate("results.sqlite"), "malformed database URL 'results.sqlite'")
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(os.urandom(2048))
    for argv in (
        _evaluate(f"sqlite:///{junk}"),
        ["report", "--db", f"sqlite:///{junk}", "--run", "r"],
    ):
        _fails(capsys, argv, str(junk), "corrupted, or not a SQLite file")
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as connection:
        connection.execute("CREATE TABLE users (id INTEGER)")
    _fails(capsys, _evaluate(f"sqlite:///{foreign}"), f"{foreign} is not a telcoenv results")


def test_report_on_a_missing_database_does_not_create_it(capsys, tmp_path):
    missing = tmp_path / "nothing.sqlite"
    _fails(capsys, ["report", "--db", f"sqlite:///{missing}", "--run", "r"], "no results database")
    assert not missing.exists()


def test_output_paths_that_are_files_or_cannot_be_created(capsys, tmp_path, db):
    assert main(_evaluate(db, "--run", "r")) == 0
    capsys.readouterr()
    a_file = tmp_path / "a_file"
    a_file.write_text("not a folder")
    report = ["report", "--db", db, "--run", "r", "--out"]
    _fails(capsys, [*report, str(a_file)], f"--out {a_file} is a file, not a folder")
    _fails(capsys, [*report, str(a_file / "sub")], "cannot create the folder")
    blocked = tmp_path / "out"
    (blocked / "report.md").mkdir(parents=True)  # a folder where a file is written
    _fails(capsys, [*report, str(blocked)], f"cannot write {blocked / 'report.md'}")
    generate = ["generate", "--samples", "1", "--out"]
    _fails(capsys, [*generate, str(a_file)], "is a file, not a folder")
    _fails(capsys, [*generate, str(a_file / "sub")], "cannot create the folder")
    folder_named_jsonl = tmp_path / "rows.jsonl"
    folder_named_jsonl.mkdir()
    _fails(capsys, [*generate, str(folder_named_jsonl), "--format", "jsonl"], "is a folder")


def test_an_unreachable_postgresql_server_is_one_line_without_the_password(capsys, tmp_path):
    pytest.importorskip("psycopg")
    db = f"postgresql://tester:s3cret@/telco?host={tmp_path / 'nowhere'}&port=1"
    line = _fails(capsys, _evaluate(db), "cannot open the results database", "nowhere")
    assert "s3cret" not in line  # the driver's message spans two lines: joined with "; "


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_output_folders_that_are_not_writable(capsys, tmp_path, db):
    assert main(_evaluate(db, "--run", "r")) == 0
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        _fails(capsys, ["report", "--db", db, "--run", "r", "--out", str(locked)], "not writable")
        _fails(capsys, ["generate", "--samples", "1", "--out", str(locked)], "not writable")
        db_in_locked = f"sqlite:///{locked / 'r.sqlite'}"
        _fails(capsys, _evaluate(db_in_locked), "is not writable")
    finally:
        locked.chmod(0o700)


@pytest.mark.parametrize("samples", ["0", "-3"])
def test_generate_needs_at_least_one_sample(capsys, tmp_path, samples):
    out = tmp_path / "dataset"
    _fails(capsys, ["generate", "--samples", samples, "--out", str(out)], "--samples must be")
    assert not out.exists()


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["generate", "--domain", "bss", "--out", "x"], "the bss domain cannot generate a dataset"),
        (["rescore", "x", "--domain", "bss"], "the bss domain cannot re-score a published release"),
    ],
)
def test_a_domain_without_a_capability_is_refused_in_one_line(capsys, argv, expected):
    _fails(capsys, argv, expected)


def test_demo_needs_a_language(capsys):
    _fails(capsys, ["demo", "--lang", ""], "--lang is empty")


def test_resuming_a_run_with_another_configuration_is_refused_in_one_line(capsys, db):
    assert main(_evaluate(db, "--run", "r")) == 0
    capsys.readouterr()
    line = _fails(capsys, _evaluate(db, "--run", "r", "--seed", "1", "--max-steps", "9"))
    assert "run 'r' was started with another configuration" in line
    assert "max_steps: stored 20, now 9; seed: stored 0, now 1" in line
    assert line.endswith("start a new --run instead")
    assert main(_evaluate(db, "--run", "r", "--timeout", "60")) == 0  # not part of it


def test_intents_accept_the_gymnasium_ids_that_make_accepts(capsys, db):
    argv = _evaluate(db, "--run", "r", "--intents", "telcoenv/BeamMisalignment-v0,pci_collision")
    assert main(argv) == 0
    intents = {r["intent"] for r in ResultStore(db).records(["r"])}
    assert intents == {"BEAM_MISALIGNMENT", "PCI_COLLISION"}
    _fails(capsys, _evaluate(db, "--intents", "telcoenv/Beam-v0"), "unknown intent")


def test_argparse_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["evaluate", "--agent", "oracle", "--samples", "many"])
    assert exit_info.value.code == 2 and "Traceback" not in capsys.readouterr().err


def _free_local_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.slow  # starts a local Ray instance
def test_an_unreachable_ray_address_fails_fast_and_clearly(capsys, db, tmp_path):
    pytest.importorskip("ray")
    address = f"127.0.0.1:{_free_local_port()}"  # nothing listens there
    started = time.monotonic()
    argv = _evaluate(db, "--backend", "ray", "--address", address, "--run", "r")
    _fails(capsys, argv, f"cannot reach the Ray cluster at {address}", "ray start --head")
    assert time.monotonic() - started < 30
    assert "r" not in ResultStore(db).runs()  # nothing recorded for a run that never started


@pytest.mark.slow  # a telcoenv subprocess
def _list_into(stdout: Any) -> subprocess.CompletedProcess[str]:
    """``telcoenv list`` in a process of its own, its output into ``stdout``."""
    command = [sys.executable, "-m", "telcoenv", "list"]
    return subprocess.run(
        command, cwd=REPO_ROOT, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=120
    )


def test_a_reader_that_stops_reading_gets_no_traceback():
    read, write = os.pipe()
    os.close(read)  # `telcoenv list | head -1` with head already gone: every write fails
    try:
        process = _list_into(write)
    finally:
        os.close(write)
    assert process.stderr == "" and process.returncode == 1


@pytest.mark.slow  # a telcoenv subprocess
def test_a_shell_pipeline_into_head_stays_quiet():
    process = subprocess.run(
        f"{sys.executable} -m telcoenv demo --lang en | head -1",
        shell=True,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert process.stdout.startswith("\n") or process.stdout.strip()
    assert "Traceback" not in process.stderr and "BrokenPipeError" not in process.stderr


def test_workers_auto_is_one_worker_per_usable_core(monkeypatch, db):
    from telcoenv import cli
    from telcoenv.evaluation import runner

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert cli._workers("auto") == cli._workers(" Auto ") == cores
    assert cli._workers("3") == 3
    asked = []
    run = runner.evaluate

    def recorded(*args, **kwargs):
        asked.append(kwargs["workers"])
        return run(*args, **kwargs)

    monkeypatch.setattr(runner, "evaluate", recorded)
    assert main(_evaluate(db, "--workers", "auto")) == 0
    assert asked == [cores]
    assert len(ResultStore(db).records([ResultStore(db).runs()[0]])) == 2


# --- found by driving the CLI as a careless user (session 21) ---------------------------------


def test_an_html_page_never_replaces_the_results_database(capsys, tmp_path, db):
    assert main(_evaluate(db)) == 0
    store = tmp_path / "results.sqlite"
    stored = store.read_bytes()
    capsys.readouterr()
    report = ["report", "--db", db, "--run", "oracle-seed0", "--html"]
    _fails(capsys, [*report, str(store)], "exists and is not an HTML page")
    assert store.read_bytes() == stored
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    _fails(capsys, [*report, str(notes)], "is not an HTML page")
    assert notes.read_text() == "mine"
    page = tmp_path / "page.html"
    for _ in range(2):  # a page written before is replaced by the new one
        assert main([*report, str(page)]) == 0
    assert page.read_text(encoding="utf-8").lower().startswith("<!doctype html")


def test_a_negative_seed_is_refused_before_the_run_starts(capsys, tmp_path, db):
    _fails(capsys, _evaluate(db, "--seed", "-1"), "seed must be a non-negative integer")
    assert not (tmp_path / "results.sqlite").exists()
    out = tmp_path / "dataset"
    _fails(capsys, ["generate", "--samples", "1", "--out", str(out), "--seed", "-1"], "seed")
    assert not out.exists()


def test_text_arguments_that_are_not_utf8_are_one_line(capsys, db):
    bad = os.fsdecode(b"bad\xffname")  # what Python makes of such bytes in argv
    _fails(capsys, _evaluate(db, "--run", bad), "--run", "not UTF-8")
    _fails(capsys, ["report", "--db", db, "--run", bad], "--run", "not UTF-8")


def test_operating_system_errors_are_one_line(capsys, tmp_path, db):
    name = "a" * 300  # longer than a file name may be
    for argv in (
        ["generate", "--samples", "1", "--out", str(tmp_path / name)],
        ["report", "--db", f"sqlite:///{tmp_path / name}.sqlite", "--run", "x"],
        ["validate", "--tools", str(tmp_path / name)],
    ):
        assert main(argv) in (1, 2)
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("telcoenv: error: "), err
        assert "File name too long" in err or "too long" in err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
def test_a_full_output_device_is_one_line():
    with open("/dev/full", "w") as full:
        process = _list_into(full)
    assert process.returncode == 1
    assert process.stderr == "telcoenv: error: No space left on device\n", process.stderr


def test_a_store_damaged_past_its_first_pages_is_one_line(capsys, tmp_path, db):
    assert main(_evaluate(db, "--samples", "5")) == 0
    capsys.readouterr()
    store = tmp_path / "results.sqlite"
    with sqlite3.connect(store) as connection:  # the episodes out of the write-ahead log
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = store.stat().st_size
    assert size > 8 * 4096  # the damage lands past the pages read on opening
    with store.open("r+b") as file:
        file.seek(size // 2)
        file.write(b"\xde\xad\xbe\xef" * (size // 8))
    for argv in (
        ["report", "--db", db, "--run", "oracle-seed0"],
        _evaluate(db, "--samples", "5"),
    ):
        line = _fails(capsys, argv, "the results database", "corrupted")
        assert len(line) < 500


def test_demo_refuses_a_width_it_cannot_print_in(capsys):
    _fails(capsys, ["demo", "--width", "0"], "--width must be at least 40")


def test_an_agent_whose_domains_is_not_a_collection_is_one_line(capsys, db):
    for agent in ("tests.agents_for_tests:StringDomains", "tests.agents_for_tests:NumberDomains"):
        _fails(capsys, _evaluate(db, "--agent", agent), "domains must be a tuple")


@pytest.mark.slow  # imports sentence-transformers
def test_a_model_folder_that_does_not_load_fails_before_the_run(capsys, tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{")
    db = f"sqlite:///{tmp_path / 'results.sqlite'}"
    argv = [a if a != "none" else str(model) for a in _evaluate(db)]
    _fails(capsys, argv, "cannot load the embedding model")
    assert not (tmp_path / "results.sqlite").exists()


def test_generate_refuses_an_empty_output_name(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _fails(capsys, ["generate", "--samples", "1", "--out", ""], "--out is empty")
    assert list(tmp_path.iterdir()) == []


def test_a_server_url_without_a_scheme_is_refused_before_the_run(capsys, db):
    options = '{"model": "m", "base_url": "localhost:8000/v1"}'
    argv = _evaluate(db, "--agent", "openai", "--agent-options", options)
    _fails(capsys, argv, "base_url must be an http:// or https:// URL")


def test_the_report_of_a_run_without_episodes_is_quiet(capsys, tmp_path, db, recwarn):
    ResultStore(db).ensure_run("empty", "oracle", {})
    assert main(["report", "--db", db, "--run", "empty", "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "metrics.png").exists()
    assert [str(w.message) for w in recwarn] == []  # matplotlib warned of an empty legend
    assert capsys.readouterr().err.count("\n") == 1  # "report and 1 plots written to ..."


def test_a_tool_spec_nested_past_the_parser_is_one_line(capsys, tmp_path):
    tools = tmp_path / "tools"
    tools.mkdir()
    for spec in (REPO_ROOT / "tools").glob("*.json"):
        (tools / spec.name).write_text(spec.read_text(encoding="utf-8"), encoding="utf-8")
    (tools / "kpi_timeseries.json").write_text("[" * 100_000)
    _fails(capsys, ["validate", "--tools", str(tools)], "kpi_timeseries.json", "nested too deeply")
