"""The invariants of a BSS ledger: what holds of every customer base the generator makes (and
of any BSS extract in this schema), checked row by row.

:func:`check` reads the rows of one episode (as :func:`generator.generate` returns them, or as
a database holds them) and returns every :class:`Violation`: sums and VAT, dates against the
billing calendar (``billing.py``), statuses against payments, credits and disputes, suspensions
against overdue invoices (dunning), balances
against the ledger, usage against every charge (plan fees, family fees, overage, roaming,
add-ons), eligibility, and internal accounts kept apart. The tests run it over thousands of
generated customers; ``telcoenv validate --domain bss --data`` runs it from the command line.

The planted data traps are part of the ledger, not violations: a double-fired invoice (a second
invoice of a period with the same items, issued seconds after the first, that nothing collects),
``NULL`` usage of a cycle the mediation platform did not collect, and internal test accounts.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING, Any

import numpy as np

from telcoenv.domains.bss import billing
from telcoenv.domains.bss.billing import TODAY
from telcoenv.domains.bss.catalogue import eligible, products
from telcoenv.domains.bss.generator import (  # the billing run's rates and descriptions
    CLOSED_CYCLES,
    FAMILY_FEE_ITEM,
    LINE_OVERAGE,
    OVERAGE_PER_GB,
    ROAMING_PER_GB,
    SHARED_OVERAGE,
    family_pool,
    generate,
)
from telcoenv.domains.bss.scenario import sample_scenario
from telcoenv.domains.bss.schema import bss_schema

if TYPE_CHECKING:
    from telcoenv.domains.bss.models import CareBlueprint

CENT = 0.005  # amounts agree to the cent
_GB = re.compile(r"(\d+(?:\.\d+)?) GB$")


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken invariant: the table and row it was found in, the rule, what was seen."""

    table: str
    key: str
    rule: str
    detail: str

    def __str__(self) -> str:
        return f"{self.table} {self.key}: {self.rule} ({self.detail})"


Rows = dict[str, list[tuple[Any, ...]]]


def _records(rows: Rows) -> dict[str, list[dict[str, Any]]]:
    columns = bss_schema().plan.columns
    return {
        table: [dict(zip(columns[table], row, strict=True)) for row in rows.get(table, [])]
        for table in columns
    }


def _money(value: float) -> float:
    return round(value + 1e-9, 2)


def _age(born: str, today: dt.date) -> int:
    birth = dt.date.fromisoformat(born)
    return today.year - birth.year - ((today.month, today.day) < (birth.month, birth.day))


class _Ledger:
    """The rows of one episode, indexed the ways the invariants read them."""

    def __init__(self, rows: Rows, today: str) -> None:
        self.t = _records(rows)
        self.today_text, self.today = today, dt.date.fromisoformat(today)
        self.vat = float(products()["vat_rate"])
        self.plans = {p["plan_id"]: p for p in products()["plans"]}
        self.addons = {a["addon_id"]: a for a in products()["addons"]}
        t = self.t
        self.customers = {c["customer_id"]: c for c in t["customers"]}
        self.accounts = {a["account_id"]: a for a in t["accounts"]}
        self.lines = {line["msisdn"]: line for line in t["lines"]}
        self.lines_of: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for line in t["lines"]:
            self.lines_of[line["account_id"]].append(line)
        self.usage = {(u["msisdn"], u["month"]): u for u in t["usage_records"]}
        self.items_of: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for item in t["invoice_items"]:
            self.items_of[item["invoice_id"]].append(item)
        self.invoices = {i["invoice_id"]: i for i in t["invoices"]}
        self.paid: dict[str, float] = defaultdict(float)
        for p in t["payments"]:
            if p["status"] == "settled" and p["invoice_id"] is not None:
                self.paid[p["invoice_id"]] += p["amount"]
        self.credited: dict[str, float] = defaultdict(float)
        for c in t["credit_notes"]:
            if c["invoice_id"] is not None:
                self.credited[c["invoice_id"]] -= c["amount"]
        self.disputed = {
            word.rstrip(":")
            for ticket in t["tickets"]
            if ticket["category"] == "billing_dispute" and ticket["status"] == "open"
            for word in ticket["summary"].split()
            if word.rstrip(":") in self.invoices
        }
        self.group_of = {m["msisdn"]: m["group_id"] for m in t["family_members"]}
        self.history: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in sorted(t["plan_history"], key=lambda r: r["start_date"]):
            self.history[row["msisdn"]].append(row)

    def plan_in(self, msisdn: str, cycle: billing.Cycle) -> dict[str, Any] | None:
        """The plan the line was on through ``cycle`` (None: it changed within the cycle)."""
        for row in self.history[msisdn]:
            ended = row["end_date"] is None or row["end_date"] >= cycle.end.isoformat()
            if row["start_date"] <= cycle.start.isoformat() and ended:
                return self.plans.get(row["plan_id"])
        return None

    def holder(self, account_id: str) -> dict[str, Any]:
        return self.customers[self.accounts[account_id]["customer_id"]]

    def prepaid(self, account_id: str) -> bool:
        return any(line["payment"] == "prepaid" for line in self.lines_of[account_id])

    def active_through(self, account_id: str, cycle: billing.Cycle) -> list[dict[str, Any]]:
        return [
            line
            for line in sorted(self.lines_of[account_id], key=lambda x: x["activated_on"])
            if dt.date.fromisoformat(line["activated_on"]) <= cycle.start
        ]


