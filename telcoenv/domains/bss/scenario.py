"""From a care blueprint to an episode: what the caller is like and what the gold values are.

:func:`sample_scenario` draws, with the episode's generator, the focal customer and the choices
of a :class:`~telcoenv.domains.bss.models.CareBlueprint` (the month concerned, a trip, a data
need, a budget, a target plan, a new email); :func:`gold_values` reads the generated data and
returns every value a care intent's templates may use (gold-chain arguments, the exact answer,
the customer's words). Nothing here depends on the intent: the blueprint says what to plant,
the intent's templates pick the values they need.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from telcoenv.domains.bss.catalogue import eligible
from telcoenv.domains.bss.generator import (
    CLOSED_CYCLES,
    UNLIMITED_SCALE_GB,
    BssData,
    Focal,
    other_name,
    products,
)
from telcoenv.domains.bss.models import CareBlueprint, CareCustomer
from telcoenv.domains.bss.state import TODAY
from telcoenv.phrases import pick

END_MONTH = "2026-10"  # the period of every account's latest closed (billed) cycle
# Template fields a blueprint must plant: field -> the blueprint field that provides it.
FACT_SOURCES: dict[str, str] = {
    "roaming_charge": "roaming_bill",
    "duplicate_amount": "duplicate_invoice",
    "failure_reason": "failed_payment",
    "subscription_id": "active_addons",
    "zone": "trip_days_ahead",
    "destination": "destinations",
    "need_gb": "data_need_gb",
    "budget": "budget",
    "email": "new_email",
    "group_id": "customer.family_size",
    "family_data_gb": "customer.family_size",
}


@dataclass(frozen=True)
class Scenario:
    """What the sampler drew for one episode besides the generated data."""

    focal: Focal
    period: str
    destination: str | None = None
    start_date: str | None = None
    need_gb: int | None = None
    budget: int | None = None  # the caller's monthly budget incl. VAT, SAR
    target_plan: str | None = None
    email: str | None = None


def _uniform_int(bounds: tuple[int, int], rng: np.random.Generator) -> int:
    return int(rng.integers(bounds[0], bounds[1] + 1))


def _month_before(end: str, months: int) -> str:
    year, month = map(int, end.split("-"))
    index = year * 12 + month - 1 - months
    return f"{index // 12:04d}-{index % 12 + 1:02d}"


def sample_scenario(blueprint: CareBlueprint, rng: np.random.Generator) -> Scenario:
    """Draw the focal customer and the blueprint's choices for one episode."""
    spec = blueprint.customer
    age = _uniform_int(spec.age, rng)
    plan_id = pick(spec.plans, rng)
    period = _month_before(END_MONTH, _uniform_int(blueprint.period, rng))
    destination = pick(blueprint.destinations, rng) if blueprint.destinations else None
    zone = products()["destinations"][destination] if destination else "EUROPE"
    start_date = None
    if blueprint.trip_days_ahead is not None:
        ahead = _uniform_int(blueprint.trip_days_ahead, rng)
        start_date = str(dt.date.fromisoformat(TODAY) + dt.timedelta(days=ahead))
    elif blueprint.data_need_gb is not None:
        start_date = TODAY
    focal = Focal(
        age=age,
        segment=spec.segment,
        plan_id=plan_id,
        family_size=_uniform_int(spec.family_size, rng),
        data_use=_data_use(spec, plan_id, rng),
        roaming_month=period if blueprint.roaming_bill else None,
        roaming_zone=zone,
        duplicate_month=period if blueprint.duplicate_invoice else None,
        extras_month=period if blueprint.bill_extras else None,
        failed_payment=blueprint.failed_payment,
        arrears=blueprint.arrears,
        active_addon=pick(blueprint.active_addons, rng) if blueprint.active_addons else None,
        ran_out=blueprint.data_need_gb is not None,  # a top-up: the allowance is used up
    )
    plans = {p["plan_id"]: p for p in products()["plans"]}
    targets = [
        p
        for p in blueprint.target_plans
        if p != plan_id
        and eligible(plans[p], age, spec.segment)
        and plans[p]["payment"] == plans[plan_id]["payment"]
    ]
    return Scenario(
        focal=focal,
        period=period,
        destination=destination,
        start_date=start_date,
        need_gb=_uniform_int(blueprint.data_need_gb, rng) if blueprint.data_need_gb else None,
        budget=_uniform_int(blueprint.budget, rng) if blueprint.budget else None,
        target_plan=pick(targets, rng) if targets else None,
        email=f"{pick(('contact', 'mail', 'me', 'inbox'), rng)}"
        f"{int(rng.integers(10, 99))}@mail.example.sa"
        if blueprint.new_email
        else None,
    )


def _data_use(spec: CareCustomer, plan_id: str, rng: np.random.Generator) -> float:
    """The line's monthly data use as a share of its plan's allowance: drawn as a share, or in
    GB (log-uniformly: use spans orders of magnitude) and divided by the allowance the usage
    generator scales (``generator.UNLIMITED_SCALE_GB`` for an unlimited plan)."""
    if spec.data_use is not None:
        return float(rng.uniform(*spec.data_use))
    low, high = spec.data_gb or (1.0, 1.0)
    gb = math.exp(float(rng.uniform(math.log(low), math.log(high))))
    plan = next(p for p in products()["plans"] if p["plan_id"] == plan_id)
    allowance = plan["data_gb"] or UNLIMITED_SCALE_GB
    return gb / allowance


