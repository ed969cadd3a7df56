"""examples/train_sft_cpu.py: the loss is on the assistant turns only, training lowers it, the
LoRA deltas are the merged weights' change, and the GGUF export adds them to the base's tensors
and copies everything else; test-split trajectories are refused. A tiny local model stands in
for Qwen2.5-Coder-0.5B (no download); the real run is benchmarks/bench_sft.py."""

from __future__ import annotations

import copy
import json
import sys

import numpy as np
import pytest

from telcoenv.splits import CANARY
from telcoenv.trajectories import write_trajectories
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.integration

torch = pytest.importorskip("torch")
pytest.importorskip("peft")
gguf = pytest.importorskip("gguf")
sys.path.insert(0, str(EXAMPLES))

import _tiny_model  # noqa: E402
import train_sft_cpu as sft  # noqa: E402


@pytest.fixture(scope="module")
def rows(tmp_path_factory) -> list[dict]:
    path = tmp_path_factory.mktemp("sft") / "train.jsonl"
    write_trajectories(
        path,
        samples=1,
        domains=("network",),
        langs=("en",),
        intents=["load_balancing_needed"],
        agents=["oracle"],
        tool_set="core",
        tool_format="compact",
    )
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


@pytest.fixture(scope="module")
def tiny(rows, tmp_path_factory):
    """A tiny Qwen2 model and tokenizer trained on the trajectories' text, saved as a folder."""
    texts = [json.dumps(row["tools"]) for row in rows]
    texts += [str(m.get("content") or "") for row in rows for m in row["messages"]]
    texts += [
        json.dumps(c) for row in rows for m in row["messages"] for c in m.get("tool_calls", [])
    ]
    tokenizer = _tiny_model.build_tokenizer(texts)
    model = _tiny_model.build_model(tokenizer, seed=0)
    folder = tmp_path_factory.mktemp("tiny-model")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder, model, tokenizer


def test_the_labels_are_the_assistant_turns_and_nothing_else(rows, tiny):
    _, _, tokenizer = tiny
    row = rows[0]
    ids, labels = sft.assistant_example(tokenizer, row["hf_messages"], row["tools"])
    assert len(ids) == len(labels)
    said = tokenizer.decode(
        [i for i, label in zip(ids, labels, strict=True) if label != sft.IGNORE]
    )
    assistant = [m for m in row["hf_messages"] if m["role"] == "assistant"]
    assert said.count("<|im_end|>") == len(assistant)
    calls = [c["function"]["name"] for m in assistant for c in m.get("tool_calls") or []]
    assert calls[-1] == "submit_resolution"
    assert [name for name in calls if f'"{name}"' in said] == calls
    told = [m["content"] for m in row["hf_messages"] if m["role"] in ("system", "user", "tool")]
    assert not any(text[:40] in said for text in told if text)  # context, never a target
    assert "<|im_start|>assistant" not in said  # the header is the prompt's


def test_training_lowers_the_loss_and_keeps_the_adapter_and_curve(rows, tiny, tmp_path):
    folder, _, _ = tiny
    path = tmp_path / "train.jsonl"
    path.write_text(json.dumps(rows[0]) + "\n", encoding="utf-8")
    out = tmp_path / "run"
    argv = ["--model-dir", str(folder), "--trajectories", str(path), "--out", str(out)]
    assert sft.main([*argv, "--epochs", "8", "--lr", "0.01", "--layers", "0"]) == 0
    curve = [json.loads(line) for line in (out / "curve.jsonl").read_text().splitlines()]
    assert [point["step"] for point in curve] == list(range(1, 9))
    assert curve[-1]["loss"] < curve[0]["loss"] - 0.5  # 7.2 -> 6.5 when written
    assert (out / "adapter" / "adapter_config.json").exists()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 8 and summary["trajectories"] == 1
    assert (
        sft.main([*argv, "--epochs", "8", "--max-steps", "3"]) == 0
    )  # a fresh curve, cut at three steps
    assert len((out / "curve.jsonl").read_text().splitlines()) == 3


def test_an_adapter_trains_on_where_it_stopped(rows, tiny, tmp_path):
    """--adapter continues an earlier run's adapter (a rejection-sampling round): its first loss
    is the first run's last, not the untrained model's, and only the adapter's weights train."""
    folder, _, _ = tiny
    path = tmp_path / "train.jsonl"
    path.write_text(json.dumps(rows[0]) + "\n", encoding="utf-8")
    first, second = tmp_path / "first", tmp_path / "second"
    argv = ["--model-dir", str(folder), "--trajectories", str(path), "--lr", "0.01"]
    assert sft.main([*argv, "--out", str(first), "--epochs", "6", "--layers", "0"]) == 0
    assert sft.main([*argv, "--out", str(second), "--epochs", "2", "--adapter",
                     str(first / "adapter")]) == 0  # fmt: skip
    curve = [json.loads(line) for line in (first / "curve.jsonl").read_text().splitlines()]
    again = [json.loads(line) for line in (second / "curve.jsonl").read_text().splitlines()]
    assert again[0]["loss"] < curve[0]["loss"] - 0.3
    assert abs(again[0]["loss"] - curve[-1]["loss"]) < abs(again[0]["loss"] - curve[0]["loss"])
    config = json.loads((second / "adapter" / "adapter_config.json").read_text())
    assert config["layers_to_transform"] is None  # the first run's: every layer


