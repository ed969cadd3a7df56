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
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import numpy as np

from telcoenv.catalog import parse_model
from telcoenv.datafiles import parse_yaml
from telcoenv.domains.bss.schema import bss_schema
from telcoenv.errors import CatalogError
from telcoenv.metrics.answers import Answer, AnswerKind, AnswerVocabulary
from telcoenv.specs import FrozenModel

TODAY = "2026-11-30"  # the episode's date: the last billed month is the one before

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
ROAMING_PER_GB = {"GCC": 25.0, "EUROPE": 40.0, "WORLD": 60.0}  # pay-as-you-go roaming
PREPAID_CREDIT = 120.0  # credit left on a prepaid account (pays add-ons on the spot)
# Identifiers (see the module docstring): [low, high) of the drawn numbers. Below ``low``, the
# numbers are reserved for examples (all zeros: C000000, 966500000000, +966500000000).
SERIALS = (100_000, 1_000_000)  # the six-digit serial after an id's prefix
MSISDN_PREFIX = "9665"  # Saudi mobile numbers: country code 966, then 5
LINE_NUMBERS = (10_000_000, 100_000_000)  # the eight digits after MSISDN_PREFIX
_BATCH = 64  # numbers drawn per call of the generator


@cache
def products() -> dict[str, Any]:
    """The packaged product catalogue: plans, add-ons, destinations, VAT (``products.yaml``)."""
    text = resources.files(__package__).joinpath("products.yaml").read_text("utf-8")
    return parse_yaml(text, "products.yaml")


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


def _instruments(failure: PaymentFailure | None) -> list[tuple[str, str]]:
    """The (method, channel) pairs a payment may use, with ``failure`` if it fails."""
    return [
        (method, channel)
        for method, channels in products()["payment_methods"].items()
        for channel in channels
        if failure is None
        or (
            method in failure.methods
            and channel in failure.channels
            and (method == CARD or not failure.card_expired)
        )
    ]


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
    active_addon: str | None = None  # an add-on active on the first line (to be cancelled)


@dataclass
class BssData:
    """Rows per table (tuples in column order) and the focal customer's ids."""

    rows: dict[str, list[tuple[Any, ...]]]
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


def _months(end: str, count: int) -> list[str]:
    year, month = map(int, end.split("-"))
    out = []
    for _ in range(count):
        out.append(f"{year:04d}-{month:02d}")
        year, month = (year, month - 1) if month > 1 else (year - 1, 12)
    return out[::-1]


def _money(value: float) -> float:
    return round(value + 1e-9, 2)


