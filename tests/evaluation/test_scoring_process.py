"""IRA and RA computed by the run's scoring process (telcoenv.evaluation.scoring) equal those the
environments compute in the workers, with any number of workers, when the scoring process dies,
and when the run is interrupted; nothing that finished playing is lost."""

from __future__ import annotations

import multiprocessing
import os
import time
from typing import Any

import pytest

from telcoenv.evaluation import runner, scoring
from telcoenv.evaluation.runner import RunConfig, build_grid, evaluate
from tests.conftest import result_store
from tests.embedders import HashEmbedder

GRID = build_grid(
    ["beam_misalignment", "pci_collision", "contact_update"],
    samples=2,
    languages=("en", "ar"),
    domain="all",
)
# Differs from run to run: how long an episode took and the agent's own bookkeeping.
_VOLATILE = ("duration_s", "agent_usage", "finished_at")


def _records(store: Any, run: str) -> dict[str, dict[str, Any]]:
    return {
        r["key"]: {k: v for k, v in r.items() if k not in _VOLATILE}
        for r in store.records([run], with_trace=True)
    }


def _in_the_workers(tmp_path, embedder: Any, workers: int = 1) -> dict[str, dict[str, Any]]:
    """The records of the grid with IRA and RA computed inside the environments (as a Ray
    cluster's workers do)."""
    store, _ = result_store(tmp_path, "reference.sqlite")
    original = runner._scorer
    runner._scorer = lambda config, backend: None
    try:
        evaluate(store, "r", GRID, RunConfig("oracle", {}, embedder=embedder), workers=workers)
    finally:
        runner._scorer = original
    return _records(store, "r")


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict[str, dict[str, Any]]:
    return _in_the_workers(tmp_path_factory.mktemp("reference"), HashEmbedder())


@pytest.mark.parametrize("workers", [1, 2])
def test_scores_from_the_scoring_process_equal_the_environments(tmp_path, reference, workers):
    store, _ = result_store(tmp_path)
    config = RunConfig("oracle", {}, embedder=HashEmbedder())
    summary = evaluate(store, "r", GRID, config, workers=workers)
    assert (summary.stored, summary.failed) == (len(GRID), 0)
    records = _records(store, "r")
    assert records == reference
    network = [r for r in records.values() if r["domain"] == "network"]
    assert all(r["ira"] is not None and r["ra"] is not None for r in network)
    assert {r["embedder"] for r in records.values()} == {HashEmbedder.name}


def _dies(connection: Any, spec: Any) -> None:
    os._exit(3)  # as a process killed by the OOM killer would


def test_a_scoring_process_that_dies_is_replaced_by_scoring_in_the_runner(
    tmp_path, reference, monkeypatch
):
    monkeypatch.setattr(scoring, "_serve", _dies)
    store, _ = result_store(tmp_path)
    summary = evaluate(store, "r", GRID, RunConfig("oracle", {}, embedder=HashEmbedder()))
    assert (summary.stored, summary.failed) == (len(GRID), 0)
    assert _records(store, "r") == reference


def test_an_interrupted_run_keeps_every_played_episode_with_its_scores(
    tmp_path, reference, monkeypatch
):
    """Ctrl-C while records wait for their scores (a slow embedder): they are scored and stored
    before the run returns, and resuming it plays only what was never played."""
    score_pairs = scoring.score_pairs

    def slowly(pairs: Any, embedder: Any) -> Any:
        time.sleep(0.2)
        return score_pairs(pairs, embedder)

    monkeypatch.setattr(scoring, "score_pairs", slowly)  # the scoring process is forked
    monkeypatch.setattr(runner, "MAX_WAITING", 2)  # then the runner waits for the scores
    store, _ = result_store(tmp_path)
    config = RunConfig("oracle", {}, embedder=HashEmbedder())
    seen = []

    def interrupt(done: int, pending: int) -> None:
        seen.append(done)
        if done >= 3:
            raise KeyboardInterrupt

    first = evaluate(store, "r", GRID, config, workers=2, progress=interrupt)
    assert first.interrupted and seen[-1] < first.stored < len(GRID)  # waiting ones too
    kept = _records(store, "r")
    assert all(kept[key] == reference[key] for key in kept)  # scored, not stored without
    second = evaluate(store, "r", GRID, config, workers=2)
    assert second.stored == len(GRID) - first.stored
    assert _records(store, "r") == reference


