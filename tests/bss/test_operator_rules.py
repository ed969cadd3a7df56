"""The operator's rules the write tools enforce (docs/customer_care.md, "Operator rules"): a plan
change prorates the open cycle's fees (checked against hand-computed values), a cancelled pack
is charged once started and free (refunded on prepaid) before, and the ledger holds after."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from telcoenv.database import EpisodeDatabase
from telcoenv.domains.bss import billing
from telcoenv.domains.bss.generator import Focal, generate
from telcoenv.domains.bss.ledger import check
from telcoenv.domains.bss.schema import bss_schema
from telcoenv.domains.bss.state import BssState, table_queries
from tests.bss.test_bss_tools import Ctx, call, rows, verify


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