class _Ids:
    """The identifiers of one episode: drawn with its generator, distinct, never an example.

    Numbers are drawn in batches (one call per :data:`_BATCH` ids, not one per id) and used in
    order, so the ids depend on the seed alone."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.used: set[str] = set()
        self.drawn: dict[tuple[int, int], list[int]] = {}

    def _next(self, prefix: str, numbers: tuple[int, int]) -> str:
        while True:
            batch = self.drawn.get(numbers)
            if not batch:
                batch = self.drawn[numbers] = self.rng.integers(*numbers, _BATCH).tolist()[::-1]
            value = f"{prefix}{batch.pop()}"
            if value not in self.used:
                self.used.add(value)
                return value

    def new(self, prefix: str) -> str:
        """A new id: ``prefix`` and a six-digit serial."""
        return self._next(prefix, SERIALS)

    def ordered(self, prefix: str, count: int) -> list[str]:
        """``count`` new ids in increasing order: rows that a tool lists by id (the items of an
        invoice) keep the order they were made in."""
        return sorted(self._next(prefix, SERIALS) for _ in range(count))

    def msisdn(self) -> str:
        """A new line number."""
        return self._next(MSISDN_PREFIX, LINE_NUMBERS)


class _Builder:
    def __init__(self, rng: np.random.Generator, episode_id: str, months: list[str]) -> None:
        self.rng, self.episode, self.months = rng, episode_id, months
        self.rows: dict[str, list[tuple[Any, ...]]] = {t: [] for t in bss_schema().plan.columns}
        self.plans = {p["plan_id"]: p for p in products()["plans"]}
        self.addons = {a["addon_id"]: a for a in products()["addons"]}
        self.vat = products()["vat_rate"]
        self.ids = _Ids(rng)

    def add(self, table: str, *values: Any) -> None:
        self.rows[table].append((self.episode, *values))

    def product_rows(self) -> None:
        for plan in self.plans.values():
            self.add(
                "rate_plans",
                plan["plan_id"],
                plan["name"]["en"],
                plan["name"]["ar"],
                plan["payment"],
                plan["segment"],
                plan["price"],
                _money(plan["price"] * (1 + self.vat)),
                plan["data_gb"],
                plan["voice_min"],
                plan["sms"],
                plan["min_age"],
                plan["max_age"],
            )
        for addon in self.addons.values():
            self.add(
                "addons",
                addon["addon_id"],
                addon["name"]["en"],
                addon["name"]["ar"],
                addon["kind"],
                addon["zone"],
                addon["price"],
                _money(addon["price"] * (1 + self.vat)),
                addon["data_gb"],
                addon["voice_min"],
                addon["validity_days"],
                ",".join(addon["payment"]),
            )

    def customer(self, segment: str, age: int, name: str | None = None) -> tuple[str, str]:
        rng = self.rng
        customer_id, account_id = self.ids.new("C"), self.ids.new("A")
        first, last = _FIRST[int(rng.integers(len(_FIRST)))], _LAST[int(rng.integers(len(_LAST)))]
        name = name or f"{first} {last}"
        born = dt.date(2026, 11, 30) - dt.timedelta(days=int(age * 365.25 + rng.integers(0, 300)))
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
        self.add(
            "accounts", account_id, customer_id, int(rng.integers(1, 29)), 0.0, 3000.0, "active"
        )
        return customer_id, account_id

    def line(self, account_id: str, plan_id: str) -> str:
        msisdn = self.ids.msisdn()
        plan = self.plans[plan_id]
        start = f"20{int(self.rng.integers(19, 25))}-{int(self.rng.integers(1, 13)):02d}-01"
        self.add("lines", msisdn, account_id, plan_id, plan["payment"], "active", start)
        if plan["payment"] == "prepaid":  # a prepaid account carries credit, not a debt
            accounts = self.rows["accounts"]
            index = next(i for i, row in enumerate(accounts) if row[1] == account_id)
            row = accounts[index]
            accounts[index] = (*row[:4], PREPAID_CREDIT, *row[5:])
        return msisdn

    def usage(self, msisdn: str, plan_id: str, share: float, gaps: int) -> dict[str, float]:
        """Twelve months of usage; ``gaps`` months not collected (NULL). Returns data per month."""
        rng, plan = self.rng, self.plans[plan_id]
        allowance = plan["data_gb"] if plan["data_gb"] is not None else UNLIMITED_SCALE_GB
        missing = (
            set(rng.choice(len(self.months), size=gaps, replace=False).tolist()) if gaps else set()
        )
        used: dict[str, float] = {}
        # The hottest loop of a reset (12 months x every line): names bound once.
        records, episode, scale = self.rows["usage_records"], self.episode, allowance * share
        uniform, random, integers = rng.uniform, rng.random, rng.integers
        for index, month in enumerate(self.months):
            if index in missing:
                records.append((episode, msisdn, month, None, None, None, None, None))
                continue
            data = round(max(0.0, scale * float(uniform(0.7, 1.25))), 2)
            if random() < 0.05:
                data = 0.0  # a month without use: zero, not NULL
            voice = int(integers(30, 600))
            sms = int(integers(0, 80))
            records.append((episode, msisdn, month, data, voice, sms, 0.0, None))
            used[month] = data
        return used

    def invoice(
        self, account_id: str, month: str, items: list[tuple[str, str, str, float]], day: int
    ) -> tuple[str, float]:
        invoice_id = self.ids.new("INV")
        net = _money(sum(item[3] for item in items))
        vat = _money(net * self.vat)
        amount = _money(net + vat)
        issued = f"{month}-{day:02d}T02:00:00"
        episode = self.episode
        self.rows["invoices"].append(
            (episode, invoice_id, account_id, month, issued, net, vat, amount, "issued")
        )
        self.items(invoice_id, items)
        return invoice_id, amount

    def items(self, invoice_id: str, items: list[tuple[str, str, str, float]]) -> None:
        """The invoice's line items, each with its own id."""
        self.rows["invoice_items"].extend(
            (self.episode, item_id, invoice_id, *item)
            for item_id, item in zip(self.ids.ordered("IT", len(items)), items, strict=True)
        )

    def balances(self) -> None:
        """Each account's balance as its ledger has it. A postpaid account owes every invoice
        issued to it (a double-fired one too: nothing has credited it yet) plus its credit notes
        (negative), less its settled payments; a prepaid account holds the credit left, with
        no credit limit (it pays as it goes)."""
        rows = self.rows
        owed: dict[str, float] = {}
        for row in rows["invoices"]:
            owed[row[2]] = owed.get(row[2], 0.0) + row[7]
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

    def payment(
        self, account_id: str, invoice_id: str, month: str, amount: float, ok: bool
    ) -> None:
        """A payment of the invoice; how it was paid (and why it failed) is drawn at the end,
        by :meth:`instruments`."""
        status = "settled" if ok else "failed"
        self.add(
            "payments",
            self.ids.new("PAY"),
            account_id,
            invoice_id,
            f"{month}-20T10:15:00",
            amount,
            None,
            status,
            None,
            None,
            None,
            None,
        )

    def instruments(self, end_month: str) -> None:
        """Each paying account's method, channel and card, and the reason of its failed payment
        (if any), consistent with them: an expired card's expiry month is the one before the
        failed payment's. Drawn from a stream of their own, jumped from the generator's state
        (which stays as it is), after every other draw of the data: the rest of the data and
        every later draw of the episode (its opening) are what they were before payments had
        them."""
        jumped = getattr(self.rng.bit_generator, "jumped", None)  # PCG64's; others: the same
        rng = np.random.Generator(jumped()) if jumped else self.rng
        rows, failures = self.rows["payments"], payment_failures()
        by_account: dict[str, list[int]] = {}
        for index, row in enumerate(rows):
            by_account.setdefault(row[2], []).append(index)
        for indices in by_account.values():
            failed = [i for i in indices if rows[i][7] == "failed"]
            failure = failures[int(rng.integers(len(failures)))] if failed else None
            pairs = _instruments(failure)
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


