"""Milestones and minefields: the events an intent requires or forbids, declared as data.

Each intent in ``intents.yaml`` may list ``milestones`` (events a good resolution contains: the
reads a NOC engineer or a care supervisor expects, a change that took effect, a re-measurement
after it) and ``minefields`` (events that must never happen: a change to a cell the engineer
did not report, another customer's data told to the caller). Every event names what it means
in words (``name``) and its kind (``event``):

* ``call``: a call of ``tool`` that ran, whose arguments include ``with`` (values compared
  case-insensitively for text; ``"{cell_id}"`` and the like are filled from the episode's
  values, as gold-chain arguments are);
* ``change``: the same, for a write that changed the world (a write of the value already there
  or a dry run changes nothing);
* ``remeasure``: a read that repeats an earlier read after a change (``with``: as for ``call``;
  ``tool``: any read when absent);
* any other kind is the domain's own (``Domain.event(kind, event, setup, trace)``): the network's
  ``unrelated_change``, care's ``unrelated_change`` and ``disclosure``.

Milestones feed the ``required_steps`` part of the reward (the share met), and a milestone marked
``required`` (the default) must be met for the episode to count as resolved: the evidence a
diagnosis rests on, the change or escalation that fixes it (a ticket with the right label and no
look at the cell is a guess, not a diagnosis). A minefield that happened leaves the episode
unresolved with no reward. They are checked once, at the end
(:func:`evaluate`), and shown with the trace (``Outcome.milestones``, ``Outcome.minefields``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from telcoenv.catalog import GENERIC_EVENT_KINDS, fill_gold_arguments
from telcoenv.specs import EventSpec

if TYPE_CHECKING:
    from telcoenv.trace import ActionRecord, EpisodeTrace

#: The kinds every domain has; a domain adds its own through ``Domain.event``.
GENERIC_KINDS = GENERIC_EVENT_KINDS


def filled(event: EventSpec, values: Mapping[str, Any]) -> EventSpec:
    """The event with its argument templates filled from the episode's values (as gold-chain
    arguments are; a template whose value the episode lacks stays as written)."""
    try:
        arguments = fill_gold_arguments(event.arguments, values)
    except (KeyError, ValueError, IndexError):
        arguments = dict(event.arguments)
    return event.model_copy(update={"arguments": arguments})


def _same(wanted: Any, given: Any) -> bool:
    if isinstance(wanted, str) and isinstance(given, str):
        return wanted.strip().casefold() == given.strip().casefold()
    if isinstance(wanted, bool) or isinstance(given, bool):
        return wanted is given
    if isinstance(wanted, int | float) and isinstance(given, int | float):
        return float(wanted) == float(given)
    return wanted == given


def _call_matches(event: EventSpec, record: ActionRecord) -> bool:
    if record.kind != "tool_call" or not record.valid:
        return False
    if event.tool is not None and record.tool != event.tool:
        return False
    given = record.arguments or {}
    return all(
        name in given and _same(value, given[name]) for name, value in event.arguments.items()
    )


def happened(event: EventSpec, trace: EpisodeTrace) -> bool:
    """Whether a generic event (``call``, ``change``, ``remeasure``) is in the trace."""
    records = trace.actions
    if event.event == "call":
        return any(_call_matches(event, r) for r in records)
    if event.event == "change":
        return any(_call_matches(event, r) and r.changed is not False for r in records)
    if event.event == "remeasure":
        return any(_call_matches(event, r) and r.remeasure for r in records)
    raise ValueError(f"{event.event!r} is not a generic event kind ({list(GENERIC_KINDS)})")


DomainCheck = Callable[[EventSpec], bool]


def evaluate(
    events: Iterable[EventSpec],
    trace: EpisodeTrace,
    values: Mapping[str, Any],
    domain_check: DomainCheck | None = None,
) -> dict[str, bool]:
    """Whether each event happened in the finished episode, by name (templates filled from
    ``values``; the domain's own kinds through ``domain_check``). A kind nobody knows counts
    as not happened: the catalogue refuses it when it is loaded."""
    results: dict[str, bool] = {}
    for event in events:
        event = filled(event, values)
        if event.event in GENERIC_KINDS:
            results[event.name] = happened(event, trace)
        else:
            results[event.name] = bool(domain_check(event)) if domain_check else False
    return results
