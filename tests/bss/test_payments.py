"""Payments, cards and dunning (docs/customer_care.md, "Operator rules"): an invoice long overdue
suspends its account and postpaid lines in the generated data and in the tools; retry_payment
collects what an invoice still owes from the method on file, fails as the gateway would (an
expired card, a refused card until it is replaced, a passing failure that clears), within the
attempts allowed; update_payment_card replaces the card; paying (or wholly crediting) the long
overdue invoice lifts the suspension; and the ledger holds after every change."""

from __future__ import annotations

import numpy as np
import pytest

from telcoenv.database import EpisodeDatabase
from telcoenv.domains.bss import billing
from telcoenv.domains.bss.generator import Focal, generate, transient_failures
from telcoenv.domains.bss.ledger import check
from telcoenv.domains.bss.schema import bss_schema
from telcoenv.domains.bss.state import BssState
from tests.bss.test_bss_tools import Ctx, call, refused, rows, verify
from tests.bss.test_operator_rules import _ledger_rows

TRANSIENT = transient_failures()


def _open(focal: Focal, seed: int, *, verified: bool = True):
    data = generate(np.random.default_rng(seed), "ep-pay", focal)
    db = EpisodeDatabase(bss_schema())
    ctx = Ctx(BssState(db, data, "ep-pay"))
    if verified:
        assert verify(ctx, data, data.customer_id)["verified"] is True
    return db, ctx, data


def _failed_with(wanted) -> tuple[int, str]:
    """The first seed whose caller's failed payment has a reason ``wanted`` accepts."""
    for seed in range(400):
        data = generate(np.random.default_rng(seed), "ep-pay", Focal(failed_payment=True))
        reason = data.facts["failure_reason"]
        if wanted(reason):
            return seed, reason
    raise AssertionError("no such seed")


@pytest.fixture
def arrears():
    db, ctx, data = _open(Focal(arrears=True, plan_id="POST-PLUS"), 5)
    yield ctx, data
    db.close()


def _caller(ctx: Ctx, data) -> dict:
    return call(ctx, "get_customer", msisdn=data.msisdns[0])["accounts"][0]


def _unpaid(data) -> list[dict]:
    return [
        i
        for i in rows(data, "invoices")
        if i["account_id"] == data.account_id and i["status"] in ("overdue", "issued")
    ]


def test_generated_dunning_suspends_exactly_the_long_overdue():
    seen = 0
    for seed in range(120):
        data = generate(np.random.default_rng(seed), "ep-pay", Focal())
        long_overdue = {
            i["account_id"]
            for i in rows(data, "invoices")
            if i["status"] == "overdue"
            and billing.suspended_on(i["due_date"]).isoformat() <= billing.TODAY
        }
        suspended = {a["account_id"] for a in rows(data, "accounts") if a["status"] != "active"}
        assert suspended == long_overdue
        for line in rows(data, "lines"):
            barred = line["account_id"] in suspended and line["payment"] == "postpaid"
            assert line["status"] == ("suspended" if barred else "active")
        seen += len(suspended)
    assert 5 <= seen <= 60  # about 2 % of accounts are two bills behind, half of them this long


def test_a_caller_in_arrears_is_suspended_and_owes_both_bills(arrears):
    ctx, data = arrears
    account = _caller(ctx, data)
    assert account["status"] == "suspended"
    assert [line["status"] for line in account["lines"]] == ["suspended"]
    older, latest = _unpaid(data)
    assert (older["period"], latest["period"]) == ("2026-09", "2026-10")
    # By hand: the goodwill credit note is the caller's only credit; every older bill is paid.
    credit = data.facts["credit_note"]
    assert account["balance"] == round(older["amount"] + latest["amount"] + credit, 2)
    assert data.facts["balance"] == account["balance"]
    # The day 2026-09's bill suspended the account: 30 days after it fell due.
    assert billing.suspended_on(older["due_date"]).isoformat() <= billing.TODAY
    assert billing.suspended_on(latest["due_date"]).isoformat() > billing.TODAY
    refused(
        ctx,
        "change_plan",
        "rejected",
        "suspended for non-payment.*retry_payment",
        msisdn=data.msisdns[0],
        plan_id="POST-UNLIMITED",
    )


