"""Implementations of the BSS customer-care tools: one typed function per ``tools/<name>.json``
spec whose ``x-telcoenv.domain`` is ``bss``.

Each function receives a context with ``.state`` (a :class:`~telcoenv.domains.bss.state.BssState`)
and ``.step``, and the arguments, and returns a JSON-ready dict. Reads return what the BSS stores,
artefacts included (a double-fired invoice, ``null`` usage, negative credit notes): noticing them
is the agent's job. Writes check the business rules first and change the database inside
``state.db.change()``, so a refused call changes nothing. A refused call raises
:class:`~telcoenv.errors.ToolError`: ``not_found`` naming the unknown id, ``bad_args`` for a
malformed value, ``rejected`` for a business rule, each with a precise message. Tool arguments
reach SQL only as bound parameters (the :class:`~telcoenv.database.Query` constants of
``state.py``).

Reads whose output grows with the data (``get_bill``, ``get_payment_history``, ``list_plans``)
take ``detail``: ``"summary"`` (the default) returns a bounded summary, with a ``truncated``
field saying what was left out and how to get it; ``"full"`` returns every row.

Formatted arguments (line numbers, email addresses, phone numbers, months and dates) are checked
whole against the ``pattern`` of their spec, read from the spec itself, so the JSON Schema and
the implementation cannot drift apart: no trailing newline, no control or invisible character.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import unicodedata
from typing import Any, Protocol

from telcoenv.database import Query
from telcoenv.datafiles import data_root
from telcoenv.domains.bss import billing, handbook
from telcoenv.domains.bss.catalogue import products
from telcoenv.domains.bss.generator import arabic_name, transient_failures
from telcoenv.domains.bss.state import (
    ACCOUNT,
    ACCOUNT_COLUMNS,
    ACCOUNTS_OF_CUSTOMER,
    ADDON,
    ADDONS,
    CHARGE_COUNT,
    CHARGES_OF_LINE,
    CREDIT_COUNT,
    CREDITS,
    CREDITS_OF_ACCOUNT,
    CUSTOMER,
    GROUP,
    GROUPS_OF_OWNER,
    HISTORY_COUNT,
    IDENTITY_ATTEMPTS,
    INVOICE,
    INVOICES_OF_ACCOUNT,
    INVOICES_OF_PERIOD,
    ITEMS_OF_INVOICE,
    LINE,
    LINES_OF_ACCOUNT,
    MEMBERS,
    PAYMENT_COUNT,
    PAYMENT_METHOD,
    PAYMENTS_OF_ACCOUNT,
    PAYMENTS_OF_INVOICE,
    PLAN,
    PLANS,
    PLANS_OF_LINE,
    SUBSCRIPTION,
    SUBSCRIPTION_COUNT,
    SUBSCRIPTIONS_OF_LINE,
    TICKET_COUNT,
    USAGE_OF_LINE,
    USAGE_OF_MONTH,
    BssState,
    IdentityCheck,
)
from telcoenv.errors import ToolError
from telcoenv.text import language_of, normalize
from telcoenv.tooling import ToolRegistry, full_detail, truncated

TOOLS = ToolRegistry()  # every BSS tool, by name (the domain binds them to their specs)

_CREDIT_PREFIX = "CNC"  # the credit notes apply_credit makes (the conversation's)
_PAYMENT_PREFIX = "PAYC"  # the payments retry_payment makes (the conversation's)
CARD_YEARS = 10  # the longest a payment card is valid for
MAX_START_AHEAD_DAYS = 90  # how far ahead an add-on may be scheduled
VAT_RATE: float = products()["vat_rate"]


def spec_pattern(tool: str, argument: str) -> re.Pattern[str]:
    """The ``pattern`` of an argument in the packaged ``tools/<tool>.json`` spec.

    >>> spec_pattern("get_bill", "period").fullmatch("2026-09\\n") is None
    True
    """
    spec = json.loads((data_root() / "tools" / f"{tool}.json").read_text(encoding="utf-8"))
    return re.compile(spec["function"]["parameters"]["properties"][argument]["pattern"])


_MSISDN = spec_pattern("get_customer", "msisdn")
_PERIOD = spec_pattern("get_bill", "period")
_DATE = spec_pattern("subscribe_addon", "start_date")
_EMAIL = spec_pattern("update_contact", "email")
_PHONE = spec_pattern("update_contact", "phone")
_BIRTH_DATE = spec_pattern("verify_identity", "birth_date")
_CARD_LAST4 = spec_pattern("update_payment_card", "card_last4")
_CARD_EXPIRY = spec_pattern("update_payment_card", "card_expiry")
# Generated ids: a prefix and six digits. A value of another form is refused as malformed
# before any lookup, saying where the id comes from (small models invent "1234567890").
_ID_FORMS = {  # argument: (its spec pattern, the tool whose output lists it)
    "customer_id": (spec_pattern("update_contact", "customer_id"), "get_customer"),
    "account_id": (spec_pattern("get_bill", "account_id"), "get_customer"),
    "invoice_id": (spec_pattern("apply_credit", "invoice_id"), "get_bill"),
    "subscription_id": (
        spec_pattern("cancel_addon", "subscription_id"),
        "get_customer or subscribe_addon",
    ),
    "group_id": (spec_pattern("get_family_usage", "group_id"), "get_family_usage"),
}
_ID_PATTERN = re.compile(r"\^\(?([A-Z|]+)\)?\[0-9\]\{(\d+)\}\$")
# Never part of an identifier or a contact detail: controls (NUL, newline), format characters
# (zero-width spaces and joiners, bidirectional overrides and isolates, BOM), surrogates,
# private use, line and paragraph separators.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Zl", "Zp"})
BILL_ITEMS_IN_FULL = 8  # more line items in the month: a get_bill summary shows ...
BILL_ITEMS = 5  # ... the largest of each invoice, about this many over the month's invoices
PAYMENTS_IN_FULL = 5  # more payments (or credit notes): a get_payment_history summary shows ...
PAYMENTS_SHOWN = 3  # ... the latest payments ...
UNSETTLED_SHOWN = 6  # ... and those that did not settle, up to this many in all ...
CREDIT_NOTES_SHOWN = 3  # ... and the latest credit notes
PLANS_IN_FULL = 6  # more plans than this: a list_plans summary shows their key fields only
# What a summary of plans keeps: what choosing one needs (data and price, who may take it);
# payment and segment too unless the call fixed them; voice and SMS are in get_plan.
PLAN_SUMMARY_FIELDS = ("plan_id", "payment", "segment", "price", "data_gb", "min_age", "max_age")
TICKET_CATEGORIES = (
    "billing_dispute",
    "payment",
    "plan_change",
    "roaming",
    "technical",
    "contact_update",
    "complaint",
    "other",
)


class BssContext(Protocol):
    """What a BSS tool may use: the episode's BSS state and the step number."""

    state: BssState
    step: int


# --- helpers -------------------------------------------------------------------------------------


def _money(value: float) -> float:
    return round(value + 1e-9, 2)


def _formatted(value: Any, pattern: re.Pattern[str], problem: str) -> str:
    """``value`` if it is a string that ``pattern`` matches whole and that holds no control or
    invisible character; else a ``bad_args`` ToolError saying ``problem`` (and which character
    is hidden in it, if one is)."""
    if not isinstance(value, str):
        raise ToolError(problem, kind="bad_args")
    hidden = next((c for c in value if unicodedata.category(c) in _HIDDEN_CATEGORIES), None)
    if hidden is not None:
        raise ToolError(
            f"{problem} (it contains the invisible or control character U+{ord(hidden):04X})",
            kind="bad_args",
        )
    if pattern.fullmatch(value) is None:
        raise ToolError(problem, kind="bad_args")
    return value


