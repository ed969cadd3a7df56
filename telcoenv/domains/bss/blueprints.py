"""Load and check the customer-care blueprints (``blueprints/bss/<INTENT>/*.yaml``) and build
the BSS :class:`~telcoenv.catalog.Catalog`.

A care blueprint is validated by its pydantic model (field names, types, ``[min, max]`` pairs)
and then against the product catalogue and its intent, so that every episode it can produce is
solvable: the plans exist and the customer may hold them at every age of the range, a trip's
zone has a pack the line may buy, a target plan is open to the customer, and every value the
intent's templates use is planted. Problems raise :class:`~telcoenv.errors.CatalogError`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from telcoenv.catalog import (
    GENERIC_EVENT_KINDS,
    Catalog,
    check_events,
    check_gold_chain,
    check_intent_folder,
    check_template,
    load_blueprint_folder,
    load_intents,
    load_tools,
    parse_model,
    template_fields,
    template_strings,
)
from telcoenv.datafiles import cached_build, data_root, read_yaml
from telcoenv.domains.bss.generator import payment_failures, products
from telcoenv.domains.bss.handbook import rules
from telcoenv.domains.bss.models import CareBlueprint, CareIntent
from telcoenv.domains.bss.scenario import FACT_SOURCES, cheapest_plan, eligible
from telcoenv.domains.bss.tools import MAX_START_AHEAD_DAYS
from telcoenv.domains.bss.verification import SESSION_TOOLS
from telcoenv.errors import CatalogError
from telcoenv.specs import ToolSpec

BSS_FOLDER = "bss"  # inside blueprints/: the network loader reads <INTENT>/*.yaml only
MAX_AGE = 120  # oldest customer (the generator turns an age into a birth date)

#: Customer care's event kinds: the generic ones, a change to another customer's account,
#: another customer's data told to the caller, a change claimed before it was made and a figure
#: the data does not support told to the caller (telcoenv.domains.bss.events).
EVENT_KINDS = (
    *GENERIC_EVENT_KINDS,
    "unrelated_change",
    "disclosure",
    "false_claim",
    "wrong_figure",
)


# Template fields of customer-care gold chains and answers, with a plausible value each (used
# to validate the templates against the BSS tool specs at load time). The ids are the reserved
# examples (all-zero serials, EXAMPLE catalogue ids) that no episode has, as in the tool specs.
CARE_EXAMPLE_VALUES: dict[str, Any] = {
    "msisdn": "966500000000",
    "customer_id": "C000000",
    "account_id": "A000000",
    "group_id": "FG000000",
    "period": "2026-09",
    "plan_id": "POST-EXAMPLE",
    "addon_id": "DATA-EXAMPLE",
    "zone": "EUROPE",
    "start_date": "2026-12-05",
    "subscription_id": "LA000000",
    "email": "new.address@mail.example.sa",
    "full_name": "Omar Al-Harbi",
    "birth_date": "1988-03-15",
    "ticket_summary": "Billing run fired twice for the period.",
    "roaming_charge": 117.2,
    "duplicate_amount": 414.0,
    "failure_reason": payment_failures()[0].reason,
    "average_data_gb": 22.83,
    "family_data_gb": 61.4,
    "balance": 467.94,
    "months": 12,
    "destination": "France",
    "need_gb": 4,
    "budget": 150,
}


def _check_care_templates(intent: CareIntent, file: str, index: int) -> None:
    """Every template field of a care intent's chain, answer and opening is a known one."""
    texts = [
        (f"gold_chain.{n}.arguments", value)
        for n, step in enumerate(intent.gold_chain)
        for value in template_strings(step.arguments)
    ]
    texts += [("answer", intent.answer)] if intent.answer else []
    texts += [(f"customer.{lang}", getattr(intent.customer, lang)) for lang in ("en", "ar")]
    for where, text in texts:
        check_template(text, CARE_EXAMPLE_VALUES, file, f"intents.{index}.{where}")


