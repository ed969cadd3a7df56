"""Expert trajectories for a supervised warm start: train-split episodes played by the reference
agents, as chat transcripts a trainer reads directly.

:func:`write_trajectories` plays every intent's train-split samples (each blueprint's first
``samples`` of the split; none of a held-out blueprint) in English and Arabic with each domain's
experts (the oracle, which follows the gold chain, and the domain's investigator, which reads
the tools and decides: ``investigator`` for the network, ``care_investigator`` for customer
care), records each episode with :class:`~telcoenv.wrappers.TrajectoryRecorder` and writes one
JSON line per episode with:

* ``messages``: the conversation in the OpenAI chat format (assistant ``tool_calls`` with JSON
  ``arguments`` strings, ``tool`` messages answering them by ``tool_call_id``);
* ``hf_messages``: the same in the Hugging Face chat-template format (``arguments`` as objects,
  as ``tokenizer.apply_chat_template(messages, tools=tools)`` takes them);
* ``text``: the whole conversation rendered by the Qwen2.5 chat template
  (:func:`telcoenv.tokens.chat_text`), tool calls in its own ``<tool_call>`` form;
* ``tools``, ``metrics``, ``resolved``, ``reward`` and the episode's address (``agent``,
  ``domain``, ``intent``, ``blueprint``, ``sample_index``, ``lang``, ``seed``, ``split``) and
  its replayable ``state``.

Only resolved episodes are written unless ``resolved_only=False``: a warm start should imitate
what works. The same arguments write the same file. A test-split file (for a held-out
comparison, never for training) carries :data:`telcoenv.splits.CANARY` in every line.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from telcoenv.agents import load_agent, run_episode
from telcoenv.domains import get_domain
from telcoenv.env import TelcoEnv
from telcoenv.errors import TelcoEnvError
from telcoenv.splits import CANARY, check_split, split_samples
from telcoenv.tokens import call_arguments, chat_text
from telcoenv.wrappers import TrajectoryRecorder, load_trajectories

__all__ = ["EXPERTS", "hf_messages", "write_trajectories"]

#: The reference agents whose episodes make the warm-start set, by domain.
EXPERTS: Mapping[str, tuple[str, ...]] = {
    "network": ("oracle", "investigator"),
    "bss": ("oracle", "care_investigator"),
}


def hf_messages(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI chat messages in the Hugging Face chat-template format: each tool call's
    ``arguments`` as an object (a string that is no JSON object stays as it is)."""
    converted = []
    for message in messages:
        message = dict(message)
        calls = message.get("tool_calls")
        if calls:
            message["tool_calls"] = [_hf_call(call) for call in calls]
        converted.append(message)
    return converted


def _hf_call(call: Mapping[str, Any]) -> dict[str, Any]:
    function = dict(call.get("function", {}))
    function["arguments"] = call_arguments(function.get("arguments"))
    return {**call, "function": function}


def _episodes(
    domain: str, samples: int, seed: int, split: str, intents: Sequence[str] | None
) -> Iterator[tuple[str, int]]:
    for key, family in get_domain(domain).catalog.blueprints.items():
        if intents is not None and key not in intents:
            continue
        ids = [b.blueprint_id for b in family]
        for blueprint_id in ids:
            for index in split_samples(blueprint_id, ids, split, samples, seed * samples):
                yield blueprint_id, index


def _intent_keys(intents: Sequence[str] | None, domains: Sequence[str]) -> set[str] | None:
    """The intents' keys (an env name or the key itself), each of one of ``domains``."""
    if intents is None:
        return None
    known = {key for domain in domains for key in get_domain(domain).catalog.blueprints}
    unknown = sorted(intent for intent in intents if intent.upper() not in known)
    if unknown:
        names = ", ".join(sorted(key.lower() for key in known))
        raise TelcoEnvError(f"intents {unknown} are not intents of {', '.join(domains)}: {names}")
    return {intent.upper() for intent in intents}


#: Every domain's experts: they take no options, and play only their own domain.
_EVERY_EXPERT = frozenset(name for names in EXPERTS.values() for name in names)


