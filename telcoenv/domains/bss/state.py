"""The BSS data of one episode in the episode database, and the context BSS tools run in.

:class:`BssState` loads a :class:`~telcoenv.domains.bss.generator.BssData` into the environment's
:class:`~telcoenv.database.EpisodeDatabase` (one transaction per episode, like the network
domain) and gives tools bound-parameter access to it: :meth:`BssState.rows` runs a declarative
:class:`~telcoenv.database.Query` for this episode, :meth:`BssState.update` and
:meth:`BssState.insert` change rows inside ``state.db.change()`` (all or nothing; a change
the schema refuses is a ``rejected`` ToolError). The database is the one source of the current
state; the generated rows stay as the starting state that a verification can diff against.
Tools change rows only through :meth:`BssState.insert` and :meth:`BssState.update`, which note
the table in :attr:`BssState.written`: every other table still holds the generated rows, so a
verification diffs only the written ones. The generated rows are therefore not kept in memory
(:class:`PristineRows`): a table's rows are copied just before its first write, and every other
table is read from the database, where it stands as generated.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from telcoenv.database import EpisodeDatabase, Query, Schema
from telcoenv.domains.bss import billing
from telcoenv.domains.bss.billing import TODAY
from telcoenv.domains.bss.generator import BssData
from telcoenv.errors import ToolError

__all__ = [
    "IDENTITY_ATTEMPTS",
    "TODAY",
    "BssState",
    "IdentityCheck",
    "IdentitySession",
    "PristineRows",
]

#: Tables whose generated rows stay in memory: a dozen rows each, read at every reset (the
#: trace's summary of the caller) and by the end-of-episode checks of who owns what.
KEPT_TABLES = ("customers", "accounts", "lines")

#: Failed identity checks of one customer before the session locks them (the operator's rule;
#: docs/customer_care.md, "Identity and consent").
IDENTITY_ATTEMPTS = 3


@dataclass(frozen=True, slots=True)
class IdentityCheck:
    """One ``verify_identity`` call: what the caller stated and whether it matched."""

    customer_id: str
    full_name: str
    birth_date: str
    passed: bool


@dataclass(slots=True)
class IdentitySession:
    """The identity checks of one conversation. Kept beside the database, not in it: a check
    is no change to the customer's data (the final-state diff never sees it), and it lasts as
    long as the call."""

    checks: list[IdentityCheck] = field(default_factory=list)

    def verified(self, customer_id: str) -> bool:
        return any(c.passed and c.customer_id == customer_id for c in self.checks)

    def failures(self, customer_id: str) -> int:
        return sum(not c.passed and c.customer_id == customer_id for c in self.checks)

    def locked(self, customer_id: str) -> bool:
        """Too many failed checks, and none passed: no further check this session."""
        return not self.verified(customer_id) and self.failures(customer_id) >= IDENTITY_ATTEMPTS


class BssState:
    """Everything BSS tools may read or change in one episode."""

    def __init__(self, db: EpisodeDatabase, data: BssData, episode_id: str) -> None:
        # The generated data (with the caller's ids and the facts behind the answers) is only
        # loaded, not kept: tools find the caller by asking, like a real agent.
        self.db, self.episode_id = db, episode_id
        self.today = TODAY
        #: The tables written since the data was loaded (a superset of those that changed).
        self.written: set[str] = set()
        #: Rows written by changes that were kept (an undone change takes its rows back): the
        #: customer hears of a kept change (a confirmation SMS), not of a claimed one.
        self.kept_writes = 0
        #: Who the caller proved to be in this conversation (``verify_identity``).
        self.identity = IdentitySession()

        def load(db: EpisodeDatabase) -> None:
            for table, rows in data.rows.items():
                db.insert_values(table, rows)

        db.start_episode(load, episode_id)
        #: The episode's starting rows, copied on write (the generated ones need not be kept).
        self.pristine = PristineRows(db, episode_id, data.rows)

    def rows(self, query: Query, *keys: Any) -> list[dict[str, Any]]:
        """The rows of ``query`` for this episode (``keys``: the query's key values, bound)."""
        found = self.db.select(query, (self.episode_id, *keys))
        return [dict(zip(query.columns, row, strict=True)) for row in found]

    def one(self, query: Query, *keys: Any, missing: str) -> dict[str, Any]:
        """The single row of ``query``, or a ``not_found`` ToolError saying ``missing``."""
        found = self.rows(query, *keys)
        if not found:
            raise ToolError(missing, kind="not_found")
        return found[0]

    def amount_due(self, invoice: dict[str, Any]) -> float:
        """What an invoice still owes: its amount less its credit notes and settled payments."""
        invoice_id = invoice["invoice_id"]
        paid = sum(
            p["amount"]
            for p in self.rows(PAYMENTS_OF_INVOICE, invoice_id)
            if p["status"] == "settled"
        )
        return round(invoice["amount"] - self.credited(invoice_id) - paid + 1e-9, 2)

    def credited(self, invoice_id: str) -> float:
        """What the invoice's credit notes credit (a positive amount)."""
        return -sum(c["amount"] for c in self.rows(CREDITS_OF_INVOICE, invoice_id))

    def early_change_fee(
        self, line: dict[str, Any], plan: dict[str, Any]
    ) -> tuple[float, int] | None:
        """The early-change fee (VAT-exclusive) and its months of a move of ``line`` to ``plan``
        today (``billing.early_change_fee``), from the plan it held before today (a second
        change today is priced from the same plan as the first)."""
        held = self.rows(PLANS_OF_LINE, line["msisdn"])
        before = held[-2] if held[-1]["start_date"] == self.today and len(held) > 1 else held[-1]
        old = self.rows(PLAN, before["plan_id"])[0]
        return billing.early_change_fee(
            old["price_excl_vat"], plan["price_excl_vat"], line["commitment_end"], self.today
        )

    def insert(self, table: str, **values: Any) -> None:
        """Insert one row (the episode id is added); use inside ``db.change()``."""
        columns = self.db.columns(table)
        row = {"episode_id": self.episode_id, **values}
        self._written(table)
        self.db.insert_values(table, [tuple(row.get(c) for c in columns)])

    def update(self, table: str, key: str, key_value: Any, **values: Any) -> int:
        """Set ``values`` on the row whose ``key`` is ``key_value``; the number of rows changed."""
        self._written(table)
        changed = (
            self.db.update_column(
                table, name, value, episode_id=self.episode_id, key=key, key_value=key_value
            )
            for name, value in values.items()
        )
        return max(changed, default=0)

    def delete(self, table: str, key: str, key_value: Any) -> int:
        """Delete the row whose ``key`` is ``key_value``; use inside ``db.change()``."""
        self._written(table)
        return self.db.delete_row(table, episode_id=self.episode_id, key=key, key_value=key_value)

    def _written(self, table: str) -> None:
        self.pristine.before_write(table)
        self.written.add(table)
        self.kept_writes += 1
        self.db.on_undo(self._taken_back)

    def _taken_back(self) -> None:
        self.kept_writes -= 1

    def current_rows(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every table's rows as stored now, episode id first (the generator's row format)."""
        return {name: self.table_rows(name) for name in table_queries(self.db.schema)}

    def table_rows(self, table: str) -> list[tuple[Any, ...]]:
        """One table's rows as stored now, episode id first (the generator's row format)."""
        return stored_rows(self.db, self.episode_id, table)

    def reload(self, table: str, rows: Sequence[tuple[Any, ...]]) -> None:
        """Replace the episode's rows of ``table`` by ``rows`` (generator format); use inside
        ``db.change()``. Not noted as written: a verification puts the generated rows back."""

        prepared = self.db.statement(f"reload:{table}", lambda: self.db.delete_statement(table))
        self.db.execute(prepared, {"episode_id": self.episode_id})
        self.db.insert_values(table, rows)

    def rows_json(self) -> str:
        """Every table's rows as canonical JSON (for state diffs in tests and verification)."""
        tables = {
            table: sorted(json.dumps(row, sort_keys=True) for row in self.rows(query))
            for table, query in table_queries(self.db.schema).items()
        }
        return json.dumps(tables, sort_keys=True)


