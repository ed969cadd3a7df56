"""Compatibility with the published TelcoAgent-Bench release (on fixtures in its format)."""

from __future__ import annotations

import json
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from telcoenv.cli import main
from telcoenv.datafiles import read_yaml
from telcoenv.domains.network import NetworkDomain
from telcoenv.domains.network.release import (
    ReleaseWarning,
    load_evaluations,
    load_release_blueprints,
    load_samples,
    rescore,
)
from telcoenv.env import TelcoEnv
from telcoenv.errors import CatalogError
from tests.conftest import FIXTURES

RELEASE = FIXTURES / "release"
# The published release's defect, line 19: `throughput_p50_mbps:{ min: 0,  max: 5 }`.
GLUED = RELEASE / "BLUEPRINTS" / "CELL_OUTAGE_DETECTION" / "outage_glued_colon_fixture.yaml"


def _quiet(root: Path = RELEASE) -> list:
    return load_release_blueprints(root, warn=lambda message: None)


def test_release_blueprints_load_as_telcoenv_blueprints():
    blueprints = {b.blueprint_id: b for b in _quiet()}
    # lower-case file names; the glued-colon file is repaired
    assert set(blueprints) == {"DL_DROP_FIXTURE", "PCI_FIXTURE", "OUTAGE_GLUED_COLON_FIXTURE"}
    mixture = blueprints["PCI_FIXTURE"].constraints["neighbor_pci_overlap"]
    assert (mixture.dist, mixture.p_hi, mixture.hi_min) == ("mixture", 0.3, 45)


def test_the_fixture_has_the_release_defect():
    assert "  throughput_p50_mbps:{ min: 0,  max: 5 }\n" in GLUED.read_text(encoding="utf-8")
    with pytest.raises(CatalogError, match="mapping values are not allowed") as caught:
        read_yaml(GLUED)
    assert caught.value.field == "line 19, column 37"  # as the published file reports it


def test_a_glued_colon_is_repaired_with_a_one_line_warning():
    messages: list[str] = []
    blueprints = {b.blueprint_id: b for b in load_release_blueprints(RELEASE, messages.append)}
    rule = blueprints["OUTAGE_GLUED_COLON_FIXTURE"].constraints["throughput_p50_mbps"]
    assert (rule.min, rule.max) == (0, 5)
    assert messages == [f"{GLUED}: line 19: repaired invalid YAML (no space after a key's colon)"]
    with pytest.warns(ReleaseWarning, match="outage_glued_colon_fixture.yaml: line 19: repaired"):
        load_release_blueprints(RELEASE)  # by default, a Python warning


def test_a_broken_release_blueprint_is_skipped_with_a_warning(tmp_path):
    copy = tmp_path / "release"
    shutil.copytree(RELEASE, copy)
    unparsable = copy / "BLUEPRINTS" / "PCI_COLLISION" / "pci_fixture.yaml"
    unparsable.write_text("intent: PCI_COLLISION\nconstraints: [unclosed\n", encoding="utf-8")
    invalid = copy / "BLUEPRINTS" / "THROUGHPUT_DROP_DL" / "dl_drop_fixture.yaml"
    text = invalid.read_text(encoding="utf-8")
    invalid.write_text(text.replace("PRB_util:     { min: 0.7", "PRB_util: { min: -0.7"), "utf-8")
    messages: list[str] = []
    blueprints = load_release_blueprints(copy, messages.append)
    assert [b.blueprint_id for b in blueprints] == ["OUTAGE_GLUED_COLON_FIXTURE"]
    skipped = [m for m in messages if m.startswith("skipped ")]
    assert len(skipped) == 2 and all("\n" not in m for m in messages)
    assert f"skipped {unparsable}: line 3, column 1: invalid YAML" in skipped[0]
    assert f"skipped {invalid}: constraints.PRB_util: [-0.7, 0.9]" in skipped[1]


def test_a_file_that_parses_is_never_rewritten(tmp_path):
    """The repair only runs on a file YAML refuses: a glued colon inside a valid file (here in
    a quoted string) stays as it is."""
    copy = tmp_path / "release"
    shutil.copytree(RELEASE, copy)
    path = copy / "BLUEPRINTS" / "PCI_COLLISION" / "pci_fixture.yaml"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("notes: Fixture only.", 'notes: "see:{ this }"'), "utf-8")
    messages: list[str] = []
    blueprints = {b.blueprint_id: b for b in load_release_blueprints(copy, messages.append)}
    assert blueprints["PCI_FIXTURE"].notes == "see:{ this }"
    assert len(messages) == 1  # the glued-colon fixture only


