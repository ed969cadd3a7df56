"""SQLAlchemy models of the operator's BSS data: customers, their lines, bills and usage.

Every table is keyed by ``episode_id`` first (see :mod:`telcoenv.database`). Money is in the
products' currency; ``amount`` columns are VAT-inclusive unless named ``_excl_vat``. Months are
``YYYY-MM`` strings; an invoice's ``period`` and a usage record's ``month`` name a billing
cycle, the one that starts on the account's billing day of that month (``billing.py``).
The data is production-like on purpose (see ``generator.py``): a double-fired invoice,
credit notes with negative amounts, internal test accounts, and usage that is ``NULL`` where
nothing was collected but ``0`` where the line used nothing.

Tables: ``customers``, ``accounts``, ``lines`` (subscriptions), ``plan_history``, ``rate_plans``
and ``addons`` (the products, per episode so queries can join it), ``line_addons``,
``invoices``, ``invoice_items``, ``payments``, ``credit_notes``, ``usage_records``,
``family_groups``, ``family_members`` and ``tickets``.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

from telcoenv.database import Schema

if TYPE_CHECKING:  # imported when the schema is built: a cached one needs no SQLAlchemy
    from sqlalchemy import Column, MetaData

_ID = 40


def _key(name: str) -> Column[str]:
    from sqlalchemy import Column, String

    return Column(name, String(_ID), primary_key=True)


@cache
def bss_metadata() -> MetaData:
    """The BSS schema (built once per process)."""
    from sqlalchemy import CheckConstraint, Column, Float, Integer, MetaData, String, Table

    metadata = MetaData(info={"name": "bss", "system": "the BSS"})
    Table(
        "customers",
        metadata,
        _key("episode_id"),
        _key("customer_id"),
        Column("name", String(120), nullable=False),
        Column("birth_date", String(10), nullable=False),
        Column(
            "segment",
            String(20),
            CheckConstraint("segment IN ('consumer', 'business', 'internal')"),
            nullable=False,
        ),
        Column("language", String(2), nullable=False),
        Column("email", String(120), nullable=False),
        Column("phone", String(20), nullable=False),
        Column("city", String(60), nullable=False),
    )
    Table(
        "accounts",
        metadata,
        _key("episode_id"),
        _key("account_id"),
        Column("customer_id", String(_ID), nullable=False),
        Column(
            "billing_day", Integer, CheckConstraint("billing_day BETWEEN 1 AND 28"), nullable=False
        ),
        Column("balance", Float, nullable=False),  # outstanding amount (prepaid: credit left)
        Column("credit_limit", Float, nullable=False),
        Column("status", String(20), nullable=False),
    )
    Table(
        "lines",
        metadata,
        _key("episode_id"),
        _key("msisdn"),
        Column("account_id", String(_ID), nullable=False),
        Column("plan_id", String(_ID), nullable=False),
        Column(
            "payment",
            String(10),
            CheckConstraint("payment IN ('prepaid', 'postpaid')"),
            nullable=False,
        ),
        Column(
            "status",
            String(20),
            CheckConstraint("status IN ('active', 'suspended', 'terminated')"),
            nullable=False,
        ),
        Column("activated_on", String(10), nullable=False),
        Column("commitment_end", String(10)),  # a commitment's last day; NULL: none signed
    )
    Table(  # one-off charges of the open cycle (an early-change fee), billed when it closes
        "charges",
        metadata,
        _key("episode_id"),
        _key("charge_id"),
        Column("msisdn", String(_ID), nullable=False),
        Column("charged_on", String(10), nullable=False),
        Column("kind", String(20), nullable=False),
        Column("description", String(120), nullable=False),
        Column("amount_excl_vat", Float, nullable=False),
    )
    Table(  # which plan a line was on, when (a plan change ends one row and starts another)
        "plan_history",
        metadata,
        _key("episode_id"),
        _key("history_id"),
        Column("msisdn", String(_ID), nullable=False),
        Column("start_date", String(10), nullable=False),
        Column("plan_id", String(_ID), nullable=False),
        Column("end_date", String(10)),  # the last day on the plan; NULL: the current plan
    )
    Table(
        "rate_plans",
        metadata,
        _key("episode_id"),
        _key("plan_id"),
        Column("name_en", String(80), nullable=False),
        Column("name_ar", String(80), nullable=False),
        Column("payment", String(10), nullable=False),
        Column("segment", String(20), nullable=False),
        Column("price_excl_vat", Float, nullable=False),
        Column("price", Float, nullable=False),
        Column("data_gb", Float),  # NULL: unlimited
        Column("voice_min", Integer),  # NULL: unlimited
        Column("sms", Integer),  # NULL: unlimited
        Column("min_age", Integer, nullable=False),
        Column("max_age", Integer),
    )
    Table(
        "addons",
        metadata,
        _key("episode_id"),
        _key("addon_id"),
        Column("name_en", String(80), nullable=False),
        Column("name_ar", String(80), nullable=False),
        Column("kind", String(20), nullable=False),
        Column("zone", String(20)),
        Column("price_excl_vat", Float, nullable=False),
        Column("price", Float, nullable=False),
        Column("data_gb", Float, nullable=False),
        Column("voice_min", Integer, nullable=False),
        Column("validity_days", Integer, nullable=False),
        Column("payment", String(20), nullable=False),  # "prepaid,postpaid"
    )
    Table(
        "line_addons",
        metadata,
        _key("episode_id"),
        _key("subscription_id"),
        Column("msisdn", String(_ID), nullable=False),
        Column("addon_id", String(_ID), nullable=False),
        Column("start_date", String(10), nullable=False),
        Column("end_date", String(10), nullable=False),
        Column("status", String(20), nullable=False),
    )
    Table(
        "invoices",
        metadata,
        _key("episode_id"),
        _key("invoice_id"),
        Column("account_id", String(_ID), nullable=False),
        Column("period", String(7), nullable=False),  # the billing cycle (billing.py)
        Column("period_start", String(10), nullable=False),  # the cycle's first day
        Column("period_end", String(10), nullable=False),  # and last day
        Column("issued_at", String(19), nullable=False),
        Column("due_date", String(10), nullable=False),
        Column("amount_excl_vat", Float, nullable=False),
        Column("vat", Float, nullable=False),
        Column("amount", Float, nullable=False),
        Column(
            "status",
            String(20),
            CheckConstraint("status IN ('issued', 'paid', 'overdue', 'disputed', 'credited')"),
            nullable=False,
        ),
    )
    Table(
        "invoice_items",
        metadata,
        _key("episode_id"),
        _key("item_id"),
        Column("invoice_id", String(_ID), nullable=False),
        Column("msisdn", String(_ID), nullable=False),
        Column("kind", String(20), nullable=False),  # plan, family, addon, overage, roaming, device
        Column("description", String(120), nullable=False),
        Column("amount_excl_vat", Float, nullable=False),
    )
    Table(
        "payments",
        metadata,
        _key("episode_id"),
        _key("payment_id"),
        Column("account_id", String(_ID), nullable=False),
        Column("invoice_id", String(_ID)),
        Column("paid_at", String(19), nullable=False),
        Column("amount", Float, nullable=False),
        Column("method", String(20), nullable=False),
        Column(
            "status",
            String(20),
            CheckConstraint("status IN ('settled', 'failed', 'reversed')"),
            nullable=False,
        ),
        Column("failure_reason", String(80)),
        Column("channel", String(20), nullable=False),  # autopay or online (products.yaml)
        Column("card_last4", String(4)),  # NULL: not a card (a direct debit)
        Column("card_expiry", String(7)),  # YYYY-MM, the card's last valid month; NULL: no card
    )
    Table(  # how an account pays: the method on file (postpaid accounts; prepaid ones top up)
        "payment_methods",
        metadata,
        _key("episode_id"),
        _key("account_id"),
        Column("method", String(20), nullable=False),  # card or direct_debit
        Column("channel", String(20), nullable=False),  # autopay or online
        Column("card_last4", String(4)),  # NULL: not a card
        Column("card_expiry", String(7)),  # YYYY-MM; NULL: not a card
        Column("updated_on", String(10)),  # the day it was last replaced; NULL: since opening
    )
    Table(
        "credit_notes",
        metadata,
        _key("episode_id"),
        _key("credit_note_id"),
        Column("account_id", String(_ID), nullable=False),
        Column("invoice_id", String(_ID)),
        Column("issued_at", String(19), nullable=False),
        Column("amount", Float, CheckConstraint("amount < 0"), nullable=False),  # negative
        Column("reason", String(120), nullable=False),
    )
    Table(
        "usage_records",
        metadata,
        _key("episode_id"),
        _key("msisdn"),
        _key("month"),
        Column("data_gb", Float),  # NULL: not collected (a mediation gap), 0: nothing used
        Column("voice_min", Integer),
        Column("sms", Integer),
        Column("roaming_data_gb", Float),
        Column("roaming_zone", String(20)),
    )
    Table(
        "family_groups",
        metadata,
        _key("episode_id"),
        _key("group_id"),
        Column("owner_account_id", String(_ID), nullable=False),
        Column("shared_data_gb", Float),  # the lines' plan allowances pooled; NULL: unlimited
    )
    Table(
        "family_members",
        metadata,
        _key("episode_id"),
        _key("group_id"),
        _key("msisdn"),
        Column("role", String(20), nullable=False),  # owner, member
    )
    Table(
        "tickets",
        metadata,
        _key("episode_id"),
        _key("ticket_id"),
        Column("customer_id", String(_ID), nullable=False),
        Column("category", String(40), nullable=False),
        Column("summary", String(2000), nullable=False),
        Column("status", String(20), nullable=False),
        Column("created_at", String(19), nullable=False),
    )
    for table in metadata.tables.values():
        table.dialect_options["sqlite"]["with_rowid"] = False
    return metadata


@cache
def bss_schema() -> Schema:
    """The schema as environments use it: its plan from the user's cache, its ``MetaData``
    (:func:`bss_metadata`) built only when a statement must be compiled."""
    return Schema("bss", bss_metadata)