def check(rows: Rows, today: str = TODAY) -> list[Violation]:
    """Every invariant the rows of one episode break (none for a consistent ledger)."""
    ledger = _Ledger(rows, today)
    found: list[Violation] = []
    for rule in _RULES:
        found.extend(rule(ledger))
    return found


def _v(table: str, key: Any, rule: str, detail: str) -> Violation:
    return Violation(table, str(key), rule, detail)


def _catalogue(lg: _Ledger) -> Iterator[Violation]:
    for row in lg.t["rate_plans"]:
        plan = lg.plans.get(row["plan_id"])
        if plan is None or row["price_excl_vat"] != plan["price"]:
            yield _v("rate_plans", row["plan_id"], "the catalogue's plan", str(row))
        elif abs(row["price"] - _money(plan["price"] * (1 + lg.vat))) > CENT:
            yield _v("rate_plans", row["plan_id"], "price with VAT", str(row["price"]))
    for row in lg.t["addons"]:
        addon = lg.addons.get(row["addon_id"])
        if addon is None or row["price_excl_vat"] != addon["price"]:
            yield _v("addons", row["addon_id"], "the catalogue's add-on", str(row))


def _customers(lg: _Ledger) -> Iterator[Violation]:
    for c in lg.t["customers"]:
        internal = c["segment"] == "internal"
        if internal != c["name"].startswith("TEST "):
            yield _v("customers", c["customer_id"], "internal accounts and only those", c["name"])
        if not internal and _age(c["birth_date"], lg.today) < 16:
            yield _v("customers", c["customer_id"], "holder at least 16", c["birth_date"])


def _accounts(lg: _Ledger) -> Iterator[Violation]:
    owed: dict[str, float] = defaultdict(float)
    for i in lg.t["invoices"]:
        owed[i["account_id"]] += i["amount"]
    for c in lg.t["credit_notes"]:
        owed[c["account_id"]] += c["amount"]
    for p in lg.t["payments"]:
        if p["status"] == "settled":
            owed[p["account_id"]] -= p["amount"]
    for a in lg.t["accounts"]:
        key = a["account_id"]
        if not 1 <= a["billing_day"] <= 28:
            yield _v("accounts", key, "billing day 1-28", str(a["billing_day"]))
        if lg.prepaid(key):
            if a["balance"] < 0 or a["credit_limit"] != 0:
                yield _v("accounts", key, "prepaid: credit left, no limit", str(a))
        elif abs(a["balance"] - _money(owed[key])) > CENT:
            yield _v(
                "accounts", key, "balance is the ledger's", f"{a['balance']} != {owed[key]:.2f}"
            )


def _lines(lg: _Ledger) -> Iterator[Violation]:
    for line in lg.t["lines"]:
        key, plan = line["msisdn"], lg.plans.get(line["plan_id"])
        account = lg.accounts.get(line["account_id"])
        if plan is None or account is None:
            yield _v("lines", key, "known plan and account", str(line))
            continue
        holder = lg.holder(line["account_id"])
        if line["payment"] != plan["payment"]:
            yield _v("lines", key, "payment type of its plan", line["payment"])
        segment = "consumer" if holder["segment"] == "internal" else holder["segment"]
        if not eligible(plan, _age(holder["birth_date"], lg.today), segment):
            yield _v("lines", key, "plan allowed for the holder's age and segment", plan["plan_id"])
        activated = dt.date.fromisoformat(line["activated_on"])
        if activated.day != account["billing_day"] or activated > lg.today:
            yield _v(
                "lines", key, "activated on a billing day, not later than today", str(activated)
            )
        if _age(holder["birth_date"], activated) < plan["min_age"]:
            yield _v("lines", key, "holder old enough when activated", str(activated))
        yield from _plan_history(lg, line)


