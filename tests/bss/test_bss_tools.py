"""BSS customer-care tools: reads return what is stored (traps included), every business rule
refuses with a precise message and changes nothing, and hostile strings never reach SQL."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import fastjsonschema
import numpy as np
import pytest

from telcoenv.catalog import load_tools
from telcoenv.database import EpisodeDatabase
from telcoenv.domains.bss import bss_domain
from telcoenv.domains.bss.catalogue import products
from telcoenv.domains.bss.generator import Focal, generate
from telcoenv.domains.bss.schema import bss_metadata, bss_schema
from telcoenv.domains.bss.state import BssState, table_queries
from telcoenv.domains.bss.tools import TOOLS as BSS_TOOLS
from telcoenv.domains.network.loading import network_catalog
from telcoenv.errors import ToolError
from tests.conftest import REPO_ROOT, make_env

TOOLS = REPO_ROOT / "tools"
FOCAL = Focal(
    age=34,
    family_size=3,
    duplicate_month="2026-09",
    roaming_month="2026-10",
    failed_payment=True,
)
HOSTILE = (
    "'; DROP TABLE customers;--",
    "x' OR '1'='1",
    '" OR ""="',
    "1; DELETE FROM lines",
    "C000001' --",
)


@dataclass
class Ctx:
    state: BssState
    step: int = 0


def verify(ctx: Ctx, data, customer_id: str) -> dict:
    """verify_identity with the customer's own name and birth date (as stored)."""
    row = next(r for r in rows(data, "customers") if r["customer_id"] == customer_id)
    return call(
        ctx,
        "verify_identity",
        customer_id=customer_id,
        full_name=row["name"],
        birth_date=row["birth_date"],
    )


@pytest.fixture
def unverified():
    """The episode's data, before the caller proved who they are."""
    data = generate(np.random.default_rng(11), "ep-tools", FOCAL)
    db = EpisodeDatabase(bss_schema())
    ctx = Ctx(BssState(db, data, "ep-tools"))
    yield ctx, data
    db.close()


@pytest.fixture
def env(unverified):
    """The episode's data, the caller verified as the focal customer (the business rules
    after the identity check)."""
    ctx, data = unverified
    assert verify(ctx, data, data.customer_id)["verified"] is True
    return ctx, data


def call(ctx: Ctx, name: str, **args):
    return BSS_TOOLS[name](ctx, **args)


def rows(data, table: str) -> list[dict]:
    columns = bss_metadata().tables[table].columns.keys()
    return [dict(zip(columns, row, strict=True)) for row in data.rows[table]]


def refused(ctx: Ctx, name: str, kind: str, match: str | None, **args) -> None:
    """The call raises a ToolError of ``kind`` matching ``match`` (None: any message) and
    changes nothing."""
    before = ctx.state.rows_json()
    with pytest.raises(ToolError, match=match) as info:
        call(ctx, name, **args)
    assert info.value.kind == kind, info.value
    assert ctx.state.rows_json() == before


def refused_contact(env: tuple, match: str, **details: str) -> None:
    """update_contact of the focal customer with ``details`` is refused as ``bad_args``."""
    ctx, data = env
    refused(ctx, "update_contact", "bad_args", match, customer_id=data.customer_id, **details)


def other_customer(data, segment: str) -> dict:
    return next(
        c
        for c in rows(data, "customers")
        if c["segment"] == segment and c["customer_id"] != data.customer_id
    )


def line_of(data, customer_id: str) -> dict:
    account = next(a for a in rows(data, "accounts") if a["customer_id"] == customer_id)
    return next(x for x in rows(data, "lines") if x["account_id"] == account["account_id"])


# --- specs ---------------------------------------------------------------------------------------


def test_specs_load_and_match_the_implementations():
    specs = load_tools(TOOLS, domain="bss")
    assert set(specs) == {*BSS_TOOLS, "submit_resolution"}  # reserved: shared, env-run
    assert specs["submit_resolution"].domain == "all"
    kinds = {name: (spec.kind, spec.effect) for name, spec in specs.items()}
    assert kinds["get_store_locations"] == ("distractor", "read")
    assert kinds["apply_credit"] == ("core", "write")
    for spec in specs.values():
        assert spec.parameters.get("additionalProperties") is False, spec.name
        fastjsonschema.compile(spec.parameters, use_default=False)  # what the tooling compiles


def test_the_network_catalogue_has_no_bss_tool():
    bss = set(load_tools(TOOLS, domain="bss")) - {"submit_resolution"}
    assert not bss & set(network_catalog().tools)
    assert not bss & set(load_tools(TOOLS))


# --- reads ---------------------------------------------------------------------------------------


def test_get_customer_by_msisdn_and_by_id(env):
    ctx, data = env
    by_line = call(ctx, "get_customer", msisdn=data.msisdns[1])
    by_id = call(ctx, "get_customer", customer_id=data.customer_id)
    assert by_line == by_id
    assert by_id["customer"]["age"] == FOCAL.age
    (account,) = by_id["accounts"]
    assert account["account_id"] == data.account_id
    assert sorted(x["msisdn"] for x in account["lines"]) == sorted(data.msisdns)
    assert {x["plan"]["plan_id"] for x in account["lines"]} == {FOCAL.plan_id}
    refused(ctx, "get_customer", "bad_args", "exactly one", msisdn=data.msisdns[0], customer_id="C")
    refused(ctx, "get_customer", "bad_args", "exactly one")