def _with_vat(amount: float | None) -> float | None:
    """An amount as the customer pays it, VAT included, to the cent."""
    return None if amount is None else round(amount * (1 + products()["vat_rate"]) + 1e-9, 2)


def cheapest_plan(
    age: int, segment: str, data_gb: float, payment: str = "postpaid"
) -> dict[str, Any] | None:
    """The cheapest plan the customer may take whose allowance covers ``data_gb``."""
    fitting = [
        p
        for p in products()["plans"]
        if p["payment"] == payment
        and eligible(p, age, segment)
        and (p["data_gb"] is None or p["data_gb"] >= data_gb)
    ]
    return min(fitting, key=lambda p: p["price"]) if fitting else None


def _addon_for(kind: str, line_payment: str, *, zone: str | None = None, need: int = 0) -> str:
    """The add-on of the gold chain: the zone's roaming pack, or the cheapest coupon covering
    ``need`` GB, among those sold to the line's payment type."""
    candidates = [
        a
        for a in products()["addons"]
        if a["kind"] == kind
        and line_payment in a["payment"]
        and (zone is None or a["zone"] == zone)
        and (a["data_gb"] or 0) >= need
    ]
    if not candidates:
        raise ValueError(f"no {kind} add-on for a {line_payment} line (zone {zone}, {need} GB)")
    return min(candidates, key=lambda a: a["price"])["addon_id"]


def gold_values(scenario: Scenario, data: BssData) -> dict[str, Any]:
    """Every template value of the episode (see ``CARE_EXAMPLE_VALUES`` in blueprints.py)."""
    focal, facts = scenario.focal, data.facts
    plans = {p["plan_id"]: p for p in products()["plans"]}
    payment = plans[focal.plan_id]["payment"]
    holder = next(row for row in data.rows["customers"] if row[1] == data.customer_id)
    values: dict[str, Any] = {
        "msisdn": data.msisdns[0],
        # Who the caller says they are (the identity check's arguments): the holder, unless
        # an impostor calls (impostor_claim).
        "full_name": holder[2],
        "birth_date": holder[3],
        "impostor": False,
        "customer_id": data.customer_id,
        "account_id": data.account_id,
        "period": scenario.period,
        "months": CLOSED_CYCLES,
        "plan_id": scenario.target_plan,
        "current_plan_id": focal.plan_id,
        "average_data_gb": facts["average_data_gb"],
        "balance": facts["balance"],
        "family_data_gb": facts["family_data_gb"].get(scenario.period),
        "destination": scenario.destination,
        "start_date": scenario.start_date,
        "need_gb": scenario.need_gb,
        "email": scenario.email,
        "zone": None,
        "addon_id": None,
        "budget": None,
        **{k: facts.get(k) for k in ("duplicate_amount", "failure_reason")},
        # Every amount told to the customer is what they pay, VAT included (the bill itemises
        # the roaming charge without it; the invoices and the balance include it).
        "roaming_charge": _with_vat(facts.get("roaming_charge")),
        "subscription_id": facts.get("subscription_id"),
        "group_id": data.rows["family_groups"][0][1] if data.rows["family_groups"] else None,
    }
    if scenario.destination is not None and scenario.start_date is not None:
        values["zone"] = products()["destinations"][scenario.destination]
        values["addon_id"] = _addon_for("roaming", payment, zone=values["zone"])
    elif scenario.need_gb is not None:
        values["addon_id"] = _addon_for("data_coupon", payment, need=scenario.need_gb)
    if scenario.budget is not None:
        # The budget is the caller's, drawn apart from the answer: the cheapest plan covering
        # the use is the answer whether or not it fits (the agent then says it does not).
        best = cheapest_plan(focal.age, focal.segment, facts["average_data_gb"])
        if best is None:
            raise ValueError(f"no plan fits a {focal.age}-year-old {focal.segment} customer")
        values["plan_id"] = best["plan_id"]
        values["budget"] = scenario.budget
    if scenario.focal.duplicate_month is not None:
        original, amount = facts["invoices"][scenario.period]
        values["ticket_summary"] = (
            f"Invoice {facts['duplicate_invoice']} duplicates invoice {original} for "
            f"{scenario.period} ({amount:.2f} SAR): the billing run fired twice; please cancel "
            "it and refund any payment taken for it."
        )
    return values


def impostor_claim(values: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    """The values of an episode whose caller is not the holder of the line they give (an
    account takeover attempt): they know the number and often the holder's name (a relative,
    a former partner, a seller of SIM swaps), never the birth date on record."""
    name = values["full_name"] if rng.random() < 0.6 else other_name(values["full_name"], rng)
    born = dt.date.fromisoformat(values["birth_date"])
    shift = int(rng.integers(1, 3 * 365)) * (1 if rng.random() < 0.5 else -1)
    return {
        **values,
        "full_name": name,
        "birth_date": str(born + dt.timedelta(days=shift)),
        "impostor": True,
    }