@pytest.mark.slow  # the real multilingual model, twice over the grid
def test_the_multilingual_scores_are_the_same_beside_and_inside(tmp_path):
    inside = _in_the_workers(tmp_path, "multilingual", workers=2)
    store, _ = result_store(tmp_path)
    evaluate(store, "r", GRID, RunConfig("oracle", {}), workers=2)
    beside = _records(store, "r")
    assert beside == inside
    assert any(r["ra"] is not None and r["ra"] < 1.0 for r in beside.values())


@pytest.mark.slow  # the real multilingual model
def test_episodes_scored_together_get_the_scores_each_gets_alone():
    """The scoring process encodes what queued up in one call when the embedder's vectors do
    not depend on their batch (the multilingual one): the scores stay those of each episode
    scored alone, on a fresh model."""
    from telcoenv.agents import OracleAgent, RandomAgent, run_episode
    from telcoenv.env import TelcoEnv
    from telcoenv.metrics.scoring import text_pairs

    env = TelcoEnv("beam_misalignment", privileged=True, embedder=None)
    episodes = []
    for seed in range(12):
        agent = OracleAgent() if seed % 3 else RandomAgent(seed=seed)
        _, info = run_episode(env, agent, seed=seed, options={"lang": ("en", "ar")[seed % 2]})
        episodes.append(text_pairs(info["trace"]))
    alone = scoring.make_embedder("multilingual")
    expected = [scoring.score_pairs(pairs, alone) for pairs in episodes]
    together = scoring.make_embedder("multilingual")
    scoring.score_pairs(episodes[0], together)  # loads the model: batch_invariant is known
    assert together.batch_invariant
    scoring._encode_together(together, episodes[1:])
    assert [scoring.score_pairs(pairs, together) for pairs in episodes] == expected


def _hangs(connection: Any, spec: Any) -> None:
    time.sleep(3600)  # as a process stuck in a deadlock would


def test_a_scoring_process_that_hangs_is_given_up_and_replaced(tmp_path, reference, monkeypatch):
    monkeypatch.setattr(scoring, "_serve", _hangs)
    monkeypatch.setattr(scoring, "PATIENCE_S", 0.5)
    store, _ = result_store(tmp_path)
    summary = evaluate(store, "r", GRID, RunConfig("oracle", {}, embedder=HashEmbedder()))
    assert (summary.stored, summary.failed) == (len(GRID), 0)
    assert _records(store, "r") == reference


def _episode(token: int) -> list[tuple[int, list[tuple[str, str]]]]:
    return [(token, [(f"intent {token}", "label")])]


def test_the_scoring_process_lets_episodes_queue_up_until_asked():
    """Episodes are encoded together once BATCH_EPISODES are in, when the runner waits for
    their scores (FLUSH), when the first has waited long enough, or at the end."""
    ours, theirs = multiprocessing.Pipe()
    for token in range(3):
        ours.send(_episode(token))
    ours.send(scoring.FLUSH)
    batch, done = scoring._received(theirs, wait_s=3600)  # returns at the flush
    assert [token for token, _ in batch] == [0, 1, 2] and not done

    ours.send(scoring.FLUSH)  # nothing left to score: it waits for the next episode
    full = scoring.BATCH_EPISODES
    for token in range(3, 3 + full + 2):
        ours.send(_episode(token))
    batch, done = scoring._received(theirs, wait_s=3600)  # returns once the batch is full
    assert [token for token, _ in batch] == list(range(3, 3 + full)) and not done

    batch, done = scoring._received(theirs, wait_s=0.01)  # the first waited long enough
    assert [token for token, _ in batch] == [3 + full, 4 + full] and not done

    ours.send(_episode(99))
    ours.send(None)
    assert scoring._received(theirs, wait_s=3600) == (_episode(99), True)
    ours.close()
    assert scoring._received(theirs) == ([], True)
