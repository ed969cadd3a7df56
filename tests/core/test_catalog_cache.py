"""The validated catalogue cached on disk: used when nothing changed, rebuilt when a data file
or the code changed, and never in the way (a broken or unwritable cache only costs a build)."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from telcoenv import datafiles
from telcoenv.domains.bss.blueprints import care_catalog, load_care_catalog
from telcoenv.domains.network.kpis import kpi_definitions
from telcoenv.domains.network.loading import load_catalog, network_catalog


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in for the packaged files, and an empty cache directory."""
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "intents.yaml").write_text("intents: []\n")
    (folder / "tool.json").write_text("{}")
    monkeypatch.setattr(datafiles, "_hashed_files", lambda: sorted(folder.iterdir()))
    monkeypatch.setenv("TELCOENV_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TELCOENV_NO_CACHE", raising=False)
    datafiles.content_hash.cache_clear()
    yield folder
    datafiles.content_hash.cache_clear()


class Builds:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> dict[str, int]:
        self.count += 1
        return {"built": self.count}


def test_a_second_process_reads_what_the_first_built(data: Path) -> None:
    build = Builds()
    assert datafiles.cached_build("thing", build) == {"built": 1}
    assert datafiles.cached_build("thing", build) == {"built": 1}
    assert build.count == 1
    assert len(list((data.parent / "cache").glob("thing.*.pickle"))) == 1


def test_a_changed_file_builds_afresh(data: Path) -> None:
    build = Builds()
    datafiles.cached_build("thing", build)
    (data / "tool.json").write_text('{"changed": true}')
    datafiles.content_hash.cache_clear()  # a new process
    assert datafiles.cached_build("thing", build) == {"built": 2}
    # The other build stays for a day (another checkout may use it), then goes.
    old = data.parent / "cache"
    assert len(list(old.glob("thing.*.pickle"))) == 2
    for path in old.glob("thing.*.pickle"):
        os.utime(path, (0, 0))
    (data / "intents.yaml").write_text("intents: [x]\n")
    datafiles.content_hash.cache_clear()
    assert datafiles.cached_build("thing", build) == {"built": 3}
    assert len(list(old.glob("thing.*.pickle"))) == 1


def test_a_renamed_file_changes_the_hash(data: Path) -> None:
    before = datafiles.content_hash()
    (data / "tool.json").rename(data / "other.json")
    datafiles.content_hash.cache_clear()
    assert datafiles.content_hash() != before


def test_a_broken_cache_file_is_rebuilt(data: Path) -> None:
    build = Builds()
    datafiles.cached_build("thing", build)
    (path,) = (data.parent / "cache").glob("thing.*.pickle")
    path.write_bytes(b"\x80\x05 truncated")
    assert datafiles.cached_build("thing", build) == {"built": 2}
    assert pickle.loads(path.read_bytes()) == {"built": 2}


def test_an_unwritable_cache_only_costs_the_build(data: Path, tmp_path: Path, monkeypatch) -> None:
    blocker = tmp_path / "a file, not a folder"
    blocker.write_text("")
    monkeypatch.setenv("TELCOENV_CACHE_DIR", str(blocker / "cache"))
    build = Builds()
    assert datafiles.cached_build("thing", build) == {"built": 1}
    assert datafiles.cached_build("thing", build) == {"built": 2}


def test_no_cache_always_builds(data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TELCOENV_NO_CACHE", "1")
    build = Builds()
    datafiles.cached_build("thing", build)
    datafiles.cached_build("thing", build)
    assert build.count == 2
    assert not (data.parent / "cache").exists()


def test_the_packaged_files_and_code_are_hashed() -> None:
    files = {path.name for path in datafiles._hashed_files()}
    assert {"intents.yaml", "env.py", "datafiles.py", "kpis.yaml", "get_bill.json"} <= files
    assert not any(name.endswith(".pyc") for name in files)


def test_cached_catalogues_equal_freshly_validated_ones() -> None:
    assert network_catalog() == load_catalog(known_kpis=kpi_definitions().kpis)
    assert care_catalog() == load_care_catalog()


def test_a_fresh_process_uses_the_cache_and_validates_nothing(tmp_path: Path) -> None:
    """The second process loads the catalogue from the cache: no JSON Schema validation runs."""
    code = (
        "import jsonschema, telcoenv; calls = []; "
        "original = jsonschema.Draft202012Validator.iter_errors; "
        "jsonschema.Draft202012Validator.iter_errors = "
        "lambda self, *a, **k: calls.append(1) or original(self, *a, **k); "
        "telcoenv.make('beam_misalignment').reset(seed=0); print(len(calls))"
    )
    env = {**os.environ, "TELCOENV_CACHE_DIR": str(tmp_path)}
    env.pop("TELCOENV_NO_CACHE", None)
    runs = [
        subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        ).stdout.split()[-1]
        for _ in range(2)
    ]
    assert int(runs[0]) > 0
    assert runs[1] == "0"


def test_a_keyed_build_follows_its_key_not_the_packaged_files(data: Path) -> None:
    build = Builds()
    assert datafiles.cached_build("model", build, key="1.0-abc") == {"built": 1}
    (data / "tool.json").write_text('{"changed": true}')
    datafiles.content_hash.cache_clear()
    assert datafiles.cached_build("model", build, key="1.0-abc") == {"built": 1}
    assert datafiles.cached_build("model", build, key="1.1-abd") == {"built": 2}
    assert build.count == 2
