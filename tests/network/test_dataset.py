"""Dataset generation: the release's sample format, bilingual grounded dialogues, determinism."""

from __future__ import annotations

import hashlib
import json
import re
from itertools import pairwise
from pathlib import Path

from telcoenv.cli import main
from telcoenv.domains.network.dataset import generate
from telcoenv.domains.network.release import load_samples
from tests.conftest import ARABIC


def _digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*.json")):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def test_generate_writes_the_release_format_deterministically(tmp_path, catalog):
    assert generate(tmp_path / "a", samples=1, seed=3) == 49
    assert generate(tmp_path / "b", samples=1, seed=3) == 49
    assert _digest(tmp_path / "a") == _digest(tmp_path / "b")
    generate(tmp_path / "c", samples=1, seed=4)
    assert _digest(tmp_path / "a") != _digest(tmp_path / "c")
    samples = load_samples(tmp_path / "a")  # our own release loader reads it back
    assert len(samples) == 49
    by_intent = {s.intent: s for s in samples}
    for intent in catalog.intents:
        assert by_intent[intent.key].gold_chain == list(intent.gold_tools)
    path = next((tmp_path / "a" / "TelcoAgent-Bench" / "PCI_COLLISION").rglob("*.json"))
    record = json.loads(path.read_text())
    assert set(record) == {
        "id",
        "intent",
        "blueprint_id",
        "query",
        "dialogue",
        "gold_path",
        "flow_alignment",
        "gold_summary",
    }
    assert record["id"] == path.stem and record["id"].endswith("-S0004")  # seed 3 x 1 sample
    roles = [turn["role"] for turn in record["dialogue"]]
    assert roles[0] == "engineer" and all(a != b for a, b in pairwise(roles))
    assert [a["turn_index"] for a in record["flow_alignment"]] == [4, 6, 8]
    for alignment in record["flow_alignment"]:
        assert record["dialogue"][alignment["turn_index"] - 1]["role"] == "agent"
    # grounded: the ticket the tool opened is quoted in both languages
    last = record["dialogue"][-2]
    ticket = re.search(r"TT-\d{8}-\d{4}", last["message_en"]).group(0)
    assert ticket in last["message_ar"] and ARABIC.search(last["message_ar"])
    assert record["gold_path"][1]["args"]["changes"]["pci"] >= 0


def test_generate_jsonl_rows_for_trainers(tmp_path, capsys):
    assert (
        main(
            [
                "generate",
                "--samples",
                "1",
                "--format",
                "jsonl",
                "--out",
                str(tmp_path / "rows.jsonl"),
            ]
        )
        == 0
    )
    assert "98 chat rows" in capsys.readouterr().out
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert len(rows) == 98
    row = rows[1]
    assert row["lang"] == "ar" and row["prompt"][0]["role"] == "system"
    assert row["prompt"][1]["role"] == "user" and ARABIC.search(row["prompt"][1]["content"])
    assert row["env_id"] == "telcoenv/Troubleshooting-v0" and row["seed"] == 0
    assert {t["function"]["name"] for t in row["tools"]} >= {"oss_query", "submit_resolution"}
    assert row["answer"]["gold_chain"][0]["tool"] == rows[0]["answer"]["gold_chain"][0]["tool"]


def test_generate_plays_the_network_model_asked_for(tmp_path, capsys):
    """The default is the network model; ``--network-model blueprint`` writes the blueprint
    model's dataset, as the domain of that model generates it."""
    from telcoenv.domains import get_domain

    for model in ("physical", "blueprint"):
        argv = ["generate", "--samples", "1", "--out", str(tmp_path / model)]
        assert main([*argv, "--network-model", model]) == 0
    assert "49 samples" in capsys.readouterr().out
    assert main(["generate", "--samples", "1", "--out", str(tmp_path / "default")]) == 0
    assert _digest(tmp_path / "default") == _digest(tmp_path / "physical")
    assert _digest(tmp_path / "blueprint") != _digest(tmp_path / "physical")
    blueprint = get_domain("network", world_model="blueprint")
    blueprint.generate_dataset(tmp_path / "direct", 1, 0, "json")
    assert _digest(tmp_path / "direct") == _digest(tmp_path / "blueprint")
    capsys.readouterr()
    db = f"sqlite:///{tmp_path / 'results.sqlite'}"
    argv = ["evaluate", "--agent", "oracle", "--domain", "bss", "--samples", "1", "--db", db]
    assert main([*argv, "--network-model", "blueprint"]) == 2
    assert capsys.readouterr().err.strip() == (
        "telcoenv: error: --network-model applies to the network domain only"
    )