def test_the_loss_on_kept_logits_is_the_models_own_loss(rows, tiny):
    _, model, tokenizer = tiny
    ids, labels = sft.assistant_example(tokenizer, rows[0]["hf_messages"], rows[0]["tools"])
    with torch.no_grad():
        ours = sft.assistant_loss(model, ids, labels)
        theirs = model(input_ids=torch.tensor([ids]), labels=torch.tensor([labels])).loss
    assert ours.item() == pytest.approx(theirs.item(), rel=1e-5)


def test_test_split_trajectories_are_refused(rows, tmp_path):
    path = tmp_path / "test.jsonl"
    path.write_text(json.dumps({**rows[0], "split": "test", "canary": CANARY}) + "\n")
    with pytest.raises(SystemExit, match="test-split"):
        sft.read_trajectories(path)


def test_the_lora_deltas_are_what_merging_changes(tiny):
    _, model, _ = tiny
    tuned = sft.with_lora(copy.deepcopy(model), rank=4, layers=1)
    generator = torch.Generator().manual_seed(1)
    for name, parameter in tuned.named_parameters():
        if "lora_B" in name:
            parameter.data = torch.randn(parameter.shape, generator=generator)
    deltas = sft.lora_deltas(tuned)
    top = model.config.num_hidden_layers - 1
    assert sorted(deltas) == sorted(f"blk.{top}.{name}.weight" for name in sft.TARGETS.values())
    merged = copy.deepcopy(tuned).merge_and_unload().state_dict()
    base = model.state_dict()
    for hf_name, gguf_name in sft.TARGETS.items():
        key = f"model.layers.{top}.{hf_name}.weight"
        change = (merged[key] - base[key]).numpy()
        assert np.abs(change).max() > 0.01
        np.testing.assert_allclose(deltas[f"blk.{top}.{gguf_name}.weight"], change, atol=1e-5)


def test_the_gguf_export_adds_the_deltas_and_copies_the_rest(tmp_path):
    rng = np.random.default_rng(0)
    base_path, out_path = tmp_path / "base.gguf", tmp_path / "tuned.gguf"
    embedding = rng.standard_normal((16, 64)).astype(np.float32)
    query = rng.standard_normal((32, 64)).astype(np.float32)
    writer = gguf.GGUFWriter(base_path, "qwen2")
    writer.add_name("tiny")
    writer.add_context_length(128)
    writer.add_token_list(["a", "b", "c"])
    writer.add_chat_template("{{ messages }}")
    writer.add_tensor("token_embd.weight", embedding)
    q8 = gguf.quants.quantize(query, gguf.GGMLQuantizationType.Q8_0)
    writer.add_tensor("blk.0.attn_q.weight", q8, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    delta = rng.standard_normal((32, 64)).astype(np.float32) * 0.1
    sft.export_gguf(base_path, {"blk.0.attn_q.weight": delta}, out_path)

    base, tuned = gguf.GGUFReader(base_path), gguf.GGUFReader(out_path)
    for key in ("general.name", "qwen2.context_length", "tokenizer.ggml.tokens"):
        assert tuned.get_field(key).contents() == base.get_field(key).contents()
    assert tuned.get_field("tokenizer.chat_template").contents() == "{{ messages }}"
    by_name = {t.name: t for t in tuned.tensors}
    np.testing.assert_array_equal(by_name["token_embd.weight"].data, embedding)
    changed = by_name["blk.0.attn_q.weight"]
    assert changed.tensor_type == gguf.GGMLQuantizationType.Q8_0
    before = gguf.quants.dequantize(q8, gguf.GGMLQuantizationType.Q8_0)
    after = gguf.quants.dequantize(changed.data, changed.tensor_type).reshape(32, 64)
    np.testing.assert_allclose(after, before + delta, atol=0.03)
    with pytest.raises(ValueError, match="no tensors"):
        sft.export_gguf(base_path, {"blk.9.attn_q.weight": delta}, tmp_path / "x.gguf")


def test_per_turn_loss_weighs_each_assistant_turn_alike(rows, tiny):
    """--loss turns: each turn's mean, averaged over turns (hand-computed against the token
    losses); a turn is a run of labelled positions."""
    assert sft.turn_weights([3, 4, 5, 9, 10, 20]) == [1 / 3] * 3 + [1 / 2] * 2 + [1.0]
    _, model, tokenizer = tiny
    ids, labels = sft.assistant_example(tokenizer, rows[0]["hf_messages"], rows[0]["tools"])
    targets = [p for p in range(1, len(ids)) if labels[p] != sft.IGNORE]
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0]
        token = torch.nn.functional.cross_entropy(
            logits[[p - 1 for p in targets]],
            torch.tensor([ids[p] for p in targets]),
            reduction="none",
        ).tolist()
        per_turn = sft.assistant_loss(model, ids, labels, per_turn=True).item()
    turns, start = [], 0
    for index in range(1, len(targets) + 1):
        if index == len(targets) or targets[index] != targets[index - 1] + 1:
            turns.append(sum(token[start:index]) / (index - start))
            start = index
    assistant = [m for m in rows[0]["hf_messages"] if m["role"] == "assistant"]
    assert len(turns) == len(assistant)
    assert per_turn == pytest.approx(sum(turns) / len(turns), rel=1e-5)


def test_balancing_keeps_as_many_of_each_intent_as_the_rarest():
    rows = [{"intent": "A", "i": i} for i in range(5)] + [{"intent": "B", "i": i} for i in range(2)]
    kept = sft.balanced(rows, seed=0)
    assert sorted(r["intent"] for r in kept) == ["A", "A", "B", "B"]
    assert kept == sft.balanced(rows, seed=0)  # seeded
    assert {r["i"] for r in kept if r["intent"] == "B"} == {0, 1}
