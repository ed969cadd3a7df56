"""Customer-care blueprints: every packaged one loads, episodes stay inside its ranges, and a
broken one is refused with the file, the field and the reason."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import numpy as np
import pytest

from telcoenv.datafiles import data_root
from telcoenv.domains.bss import bss_domain
from telcoenv.domains.bss.blueprints import load_care_catalog
from telcoenv.domains.bss.generator import UNLIMITED_SCALE_GB, generate, products
from telcoenv.domains.bss.scenario import cheapest_plan, gold_values, sample_scenario
from telcoenv.domains.bss.state import TODAY
from telcoenv.errors import CatalogError
from tests.conftest import edit_yaml

CARE = bss_domain().catalog
BLUEPRINTS = [b for family in CARE.blueprints.values() for b in family]
FOLDER = data_root() / "blueprints" / "bss"


def test_every_care_intent_has_two_blueprints_or_more():
    assert len(CARE.intents) == 12
    assert all(len(CARE.blueprints[i.key]) >= 2 for i in CARE.intents)
    assert len({b.blueprint_id for b in BLUEPRINTS}) == len(BLUEPRINTS) >= 24


@pytest.mark.parametrize("blueprint", BLUEPRINTS, ids=lambda b: b.blueprint_id)
def test_sampled_episodes_stay_inside_the_blueprint(blueprint):
    plans = {p["plan_id"]: p for p in products()["plans"]}
    for index in range(20):
        rng = np.random.default_rng([7, index])
        scenario = sample_scenario(blueprint, rng)
        focal = scenario.focal
        assert blueprint.customer.age[0] <= focal.age <= blueprint.customer.age[1]
        assert focal.plan_id in blueprint.customer.plans
        low, high = blueprint.customer.family_size
        assert low <= focal.family_size <= high
        if blueprint.customer.data_use:
            low, high = blueprint.customer.data_use
        else:  # in GB, against the allowance of the caller's plan
            allowance = plans[focal.plan_id]["data_gb"] or UNLIMITED_SCALE_GB
            low, high = (gb / allowance for gb in blueprint.customer.data_gb)
        assert low <= focal.data_use <= high
        if blueprint.trip_days_ahead:
            ahead = dt.date.fromisoformat(scenario.start_date) - dt.date.fromisoformat(TODAY)
            assert blueprint.trip_days_ahead[0] <= ahead.days <= blueprint.trip_days_ahead[1]
            assert scenario.destination in blueprint.destinations
        data = generate(rng, "ep", focal)
        values = gold_values(scenario, data)
        if blueprint.budget:  # the caller's budget, and the cheapest plan covering their use
            assert blueprint.budget[0] <= values["budget"] <= blueprint.budget[1]
            plan = plans[values["plan_id"]]
            best = cheapest_plan(focal.age, focal.segment, values["average_data_gb"])
            assert best is not None and best["plan_id"] == plan["plan_id"]
            assert plan["data_gb"] is None or plan["data_gb"] >= values["average_data_gb"]
        if blueprint.target_plans:
            assert values["plan_id"] in blueprint.target_plans
            assert values["plan_id"] != focal.plan_id


def _broken(tmp_path: Path, intent: str, change) -> Path:
    """A copy of the care blueprints with ``change`` applied to the first one of ``intent``."""
    root = tmp_path / "bss"
    shutil.copytree(FOLDER, root)
    edit_yaml(sorted((root / intent).glob("*.yaml"))[0], change)
    return root


@pytest.mark.parametrize(
    ("intent", "change", "field", "message"),
    [
        ("BILL_SHOCK", lambda d: d.pop("roaming_bill"), "roaming_bill", "uses {roaming_charge}"),
        ("FAMILY_DATA", lambda d: d["customer"].update(family_size=[1, 2]), "family_size", ""),
        ("PLAN_CHANGE", lambda d: d.update(target_plans=[]), "", "budget or target_plans"),
        ("BILL_SHOCK", lambda d: d["customer"].update(plans=["GOLD"]), "plans", "unknown plan"),
        (
            "PAYMENT_FAILURE",
            lambda d: d["customer"].update(plans=["YOUTH-25"]),
            "customer.plans",
            "cannot hold YOUTH-25",
        ),
        ("ROAMING_PACK", lambda d: d.update(destinations=["Atlantis"]), "destinations", "unknown"),
        ("ROAMING_PACK", lambda d: d.update(trip_days_ahead=[9, 2]), "trip_days_ahead", "exceed"),
        ("DATA_TOPUP", lambda d: d.update(data_need_gb=[1, 500]), "data_need_gb", "no coupon"),
        ("CONTACT_UPDATE", lambda d: d.update(colour="red"), "colour", "Extra inputs"),
        ("AVERAGE_DATA_USE", lambda d: d.update(period=[0, 14]), "period", "12 months"),
        ("BILL_SHOCK", lambda d: d.update(intent="DUPLICATE_CHARGE"), "intent", "folder"),
        (
            "PLAN_CHANGE",
            lambda d: d.update(target_plans=["SENIOR-CARE"]),
            "target_plans",
            "no target plan",
        ),
        # Each of these used to load and then fail at reset or in the gold chain.
        ("BILL_SHOCK", lambda d: d["customer"].update(plans=[]), "customer.plans", "one plan"),
        ("CONTACT_UPDATE", lambda d: d["customer"].update(age=[30, 5000]), "age", "end at 120"),
        (
            "ROAMING_PACK",
            lambda d: d.update(trip_days_ahead=[100, 200]),
            "trip_days_ahead",
            "at most 90 days ahead",
        ),
        (
            "DATA_TOPUP",
            lambda d: d["customer"].update(data_use=[0.5, float("inf")]),
            "customer.data_use.1",
            "finite number",
        ),
        (
            "PLAN_CHANGE",
            lambda d: d.update(budget=[60, 300]),
            "budget",
            "use target_plans",
        ),
        (
            "PLAN_RECOMMENDATION",
            lambda d: d["customer"].update(data_gb=[0, 100]),
            "customer.data_gb",
            "starts above 0 GB",
        ),
        (
            "PLAN_RECOMMENDATION",
            lambda d: d["customer"].update(data_use=[0.2, 0.9]),
            "customer",
            "not both",
        ),
    ],
)
def test_a_broken_care_blueprint_names_its_problem(tmp_path, intent, change, field, message):
    folder = _broken(tmp_path, intent, change)
    with pytest.raises(CatalogError) as caught:
        load_care_catalog(blueprints_dir=folder)
    text = str(caught.value)
    assert intent in text and field in text and message in text, text


def test_bad_yaml_and_a_missing_family_are_refused(tmp_path):
    folder = _broken(tmp_path, "BILL_SHOCK", lambda d: None)
    path = sorted((folder / "BILL_SHOCK").glob("*.yaml"))[0]
    path.write_text("intent: BILL_SHOCK\n  bad: [", encoding="utf-8")
    with pytest.raises(CatalogError, match="invalid YAML"):
        load_care_catalog(blueprints_dir=folder)
    shutil.rmtree(folder / "BILL_SHOCK")
    with pytest.raises(CatalogError, match="no blueprint for care intent"):
        load_care_catalog(blueprints_dir=folder)
