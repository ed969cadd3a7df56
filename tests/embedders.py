"""Embedders for unit tests only (the real models are tested too): a small deterministic one,
and a broken one."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


class HashEmbedder:
    """Character 3-grams hashed into 256 signed buckets, L2-normalised; counts encode calls."""

    name = "test-hash-embedder"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        out = np.zeros((len(texts), 256), dtype=np.float32)
        for row, text in enumerate(texts):
            padded = f"  {text.lower()}  "
            for i in range(len(padded) - 2):
                digest = hashlib.blake2b(padded[i : i + 3].encode(), digest_size=4).digest()
                value = int.from_bytes(digest, "little")
                out[row, value % 256] += 1.0 if value & 256 else -1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)


class BrokenEmbedder:
    """Encodes ``n`` texts as ``output(n)`` (bad vectors, say), or raises what ``output`` raises."""

    name = "broken"

    def __init__(self, output: Callable[[int], Any]) -> None:
        self.output = output

    def encode(self, texts: Sequence[str]) -> Any:
        return self.output(len(texts))