def _plan_history(lg: _Ledger, line: dict[str, Any]) -> Iterator[Violation]:
    """From activation to today, one plan at a time, the last one the line's."""
    rows = lg.history[line["msisdn"]]
    starts = [dt.date.fromisoformat(r["start_date"]) for r in rows]
    ends = [r["end_date"] for r in rows]
    following = [str(start - dt.timedelta(days=1)) for start in starts[1:]]
    if (
        not rows
        or rows[0]["start_date"] != line["activated_on"]
        or ends != [*following, None]
        or rows[-1]["plan_id"] != line["plan_id"]
    ):
        yield _v("plan_history", line["msisdn"], "contiguous from activation to the plan", "")


def _usage(lg: _Ledger) -> Iterator[Violation]:
    for line in lg.t["lines"]:
        account = lg.accounts.get(line["account_id"])
        plan = lg.plans.get(line["plan_id"])
        if account is None or plan is None:
            continue
        day, activated = account["billing_day"], dt.date.fromisoformat(line["activated_on"])
        months = [
            m
            for m in billing.periods(CLOSED_CYCLES, lg.today_text)
            if billing.cycle(m, day).end >= activated
        ]
        stored = sorted(m for (msisdn, m) in lg.usage if msisdn == line["msisdn"])
        if stored != months:
            yield _v("usage_records", line["msisdn"], "one record per cycle since activation", "")
        for month in stored:
            record = lg.usage[line["msisdn"], month]
            yield from _record(lg, record, lg.plan_in(line["msisdn"], billing.cycle(month, day)))


def _record(lg: _Ledger, u: dict[str, Any], plan: dict[str, Any] | None) -> Iterator[Violation]:
    key = f"{u['msisdn']} {u['month']}"
    if u["data_gb"] is None:
        if u["voice_min"] is not None or u["sms"] is not None:
            yield _v("usage_records", key, "a cycle not collected is NULL throughout", str(u))
        return
    if bool(u["roaming_data_gb"]) != (u["roaming_zone"] is not None):
        yield _v("usage_records", key, "roaming data has its zone", str(u))
    if plan is None:  # the plan changed in this (open) cycle: both allowances applied
        return
    for name in ("voice_min", "sms"):
        if plan[name] is not None and u[name] > plan[name]:
            yield _v("usage_records", key, f"{name} within the allowance (never charged)", "")
    limit = plan["data_gb"]
    if plan["payment"] == "prepaid" and limit is not None and u["data_gb"] > limit + 1e-9:
        yield _v("usage_records", key, "prepaid data stops at the allowance", "")


def _invoices(lg: _Ledger) -> Iterator[Violation]:
    by_period: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for inv in lg.t["invoices"]:
        by_period[inv["account_id"], inv["period"]].append(inv)
        yield from _invoice(lg, inv)
    for (_, period), invoices in by_period.items():
        first, *others = sorted(invoices, key=lambda i: i["issued_at"])
        items = sorted(_item_key(i) for i in lg.items_of[first["invoice_id"]])
        for other in others:  # a double-fired run: the same bill, seconds later, uncollected
            same = sorted(_item_key(i) for i in lg.items_of[other["invoice_id"]]) == items
            if len(others) > 1 or not same or lg.paid.get(other["invoice_id"]):
                yield _v("invoices", other["invoice_id"], "one invoice per cycle", period)


def _item_key(item: dict[str, Any]) -> tuple[Any, ...]:
    return (item["msisdn"], item["kind"], item["description"], item["amount_excl_vat"])