def test_get_bill_returns_the_double_fired_invoice(env):
    ctx, data = env
    bill = call(ctx, "get_bill", account_id=data.account_id, period=FOCAL.duplicate_month)
    ids = [invoice["invoice_id"] for invoice in bill["invoices"]]
    original = data.facts["invoices"][FOCAL.duplicate_month][0]
    assert ids == [original, data.facts["duplicate_invoice"]]
    assert bill["invoices"][0]["amount"] == bill["invoices"][1]["amount"]
    assert bill["invoices"][0]["items"] and all(i["kind"] for i in bill["invoices"][0]["items"])
    normal = call(ctx, "get_bill", account_id=data.account_id, period="2026-08")
    assert len(normal["invoices"]) == 1
    assert normal["invoices"][0]["amount"] == data.facts["invoices"]["2026-08"][1]
    roaming = call(ctx, "get_bill", account_id=data.account_id, period=FOCAL.roaming_month)
    charges = [i for i in roaming["invoices"][0]["items"] if i["kind"] == "roaming"]
    assert charges[0]["amount_excl_vat"] == data.facts["roaming_charge"]
    assert call(ctx, "get_bill", account_id=data.account_id, period="2020-01")["invoices"] == []
    refused(ctx, "get_bill", "bad_args", "YYYY-MM", account_id=data.account_id, period="2026-13")


def test_get_usage_keeps_null_apart_from_zero(env):
    ctx, data = env
    msisdn = data.msisdns[0]  # the focal line has one uncollected month
    usage = call(ctx, "get_usage", msisdn=msisdn)["usage"]
    stored = {r["month"]: r for r in rows(data, "usage_records") if r["msisdn"] == msisdn}
    assert [u["month"] for u in usage] == data.months[:-1]  # the closed cycles
    assert all(u["data_gb"] == stored[u["month"]]["data_gb"] for u in usage)
    gap = next(u["month"] for u in usage if u["data_gb"] is None)
    assert call(ctx, "get_usage", msisdn=msisdn, period=gap)["usage"][0]["voice_min"] is None
    latest = call(ctx, "get_usage", msisdn=msisdn, months=3)  # closed cycles only
    assert [u["month"] for u in latest["usage"]] == data.months[-4:-1]
    assert "current_cycle" not in latest
    # The open cycle apart, with its dates: usage so far, never among the closed ones.
    current = call(ctx, "get_usage", msisdn=msisdn)["current_cycle"]
    day = next(
        a["billing_day"] for a in rows(data, "accounts") if a["account_id"] == data.account_id
    )
    assert current["period"] == data.months[-1] and current["cycle_start"][8:] == f"{day:02d}"
    assert current["as_of"] == "2026-11-30" and current["cycle_start"] <= "2026-11-30"
    assert current["usage_so_far"]["data_gb"] == stored[data.months[-1]]["data_gb"]
    only = call(ctx, "get_usage", msisdn=msisdn, period=data.months[-1])
    assert only["usage"] == [] and only["current_cycle"] == current
    assert "current_cycle" not in call(ctx, "get_usage", msisdn=msisdn, period=gap)
    refused(ctx, "get_usage", "bad_args", "not both", msisdn=msisdn, period=gap, months=2)


def test_catalogue_reads_and_filters(env):
    ctx, _ = env
    business = call(ctx, "list_plans", segment="business")["plans"]
    assert {p["plan_id"] for p in business} == {"BIZ-PRO", "BIZ-ELITE"}
    prepaid = call(ctx, "list_plans", payment="prepaid")["plans"]
    assert {p["plan_id"] for p in prepaid} == {"PRE-STARTER", "PRE-FLEX"}
    listed = call(ctx, "list_plans")["plans_by_kind"]  # a summary: grouped, key fields
    assert sum(len(plans) for plans in listed.values()) == len(products()["plans"]) == 15
    assert set(listed) == {"prepaid consumer", "postpaid consumer", "postpaid business"}
    youth = call(ctx, "get_plan", plan_id="YOUTH-25")["plan"]
    assert (youth["min_age"], youth["max_age"], youth["price"]) == (18, 25, 90.85)
    assert call(ctx, "get_plan", plan_id="POST-UNLIMITED")["plan"]["data_gb"] is None
    europe = call(ctx, "list_addons", zone="EUROPE")["addons"]
    assert [(a["addon_id"], a["payment"]) for a in europe] == [("ROAM-EU-14", ["postpaid"])]
    assert len(call(ctx, "list_addons", kind="data_coupon")["addons"]) == 3