def _period(value: str) -> str:
    """``value`` if it is a YYYY-MM month, else a ``bad_args`` ToolError."""
    return _formatted(value, _PERIOD, f"period must be a month as YYYY-MM, got {value!r}")


def _exactly_one(**candidates: Any) -> tuple[str, Any]:
    """The one argument given among ``candidates`` (``bad_args`` unless exactly one is)."""
    given = [(name, value) for name, value in candidates.items() if value is not None]
    if len(given) != 1:
        names = " or ".join(candidates)
        raise ToolError(f"give exactly one of {names}", kind="bad_args")
    return given[0]


def _age(birth_date: str, today: str) -> int:
    """Completed years between ``birth_date`` and ``today`` (both YYYY-MM-DD)."""
    born, now = dt.date.fromisoformat(birth_date), dt.date.fromisoformat(today)
    return now.year - born.year - ((now.month, now.day) < (born.month, born.day))


def _line(state: BssState, msisdn: str) -> dict[str, Any]:
    problem = f"msisdn must be the line number in 6-15 digits, e.g. 966500000000, got {msisdn!r}"
    _formatted(msisdn, _MSISDN, problem)
    return state.one(LINE, msisdn, missing=f"unknown msisdn {msisdn!r}")


def _id_form(pattern: re.Pattern[str]) -> str:
    """An id pattern in words: ``^(LA|SUB)[0-9]{6}$`` is "LA or SUB and 6 digits"."""
    prefixes, digits = _ID_PATTERN.fullmatch(pattern.pattern).groups()  # type: ignore[union-attr]
    return f"{prefixes.replace('|', ' or ')} and {digits} digits"


def _known(state: BssState, query: Query, name: str, value: str) -> dict[str, Any]:
    """The row of the id ``value`` of argument ``name``: ``bad_args`` when it is not of the
    id's form, ``not_found`` when no row has it."""
    pattern, source = _ID_FORMS[name]
    problem = f"{name} must be an id from {source}: {_id_form(pattern)}, got {value!r}"
    _formatted(value, pattern, problem)
    return state.one(query, value, missing=f"unknown {name} {value!r}")


def _account(state: BssState, account_id: str) -> dict[str, Any]:
    return _known(state, ACCOUNT, "account_id", account_id)


def _customer(state: BssState, customer_id: str) -> dict[str, Any]:
    return _known(state, CUSTOMER, "customer_id", customer_id)


def _owner(state: BssState, line: dict[str, Any]) -> dict[str, Any]:
    """The customer who owns ``line`` (through its account)."""
    return _customer(state, _account(state, line["account_id"])["customer_id"])


def _plan(state: BssState, plan_id: str) -> dict[str, Any]:
    return state.one(PLAN, plan_id, missing=f"unknown plan_id {plan_id!r}")


def _addon(state: BssState, addon_id: str) -> dict[str, Any]:
    row = state.one(ADDON, addon_id, missing=f"unknown addon_id {addon_id!r}")
    return {**row, "payment": row["payment"].split(",")}


def _refuse_internal(customer: dict[str, Any]) -> None:
    """Internal test accounts are not customers: no change on them."""
    if customer["segment"] == "internal":
        raise ToolError(
            f"customer {customer['customer_id']} is an internal test account; "
            "its subscriptions and billing cannot be changed by customer care",
            kind="rejected",
        )


def _check_holder(state: BssState, account: dict[str, Any]) -> None:
    """A change to an account: the caller proved to be its holder, a customer (not an
    internal test account)."""
    customer = _customer(state, account["customer_id"])
    _require_verified(state, customer)
    _refuse_internal(customer)


def _require_active(line: dict[str, Any]) -> None:
    """Only an active line may be changed (suspended and terminated lines are refused)."""
    if line["status"] == "suspended":
        raise ToolError(
            f"line {line['msisdn']} is suspended for non-payment: account "
            f"{line['account_id']} has an invoice over {billing.suspend_after_days()} days "
            "past its due date. No change until it is paid (retry_payment, or the customer "
            "pays in the app); the payment restores the line",
            kind="rejected",
        )
    if line["status"] != "active":
        raise ToolError(
            f"line {line['msisdn']} is {line['status']}; only an active line can be changed",
            kind="rejected",
        )


def _next_id(state: BssState, count: Query, prefix: str) -> str:
    """A new id ``<prefix><n>`` (n: rows of the table + 1; generated ids use other prefixes)."""
    number = state.db.select(count, (state.episode_id,))[0][0] + 1
    return f"{prefix}{number:06d}"


def _active_subscriptions(state: BssState, msisdn: str) -> list[dict[str, Any]]:
    return [s for s in state.rows(SUBSCRIPTIONS_OF_LINE, msisdn) if s["status"] == "active"]


# --- identity ------------------------------------------------------------------------------------

# Personal data, masked in tool output until the caller is verified as its customer.
_PERSONAL_FIELDS = ("name", "birth_date", "email", "phone")
IDENTITY_REQUIRED = "identity_required"  # the kind of a write refused for an unverified caller


def _spelling(name: str) -> str:
    """A name as compared: casefolded, Arabic spellings folded, without spaces or hyphens
    ("Omar Al Harbi", "omar al-harbi" and "OMAR ALHARBI" are the same name)."""
    return re.sub(r"[\s\-\u2010-\u2015'\u2019.]", "", normalize(name))


def names_match(stated: str, stored: str) -> bool:
    """Whether a stated name is the stored one, in Latin or Arabic letters."""
    return _spelling(stated) in {_spelling(stored), _spelling(arabic_name(stored))}


def _masked(field: str, value: Any) -> Any:
    """Personal data as an unverified caller may see it: enough to tell records apart, not to
    impersonate (initials, the email's first letter and domain, the phone's last 3 digits)."""
    if not isinstance(value, str) or not value:
        return value
    if field == "name":
        return " ".join(part[0] + "*" * (len(part) - 1) for part in value.split())
    if field == "email":
        user, _, domain = value.partition("@")
        return f"{user[:1]}***@{domain}"
    if field == "phone":
        return value[:5] + "*" * max(len(value) - 8, 0) + value[-3:]
    return "****-**-**"  # the birth date


def _profile(state: BssState, customer: dict[str, Any]) -> dict[str, Any]:
    """The customer's profile, its personal data masked unless the caller proved to be them."""
    verified = state.identity.verified(customer["customer_id"])
    shown = {
        key: value if verified or key not in _PERSONAL_FIELDS else _masked(key, value)
        for key, value in customer.items()
    }
    return {**shown, "identity_verified": verified}


def _locked(customer_id: str) -> str:
    return (
        f"the identity check of customer {customer_id} is locked after {IDENTITY_ATTEMPTS} "
        "failed attempts: make no change and give no personal data; the caller can verify in "
        "a store with their national ID (get_store_locations)"
    )