def _invoice(lg: _Ledger, inv: dict[str, Any]) -> Iterator[Violation]:
    key = inv["invoice_id"]
    account = lg.accounts.get(inv["account_id"])
    if account is None:
        yield _v("invoices", key, "known account", inv["account_id"])
        return
    cycle = billing.cycle(inv["period"], account["billing_day"])
    if not cycle.closed(lg.today_text):
        yield _v("invoices", key, "closed cycles only are invoiced", inv["period"])
    dates = (cycle.start.isoformat(), cycle.end.isoformat(), cycle.due_on.isoformat())
    if (inv["period_start"], inv["period_end"], inv["due_date"]) != dates:
        yield _v("invoices", key, "the cycle's dates and due date", str(dates))
    if inv["issued_at"][:10] != cycle.issued_on.isoformat():
        yield _v("invoices", key, "issued the day after the cycle", inv["issued_at"])
    items = lg.items_of[key]
    net = _money(sum(i["amount_excl_vat"] for i in items))
    vat = _money(net * lg.vat)
    if abs(inv["amount_excl_vat"] - net) > CENT or abs(inv["vat"] - vat) > CENT:
        yield _v("invoices", key, "net is the items' sum, VAT at the rate", f"{net} {vat}")
    if abs(inv["amount"] - _money(inv["amount_excl_vat"] + inv["vat"])) > CENT:
        yield _v("invoices", key, "amount is net plus VAT", str(inv["amount"]))
    expected = _status(lg, inv)
    if inv["status"] != expected:
        yield _v("invoices", key, "status from payments, credits and disputes", expected)
    yield from _charges(lg, inv, cycle, items)


def _status(lg: _Ledger, inv: dict[str, Any]) -> str:
    """Credited, paid, disputed (an open billing_dispute ticket names it: a dispute marked on
    the invoice needs one, a ticket need not mark it), or issued and overdue by its due date."""
    key, amount = inv["invoice_id"], inv["amount"]
    if lg.credited.get(key, 0.0) >= amount - CENT:
        return "credited"
    # Paid: its payments cover what its credits left (a care payment collects the rest).
    if lg.paid.get(key, 0.0) + lg.credited.get(key, 0.0) >= amount - CENT:
        return "paid"
    if inv["status"] == "disputed" and key in lg.disputed:
        return "disputed"
    return "overdue" if inv["due_date"] < lg.today_text else "issued"


def _charges(
    lg: _Ledger, inv: dict[str, Any], cycle: billing.Cycle, items: list[dict[str, Any]]
) -> Iterator[Violation]:
    """Every item is one the cycle's usage, lines and purchases call for, and every charge
    they call for is there."""
    key, account_id = inv["invoice_id"], inv["account_id"]
    internal = lg.holder(account_id)["segment"] == "internal"
    expected = _expected_items(lg, account_id, cycle)
    seen = sorted(_item_key(i) for i in items if not (internal and i["kind"] == "device"))
    if seen != sorted(expected):
        detail = (
            f"billed {sorted(set(seen) - set(expected))}, due {sorted(set(expected) - set(seen))}"
        )
        yield _v("invoice_items", key, "items are the cycle's charges", detail)
    for item in items:
        if item["kind"] == "device" and not internal:
            yield _v("invoice_items", item["item_id"], "device charges on internal accounts", "")


