"""The BSS data layer: deterministic generation, and each data-quality trap defeats the naive query
while the careful one gets the right figure."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from telcoenv.database import EpisodeDatabase
from telcoenv.domains.bss import billing
from telcoenv.domains.bss.generator import Focal, generate, products
from telcoenv.domains.bss.schema import bss_metadata, bss_schema

FOCAL = Focal(
    family_size=3, duplicate_month="2026-09", roaming_month="2026-10", failed_payment=True
)


@pytest.fixture(scope="module")
def loaded():
    data = generate(np.random.default_rng(7), "ep-bss", FOCAL)
    db = EpisodeDatabase(bss_schema())
    db.start_episode(lambda d: [d.insert_values(t, rows) for t, rows in data.rows.items()])

    def one(sql: str, *params):
        return db.fetch_all(sql, params)[0][0]

    yield data, one  # the fixture keeps the database (its transaction holds the rows) alive
    db.close()


def test_generation_is_deterministic_and_seed_dependent():
    first = generate(np.random.default_rng(3), "e", FOCAL).rows
    assert first == generate(np.random.default_rng(3), "e", FOCAL).rows
    assert first != generate(np.random.default_rng(4), "e", FOCAL).rows


def test_every_row_fits_its_table_and_the_catalogue_is_data():
    data = generate(np.random.default_rng(1), "e", FOCAL)
    for table, rows in data.rows.items():
        width = len(bss_metadata().tables[table].columns)
        assert all(len(row) == width for row in rows), table
    plans = {row[1] for row in data.rows["rate_plans"]}
    assert plans == {plan["plan_id"] for plan in products()["plans"]}
    # Twelve closed billing cycles and the open one (billing.py).
    assert len(data.msisdns) == 3 and len(data.months) == 13


def test_a_double_fired_invoice_doubles_a_naive_sum(loaded):
    data, one = loaded
    account, month = data.account_id, FOCAL.duplicate_month
    real = data.facts["invoices"][month][1]
    naive = one(
        "SELECT SUM(amount) FROM invoices WHERE account_id = ? AND period = ?", account, month
    )
    assert naive == pytest.approx(2 * real)
    careful = one(  # one invoice per account and period: the first one issued
        "SELECT SUM(amount) FROM invoices i WHERE account_id = ? AND period = ? AND issued_at = "
        "(SELECT MIN(issued_at) FROM invoices j WHERE j.episode_id = i.episode_id "
        "AND j.account_id = i.account_id AND j.period = i.period)",
        account,
        month,
    )
    assert careful == pytest.approx(real)


def test_credit_notes_are_negative_and_belong_in_the_balance(loaded):
    data, one = loaded
    account = data.account_id
    assert one("SELECT MAX(amount) FROM credit_notes") < 0
    unpaid = data.facts["invoices"][data.months[-2]][1]  # the last bill's payment failed
    sums = {
        "invoices": one(
            "SELECT SUM(amount) FROM invoices i WHERE account_id = ? AND issued_at = "
            "(SELECT MIN(issued_at) FROM invoices j WHERE j.account_id = i.account_id "
            "AND j.period = i.period)",
            account,
        ),
        "credits": one("SELECT SUM(amount) FROM credit_notes WHERE account_id = ?", account),
        "settled": one(
            "SELECT SUM(amount) FROM payments WHERE account_id = ? AND status = 'settled'", account
        ),
    }
    careful = sums["invoices"] + sums["credits"] - sums["settled"]
    assert careful == pytest.approx(unpaid + data.facts["credit_note"])
    naive = one("SELECT SUM(amount) FROM invoices WHERE account_id = ?", account) - one(
        "SELECT SUM(amount) FROM payments WHERE account_id = ?", account
    )
    assert abs(naive - careful) > 1.0


def test_an_accounts_balance_is_its_ledger_with_the_duplicate_not_yet_credited(loaded):
    """The balance the BSS keeps on the account is what its ledger says: every invoice issued
    (the double-fired one too, which nothing has credited yet) plus credit notes, less the
    settled payments; so it is the caller's true debt plus the duplicate, a trap for an
    answer read off the account alone. Every postpaid account's balance is its own ledger's
    (it was 0.00 whatever was owed); a prepaid one's is its credit, with no credit limit."""
    data, one = loaded
    account = data.account_id
    balance = one("SELECT balance FROM accounts WHERE account_id = ?", account)
    duplicate = data.facts["invoices"][FOCAL.duplicate_month][1]
    assert balance == pytest.approx(data.facts["balance"] + duplicate, abs=0.01)
    assert balance > 0  # the latest payment failed: the caller owes its bill
    ledger = (
        "SELECT a.balance, COALESCE((SELECT SUM(amount) FROM invoices i WHERE i.account_id = "
        "a.account_id), 0) + COALESCE((SELECT SUM(amount) FROM credit_notes c WHERE "
        "c.account_id = a.account_id), 0) - COALESCE((SELECT SUM(amount) FROM payments p WHERE "
        "p.account_id = a.account_id AND p.status = 'settled'), 0), a.credit_limit, "
        "EXISTS (SELECT 1 FROM lines l WHERE l.account_id = a.account_id "
        "AND l.payment = 'prepaid') FROM accounts a"
    )
    db_rows = loaded_rows(data, ledger)
    assert len(db_rows) >= 10
    for kept, computed, limit, prepaid in db_rows:
        if prepaid:
            assert kept > 0 and limit == 0.0
        else:
            assert kept == pytest.approx(computed, abs=0.01)