def _require_verified(state: BssState, customer: dict[str, Any]) -> None:
    """Every change waits for the caller to prove they are the customer (``verify_identity``):
    a line number is no proof, anyone may know it."""
    customer_id = customer["customer_id"]
    if state.identity.verified(customer_id):
        return
    if state.identity.locked(customer_id):
        raise ToolError(_locked(customer_id), kind=IDENTITY_REQUIRED)
    raise ToolError(
        f"the caller is not verified as customer {customer_id}: ask for their full name and "
        "date of birth and call verify_identity before any change",
        kind=IDENTITY_REQUIRED,
    )


@TOOLS.tool
def verify_identity(
    ctx: BssContext, customer_id: str, full_name: str, birth_date: str
) -> dict[str, Any]:
    """Check the stated name and birth date against the customer's record; a failed check
    counts towards the lock (:data:`~telcoenv.domains.bss.state.IDENTITY_ATTEMPTS`)."""
    state = ctx.state
    customer = _customer(state, customer_id)
    if not isinstance(full_name, str) or not 2 <= len(full_name.strip()) <= 80:
        raise ToolError(
            "full_name must be the name the caller stated, 2-80 characters", kind="bad_args"
        )
    _formatted(birth_date, _BIRTH_DATE, f"birth_date must be YYYY-MM-DD, got {birth_date!r}")
    session = state.identity
    if session.verified(customer_id):
        return {"customer_id": customer_id, "verified": True}
    if session.locked(customer_id):
        raise ToolError(_locked(customer_id), kind="rejected")
    passed = names_match(full_name, customer["name"]) and birth_date == customer["birth_date"]
    session.checks.append(IdentityCheck(customer_id, full_name, birth_date, passed))
    if passed:
        return {"customer_id": customer_id, "verified": True}
    left = IDENTITY_ATTEMPTS - session.failures(customer_id)
    return {
        "customer_id": customer_id,
        "verified": False,
        "attempts_left": left,
        "note": "the name or the date of birth does not match the customer's record: make no "
        "change and give no personal data"
        + (" (ask the caller to state them again)" if left else "; the check is now locked"),
    }


# --- reads ---------------------------------------------------------------------------------------


def _line_view(state: BssState, line: dict[str, Any]) -> dict[str, Any]:
    plan = _plan(state, line["plan_id"])
    view = {
        "msisdn": line["msisdn"],
        "payment": line["payment"],
        "status": line["status"],
        "activated_on": line["activated_on"],
        "plan": {k: plan[k] for k in ("plan_id", "name_en", "price", "data_gb", "voice_min")},
    }
    # A commitment's last day and the active add-ons, where a line has them (a five-line
    # family's profile stays within the output bound).
    if line["commitment_end"]:
        view["commitment_end"] = line["commitment_end"]
    active = _active_subscriptions(state, line["msisdn"])
    if active:
        view["active_addons"] = active
    return view


@TOOLS.tool
def get_customer(
    ctx: BssContext, msisdn: str | None = None, customer_id: str | None = None
) -> dict[str, Any]:
    """Profile, age on ``today``, accounts and their lines; exactly one of the two keys."""
    state = ctx.state
    name, value = _exactly_one(msisdn=msisdn, customer_id=customer_id)
    customer = _owner(state, _line(state, value)) if name == "msisdn" else _customer(state, value)
    accounts = []
    for account in state.rows(ACCOUNTS_OF_CUSTOMER, customer["customer_id"]):
        lines = state.rows(LINES_OF_ACCOUNT, account["account_id"])
        view = {k: account[k] for k in ACCOUNT_COLUMNS if k != "customer_id"}
        accounts.append({**view, "lines": [_line_view(state, line) for line in lines]})
    age = _age(customer["birth_date"], state.today)
    return {"customer": {**_profile(state, customer), "age": age}, "accounts": accounts}


