"""Where the packaged data files live, how they are parsed, and the cache of what is built
from them.

Validating a catalogue (about a hundred YAML and JSON files against their schemas and rules)
takes most of a second; every worker process and every test would pay it at its first ``make``.
:func:`cached_build` keeps the validated result in the user's cache directory under a hash of
the content of every packaged data file and of the package's own code, so a change to any of
them builds afresh, and a cache that cannot be read or written only costs the build.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import suppress
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

import yaml

from telcoenv.errors import CatalogError

T = TypeVar("T")

# libyaml's loader where PyYAML was built with it: the same documents, about ten times faster.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_PACKAGE = Path(__file__).resolve().parent
# Files whose content a cached build depends on (code, schemas, data); caches and bytecode not.
_HASHED_SUFFIXES = frozenset({".py", ".yaml", ".yml", ".json", ".md", ".txt"})
_STALE_S = 24 * 3600


def data_root() -> Path:
    """Folder that holds intents.yaml, blueprints/ and tools/.

    An installed wheel carries them in ``telcoenv/_data``; a source checkout has them next to the
    package.
    """
    packaged = _PACKAGE / "_data"
    return packaged if (packaged / "intents.yaml").is_file() else _PACKAGE.parent


def parse_yaml(text: str, file: str) -> Any:
    """Parse YAML text; a syntax error becomes a CatalogError with the line and column."""
    try:
        return yaml.load(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise CatalogError(file, where, f"invalid YAML: {getattr(exc, 'problem', exc)}") from exc
    except RecursionError:
        raise CatalogError(file, "", "invalid YAML: nested too deeply to parse") from None


def read_text(path: Path) -> str:
    """A data file's text; one that cannot be read or is not UTF-8 is a CatalogError."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CatalogError(str(path), "", f"cannot read file: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise CatalogError(
            str(path), f"byte {exc.start}", "not UTF-8 text: save the file as UTF-8"
        ) from exc


def read_json(path: Path) -> Any:
    """Parse a JSON data file; a syntax error (or nesting past the parser) is a CatalogError
    with the line and column."""
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        raise CatalogError(str(path), where, f"invalid JSON: {exc.msg}") from exc
    except RecursionError:
        raise CatalogError(str(path), "", "invalid JSON: nested too deeply to parse") from None


def read_yaml(path: Path) -> Any:
    """Parse a YAML file; a syntax error becomes a CatalogError with the line and column."""
    return parse_yaml(read_text(path), str(path))


def cache_dir() -> Path:
    """$TELCOENV_CACHE_DIR, else $XDG_CACHE_HOME/telcoenv, else ~/.cache/telcoenv (empty
    variables count as unset; the directory is not created)."""
    if explicit := os.environ.get("TELCOENV_CACHE_DIR"):
        return Path(explicit).expanduser()
    if xdg := os.environ.get("XDG_CACHE_HOME"):
        return Path(xdg).expanduser() / "telcoenv"
    return Path.home() / ".cache" / "telcoenv"


def _hashed_files() -> Iterator[Path]:
    roots = {_PACKAGE, data_root() / "blueprints", data_root() / "tools"}
    yield data_root() / "intents.yaml"
    for root in sorted(roots):
        for path in sorted(root.rglob("*")):
            if path.suffix in _HASHED_SUFFIXES and "__pycache__" not in path.parts:
                yield path


@cache
def content_hash() -> str:
    """A hash of every packaged data file and of the package's code (paths and bytes)."""
    digest = hashlib.blake2b(digest_size=16)
    for path in _hashed_files():
        digest.update(str(path.relative_to(path.anchor)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def cached_build(name: str, build: Callable[[], T], key: str | None = None) -> T:
    """``build()``'s result, from the cache when no packaged file has changed since it was
    stored (``name``: a word naming what is built). Only for results built from the packaged
    files alone, or from what ``key`` names (then the key instead of the packaged files' hash:
    say a version and a hash of the files it is built from); ``TELCOENV_NO_CACHE=1`` always
    builds."""
    found = load_cached(name, key)
    if found is not None:
        return found  # type: ignore[no-any-return]
    result = build()
    store_cached(name, result, key)
    return result


def load_cached(name: str, key: str | None = None) -> Any:
    """The value stored as ``name`` for the packaged files as they are now (or for ``key``),
    else None."""
    if os.environ.get("TELCOENV_NO_CACHE"):
        return None
    path = _cached_path(name, key)
    try:
        result = pickle.loads(path.read_bytes())
    except Exception:  # absent, truncated or from another Python: build it again
        return None
    with suppress(OSError):
        os.utime(path)  # in use: not stale for another checkout's clean-up
    return result


def store_cached(name: str, value: Any, key: str | None = None) -> None:
    """Keep ``value`` as ``name`` for the packaged files as they are now (or for ``key``;
    unless ``TELCOENV_NO_CACHE`` is set); a failure only loses the cache."""
    if not os.environ.get("TELCOENV_NO_CACHE"):
        _store(_cached_path(name, key), value)


def _cached_path(name: str, key: str | None = None) -> Path:
    return cache_dir() / f"{name}.{key or content_hash()}.pickle"


def _store(path: Path, result: Any) -> None:
    """Write atomically (a concurrent reader sees the whole file or none); a read-only or
    full disk only loses the cache."""
    data = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
    name = path.name.split(".", 1)[0]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _drop_stale(path.parent, name)
        descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{name}")
    except OSError:
        return
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        os.replace(temporary, path)
    except OSError:
        with suppress(OSError):
            os.unlink(temporary)


def _drop_stale(folder: Path, name: str) -> None:
    """Remove builds of ``name`` from other files that were not used for a day (another
    checkout or version may still be using a recent one)."""
    cutoff = time.time() - _STALE_S
    for stale in folder.glob(f"{name}.*.pickle"):
        with suppress(OSError):
            if stale.stat().st_mtime < cutoff:
                stale.unlink()