def stored_rows(db: EpisodeDatabase, episode_id: str, table: str) -> list[tuple[Any, ...]]:
    """One table's rows of an episode as stored now, episode id first (the generator's row
    format; SQLite gives a REAL column's whole numbers back as floats)."""
    query = table_queries(db.schema)[table]
    return [(episode_id, *row) for row in db.select(query, (episode_id,))]


class PristineRows(Mapping[str, list[tuple[Any, ...]]]):
    """The rows each table held when the episode was loaded, without keeping the customer base
    in memory twice (it was two thirds of an environment's memory): the small tables of
    :data:`KEPT_TABLES` as generated, a table written since as it stood just before its first
    write (:meth:`before_write`), any other table read from the database, where it still
    stands as generated. The order of a table's rows is the database's, not the generator's."""

    def __init__(
        self,
        db: EpisodeDatabase,
        episode_id: str,
        generated: Mapping[str, list[tuple[Any, ...]]],
    ) -> None:
        self._db, self._episode_id = db, episode_id
        self._tables = tuple(generated)
        self._copied = {t: generated[t] for t in KEPT_TABLES if t in generated}

    def before_write(self, table: str) -> None:
        """Copy ``table``'s rows unless copied already (called before every write: the first
        one finds the rows as loaded, and a copy outlives an undone change unchanged)."""
        if table not in self._copied:
            self._copied[table] = stored_rows(self._db, self._episode_id, table)

    def __getitem__(self, table: str) -> list[tuple[Any, ...]]:
        if table in self._copied:
            return self._copied[table]
        if table not in self._tables:
            raise KeyError(table)
        return stored_rows(self._db, self._episode_id, table)

    def __iter__(self) -> Iterator[str]:
        return iter(self._tables)

    def __len__(self) -> int:
        return len(self._tables)