def test_family_usage_against_the_shared_allowance(env):
    ctx, data = env
    month = data.months[-1]
    family = call(ctx, "get_family_usage", account_id=data.account_id)
    plans = {p["plan_id"]: p["data_gb"] for p in products()["plans"]}
    pooled = sum(plans[r["plan_id"]] for r in rows(data, "lines") if r["msisdn"] in data.msisdns)
    assert family["period"] == month and family["open"]  # default: the open cycle, so far
    assert family["shared_data_gb"] == pooled  # the members' plan allowances pooled
    assert sorted(m["msisdn"] for m in family["members"]) == sorted(data.msisdns)
    stored = {r["msisdn"]: r["data_gb"] for r in rows(data, "usage_records") if r["month"] == month}
    assert all(m["data_gb"] == stored[m["msisdn"]] for m in family["members"])
    collected = [stored[m] for m in data.msisdns if stored[m] is not None]
    assert family["total_data_gb"] == pytest.approx(sum(collected), abs=0.01)
    by_group = call(ctx, "get_family_usage", group_id=family["group_id"])
    assert by_group == family
    lone = other_customer(data, "consumer")
    account = next(a for a in rows(data, "accounts") if a["customer_id"] == lone["customer_id"])
    refused(
        ctx,
        "get_family_usage",
        "not_found",
        "owns no family group",
        account_id=account["account_id"],
    )


def test_payment_history_has_failed_payments_and_negative_credits(env):
    ctx, data = env
    history = call(ctx, "get_payment_history", account_id=data.account_id)
    failed = [p for p in history["payments"] if p["status"] == "failed"]
    assert len(failed) == 1 and failed[0]["failure_reason"] == data.facts["failure_reason"]
    assert [c["amount"] for c in history["credit_notes"]] == [data.facts["credit_note"]]
    assert history["credit_notes"][0]["amount"] < 0


def test_distractors_answer_plausibly(env):
    ctx, data = env
    assert call(ctx, "get_store_locations", city="Riyadh")["stores"]
    assert call(ctx, "get_device_offers", msisdn=data.msisdns[0])["offers"]


# --- writes --------------------------------------------------------------------------------------


def refused_roaming_pack(ctx: Ctx, msisdn: str, start: str) -> None:
    """ROAM-EU-14 from ``start`` is refused: the line has it active on one of those days."""
    refused(
        ctx,
        "subscribe_addon",
        "rejected",
        "already has add-on ROAM-EU-14",
        msisdn=msisdn,
        addon_id="ROAM-EU-14",
        start_date=start,
    )


def test_only_overlapping_days_of_the_same_add_on_are_refused(env):
    ctx, data = env
    msisdn = data.msisdns[0]
    later = call(
        ctx, "subscribe_addon", msisdn=msisdn, addon_id="ROAM-EU-14", start_date="2027-02-01"
    )
    assert (later["start_date"], later["end_date"]) == ("2027-02-01", "2027-02-14")
    # Ends (2026-12-13) before the later one starts: was refused as "active until 2027-02-14".
    earlier = call(
        ctx, "subscribe_addon", msisdn=msisdn, addon_id="ROAM-EU-14", start_date="2026-11-30"
    )
    assert earlier["end_date"] == "2026-12-13"
    for start in ("2026-12-13", "2027-01-20", "2027-02-14"):  # a day in common with either
        refused_roaming_pack(ctx, msisdn, start)


def test_subscribe_cancel_and_realtime_charges(env):
    ctx, data = env
    msisdn = data.msisdns[0]
    (fee,) = call(ctx, "get_realtime_charges", msisdn=msisdn)["charges"]  # the plan's, whole
    assert (fee["plan_id"], fee["amount_excl_vat"]) == ("POST-ESSENTIAL", 120.0)
    sub = call(
        ctx, "subscribe_addon", msisdn=msisdn, addon_id="ROAM-EU-14", start_date="2026-11-30"
    )
    assert (sub["end_date"], sub["charged_to"]) == ("2026-12-13", "next invoice")
    charges = call(ctx, "get_realtime_charges", msisdn=msisdn)
    assert [c.get("subscription_id") for c in charges["charges"]] == [None, sub["subscription_id"]]
    assert charges["total"] == 286.35  # (120.00 + 129.00) with VAT
    line = call(ctx, "get_customer", msisdn=msisdn)["accounts"][0]["lines"]
    active = next(x for x in line if x["msisdn"] == msisdn).get("active_addons", [])
    assert [a["addon_id"] for a in active] == ["ROAM-EU-14"]
    refused_roaming_pack(ctx, msisdn, "2026-12-05")
    other = data.msisdns[1]
    refused(
        ctx,
        "cancel_addon",
        "rejected",
        "does not belong to line",
        msisdn=other,
        subscription_id=sub["subscription_id"],
    )
    done = call(ctx, "cancel_addon", msisdn=msisdn, subscription_id=sub["subscription_id"])
    # It started today: charged in full, no refund (the operator's rule).
    assert done["status"] == "cancelled" and done["charge"].startswith("in full")
    assert call(ctx, "get_realtime_charges", msisdn=msisdn)["total"] == 286.35
    later = call(
        ctx, "subscribe_addon", msisdn=msisdn, addon_id="DATA-5GB", start_date="2026-12-20"
    )
    dropped = call(ctx, "cancel_addon", msisdn=msisdn, subscription_id=later["subscription_id"])
    assert dropped["charge"] == "none: it had not started" and dropped["refund"] == 0.0
    charges = call(ctx, "get_realtime_charges", msisdn=msisdn)["charges"]
    assert later["subscription_id"] not in [c.get("subscription_id") for c in charges]
    refused(
        ctx,
        "cancel_addon",
        "rejected",
        "is cancelled, not active",
        msisdn=msisdn,
        subscription_id=sub["subscription_id"],
    )
    refused(
        ctx,
        "cancel_addon",
        "not_found",
        "unknown subscription_id 'SUB999999'",
        msisdn=msisdn,
        subscription_id="SUB999999",
    )