def test_paying_the_long_overdue_bill_restores_the_line(arrears):
    ctx, data = arrears
    older, latest = _unpaid(data)
    balance = _caller(ctx, data)["balance"]
    paid = call(ctx, "retry_payment", account_id=data.account_id, invoice_id=older["invoice_id"])
    assert paid["status"] == "settled" and paid["amount"] == older["amount"]
    assert paid["lines_restored"] == data.msisdns
    account = _caller(ctx, data)
    assert account["status"] == "active"
    assert account["balance"] == round(balance - older["amount"], 2)
    history = call(ctx, "get_payment_history", account_id=data.account_id, detail="full")
    taken = history["payments"][-1]
    assert (taken["channel"], taken["status"], taken["invoice_id"]) == (
        "care",
        "settled",
        older["invoice_id"],
    )
    # The latest bill is overdue but not long: it is collected without restoring anything more.
    second = call(ctx, "retry_payment", account_id=data.account_id, invoice_id=latest["invoice_id"])
    assert second["lines_restored"] == []
    assert _caller(ctx, data)["balance"] == data.facts["credit_note"]
    refused(
        ctx,
        "retry_payment",
        "rejected",
        "is paid: nothing is due",
        account_id=data.account_id,
        invoice_id=latest["invoice_id"],
    )
    assert check(_ledger_rows(ctx)) == []


def test_a_credit_that_clears_the_long_overdue_bill_lifts_the_suspension():
    db, ctx, data = _open(Focal(arrears=True, plan_id="POST-ESSENTIAL"), 7)
    older, _ = _unpaid(data)
    assert older["amount"] <= billing.credit_authority()
    call(
        ctx,
        "apply_credit",
        account_id=data.account_id,
        amount=older["amount"],
        reason="Service outage all month",
        invoice_id=older["invoice_id"],
    )
    assert _caller(ctx, data)["status"] == "active"
    assert check(_ledger_rows(ctx)) == []
    db.close()


def test_an_expired_card_fails_until_it_is_replaced():
    seed, _ = _failed_with(lambda reason: reason == "card expired")
    db, ctx, data = _open(Focal(failed_payment=True), seed)
    invoice = _unpaid(data)[-1]
    args = {"account_id": data.account_id, "invoice_id": invoice["invoice_id"]}
    first = call(ctx, "retry_payment", **args)
    assert (first["status"], first["failure_reason"]) == ("failed", "card expired")
    assert "update_payment_card" in first["note"]
    card = {"account_id": data.account_id, "card_last4": "4821"}
    refused(
        ctx, "update_payment_card", "rejected", "expired in 2026-10", **card, card_expiry="2026-10"
    )
    refused(ctx, "update_payment_card", "bad_args", "YYYY-MM", **card, card_expiry="04/29")
    refused(
        ctx,
        "update_payment_card",
        "bad_args",
        "4 digits",
        **{**card, "card_last4": "48210"},
        card_expiry="2029-04",
    )
    refused(
        ctx, "update_payment_card", "rejected", "at most 10 years", **card, card_expiry="2037-01"
    )
    updated = call(ctx, "update_payment_card", **card, card_expiry="2029-04")
    assert (updated["card_last4"], updated["card_expiry"]) == ("4821", "2029-04")
    assert updated["replaced"]["card_expiry"] < "2026-11"
    refused(
        ctx, "update_payment_card", "rejected", "already on file", **card, card_expiry="2029-04"
    )
    second = call(ctx, "retry_payment", **args)
    assert second["status"] == "settled" and second["amount"] == invoice["amount"]
    assert check(_ledger_rows(ctx)) == []
    db.close()


def test_a_refused_card_fails_again_within_two_attempts():
    seed, reason = _failed_with(lambda r: r not in TRANSIENT and r != "card expired")
    db, ctx, data = _open(Focal(failed_payment=True), seed)
    args = {"account_id": data.account_id, "invoice_id": _unpaid(data)[-1]["invoice_id"]}
    for _ in range(billing.payment_attempts()):
        again = call(ctx, "retry_payment", **args)
        assert (again["status"], again["failure_reason"]) == ("failed", reason)
    refused(ctx, "retry_payment", "rejected", "2 payments were attempted", **args)
    assert check(_ledger_rows(ctx)) == []
    db.close()


def test_a_passing_failure_clears_on_retry():
    seed, _ = _failed_with(lambda reason: reason in TRANSIENT)
    db, ctx, data = _open(Focal(failed_payment=True), seed)
    invoice = _unpaid(data)[-1]
    paid = call(ctx, "retry_payment", account_id=data.account_id, invoice_id=invoice["invoice_id"])
    assert paid["status"] == "settled" and paid["invoice_status"] == "paid"
    assert check(_ledger_rows(ctx)) == []
    db.close()


def test_payments_wait_for_identity_and_the_rules():
    db, ctx, data = _open(Focal(failed_payment=True), 1, verified=False)
    invoice = _unpaid(data)[-1]
    args = {"account_id": data.account_id, "invoice_id": invoice["invoice_id"]}
    refused(ctx, "retry_payment", "identity_required", "verify_identity", **args)
    refused(
        ctx,
        "update_payment_card",
        "identity_required",
        "verify_identity",
        account_id=data.account_id,
        card_last4="1234",
        card_expiry="2030-01",
    )
    assert verify(ctx, data, data.customer_id)["verified"] is True
    paid = next(
        i
        for i in rows(data, "invoices")
        if i["account_id"] == data.account_id and i["status"] == "paid"
    )
    refused(
        ctx,
        "retry_payment",
        "rejected",
        "nothing is due",
        account_id=data.account_id,
        invoice_id=paid["invoice_id"],
    )
    other = next(i for i in rows(data, "invoices") if i["account_id"] != data.account_id)
    refused(
        ctx,
        "retry_payment",
        "rejected",
        "belongs to account",
        account_id=data.account_id,
        invoice_id=other["invoice_id"],
    )
    refused(
        ctx,
        "retry_payment",
        "not_found",
        "unknown invoice_id",
        account_id=data.account_id,
        invoice_id="INV999999",
    )
    db.close()


