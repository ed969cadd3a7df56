"""The ledger's invariants (``ledger.py``): they hold over thousands of generated customers and
after every write the gold chains make; each one catches the inconsistency it is about (a
mutated copy of a consistent episode breaks the rule named);
and ``telcoenv validate --domain bss --data`` runs them."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from telcoenv.cli import main
from telcoenv.domains.bss import billing, bss_domain
from telcoenv.domains.bss.generator import Focal, generate
from telcoenv.domains.bss.ledger import check, check_generated
from telcoenv.domains.bss.schema import bss_schema
from telcoenv.domains.bss.state import table_queries
from tests.conftest import gold_actions, make_env, play, submit

COLUMNS = bss_schema().plan.columns
FOCAL = Focal(
    family_size=3,
    duplicate_month="2026-08",
    extras_month="2026-08",
    roaming_month="2026-10",
    failed_payment=True,
)


def test_every_invariant_holds_over_thousands_of_generated_customers():
    blueprints = [b for family in bss_domain().catalog.blueprints.values() for b in family]
    report = check_generated(blueprints, range(24))
    assert report.episodes == 24 * len(blueprints) == 624
    assert report.customers >= 7000 and report.invoices >= 60_000
    assert report.violations == ()


def _rows(data) -> dict[str, list[dict[str, Any]]]:
    return {
        t: [dict(zip(COLUMNS[t], row, strict=True)) for row in rows] for t, rows in data.items()
    }


def _tuples(records: dict[str, list[dict[str, Any]]]) -> dict[str, list[tuple[Any, ...]]]:
    return {t: [tuple(r[c] for c in COLUMNS[t]) for r in rows] for t, rows in records.items()}


@pytest.fixture(scope="module")
def episode():
    data = generate(np.random.default_rng(5), "e", FOCAL)
    assert check(data.rows) == []
    return data


def _first(records, table: str, **where: Any) -> dict[str, Any]:
    return next(r for r in records[table] if all(r[k] == v for k, v in where.items()))


def _caller_invoice(records, data, period: str) -> dict[str, Any]:
    return _first(records, "invoices", invoice_id=data.facts["invoices"][period][0])


def _other_consumer_line(records, data) -> dict[str, Any]:
    internal = {c["customer_id"] for c in records["customers"] if c["segment"] == "internal"}
    accounts = {
        a["account_id"]
        for a in records["accounts"]
        if a["customer_id"] not in internal and a["account_id"] != data.account_id
    }
    return next(
        line
        for line in records["lines"]
        if line["account_id"] in accounts and line["payment"] == "postpaid"
    )


def _set(record: dict[str, Any], **values: Any) -> None:
    record.update(values)


def _amount_off(r, d):
    _set(_caller_invoice(r, d, "2026-07"), amount=_caller_invoice(r, d, "2026-07")["amount"] + 0.01)


def _open_cycle_billed(r, d):
    _set(_caller_invoice(r, d, "2026-07"), period="2026-11")


def _issued_on_the_first(r, d):
    invoice = _caller_invoice(r, d, "2026-07")
    _set(invoice, issued_at=f"{invoice['period_start'][:8]}01T02:00:00")


def _paid_shown_overdue(r, d):
    _set(_caller_invoice(r, d, "2026-07"), status="overdue")


def _unpaid_shown_paid(r, d):
    _set(_caller_invoice(r, d, "2026-10"), status="paid")  # its payment failed


def _balance_zero(r, d):
    _set(_first(r, "accounts", account_id=d.account_id), balance=0.0)


def _roaming_without_usage(r, d):
    record = _first(r, "usage_records", msisdn=d.msisdns[0], month="2026-10")
    _set(record, roaming_data_gb=0.0, roaming_zone=None)


def _device_on_a_consumer(r, d):
    item = _first(r, "invoice_items", invoice_id=d.facts["invoices"]["2026-07"][0])
    _set(item, kind="device", description="QA test device charge")


def _youth_plan_at_forty(r, d):
    line = _other_consumer_line(r, d)
    holder = _first(r, "accounts", account_id=line["account_id"])["customer_id"]
    _set(_first(r, "customers", customer_id=holder), birth_date="1986-01-15")
    _set(line, plan_id="YOUTH-25")
    for row in r["plan_history"]:
        if row["msisdn"] == line["msisdn"]:
            row["plan_id"] = "YOUTH-25"


def _constant_family_allowance(r, d):
    _set(r["family_groups"][0], shared_data_gb=50.0)


def _usage_before_activation(r, d):
    line = _first(r, "lines", msisdn=d.msisdns[0])
    _set(line, activated_on=f"2026-0{3}-{line['activated_on'][8:]}")
    for row in r["plan_history"]:
        if row["msisdn"] == line["msisdn"]:
            row["start_date"] = line["activated_on"]


def _paid_before_issued(r, d):
    invoice = _caller_invoice(r, d, "2026-07")
    payment = _first(r, "payments", invoice_id=invoice["invoice_id"])
    _set(payment, paid_at=f"{invoice['period_start']}T10:15:00")


def _voice_beyond_allowance(r, d):
    _set(_first(r, "usage_records", msisdn=d.msisdns[1], month="2026-06"), voice_min=5000)


def _a_consumer_named_test(r, d):
    _set(_first(r, "customers", customer_id=d.customer_id), name="TEST Someone")


def _duplicate_collected(r, d):
    duplicate = _first(r, "invoices", invoice_id=d.facts["duplicate_invoice"])
    payment = dict(_first(r, "payments", invoice_id=d.facts["invoices"]["2026-08"][0]))
    r["payments"].append(
        {**payment, "payment_id": "PAY999999", "invoice_id": duplicate["invoice_id"]}
    )


def _coupon_days_wrong(r, d):
    coupon = next(s for s in r["line_addons"] if s["addon_id"].startswith("DATA-"))
    _set(coupon, end_date=coupon["start_date"])


def _positive_credit(r, d):
    _set(r["credit_notes"][0], amount=12.5)


def _unbilled_coupon(r, d):
    coupon = next(s for s in r["line_addons"] if s["addon_id"].startswith("DATA-"))
    start = dt.date.fromisoformat(coupon["start_date"]) - dt.timedelta(days=62)
    validity = dt.date.fromisoformat(coupon["end_date"]) - dt.date.fromisoformat(
        coupon["start_date"]
    )
    _set(coupon, start_date=str(start), end_date=str(start + validity), status="expired")


def _disputed_without_a_ticket(r, d):
    _set(_caller_invoice(r, d, "2026-10"), status="disputed")


def _plan_changed_without_history(r, d):
    line = _other_consumer_line(r, d)
    other = "POST-PLUS" if line["plan_id"] != "POST-PLUS" else "POST-ESSENTIAL"
    _set(line, plan_id=other)


MUTATIONS: dict[str, tuple[Callable[[Any, Any], None], str]] = {
    "amount off by a cent": (_amount_off, "amount is net plus VAT"),
    "the open cycle invoiced": (_open_cycle_billed, "closed cycles only are invoiced"),
    "issued on the 1st": (_issued_on_the_first, "issued the day after the cycle"),
    "a paid invoice shown overdue": (_paid_shown_overdue, "status from payments"),
    "an unpaid invoice shown paid": (_unpaid_shown_paid, "status from payments"),
    "a postpaid balance of 0.00": (_balance_zero, "balance is the ledger's"),
    "roaming billed, none used": (_roaming_without_usage, "items are the cycle's charges"),
    "a device charge for a consumer": (_device_on_a_consumer, "device charges on internal"),
    "a youth plan at forty": (_youth_plan_at_forty, "plan allowed for the holder's age"),
    "a constant family allowance": (_constant_family_allowance, "shared data is the plans'"),
    "usage before activation": (_usage_before_activation, "one record per cycle since"),
    "paid before it was issued": (_paid_before_issued, "made after the invoice"),
    "voice beyond the allowance": (_voice_beyond_allowance, "voice_min within the allowance"),
    "a consumer named TEST": (_a_consumer_named_test, "internal accounts and only those"),
    "a duplicate collected": (_duplicate_collected, "one invoice per cycle"),
    "a coupon's days": (_coupon_days_wrong, "ends after its validity"),
    "a positive credit note": (_positive_credit, "negative amount"),
    "a coupon bought, never billed": (_unbilled_coupon, "items are the cycle's charges"),
    "disputed without a ticket": (_disputed_without_a_ticket, "status from payments"),
    "a plan changed, no history": (_plan_changed_without_history, "contiguous from activation"),
}


@pytest.mark.parametrize("name", MUTATIONS)
def test_each_invariant_catches_what_it_is_about(episode, name):
    mutate, rule = MUTATIONS[name]
    records = _rows(episode.rows)
    mutate(records, episode)
    found = check(_tuples(records))
    assert any(rule in v.rule for v in found), (name, [str(v) for v in found])


def _database_rows(env) -> dict[str, list[tuple[Any, ...]]]:
    state = env.unwrapped.episode.setup.state
    return {
        table: [(state.episode_id, *row.values()) for row in state.rows(query)]
        for table, query in table_queries(state.db.schema).items()
    }


@pytest.mark.parametrize("intent", [i.env_name for i in bss_domain().catalog.intents])
def test_the_gold_chains_writes_keep_the_ledger(intent):
    """Every care intent's gold chain on three holders' episodes (a plan change writes its
    history, a credit note the balance, a cancelled pack stays billed where it was), then a
    credit that covers a whole invoice: the ledger holds after each."""
    env = make_env(intent, domain="bss")
    played = 0
    for seed in range(12):
        _, info = env.reset(seed=seed)
        if info["privileged"]["values"]["impostor"]:
            continue
        play(env, gold_actions(info))
        assert check(_database_rows(env)) == [], (intent, seed)
        played += 1
        if played == 3:
            break
    assert played == 3
    env.step(submit())


def test_a_credit_for_a_whole_invoice_marks_it_credited_and_nets_the_balance():
    env = make_env("duplicate_charge", domain="bss")
    for seed in range(20):
        _, info = env.reset(seed=seed)
        if not info["privileged"]["values"]["impostor"]:
            break
    values = info["privileged"]["values"]
    state = env.unwrapped.episode.setup.state
    duplicate = next(
        i
        for i in _rows(_database_rows(env))["invoices"]
        if i["account_id"] == values["account_id"]
        and i["period"] == values["period"]
        and i["issued_at"].endswith("T02:00:07")
    )
    before = _first(_rows(_database_rows(env)), "accounts", account_id=values["account_id"])
    state.identity.checks.clear()
    identity = {k: values[k] for k in ("customer_id", "full_name", "birth_date")}
    play(env, [{"name": "verify_identity", "arguments": identity}])
    amount = duplicate["amount"]
    # Credited beyond the agent's authority by a supervisor (stored directly), the rest by
    # the agent: the credits reach the invoice's amount.
    rest = 25.0
    with state.db.change():
        state.insert(
            "credit_notes",
            credit_note_id="CN999999",
            account_id=values["account_id"],
            invoice_id=duplicate["invoice_id"],
            issued_at="2026-11-30T09:00:00",
            amount=round(rest - amount, 2),
            reason="supervisor: duplicate invoice",
        )
    arguments = {
        "account_id": values["account_id"],
        "amount": rest,
        "reason": "duplicate invoice",
        "invoice_id": duplicate["invoice_id"],
    }
    env.step({"name": "apply_credit", "arguments": arguments})
    records = _rows(_database_rows(env))
    after = _first(records, "invoices", invoice_id=duplicate["invoice_id"])
    account = _first(records, "accounts", account_id=values["account_id"])
    assert after["status"] == "credited"
    assert account["balance"] == pytest.approx(before["balance"] - rest, abs=0.01)
    # The supervisor's note, stored without the tool, netted here as the tool nets its own.
    account["balance"] = round(before["balance"] - amount, 2)
    assert check(_tuples(records)) == []


def test_the_open_cycle_is_unbilled_and_told_apart(episode):
    """No invoice for the open cycle; its usage so far is the cycle's days, not a month's."""
    day = next(r[3] for r in episode.rows["accounts"] if r[1] == episode.account_id)
    cycle = billing.open_cycle(day)
    assert cycle.period == episode.months[-1] == "2026-11" and cycle.holds(dt.date(2026, 11, 30))
    periods = {r[3] for r in episode.rows["invoices"] if r[2] == episode.account_id}
    assert cycle.period not in periods and len(periods) == 12
    for closed in episode.months[:-1]:
        assert billing.cycle(closed, day).closed()


@pytest.mark.parametrize(
    ("period", "day", "dates"),
    [
        ("2026-01", 1, ("2026-01-01", "2026-01-31", "2026-02-01", "2026-02-15")),
        ("2026-01", 28, ("2026-01-28", "2026-02-27", "2026-02-28", "2026-03-14")),
        ("2025-12", 15, ("2025-12-15", "2026-01-14", "2026-01-15", "2026-01-29")),
    ],
)
def test_the_billing_calendar_by_hand(period, day, dates):
    cycle = billing.cycle(period, day)
    got = (cycle.start, cycle.end, cycle.issued_on, cycle.due_on)
    assert tuple(str(d) for d in got) == dates


def test_validate_data_on_the_command_line(capsys):
    assert main(["validate", "--domain", "bss", "--data", "--seeds", "2"]) == 0
    out = capsys.readouterr().out
    assert "every ledger invariant holds in 52 episodes (2 seeds x 26 blueprints)" in out
    assert main(["validate", "--domain", "bss", "--data", "--seeds", "0"]) == 2
    assert "--seeds must be at least 1" in capsys.readouterr().err
    assert main(["validate", "--data"]) == 2  # the network domain has no ledger
    assert "cannot validate generated data" in capsys.readouterr().err