def _check_identity_first(
    intent: CareIntent, tools: Mapping[str, ToolSpec], file: str, index: int
) -> None:
    """The operator's rule, which every write tool enforces: no change before the caller's
    identity check (a chain that breaks it would fail its own replay)."""
    for step_no, step in enumerate(intent.gold_chain):
        if step.tool == "verify_identity":
            return
        spec = tools.get(step.tool)
        if spec is not None and spec.effect == "write":
            raise CatalogError(
                file,
                f"intents.{index}.gold_chain.{step_no}",
                f"{step.tool} changes the account before the caller's identity is checked: put "
                'a verify_identity step (customer_id, full_name "{full_name}", birth_date '
                '"{birth_date}") before it',
            )


def _check_policy(intent: CareIntent, tools: Mapping[str, ToolSpec], file: str, index: int) -> None:
    """The intent follows the written policy: the rules it lists exist, and every change and
    identity check of its gold chain is one a listed rule asks for."""
    written = rules()
    for rule_id in intent.policy:
        if rule_id not in written:
            raise CatalogError(
                file, f"intents.{index}.policy", f"no rule {rule_id!r}; rules: {sorted(written)}"
            )
    covered = {tool for rule_id in intent.policy for tool in written[rule_id].tools}
    for step_no, step in enumerate(intent.gold_chain):
        spec = tools.get(step.tool)
        acts = step.tool in SESSION_TOOLS or (spec is not None and spec.effect == "write")
        if acts and step.tool not in covered:
            raise CatalogError(
                file,
                f"intents.{index}.gold_chain.{step_no}",
                f"no rule the intent lists asks for {step.tool}: list the handbook's rule for "
                "it in policy (telcoenv/domains/bss/policy.yaml)",
            )


def _parse_care_intent(
    tools: Mapping[str, ToolSpec],
) -> Callable[[dict[str, Any], str, int], CareIntent]:
    def parse(raw: dict[str, Any], file: str, index: int) -> CareIntent:
        intent = parse_model(CareIntent, raw, file)
        _check_care_templates(intent, file, index)
        _check_identity_first(intent, tools, file, index)
        _check_policy(intent, tools, file, index)
        check_gold_chain(intent, tools, file, index, CARE_EXAMPLE_VALUES)
        check_events(intent, tools, file, index, CARE_EXAMPLE_VALUES, EVENT_KINDS)
        return intent

    return parse


def load_care_intents(
    path: str | Path | None = None, tools: Mapping[str, ToolSpec] | None = None
) -> tuple[dict[str, Any], tuple[Any, ...]]:
    """The customer-care (BSS) categories and intents of ``intents.yaml``, validated against
    the BSS tool specs (``tools``; default: the packaged ones)."""
    root = data_root()
    tools = tools if tools is not None else load_tools(root / "tools", domain="bss")
    path = Path(path) if path else root / "intents.yaml"
    return load_intents(path, "bss", _parse_care_intent(tools))


def _ranges(blueprint: CareBlueprint) -> list[tuple[str, tuple[float, float]]]:
    pairs = [
        ("customer.age", blueprint.customer.age),
        ("customer.family_size", blueprint.customer.family_size),
        ("period", blueprint.period),
    ]
    for name in ("customer.data_use", "customer.data_gb"):
        value = getattr(blueprint.customer, name.split(".")[1])
        if value is not None:
            pairs.append((name, value))
    for name in ("trip_days_ahead", "data_need_gb", "budget"):
        value = getattr(blueprint, name)
        if value is not None:
            pairs.append((name, value))
    return pairs