def test_disputed_and_prepaid_are_not_collected():
    for seed in range(200):  # an episode where another customer disputes their latest bill
        data = generate(np.random.default_rng(seed), "ep-pay", Focal())
        disputed = [i for i in rows(data, "invoices") if i["status"] == "disputed"]
        if disputed:
            break
    invoice = disputed[0]
    db = EpisodeDatabase(bss_schema())
    ctx = Ctx(BssState(db, data, "ep-pay"))
    holder = next(a for a in rows(data, "accounts") if a["account_id"] == invoice["account_id"])
    assert verify(ctx, data, holder["customer_id"])["verified"] is True
    refused(
        ctx,
        "retry_payment",
        "rejected",
        "disputed",
        account_id=invoice["account_id"],
        invoice_id=invoice["invoice_id"],
    )
    db.close()
    db, ctx, data = _open(Focal(plan_id="PRE-FLEX"), 4)
    refused(
        ctx,
        "update_payment_card",
        "rejected",
        "is prepaid",
        account_id=data.account_id,
        card_last4="1234",
        card_expiry="2030-01",
    )
    db.close()


def _mutated(data, table: str, change) -> list:
    rows_ = {t: list(r) for t, r in data.rows.items()}
    rows_[table] = [change(row) for row in rows_[table]]
    return check(rows_)


def test_the_ledger_catches_a_wrong_suspension_or_method():
    data = generate(np.random.default_rng(5), "ep-pay", Focal(arrears=True))
    assert check(data.rows) == []
    caller = data.account_id
    lifted = _mutated(data, "accounts", lambda r: (*r[:6], "active") if r[1] == caller else r)
    assert {v.rule for v in lifted} == {"suspended when long overdue, only then"}
    barred = _mutated(data, "accounts", lambda r: (*r[:6], "suspended") if r[1] != caller else r)
    assert barred and {v.rule for v in barred} == {"suspended when long overdue, only then"}
    line = _mutated(data, "lines", lambda r: (*r[:5], "active", *r[6:]) if r[2] == caller else r)
    assert {v.rule for v in line} == {"suspended with its account (postpaid)"}
    card = next(m[1] for m in data.rows["payment_methods"] if m[2] == "card")
    other_card = _mutated(
        data, "payment_methods", lambda r: (*r[:4], "0000", *r[5:]) if r[1] == card else r
    )
    assert {v.rule for v in other_card} == {"the account's payments used it"}


def test_autopay_attempts_every_bill_when_due():
    """An account that left a bill unpaid pays online (autopay would have tried it); a bill of
    an autopay account that was never attempted is a violation."""
    data = generate(np.random.default_rng(5), "ep-pay", Focal(arrears=True))
    method = next(m for m in rows(data, "payment_methods") if m["account_id"] == data.account_id)
    assert method["channel"] == "online"
    autopay = {m["account_id"] for m in rows(data, "payment_methods") if m["channel"] == "autopay"}
    dropped = next(
        p for p in rows(data, "payments") if p["account_id"] in autopay and p["status"] == "settled"
    )
    kept = {t: list(r) for t, r in data.rows.items()}
    kept["payments"] = [r for r in kept["payments"] if r[1] != dropped["payment_id"]]
    rules = {v.rule for v in check(kept)}
    assert "autopay attempted it when due" in rules


def test_a_partly_credited_bill_is_paid_by_what_is_left():
    """A credit on the overdue bill, then a payment of the rest: the payment is the amount
    still owed, the bill is paid, the balance is zero of it, and the ledger holds."""
    db, ctx, data = _open(Focal(arrears=True, plan_id="POST-PLUS"), 5)
    older, _ = _unpaid(data)
    balance = _caller(ctx, data)["balance"]
    args = {"account_id": data.account_id, "invoice_id": older["invoice_id"]}
    call(ctx, "apply_credit", **args, amount=50.0, reason="Outage in September")
    paid = call(ctx, "retry_payment", **args)
    assert paid["amount"] == round(older["amount"] - 50.0, 2) and paid["invoice_status"] == "paid"
    assert _caller(ctx, data)["balance"] == round(balance - older["amount"], 2)
    assert check(_ledger_rows(ctx)) == []
    db.close()