@TOOLS.tool
def get_bill(
    ctx: BssContext, account_id: str, period: str, detail: str | None = None
) -> dict[str, Any]:
    """Every invoice stored for the account and month (a double-fired one too), with items.
    The summary of a month with more than :data:`BILL_ITEMS_IN_FULL` items keeps the largest
    of each invoice, with the invoice's amounts per item kind and what was left out."""
    full = full_detail(detail)
    state = ctx.state
    _account(state, account_id)
    invoices = []
    for invoice in state.rows(INVOICES_OF_PERIOD, account_id, _period(period)):
        items = state.rows(ITEMS_OF_INVOICE, invoice["invoice_id"])
        # The account and period once, at the top: each invoice carries its own fields only.
        own = {k: v for k, v in invoice.items() if k not in ("account_id", "period")}
        invoices.append({**own, "items": items})
    output = {"account_id": account_id, "period": period, "invoices": invoices}
    total = sum(len(invoice["items"]) for invoice in invoices)
    if full or total <= BILL_ITEMS_IN_FULL:
        return output
    per_invoice = max(2, BILL_ITEMS // len(invoices))
    shown = []
    for invoice in invoices:
        items = invoice["items"]
        if len(items) <= per_invoice:
            shown.append(invoice)
            continue
        largest = sorted(range(len(items)), key=lambda i: (-items[i]["amount_excl_vat"], i))
        kept = set(largest[:per_invoice])
        by_kind: dict[str, float] = {}
        for item in items:
            by_kind[item["kind"]] = _money(by_kind.get(item["kind"], 0.0) + item["amount_excl_vat"])
        left_out = [item for i, item in enumerate(items) if i not in kept]
        shown.append(
            {
                **invoice,
                "items": [item for i, item in enumerate(items) if i in kept],
                "amount_excl_vat_by_kind": by_kind,
                "items_left_out": {
                    "count": len(left_out),
                    "amount_excl_vat": _money(sum(i["amount_excl_vat"] for i in left_out)),
                },
            }
        )
    count = sum(len(invoice["items"]) for invoice in shown)
    return {**output, "invoices": shown, "truncated": truncated(count, total)}


def _open_cycle(state: BssState, line: dict[str, Any]) -> billing.Cycle:
    """The line's billing cycle that holds today (its account's billing day)."""
    return billing.open_cycle(_account(state, line["account_id"])["billing_day"], state.today)


def _plan_fees(state: BssState, line: dict[str, Any], cycle: billing.Cycle) -> list[dict[str, Any]]:
    """The cycle's plan fees of a postpaid line: each plan it held in the cycle, for its days
    (a plan changed today bills the old one until yesterday, the new one from today)."""
    fees = []
    for held in state.rows(PLANS_OF_LINE, line["msisdn"]):
        first = dt.date.fromisoformat(held["start_date"])
        last = dt.date.fromisoformat(held["end_date"]) if held["end_date"] else cycle.end
        if last < cycle.start or first > cycle.end:
            continue
        plan = _plan(state, held["plan_id"])
        start, end = max(first, cycle.start), min(last, cycle.end)
        fees.append(
            {
                "description": f"{plan['name_en']} {start} to {end}",
                "plan_id": plan["plan_id"],
                "amount_excl_vat": billing.prorated(plan["price_excl_vat"], cycle, first, last),
            }
        )
    return fees


def _cycle_view(cycle: billing.Cycle, today: str) -> dict[str, Any]:
    return {
        "period": cycle.period,
        "cycle_start": cycle.start.isoformat(),
        "cycle_end": cycle.end.isoformat(),
        "as_of": today,
    }


@TOOLS.tool
def get_realtime_charges(ctx: BssContext, msisdn: str) -> dict[str, Any]:
    """Unbilled charges of the open billing cycle: a postpaid line's plan fee for the days of
    each plan it held (prorated after a change), the add-ons starting in it (one cancelled
    before it started costs nothing), and the cycle's usage collected so far (``null`` when
    none was collected)."""
    state = ctx.state
    line = _line(state, msisdn)
    cycle = _open_cycle(state, line)
    charges = []
    for subscription in state.rows(SUBSCRIPTIONS_OF_LINE, msisdn):
        start = dt.date.fromisoformat(subscription["start_date"])
        cancelled = subscription["status"] == "cancelled"
        # A pack cancelled before it started costs nothing; one that started is charged.
        if not cycle.holds(start) or (cancelled and str(start) > state.today):
            continue
        addon = _addon(state, subscription["addon_id"])
        charges.append(
            {
                "subscription_id": subscription["subscription_id"],
                "description": addon["name_en"],
                "amount_excl_vat": addon["price_excl_vat"],
            }
        )
    if line["payment"] == "postpaid":
        one_off = [
            {k: c[k] for k in ("charge_id", "description", "amount_excl_vat")}
            for c in state.rows(CHARGES_OF_LINE, msisdn)
            if cycle.holds(dt.date.fromisoformat(c["charged_on"]))
        ]
        charges = [*_plan_fees(state, line, cycle), *one_off, *charges]
    net = _money(sum(c["amount_excl_vat"] for c in charges))
    usage = state.rows(USAGE_OF_MONTH, msisdn, cycle.period)
    return {
        "msisdn": msisdn,
        **_cycle_view(cycle, state.today),
        "payment": line["payment"],
        "charges": charges,
        "total_excl_vat": net,
        "vat": _money(net * VAT_RATE),
        "total": _money(net * (1 + VAT_RATE)),
        "usage_so_far": {k: v for k, v in usage[0].items() if k != "month"} if usage else None,
    }


@TOOLS.tool
def get_usage(
    ctx: BssContext, msisdn: str, period: str | None = None, months: int | None = None
) -> dict[str, Any]:
    """Usage per closed billing cycle as stored (``null``: not collected, 0: not used), oldest
    first, and the open cycle's usage so far apart (``current_cycle``; not with ``months``,
    which counts closed cycles)."""
    state = ctx.state
    line = _line(state, msisdn)
    if period is not None and months is not None:
        raise ToolError("give period or months, not both", kind="bad_args")
    cycle = _open_cycle(state, line)
    records = state.rows(USAGE_OF_LINE, msisdn)
    current = [r for r in records if r["month"] == cycle.period]
    records = [r for r in records if r["month"] != cycle.period]
    if period is not None:
        wanted = _period(period)
        records = [r for r in records if r["month"] == wanted]
        current = current if wanted == cycle.period else []
    elif months is not None:  # the closed cycles asked for, and not the open one
        if isinstance(months, bool) or not isinstance(months, int) or not 1 <= months <= 12:
            raise ToolError(f"months must be an integer 1-12, got {months!r}", kind="bad_args")
        records, current = records[-months:], []
    plan = _plan(state, line["plan_id"])
    allowance = {k: plan[k] for k in ("data_gb", "voice_min", "sms")}
    output = {"msisdn": msisdn, "plan_allowance": allowance, "usage": records}
    if current:
        so_far = {k: v for k, v in current[0].items() if k != "month"}
        output["current_cycle"] = {**_cycle_view(cycle, state.today), "usage_so_far": so_far}
    return output


@TOOLS.tool
def list_plans(
    ctx: BssContext,
    payment: str | None = None,
    segment: str | None = None,
    detail: str | None = None,
) -> dict[str, Any]:
    """Catalogue plans matching the optional filters, by plan id. The summary of more than
    :data:`PLANS_IN_FULL` plans shows every plan with its key fields only (what choosing one
    needs), grouped by payment type and segment unless the call fixed both."""
    full = full_detail(detail)
    plans = [
        p
        for p in ctx.state.rows(PLANS)
        if payment in (None, p["payment"]) and segment in (None, p["segment"])
    ]
    if full or len(plans) <= PLANS_IN_FULL:
        return {"plans": plans}
    kept = [name for name in PLAN_SUMMARY_FIELDS if name not in ("payment", "segment")]
    left_out = sorted(name for name in plans[0] if name not in PLAN_SUMMARY_FIELDS)
    rows = [{k: p[k] for k in kept} for p in plans]
    summary: dict[str, Any] = {"plans": rows}
    if payment is None or segment is None:  # grouped by payment type and segment
        groups: dict[str, list[dict[str, Any]]] = {}
        for plan, row in zip(plans, rows, strict=True):
            groups.setdefault(f"{plan['payment']} {plan['segment']}", []).append(row)
        summary = {"plans_by_kind": groups}
    return {**summary, "truncated": truncated(len(plans), len(plans), left_out=left_out)}


@TOOLS.tool
def get_plan(ctx: BssContext, plan_id: str, msisdn: str | None = None) -> dict[str, Any]:
    """One catalogue plan; with ``msisdn``, what moving that line to it today costs: the change
    in the monthly fee and the early-change fee of a running commitment (VAT included)."""
    state = ctx.state
    plan = _plan(state, plan_id)
    if msisdn is None:
        return {"plan": plan}
    line = _line(state, msisdn)
    fee = state.early_change_fee(line, plan)
    move = {
        "msisdn": msisdn,
        "from_plan_id": line["plan_id"],
        "monthly_price_change": _money(plan["price"] - _plan(state, line["plan_id"])["price"]),
        "commitment_end": line["commitment_end"],
        "early_change_fee": _fee_view(fee),
    }
    return {"plan": plan, "change_for_line": move}


@TOOLS.tool
def list_addons(
    ctx: BssContext, kind: str | None = None, zone: str | None = None
) -> dict[str, Any]:
    """Catalogue add-ons matching the optional filters; ``payment`` as a list."""
    addons = [_addon(ctx.state, row["addon_id"]) for row in ctx.state.rows(ADDONS)]
    return {
        "addons": [a for a in addons if kind in (None, a["kind"]) and zone in (None, a["zone"])]
    }


def _group(state: BssState, account_id: str | None, group_id: str | None) -> dict[str, Any]:
    name, value = _exactly_one(account_id=account_id, group_id=group_id)
    if name == "group_id":
        return _known(state, GROUP, "group_id", value)
    _account(state, value)
    return state.one(GROUPS_OF_OWNER, value, missing=f"account {value!r} owns no family group")


@TOOLS.tool
def get_family_usage(
    ctx: BssContext,
    account_id: str | None = None,
    group_id: str | None = None,
    period: str | None = None,
) -> dict[str, Any]:
    """Members' data use in a billing cycle (default: the open one, so far) against the shared
    allowance (the members' plan allowances pooled; ``null``: unlimited). ``total_data_gb``
    sums collected members only; ``not_collected`` lists the NULL ones."""
    state = ctx.state
    group = _group(state, account_id, group_id)
    billing_day = _account(state, group["owner_account_id"])["billing_day"]
    current = billing.open_cycle(billing_day, state.today)
    month = _period(period) if period is not None else current.period
    members, missing, total = [], [], 0.0
    for member in state.rows(MEMBERS, group["group_id"]):
        usage = state.rows(USAGE_OF_MONTH, member["msisdn"], month)
        data = usage[0]["data_gb"] if usage else None
        members.append({**member, "data_gb": data})
        if data is None:
            missing.append(member["msisdn"])
        else:
            total += data
    shared = group["shared_data_gb"]
    cycle = billing.cycle(month, billing_day)
    output = {
        **group,
        "period": month,
        "cycle_start": cycle.start.isoformat(),
        "cycle_end": cycle.end.isoformat(),
        "open": month == current.period,
        "members": members,
        "total_data_gb": _money(total),
        "not_collected": missing,
    }
    if shared is not None:
        output["remaining_shared_gb"] = _money(max(0.0, shared - total))
        output["beyond_shared_gb"] = _money(max(0.0, total - shared))
    return output


_OPEN_STATUSES = ("issued", "overdue", "disputed")  # an invoice not yet paid or credited
_OPEN_INVOICE_FIELDS = ("invoice_id", "period", "amount", "due_date", "status")


@TOOLS.tool
def get_payment_history(
    ctx: BssContext, account_id: str, detail: str | None = None
) -> dict[str, Any]:
    """The method on file, the invoices still open (issued, overdue or disputed), payments
    (failed ones with their reason; each with its method, channel and card) and credit notes
    (negative), oldest first.
    The summary shows the latest payments and every one that did not settle, the latest
    credit notes, and the count and amount of the payments per status."""
    full = full_detail(detail)
    state = ctx.state
    _account(state, account_id)
    # A payment's set fields only: a settled one has no failure reason, a direct debit no card.
    payments = [
        {k: v for k, v in p.items() if v is not None}
        for p in state.rows(PAYMENTS_OF_ACCOUNT, account_id)
    ]
    # The account once, at the top: each credit note carries its own fields only.
    credits = [
        {k: v for k, v in c.items() if k != "account_id"}
        for c in state.rows(CREDITS_OF_ACCOUNT, account_id)
    ]
    method = state.rows(PAYMENT_METHOD, account_id)
    output = {
        "account_id": account_id,
        # The method's set fields (a direct debit has no card; a card never replaced no date).
        "method_on_file": {
            k: v for k, v in method[0].items() if k != "account_id" and v is not None
        }
        if method
        else None,
        "open_invoices": [
            {k: i[k] for k in _OPEN_INVOICE_FIELDS}
            for i in state.rows(INVOICES_OF_ACCOUNT, account_id)
            if i["status"] in _OPEN_STATUSES
        ],
        "payments": payments,
        "credit_notes": credits,
    }
    if full or (len(payments) <= PAYMENTS_IN_FULL and len(credits) <= CREDIT_NOTES_SHOWN):
        return output
    latest = range(max(0, len(payments) - PAYMENTS_SHOWN), len(payments))
    unsettled = [i for i, p in enumerate(payments) if p["status"] != "settled"]
    kept = sorted({*latest, *unsettled})[-UNSETTLED_SHOWN:]
    by_status: dict[str, dict[str, Any]] = {}
    for payment in payments:
        entry = by_status.setdefault(payment["status"], {"count": 0, "amount": 0.0})
        entry["count"] += 1
        entry["amount"] = _money(entry["amount"] + payment["amount"])
    shown_credits = credits[-CREDIT_NOTES_SHOWN:]
    left_out = {
        "payments": len(payments) - len(kept),
        "credit_notes": len(credits) - len(shown_credits),
    }
    return {
        **output,
        "payments": [payments[i] for i in kept],
        "credit_notes": shown_credits,
        "payments_by_status": by_status,
        "truncated": truncated(
            len(kept) + len(shown_credits),
            len(payments) + len(credits),
            left_out=left_out,
        ),
    }


# --- writes --------------------------------------------------------------------------------------


def _start(value: str, today: str) -> dt.date:
    """A valid start date from ``today`` to :data:`MAX_START_AHEAD_DAYS` ahead."""
    problem = f"start_date must be a date as YYYY-MM-DD, got {value!r}"
    try:
        start = dt.date.fromisoformat(_formatted(value, _DATE, problem))
    except ValueError:  # 2026-02-30
        raise ToolError(problem, kind="bad_args") from None
    first = dt.date.fromisoformat(today)
    if not first <= start <= first + dt.timedelta(days=MAX_START_AHEAD_DAYS):
        raise ToolError(
            f"start_date {value} must be from {today} to {MAX_START_AHEAD_DAYS} days ahead",
            kind="rejected",
        )
    return start


def _check_addon_purchase(
    state: BssState, line: dict[str, Any], addon: dict[str, Any], start: dt.date
) -> None:
    """Payment type allowed; no active subscription of the same add-on whose days overlap the
    new one's (one that ends before it starts or starts after it ends is no obstacle); a prepaid
    line's account balance (credit left) covers the price incl. VAT."""
    if line["payment"] not in addon["payment"]:
        allowed = ", ".join(addon["payment"])
        raise ToolError(
            f"add-on {addon['addon_id']} is for {allowed} lines only; "
            f"line {line['msisdn']} is {line['payment']}",
            kind="rejected",
        )
    end = str(start + dt.timedelta(days=addon["validity_days"] - 1))
    for subscription in _active_subscriptions(state, line["msisdn"]):
        overlaps = subscription["start_date"] <= end and subscription["end_date"] >= str(start)
        if subscription["addon_id"] == addon["addon_id"] and overlaps:
            raise ToolError(
                f"line {line['msisdn']} already has add-on {addon['addon_id']} active until "
                f"{subscription['end_date']} (subscription {subscription['subscription_id']})",
                kind="rejected",
            )
    if line["payment"] == "prepaid":
        balance = _account(state, line["account_id"])["balance"]
        if balance < addon["price"]:
            raise ToolError(
                f"prepaid balance {balance:.2f} is below the add-on price {addon['price']:.2f} "
                "(incl. VAT); the customer must recharge first",
                kind="rejected",
            )


@TOOLS.tool
def subscribe_addon(ctx: BssContext, msisdn: str, addon_id: str, start_date: str) -> dict[str, Any]:
    """Subscribe the line; valid for ``validity_days`` from ``start_date``. A prepaid line pays
    the price incl. VAT from its account balance now; a postpaid line is billed later."""
    state = ctx.state
    line = _line(state, msisdn)
    addon = _addon(state, addon_id)
    start = _start(start_date, state.today)
    owner = _owner(state, line)
    _require_verified(state, owner)
    _refuse_internal(owner)
    _require_active(line)
    _check_addon_purchase(state, line, addon, start)
    end = start + dt.timedelta(days=addon["validity_days"] - 1)
    subscription_id = _next_id(state, SUBSCRIPTION_COUNT, "SUB")
    with state.db.change():
        state.insert(
            "line_addons",
            subscription_id=subscription_id,
            msisdn=msisdn,
            addon_id=addon_id,
            start_date=str(start),
            end_date=str(end),
            status="active",
        )
        if line["payment"] == "prepaid":
            balance = _account(state, line["account_id"])["balance"]
            state.update(
                "accounts",
                "account_id",
                line["account_id"],
                balance=_money(balance - addon["price"]),
            )
    return {
        "subscription_id": subscription_id,
        "msisdn": msisdn,
        "addon_id": addon_id,
        "start_date": str(start),
        "end_date": str(end),
        "price": addon["price"],
        "charged_to": "prepaid balance" if line["payment"] == "prepaid" else "next invoice",
    }


@TOOLS.tool
def cancel_addon(ctx: BssContext, msisdn: str, subscription_id: str) -> dict[str, Any]:
    """Cancel an active subscription of this line: a pack that has started is charged in
    full; one that has not costs nothing (a prepaid line gets its price back)."""
    state = ctx.state
    line = _line(state, msisdn)
    owner = _owner(state, line)
    _require_verified(state, owner)
    subscription = _known(state, SUBSCRIPTION, "subscription_id", subscription_id)
    if subscription["msisdn"] != msisdn:
        raise ToolError(
            f"subscription {subscription_id} does not belong to line {msisdn}", kind="rejected"
        )
    if subscription["status"] != "active":
        raise ToolError(
            f"subscription {subscription_id} is {subscription['status']}, not active",
            kind="rejected",
        )
    _refuse_internal(owner)
    _require_active(line)
    addon = _addon(state, subscription["addon_id"])
    started = subscription["start_date"] <= state.today
    refund = 0.0 if started else addon["price"]
    with state.db.change():
        state.update("line_addons", "subscription_id", subscription_id, status="cancelled")
        if refund and line["payment"] == "prepaid":  # paid from the balance: paid back
            balance = _account(state, line["account_id"])["balance"]
            state.update(
                "accounts", "account_id", line["account_id"], balance=_money(balance + refund)
            )
    return {
        "subscription_id": subscription_id,
        "msisdn": msisdn,
        "status": "cancelled",
        # The operator's rule (products.yaml, policy): a started pack is charged in full.
        "charge": "in full: the pack had started" if started else "none: it had not started",
        "refund": refund if line["payment"] == "prepaid" else 0.0,
    }


def _check_plan_change(
    customer: dict[str, Any], line: dict[str, Any], plan: dict[str, Any], today: str
) -> None:
    """Same payment type, another plan, the customer's segment and age on ``today``."""
    plan_id = plan["plan_id"]
    if plan_id == line["plan_id"]:
        raise ToolError(f"line {line['msisdn']} is already on plan {plan_id}", kind="rejected")
    if plan["payment"] != line["payment"]:
        raise ToolError(
            f"plan {plan_id} is {plan['payment']} but line {line['msisdn']} is {line['payment']}; "
            "a prepaid/postpaid migration needs a new contract (open a care ticket)",
            kind="rejected",
        )
    if plan["segment"] != customer["segment"]:
        raise ToolError(
            f"plan {plan_id} is for {plan['segment']} customers; customer "
            f"{customer['customer_id']} is {customer['segment']}",
            kind="rejected",
        )
    age = _age(customer["birth_date"], today)
    low, high = plan["min_age"], plan["max_age"]
    if age < low or (high is not None and age > high):
        limits = f"{low}-{high}" if high is not None else f"{low} or older"
        raise ToolError(
            f"customer {customer['customer_id']} is {age}; plan {plan_id} requires age {limits}",
            kind="rejected",
        )


def _plan_from_today(state: BssState, msisdn: str, plan_id: str) -> None:
    """The line's plan history: the current plan ends yesterday and ``plan_id`` starts today
    (a second change today replaces today's)."""
    current = state.rows(PLANS_OF_LINE, msisdn)[-1]
    if current["start_date"] == state.today:
        state.update("plan_history", "history_id", current["history_id"], plan_id=plan_id)
        return
    yesterday = dt.date.fromisoformat(state.today) - dt.timedelta(days=1)
    state.update("plan_history", "history_id", current["history_id"], end_date=str(yesterday))
    state.insert(
        "plan_history",
        history_id=_next_id(state, HISTORY_COUNT, "PHC"),
        msisdn=msisdn,
        start_date=state.today,
        plan_id=plan_id,
        end_date=None,
    )


def _fee_view(fee: tuple[float, int] | None) -> dict[str, Any] | None:
    if fee is None:
        return None
    net, months = fee
    return {"months_left": months, "amount_excl_vat": net, "amount": _money(net * (1 + VAT_RATE))}


def _charge_fee(state: BssState, msisdn: str, fee: tuple[float, int] | None) -> None:
    """Today's early-change fee of the line, as the open cycle will bill it (a second change
    today replaces the first one's)."""
    for charge in state.rows(CHARGES_OF_LINE, msisdn):
        if charge["charged_on"] == state.today and charge["kind"] == billing.EARLY_CHANGE_FEE:
            state.delete("charges", "charge_id", charge["charge_id"])
    if fee is None:
        return
    state.insert(
        "charges",
        charge_id=_next_id(state, CHARGE_COUNT, "CHC"),
        msisdn=msisdn,
        charged_on=state.today,
        kind=billing.EARLY_CHANGE_FEE,
        description=f"Early change fee, {fee[1]} months of commitment left",
        amount_excl_vat=fee[0],
    )


@TOOLS.tool
def change_plan(ctx: BssContext, msisdn: str, plan_id: str) -> dict[str, Any]:
    """Move the line to ``plan_id`` today, if the customer is eligible; a move to a cheaper
    plan while a commitment runs charges the early-change fee."""
    state = ctx.state
    line = _line(state, msisdn)
    plan = _plan(state, plan_id)
    customer = _owner(state, line)
    _require_verified(state, customer)
    _refuse_internal(customer)
    _require_active(line)
    _check_plan_change(customer, line, plan, state.today)
    old = _plan(state, line["plan_id"])
    fee = state.early_change_fee(line, plan)
    with state.db.change():
        state.update("lines", "msisdn", msisdn, plan_id=plan_id)
        _plan_from_today(state, msisdn, plan_id)
        _charge_fee(state, msisdn, fee)
    output = {
        "msisdn": msisdn,
        "old_plan_id": old["plan_id"],
        "new_plan_id": plan_id,
        "effective": state.today,
        "monthly_price_change": _money(plan["price"] - old["price"]),
        "early_change_fee": _fee_view(fee),
    }
    if line["payment"] == "postpaid":  # the open cycle bills each plan for its days
        output["this_cycle"] = _plan_fees(state, line, _open_cycle(state, line))
    return output


def _credit_amount(amount: float) -> float:
    """A positive amount with at most two decimals."""
    if isinstance(amount, bool) or not isinstance(amount, (int, float)):
        raise ToolError(f"amount must be a number, got {amount!r}", kind="bad_args")
    if amount <= 0:
        raise ToolError(f"credit amount {amount} must be above 0", kind="rejected")
    cents = round(amount, 2)
    if abs(cents - amount) > 1e-9:
        raise ToolError(f"amount {amount} has more than two decimals", kind="bad_args")
    if cents == 0:  # within the tolerance of 0.00: nothing to credit
        raise ToolError(
            f"credit amount {amount} is 0.00 to the cent: credit at least 0.01", kind="rejected"
        )
    return cents


def _check_authority(state: BssState, value: float) -> None:
    """The conversation's credits stay within the agent's credit authority in total, over every
    call, invoice and account (six calls of 200.00 credited 1,200.00 before): the credit notes
    this conversation made are the ones numbered by ``apply_credit``."""
    authority = billing.credit_authority()
    granted = -sum(
        c["amount"] for c in state.rows(CREDITS) if c["credit_note_id"].startswith(_CREDIT_PREFIX)
    )
    if value + granted > authority + 1e-9:
        raise ToolError(
            f"this conversation has credited {granted:.2f}; {value:.2f} more would pass your "
            f"credit authority of {authority:.2f}: open a billing_dispute ticket for a "
            "supervisor to decide on the rest",
            kind="rejected",
        )


def _invoice_amount(state: BssState, invoice_id: str) -> float:
    return _known(state, INVOICE, "invoice_id", invoice_id)["amount"]


def _check_owned(invoice: dict[str, Any], account_id: str) -> None:
    """The invoice is the account's."""
    if invoice["account_id"] != account_id:
        raise ToolError(
            f"invoice {invoice['invoice_id']} belongs to account {invoice['account_id']}, "
            f"not {account_id}",
            kind="rejected",
        )


def _check_invoice_credit(state: BssState, account_id: str, invoice_id: str, value: float) -> None:
    """The invoice is the account's, and its credits stay within its amount."""
    invoice = _known(state, INVOICE, "invoice_id", invoice_id)
    _check_owned(invoice, account_id)
    credited = state.credited(invoice_id)
    if value + credited > invoice["amount"] + 1e-9:
        raise ToolError(
            f"invoice {invoice_id} is {invoice['amount']:.2f} and already credited "
            f"{credited:.2f}; at most {invoice['amount'] - credited:.2f} more can be credited",
            kind="rejected",
        )


@TOOLS.tool
def apply_credit(
    ctx: BssContext, account_id: str, amount: float, reason: str, invoice_id: str | None = None
) -> dict[str, Any]:
    """Insert a credit note of ``-amount`` (``amount`` > 0; with ``invoice_id``, the invoice's
    credits stay within its amount; the conversation's credits within the agent's authority)."""
    state = ctx.state
    account = _account(state, account_id)
    value = _credit_amount(amount)
    if not isinstance(reason, str) or not 3 <= len(reason.strip()) <= 120:
        raise ToolError("reason must be 3-120 characters", kind="bad_args")
    _check_holder(state, account)
    if invoice_id is not None:
        _check_invoice_credit(state, account_id, invoice_id, value)
    _check_authority(state, value)
    credit_note_id = _next_id(state, CREDIT_COUNT, _CREDIT_PREFIX)
    with state.db.change():
        state.insert(
            "credit_notes",
            credit_note_id=credit_note_id,
            account_id=account_id,
            invoice_id=invoice_id,
            issued_at=f"{state.today}T12:00:00",
            amount=-value,
            reason=reason,
        )
        # The ledger nets the credit note: the balance falls, a wholly credited invoice is so.
        prepaid = any(
            line["payment"] == "prepaid" for line in state.rows(LINES_OF_ACCOUNT, account_id)
        )  # a prepaid balance is credit left: the note adds to it
        balance = account["balance"] + (value if prepaid else -value)
        state.update("accounts", "account_id", account_id, balance=_money(balance))
        if (
            invoice_id is not None
            and state.credited(invoice_id) >= _invoice_amount(state, invoice_id) - 0.005
        ):
            state.update("invoices", "invoice_id", invoice_id, status="credited")
            _lift_suspension(state, account_id)
    return {"credit_note_id": credit_note_id, "account_id": account_id, "amount": -value}


# --- payments ------------------------------------------------------------------------------------


def _payment_method(state: BssState, account_id: str) -> dict[str, Any]:
    """The account's payment method on file (a prepaid account has none: it tops up)."""
    found = state.rows(PAYMENT_METHOD, account_id)
    if not found:
        raise ToolError(
            f"account {account_id} has no payment method on file: it is prepaid (its lines top "
            "up), and nothing is collected from it",
            kind="rejected",
        )
    return found[0]


def _same_instrument(payment: dict[str, Any], method: dict[str, Any]) -> bool:
    return all(payment[k] == method[k] for k in ("method", "card_last4", "card_expiry"))


def _decline(state: BssState, method: dict[str, Any], invoice_id: str) -> str | None:
    """Why the gateway refuses a payment from the method on file (None: it goes through): a
    card past its expiry month; or the invoice's last failure, unless it was a passing one
    (``transient`` in products.yaml) or the method on file has changed since."""
    if method["method"] == "card" and method["card_expiry"] < state.today[:7]:
        return "card expired"
    failed = [p for p in state.rows(PAYMENTS_OF_INVOICE, invoice_id) if p["status"] == "failed"]
    if not failed or not _same_instrument(failed[-1], method):
        return None
    reason = failed[-1]["failure_reason"]
    return None if reason in transient_failures() else reason


def _lift_suspension(state: BssState, account_id: str) -> list[str]:
    """Restore a suspended account and its suspended lines once none of its invoices is long
    overdue (dunning, ``billing.suspending``); the lines restored."""
    account = _account(state, account_id)
    if account["status"] != "suspended" or billing.suspending(
        state.rows(INVOICES_OF_ACCOUNT, account_id), state.today
    ):
        return []
    restored = [
        line["msisdn"]
        for line in state.rows(LINES_OF_ACCOUNT, account_id)
        if line["status"] == "suspended"
    ]
    state.update("accounts", "account_id", account_id, status="active")
    for msisdn in restored:
        state.update("lines", "msisdn", msisdn, status="active")
    return restored


def _check_collectable(state: BssState, invoice: dict[str, Any]) -> float:
    """The amount an agent may collect on the invoice now (its amount due), or a refusal."""
    invoice_id, status = invoice["invoice_id"], invoice["status"]
    if status == "disputed":
        raise ToolError(
            f"invoice {invoice_id} is disputed (a billing_dispute ticket is open on it): it is "
            "not collected until the dispute is closed",
            kind="rejected",
        )
    due = state.amount_due(invoice)
    if status in ("paid", "credited") or due < 0.005:
        raise ToolError(f"invoice {invoice_id} is {status}: nothing is due on it", kind="rejected")
    attempts = [
        p
        for p in state.rows(PAYMENTS_OF_INVOICE, invoice_id)
        if p["payment_id"].startswith(_PAYMENT_PREFIX)
    ]
    if len(attempts) >= billing.payment_attempts():
        raise ToolError(
            f"{len(attempts)} payments were attempted on invoice {invoice_id} in this "
            "conversation, the most allowed: the customer can pay it in the app once their "
            "bank or card is sorted",
            kind="rejected",
        )
    return due


@TOOLS.tool
def retry_payment(ctx: BssContext, account_id: str, invoice_id: str) -> dict[str, Any]:
    """Charge the method on file for what the invoice still owes; a settled payment marks it
    paid, lowers the balance and lifts a suspension it ends; a failed one is stored with the
    gateway's reason (:func:`_decline`)."""
    state = ctx.state
    account = _account(state, account_id)
    invoice = _known(state, INVOICE, "invoice_id", invoice_id)
    _check_holder(state, account)
    method = _payment_method(state, account_id)
    _check_owned(invoice, account_id)
    due = _check_collectable(state, invoice)
    reason = _decline(state, method, invoice_id)
    payment_id = _next_id(state, PAYMENT_COUNT, _PAYMENT_PREFIX)
    restored: list[str] = []
    with state.db.change():
        state.insert(
            "payments",
            payment_id=payment_id,
            account_id=account_id,
            invoice_id=invoice_id,
            paid_at=f"{state.today}T12:00:00",
            amount=due,
            method=method["method"],
            status="failed" if reason else "settled",
            failure_reason=reason,
            channel=billing.CARE_CHANNEL,
            card_last4=method["card_last4"],
            card_expiry=method["card_expiry"],
        )
        if reason is None:
            state.update("invoices", "invoice_id", invoice_id, status="paid")
            balance = _money(account["balance"] - due)
            state.update("accounts", "account_id", account_id, balance=balance)
            restored = _lift_suspension(state, account_id)
    output: dict[str, Any] = {
        "payment_id": payment_id,
        "invoice_id": invoice_id,
        "amount": due,
        "status": "failed" if reason else "settled",
    }
    if reason:
        return {
            **output,
            "failure_reason": reason,
            "note": "nothing was collected: a new attempt with the same card or account fails "
            "again unless the method on file changes (update_payment_card)"
            if reason not in transient_failures()
            else "nothing was collected: the failure may pass; one more attempt is allowed",
        }
    return {**output, "invoice_status": "paid", "lines_restored": restored}


@TOOLS.tool
def update_payment_card(
    ctx: BssContext, account_id: str, card_last4: str, card_expiry: str
) -> dict[str, Any]:
    """Put the customer's card on file for the account (its last digits and expiry month)."""
    state = ctx.state
    account = _account(state, account_id)
    _formatted(card_last4, _CARD_LAST4, f"card_last4 must be 4 digits, got {card_last4!r}")
    problem = f"card_expiry must be the expiry month as YYYY-MM, e.g. 2029-04, got {card_expiry!r}"
    expiry = _formatted(card_expiry, _CARD_EXPIRY, problem)
    _check_holder(state, account)
    old = _payment_method(state, account_id)
    this_month = state.today[:7]
    if expiry < this_month:
        raise ToolError(
            f"a card that expired in {expiry} cannot pay: ask for a card valid in {this_month} "
            "or later",
            kind="rejected",
        )
    latest = f"{int(this_month[:4]) + CARD_YEARS}{this_month[4:]}"
    if expiry > latest:
        raise ToolError(
            f"no card is valid until {expiry}: cards are issued for at most {CARD_YEARS} years "
            f"(expiry {latest} at the latest); ask the customer to read it again",
            kind="rejected",
        )
    if (old["card_last4"], old["card_expiry"]) == (card_last4, expiry):
        raise ToolError(
            f"the card ending {card_last4}, expiring {expiry}, is already on file", kind="rejected"
        )
    with state.db.change():
        state.update(
            "payment_methods",
            "account_id",
            account_id,
            method="card",
            card_last4=card_last4,
            card_expiry=expiry,
            updated_on=state.today,
        )
    replaced = {k: old[k] for k in ("method", "card_last4", "card_expiry")}
    return {
        "account_id": account_id,
        "method": "card",
        "channel": old["channel"],
        "card_last4": card_last4,
        "card_expiry": expiry,
        "replaced": replaced,
    }


@TOOLS.tool
def update_contact(
    ctx: BssContext, customer_id: str, email: str | None = None, phone: str | None = None
) -> dict[str, Any]:
    """Set the email and/or phone (both validated) of the customer."""
    state = ctx.state
    customer = _customer(state, customer_id)
    if email is None and phone is None:
        raise ToolError("give email and/or phone", kind="bad_args")
    if email is not None:
        problem = f"email {email!r} is not a valid email address"
        if len(_formatted(email, _EMAIL, problem)) > 120:
            raise ToolError(f"{problem}: longer than 120 characters", kind="bad_args")
    if phone is not None:
        _formatted(phone, _PHONE, f"phone {phone!r} is not an E.164 number like +966500000000")
    _require_verified(state, customer)
    _refuse_internal(customer)
    values = {k: v for k, v in (("email", email), ("phone", phone)) if v is not None}
    with state.db.change():
        state.update("customers", "customer_id", customer_id, **values)
    return {"customer_id": customer_id, "updated": values}


@TOOLS.tool
def open_care_ticket(
    ctx: BssContext, customer_id: str, category: str, summary: str
) -> dict[str, Any]:
    """Open a ticket (summary stored verbatim); returns its id."""
    state = ctx.state
    customer = _customer(state, customer_id)
    if category not in TICKET_CATEGORIES:
        valid = ", ".join(TICKET_CATEGORIES)
        raise ToolError(f"unknown category {category!r}; valid: {valid}", kind="bad_args")
    if not isinstance(summary, str) or not 1 <= len(summary) <= 2000:
        raise ToolError("summary must be 1-2000 characters", kind="bad_args")
    _require_verified(state, customer)
    ticket_id = _next_id(state, TICKET_COUNT, "TCK")
    with state.db.change():
        state.insert(
            "tickets",
            ticket_id=ticket_id,
            customer_id=customer_id,
            category=category,
            summary=summary,
            status="open",
            created_at=f"{state.today}T12:00:00",
        )
    return {"ticket_id": ticket_id, "customer_id": customer_id, "status": "open"}


# --- the written policy --------------------------------------------------------------------------


@TOOLS.tool
def search_policy(ctx: BssContext, query: str) -> dict[str, Any]:
    """The policy sections that best match ``query`` (BM25), in the query's language (Arabic
    letters: the Arabic pages)."""
    if not isinstance(query, str) or not query.strip() or len(query) > 300:
        raise ToolError("query must be 1-300 characters of text", kind="bad_args")
    results = handbook.handbook().search(query, language_of(query))
    if not results:
        return {
            "query": query,
            "results": [],
            "hint": "no section matches these words: try other words, or read_policy with "
            "page_id care-handbook for its contents",
        }
    return {"query": query, "results": results}


@TOOLS.tool
def read_policy(ctx: BssContext, page_id: str, section_id: str | None = None) -> dict[str, Any]:
    """A policy page's contents, or one section's rules whole (``-ar`` pages: in Arabic)."""
    pages = handbook.handbook().pages
    name, lang = handbook.parse_published_id(str(page_id))
    if name not in pages:
        known = ", ".join(
            handbook.published_id(p, language) for language in handbook.LANGUAGES for p in pages
        )
        raise ToolError(f"unknown page_id {page_id!r}; pages: {known}", kind="not_found")
    page = pages[name]
    sections = page.sections[lang]
    header = {
        "page_id": page_id,
        "title": page.title.in_lang(lang),
        "edition": page.edition.in_lang(lang),
        "status": page.status,
        "segment": page.segment,
    }
    if section_id is None:
        contents = [{"section_id": s.section_id, "title": s.title} for s in sections]
        return {**header, "sections": contents}
    section = next((s for s in sections if s.section_id == section_id), None)
    if section is None:
        known = ", ".join(s.section_id for s in sections)
        raise ToolError(
            f"page {page_id!r} has no section {section_id!r}; sections: {known}",
            kind="not_found",
        )
    rules = [{"rule_id": rule_id, "text": text} for rule_id, text in section.rules]
    return {**header, "section_id": section_id, "section_title": section.title, "rules": rules}


# --- distractors ---------------------------------------------------------------------------------

_STORES = {
    "riyadh": ("Olaya Street flagship", "Kingdom Centre kiosk"),
    "jeddah": ("Tahlia Street store", "Red Sea Mall kiosk"),
    "dammam": ("King Saud Street store",),
}


@TOOLS.tool
def get_store_locations(ctx: BssContext, city: str) -> dict[str, Any]:
    """Retail stores of a city (static; no customer data)."""
    stores = _STORES.get(str(city).strip().lower(), ())
    hours = "Sat-Thu 09:00-23:00"
    return {"city": city, "stores": [{"name": name, "hours": hours} for name in stores]}


@TOOLS.tool
def get_device_offers(ctx: BssContext, msisdn: str) -> dict[str, Any]:
    """Handset instalment offers for a line (static catalogue)."""
    _line(ctx.state, msisdn)
    offers = [
        {"device": "Galaxy S26 256 GB", "monthly": 189.0, "months": 24},
        {"device": "iPhone 18 128 GB", "monthly": 215.0, "months": 24},
    ]
    return {"msisdn": msisdn, "offers": offers}
