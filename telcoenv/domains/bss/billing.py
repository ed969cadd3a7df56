"""The operator's billing calendar: cycles, invoice dates and what a cycle's bill may charge.

Every account has a billing day (1-28). The cycle *of a period* ``YYYY-MM`` starts on the billing
day of that month and ends the day before the billing day of the next month. A cycle is *closed*
once its last day is before today: its invoice is issued the day after (the next billing day)
and is due :data:`PAYMENT_TERMS_DAYS` later. The cycle that holds today is *open*: its usage and
add-on purchases so far are unbilled (``get_realtime_charges``). Every tool, the generator and
the ledger checker (``ledger.py``) read the calendar from here; the numbers are the products
file's (``billing`` in ``products.yaml``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from telcoenv.domains.bss.catalogue import products

TODAY = "2026-11-30"  # the episode's date: the last day of the open cycle's month

#: Invoice statuses: issued (not yet due), paid, overdue (unpaid after its due date), disputed
#: (a billing dispute is open on it), credited (credit notes cover its whole amount).
INVOICE_STATUSES = ("issued", "paid", "overdue", "disputed", "credited")


@cache
def _billing() -> dict[str, Any]:
    return products()["billing"]


def payment_terms_days() -> int:
    """Days from an invoice's issue to its due date."""
    return int(_billing()["payment_terms_days"])


def family_fee() -> float:
    """The monthly fee of each family member line beyond the owner's, VAT-exclusive."""
    return float(_billing()["family_member_fee"])


def suspend_after_days() -> int:
    """Days after its due date that an unpaid invoice suspends its account (dunning)."""
    return int(_billing()["suspend_after_days"])


def suspended_on(due_date: str) -> dt.date:
    """The day an invoice due on ``due_date`` suspends its account if still unpaid."""
    return _day(due_date) + dt.timedelta(days=suspend_after_days())


def held_copies(invoices: Iterable[Mapping[str, Any]]) -> set[str]:
    """The invoices (of one account) held from collection: a second invoice of a period with
    the first one's amount, a double-fired billing run's copy."""
    held: set[str] = set()
    amounts: dict[str, float] = {}  # each period's first invoice's amount
    for invoice in sorted(invoices, key=lambda i: (i["issued_at"], i["invoice_id"])):
        if amounts.get(invoice["period"]) == invoice["amount"]:
            held.add(invoice["invoice_id"])
        amounts.setdefault(invoice["period"], invoice["amount"])
    return held


def suspending(invoices: Iterable[Mapping[str, Any]], today: str = TODAY) -> list[str]:
    """The invoices (of one account) that suspend it today: overdue (unpaid, not disputed, not
    credited) since at least :func:`suspend_after_days` after their due date. A double-fired
    copy (:func:`held_copies`) is held from collection, so from dunning too."""
    held = held_copies(invoices)
    return [
        i["invoice_id"]
        for i in invoices
        if i["invoice_id"] not in held
        and i["status"] == "overdue"
        and suspended_on(i["due_date"]) <= _day(today)
    ]


def payment_attempts() -> int:
    """The payments an agent may attempt on one invoice in one conversation."""
    return int(products()["policy"]["payment_attempts"])