def _expected_items(lg: _Ledger, account_id: str, cycle: billing.Cycle) -> list[tuple[Any, ...]]:
    lines = [line for line in lg.active_through(account_id, cycle) if line["payment"] == "postpaid"]
    group = lg.group_of.get(lines[0]["msisdn"]) if lines else None
    grouped = group is not None
    owner = next(
        (
            m["msisdn"]
            for m in lg.t["family_members"]
            if m["group_id"] == group and m["role"] == "owner"
        ),
        None,
    )
    ordered = sorted(lines, key=lambda x: x["msisdn"] != owner)
    expected: list[tuple[Any, ...]] = []
    coupon_gb: dict[str, float] = defaultdict(float)
    for sub in lg.t["line_addons"]:
        line = lg.lines.get(sub["msisdn"])
        if line is None or line["account_id"] != account_id or line["payment"] != "postpaid":
            continue
        # Billed in the cycle it started in (a pack cancelled since was billed all the same).
        if cycle.holds(dt.date.fromisoformat(sub["start_date"])):
            addon = lg.addons[sub["addon_id"]]
            expected.append((sub["msisdn"], "addon", addon["name"]["en"], float(addon["price"])))
            if addon["kind"] == "data_coupon":
                coupon_gb[sub["msisdn"]] += addon["data_gb"]
    used: dict[str, float | None] = {}
    plans = {line["msisdn"]: lg.plan_in(line["msisdn"], cycle) for line in ordered}
    for position, line in enumerate(ordered):
        msisdn, plan = line["msisdn"], plans[line["msisdn"]]
        if plan is None:  # no single plan through a closed cycle: plan_history says why
            continue
        expected.append((msisdn, "plan", plan["name"]["en"], float(plan["price"])))
        if grouped and position > 0:
            expected.append((msisdn, "family", FAMILY_FEE_ITEM, billing.family_fee()))
        record = lg.usage.get((msisdn, cycle.period))
        used[msisdn] = record["data_gb"] if record else None
        if record and record["roaming_data_gb"]:
            gb, zone = record["roaming_data_gb"], record["roaming_zone"]
            expected.append(
                (
                    msisdn,
                    "roaming",
                    f"Roaming data {zone} {gb} GB",
                    _money(gb * ROAMING_PER_GB[zone]),
                )
            )
        if grouped or used[msisdn] is None or plan["data_gb"] is None:
            continue
        allowance = plan["data_gb"] + coupon_gb[msisdn]
        expected += _overage(msisdn, used[msisdn], allowance, LINE_OVERAGE, OVERAGE_PER_GB)
    if grouped and ordered:
        allowances = [(plans[m] or {}).get("data_gb") for m in plans]
        if None not in allowances:
            total = round(sum(v or 0.0 for v in used.values()), 2)
            pool = sum(allowances) + sum(coupon_gb.values())
            expected += _overage(ordered[0]["msisdn"], total, pool, SHARED_OVERAGE, OVERAGE_PER_GB)
    return expected


def _overage(msisdn: str, used: float, allowance: float, label: str, rate: float) -> list[Any]:
    if used <= allowance + 1e-9:
        return []
    extra = round(used - allowance, 2)
    return [(msisdn, "overage", f"{label} {extra} GB", _money(extra * rate))]


def _payments(lg: _Ledger) -> Iterator[Violation]:
    for p in lg.t["payments"]:
        key, inv = p["payment_id"], lg.invoices.get(p["invoice_id"])
        if inv is None or inv["account_id"] != p["account_id"]:
            yield _v("payments", key, "pays an invoice of its account", str(p["invoice_id"]))
            continue
        care = p["channel"] == billing.CARE_CHANNEL  # taken by an agent today (retry_payment)
        if not inv["issued_at"] <= p["paid_at"] <= f"{lg.today_text}T23:59:59":
            yield _v("payments", key, "made after the invoice, by today", p["paid_at"])
        if not (care or p["paid_at"] < lg.today_text):
            yield _v("payments", key, "only care takes a payment today", p["paid_at"])
        # An agent collects what is left (credits and payments before it deducted).
        if abs(p["amount"] - inv["amount"]) > CENT and not (care and p["amount"] <= inv["amount"]):
            yield _v("payments", key, "the invoice's amount", str(p["amount"]))
        channels = products()["payment_methods"].get(p["method"], ())
        if not (care or p["channel"] in channels):
            yield _v("payments", key, "a channel of its method", p["channel"])
        if (p["status"] == "failed") != (p["failure_reason"] is not None):
            yield _v("payments", key, "a failed payment has a reason, only it", str(p))
        card = p["method"] == "card"
        if card != (p["card_last4"] is not None and p["card_expiry"] is not None):
            yield _v("payments", key, "card details on card payments only", str(p))
        if card and p["status"] == "settled" and p["card_expiry"] < p["paid_at"][:7]:
            yield _v("payments", key, "a card is valid when it pays", str(p))
        if p["failure_reason"] == "card expired" and not p["card_expiry"] < p["paid_at"][:7]:
            yield _v("payments", key, "an expired card's expiry is before the payment", str(p))


_INSTRUMENT = ("method", "channel", "card_last4", "card_expiry")