def test_add_on_rules(env):
    ctx, data = env
    msisdn = data.msisdns[0]
    for start, match in (("2026-11-29", "must be from"), ("2027-06-01", "must be from")):
        refused(
            ctx,
            "subscribe_addon",
            "rejected",
            match,
            msisdn=msisdn,
            addon_id="DATA-1GB",
            start_date=start,
        )
    refused(
        ctx,
        "subscribe_addon",
        "bad_args",
        "YYYY-MM-DD",
        msisdn=msisdn,
        addon_id="DATA-1GB",
        start_date="2026-02-30",
    )
    refused(
        ctx,
        "subscribe_addon",
        "not_found",
        "unknown addon_id 'NOPE'",
        msisdn=msisdn,
        addon_id="NOPE",
        start_date="2026-11-30",
    )


def prepaid_line(ctx: Ctx, data) -> dict:
    """A consumer's line moved to prepaid, with no credit left, for the test (the generator
    draws plans at random: the line may have been prepaid, with credit, already)."""
    customer = other_customer(data, "consumer")
    line = line_of(data, customer["customer_id"])
    verify(ctx, data, customer["customer_id"])  # the line's holder calls
    with ctx.state.db.change():
        ctx.state.update(
            "lines", "msisdn", line["msisdn"], payment="prepaid", plan_id="PRE-STARTER"
        )
        ctx.state.update("accounts", "account_id", line["account_id"], balance=0.0)
    return line


def test_prepaid_payment_type_and_balance(env):
    ctx, data = env
    line = prepaid_line(ctx, data)
    msisdn = line["msisdn"]
    refused(
        ctx,
        "subscribe_addon",
        "rejected",
        "for postpaid lines only; line .* is prepaid",
        msisdn=msisdn,
        addon_id="ROAM-EU-14",
        start_date="2026-11-30",
    )
    refused(  # DATA-5GB costs 40.25 incl. VAT; the line's balance is 0.00
        ctx,
        "subscribe_addon",
        "rejected",
        "prepaid balance 0.00 is below the add-on price 40.25",
        msisdn=msisdn,
        addon_id="DATA-5GB",
        start_date="2026-11-30",
    )
    with ctx.state.db.change():
        ctx.state.update("accounts", "account_id", line["account_id"], balance=50.0)
    sub = call(ctx, "subscribe_addon", msisdn=msisdn, addon_id="DATA-5GB", start_date="2026-11-30")
    assert sub["charged_to"] == "prepaid balance"
    account = call(ctx, "get_customer", msisdn=msisdn)["accounts"][0]
    assert account["balance"] == 9.75


def test_change_plan_and_its_rules(env):
    ctx, data = env
    msisdn = data.msisdns[0]
    for plan, kind, match in (
        ("POST-ESSENTIAL", "rejected", "already on plan POST-ESSENTIAL"),
        ("YOUTH-25", "rejected", r"is 34; plan YOUTH-25 requires age 18-25"),
        ("SENIOR-CARE", "rejected", "requires age 60 or older"),
        ("BIZ-PRO", "rejected", "for business customers"),
        ("PRE-FLEX", "rejected", "prepaid/postpaid migration"),
        ("GOLD", "not_found", "unknown plan_id 'GOLD'"),
    ):
        refused(ctx, "change_plan", kind, match, msisdn=msisdn, plan_id=plan)
    done = call(ctx, "change_plan", msisdn=msisdn, plan_id="POST-PLUS")
    assert (done["old_plan_id"], done["new_plan_id"], done["monthly_price_change"]) == (
        "POST-ESSENTIAL",
        "POST-PLUS",
        90.85,
    )
    assert (
        next(x for x in rows_now(ctx, "lines") if x["msisdn"] == msisdn)["plan_id"] == "POST-PLUS"
    )


def rows_now(ctx: Ctx, table: str) -> list[dict]:
    """The table's current rows (every column but the episode id)."""
    return ctx.state.rows(table_queries(bss_schema())[table])


def test_suspended_lines_and_internal_accounts_are_refused(env):
    ctx, data = env
    msisdn = data.msisdns[2]
    with ctx.state.db.change():
        ctx.state.update("lines", "msisdn", msisdn, status="suspended")
    refused(
        ctx,
        "change_plan",
        "rejected",
        f"line {msisdn} is suspended",
        msisdn=msisdn,
        plan_id="POST-PLUS",
    )
    refused(
        ctx,
        "subscribe_addon",
        "rejected",
        "is suspended",
        msisdn=msisdn,
        addon_id="DATA-1GB",
        start_date="2026-11-30",
    )
    internal = other_customer(data, "internal")
    test_line = line_of(data, internal["customer_id"])
    account = test_line["account_id"]
    verify(ctx, data, internal["customer_id"])  # refused as internal, not as unverified
    for name, args in (
        ("change_plan", {"msisdn": test_line["msisdn"], "plan_id": "POST-PLUS"}),
        (
            "subscribe_addon",
            {"msisdn": test_line["msisdn"], "addon_id": "DATA-1GB", "start_date": "2026-11-30"},
        ),
        ("apply_credit", {"account_id": account, "amount": 10.0, "reason": "goodwill"}),
        ("update_contact", {"customer_id": internal["customer_id"], "email": "a@b.sa"}),
    ):
        refused(ctx, name, "rejected", "internal test account", **args)