def _check_ranges(blueprint: CareBlueprint, file: str) -> None:
    for field, (low, high) in _ranges(blueprint):
        if low > high:
            raise CatalogError(file, field, f"min ({low:g}) must not exceed max ({high:g})")
        if low < 0:
            raise CatalogError(file, field, f"must not be negative, got {low:g}")
    if blueprint.customer.data_gb and blueprint.customer.data_gb[0] <= 0:
        raise CatalogError(file, "customer.data_gb", "starts above 0 GB (drawn log-uniformly)")
    if blueprint.customer.age[0] < 16 or blueprint.customer.family_size[0] < 1:
        raise CatalogError(file, "customer", "ages start at 16 and a family has 1 line or more")
    if blueprint.customer.age[1] > MAX_AGE:
        raise CatalogError(file, "customer.age", f"ages end at {MAX_AGE}")
    if blueprint.period[1] > 11:
        raise CatalogError(file, "period", "the data covers 12 months: at most 11 months back")
    if blueprint.trip_days_ahead and blueprint.trip_days_ahead[1] > MAX_START_AHEAD_DAYS:
        raise CatalogError(
            file,
            "trip_days_ahead",
            f"an add-on starts at most {MAX_START_AHEAD_DAYS} days ahead, "
            f"got up to {blueprint.trip_days_ahead[1]}",
        )


def _check_plans(blueprint: CareBlueprint, file: str) -> None:
    plans = {p["plan_id"]: p for p in products()["plans"]}
    customer = blueprint.customer
    if not customer.plans:
        raise CatalogError(file, "customer.plans", "list one plan or more (the caller's plan)")
    for field, ids in (
        ("customer.plans", customer.plans),
        ("target_plans", blueprint.target_plans),
    ):
        for plan_id in ids:
            if plan_id not in plans:
                raise CatalogError(file, field, f"unknown plan {plan_id!r}; known: {sorted(plans)}")
    for plan_id in customer.plans:
        for age in customer.age:
            if not eligible(plans[plan_id], age, customer.segment):
                raise CatalogError(
                    file,
                    "customer.plans",
                    f"a {age}-year-old {customer.segment} customer cannot hold {plan_id}",
                )
            payment = plans[plan_id]["payment"]
            if blueprint.target_plans and not any(
                t != plan_id
                and eligible(plans[t], age, customer.segment)
                and plans[t]["payment"] == payment
                for t in blueprint.target_plans
            ):
                raise CatalogError(
                    file,
                    "target_plans",
                    f"no target plan is open to a {age}-year-old on {plan_id}",
                )
            if blueprint.budget and cheapest_plan(age, customer.segment, 1e9) is None:
                raise CatalogError(file, "budget", f"no plan fits a {age}-year-old")


def _check_addons(blueprint: CareBlueprint, file: str) -> None:
    addons = {a["addon_id"]: a for a in products()["addons"]}
    destinations = products()["destinations"]
    payments = {p["plan_id"]: p["payment"] for p in products()["plans"]}
    line_payments = {payments[p] for p in blueprint.customer.plans}
    for name in blueprint.destinations:
        if name not in destinations:
            raise CatalogError(
                file, "destinations", f"unknown destination {name!r}; known: {sorted(destinations)}"
            )
        if blueprint.trip_days_ahead is None:
            continue
        for payment in line_payments:
            if not any(
                a["kind"] == "roaming"
                and a["zone"] == destinations[name]
                and payment in a["payment"]
                for a in addons.values()
            ):
                raise CatalogError(
                    file, "destinations", f"no roaming pack for {name} sold to {payment} lines"
                )
    for addon_id in blueprint.active_addons:
        if addon_id not in addons:
            raise CatalogError(file, "active_addons", f"unknown add-on {addon_id!r}")
        if not line_payments <= set(addons[addon_id]["payment"]):
            raise CatalogError(file, "active_addons", f"{addon_id} is not sold to every line type")
    if blueprint.data_need_gb is not None:
        need = blueprint.data_need_gb[1]
        for payment in line_payments:
            if not any(
                a["kind"] == "data_coupon" and payment in a["payment"] and a["data_gb"] >= need
                for a in addons.values()
            ):
                raise CatalogError(file, "data_need_gb", f"no coupon of {need} GB for {payment}")
    if blueprint.trip_days_ahead is not None and not blueprint.destinations:
        raise CatalogError(file, "destinations", "a trip needs destinations")