def _payment_methods(lg: _Ledger) -> Iterator[Violation]:
    """Every postpaid account has one method on file, a prepaid one none; a card carries its
    last digits and expiry; the account's payments used it (those before it was replaced,
    the one it replaced)."""
    on_file = {m["account_id"]: m for m in lg.t["payment_methods"]}
    for a in lg.t["accounts"]:
        key, method = a["account_id"], on_file.get(a["account_id"])
        if (method is None) != lg.prepaid(key):
            yield _v("payment_methods", key, "a method on file for postpaid accounts only", "")
        if method is None:
            continue
        card = method["method"] == "card"
        if card != (method["card_last4"] is not None and method["card_expiry"] is not None):
            yield _v("payment_methods", key, "card details for a card only", str(method))
        replaced = method["updated_on"]
        used = {
            tuple(p[k] for k in _INSTRUMENT)
            for p in lg.t["payments"]
            if p["account_id"] == key and p["channel"] != billing.CARE_CHANNEL
        }
        if replaced is None and used - {tuple(method[k] for k in _INSTRUMENT)}:
            yield _v("payment_methods", key, "the account's payments used it", str(used))
        if replaced is not None and len(used) > 1:
            yield _v("payment_methods", key, "one method before it was replaced", str(used))


def _commitments(lg: _Ledger) -> Iterator[Violation]:
    """A commitment is a postpaid line's (internal accounts aside), of a length the policy
    offers, signed on a billing day from its activation to today."""
    _, lengths = billing.commitment_terms()
    for line in lg.t["lines"]:
        end = line["commitment_end"]
        if end is None:
            continue
        account = lg.accounts[line["account_id"]]
        last = dt.date.fromisoformat(end)
        after = last + dt.timedelta(days=1)
        starts = [billing.months_after(after, -months) for months in lengths]
        signed = [
            s
            for s in starts
            if line["activated_on"] <= s.isoformat() <= lg.today_text
            and s.day == account["billing_day"]
        ]
        if (
            line["payment"] != "postpaid"
            or lg.holder(line["account_id"])["segment"] == "internal"
            or not signed
        ):
            yield _v("lines", line["msisdn"], "a commitment the policy offers", end)


def _early_change_fees(lg: _Ledger) -> Iterator[Violation]:
    """Every move to a cheaper plan while a commitment ran has its early-change fee, charged
    on the day of the move, of the amount the policy gives; no other charge is made."""
    expected: dict[tuple[str, str], float] = {}
    for msisdn, rows in lg.history.items():
        end = lg.lines[msisdn]["commitment_end"] if msisdn in lg.lines else None
        for before, after in pairwise(rows):
            old, new = lg.plans.get(before["plan_id"]), lg.plans.get(after["plan_id"])
            if old is None or new is None:
                continue
            fee = billing.early_change_fee(old["price"], new["price"], end, after["start_date"])
            if fee is not None:
                expected[(msisdn, after["start_date"])] = fee[0]
    charged: dict[tuple[str, str], float] = {}
    for charge in lg.t["charges"]:
        key = (charge["msisdn"], charge["charged_on"])
        charged[key] = charged.get(key, 0.0) + charge["amount_excl_vat"]
        if charge["kind"] != billing.EARLY_CHANGE_FEE or charge["charged_on"] > lg.today_text:
            yield _v("charges", charge["charge_id"], "an early-change fee, by today", str(charge))
    for key in sorted(set(expected) | set(charged)):
        if abs(expected.get(key, 0.0) - charged.get(key, 0.0)) > CENT:
            yield _v(
                "charges", " ".join(key), "the early-change fee of a move", str(expected.get(key))
            )


def _autopay(lg: _Ledger) -> Iterator[Violation]:
    """Autopay charges every invoice by its due date: an autopay account's invoice past due
    has a payment attempt, unless it is disputed, credited or a held double-fired copy."""
    autopay = {m["account_id"] for m in lg.t["payment_methods"] if m["channel"] == "autopay"}
    attempted = {p["invoice_id"] for p in lg.t["payments"]}
    of: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for inv in lg.t["invoices"]:
        of[inv["account_id"]].append(inv)
    for account_id in autopay:
        held = billing.held_copies(of[account_id])
        for inv in of[account_id]:
            due = inv["due_date"] < lg.today_text and _status(lg, inv) in ("overdue", "paid")
            if due and inv["invoice_id"] not in attempted | held:
                yield _v("invoices", inv["invoice_id"], "autopay attempted it when due", "")