def test_apply_credit_inserts_a_negative_note_within_limits(env):
    ctx, data = env
    account = data.account_id
    duplicate = data.facts["duplicate_invoice"]
    for amount in (0, -5.0):
        refused(
            ctx,
            "apply_credit",
            "rejected",
            "above 0",
            account_id=account,
            amount=amount,
            reason="x",
        )
    refused(  # above the agent's authority for the conversation
        ctx,
        "apply_credit",
        "rejected",
        "credit authority of 200.00",
        account_id=account,
        amount=200.01,
        reason="dispute",
    )
    refused(
        ctx,
        "apply_credit",
        "bad_args",
        "two decimals",
        account_id=account,
        amount=1.005,
        reason="dispute",
    )
    for amount in (1e-10, 5e-10):  # within the decimals' tolerance, 0.00 as money: refused by
        refused(  # the tool, not by the database's CHECK constraint
            ctx,
            "apply_credit",
            "rejected",
            "is 0.00 to the cent",
            account_id=account,
            amount=amount,
            reason="dispute",
        )
    refused(
        ctx,
        "apply_credit",
        "not_found",
        "unknown invoice_id 'INV999999'",
        account_id=account,
        amount=5.0,
        reason="dispute",
        invoice_id="INV999999",
    )
    foreign = next(i for i in rows(data, "invoices") if i["account_id"] != account)
    refused(
        ctx,
        "apply_credit",
        "rejected",
        "belongs to account",
        account_id=account,
        amount=5.0,
        reason="dispute",
        invoice_id=foreign["invoice_id"],
    )
    note = call(
        ctx,
        "apply_credit",
        account_id=account,
        amount=12.5,
        reason="Duplicate invoice",
        invoice_id=duplicate,
    )
    assert note["amount"] == -12.5
    stored = [
        c for c in rows_now(ctx, "credit_notes") if c["credit_note_id"] == note["credit_note_id"]
    ]
    assert stored[0]["amount"] == -12.5 and stored[0]["invoice_id"] == duplicate
    history = call(ctx, "get_payment_history", account_id=account)["credit_notes"]
    assert len(history) == 2


def test_credits_stay_within_the_agents_authority_in_total(env):
    """200.00 for the whole conversation, over every call, invoice and account (six calls of
    200.00 credited 1,200.00 before); the message says to escalate."""
    ctx, data = env
    account = data.account_id
    first = call(ctx, "apply_credit", account_id=account, amount=150.0, reason="goodwill")
    assert first["amount"] == -150.0
    invoice = data.facts["invoices"][data.months[0]][0]
    for amount, on in ((50.01, None), (200.0, None), (60.0, invoice)):
        refused(
            ctx,
            "apply_credit",
            "rejected",
            "has credited 150.00",
            account_id=account,
            amount=amount,
            reason="goodwill",
            **({"invoice_id": on} if on else {}),
        )
    assert call(ctx, "apply_credit", account_id=account, amount=50.0, reason="goodwill")
    refused(
        ctx,
        "apply_credit",
        "rejected",
        "open a billing_dispute ticket for a supervisor",
        account_id=account,
        amount=0.01,
        reason="goodwill",
    )


def test_apply_credit_is_capped_at_the_invoice_amount(env):
    """An invoice's credits stay within its amount (the cap is checked before the authority:
    earlier credits, here stored directly, count)."""
    ctx, data = env
    account, month = data.account_id, data.months[0]
    invoice, amount = data.facts["invoices"][month]
    state = ctx.state
    with state.db.change():
        state.insert(
            "credit_notes",
            credit_note_id="CN999999",
            account_id=account,
            invoice_id=invoice,
            issued_at="2026-11-01T09:00:00",
            amount=-(amount - 10.0),
            reason="earlier correction",
        )
    call(ctx, "apply_credit", account_id=account, amount=10.0, reason="rest", invoice_id=invoice)
    refused(
        ctx,
        "apply_credit",
        "rejected",
        f"invoice {invoice} is {amount:.2f} and already credited {amount:.2f}",
        account_id=account,
        amount=0.01,
        reason="more",
        invoice_id=invoice,
    )
    status = next(i for i in rows_now(ctx, "invoices") if i["invoice_id"] == invoice)["status"]
    assert status == "credited"


def test_update_contact_validates_formats(env):
    ctx, data = env
    customer = data.customer_id
    refused_contact(env, "email and/or phone")
    refused_contact(env, "not a valid email", email="no-at-sign")
    refused_contact(env, "E.164", phone="0501234567")
    refused_contact(env, "E.164", email="a@b.sa", phone="x")
    call(
        ctx,
        "update_contact",
        customer_id=customer,
        email="new.mail@example.sa",
        phone="+966512345678",
    )
    profile = call(ctx, "get_customer", customer_id=customer)["customer"]
    assert (profile["email"], profile["phone"]) == ("new.mail@example.sa", "+966512345678")


