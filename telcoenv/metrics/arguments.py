"""Argument accuracy: did the agent call the gold tools with the gold argument values?

For each gold call, the agent's call it is compared with is the *k*-th successful call of the
same tool when the gold chain calls that tool for the *k*-th time (a failed attempt followed by a
corrected retry is judged on the retry); when the agent made fewer successful calls, its last
attempt of that tool, valid or not; when it never called the tool, the gold call scores 0.

A gold call scores the share of its compared arguments the agent gave the same value: numbers
are equal to the cent (``15`` equals ``15.0``), strings exactly, dicts and lists element by
element. Arguments in the agent's own words (``GoldCall.free_text``: a ticket summary) are not
compared; a gold call with nothing to compare scores 1 when the tool was called.
Argument accuracy is the mean over the gold calls (``None`` for an empty gold chain).

>>> from telcoenv.trace import ActionRecord, GoldCall
>>> gold = [GoldCall(tool="get_bill", arguments={"account_id": "A1", "period": "2026-09"})]
>>> calls = [ActionRecord(step=1, kind="tool_call", tool="get_bill", valid=True, observation="",
...                       arguments={"account_id": "A1", "period": "2026-10"})]
>>> argument_accuracy(gold, calls)
0.5
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Real
from typing import Any

from telcoenv.trace import ActionRecord, GoldCall


def same_value(given: Any, gold: Any) -> bool:
    """Equality of argument values (numbers to the cent, containers element-wise)."""
    if isinstance(gold, bool) or isinstance(given, bool):
        return given is gold
    if isinstance(gold, Real) and isinstance(given, Real):
        return round(float(given), 2) == round(float(gold), 2)
    if isinstance(gold, dict) and isinstance(given, dict):
        return given.keys() == gold.keys() and all(same_value(given[k], gold[k]) for k in gold)
    if isinstance(gold, list) and isinstance(given, list):
        return len(given) == len(gold) and all(map(same_value, given, gold))
    return given == gold


def compared_arguments(gold: GoldCall) -> list[str]:
    """The arguments of a gold call that are compared (not those in the agent's own words)."""
    return [name for name in gold.arguments if name not in gold.free_text]


def wrong_arguments(gold: GoldCall, given: dict[str, Any] | None) -> list[str]:
    """The compared arguments ``given`` misses or gives another value."""
    given = given or {}
    return [
        name
        for name in compared_arguments(gold)
        if not (name in given and same_value(given[name], gold.arguments[name]))
    ]


def call_score(gold: GoldCall, call: ActionRecord | None) -> float:
    """The share of the gold call's compared arguments ``call`` gave right (0 without a call,
    1 when nothing is compared)."""
    if call is None:
        return 0.0
    compared = compared_arguments(gold)
    if not compared:
        return 1.0
    return (len(compared) - len(wrong_arguments(gold, call.arguments))) / len(compared)


def compared_calls(
    gold_chain: Sequence[GoldCall], actions: Sequence[ActionRecord]
) -> list[ActionRecord | None]:
    """For each gold call, the agent's call it is judged on (see the module docstring); None
    when the agent never called the tool."""
    calls = [a for a in actions if a.kind == "tool_call" and not a.remeasure]
    seen: dict[str, int] = {}
    found: list[ActionRecord | None] = []
    for gold in gold_chain:
        index = seen.get(gold.tool, 0)
        seen[gold.tool] = index + 1
        valid = [a for a in calls if a.tool == gold.tool and a.valid]
        tried = [a for a in calls if a.tool == gold.tool]
        found.append(valid[index] if index < len(valid) else tried[-1] if tried else None)
    return found


def argument_accuracy(
    gold_chain: Sequence[GoldCall], actions: Sequence[ActionRecord]
) -> float | None:
    """Mean argument score of the gold calls (see the module docstring)."""
    if not gold_chain:
        return None
    calls = compared_calls(gold_chain, actions)
    return sum(map(call_score, gold_chain, calls)) / len(gold_chain)