def test_a_release_blueprint_runs_in_the_environment(catalog):
    from telcoenv.catalog import Catalog

    release = {b.blueprint_id: b for b in _quiet()}
    blueprints = {
        key: family + tuple(b for b in release.values() if b.intent == key)
        for key, family in catalog.blueprints.items()
    }
    # The blueprint model quotes the sample itself, so its mixture shows in the facts.
    catalogue = Catalog(catalog.categories, catalog.intents, blueprints, catalog.tools)
    domain = NetworkDomain(catalogue, model="blueprint")
    env = TelcoEnv("pci_collision", blueprint="PCI_FIXTURE", domain=domain, embedder=None)
    overlaps = []
    for seed in range(200):
        env.reset(seed=seed)
        overlaps.append(env.trace.facts["neighbor_pci_overlap"])
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


@pytest.mark.filterwarnings("ignore::telcoenv.errors.ReleaseWarning")  # the later calls
def test_rescore_cli(capsys):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["rescore", str(RELEASE)]) == 0
    out, err = capsys.readouterr()
    assert "3 blueprints load" in out and "all equal to the stored values" in out
    # the repair is reported, as a line on stderr or as a ReleaseWarning
    reported = err + "".join(str(w.message) for w in caught if w.category is ReleaseWarning)
    assert "outage_glued_colon_fixture.yaml: line 19: repaired invalid YAML" in reported
    assert "| granite3.1-moe:3b | ar | 3 |" in out
    assert main(["rescore", str(RELEASE), "--format", "json", "--weights", "paper"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["weights"] == [0.5, 0.3, 0.2]
    assert main(["rescore", str(RELEASE / "nowhere")]) == 2
    assert "nowhere: <root>: no such release folder" in capsys.readouterr().err
    assert main(["rescore", str(RELEASE / "nowhere"), "--no-blueprints"]) == 2
    assert "nowhere: <root>: no such release folder" in capsys.readouterr().err


# --- malformed release files: one CatalogError naming the file and the field, never a traceback

PCI_RECORD = Path(
    "TelcoAgent-Metrics/PCI_COLLISION/PCI_FIXTURE/PCI_COLLISION-PCI_FIXTURE-S0001.json"
)
PCI_SAMPLE = Path("TelcoAgent-Bench/PCI_COLLISION/PCI_FIXTURE/PCI_COLLISION-PCI_FIXTURE-S0001.json")


def _release_with(tmp_path: Path, relative: Path, content: bytes | Callable[[dict], Any]) -> Path:
    """A copy of the fixture release whose file ``relative`` holds ``content``: bytes, or the
    file's JSON changed in place by a function."""
    copy = tmp_path / "release"
    shutil.copytree(RELEASE, copy)
    path = copy / relative
    if callable(content):
        data = json.loads(path.read_text(encoding="utf-8"))
        content(data)
        content = json.dumps(data).encode()
    path.write_bytes(content)
    return copy


def _setting(*keys: str, value: Any) -> Callable[[dict], None]:
    """A change of the JSON: ``keys`` lead to the value to set."""

    def change(data: dict) -> None:
        for key in keys[:-1]:
            data = data[key]
        data[keys[-1]] = value

    return change


# (file content, JSON path of the field, what is wrong)
MALFORMED_RECORDS = {
    "not UTF-8": (b"\xff\xfe{}", "byte 0", "not UTF-8 text"),
    "an array": (b"[]", "", "expected an object, got an array"),
    "no Tool": (b"{}", "Tool", "missing"),
    "null gold chain": (
        _setting("Tool", "GroundTruth", value=None),
        "Tool.GroundTruth",
        "expected an array, got null",
    ),
    "gold chain of integers": (
        _setting("Tool", "GroundTruth", value=[1, 2]),
        "Tool.GroundTruth.0",
        "expected a string, got a number",
    ),
    "text score": (
        _setting("Tool", "Score", "llama3:8b", "En", "MSC", value="high"),
        "Tool.Score.llama3:8b.En.MSC",
        "expected a number, got a string",
    ),
    "number for a chain": (
        _setting("Tool", "Predict", "llama3:8b", "En", value=5),
        "Tool.Predict.llama3:8b.En",
        "expected an array, got a number",
    ),
    "array of models": (
        _setting("Tool", "Predict", value=[1, 2]),
        "Tool.Predict",
        "expected an object, got an array",
    ),
    "number for the scores": (
        _setting("Tool", "Score", "llama3:8b", "En", value=0.5),
        "Tool.Score.llama3:8b.En",
        "expected an object, got a number",
    ),
    "predicted chain of integers": (  # under a tag split at its dot: the path rejoins it
        _setting("Tool", "Predict", "qwen2", "5:7b", "Ar", value=[1, 2, 3]),
        "Tool.Predict.qwen2.5:7b.Ar.0",
        "expected a string, got a number",
    ),
    "text intent score": (
        _setting("Intent", "Score", "WithList", "llama3:8b", "En", value="1.0"),
        "Intent.Score.WithList.llama3:8b.En",
        "expected a number, got a string",
    ),
}


@pytest.mark.parametrize(
    ("content", "field", "problem"), MALFORMED_RECORDS.values(), ids=MALFORMED_RECORDS
)
def test_a_malformed_evaluation_record_is_a_catalog_error_naming_file_and_field(
    tmp_path, content, field, problem
):
    """Not skipped like a broken blueprint: dropping a record would change the means."""
    copy = _release_with(tmp_path, PCI_RECORD, content)
    with pytest.raises(CatalogError) as caught:
        load_evaluations(copy)
    error = caught.value
    assert (error.file, error.field) == (str(copy / PCI_RECORD), field)
    assert problem in error.problem
    assert str(error).startswith(f"{copy / PCI_RECORD}: ") and "\n" not in str(error)


MALFORMED_SAMPLES = {
    "an array": (b"[1]", "", "expected an object, got an array"),
    "no intent": (_setting("intent", value=None), "intent", "expected a string, got null"),
    "a step without its tool": (
        _setting("gold_path", 1, value={"step": 2}),
        "gold_path.1.tool",
        "missing",
    ),
    "a null query": (_setting("query", value=None), "query", "expected an object, got null"),
}


@pytest.mark.parametrize(
    ("content", "field", "problem"), MALFORMED_SAMPLES.values(), ids=MALFORMED_SAMPLES
)
def test_a_malformed_sample_is_a_catalog_error_naming_file_and_field(
    tmp_path, content, field, problem
):
    copy = _release_with(tmp_path, PCI_SAMPLE, content)
    with pytest.raises(CatalogError) as caught:
        load_samples(copy)
    assert (caught.value.file, caught.value.field) == (str(copy / PCI_SAMPLE), field)
    assert problem in caught.value.problem


def test_a_release_without_records_names_its_metrics_folder(tmp_path):
    copy = tmp_path / "release"
    shutil.copytree(RELEASE, copy)
    for path in (copy / "TelcoAgent-Metrics").glob("*/*/*.json"):
        path.unlink()
    with pytest.raises(CatalogError, match="no evaluation records") as caught:
        load_evaluations(copy)
    assert caught.value.file == str(copy / "TelcoAgent-Metrics")


def test_records_without_predictions_name_where_they_come_from(tmp_path):
    copy = tmp_path / "release"
    shutil.copytree(RELEASE, copy)
    for path in (copy / "TelcoAgent-Metrics").glob("*/*/*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        data["Tool"]["Predict"] = {}
        path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(CatalogError, match="no evaluation record with predictions") as caught:
        rescore(load_evaluations(copy))  # as the command line calls it: records, not a folder
    assert caught.value.file == str(copy / "TelcoAgent-Metrics")
    with pytest.raises(CatalogError) as caught:
        rescore([])
    assert caught.value.file  # never an empty name


@pytest.mark.parametrize("load", [load_release_blueprints, load_samples, load_evaluations])
def test_a_release_folder_that_does_not_exist_is_named_as_such(tmp_path, load):
    with pytest.raises(CatalogError, match="no such release folder") as caught:
        load(tmp_path / "nowhere")
    assert caught.value.file == str(tmp_path / "nowhere")


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("not UTF-8", "<file>: byte 0: not UTF-8 text"),
        ("an array", "<file>: <root>: expected an object, got an array"),
        ("no Tool", "<file>: Tool: missing"),
        ("number for a chain", "<file>: Tool.Predict.llama3:8b.En: expected an array"),
        ("predicted chain of integers", "<file>: Tool.Predict.qwen2.5:7b.Ar.0: expected a"),
    ],
)
def test_rescore_cli_reports_a_malformed_record_in_one_line(capsys, tmp_path, case, expected):
    copy = _release_with(tmp_path, PCI_RECORD, MALFORMED_RECORDS[case][0])
    assert main(["rescore", str(copy), "--no-blueprints"]) == 2
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert len(lines) == 1 and "Traceback" not in err and not out, err
    assert lines[0].startswith(
        "telcoenv: error: " + expected.replace("<file>", str(copy / PCI_RECORD))
    )


def test_rescore_cli_tells_a_missing_release_from_a_missing_blueprints_folder(capsys, tmp_path):
    for argv in (
        ["rescore", str(tmp_path / "nowhere")],
        ["rescore", str(tmp_path / "nowhere"), "--no-blueprints"],
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err == f"telcoenv: error: {tmp_path / 'nowhere'}: <root>: no such release folder\n"
    copy = tmp_path / "release"
    shutil.copytree(RELEASE, copy)
    shutil.rmtree(copy / "BLUEPRINTS")
    assert main(["rescore", str(copy)]) == 2
    err = capsys.readouterr().err
    assert (
        err
        == f"telcoenv: error: {copy / 'BLUEPRINTS'}: <root>: no BLUEPRINTS folder in the release\n"
    )