# Contact details a careless agent or a hostile customer may pass: each is refused whole.
BAD_EMAILS = [
    "new.mail@example.sa\n",  # a trailing newline: re.match with $ used to accept it
    "new.mail@example.sa\r\n",
    "new.mail@exa\x00mple.sa",  # NUL
    "new.\u200bmail@example.sa",  # zero-width space
    "new.mail@\u202eas.elpmaxe",  # right-to-left override
    "\u2066new.mail@example.sa\u2069",  # left-to-right isolate
    "\ufeffnew.mail@example.sa",  # byte-order mark
    "new.mail@example.sa\u2028",  # line separator
    "نور@example.sa",  # not an ASCII address
    "new mail@example.sa",
    " new.mail@example.sa",
    "new.mail@example.s",
    "new.mail@.sa",
    "a@b.sa" + "a" * 120,  # longer than the spec's 120 characters
]
BAD_PHONES = [
    "+966512345678\n",
    "+966512345678\x00",
    "+9665123\u200b45678",
    "\u202e+966512345678",
    "+９６６５１２３４５６７８",  # fullwidth digits
    "+٩٦٦٥١٢٣٤٥٦٧٨",  # Arabic-Indic digits
    "+966 512 345 678",
    "966512345678",
    "+0966512345678",
]


@pytest.mark.parametrize("email", BAD_EMAILS)
def test_a_bad_email_is_refused_whole(env, email):
    refused_contact(env, "not a valid email", email=email)


@pytest.mark.parametrize("phone", BAD_PHONES)
def test_a_bad_phone_is_refused_whole(env, phone):
    refused_contact(env, "E.164", phone=phone)


def test_a_hidden_character_is_named(env):
    refused_contact(
        env, "invisible or control character U\\+202E", email="new.mail@\u202eas.elpmaxe"
    )


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("get_customer", {"msisdn": "{line}\n"}),
        ("get_usage", {"msisdn": "{line}\u200b"}),
        ("get_usage", {"msisdn": "{line}", "period": "2026-09\n"}),
        ("get_bill", {"account_id": "{account}", "period": "2026-09\n"}),
        ("get_family_usage", {"account_id": "{account}", "period": "\u202a2026-09"}),
        (
            "subscribe_addon",
            {"msisdn": "{line}", "addon_id": "ROAM-GCC-7", "start_date": "2026-12-01\n"},
        ),
        ("change_plan", {"msisdn": "\uff19{line}", "plan_id": "POST-PLUS"}),
    ],
)
def test_line_numbers_months_and_dates_are_matched_whole(env, name, args):
    ctx, data = env
    values = {"line": data.msisdns[0], "account": data.account_id}
    args = {key: value.format(**values) for key, value in args.items()}
    refused(ctx, name, "bad_args", "must be", **args)


def test_valid_contact_details_still_pass(env):
    ctx, data = env
    for email, phone in (
        ("first.last+care@mail.example.sa", "+966512345678"),
        ("O_Harbi-99@sub.mail.example.com", "+12025550123"),
    ):
        result = call(ctx, "update_contact", customer_id=data.customer_id, email=email, phone=phone)
        assert result["updated"] == {"email": email, "phone": phone}


# A call of each BSS tool with a formatted argument that passes every format check ("{line}",
# "{account}", "{customer}": the focal customer's line, account and customer id).
FORMATTED_CALLS = {
    "get_customer": {"msisdn": "{line}"},
    "get_usage": {"msisdn": "{line}", "period": "2026-09"},
    "get_bill": {"account_id": "{account}", "period": "2026-09"},
    "get_family_usage": {"account_id": "{account}", "period": "2026-09"},
    "get_realtime_charges": {"msisdn": "{line}"},
    "get_device_offers": {"msisdn": "{line}"},
    "change_plan": {"msisdn": "{line}", "plan_id": "POST-PLUS"},
    "get_plan": {"plan_id": "POST-PLUS", "msisdn": "{line}"},
    "subscribe_addon": {"msisdn": "{line}", "addon_id": "DATA-1GB", "start_date": "2026-12-01"},
    "cancel_addon": {"msisdn": "{line}", "subscription_id": "SUB999999"},
    "update_contact": {
        "customer_id": "{customer}",
        "email": "new.mail@example.sa",
        "phone": "+966512345678",
    },
    "get_payment_history": {"account_id": "{account}"},
    "apply_credit": {
        "account_id": "{account}",
        "amount": 10,
        "reason": "goodwill",
        "invoice_id": "INV999999",
    },
    "open_care_ticket": {"customer_id": "{customer}", "category": "other", "summary": "a note"},
    "retry_payment": {"account_id": "{account}", "invoice_id": "INV999999"},
    "update_payment_card": {
        "account_id": "{account}",
        "card_last4": "4821",
        "card_expiry": "2029-04",
    },
    "verify_identity": {
        "customer_id": "{customer}",
        "full_name": "Nobody Known",
        "birth_date": "1990-01-31",
    },
    # The other one of two exclusive arguments.
    ("get_customer", "customer_id"): {"customer_id": "{customer}"},
    ("get_family_usage", "group_id"): {"group_id": "FG999999", "period": "2026-09"},
}
# Values that miss an argument's pattern by one detail.
NEAR_MISSES = {
    "msisdn": ["12345", "1" * 16, "+{line}", "{line} ", "\uff19{line}", "{line}\n"],
    "period": ["2026-13", "2026-9", "26-09", "2026/09", "2026-00", "2026-09\n"],
    "start_date": ["2026-12-1", "26-12-01", "2026/12/01", "2026-12-01\n"],
    "birth_date": ["1990-1-31", "31/01/1990", "1990/01/31", "19900131", "1990-01-31\n"],
    "email": ["new.mail@example.s", "new mail@example.sa", "new.mail.example.sa", "a@b.sa\n"],
    "phone": ["966512345678", "+0966512345678", "+966 512 345 678", "+9665123", "+966512345678\n"],
    # Generated ids: made-up numbers, lower case, a missing or an extra digit, spaces.
    "customer_id": ["1234567890", "c{customer_digits}", "C12345", "{customer}7", " {customer}"],
    "account_id": ["1234567890", "a{account_digits}", "A12345", "{account}\n", "{customer}"],
    "invoice_id": ["INV12345", "inv123456", "IN123456", "INV1234567", "INV-123456"],
    "subscription_id": ["SUB999", "SUB-999999", "LA12345", "sub999999", "XX999999"],
    "group_id": ["FG12345", "fg123456", "G123456", "FG 123456", "{account}"],
    "card_last4": ["482", "48210", "48a1", "4821\n", "\uff14821"],
    "card_expiry": ["04/29", "2029-4", "2029-13", "29-04", "2029-04-01", "2029-04\n"],
}


