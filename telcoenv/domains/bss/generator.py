"""The BSS data of one episode, generated deterministically from the episode's generator.

:func:`generate` builds a small customer base around one *focal* customer (the one who calls
customer care): each customer has an account, one or more lines on a plan of the products, twelve
months of usage, invoices with line items (plan fees, add-ons, data overage, roaming), payments
and sometimes credit notes. The data is production-like, with artefacts that defeat naive
queries, as real BSS extracts do:

* **a double-fired invoice**: the focal account's billing run fired twice for one month (same
  period and amount, a second invoice id issued seconds later); summing invoices counts it twice;
* **credit notes are negative amounts** in their own table; adding their absolute value to the
  charges, or forgetting them, gives the wrong balance;
* **internal test accounts** (segment ``internal``, named ``TEST ...``) with absurd bills that
  distort any average over customers;
* **NULL versus zero usage**: a month the mediation platform did not collect is ``NULL``; a month
  with no use is ``0``; averaging with NULL as 0 (or skipping zeros) gives the wrong figure.

Every identifier (customer, account, line, invoice and item, payment, credit note, family group,
add-on subscription) is drawn with the episode's generator, distinct within the episode: a
prefix and a six-digit serial from :data:`SERIALS`, and line numbers :data:`MSISDN_PREFIX` and
eight digits from :data:`LINE_NUMBERS`. The caller's ids are as random as the others', so no
episode gives away its caller. Serials with a leading zero are never drawn: the all-zero ones
are the examples of the tool specs and the docs (``C000000``, ``A000000``, ``966500000000``),
which therefore never name a real customer.

The rows come back per table, as tuples in the table's column order (see ``schema.py``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np

from telcoenv.catalog import parse_model
from telcoenv.domains.bss import billing
from telcoenv.domains.bss.billing import TODAY
from telcoenv.domains.bss.catalogue import eligible, products
from telcoenv.domains.bss.schema import bss_schema
from telcoenv.errors import CatalogError
from telcoenv.metrics.answers import Answer, AnswerKind, AnswerVocabulary
from telcoenv.specs import FrozenModel

# Customers' names in Latin letters (as stored) and Arabic letters (as an Arabic speaker states
# them): a Saudi BSS keeps both from the national ID record.
_NAMES_AR = {
    **{"Omar": "عمر", "Layla": "ليلى", "Khalid": "خالد", "Noura": "نورة", "Faisal": "فيصل"},
    **{"Sara": "سارة", "Yousef": "يوسف", "Huda": "هدى", "Tariq": "طارق", "Reem": "ريم"},
    **{"Al-Harbi": "الحربي", "Al-Qahtani": "القحطاني", "Al-Otaibi": "العتيبي"},
    **{"Al-Shammari": "الشمري", "Al-Dossary": "الدوسري", "Al-Zahrani": "الزهراني"},
}
_FIRST = ("Omar", "Layla", "Khalid", "Noura", "Faisal", "Sara", "Yousef", "Huda", "Tariq", "Reem")
_LAST = ("Al-Harbi", "Al-Qahtani", "Al-Otaibi", "Al-Shammari", "Al-Dossary", "Al-Zahrani")
_CITIES = ("Riyadh", "Jeddah", "Dammam", "Makkah", "Madinah", "Khobar")
OVERAGE_PER_GB = 15.0  # price of data beyond the allowance, VAT-exclusive
ROAMING_PER_GB: dict[str, float] = products()["roaming_payg_per_gb"]  # pay-as-you-go roaming
PREPAID_WEIGHT = 3  # a prepaid plan's weight in another customer's draw (a postpaid one: 1)
PREPAID_CREDIT = 120.0  # credit left on a prepaid account (pays add-ons on the spot)
# Identifiers (see the module docstring): [low, high) of the drawn numbers. Below ``low``, the
# numbers are reserved for examples (all zeros: C000000, 966500000000, +966500000000).
SERIALS = (100_000, 1_000_000)  # the six-digit serial after an id's prefix
MSISDN_PREFIX = "9665"  # Saudi mobile numbers: country code 966, then 5
LINE_NUMBERS = (10_000_000, 100_000_000)  # the eight digits after MSISDN_PREFIX
_BATCH = 64  # numbers drawn per call of the generator


class Phrasings(FrozenModel):
    """How an answer may state a stored text, in English and Arabic (see
    :mod:`telcoenv.metrics.answers`)."""

    en: tuple[str, ...]
    ar: tuple[str, ...]


class PaymentFailure(FrozenModel):
    """A reason a payment fails (``payment_failures`` of ``products.yaml``): the text stored on
    the failed payment, the payments it can happen to, and how an answer may state it."""

    reason: str
    methods: tuple[str, ...]
    channels: tuple[str, ...]
    card_expired: bool = False  # the card's expiry month is before the payment's
    # A retry with the same card or account can go through (the failure was the moment's or
    # the session's); otherwise it fails again, for the same reason, until the method changes.
    transient: bool = False
    forms: Phrasings


#: What an unlimited plan's usage scales with (its users' typical month), GB.
UNLIMITED_SCALE_GB = 60.0
CARD = "card"  # the payment method whose rows carry the card's last digits and expiry


@cache
def payment_failures() -> tuple[PaymentFailure, ...]:
    """The payment failure reasons of ``products.yaml``, each possible for a method and channel
    that ``payment_methods`` allows."""
    allowed: dict[str, list[str]] = products()["payment_methods"]
    failures = tuple(
        parse_model(PaymentFailure, raw, "products.yaml")
        for raw in products()["payment_failures"]["reasons"]
    )
    channels = {channel for listed in allowed.values() for channel in listed}
    for index, failure in enumerate(failures):
        unknown = sorted({*failure.methods} - {*allowed} | {*failure.channels} - channels)
        if unknown or not _instruments(failure):
            raise CatalogError(
                "products.yaml",
                f"payment_failures.reasons.{index}",
                f"{failure.reason!r}: unknown methods or channels {unknown}, or none of "
                f"payment_methods ({allowed}) allows it",
            )
    return failures


@cache
def transient_failures() -> frozenset[str]:
    """The failure reasons a retry with the same card or account can get past."""
    return frozenset(f.reason for f in payment_failures() if f.transient)


@cache
def answer_vocabulary() -> AnswerVocabulary:
    """The possible answers of the care questions by kind, with the forms that state them: a
    plan or an add-on by its id or display name, a payment failure reason by its phrasings."""

    def named(items: list[dict[str, Any]], key: str) -> tuple[Answer, ...]:
        return tuple(Answer(i[key], en=(i["name"]["en"],), ar=(i["name"]["ar"],)) for i in items)

    reasons = tuple(Answer(f.reason, en=f.forms.en, ar=f.forms.ar) for f in payment_failures())
    apart = products()["payment_failures"]["words_apart"]
    return AnswerVocabulary(
        (
            AnswerKind("plan", named(products()["plans"], "plan_id")),
            AnswerKind("addon", named(products()["addons"], "addon_id")),
            AnswerKind("failure_reason", reasons, words_apart=apart),
        )
    )


@cache  # None and the ten failure reasons: read-only tuples, shared by episodes
def _instruments(failure: PaymentFailure | None) -> tuple[tuple[str, str], ...]:
    """The (method, channel) pairs a payment may use, with ``failure`` if it fails."""
    return tuple(
        (method, channel)
        for method, channels in products()["payment_methods"].items()
        for channel in channels
        if failure is None
        or (
            method in failure.methods
            and channel in failure.channels
            and (method == CARD or not failure.card_expired)
        )
    )


@dataclass(frozen=True)
class Focal:
    """Who calls customer care, and what the intent needs to be true of them."""

    age: int = 34
    segment: str = "consumer"
    plan_id: str = "POST-ESSENTIAL"
    family_size: int = 1  # lines in the customer's family group (1: no group)
    data_use: float = 1.0  # monthly data use as a share of the plan allowance
    roaming_month: str | None = None  # a month with pay-as-you-go roaming (bill shock)
    roaming_zone: str = "EUROPE"
    duplicate_month: str | None = None  # the month whose invoice was double-fired
    extras_month: str | None = None  # a month whose bill carries coupons bought and roaming
    failed_payment: bool = False  # the last payment failed (its reason drawn)
    arrears: bool = False  # the last two bills unpaid: the account is suspended (dunning)
    active_addon: str | None = None  # an add-on active on the first line (to be cancelled)
    ran_out: bool = False  # the first line has used its whole data allowance this cycle


@dataclass
class BssData:
    """Rows per table (tuples in column order) and the focal customer's ids. Once loaded into
    an episode's database, ``rows`` are the episode's starting rows, no longer held whole in
    memory (:class:`~telcoenv.domains.bss.state.PristineRows`)."""

    rows: Mapping[str, list[tuple[Any, ...]]]
    customer_id: str
    account_id: str
    msisdns: list[str]
    months: list[str]
    facts: dict[str, Any] = field(default_factory=dict)


def arabic_name(name: str) -> str:
    """A stored (Latin) name in Arabic letters, part by part (a part without an Arabic form, as
    in an internal test account's name, stays as it is)."""
    return " ".join(_NAMES_AR.get(part, part) for part in name.split())


def other_name(name: str, rng: np.random.Generator) -> str:
    """A customer's name other than ``name`` (another first name, the same family's)."""
    first, _, last = name.partition(" ")
    others = [f for f in _FIRST if f != first]
    return f"{others[int(rng.integers(len(others)))]} {last}".strip()


def _month_index(month: str) -> int:
    year, number = map(int, month.split("-"))
    return year * 12 + number - 1


def _month(index: int) -> str:
    return f"{index // 12:04d}-{index % 12 + 1:02d}"


def _money(value: float) -> float:
    return round(value + 1e-9, 2)


class _Ids:
    """The identifiers of one episode: drawn with its generator, distinct, never an example.

    Numbers are drawn in batches (one call per :data:`_BATCH` ids, not one per id) and used in
    order, so the ids depend on the seed alone."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.used: set[str] = set()
        # Per range, the numbers drawn and not used yet, the next one last (popped).
        self.drawn: dict[tuple[int, int], list[int]] = {SERIALS: [], LINE_NUMBERS: []}

    def _next(self, prefix: str, numbers: tuple[int, int]) -> str:
        batch, used = self.drawn[numbers], self.used
        while True:
            if not batch:
                batch += self.rng.integers(*numbers, _BATCH).tolist()[::-1]
            value = f"{prefix}{batch.pop()}"
            if value not in used:
                used.add(value)
                return value

    def new(self, prefix: str) -> str:
        """A new id: ``prefix`` and a six-digit serial."""
        return self._next(prefix, SERIALS)

    def ordered(self, prefix: str, count: int) -> list[str]:
        """``count`` new ids in increasing order: rows that a tool lists by id (the items of an
        invoice) keep the order they were made in."""
        return sorted([self._next(prefix, SERIALS) for _ in range(count)])

    def msisdn(self) -> str:
        """A new line number."""
        return self._next(MSISDN_PREFIX, LINE_NUMBERS)


@dataclass
class _Account:
    """One account of the episode's customer base: its holder, billing day, lines and use."""

    account_id: str
    customer_id: str
    segment: str
    born: dt.date
    billing_day: int
    share: float = 1.0  # monthly data use as a share of each line's allowance
    lines: list[tuple[str, str]] = field(default_factory=list)  # (msisdn, plan_id)
    activated: dict[str, dt.date] = field(default_factory=dict)
    family: bool = False  # its lines form a family group sharing their data

    def lines_in(self, cycle: billing.Cycle) -> list[tuple[str, str]]:
        """The lines active through the whole cycle (activated on a billing day)."""
        return [(m, p) for m, p in self.lines if self.activated[m] <= cycle.start]


def _years_after(born: dt.date, years: int) -> dt.date:
    try:
        return born.replace(year=born.year + years)
    except ValueError:  # born on 29 February
        return born.replace(year=born.year + years, day=28)


def _billing_day_from(day: dt.date, billing_day: int) -> dt.date:
    """The first billing day on or after ``day``."""
    same = day.replace(day=billing_day)
    if same >= day:
        return same
    following = dt.date(day.year + day.month // 12, day.month % 12 + 1, billing_day)
    return following


@cache  # one entry per billing day (1-28) of the same 13 periods: read-only, shared
def _usage_cycles(
    periods: tuple[str, ...], billing_day: int
) -> tuple[tuple[billing.Cycle, bool, float], ...]:
    """Each period's cycle for ``billing_day``, whether it is closed, and the share of it
    elapsed by today (1.0 once closed): the same for every episode, computed once."""
    today = dt.date.fromisoformat(TODAY)
    cycles = []
    for period in periods:
        cycle = billing.cycle(period, billing_day)
        closed = cycle.closed()
        elapsed = 1.0 if closed else ((today - cycle.start).days + 1) / cycle.days
        cycles.append((cycle, closed, elapsed))
    return tuple(cycles)


#: Share of other customers who have not paid their latest bill (it goes overdue), the share
#: (of all, among them) who have not paid the one before either (in arrears: suspended once it
#: is long enough overdue), and the chance that one of them disputes their latest bill (a
#: billing_dispute ticket is open on it).
LATE_PAYER_P, ARREARS_P, DISPUTE_P = 0.05, 0.02, 0.25


@cache  # the same rows in every episode (but for its id): built once, read-only tuples
def _product_rows() -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """The rows of ``rate_plans`` and ``addons`` (episode id left out), from the products."""
    vat = products()["vat_rate"]
    plans = tuple(
        (
            "rate_plans",
            (
                plan["plan_id"],
                plan["name"]["en"],
                plan["name"]["ar"],
                plan["payment"],
                plan["segment"],
                plan["price"],
                _money(plan["price"] * (1 + vat)),
                plan["data_gb"],
                plan["voice_min"],
                plan["sms"],
                plan["min_age"],
                plan["max_age"],
            ),
        )
        for plan in products()["plans"]
    )
    addons = tuple(
        (
            "addons",
            (
                addon["addon_id"],
                addon["name"]["en"],
                addon["name"]["ar"],
                addon["kind"],
                addon["zone"],
                addon["price"],
                _money(addon["price"] * (1 + vat)),
                addon["data_gb"],
                addon["voice_min"],
                addon["validity_days"],
                ",".join(addon["payment"]),
            ),
        )
        for addon in products()["addons"]
    )
    return plans + addons


@cache  # one entry per age (19-69): read-only, shared by episodes
def _consumer_pool(age: int) -> tuple[str, ...]:
    """The consumer plans a customer of ``age`` may hold, in the catalogue's order, each
    prepaid one PREPAID_WEIGHT times (another customer's plan is drawn from this pool)."""
    plans = products()["plans"]
    allowed = [p for p in plans if p["segment"] == "consumer" and eligible(p, age, "consumer")]
    return tuple(
        p["plan_id"]
        for p in allowed
        for _ in range(PREPAID_WEIGHT if p["payment"] == "prepaid" else 1)
    )


class _Builder:
    def __init__(self, rng: np.random.Generator, episode_id: str, months: list[str]) -> None:
        self.rng, self.episode, self.months = rng, episode_id, months
        self.periods = tuple(months)  # hashable: the key of the cycles shared by episodes
        self.rows: dict[str, list[tuple[Any, ...]]] = {t: [] for t in bss_schema().plan.columns}
        self.plans = {p["plan_id"]: p for p in products()["plans"]}
        self.addons = {a["addon_id"]: a for a in products()["addons"]}
        self.vat = products()["vat_rate"]
        self.ids = _Ids(rng)
        self.today = dt.date.fromisoformat(TODAY)
        self.usage_rows: dict[tuple[str, str], int] = {}  # (msisdn, month): usage_records index
        self.disputed: set[str] = set()  # invoices a billing_dispute ticket names
        # Read and built once: pay() runs for every invoice.
        self.terms = billing.payment_terms_days()
        self.days = tuple(dt.timedelta(days=n) for n in range(self.terms + 1))

    def add(self, table: str, *values: Any) -> None:
        self.rows[table].append((self.episode, *values))

    def product_rows(self) -> None:
        for table, row in _product_rows():
            self.rows[table].append((self.episode, *row))

    def customer(
        self, segment: str, age: int, name: str | None = None, *, last_billing_day: int = 28
    ) -> _Account:
        """A customer and their account. They turned ``age`` 2-12 months ago (their birthday is
        any day of a year: a guess from the age is right one time in 300), so a line they
        became old enough for is active by the latest closed cycle (see :meth:`line`)."""
        rng = self.rng
        customer_id, account_id = self.ids.new("C"), self.ids.new("A")
        first, last = _FIRST[int(rng.integers(len(_FIRST)))], _LAST[int(rng.integers(len(_LAST)))]
        name = name or f"{first} {last}"
        born = self.today - dt.timedelta(days=int(age * 365.25 + int(rng.integers(62, 365))))
        handle = name.lower().replace(" ", ".").replace("-", "")
        domain = "ops.telcoenv.test" if segment == "internal" else "mail.example.sa"
        self.add(
            "customers",
            customer_id,
            name,
            born.isoformat(),
            segment,
            "ar" if rng.random() < 0.6 else "en",
            f"{handle}@{domain}",
            f"+{MSISDN_PREFIX}{int(rng.integers(*LINE_NUMBERS))}",
            _CITIES[int(rng.integers(len(_CITIES)))],
        )
        billing_day = int(rng.integers(1, last_billing_day + 1))
        self.add("accounts", account_id, customer_id, billing_day, 0.0, 3000.0, "active")
        return _Account(account_id, customer_id, segment, born, billing_day)

    def line(self, account: _Account, plan_id: str) -> str:
        """A line on ``plan_id``, activated on a billing day (its first cycle is whole) once the
        holder was old enough for the plan."""
        msisdn = self.ids.msisdn()
        plan = self.plans[plan_id]
        drawn = dt.date(
            int(self.rng.integers(2019, 2025)), int(self.rng.integers(1, 13)), account.billing_day
        )
        old_enough = _years_after(account.born, plan["min_age"])
        activated = max(drawn, _billing_day_from(old_enough, account.billing_day))
        self.add(
            "lines",
            msisdn,
            account.account_id,
            plan_id,
            plan["payment"],
            "active",
            activated.isoformat(),
            None,  # a commitment is drawn at the end (commitments)
        )
        history = self.ids.new("PH")
        self.add("plan_history", history, msisdn, activated.isoformat(), plan_id, None)
        account.lines.append((msisdn, plan_id))
        account.activated[msisdn] = activated
        if plan["payment"] == "prepaid":  # a prepaid account carries credit, not a debt
            accounts = self.rows["accounts"]
            index = next(i for i, row in enumerate(accounts) if row[1] == account.account_id)
            row = accounts[index]
            accounts[index] = (*row[:4], PREPAID_CREDIT, *row[5:])
        return msisdn

    def usage(
        self,
        account: _Account,
        msisdn: str,
        plan_id: str,
        gaps: int,
        *,
        kept: frozenset[str] = frozenset(),
        ran_out: bool = False,
    ) -> dict[str, float]:
        """The line's usage per cycle since its activation, the open cycle's so far; ``gaps``
        closed cycles (never one of ``kept``) not collected (NULL). A prepaid line stops at its
        allowance; with ``ran_out`` the open cycle has used all of it. Voice and SMS stay
        within limited allowances (no voice or SMS charge exists). Returns data per month."""
        rng, plan = self.rng, self.plans[plan_id]
        limit = plan["data_gb"]
        scale = (limit if limit is not None else UNLIMITED_SCALE_GB) * account.share
        since = account.activated[msisdn]
        cycles = [c for c in _usage_cycles(self.periods, account.billing_day) if c[0].end >= since]
        candidates = [c[0].period for c in cycles[:-1] if c[0].period not in kept]
        # Drawn by index: the same draw as choosing among the periods themselves (numpy picks
        # positions either way), without converting them to an array of strings.
        missing = (
            {candidates[i] for i in rng.choice(len(candidates), size=gaps, replace=False).tolist()}
            if 0 < gaps < len(candidates)  # one collected cycle at least
            else set()
        )
        capped = plan["payment"] == "prepaid" and limit is not None
        voice_limit, sms_limit = plan["voice_min"], plan["sms"]
        used: dict[str, float] = {}
        # The hottest loop of a reset (13 cycles x every line): names bound once.
        records, episode, rows = self.rows["usage_records"], self.episode, self.usage_rows
        random, integers = rng.random, rng.integers
        # A uniform on [a, b) is a + (b - a) x the next double (numpy's own formula): drawn as
        # doubles, as numpy's scalar calls were most of a reset's generation. With limited
        # voice and SMS a cycle draws four of them in a row, in one call.
        limited = voice_limit is not None and sms_limit is not None
        collected = len(cycles) - len(missing)  # the missing periods are some of cycles
        doubles = iter(random(4 * collected).tolist()) if limited else None
        for cycle, closed, elapsed in cycles:
            period = cycle.period
            rows[msisdn, period] = len(records)
            if period in missing:
                records.append((episode, msisdn, period, None, None, None, None, None))
                continue
            if doubles is not None:
                share, idle = 0.7 + (1.25 - 0.7) * next(doubles), next(doubles)
            else:
                share, idle = 0.7 + (1.25 - 0.7) * random(), random()
            data = max(0.0, scale * share)
            if idle < 0.05:
                data = 0.0  # a month without use: zero, not NULL
            if capped:
                data = min(data, float(limit))
            data = round(data * elapsed, 2)
            if ran_out and not closed and limit is not None:
                data = float(limit)  # the allowance is used up
            if doubles is not None:
                voice = int(voice_limit * (0.05 + (0.9 - 0.05) * next(doubles)) * elapsed)
                sms = int(sms_limit * ((0.3 - 0.0) * next(doubles)) * elapsed)
            else:
                voice = (
                    int(voice_limit * (0.05 + (0.9 - 0.05) * random()) * elapsed)
                    if voice_limit is not None
                    else int(int(integers(30, 1500)) * elapsed)  # Python, not numpy, scalars
                )
                sms = (
                    int(sms_limit * ((0.3 - 0.0) * random()) * elapsed)
                    if sms_limit is not None
                    else int(int(integers(0, 80)) * elapsed)
                )
            records.append((episode, msisdn, period, data, voice, sms, 0.0, None))
            used[period] = data
        return used

    def roamed(self, msisdn: str, month: str, zone: str, gb: float) -> None:
        """Record pay-as-you-go roaming data on the line's usage of the month (the roaming
        partner's records reach the bill and the usage alike)."""
        records = self.rows["usage_records"]
        index = self.usage_rows[msisdn, month]
        row = records[index]
        total = round((row[6] or 0.0) + gb, 2)
        records[index] = (*row[:6], total, zone)

    def invoice(
        self, account_id: str, cycle: billing.Cycle, items: list[tuple[str, str, str, float]]
    ) -> tuple[str, float]:
        invoice_id = self.ids.new("INV")
        net = _money(sum([item[3] for item in items]))  # a list: the same sum, made faster
        vat = _money(net * self.vat)
        amount = _money(net + vat)
        self.rows["invoices"].append(
            (
                self.episode,
                invoice_id,
                account_id,
                cycle.period,
                *billing.invoice_dates(cycle),
                net,
                vat,
                amount,
                "issued",  # set by statuses() once payments and credits are known
            )
        )
        self.items(invoice_id, items)
        return invoice_id, amount

    def items(self, invoice_id: str, items: list[tuple[str, str, str, float]]) -> None:
        """The invoice's line items, each with its own id."""
        episode, ids = self.episode, self.ids.ordered("IT", len(items))
        self.rows["invoice_items"] += [
            (episode, item_id, invoice_id, *item) for item_id, item in zip(ids, items, strict=True)
        ]

    def pay(
        self,
        account_id: str,
        invoice_id: str,
        cycle: billing.Cycle,
        amount: float,
        *,
        fails: bool = False,
    ) -> None:
        """The payment of an invoice, made within its terms: none yet if that day is still to
        come; one that fails is the latest attempt, made before today. How it was paid (and why
        it failed) is drawn at the end, by :meth:`instruments`."""
        lag = int(self.rng.integers(0, self.terms + 1))
        day = cycle.issued_on + self.days[lag]
        if fails:
            day = min(day, self.today - dt.timedelta(days=1))
        elif day >= self.today:
            return
        self.add(
            "payments",
            self.ids.new("PAY"),
            account_id,
            invoice_id,
            f"{day.isoformat()}T10:15:00",
            amount,
            None,
            "failed" if fails else "settled",
            None,
            None,
            None,
            None,
        )

    def statuses(self) -> None:
        """Each invoice's status from its payments, credit notes and disputes (see
        ``billing.INVOICE_STATUSES``)."""
        rows = self.rows
        paid: dict[str, float] = {}
        for row in rows["payments"]:
            if row[7] == "settled" and row[3] is not None:
                paid[row[3]] = paid.get(row[3], 0.0) + row[5]
        credited: dict[str, float] = {}
        for row in rows["credit_notes"]:
            if row[3] is not None:
                credited[row[3]] = credited.get(row[3], 0.0) - row[5]
        disputed = self.disputed
        invoices = rows["invoices"]
        for index, row in enumerate(invoices):
            invoice_id, amount = row[1], row[10]
            if credited.get(invoice_id, 0.0) >= amount - 0.005:
                status = "credited"
            elif paid.get(invoice_id, 0.0) + credited.get(invoice_id, 0.0) >= amount - 0.005:
                status = "paid"
            elif invoice_id in disputed:
                status = "disputed"
            else:
                status = "overdue" if row[7] < TODAY else "issued"
            invoices[index] = (*row[:11], status)

    def suspensions(self) -> None:
        """Dunning: an account with an invoice overdue since :func:`billing.suspended_on` is
        suspended, with its postpaid lines."""
        # Only the accounts with an invoice overdue that long can be (most episodes have none).
        behind = {
            row[2]
            for row in self.rows["invoices"]
            if row[11] == "overdue" and billing.suspended_on(row[7]) <= self.today
        }
        if not behind:
            return
        fields = ("invoice_id", "account_id", "period", "issued_at", "due_date", "amount")
        of: dict[str, list[dict[str, Any]]] = {}
        for row in self.rows["invoices"]:
            if row[2] in behind:
                invoice = dict(zip(fields, (*row[1:4], row[6], row[7], row[10]), strict=True))
                of.setdefault(row[2], []).append({**invoice, "status": row[11]})
        suspended = {a for a, invoices in of.items() if billing.suspending(invoices, TODAY)}
        if not suspended:
            return
        accounts, lines = self.rows["accounts"], self.rows["lines"]
        for index, row in enumerate(accounts):
            if row[1] in suspended:
                accounts[index] = (*row[:6], "suspended")
        for index, row in enumerate(lines):
            if row[2] in suspended and row[4] == "postpaid":
                lines[index] = (*row[:5], "suspended", *row[6:])

    def balances(self) -> None:
        """Each account's balance as its ledger has it. A postpaid account owes every invoice
        issued to it (a double-fired one too: nothing has credited it yet) plus its credit notes
        (negative), less its settled payments; a prepaid account holds the credit left, with
        no credit limit (it pays as it goes)."""
        rows = self.rows
        owed: dict[str, float] = {}
        for row in rows["invoices"]:
            owed[row[2]] = owed.get(row[2], 0.0) + row[10]
        for row in rows["credit_notes"]:
            owed[row[2]] = owed.get(row[2], 0.0) + row[5]
        for row in rows["payments"]:
            if row[7] == "settled":
                owed[row[2]] = owed.get(row[2], 0.0) - row[5]
        prepaid = {row[2] for row in rows["lines"] if row[4] == "prepaid"}
        accounts = rows["accounts"]
        for index, row in enumerate(accounts):
            if row[1] in prepaid:
                accounts[index] = (*row[:5], 0.0, *row[6:])
            else:
                accounts[index] = (*row[:4], _money(owed.get(row[1], 0.0)), *row[5:])

    def commitments(self) -> None:
        """A share of postpaid lines (internal ones aside) on a 12- or 24-month commitment,
        signed on a billing day from their activation (or a renewal) to today, most still
        running. Drawn from a stream of their own (two jumps from the generator's state), so
        every other draw is the same as without them."""
        jumped = getattr(self.rng.bit_generator, "jumped", None)
        rng = np.random.Generator(jumped(2)) if jumped else self.rng
        share, lengths = billing.commitment_terms()
        internal = {r[1] for r in self.rows["customers"] if r[4] == "internal"}
        holder = {r[1]: r[2] for r in self.rows["accounts"]}
        lines = self.rows["lines"]
        for index, row in enumerate(lines):
            if row[4] != "postpaid" or holder[row[2]] in internal:
                continue
            if rng.random() >= share:
                continue
            months = lengths[int(rng.integers(len(lengths)))]
            activated = dt.date.fromisoformat(row[6])
            earliest = max(_month_index(row[6][:7]), _month_index(TODAY[:7]) - months)
            signed = _month(int(rng.integers(earliest, _month_index(TODAY[:7]) + 1)))
            # A billing day (the activation's day) from the activation's month to this month's.
            start = dt.date.fromisoformat(f"{signed}-{activated.day:02d}")
            end = billing.months_after(start, months) - dt.timedelta(days=1)
            lines[index] = (*row[:7], end.isoformat())

    def instruments(self, end_month: str, unpaid: set[str]) -> None:
        """Each postpaid account's method on file (method, channel and card), which its payments
        used, and the reason of its failed payment (if any), consistent with them: an expired
        card's expiry month is the one before the failed payment's. Drawn from a stream of their
        own, jumped from the generator's state (which stays as it is), after every other draw of
        the data: the rest of the data and every later draw of the episode (its opening) are
        what they were before payments had them. An account that left a bill unpaid (``unpaid``)
        pays online, by card: autopay would have tried it."""
        jumped = getattr(self.rng.bit_generator, "jumped", None)  # PCG64's; others: the same
        rng = np.random.Generator(jumped()) if jumped else self.rng
        rows, failures = self.rows["payments"], payment_failures()
        postpaid = {row[2] for row in self.rows["lines"] if row[4] == "postpaid"}
        by_account: dict[str, list[int]] = {
            row[1]: [] for row in self.rows["accounts"] if row[1] in postpaid
        }
        for index, row in enumerate(rows):
            by_account[row[2]].append(index)
        for account_id, indices in by_account.items():
            failed = [i for i in indices if rows[i][7] == "failed"]
            failure = failures[int(rng.integers(len(failures)))] if failed else None
            pairs: Sequence[tuple[str, str]] = _instruments(failure)
            if account_id in unpaid:
                pairs = [(m, c) for m, c in pairs if c != "autopay"] or pairs
            method, channel = pairs[int(rng.integers(len(pairs)))]
            last4 = expiry = None
            if method == CARD:
                last4 = f"{int(rng.integers(10_000)):04d}"
                if failure is not None and failure.card_expired:
                    expiry = _month(_month_index(rows[failed[0]][4][:7]) - 1)
                else:  # valid beyond the last bill
                    expiry = _month(_month_index(end_month) + int(rng.integers(1, 49)))
            for i in indices:
                reason = failure.reason if failure is not None and i in failed else None
                rows[i] = (*rows[i][:6], method, rows[i][7], reason, channel, last4, expiry)
            self.add("payment_methods", account_id, method, channel, last4, expiry, None)


#: How many data coupons the account bought in a month whose bill must be read (0, 1, 2), and
#: how often it roamed pay-as-you-go: one such bill in ten is the plan fees alone.
COUPONS_BOUGHT_P, ROAMED_P = (0.25, 0.40, 0.35), 0.6


def _bought_and_roamed(
    builder: _Builder, lines: list[tuple[str, str]], cycle: billing.Cycle
) -> tuple[list[tuple[str, str, str, float]], dict[str, float]]:
    """What the account bought and used beyond its plans in ``cycle``, drawn: data coupons (each
    on one of its lines, subscribed in the cycle's first ten days for the coupon's validity)
    and pay-as-you-go roaming data on its first line (0.3-3 GB in a zone); with the GB the
    coupons add to each line's allowance that cycle."""
    rng = builder.rng
    coupons = [
        a
        for a in builder.addons.values()
        if a["kind"] == "data_coupon" and "postpaid" in a["payment"]
    ]
    items = []
    coupon_gb: dict[str, float] = {}
    for _ in range(int(rng.choice(len(COUPONS_BOUGHT_P), p=COUPONS_BOUGHT_P))):
        coupon = coupons[int(rng.integers(len(coupons)))]
        msisdn = lines[int(rng.integers(len(lines)))][0]
        start = cycle.start + dt.timedelta(days=int(rng.integers(0, 10)))
        end = start + dt.timedelta(days=coupon["validity_days"] - 1)
        status = "active" if end.isoformat() >= TODAY else "expired"
        builder.add(
            "line_addons",
            builder.ids.new("LA"),
            msisdn,
            coupon["addon_id"],
            start.isoformat(),
            end.isoformat(),
            status,
        )
        items.append((msisdn, "addon", coupon["name"]["en"], float(coupon["price"])))
        coupon_gb[msisdn] = coupon_gb.get(msisdn, 0.0) + coupon["data_gb"]
    if rng.random() < ROAMED_P:
        zone = sorted(ROAMING_PER_GB)[int(rng.integers(len(ROAMING_PER_GB)))]
        gb = round(float(rng.uniform(0.3, 3.0)), 2)
        builder.roamed(lines[0][0], cycle.period, zone, gb)
        items.append(_roaming_item(lines[0][0], zone, gb))
    return items, coupon_gb


def _roaming_item(msisdn: str, zone: str, gb: float) -> tuple[str, str, str, float]:
    """A bill's pay-as-you-go roaming data: ``gb`` in ``zone`` at its rate."""
    return (msisdn, "roaming", f"Roaming data {zone} {gb} GB", _money(gb * ROAMING_PER_GB[zone]))


def _overage_item(msisdn: str, used: float, allowance: float, label: str) -> list[Any]:
    if used <= allowance + 1e-9:
        return []
    extra = round(used - allowance, 2)
    return [(msisdn, "overage", f"{label} {extra} GB", _money(extra * OVERAGE_PER_GB))]


#: The descriptions of the items a family group adds (billing.py; the ledger checks them).
FAMILY_FEE_ITEM, SHARED_OVERAGE, LINE_OVERAGE = (
    "Family member fee",
    "Shared data overage",
    ("Data overage"),
)


def _bill_lines(
    builder: _Builder,
    account: _Account,
    usage: dict[str, dict[str, float]],
    cycle: billing.Cycle,
    coupon_gb: dict[str, float] | None = None,
) -> list[tuple[str, str, str, float]]:
    """A cycle's plan fees and data overage of the account's lines: the overage is the use
    beyond the plan's allowance and the coupons bought on the line that cycle (``coupon_gb``);
    a family group's lines pool their allowances (one overage, on the owner's line) and pay a
    fee for each member line."""
    coupon_gb = coupon_gb or {}
    items: list[Any] = []
    plans = builder.plans
    lines = [(m, p) for m, p in account.lines_in(cycle) if plans[p]["payment"] == "postpaid"]
    for position, (msisdn, plan_id) in enumerate(lines):
        plan = plans[plan_id]
        items.append((msisdn, "plan", plan["name"]["en"], float(plan["price"])))
        if account.family and position > 0:
            items.append((msisdn, "family", FAMILY_FEE_ITEM, billing.family_fee()))
        used = usage[msisdn].get(cycle.period)
        if account.family or used is None or plan["data_gb"] is None:
            continue
        allowance = plan["data_gb"] + coupon_gb.get(msisdn, 0.0)
        items += _overage_item(msisdn, used, allowance, LINE_OVERAGE)
    if account.family and lines:
        pool = family_pool([p for _, p in lines], builder.plans)
        if pool is not None:
            used = sum(usage[m].get(cycle.period) or 0.0 for m, _ in lines)
            allowance = pool + sum(coupon_gb.values())
            items += _overage_item(lines[0][0], round(used, 2), allowance, SHARED_OVERAGE)
    return items


def family_pool(plan_ids: list[str], plans: dict[str, dict[str, Any]]) -> float | None:
    """A family group's shared data: its lines' plan allowances pooled (None: unlimited)."""
    allowances = [plans[p]["data_gb"] for p in plan_ids]
    return None if None in allowances else float(sum(allowances))


def generate(
    rng: np.random.Generator,
    episode_id: str,
    focal: Focal = Focal(),
    *,
    customers: int = 10,
) -> BssData:
    """The BSS data of one episode (see the module docstring)."""
    months = billing.periods(CLOSED_CYCLES)
    closed = months[:-1]
    builder = _Builder(rng, episode_id, months)
    builder.product_rows()
    # A failed payment is the latest bill's, in a month after the bill before was paid (within
    # its terms, by the end of October): a card that expired in between fails it. A caller in
    # arrears is billed early enough in the month for the bill before to suspend them today.
    last_billing_day = 16 if focal.arrears else 17 if focal.failed_payment else 28
    caller = builder.customer(focal.segment, focal.age, last_billing_day=last_billing_day)
    caller.share, caller.family = focal.data_use, focal.family_size > 1
    for _ in range(focal.family_size):
        builder.line(caller, focal.plan_id)
    population = [caller]
    for _ in range(customers - 1):
        age = int(rng.integers(19, 70))
        account = builder.customer("consumer", age)
        account.share = 0.3 + (1.1 - 0.3) * rng.random()  # uniform(0.3, 1.1), numpy's formula
        # Prepaid plans weighted so that the mix does not follow the catalogue's count of
        # postpaid tiers (about a third of the others are prepaid); one draw, as before.
        pool = _consumer_pool(age)
        builder.line(account, pool[int(rng.integers(len(pool)))])
        population.append(account)
    for index in range(2):  # internal test accounts with absurd bills
        account = builder.customer("internal", 40, name=f"TEST Billing QA {index + 1}")
        builder.line(account, "POST-UNLIMITED")
        population.append(account)
    focal_lines = caller.lines
    if caller.family:
        group_id = builder.ids.new("FG")
        shared = family_pool([p for _, p in focal_lines], builder.plans)
        builder.add("family_groups", group_id, caller.account_id, shared)
        for position, (msisdn, _) in enumerate(focal_lines):
            builder.add("family_members", group_id, msisdn, "owner" if position == 0 else "member")
    kept = frozenset(
        m for m in (focal.roaming_month, focal.extras_month, focal.duplicate_month) if m
    )
    usage: dict[str, dict[str, float]] = {}
    for account in population:
        for msisdn, plan_id in account.lines:
            first = account is caller and msisdn == focal_lines[0][0]
            usage[msisdn] = builder.usage(
                account,
                msisdn,
                plan_id,
                1 if first else int(rng.integers(0, 2)),
                kept=kept if account is caller else frozenset(),
                ran_out=first and focal.ran_out,
            )
    facts: dict[str, Any] = {"invoices": {}}
    bought = _active_addon(builder, caller, focal, facts)
    draws = {a.account_id: rng.random() for a in population[1:]}
    late = {a for a, u in draws.items() if u < LATE_PAYER_P}
    arrears = {a for a, u in draws.items() if u < ARREARS_P}
    if focal.arrears:
        late |= {caller.account_id}
        arrears |= {caller.account_id}
    disputing = None
    if customers > 1 and rng.random() < DISPUTE_P:
        disputing = population[1 + int(rng.integers(customers - 1))]
    for account in population:
        for month in closed:
            cycle = billing.cycle(month, account.billing_day)
            extras: list[tuple[str, str, str, float]] = []
            coupon_gb: dict[str, float] = {}
            if account is caller and month == focal.extras_month:
                extras, coupon_gb = _bought_and_roamed(builder, account.lines_in(cycle), cycle)
            items = _bill_lines(builder, account, usage, cycle, coupon_gb)
            if account is caller and month == focal.roaming_month:
                zone, gb = focal.roaming_zone, round(float(rng.uniform(2.0, 6.0)), 2)
                builder.roamed(focal_lines[0][0], month, zone, gb)
                roaming = _roaming_item(focal_lines[0][0], zone, gb)
                items.append(roaming)
                facts["roaming_charge"] = roaming[3]
            items += extras
            if account is caller:
                items += [item for day, item in bought if cycle.holds(day)]
            if not items:
                continue
            if account.segment == "internal" and rng.random() < 0.5:
                items.append((account.lines[0][0], "device", "QA test device charge", 9999.0))
            invoice_id, amount = builder.invoice(account.account_id, cycle, items)
            latest = month == closed[-1]
            if account is caller:
                facts["invoices"][month] = (invoice_id, amount)
                if month == focal.duplicate_month:  # the billing run fired twice
                    facts["duplicate_invoice"] = _double_fired(builder, items)
            if latest and account is disputing:
                _dispute(builder, account, invoice_id, cycle)
            elif not (latest and account.account_id in late) and not (
                month == closed[-2] and account.account_id in arrears
            ):
                fails = account is caller and latest and focal.failed_payment
                builder.pay(account.account_id, invoice_id, cycle, amount, fails=fails)
    _goodwill_credit(builder, caller, closed, facts)
    builder.instruments(months[-1], late)  # last: every draw before it is the same
    builder.commitments()
    builder.statuses()
    builder.suspensions()
    builder.balances()
    msisdns = [m for m, _ in focal_lines]
    facts.update(_answers(builder.rows, focal, caller.account_id, msisdns, closed, facts))
    return BssData(builder.rows, caller.customer_id, caller.account_id, msisdns, months, facts)


#: Closed billing cycles on record (their invoices and usage), before the open one.
CLOSED_CYCLES = 12


def _double_fired(builder: _Builder, items: list[tuple[str, str, str, float]]) -> str:
    """The billing run fired twice for the invoice just made: the same invoice under a second
    id, issued seconds later, every item billed again. Nothing collects it (autopay pays the
    invoice of a cycle once)."""
    duplicate = builder.ids.new("INV")
    row = builder.rows["invoices"][-1]
    issued = row[6].replace("T02:00:00", "T02:00:07")
    builder.rows["invoices"].append((row[0], duplicate, *row[2:6], issued, *row[7:]))
    builder.items(duplicate, items)
    return duplicate


def _dispute(builder: _Builder, account: _Account, invoice_id: str, cycle: billing.Cycle) -> None:
    """The customer disputes the invoice: a billing_dispute ticket, opened a few days after it
    was issued, names it (and nothing collects it meanwhile)."""
    builder.disputed.add(invoice_id)
    opened = cycle.issued_on + dt.timedelta(days=int(builder.rng.integers(1, 4)))
    builder.add(
        "tickets",
        builder.ids.new("TK"),
        account.customer_id,
        "billing_dispute",
        f"DISPUTE {invoice_id}: the customer does not recognise charges on this invoice.",
        "open",
        f"{min(opened, builder.today).isoformat()}T11:00:00",
    )


def _goodwill_credit(
    builder: _Builder, caller: _Account, closed: list[str], facts: dict[str, Any]
) -> None:
    """A goodwill credit note on the caller's invoice of three cycles ago (if it has one),
    issued a few days after that invoice."""
    month = closed[-3]
    cycle = billing.cycle(month, caller.billing_day)
    invoice = facts["invoices"].get(month)
    issued = cycle.issued_on + dt.timedelta(days=int(builder.rng.integers(2, 20)))
    credit = _money(-float(builder.rng.uniform(10, 60)))
    builder.add(
        "credit_notes",
        builder.ids.new("CN"),
        caller.account_id,
        invoice[0] if invoice else None,
        f"{issued.isoformat()}T09:00:00",
        credit,
        "Goodwill credit for a network outage",
    )
    facts["credit_note"] = credit


def _active_addon(
    builder: _Builder, caller: _Account, focal: Focal, facts: dict[str, Any]
) -> list[tuple[dt.date, tuple[str, str, str, float]]]:
    """The add-on active today on the caller's first line (to be cancelled), half used, with
    the days subscribe_addon gives (start + validity - 1). Returns its bill item with its
    start day for a postpaid line (billed in the cycle it started in; in the open cycle it is
    an unbilled charge)."""
    if focal.active_addon is None:
        return []
    addon = builder.addons[focal.active_addon]
    msisdn, plan_id = caller.lines[0]
    validity = addon["validity_days"]
    start = builder.today - dt.timedelta(days=validity // 2)
    end = start + dt.timedelta(days=validity - 1)
    subscription = builder.ids.new("LA")
    builder.add(
        "line_addons",
        subscription,
        msisdn,
        focal.active_addon,
        start.isoformat(),
        end.isoformat(),
        "active",
    )
    facts["subscription_id"] = subscription
    if builder.plans[plan_id]["payment"] != "postpaid":
        return []
    return [(start, (msisdn, "addon", addon["name"]["en"], float(addon["price"])))]


def _answers(
    rows: dict[str, list[tuple[Any, ...]]],
    focal: Focal,
    account: str,
    msisdns: list[str],
    closed: list[str],
    facts: dict[str, Any],
) -> dict[str, Any]:
    """The exact answers to the care questions about the focal customer, from the rows as
    generated (the careful reading: the duplicate counted once, credit notes negative, NULL
    months skipped, the open cycle's partial month left out of an average, internal accounts
    irrelevant)."""
    answers: dict[str, Any] = {}
    if focal.duplicate_month in facts["invoices"]:
        answers["duplicate_amount"] = facts["invoices"][focal.duplicate_month][1]
    failed = [row[8] for row in rows["payments"] if row[2] == account and row[7] == "failed"]
    if failed:  # the reason stored on the caller's failed payment
        answers["failure_reason"] = failed[-1]
    collected = [
        row[3]
        for row in rows["usage_records"]
        if row[1] == msisdns[0] and row[2] in closed and row[3] is not None
    ]
    answers["average_data_gb"] = _money(sum(collected) / len(collected))
    family: dict[str, float] = {}
    for row in rows["usage_records"]:
        if row[1] in msisdns and row[3] is not None:
            family[row[2]] = _money(family.get(row[2], 0.0) + row[3])
    answers["family_data_gb"] = family  # per month
    invoiced = sum(amount for _, amount in facts["invoices"].values())  # one per period
    credits = sum(row[5] for row in rows["credit_notes"] if row[2] == account)
    settled = sum(row[5] for row in rows["payments"] if row[2] == account and row[7] == "settled")
    answers["balance"] = _money(invoiced + credits - settled)
    return answers
