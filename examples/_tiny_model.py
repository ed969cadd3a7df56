"""A tiny chat model built locally (no download): tokenizer, chat template, random Qwen2 weights.

Used by ``train_trl_grpo.py``. The tokenizer is a byte-level BPE trained in a fraction of a
second on telcoenv's own texts; the chat template is ChatML with Qwen-style tool calls
(``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``) and tool responses, and the
tokenizer carries the matching ``response_template`` so that ``tokenizer.parse_response`` (which
TRL uses) turns generated text back into tool calls. The template is prefix-preserving, as
TRL's multi-turn tool loop requires. To keep prompts short on a CPU, it lists each tool on one
line (name, parameters, description) instead of the full JSON schema that real templates render.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

PAD, BOS, EOS = "<|endoftext|>", "<|im_start|>", "<|im_end|>"
MARKUP = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]

CHAT_TEMPLATE = """\
{%- if messages and messages[0].role == 'system' -%}
  {{- '<|im_start|>system\\n' + messages[0].content -}}
  {%- set conversation = messages[1:] -%}
{%- else -%}
  {{- '<|im_start|>system\\nYou are a helpful assistant.' -}}
  {%- set conversation = messages -%}
{%- endif -%}
{%- if tools -%}
  {{- '\\n\\n# Tools\\nCall a tool with <tool_call>' -}}
  {{- '{"name": ..., "arguments": {...}}</tool_call>.' -}}
  {%- for tool in tools -%}
    {%- set function = tool.function if tool.function is defined else tool -%}
    {%- set parameters = function.parameters or {} -%}
    {%- set required = parameters.required or [] -%}
    {{- '\\n- ' + function.name + '(' -}}
    {%- for name, schema in (parameters.properties or {}).items() -%}
      {{- (', ' if not loop.first else '') + name + ('' if name in required else '?') + ': ' -}}
      {{- schema.enum | join('|') if schema.enum is defined else schema.type -}}
    {%- endfor -%}
    {{- '): ' + function.description -}}
  {%- endfor -%}
{%- endif -%}
{{- '<|im_end|>\\n' -}}
{%- for message in conversation -%}
  {%- if message.role == 'assistant' -%}
    {{- '<|im_start|>assistant\\n' + (message.content or '') -}}
    {%- for call in message.tool_calls or [] -%}
      {%- set call = call.function if call.function is defined else call -%}
      {{- '<tool_call>' + ({'name': call.name, 'arguments': call.arguments} | tojson) -}}
      {{- '</tool_call>' -}}
    {%- endfor -%}
    {{- '<|im_end|>\\n' -}}
  {%- elif message.role == 'tool' -%}
    {{- '<|im_start|>tool\\n<tool_response>' + message.content + '</tool_response><|im_end|>\\n' -}}
  {%- else -%}
    {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' -}}
  {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
  {{- '<|im_start|>assistant\\n' -}}
{%- endif -%}"""

# How transformers' parse_response reads a generated assistant turn of CHAT_TEMPLATE.
RESPONSE_TEMPLATE = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "tool_calls": {
            "open_pattern": r"\s*<tool_call>",
            "close": "</tool_call>",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close_pattern": r"\s*(?:<\|im_end\|>|<\|endoftext\|>)", "content": "text"},
    },
}


def build_tokenizer(corpus: Iterable[str], vocab_size: int = 2048) -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer trained on ``corpus``, with the chat template set."""
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[PAD, BOS, EOS, *MARKUP],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(corpus, trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, bos_token=BOS, eos_token=EOS, pad_token=PAD
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.response_template = RESPONSE_TEMPLATE
    return tokenizer


def build_model(tokenizer: PreTrainedTokenizerFast, seed: int) -> Qwen2ForCausalLM:
    """A randomly initialised two-layer Qwen2 model (about 0.2M parameters), seeded."""
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=96,
        intermediate_size=192,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model