#: How many data coupons the account bought in a month whose bill must be read (0, 1, 2), and
#: how often it roamed pay-as-you-go: one such bill in ten is the plan fees alone.
COUPONS_BOUGHT_P, ROAMED_P = (0.25, 0.40, 0.35), 0.6


def _bought_and_roamed(
    builder: _Builder, lines: list[tuple[str, str]], month: str
) -> tuple[list[tuple[str, str, str, float]], dict[str, float]]:
    """What the account bought and used beyond its plans in ``month``, drawn: data coupons (each
    on one of its lines, subscribed in the month's first ten days for the coupon's validity)
    and pay-as-you-go roaming data on its first line (0.3-3 GB in a zone); with the GB the
    coupons add to each line's allowance that month."""
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
        start = dt.date.fromisoformat(f"{month}-{int(rng.integers(1, 11)):02d}")
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
        items.append(_roaming_item(lines[0][0], zone, round(float(rng.uniform(0.3, 3.0)), 2)))
    return items, coupon_gb


def _roaming_item(msisdn: str, zone: str, gb: float) -> tuple[str, str, str, float]:
    """A bill's pay-as-you-go roaming data: ``gb`` in ``zone`` at its rate."""
    return (msisdn, "roaming", f"Roaming data {zone} {gb} GB", _money(gb * ROAMING_PER_GB[zone]))


def _bill_lines(
    builder: _Builder,
    lines: list[tuple[str, str]],
    usage: dict[str, dict[str, float]],
    month: str,
    coupon_gb: dict[str, float] | None = None,
) -> list[tuple[str, str, str, float]]:
    """A month's plan fees and data overage of the lines: the overage is the use beyond the
    plan's allowance and the coupons bought on the line that month (``coupon_gb``)."""
    items = []
    for msisdn, plan_id in lines:
        plan = builder.plans[plan_id]
        if plan["payment"] != "postpaid":
            continue
        items.append((msisdn, "plan", plan["name"]["en"], float(plan["price"])))
        used = usage[msisdn].get(month)
        if used is None or plan["data_gb"] is None:
            continue
        allowance = plan["data_gb"] + (coupon_gb or {}).get(msisdn, 0.0)
        if used > allowance:
            extra = round(used - allowance, 2)
            items.append(
                (msisdn, "overage", f"Data overage {extra} GB", _money(extra * OVERAGE_PER_GB))
            )
    return items