def test_spec_patterns_are_the_implementation_patterns(env):
    """One source of truth: every BSS spec pattern is anchored, each tool refuses (changing
    nothing) what its spec's pattern refuses, and the format checks let through what it
    matches."""
    ctx, data = env
    ids = {
        "line": data.msisdns[0],
        "account": data.account_id,
        "customer": data.customer_id,
        "account_digits": data.account_id[1:],
        "customer_digits": data.customer_id[1:],
    }
    seen = set()
    for spec in load_tools(TOOLS, domain="bss").values():
        properties = spec.parameters["properties"]
        patterns = {name: p["pattern"] for name, p in properties.items() if "pattern" in p}
        if not patterns:
            continue
        for argument, pattern in patterns.items():
            call_of = FORMATTED_CALLS.get((spec.name, argument), FORMATTED_CALLS[spec.name])
            valid = {
                name: value.format(**ids) if isinstance(value, str) else value
                for name, value in call_of.items()
            }
            assert pattern.startswith("^") and pattern.endswith("$"), (spec.name, argument)
            assert re.fullmatch(pattern, valid[argument]), (spec.name, argument)
            for miss in (value.format(**ids) for value in NEAR_MISSES[argument]):
                assert not re.fullmatch(pattern, miss), (argument, miss)
                refused(ctx, spec.name, "bad_args", None, **{**valid, argument: miss})
            seen.add(argument)
            try:  # unknown ids and business rules may refuse it, the formats do not
                call(ctx, spec.name, **valid)
            except ToolError as error:
                assert error.kind != "bad_args", (spec.name, error)
    assert seen == set(NEAR_MISSES)


@pytest.mark.parametrize("email", ["new.mail@example.sa\n", "new.\u200bmail@example.sa"])
def test_the_spec_refuses_what_the_implementation_refuses(email):
    """The JSON Schema pattern is a full match (ECMA-262 ``$``, as fastjsonschema compiles it)."""
    spec = load_tools(TOOLS, domain="bss")["update_contact"]
    check = fastjsonschema.compile(spec.parameters, use_default=False)
    check({"customer_id": "C000001", "email": "new.mail@example.sa"})
    with pytest.raises(fastjsonschema.JsonSchemaException):
        check({"customer_id": "C000001", "email": email})


@pytest.mark.parametrize(
    "arguments",
    [
        {"email": "new.mail@example.sa\n"},
        {"email": "new.mail@\u202eas.elpmaxe"},
        {"phone": "+966512345678\n"},
        {"phone": "+９６６５１２３４５６７８"},
    ],
)
def test_bad_contact_details_through_the_environment_change_nothing(arguments):
    env = make_env("contact_update", domain="bss")
    _, info = env.reset(seed=3)
    state = env.episode.setup.state
    before = state.rows_json()
    customer = info["privileged"]["values"]["customer_id"]
    observation, *_ = env.step(
        {"name": "update_contact", "arguments": {"customer_id": customer, **arguments}}
    )
    assert "error" in json.loads(observation)
    assert state.rows_json() == before


def test_open_care_ticket_returns_sequential_ids(env):
    ctx, data = env
    first = call(
        ctx,
        "open_care_ticket",
        customer_id=data.customer_id,
        category="billing_dispute",
        summary="Charged twice in September",
    )
    second = call(
        ctx,
        "open_care_ticket",
        customer_id=data.customer_id,
        category="roaming",
        summary="Trip to France",
    )
    assert (first["ticket_id"], second["ticket_id"]) == ("TCK000001", "TCK000002")
    refused(
        ctx,
        "open_care_ticket",
        "bad_args",
        "unknown category",
        customer_id=data.customer_id,
        category="spam",
        summary="x",
    )
    refused(
        ctx,
        "open_care_ticket",
        "bad_args",
        "1-2000",
        customer_id=data.customer_id,
        category="other",
        summary="",
    )


