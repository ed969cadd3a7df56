"""IRA and RA: cosine similarity of sentence embeddings (TelcoAgent-Metrics).

* ``IRA = cos(E(predicted intent text), E(gold intent label))``;
* ``RA = cos(E(generated summary), E(gold summary))``.

Scores are raw cosines, as published (no threshold); they are comparable only between runs that
used the same embedder, whose name is stored with every score. An empty prediction scores 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from telcoenv.embeddings import Embedder
from telcoenv.errors import EmbedderUnavailableError


def _vectors(embedder: Embedder, texts: list[str]) -> np.ndarray:
    """The embedder's vectors of ``texts``, checked: a wrong shape or a NaN would otherwise
    become a plausible-looking score (a NaN cosine is clipped to -1)."""
    encoded = embedder.encode(texts)
    try:
        vectors = np.asarray(encoded, dtype=np.float32)
    except (TypeError, ValueError) as exc:  # ragged, or not numbers
        got = f"{type(encoded).__name__} that is not a numeric array ({exc})"
    else:
        finite = bool(np.isfinite(vectors).all())
        if vectors.ndim == 2 and len(vectors) == len(texts) and finite:
            return vectors
        got = f"shape {vectors.shape}" + ("" if finite else " with NaN or inf")
    raise EmbedderUnavailableError(
        f"embedder {getattr(embedder, 'name', embedder)!r} returned {got} for {len(texts)}"
        f" texts; expected a ({len(texts)}, dim) array of finite numbers"
    )


def similarities(pairs: Sequence[tuple[str, str]], embedder: Embedder) -> list[float]:
    """Cosine of each (text, reference) pair, all texts encoded in one batch.

    A pair whose text is empty or blank scores 0.0 (there is nothing to compare).
    """
    texts = list(dict.fromkeys(t for pair in pairs for t in pair if t.strip()))
    index = {text: i for i, text in enumerate(texts)}
    vectors = _vectors(embedder, texts) if texts else np.zeros((0, 1), dtype=np.float32)
    scores = []
    for text, reference in pairs:
        if not text.strip() or not reference.strip():
            scores.append(0.0)
            continue
        value = float(np.dot(vectors[index[text]], vectors[index[reference]]))
        scores.append(min(1.0, max(-1.0, value)))
    return scores


def ira(predicted_intent: str, gold_label: str, embedder: Embedder) -> float:
    """Intent Recognition Accuracy of one sample: the cosine of the two texts' embeddings.

    The predicted intent may be free text in either language.
    """
    return similarities([(predicted_intent, gold_label)], embedder)[0]


def ra(summary: str, gold_summary: str, embedder: Embedder) -> float:
    """Resolution Accuracy of one sample: cosine of the summary and gold-summary embeddings."""
    return similarities([(summary, gold_summary)], embedder)[0]
