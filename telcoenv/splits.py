"""Train and test splits: episodes, blueprints and phrasings a trained policy never saw.

An environment made with ``split="train"`` or ``split="test"`` draws only its split's episodes
(``"all"``, the default, draws every episode as before). The test split holds out three things,
so that a score on it measures generalisation rather than memory:

* **blueprints**: for each intent with two or more blueprints, a fifth of them (at least one,
  the ones whose id hashes lowest): their topologies, areas, products and ranges appear only in
  the test split;
* **episodes**: on the other blueprints, one episode in five (by a hash of the episode's key,
  which the seed or the sample index fixes);
* **phrasings**: in every list the episode's generator chooses from with at least three entries
  (the engineer's and the customer's phrase banks, a scenario's plans or destinations), about a
  third of the entries (by a hash of their text; at least one, never all) are said only in the
  test split. A list of one or two is shared (the guided care opening is one template per
  intent: its greeting differs by split).

Membership is a pure function of the catalogue and the episode (:func:`episode_split`), so the
two splits never share an episode in any process. A split environment draws as an unsplit one
does and draws again (from the same generator) until the episode is its split's; the
phrasing of a split is applied while the environment resets and steps (:func:`phrasing`).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import math
import zlib
from collections.abc import Iterator, Sequence
from typing import Any, Literal, TypeVar, get_args

from telcoenv.errors import EpisodeOptionError

__all__ = [
    "CANARY",
    "SPLITS",
    "Split",
    "check_split",
    "episode_split",
    "held_out",
    "phrasing",
    "sample_key",
    "split_options",
    "split_samples",
]

Split = Literal["all", "train", "test"]
SPLITS: tuple[str, ...] = get_args(Split)

#: Put in every test-split dataset file, so that a corpus that contains one can be found and
#: cleaned before a model is trained on it.
CANARY = "TELCOENV-TEST-SPLIT-CANARY 6f1d3c2a-8b4e-4f7a-9c05-telcoenv-heldout"

#: One episode in this many on a shared blueprint is a test episode; a blueprint in this many
#: of an intent's (at least one where it has two or more) is held out whole.
EPISODE_SHARE = 5
BLUEPRINT_SHARE = 5
#: A list of at least this many entries keeps one in :data:`PHRASE_SHARE` for the test split.
PHRASE_MINIMUM = 3
PHRASE_SHARE = 3

T = TypeVar("T")
_PHRASING: contextvars.ContextVar[str] = contextvars.ContextVar("telcoenv_split", default="all")


def check_split(value: Any, where: str = "split") -> Split:
    """``value`` if it names a split, else an :class:`EpisodeOptionError` naming them."""
    if not isinstance(value, str) or value not in SPLITS:
        raise EpisodeOptionError(f"{where} must be one of {list(SPLITS)}, got {value!r}")
    return value  # type: ignore[return-value]


def _hash(text: str) -> int:
    return zlib.crc32(text.encode("utf-8"))


def held_out(blueprint_ids: Sequence[str]) -> frozenset[str]:
    """The blueprints of one intent that only the test split shows: none of a single one, else
    a fifth (at least one), those whose id hashes lowest."""
    if len(blueprint_ids) < 2:
        return frozenset()
    count = max(1, math.floor(len(blueprint_ids) / BLUEPRINT_SHARE))
    return frozenset(sorted(blueprint_ids, key=lambda b: (_hash(b), b))[:count])


def episode_split(blueprint_id: str, siblings: Sequence[str], key: Sequence[int]) -> str:
    """``"train"`` or ``"test"``: the split of the episode of ``key`` on ``blueprint_id``
    (``siblings``: every blueprint of its intent, itself included)."""
    if blueprint_id in held_out(siblings):
        return "test"
    digest = _hash(f"{blueprint_id}:{json.dumps(list(key))}")
    return "test" if digest % EPISODE_SHARE == 0 else "train"


def sample_key(blueprint_id: str, sample_index: int) -> list[int]:
    """The key of an episode fixed by its blueprint and sample index (``reset(options=...)``)."""
    return [zlib.crc32(blueprint_id.encode()), sample_index]


def split_samples(
    blueprint_id: str, siblings: Sequence[str], split: str, count: int, start: int = 0
) -> list[int]:
    """The first ``count`` sample indices from ``start`` on whose episodes of ``blueprint_id``
    (``reset(options={"blueprint": ..., "sample_index": ...})``) are in ``split``: none of a
    held-out blueprint in the train split."""
    if split == "all":
        return list(range(start, start + count))
    if split == "train" and blueprint_id in held_out(siblings):
        return []
    found: list[int] = []
    index = start
    while len(found) < count:
        if episode_split(blueprint_id, siblings, sample_key(blueprint_id, index)) == split:
            found.append(index)
        index += 1
    return found


def split_options(options: Sequence[T], split: str) -> Sequence[T]:
    """The entries of ``options`` said in ``split``: in a list of at least
    :data:`PHRASE_MINIMUM`, the test split's are those whose text hashes to 0 modulo
    :data:`PHRASE_SHARE` (at least one, the lowest hash, and never all: the highest stays for
    training), the train split's the others; a shorter list is shared."""
    if split == "all" or len(options) < PHRASE_MINIMUM:
        return options
    hashes = [_hash(str(option)) for option in options]
    test = [h % PHRASE_SHARE == 0 for h in hashes]
    if not any(test):
        test[hashes.index(min(hashes))] = True
    elif all(test):
        test[hashes.index(max(hashes))] = False
    return [o for o, t in zip(options, test, strict=True) if t == (split == "test")]


def current() -> str:
    """The split whose phrasings are said now (``"all"`` outside :func:`phrasing`)."""
    return _PHRASING.get()


@contextlib.contextmanager
def phrasing(split: str) -> Iterator[None]:
    """Within the block, choices of the episode's generator (:func:`telcoenv.phrases.pick`) are
    among ``split``'s entries."""
    token = _PHRASING.set(split)
    try:
        yield
    finally:
        _PHRASING.reset(token)
