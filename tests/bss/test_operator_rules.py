"""The operator's rules the write tools enforce (docs/customer_care.md, "Operator rules"): a plan
change prorates the open cycle's fees (checked against hand-computed values), a cancelled pack
is charged once started and free (refunded on prepaid) before, and the ledger holds after."""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import pytest

import telcoenv
from telcoenv.database import EpisodeDatabase
from telcoenv.domains.bss import billing
from telcoenv.domains.bss.generator import Focal, generate
from telcoenv.domains.bss.ledger import check
from telcoenv.domains.bss.schema import bss_schema
from telcoenv.domains.bss.state import LINE, PLAN, BssState, table_queries
from tests.bss.test_bss_tools import Ctx, call, rows, verify
from tests.conftest import tool_call


def _episode(focal: Focal, seed: int):
    data = generate(np.random.default_rng(seed), "ep-rules", focal)
    db = EpisodeDatabase(bss_schema())
    ctx = Ctx(BssState(db, data, "ep-rules"))
    assert verify(ctx, data, data.customer_id)["verified"] is True
    return db, ctx, data


@pytest.fixture
def postpaid():
    db, ctx, data = _episode(Focal(age=34, plan_id="POST-ESSENTIAL"), 3)
    yield ctx, data
    db.close()


@pytest.fixture
def prepaid():
    db, ctx, data = _episode(Focal(age=34, plan_id="PRE-FLEX"), 4)
    yield ctx, data
    db.close()


def _ledger_rows(ctx: Ctx) -> dict:
    state = ctx.state
    return {
        table: [(state.episode_id, *row.values()) for row in state.rows(query)]
        for table, query in table_queries(state.db.schema).items()
    }


def test_a_plan_change_bills_each_plan_for_its_days(postpaid):
    ctx, data = postpaid
    msisdn = data.msisdns[0]
    day = next(
        a["billing_day"] for a in rows(data, "accounts") if a["account_id"] == data.account_id
    )
    cycle = billing.open_cycle(day)
    old_days = (dt.date(2026, 11, 29) - cycle.start).days + 1  # until yesterday
    new_days = cycle.days - old_days  # from today to the cycle's end
    changed = call(ctx, "change_plan", msisdn=msisdn, plan_id="POST-PLUS")
    fees = changed["this_cycle"]
    assert [f["plan_id"] for f in fees] == ["POST-ESSENTIAL", "POST-PLUS"]
    # By hand: 120.00 x old_days / days and 199.00 x new_days / days, to the cent.
    assert fees[0]["amount_excl_vat"] == round(120.0 * old_days / cycle.days + 1e-9, 2)
    assert fees[1]["amount_excl_vat"] == round(199.0 * new_days / cycle.days + 1e-9, 2)
    assert fees[1]["description"] == f"Postpaid Plus 2026-11-30 to {cycle.end}"
    realtime = call(ctx, "get_realtime_charges", msisdn=msisdn)
    assert realtime["charges"] == fees
    net = round(fees[0]["amount_excl_vat"] + fees[1]["amount_excl_vat"], 2)
    assert realtime["total_excl_vat"] == net
    history = [r for r in ctx.state.rows(table_queries(bss_schema())["plan_history"])]
    line_history = [h for h in history if h["msisdn"] == msisdn]
    assert [(h["plan_id"], h["end_date"]) for h in line_history] == [
        ("POST-ESSENTIAL", "2026-11-29"),
        ("POST-PLUS", None),
    ]
    # A second change today replaces today's plan; the history stays contiguous.
    again = call(ctx, "change_plan", msisdn=msisdn, plan_id="POST-UNLIMITED")
    assert [f["plan_id"] for f in again["this_cycle"]] == ["POST-ESSENTIAL", "POST-UNLIMITED"]
    assert check(_ledger_rows(ctx)) == []


def test_cancelling_a_prepaid_pack_before_it_starts_refunds_it(prepaid):
    ctx, data = prepaid
    msisdn, account = data.msisdns[0], data.account_id

    def balance() -> float:
        return next(
            a["balance"]
            for a in ctx.state.rows(table_queries(bss_schema())["accounts"])
            if a["account_id"] == account
        )

    start = balance()
    later = call(
        ctx, "subscribe_addon", msisdn=msisdn, addon_id="DATA-1GB", start_date="2026-12-10"
    )
    assert balance() == pytest.approx(start - 11.5)  # 10.00 with VAT, paid now
    done = call(ctx, "cancel_addon", msisdn=msisdn, subscription_id=later["subscription_id"])
    assert (done["charge"], done["refund"]) == ("none: it had not started", 11.5)
    assert balance() == pytest.approx(start)
    today = call(
        ctx, "subscribe_addon", msisdn=msisdn, addon_id="DATA-1GB", start_date="2026-11-30"
    )
    done = call(ctx, "cancel_addon", msisdn=msisdn, subscription_id=today["subscription_id"])
    assert done["charge"].startswith("in full") and done["refund"] == 0.0
    assert balance() == pytest.approx(start - 11.5)
    # A prepaid line has no plan fee among its unbilled charges: it paid the plan up front.
    charges = call(ctx, "get_realtime_charges", msisdn=msisdn)["charges"]
    assert [c["subscription_id"] for c in charges] == [today["subscription_id"]]
    assert check(_ledger_rows(ctx)) == []


# --- commitments ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("end", "left"),
    [
        ("2027-04-09", 5),  # 4 months and 10 days: a started month counts whole
        ("2027-04-30", 6),  # exactly 5 months after today's date, and its last day
        ("2026-12-15", 1),
        ("2026-11-30", 1),  # today is its last day
        ("2026-11-29", 0),  # ended yesterday
    ],
)
def test_months_left_of_a_commitment(end, left):
    assert billing.months_left(end, "2026-11-30") == left


