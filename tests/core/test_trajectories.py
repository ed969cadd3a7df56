"""Expert trajectories (telcoenv.trajectories, telcoenv generate --trajectories): resolved
train-split episodes of the experts as OpenAI, Hugging Face and chat-template transcripts that
replay to their metrics; the same arguments write the same file."""

from __future__ import annotations

import json

import pytest

import telcoenv
from telcoenv import splits
from telcoenv.cli import main
from telcoenv.domains import get_domain
from telcoenv.trajectories import hf_messages, write_trajectories
from telcoenv.wrappers import replay


@pytest.fixture(scope="module")
def care_rows(tmp_path_factory) -> tuple[list[dict], bytes]:
    path = tmp_path_factory.mktemp("trajectories") / "care.jsonl"
    count = write_trajectories(path, samples=1, domains=("bss",), langs=("en", "ar"))
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    assert count == len(rows)
    return rows, path.read_bytes()


def test_every_row_is_a_resolved_train_episode_of_an_expert_in_both_languages(care_rows):
    rows, _ = care_rows
    catalog = get_domain("bss").catalog
    families = [[b.blueprint_id for b in family] for family in catalog.blueprints.values()]
    train = {
        (b, i) for ids in families for b in ids for i in splits.split_samples(b, ids, "train", 1)
    }
    assert {(r["agent"], r["lang"]) for r in rows} == {
        (agent, lang) for agent in ("oracle", "care_investigator") for lang in ("en", "ar")
    }
    for row in rows:
        assert row["resolved"] is True and row["split"] == "train" and "canary" not in row
        assert (row["blueprint"], row["sample_index"]) in train
        assert row["metrics"]["sas"] is not None


def test_the_transcripts_are_openai_hugging_face_and_chat_template_text(care_rows):
    rows, _ = care_rows
    row = next(r for r in rows if r["agent"] == "care_investigator" and r["lang"] == "ar")
    messages, hf = row["messages"], row["hf_messages"]
    assert [m["role"] for m in messages][:2] == ["system", "user"]
    calls = [c for m in messages for c in m.get("tool_calls", [])]
    answered = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert calls and [c["id"] for c in calls] == answered
    assert all(isinstance(c["function"]["arguments"], str) for c in calls)
    hf_calls = [c for m in hf for c in m.get("tool_calls", [])]
    assert [json.loads(c["function"]["arguments"]) for c in calls] == [
        c["function"]["arguments"] for c in hf_calls
    ]
    text = row["text"]
    turns = text.split("<|im_end|>\n", 1)[1]  # after the system turn, which shows the format
    assert turns.count("<tool_call>") == len(calls)
    assert turns.count("<tool_response>") == len(calls)
    assert text.startswith("<|im_start|>system\n") and text.endswith("<|im_end|>\n")
    assert messages[1]["content"] in text  # the Arabic opening, as said
    assert (
        hf_messages([{"role": "assistant", "tool_calls": [{"function": {"arguments": "[1]"}}]}])[0][
            "tool_calls"
        ][0]["function"]["arguments"]
        == "[1]"
    )  # no object: kept as it was


def test_a_row_replays_to_its_metrics_and_the_file_is_the_same_again(care_rows, tmp_path):
    rows, first = care_rows
    row = rows[0]
    env = telcoenv.make("customer_care", embedder=None, split="train")
    assert replay(row, env) == row["metrics"]
    again = tmp_path / "again.jsonl"
    write_trajectories(again, samples=1, domains=("bss",), langs=("en", "ar"))
    assert again.read_bytes() == first


def test_the_command_writes_them_and_refuses_a_folder(tmp_path, capsys):
    out = tmp_path / "test.jsonl"
    args = ["generate", "--trajectories", "--samples", "1", "--domain", "bss"]
    assert main([*args, "--split", "test", "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert rows and all(r["split"] == "test" and r["canary"] == splits.CANARY for r in rows)
    capsys.readouterr()
    assert main([*args, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "give the .jsonl file" in err and len(err.strip().splitlines()) == 1


def test_the_flags_narrow_the_set_to_what_the_agent_will_be_offered(tmp_path, capsys):
    """--intents, --agents, --tool-set, --tool-format: one intent's oracle episodes, whose
    transcripts offer the core tools in the compact format (what a fine-tuned agent then plays
    with); unknown names and the flags without --trajectories are one-line usage errors."""
    out = tmp_path / "narrow.jsonl"
    args = ["generate", "--trajectories", "--samples", "1", "--domain", "network"]
    narrowing = ["--intents", "pci_collision", "--agents", "oracle"]
    shaping = ["--tool-set", "core", "--tool-format", "compact"]
    assert main([*args, *narrowing, *shaping, "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert rows and {(r["agent"], r["intent"]) for r in rows} == {("oracle", "PCI_COLLISION")}
    offered = telcoenv.make("pci_collision", embedder=None, tool_set="core", tool_format="compact")
    assert all(r["tools"] == offered.unwrapped.tools for r in rows)
    every_tool = telcoenv.make("pci_collision", embedder=None).unwrapped.tools
    assert len(rows[0]["tools"]) < len(every_tool)
    capsys.readouterr()
    for bad in (["--intents", "pci_colision"], ["--agents", "care_investigator"]):
        assert main([*args, *bad, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert bad[1] in err and len(err.strip().splitlines()) == 1
    assert main(["generate", "--tool-set", "core", "--out", str(tmp_path / "d")]) == 2
    assert "only with --trajectories" in capsys.readouterr().err


class _Unprivileged:
    """The network investigator under a name of its own (an agent that is no expert), which
    checks that it is told nothing an agent may not know."""

    def __init__(self, marker: str) -> None:
        from telcoenv.agents import InvestigatorAgent

        self.marker, self.inner = marker, InvestigatorAgent()

    def reset(self, observation, info):
        assert "privileged" not in info
        self.inner.reset(observation, info)

    def act(self, observation, info):
        return self.inner.act(observation, info)


def unprivileged(**options) -> _Unprivileged:
    return _Unprivileged(**options)


def test_another_agent_writes_its_resolved_episodes_for_rejection_sampling(tmp_path, capsys):
    """An agent that is no expert (a tuned model served to the openai agent, here a factory)
    plays unprivileged with its options, and only its resolved episodes are written: a
    rejection-sampling set. Options it does not take, and an expert of another domain, are
    one-line usage errors."""
    spec = "tests.core.test_trajectories:unprivileged"
    out = tmp_path / "rft.jsonl"
    args = ["generate", "--trajectories", "--samples", "2", "--domain", "network"]
    narrowing = ["--intents", "pci_collision,pingpong_handovers", "--agents", spec]
    assert main([*args, *narrowing, "--agent-options", '{"marker": "m"}', "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert rows and all(r["agent"] == spec and r["resolved"] for r in rows)
    assert {r["intent"] for r in rows} <= {"PCI_COLLISION", "PINGPONG_HANDOVERS"}
    assert all(r["split"] == "train" for r in rows)
    capsys.readouterr()
    assert main([*args, *narrowing, "--agent-options", '{"colour": 1}', "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "refused its options" in err and len(err.strip().splitlines()) == 1
    assert main([*args, "--agents", "care_investigator", "--out", str(out)]) == 2
    assert "play none of" in capsys.readouterr().err