# --- unknown ids and hostile strings -------------------------------------------------------


@pytest.mark.parametrize("bad", HOSTILE)
def test_hostile_ids_are_unknown_and_change_nothing(env, bad):
    ctx, data = env
    line_calls = {  # a line number is checked against its spec pattern before any lookup
        "get_customer": {"msisdn": bad},
        "get_realtime_charges": {"msisdn": bad},
        "get_usage": {"msisdn": bad},
        "change_plan": {"msisdn": bad, "plan_id": "POST-PLUS"},
        "get_device_offers": {"msisdn": bad},
    }
    for name, args in line_calls.items():
        refused(ctx, name, "bad_args", "msisdn must be .*" + _quoted(bad), **args)
    id_calls = {  # so are generated ids
        "get_bill": {"account_id": bad, "period": "2026-09"},
        "get_family_usage": {"group_id": bad},
        "get_payment_history": {"account_id": bad},
        "cancel_addon": {"msisdn": data.msisdns[0], "subscription_id": bad},
        "apply_credit": {"account_id": bad, "amount": 5.0, "reason": "dispute"},
        "update_contact": {"customer_id": bad, "email": "a@b.sa"},
        "open_care_ticket": {"customer_id": bad, "category": "other", "summary": "x"},
    }
    for name, args in id_calls.items():
        refused(ctx, name, "bad_args", "_id must be an id from .*" + _quoted(bad), **args)
    catalogue_calls = {  # catalogue ids are looked up
        "get_plan": {"plan_id": bad},
        "subscribe_addon": {"msisdn": data.msisdns[0], "addon_id": bad, "start_date": "2026-11-30"},
    }
    for name, args in catalogue_calls.items():
        refused(ctx, name, "not_found", "unknown .*" + _quoted(bad), **args)
    assert call(ctx, "get_customer", customer_id=data.customer_id)["accounts"]
    refused_contact(env, "not a valid email", email=bad)
    assert call(ctx, "get_store_locations", city=bad)["stores"] == []


def _quoted(value: str) -> str:
    return re.escape(repr(value))


@pytest.mark.parametrize("bad", HOSTILE)
def test_hostile_free_text_is_stored_verbatim(env, bad):
    ctx, data = env
    before = {t: rows_now(ctx, t) for t in ("customers", "lines", "accounts", "invoices")}
    planted = rows_now(ctx, "tickets")  # another customer's dispute, maybe
    ticket = call(
        ctx, "open_care_ticket", customer_id=data.customer_id, category="complaint", summary=bad
    )
    note = call(ctx, "apply_credit", account_id=data.account_id, amount=1.0, reason=bad)
    tickets = [t for t in rows_now(ctx, "tickets") if t not in planted]
    assert [(t["ticket_id"], t["summary"]) for t in tickets] == [(ticket["ticket_id"], bad)]
    credit = next(
        c for c in rows_now(ctx, "credit_notes") if c["credit_note_id"] == note["credit_note_id"]
    )
    assert credit["reason"] == bad
    # The credit note is netted in the balance, and nothing else changed.
    after = {t: rows_now(ctx, t) for t in before}
    changed = [(a, b) for a, b in zip(before["accounts"], after["accounts"], strict=True) if a != b]
    ((old, new),) = changed
    assert old["account_id"] == data.account_id
    assert new == {**old, "balance": pytest.approx(old["balance"] - 1.0, abs=0.001)}
    assert {t: after[t] for t in before if t != "accounts"} == {
        t: before[t] for t in before if t != "accounts"
    }


def test_every_id_an_episode_holds_has_the_form_its_spec_asks_for():
    """An id argument's spec pattern refuses no id that an episode holds, before or after the
    gold chain's writes (subscriptions made in the episode have their own prefix)."""
    patterns = {
        argument: re.compile(schema["pattern"])
        for spec in load_tools(TOOLS, domain="bss").values()
        for argument, schema in spec.parameters["properties"].items()
        if argument.endswith("_id") and "pattern" in schema
    }
    assert set(patterns) == {
        "customer_id",
        "account_id",
        "invoice_id",
        "subscription_id",
        "group_id",
    }
    env = make_env(domain="bss")
    blueprints = [b for family in bss_domain().catalog.blueprints.values() for b in family]
    seen: dict[str, int] = dict.fromkeys(patterns, 0)
    for index, blueprint in enumerate(blueprints * 2):
        _, info = env.reset(seed=index, options={"blueprint": blueprint.blueprint_id})
        for call in info["privileged"]["gold_chain"]:
            env.step({"name": call["tool"], "arguments": call["arguments"]})
        database, episode = env.unwrapped.database, env.unwrapped.episode
        for table in database.metadata.tables.values():
            for column in (c.name for c in table.columns if c.name in patterns):
                rows = database.fetch_all(
                    f"SELECT {column} FROM {table.name} WHERE episode_id = ?",
                    (episode.row_id or episode.episode_id,),
                )
                for (value,) in rows:
                    if value is not None:
                        assert patterns[column].fullmatch(value), (blueprint.blueprint_id, value)
                        seen[column] += 1
    assert all(seen.values()), seen