def _planted(blueprint: CareBlueprint, source: str) -> bool:
    if source == "customer.family_size":
        return blueprint.customer.family_size[0] >= 2
    return bool(getattr(blueprint, source))


def _check_intent_values(blueprint: CareBlueprint, intent: CareIntent, file: str) -> None:
    """Every value the intent's templates use is planted by the blueprint."""
    texts = [v for step in intent.gold_chain for v in template_strings(step.arguments)]
    texts += [intent.answer or "", intent.customer.en]
    used = set().union(*(template_fields(t) for t in texts))
    needs = {field: FACT_SOURCES[field] for field in used if field in FACT_SOURCES}
    if "plan_id" in used and not (blueprint.budget or blueprint.target_plans):
        raise CatalogError(file, "", f"{intent.key} needs budget or target_plans")
    if blueprint.budget and any(step.tool == "change_plan" for step in intent.gold_chain):
        # budget makes {plan_id} the cheapest fitting plan, which can be the caller's own
        # (a change the BSS refuses); target_plans never draws the current plan.
        raise CatalogError(
            file, "budget", f"{intent.key} changes the plan: use target_plans instead"
        )
    if "addon_id" in used and not (blueprint.trip_days_ahead or blueprint.data_need_gb):
        raise CatalogError(file, "", f"{intent.key} needs trip_days_ahead or data_need_gb")
    if "ticket_summary" in used:
        needs["ticket_summary"] = "duplicate_invoice"
    for field, source in sorted(needs.items()):
        if not _planted(blueprint, source):
            raise CatalogError(
                file, source, f"{intent.key} uses {{{field}}}: the blueprint must set {source}"
            )


def load_care_blueprint(path: Path, intents: Mapping[str, CareIntent]) -> CareBlueprint:
    """Load and check one care blueprint file that sits in its intent's folder."""
    file = str(path)
    blueprint = parse_model(CareBlueprint, read_yaml(path), file)
    if blueprint.intent not in intents:
        raise CatalogError(file, "intent", f"unknown care intent {blueprint.intent!r}")
    check_intent_folder(blueprint, path)
    _check_ranges(blueprint, file)
    _check_plans(blueprint, file)
    _check_addons(blueprint, file)
    _check_intent_values(blueprint, intents[blueprint.intent], file)
    return blueprint


def load_care_blueprints(
    folder: Path, intents: tuple[CareIntent, ...]
) -> dict[str, tuple[CareBlueprint, ...]]:
    """``<folder>/<INTENT>/*.yaml`` for every care intent (each needs one at least)."""
    by_key = {intent.key: intent for intent in intents}
    return load_blueprint_folder(
        folder, intents, lambda path: load_care_blueprint(path, by_key), "care "
    )


def load_care_catalog(
    intents_path: str | Path | None = None,
    blueprints_dir: str | Path | None = None,
    tools_dir: str | Path | None = None,
) -> Catalog:
    """The customer-care catalogue; paths left out come from the packaged data."""
    root = data_root()
    tools = load_tools(Path(tools_dir) if tools_dir else root / "tools", domain="bss")
    categories, intents = load_care_intents(intents_path, tools)
    folder = Path(blueprints_dir) if blueprints_dir else root / "blueprints" / BSS_FOLDER
    blueprints: Any = load_care_blueprints(folder, intents)
    return Catalog(categories=categories, intents=intents, blueprints=blueprints, tools=tools)


@cache
def care_catalog() -> Catalog:
    """The packaged customer-care catalogue, validated once per process (and cached on disk
    until a packaged file changes: see :func:`telcoenv.datafiles.cached_build`)."""
    return cached_build("care_catalog", load_care_catalog)
