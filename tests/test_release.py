"""Compatibility with the published TelcoAgent-Bench release (on fixtures in its format)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from telcoenv.cli import main
from telcoenv.domains.network import NetworkDomain
from telcoenv.env import TelcoEnv
from telcoenv.release import load_evaluations, load_release_blueprints, load_samples, rescore

RELEASE = Path(__file__).parent / "fixtures" / "release"


def test_release_blueprints_load_as_telcoenv_blueprints():
    blueprints = {b.blueprint_id: b for b in load_release_blueprints(RELEASE)}
    assert set(blueprints) == {"DL_DROP_FIXTURE", "PCI_FIXTURE"}  # lower-case file names
    mixture = blueprints["PCI_FIXTURE"].constraints["neighbor_pci_overlap"]
    assert (mixture.dist, mixture.p_hi, mixture.hi_min) == ("mixture", 0.3, 45)


def test_a_release_blueprint_runs_in_the_environment(catalog):
    from telcoenv.catalog import Catalog

    release = {b.blueprint_id: b for b in load_release_blueprints(RELEASE)}
    blueprints = {
        key: family + tuple(b for b in release.values() if b.intent == key)
        for key, family in catalog.blueprints.items()
    }
    domain = NetworkDomain(Catalog(catalog.categories, catalog.intents, blueprints, catalog.tools))
    env = TelcoEnv("pci_collision", blueprint="PCI_FIXTURE", domain=domain, embedder=None)
    overlaps = []
    for seed in range(200):
        env.reset(seed=seed)
        overlaps.append(env.trace.sampled_kpis["neighbor_pci_overlap"])
    overlaps = np.array(overlaps)
    in_high = (overlaps >= 45) & (overlaps <= 60)
    assert np.all(in_high | ((overlaps >= 20) & (overlaps <= 35)))  # the two mixture components
    assert 0.15 < in_high.mean() < 0.45  # p_hi = 0.3


def test_samples_and_evaluations_load_and_tags_are_rebuilt():
    samples = load_samples(RELEASE)
    assert len(samples) == 3 and samples[0].gold_chain[0] in ("neighbor_audit", "oss_query")
    records = load_evaluations(RELEASE)
    assert len(records) == 3  # the .json.lock file and the script are skipped
    models = {p.model for r in records for p in r.predictions}
    assert models == {"llama3:8b", "qwen2.5:7b", "granite3.3:8b", "granite3.1-moe:3b"}
    record = next(r for r in records if r.sample_id.endswith("PCI_FIXTURE-S0001"))
    assert record.gold_label == "Physical Cell ID Collision / Confusion"
    assert record.blueprint_id == "PCI_FIXTURE"


def test_rescore_reproduces_the_stored_values_exactly():
    report = rescore(RELEASE)
    assert report.all_exact and report.records == 3
    rows = {(r.model, r.language): r for r in report.rows}
    assert len(rows) == 8
    moe = rows[("granite3.1-moe:3b", "en")]
    assert moe.exact_matches == 3 and moe.samples == 3
    # hand-computed means: MSC (0 + 1/3 + 1)/3, EAP (1 + 1 + 0.6)/3
    assert moe.msc == pytest.approx((0 + 1 / 3 + 1) / 3)
    assert moe.eap == pytest.approx(2.6 / 3)
    # reliability per blueprint, averaged: DL blueprint has 2 samples, PCI 1
    llama = rows[("llama3:8b", "en")]
    assert llama.gpc0 == pytest.approx((0.5 + 1.0) / 2)
    assert llama.stored_ra == pytest.approx(0.8)


def test_rescore_flags_a_tampered_score(tmp_path):
    copy = tmp_path / "release"
    shutil.copytree(RELEASE, copy)
    path = next((copy / "TelcoAgent-Metrics").glob("PCI_COLLISION/*/*.json"))
    data = json.loads(path.read_text())
    data["Tool"]["Score"]["llama3:8b"]["En"]["SAS"] = 0.9999999999999999
    path.write_text(json.dumps(data))
    report = rescore(copy)
    assert not report.all_exact
    row = next(r for r in report.rows if (r.model, r.language) == ("llama3:8b", "en"))
    assert row.mismatches == [path.stem]


def test_rescore_cli(capsys):
    assert main(["rescore", str(RELEASE)]) == 0
    out = capsys.readouterr().out
    assert "2 blueprints load" in out and "all equal to the stored values" in out
    assert "| granite3.1-moe:3b | ar | 3 |" in out
    assert main(["rescore", str(RELEASE), "--format", "json", "--weights", "paper"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["weights"] == [0.5, 0.3, 0.2]
    assert main(["rescore", str(RELEASE / "nowhere")]) == 2
    assert "no BLUEPRINTS folder in the release" in capsys.readouterr().err
    assert main(["rescore", str(RELEASE / "nowhere"), "--no-blueprints"]) == 2
    assert "no TelcoAgent-Metrics folder" in capsys.readouterr().err
