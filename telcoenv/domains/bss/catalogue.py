"""The operator's product catalogue and commercial terms, as packaged (``products.yaml``)."""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

from telcoenv.datafiles import parse_yaml


@cache
def products() -> dict[str, Any]:
    """The packaged product catalogue: plans, add-ons, destinations, VAT, billing terms and
    payments (``products.yaml``)."""
    text = resources.files(__package__).joinpath("products.yaml").read_text("utf-8")
    return parse_yaml(text, "products.yaml")


def eligible(plan: dict[str, Any], age: int, segment: str) -> bool:
    """The products' eligibility rule: the customer's segment and age."""
    high = plan["max_age"]
    return plan["segment"] == segment and plan["min_age"] <= age and (high is None or age <= high)
