"""Splits through the command line: an evaluation of one split names it in the store and the
report, is never resumed as another split's run, and a test-split dataset carries the canary."""

from __future__ import annotations

import json

from telcoenv import splits
from telcoenv.cli import main
from telcoenv.domains import get_domain
from telcoenv.evaluation.store import ResultStore

COMMON = ["--intents", "beam_misalignment", "--samples", "2", "--lang", "en", "--quiet"]


def _evaluate(url: str, split: str) -> int:
    return main(
        [
            "evaluate",
            "--agent",
            "oracle",
            "--embedder",
            "none",
            "--db",
            url,
            *COMMON,
            "--split",
            split,
        ]
    )


def test_an_evaluation_of_the_test_split_is_stored_and_reported_as_one(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'split.sqlite'}"
    assert _evaluate(url, "test") == 0
    records = ResultStore(url).records(["oracle-seed0"])
    family = [b.blueprint_id for b in get_domain("network").catalog.blueprints["BEAM_MISALIGNMENT"]]
    assert len(records) == 2 * len(family)  # every blueprint has test samples
    for record in records:
        assert record["split"] == "test" and record["resolved"] is True
    assert main(["report", "--db", url, "--run", "oracle-seed0"]) == 0
    report = capsys.readouterr().out
    assert "| run | split | episodes |" in report and "| oracle-seed0 | test |" in report
    # The same run name with the other split is another run: refused, nothing played.
    assert _evaluate(url, "train") == 2
    assert "split" in capsys.readouterr().err
    assert len(ResultStore(url).records(["oracle-seed0"])) == len(records)


def test_a_test_split_dataset_carries_the_canary_in_every_row(tmp_path, capsys):
    out = tmp_path / "rows.jsonl"
    args = ["generate", "--samples", "1", "--format", "jsonl", "--out", str(out)]
    assert main([*args, "--split", "test"]) == 0
    rows = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert rows and all(r["canary"] == splits.CANARY and r["split"] == "test" for r in rows)
    assert splits.CANARY in out.read_text("utf-8")
    assert main([*args, "--split", "train"]) == 0
    assert splits.CANARY not in out.read_text("utf-8")