def _dunning(lg: _Ledger) -> Iterator[Violation]:
    """An account is suspended, with its postpaid lines, exactly when one of its invoices is
    overdue past the dunning limit (``billing.suspending``); prepaid lines are never."""
    of: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for inv in lg.t["invoices"]:
        of[inv["account_id"]].append({**inv, "status": _status(lg, inv)})
    suspended = {a for a, invoices in of.items() if billing.suspending(invoices, lg.today_text)}
    for a in lg.t["accounts"]:
        expected = "suspended" if a["account_id"] in suspended else "active"
        if a["status"] != expected:
            rule = "suspended when long overdue, only then"
            yield _v("accounts", a["account_id"], rule, expected)
    for line in lg.t["lines"]:
        postpaid = line["payment"] == "postpaid"
        expected = "suspended" if postpaid and line["account_id"] in suspended else "active"
        if line["status"] != expected:
            yield _v("lines", line["msisdn"], "suspended with its account (postpaid)", expected)


def _credit_notes(lg: _Ledger) -> Iterator[Violation]:
    for c in lg.t["credit_notes"]:
        key = c["credit_note_id"]
        if c["amount"] >= 0:
            yield _v("credit_notes", key, "negative amount", str(c["amount"]))
        inv = lg.invoices.get(c["invoice_id"]) if c["invoice_id"] else None
        if c["invoice_id"] is not None and (inv is None or inv["account_id"] != c["account_id"]):
            yield _v("credit_notes", key, "credits an invoice of its account", c["invoice_id"])
        elif inv is not None:
            if c["issued_at"] < inv["issued_at"]:
                yield _v("credit_notes", key, "issued after its invoice", c["issued_at"])
            if lg.credited[inv["invoice_id"]] > inv["amount"] + CENT:
                yield _v("credit_notes", key, "credits stay within the invoice", inv["invoice_id"])


def _subscriptions(lg: _Ledger) -> Iterator[Violation]:
    for sub in lg.t["line_addons"]:
        key, addon = sub["subscription_id"], lg.addons.get(sub["addon_id"])
        if addon is None or sub["msisdn"] not in lg.lines:
            yield _v("line_addons", key, "known add-on and line", str(sub))
            continue
        start, end = (dt.date.fromisoformat(sub[k]) for k in ("start_date", "end_date"))
        if end != start + dt.timedelta(days=addon["validity_days"] - 1):
            yield _v("line_addons", key, "ends after its validity", str(sub))
        if sub["status"] != "cancelled":
            status = "active" if sub["end_date"] >= lg.today_text else "expired"
            if sub["status"] != status:
                yield _v("line_addons", key, "status from its dates", status)


def _families(lg: _Ledger) -> Iterator[Violation]:
    for group in lg.t["family_groups"]:
        key = group["group_id"]
        members = [m for m in lg.t["family_members"] if m["group_id"] == key]
        lines = [lg.lines.get(m["msisdn"]) for m in members]
        if (
            any(line is None or line["account_id"] != group["owner_account_id"] for line in lines)
            or [m["role"] for m in members].count("owner") != 1
        ):
            yield _v("family_groups", key, "one owner, members on the owner's account", "")
            continue
        pool = family_pool([line["plan_id"] for line in lines if line], lg.plans)
        if group["shared_data_gb"] != pool:
            yield _v("family_groups", key, "shared data is the plans' pooled", str(pool))


_RULES = (
    _catalogue,
    _customers,
    _accounts,
    _lines,
    _usage,
    _invoices,
    _payments,
    _payment_methods,
    _autopay,
    _dunning,
    _commitments,
    _early_change_fees,
    _credit_notes,
    _subscriptions,
    _families,
)


@dataclass(frozen=True, slots=True)
class LedgerReport:
    """The invariants checked over generated episodes: how many, and what broke."""

    episodes: int
    customers: int
    invoices: int
    violations: tuple[Violation, ...]


def check_generated(blueprints: Iterable[CareBlueprint], seeds: Iterable[int]) -> LedgerReport:
    """Generate each blueprint's episode for each seed, as an environment does (its scenario,
    then its data, from one generator), and check every ledger."""
    episodes = customers = invoices = 0
    found: list[Violation] = []
    seeds = list(seeds)
    for blueprint in blueprints:
        for seed in seeds:
            rng = np.random.default_rng(seed)
            data = generate(
                rng, f"{blueprint.blueprint_id}-{seed}", sample_scenario(blueprint, rng).focal
            )
            episodes += 1
            customers += len(data.rows["customers"])
            invoices += len(data.rows["invoices"])
            found += [
                Violation(
                    v.table, f"{blueprint.blueprint_id} seed {seed} {v.key}", v.rule, v.detail
                )
                for v in check(data.rows)
            ]
    return LedgerReport(episodes, customers, invoices, tuple(found))