def test_the_early_change_fee_by_hand():
    # 120.00 -> 79.00 with 10 months left: 41.00 x 10.
    assert billing.early_change_fee(120.0, 79.0, "2027-09-11", "2026-11-30") == (410.0, 10)
    assert billing.early_change_fee(79.0, 120.0, "2027-09-11", "2026-11-30") is None  # upgrade
    assert billing.early_change_fee(120.0, 120.0, "2027-09-11", "2026-11-30") is None
    assert billing.early_change_fee(120.0, 79.0, "2026-11-29", "2026-11-30") is None  # ended
    assert billing.early_change_fee(120.0, 79.0, None, "2026-11-30") is None


def _committed(seed_from: int = 0):
    """An episode whose caller (22, on POST-ESSENTIAL) has a commitment running."""
    for seed in range(seed_from, seed_from + 200):
        db, ctx, data = _episode(Focal(age=22, plan_id="POST-ESSENTIAL"), seed)
        line = next(r for r in rows(data, "lines") if r["msisdn"] == data.msisdns[0])
        if line["commitment_end"] and line["commitment_end"] >= billing.TODAY:
            return db, ctx, data, line
        db.close()
    raise AssertionError("no committed caller")


def test_a_cheaper_plan_during_a_commitment_costs_the_fee_and_a_dearer_one_nothing():
    db, ctx, data, line = _committed()
    msisdn = data.msisdns[0]
    left = billing.months_left(line["commitment_end"])
    fee = round((120.0 - 79.0) * left, 2)  # POST-ESSENTIAL -> YOUTH-25, VAT-exclusive
    quote = call(ctx, "get_plan", plan_id="YOUTH-25", msisdn=msisdn)["change_for_line"]
    assert quote["early_change_fee"] == {
        "months_left": left,
        "amount_excl_vat": fee,
        "amount": round(fee * 1.15 + 1e-9, 2),
    }
    assert (
        call(ctx, "get_customer", msisdn=msisdn)["accounts"][0]["lines"][0]["commitment_end"]
        == line["commitment_end"]
    )
    moved = call(ctx, "change_plan", msisdn=msisdn, plan_id="YOUTH-25")
    assert moved["early_change_fee"] == quote["early_change_fee"]
    realtime = call(ctx, "get_realtime_charges", msisdn=msisdn)["charges"]
    fees = [c for c in realtime if c.get("charge_id")]
    assert [c["amount_excl_vat"] for c in fees] == [fee]
    assert check(_ledger_rows(ctx)) == []
    # A second change today, to a dearer plan than the one before today: no fee at all.
    again = call(ctx, "change_plan", msisdn=msisdn, plan_id="POST-PLUS")
    assert again["early_change_fee"] is None
    assert not [
        c for c in call(ctx, "get_realtime_charges", msisdn=msisdn)["charges"] if c.get("charge_id")
    ]
    assert check(_ledger_rows(ctx)) == []
    db.close()


def test_no_fee_without_a_running_commitment(postpaid):
    ctx, data = postpaid
    msisdn = data.msisdns[0]
    with ctx.state.db.change():
        ctx.state.update("lines", "msisdn", msisdn, commitment_end="2026-11-29")  # ended
    quote = call(ctx, "get_plan", plan_id="SENIOR-CARE", msisdn=msisdn)["change_for_line"]
    assert quote["early_change_fee"] is None and quote["monthly_price_change"] < 0


def test_the_ledger_checks_commitments_and_fees():
    db, ctx, data, line = _committed()
    call(ctx, "change_plan", msisdn=data.msisdns[0], plan_id="YOUTH-25")
    good = _ledger_rows(ctx)
    assert check(good) == []
    charges = good["charges"]
    wrong = {**good, "charges": [(*charges[0][:6], charges[0][6] + 1.0)]}
    assert {v.rule for v in check(wrong)} == {"the early-change fee of a move"}
    assert {v.rule for v in check({**good, "charges": []})} == {"the early-change fee of a move"}
    shifted = [(*r[:7], "2027-01-01") if r[1] == data.msisdns[0] else r for r in good["lines"]]
    rules = {v.rule for v in check({**good, "lines": shifted})}
    assert "a commitment the policy offers" in rules
    db.close()


def test_a_yes_to_a_move_with_a_fee_must_name_the_fee():
    for seed in range(200):
        env = telcoenv.make("plan_change", privileged=True, require_approval=True)
        _, info = env.reset(seed=seed, options={"blueprint": "plan_change_age_based"})
        setup = env.unwrapped.episode.setup
        values = setup.gold_values
        msisdn, plan_id = values["msisdn"], values["plan_id"]
        line = setup.state.rows(LINE, msisdn)[0]
        plan = setup.state.rows(PLAN, plan_id)[0]
        fee = setup.state.early_change_fee(line, plan)
        if fee is not None and not values["impostor"]:
            break
        env.close()
    for step in info["privileged"]["gold_chain"]:  # the lookup, the check, the quote
        if step["tool"] == "change_plan":
            break
        env.step(tool_call(step["tool"], **step["arguments"]))
    change = tool_call("change_plan", msisdn=msisdn, plan_id=plan_id)
    env.step(f"May I move your line to {plan_id} at {plan['price']} SAR a month?")
    refused = json.loads(env.step(change)[0])["error"]
    assert refused["type"] == "approval_mismatch" and "early-change fee" in refused["message"]
    with_vat = round(fee[0] * 1.15 + 1e-9, 2)
    env.step(
        f"May I move your line to {plan_id} at {plan['price']} SAR a month, with an early "
        f"change fee of {with_vat} SAR?"
    )
    assert json.loads(env.step(change)[0])["early_change_fee"]["amount"] == with_vat
    env.close()
