"""Verify a customer-care episode on the final state of its BSS database.

The reference is the gold chain replayed, not a hand-written rule per intent: the gold chain's
write calls run against the episode's generated data, and the changes they make (rows inserted,
deleted, columns updated) are the *expected* changes. The episode is resolved when the agent's
database shows exactly those changes (every expected change is there, nothing else changed) and,
when the customer asked a question, the submitted answer matches the gold answer (see
:mod:`telcoenv.metrics.answers`). Text in the agent's own words (a ticket summary, a credit
reason) is not compared.

The replay needs no second database: it runs on the episode's own, inside one change that is
undone afterwards, once the tables the agent wrote hold the generated rows again (every other
table never stopped holding them, see :attr:`BssState.written`). Both diffs read only the
written tables, a dozen rows, not the whole customer base.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from telcoenv.database import EpisodeDatabase, SchemaPlan
from telcoenv.domains.bss.generator import BssData
from telcoenv.domains.bss.schema import bss_schema
from telcoenv.domains.bss.state import BssState, IdentitySession
from telcoenv.errors import ToolError
from telcoenv.metrics.answers import AnswerVocabulary, answers_match
from telcoenv.trace import GoldCall

# Calls that change the conversation, not the data: replayed before the gold writes they allow.
SESSION_TOOLS = frozenset({"verify_identity"})
# Columns written from the agent's own words (``free_text`` parameters of the tool specs).
FREE_TEXT_COLUMNS = frozenset({("tickets", "summary"), ("credit_notes", "reason")})


class Check(BaseModel):
    name: str
    passed: bool
    detail: str


class CareVerdict(BaseModel):
    """The verdict on one care episode's final state (JSON-ready via ``model_dump``)."""

    resolved: bool  # fixed, answered and nothing else changed (the state's part)
    fixed: bool | None  # every expected change is there (None: the task changes nothing)
    answered: bool | None  # the answer matches the gold answer (None: no question)
    checks: list[Check]
    expected_changes: list[dict[str, Any]]
    collateral_changes: list[dict[str, Any]]
    # Changes beyond the expected ones that the written policy allows (not collateral).
    permitted_changes: list[dict[str, Any]] = []
    answer_correct: bool | None  # None: the customer asked no question


@dataclass(frozen=True)
class _Context:
    state: BssState
    step: int = 0


def _normal(value: Any) -> Any:
    return round(value, 2) if isinstance(value, float) else value


def _table_rows(
    plan: SchemaPlan, rows: Mapping[str, Iterable[tuple[Any, ...]]]
) -> dict[str, dict[tuple, dict[str, Any]]]:
    """Rows per table, keyed by primary key (the episode id left out)."""
    out: dict[str, dict[tuple, dict[str, Any]]] = {}
    for name, table_rows in rows.items():
        columns = plan.columns[name]
        keys = [c for c in plan.primary_keys[name] if c != "episode_id"]
        indexed: dict[tuple, dict[str, Any]] = {}
        for row in table_rows:
            record = {c: _normal(v) for c, v in zip(columns, row, strict=True)}
            record.pop("episode_id", None)
            indexed[tuple(record[k] for k in keys)] = record
        out[name] = indexed
    return out


def diff(
    before: Mapping[str, Iterable[tuple[Any, ...]]], after: Mapping[str, Iterable[tuple[Any, ...]]]
) -> list[dict[str, Any]]:
    """The changes from ``before`` to ``after``: inserted and deleted rows, updated columns."""
    plan = bss_schema().plan
    old, new = _table_rows(plan, before), _table_rows(plan, after)
    changes: list[dict[str, Any]] = []
    for table in sorted(new):
        rows_before, rows_after = old.get(table, {}), new[table]
        for key in sorted(set(rows_before) | set(rows_after), key=repr):
            was, now = rows_before.get(key), rows_after.get(key)
            where = {"table": table, "key": list(key)}
            if was is None:
                row = {c: v for c, v in now.items() if (table, c) not in FREE_TEXT_COLUMNS}
                changes.append({**where, "inserted": row})
            elif now is None:
                changes.append({**where, "deleted": was})
            else:
                for column in now:
                    if now[column] != was[column] and (table, column) not in FREE_TEXT_COLUMNS:
                        changes.append(
                            {**where, "column": column, "before": was[column], "after": now[column]}
                        )
    return changes


def stored_changes(state: BssState, data: BssData, tables: Iterable[str]) -> list[dict[str, Any]]:
    """The changes from the generated rows to the stored ones, in ``tables`` only (the others
    must hold the generated rows)."""
    names = sorted(tables)
    return diff({t: data.rows.get(t, ()) for t in names}, {t: state.table_rows(t) for t in names})


class _Undo(Exception):
    """Leaves a ``db.change()`` block so that everything done inside it is undone."""


@contextmanager
def _undone(db: EpisodeDatabase) -> Iterator[None]:
    """Everything the block changes is undone when it ends (an exception passes through)."""
    try:
        with db.change():
            yield
            raise _Undo
    except _Undo:
        pass