def loaded_rows(data, sql: str) -> list[tuple]:
    db = EpisodeDatabase(bss_schema())
    try:
        db.start_episode(lambda d: [d.insert_values(t, rows) for t, rows in data.rows.items()])
        return [tuple(row) for row in db.fetch_all(sql, ())]
    finally:
        db.close()


def test_internal_test_accounts_distort_an_average_bill(loaded):
    _, one = loaded
    naive = one("SELECT AVG(amount) FROM invoices")
    careful = one(
        "SELECT AVG(i.amount) FROM invoices i JOIN accounts a ON a.account_id = i.account_id "
        "JOIN customers c ON c.customer_id = a.customer_id WHERE c.segment != 'internal'"
    )
    assert one("SELECT COUNT(*) FROM customers WHERE segment = 'internal'") == 2
    assert naive > 1.5 * careful


def test_null_usage_is_not_zero_usage_and_the_open_cycle_is_partial(loaded):
    """A cycle not collected is NULL, not 0; the open cycle's record is its usage so far (a
    few days of a month), a second trap for an average over every record."""
    data, one = loaded
    line = data.msisdns[0]
    records = [row for row in data.rows["usage_records"] if row[1] == line]
    closed = [row[3] for row in records if row[2] != data.months[-1]]  # data_gb per cycle
    assert len(closed) == 12 and closed.count(None) == 1
    collected = [v for v in closed if v is not None]
    where = "msisdn = ? AND month < ?"
    careful = one(f"SELECT AVG(data_gb) FROM usage_records WHERE {where}", line, data.months[-1])
    naive = one(
        f"SELECT AVG(COALESCE(data_gb, 0)) FROM usage_records WHERE {where}", line, data.months[-1]
    )
    every = one("SELECT AVG(data_gb) FROM usage_records WHERE msisdn = ?", line)
    assert careful == pytest.approx(sum(collected) / len(collected))
    assert data.facts["average_data_gb"] == pytest.approx(careful, abs=0.005)
    assert naive == pytest.approx(sum(collected) / 12) and naive < careful
    assert every < careful  # the open cycle's few days pull it down


def test_the_exact_answers_are_what_the_careful_queries_give(loaded):
    data, one = loaded
    facts, account = data.facts, data.account_id
    assert facts["duplicate_amount"] == data.facts["invoices"][FOCAL.duplicate_month][1]
    assert facts["failure_reason"] == one(
        "SELECT failure_reason FROM payments WHERE account_id = ? AND status = 'failed'", account
    )
    assert facts["average_data_gb"] == pytest.approx(
        one(
            "SELECT AVG(data_gb) FROM usage_records WHERE msisdn = ? AND month < ?",
            data.msisdns[0],
            data.months[-1],
        ),
        abs=0.01,
    )
    month = "2026-10"
    family = one(
        "SELECT SUM(u.data_gb) FROM usage_records u JOIN family_members m "
        "ON m.msisdn = u.msisdn WHERE u.month = ?",
        month,
    )
    assert facts["family_data_gb"][month] == pytest.approx(family, abs=0.01)
    assert facts["balance"] == pytest.approx(
        data.facts["invoices"][data.months[-2]][1] + facts["credit_note"], abs=0.01
    )


def test_an_active_add_on_is_on_the_first_line():
    data = generate(np.random.default_rng(2), "e", Focal(active_addon="ROAM-GCC-7"))
    (row,) = data.rows["line_addons"]
    assert row[1] == data.facts["subscription_id"] and row[2] == data.msisdns[0]
    assert row[3] == "ROAM-GCC-7" and row[6] == "active" and row[5] > row[4]


def test_coupons_bought_in_a_month_count_against_its_overage():
    """A month whose bill carries coupons bought (a duplicate charge's) charges overage only
    beyond the plan's allowance and those coupons' GB: a 20 GB coupon bought to cover a month
    is not followed by an overage charge for 4.5 GB of it. Over 200 heavy users' months, some
    of which used more than the plan alone allows while holding coupons."""
    coupons = {a["addon_id"]: a["data_gb"] for a in products()["addons"]}
    covered = 0
    for seed in range(200):
        month = "2026-10"
        focal = Focal(plan_id="POST-ESSENTIAL", data_use=1.15, extras_month=month)
        data = generate(np.random.default_rng(seed), "e", focal)
        line = data.msisdns[0]
        used = next(r[3] for r in data.rows["usage_records"] if r[1] == line and r[2] == month)
        day = next(r[3] for r in data.rows["accounts"] if r[1] == data.account_id)
        cycle = billing.cycle(month, day)
        bought = sum(
            coupons[r[3]]
            for r in data.rows["line_addons"]
            if r[2] == line and cycle.holds(dt.date.fromisoformat(r[4]))
        )
        invoice = data.facts["invoices"][month][0]
        overage = [r for r in data.rows["invoice_items"] if r[2] == invoice and r[4] == "overage"]
        beyond = round(used - 25.0 - bought, 2) if used is not None else 0.0
        if beyond > 0:
            assert len(overage) == 1 and f"{beyond} GB" in overage[0][5], (seed, used, bought)
        else:
            assert not overage, (seed, used, bought)
        covered += bool(bought) and used is not None and used > 25.0 and beyond <= 0
    assert covered >= 10  # the coupons did cover months the plan alone did not