def _players(domain: str, agents: Sequence[str] | None) -> list[str]:
    """Who plays ``domain``: its experts (those of ``agents`` when given) and every agent of
    ``agents`` that is no domain's expert (an expert of another domain does not play it)."""
    if agents is None:
        return list(EXPERTS[domain])
    return [a for a in dict.fromkeys(agents) if a in EXPERTS[domain] or a not in _EVERY_EXPERT]


def _load(name: str, options: Mapping[str, Any]) -> Any:
    """An expert as it is (experts take no options), any other agent with ``options``."""
    if name in _EVERY_EXPERT:
        return load_agent(name)
    try:
        return load_agent(name, **options)
    except TypeError as exc:  # an option the agent does not take
        raise TelcoEnvError(f"agent {name!r} refused its options: {exc}") from None


def write_trajectories(
    path: str | os.PathLike[str],
    samples: int = 2,
    seed: int = 0,
    domains: Sequence[str] = ("network", "bss"),
    langs: Sequence[str] = ("en", "ar"),
    split: str = "train",
    resolved_only: bool = True,
    intents: Sequence[str] | None = None,
    agents: Sequence[str] | None = None,
    agent_options: Mapping[str, Any] | None = None,
    **env_kwargs: Any,
) -> int:
    """Write the expert trajectories (see the module docstring) to the JSONL file ``path``;
    returns how many episodes were written. ``intents`` and ``agents`` narrow the set (by
    default every intent of each domain, every expert); ``env_kwargs`` go to the environment
    (e.g. ``tool_set="core"``, ``tool_format="compact"``) so that the transcripts show the
    agent what it will be offered when it plays.

    ``agents`` may also name an agent that is no expert (``"openai"`` with ``agent_options``
    giving its server, or ``"module:factory"``): it plays every domain, unprivileged, and its
    resolved episodes make a rejection-sampling set (a tuned model's own successes, to train it
    again on). ``agent_options`` go to every agent named that is no expert."""
    split = check_split(split)
    keys = _intent_keys(intents, domains)
    if agents is not None and not agents:
        raise TelcoEnvError("agents is empty: name at least one, or None for every expert")
    players = {domain: _players(domain, agents) for domain in domains}
    idle = [a for a in agents or () if not any(a in names for names in players.values())]
    if idle:
        experts = {domain: list(EXPERTS[domain]) for domain in domains}
        raise TelcoEnvError(f"agents {idle} play none of {list(domains)}: its experts {experts}")
    options = dict(agent_options or {})
    for name in {name for names in players.values() for name in names}:
        _load(name, options)  # an unknown agent or a bad option fails before any episode
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with tempfile.TemporaryDirectory() as scratch, path.open("w", encoding="utf-8") as out:
        raw = Path(scratch) / "episodes.jsonl"
        for domain in domains:
            for agent_name in players[domain]:
                agent = _load(agent_name, options)
                for lang in langs:
                    env = TelcoEnv(
                        domain=domain,
                        lang=lang,
                        embedder=None,
                        privileged=agent_name == "oracle",
                        split=split,
                        **env_kwargs,
                    )
                    recorder = TrajectoryRecorder(env, raw)
                    for blueprint_id, index in _episodes(domain, samples, seed, split, keys):
                        options = {"blueprint": blueprint_id, "sample_index": index}
                        run_episode(recorder, agent, seed=seed, options=options)
                        [record] = load_trajectories(raw)
                        raw.unlink()
                        if resolved_only and not record["resolved"]:
                            continue
                        address = {
                            "agent": agent_name,
                            "domain": domain,
                            "blueprint": blueprint_id,
                            "sample_index": index,
                            "lang": lang,
                            "split": split,
                            **({"canary": CANARY} if split == "test" else {}),
                        }
                        row = {
                            **address,
                            **record,
                            "hf_messages": hf_messages(record["messages"]),
                            "text": chat_text(record["messages"], record["tools"]),
                        }
                        out.write(json.dumps(row, ensure_ascii=False) + "\n")
                        written += 1
                    recorder.close()
    return written