@cache
def table_queries(schema: Schema) -> dict[str, Query]:
    """One query per table, every column but the episode id (built once: queries are cached
    per object by the database)."""
    return {name: Query(name, columns[1:]) for name, columns in schema.plan.columns.items()}


# --- the tools' queries (module constants: compiled once, cached by identity) -----------------

_CUSTOMER_COLUMNS = ("customer_id", "name", "birth_date", "segment", "language", "email", "phone")
CUSTOMER = Query("customers", (*_CUSTOMER_COLUMNS, "city"), keys=("customer_id",))
ACCOUNT_COLUMNS = ("account_id", "customer_id", "billing_day", "balance", "credit_limit", "status")
ACCOUNT = Query("accounts", ACCOUNT_COLUMNS, keys=("account_id",))
ACCOUNTS_OF_CUSTOMER = Query(
    "accounts", ACCOUNT_COLUMNS, keys=("customer_id",), order=("account_id",)
)
_LINE_COLUMNS = (
    "msisdn",
    "account_id",
    "plan_id",
    "payment",
    "status",
    "activated_on",
    "commitment_end",
)
LINE = Query("lines", _LINE_COLUMNS, keys=("msisdn",))
LINES_OF_ACCOUNT = Query("lines", _LINE_COLUMNS, keys=("account_id",), order=("msisdn",))
PLANS_OF_LINE = Query(
    "plan_history",
    ("history_id", "start_date", "plan_id", "end_date"),
    keys=("msisdn",),
    order=("start_date",),
)
HISTORY_COUNT = Query("plan_history", count="history_id")
_PLAN_COLUMNS = (
    "plan_id",
    "name_en",
    "name_ar",
    "payment",
    "segment",
    "price_excl_vat",
    "price",
    "data_gb",
    "voice_min",
    "sms",
    "min_age",
    "max_age",
)
PLAN = Query("rate_plans", _PLAN_COLUMNS, keys=("plan_id",))
PLANS = Query("rate_plans", _PLAN_COLUMNS, order=("plan_id",))
_ADDON_COLUMNS = (
    "addon_id",
    "name_en",
    "name_ar",
    "kind",
    "zone",
    "price_excl_vat",
    "price",
    "data_gb",
    "voice_min",
    "validity_days",
    "payment",
)
ADDON = Query("addons", _ADDON_COLUMNS, keys=("addon_id",))
ADDONS = Query("addons", _ADDON_COLUMNS, order=("addon_id",))
_SUBSCRIPTION_COLUMNS = (
    "subscription_id",
    "msisdn",
    "addon_id",
    "start_date",
    "end_date",
    "status",
)
SUBSCRIPTIONS_OF_LINE = Query(
    "line_addons", _SUBSCRIPTION_COLUMNS, keys=("msisdn",), order=("start_date", "subscription_id")
)
SUBSCRIPTION = Query("line_addons", _SUBSCRIPTION_COLUMNS, keys=("subscription_id",))
SUBSCRIPTION_COUNT = Query("line_addons", count="subscription_id")
_INVOICE_COLUMNS = (
    "invoice_id",
    "account_id",
    "period",
    "period_start",
    "period_end",
    "issued_at",
    "due_date",
    "amount_excl_vat",
    "vat",
    "amount",
    "status",
)
INVOICE = Query("invoices", _INVOICE_COLUMNS, keys=("invoice_id",))
INVOICES_OF_PERIOD = Query(
    "invoices", _INVOICE_COLUMNS, keys=("account_id", "period"), order=("issued_at", "invoice_id")
)
ITEMS_OF_INVOICE = Query(
    "invoice_items",
    ("item_id", "msisdn", "kind", "description", "amount_excl_vat"),
    keys=("invoice_id",),
    order=("item_id",),
)
PAYMENTS_OF_ACCOUNT = Query(
    "payments",
    (
        "payment_id",
        "invoice_id",
        "paid_at",
        "amount",
        "method",
        "channel",
        "card_last4",
        "card_expiry",
        "status",
        "failure_reason",
    ),
    keys=("account_id",),
    order=("paid_at", "payment_id"),
)
PAYMENTS_OF_INVOICE = Query(
    "payments",
    ("payment_id", "amount", "method", "card_last4", "card_expiry", "status", "failure_reason"),
    keys=("invoice_id",),
    order=("paid_at", "payment_id"),
)
PAYMENT_COUNT = Query("payments", count="payment_id")
CHARGES_OF_LINE = Query(
    "charges",
    ("charge_id", "charged_on", "kind", "description", "amount_excl_vat"),
    keys=("msisdn",),
    order=("charged_on", "charge_id"),
)
CHARGE_COUNT = Query("charges", count="charge_id")
INVOICES_OF_ACCOUNT = Query(
    "invoices", _INVOICE_COLUMNS, keys=("account_id",), order=("issued_at", "invoice_id")
)
PAYMENT_METHOD = Query(
    "payment_methods",
    ("account_id", "method", "channel", "card_last4", "card_expiry", "updated_on"),
    keys=("account_id",),
)
_CREDIT_COLUMNS = ("credit_note_id", "account_id", "invoice_id", "issued_at", "amount", "reason")
CREDITS_OF_ACCOUNT = Query(
    "credit_notes", _CREDIT_COLUMNS, keys=("account_id",), order=("issued_at", "credit_note_id")
)
CREDITS = Query("credit_notes", _CREDIT_COLUMNS, order=("issued_at", "credit_note_id"))
CREDITS_OF_INVOICE = Query("credit_notes", _CREDIT_COLUMNS, keys=("invoice_id",))
CREDIT_COUNT = Query("credit_notes", count="credit_note_id")
_USAGE_COLUMNS = ("month", "data_gb", "voice_min", "sms", "roaming_data_gb", "roaming_zone")
USAGE_OF_LINE = Query("usage_records", _USAGE_COLUMNS, keys=("msisdn",), order=("month",))
USAGE_OF_MONTH = Query("usage_records", _USAGE_COLUMNS, keys=("msisdn", "month"))
_GROUP_COLUMNS = ("group_id", "owner_account_id", "shared_data_gb")
GROUP = Query("family_groups", _GROUP_COLUMNS, keys=("group_id",))
GROUPS_OF_OWNER = Query(
    "family_groups", _GROUP_COLUMNS, keys=("owner_account_id",), order=("group_id",)
)
MEMBERS = Query("family_members", ("msisdn", "role"), keys=("group_id",), order=("msisdn",))
TICKET_COUNT = Query("tickets", count="ticket_id")