def months_after(day: dt.date, months: int) -> dt.date:
    """The same day of the month ``months`` later (earlier if negative); a billing day, 1-28,
    exists in every month."""
    index = day.year * 12 + day.month - 1 + months
    return day.replace(year=index // 12, month=index % 12 + 1)


def commitment_terms() -> tuple[float, tuple[int, ...]]:
    """The share of postpaid lines on a commitment, and the commitments' lengths in months."""
    terms = products()["policy"]["commitment"]
    return float(terms["share"]), tuple(int(m) for m in terms["months"])


def months_left(commitment_end: str, today: str = TODAY) -> int:
    """The months of a commitment left from ``today`` to its last day, a started month counted
    whole (0: it has ended)."""
    end, day = _day(commitment_end), _day(today)
    if end < day:
        return 0
    return (end.year - day.year) * 12 + end.month - day.month + (end.day >= day.day)


def early_change_fee(
    old_fee: float, new_fee: float, commitment_end: str | None, today: str = TODAY
) -> tuple[float, int] | None:
    """The early-change fee (VAT-exclusive) and the months it counts for a move from a plan at
    ``old_fee`` to one at ``new_fee`` a month, both VAT-exclusive: the difference for each
    month left of the commitment; None when the move is free (no commitment running, or a
    plan at the same or a higher fee)."""
    left = months_left(commitment_end, today) if commitment_end else 0
    if not left or new_fee >= old_fee:
        return None
    return round((old_fee - new_fee) * left + 1e-9, 2), left


#: The channel of a payment customer care takes on a call (``retry_payment``).
CARE_CHANNEL = "care"
#: The kind of the one-off charge an early plan change makes (``charges``).
EARLY_CHANGE_FEE = "early_change_fee"


def credit_authority() -> float:
    """What an agent may credit in one conversation, in total, VAT-inclusive."""
    return float(products()["policy"]["credit_authority"])


@dataclass(frozen=True, slots=True)
class Cycle:
    """One billing cycle of an account: its period label and its first and last days."""

    period: str
    start: dt.date
    end: dt.date

    @property
    def issued_on(self) -> dt.date:
        """The day its invoice is issued: the day after it ends."""
        return self.end + dt.timedelta(days=1)

    @property
    def due_on(self) -> dt.date:
        return self.issued_on + dt.timedelta(days=payment_terms_days())

    def closed(self, today: str = TODAY) -> bool:
        return self.end < _day(today)

    def holds(self, day: dt.date) -> bool:
        return self.start <= day <= self.end

    @property
    def days(self) -> int:
        return (self.end - self.start).days + 1


def prorated(fee: float, cycle: Cycle, first: dt.date, last: dt.date) -> float:
    """A cycle's ``fee`` for the days ``first``..``last`` of it (a plan held part of a cycle)."""
    start, end = max(first, cycle.start), min(last, cycle.end)
    days = max(0, (end - start).days + 1)
    return round(fee * days / cycle.days + 1e-9, 2)


def _shift(period: str, months: int) -> str:
    year, month = map(int, period.split("-"))
    index = year * 12 + month - 1 + months
    return f"{index // 12:04d}-{index % 12 + 1:02d}"


@cache
def _day(text: str) -> dt.date:
    return dt.date.fromisoformat(text)


@cache  # a few hundred distinct cycles; a reset asks for them some 300 times
def cycle(period: str, billing_day: int) -> Cycle:
    """The cycle of ``period`` for an account billed on ``billing_day``."""
    start = dt.date.fromisoformat(f"{period}-{billing_day:02d}")
    following = dt.date.fromisoformat(f"{_shift(period, 1)}-{billing_day:02d}")
    return Cycle(period, start, following - dt.timedelta(days=1))


@cache
def invoice_dates(cycle: Cycle) -> tuple[str, str, str, str]:
    """The cycle's first and last day, its invoice's issue time and due date, as stored."""
    issued = f"{cycle.issued_on.isoformat()}T02:00:00"
    return cycle.start.isoformat(), cycle.end.isoformat(), issued, cycle.due_on.isoformat()


def open_cycle(billing_day: int, today: str = TODAY) -> Cycle:
    """The cycle that holds ``today``."""
    day = _day(today)
    period = today[:7] if day.day >= billing_day else _shift(today[:7], -1)
    return cycle(period, billing_day)


def periods(count: int, today: str = TODAY) -> list[str]:
    """The periods of the last ``count`` closed cycles and the open one, oldest first, the same
    for every account: today is on or after every billing day of its month (1-28)."""
    if int(today[8:]) < 28:
        raise ValueError(f"today {today} is before some billing days of its month (1-28)")
    last = today[:7]
    return [_shift(last, -offset) for offset in range(count, -1, -1)]