def _replayed(
    state: BssState,
    data: BssData,
    calls: list[GoldCall],
    write_tools: set[str],
    *,
    refused_ok: bool = False,
) -> list[dict[str, Any]]:
    """The changes ``calls`` make, replayed on the episode's database with its generated rows
    put back and in a session of their own; the database and the episode's session are left
    as they were. ``refused_ok``: a call the rules refuse is skipped (else it raises)."""
    from telcoenv.domains.bss.tools import TOOLS

    written, state.written = state.written, set()
    session, state.identity = state.identity, IdentitySession()
    try:
        with _undone(state.db):
            for table in sorted(written):
                state.reload(table, data.rows.get(table, ()))
            for call in calls:
                try:
                    TOOLS[call.tool](_Context(state), **call.arguments)
                except ToolError:
                    if not refused_ok:
                        raise
            return stored_changes(state, data, state.written)
    finally:
        state.written, state.identity = written, session


def _acting(calls: Iterable[GoldCall], write_tools: set[str]) -> list[GoldCall]:
    """The calls that change the data or the session; none when no call writes."""
    kept = [c for c in calls if c.tool in write_tools or c.tool in SESSION_TOOLS]
    return kept if any(call.tool in write_tools for call in kept) else []


def expected_changes(
    state: BssState, data: BssData, gold_chain: Iterable[GoldCall], write_tools: set[str]
) -> list[dict[str, Any]]:
    """The changes of the gold chain's write calls, replayed on the episode's database with its
    generated rows put back, after the chain's identity checks replayed in a session of their
    own; the database and the episode's session are left as they were."""
    calls = _acting(gold_chain, write_tools)
    return _replayed(state, data, calls, write_tools) if calls else []


def permitted_changes(
    state: BssState, data: BssData, permitted: Iterable[GoldCall], write_tools: set[str]
) -> list[dict[str, Any]]:
    """The changes the written policy allows beyond the intent's own (``policy.yaml``'s
    ``permits``: a dispute for a duplicate found in a balance enquiry), replayed alone; a call
    the rules refuse (an impostor's identity check) permits nothing."""
    calls = _acting(permitted, write_tools)
    return _replayed(state, data, calls, write_tools, refused_ok=True) if calls else []


def _refused_check(state: BssState, customer_id: str, name: str, birth_date: str) -> Check:
    """Whether the agent checked the identity the caller claimed and saw it fail."""
    from telcoenv.domains.bss.tools import names_match

    refused = any(
        not c.passed
        and c.customer_id == customer_id
        and c.birth_date == birth_date
        and names_match(c.full_name, name)
        for c in state.identity.checks
    )
    return Check(
        name="identity refused",
        passed=refused,
        detail=f"the caller claims {customer_id} as {name!r}, born {birth_date}: "
        + ("their details were checked and refused" if refused else "never checked"),
    )


def _describe(change: Mapping[str, Any]) -> str:
    where = f"{change['table']} {'/'.join(map(str, change['key']))}"
    if "inserted" in change:
        return f"{where} inserted"
    if "deleted" in change:
        return f"{where} deleted"
    return f"{where}.{change['column']}: {change['before']!r} -> {change['after']!r}"


def verify(
    state: BssState,
    data: BssData,
    gold_chain: Iterable[GoldCall],
    write_tools: set[str],
    gold_answer: str | None,
    submitted_answer: str | None,
    vocabulary: AnswerVocabulary | None = None,
    impostor: tuple[str, str, str] | None = None,
    permitted: Iterable[GoldCall] = (),
) -> CareVerdict:
    """Compare the episode's final database with the gold replay, and the answer with gold
    (judged with ``vocabulary``: display names of ids, phrasings of stored texts). With
    ``impostor`` (the customer id, name and birth date an impostor claims), the agent must also
    have checked those details and seen the check fail: changing nothing without asking is no
    defence against an account takeover, it is doing nothing. A change among ``permitted``'s
    (calls the written policy allows, :func:`permitted_changes`) is not collateral."""
    expected = expected_changes(state, data, gold_chain, write_tools)
    made = stored_changes(state, data, state.written)
    extra = [change for change in made if change not in expected]
    allowed = permitted_changes(state, data, permitted, write_tools) if extra else []
    checks = [
        Check(name=_describe(change), passed=change in made, detail="expected change")
        for change in expected
    ]
    if impostor is not None:
        checks.append(_refused_check(state, *impostor))
    collateral = [change for change in extra if change not in allowed]
    answer_correct = None
    if gold_answer is not None:
        answer_correct = submitted_answer is not None and answers_match(
            submitted_answer, gold_answer, vocabulary=vocabulary
        )
        checks.append(
            Check(
                name="answer",
                passed=answer_correct,
                detail=f"submitted {submitted_answer!r}, gold {gold_answer!r}",
            )
        )
    resolved = all(check.passed for check in checks) and not collateral
    # An impostor's episode is "fixed" when the takeover was refused (checked, and changed
    # nothing: a change would be collateral).
    changes = expected or impostor is not None
    fixed = all(check.passed for check in checks if check.name != "answer") if changes else None
    return CareVerdict(
        resolved=resolved,
        fixed=fixed,
        answered=answer_correct,
        checks=checks,
        expected_changes=expected,
        collateral_changes=collateral,
        permitted_changes=[change for change in extra if change in allowed],
        answer_correct=answer_correct,
    )