def generate(
    rng: np.random.Generator,
    episode_id: str,
    focal: Focal = Focal(),
    *,
    customers: int = 10,
    end_month: str = "2026-11",
) -> BssData:
    """The BSS data of one episode (see the module docstring)."""
    months = _months(end_month, 12)
    builder = _Builder(rng, episode_id, months)
    builder.product_rows()
    focal_customer, focal_account = builder.customer(focal.segment, focal.age)
    focal_lines = [(builder.line(focal_account, focal.plan_id), focal.plan_id)]
    for _ in range(focal.family_size - 1):
        focal_lines.append((builder.line(focal_account, focal.plan_id), focal.plan_id))
    population: list[tuple[str, list[tuple[str, str]], float]] = [
        (focal_account, focal_lines, focal.data_use)
    ]
    internal_accounts: set[str] = set()
    consumer_plans = [p for p, v in builder.plans.items() if v["segment"] == "consumer"]
    for _ in range(customers - 1):
        plan_id = consumer_plans[int(rng.integers(len(consumer_plans)))]
        _, account = builder.customer("consumer", int(rng.integers(19, 70)))
        population.append(
            (account, [(builder.line(account, plan_id), plan_id)], float(rng.uniform(0.3, 1.1)))
        )
    for index in range(2):  # internal test accounts with absurd bills
        _, account = builder.customer("internal", 40, name=f"TEST Billing QA {index + 1}")
        internal_accounts.add(account)
        population.append(
            (account, [(builder.line(account, "POST-UNLIMITED"), "POST-UNLIMITED")], 1.0)
        )
    if focal.family_size > 1:
        group_id = builder.ids.new("FG")
        builder.add("family_groups", group_id, focal_account, 50.0)
        for position, (msisdn, _) in enumerate(focal_lines):
            builder.add("family_members", group_id, msisdn, "owner" if position == 0 else "member")
    usage: dict[str, dict[str, float]] = {}
    for account, lines, share in population:
        for msisdn, plan_id in lines:
            gaps = (
                1
                if account == focal_account and msisdn == focal_lines[0][0]
                else int(rng.integers(0, 2))
            )
            usage[msisdn] = builder.usage(msisdn, plan_id, share, gaps)
    facts: dict[str, Any] = {"invoices": {}}
    for account, lines, _ in population:
        internal = (
            account not in (focal_account,) and lines[0][1] == "POST-UNLIMITED" and len(lines) == 1
        )
        for month in months:
            extras: list[tuple[str, str, str, float]] = []
            coupon_gb: dict[str, float] = {}
            if account == focal_account and month == focal.extras_month:
                extras, coupon_gb = _bought_and_roamed(builder, lines, month)
            items = _bill_lines(builder, lines, usage, month, coupon_gb)
            if account == focal_account and month == focal.roaming_month:
                zone = focal.roaming_zone
                roaming = _roaming_item(lines[0][0], zone, round(float(rng.uniform(2.0, 6.0)), 2))
                items.append(roaming)
                facts["roaming_charge"] = roaming[3]
            items += extras
            if not items:
                continue
            if internal and rng.random() < 0.5:
                items.append((lines[0][0], "device", "QA test device charge", 9999.0))
            invoice_id, amount = builder.invoice(account, month, items, 1)
            if account == focal_account:
                facts["invoices"][month] = (invoice_id, amount)
                if month == focal.duplicate_month:  # the billing run fired twice
                    duplicate = builder.ids.new("INV")
                    row = builder.rows["invoices"][-1]
                    builder.rows["invoices"].append(
                        (row[0], duplicate, *row[2:4], f"{month}-01T02:00:07", *row[5:])
                    )
                    builder.items(duplicate, items)  # the run billed every item again
                    facts["duplicate_invoice"] = duplicate
            last = month == months[-1]
            ok = not (account == focal_account and last and focal.failed_payment)
            builder.payment(account, invoice_id, month, amount, ok)
        if account == focal_account:
            credit = _money(-float(rng.uniform(10, 60)))
            builder.add(
                "credit_notes",
                builder.ids.new("CN"),
                account,
                facts["invoices"][months[-3]][0] if months[-3] in facts["invoices"] else None,
                f"{months[-3]}-12T09:00:00",
                credit,
                "Goodwill credit for a network outage",
            )
            facts["credit_note"] = credit
    if focal.active_addon is not None:
        addon = builder.addons[focal.active_addon]
        # Active today, half used, with the days subscribe_addon gives (start + validity - 1):
        # from the 5th of the month, two packs of three had ended before today and were
        # still listed active (the gold chain cancelled one).
        validity = addon["validity_days"]
        start = dt.date.fromisoformat(TODAY) - dt.timedelta(days=validity // 2)
        end = start + dt.timedelta(days=validity - 1)
        subscription = builder.ids.new("LA")
        builder.add(
            "line_addons",
            subscription,
            focal_lines[0][0],
            focal.active_addon,
            start.isoformat(),
            end.isoformat(),
            "active",
        )
        facts["subscription_id"] = subscription
    builder.instruments(end_month)  # last: every draw before it is the same
    builder.balances()
    facts.update(_answers(builder.rows, focal, focal_account, [m for m, _ in focal_lines], facts))
    return BssData(
        builder.rows,
        focal_customer,
        focal_account,
        [m for m, _ in focal_lines],
        months,
        facts,
    )


def _answers(
    rows: dict[str, list[tuple[Any, ...]]],
    focal: Focal,
    account: str,
    msisdns: list[str],
    facts: dict[str, Any],
) -> dict[str, Any]:
    """The exact answers to the care questions about the focal customer, from the rows as
    generated (the careful reading: the duplicate counted once, credit notes negative, NULL
    months skipped, internal accounts irrelevant)."""
    answers: dict[str, Any] = {}
    if focal.duplicate_month in facts["invoices"]:
        answers["duplicate_amount"] = facts["invoices"][focal.duplicate_month][1]
    failed = [row[8] for row in rows["payments"] if row[2] == account and row[7] == "failed"]
    if failed:  # the reason stored on the caller's failed payment
        answers["failure_reason"] = failed[-1]
    collected = [
        row[3] for row in rows["usage_records"] if row[1] == msisdns[0] and row[3] is not None
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
