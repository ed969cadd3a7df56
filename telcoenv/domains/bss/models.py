"""The customer-care (BSS) domain's data-file models: care intents and the blueprints that say
who calls and what is in their data."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from telcoenv.specs import Bilingual, BlueprintModel, FrozenModel, IntentModel


class CareIntent(IntentModel):
    """A customer-care intent of the BSS domain: what the customer wants, the gold API chain
    (argument templates filled from the episode's data) and, for a question, the exact answer
    (a template of the episode's facts)."""

    domain: Literal["bss"]
    description: Bilingual
    customer: Bilingual  # the customer's opening message (a template)
    answer: str | None = None
    policy: tuple[str, ...] = ()  # the handbook's rules (policy.yaml) the chain follows

    def show_lines(self) -> list[str]:
        answer = self.answer or "(a request: verified on the final state)"
        return [
            self.description.en,
            *super().show_lines(),
            f"customer: {self.customer.en}",
            f"answer: {answer}",
            f"policy: {', '.join(self.policy) or '(none)'}",
        ]


class CareCustomer(FrozenModel):
    """Who calls in a care blueprint: ranges are inclusive ``[min, max]``."""

    age: tuple[int, int]
    segment: Literal["consumer", "business"] = "consumer"
    plans: tuple[str, ...]  # the line's current plan, drawn uniformly
    family_size: tuple[int, int] = (1, 1)  # lines in the family group (1: none)
    data_use: tuple[float, float] | None = None  # monthly data use, a share of the allowance
    # Or in GB, drawn log-uniformly: where what the line's plan allows must not say how much it
    # uses (a recommendation's answer follows from the use, not from the caller's plan).
    data_gb: tuple[float, float] | None = None

    @model_validator(mode="after")
    def _one_data_use(self) -> CareCustomer:
        if (self.data_use is None) == (self.data_gb is None):
            raise ValueError("give the data use as data_use (a share) or data_gb, not both")
        return self


class CareBlueprint(BlueprintModel):
    """One scenario family of a customer-care intent: who calls and what is in their data.

    Every field is data the episode sampler draws from (see ``telcoenv.domains.bss.scenario``);
    a field left out plants nothing.
    """

    description: str
    customer: CareCustomer
    period: tuple[int, int] = (0, 0)  # the month concerned, in months before the latest bill
    roaming_bill: bool = False  # pay-as-you-go roaming on the period's bill (destinations)
    destinations: tuple[str, ...] = ()  # countries of the catalogue (the trip's or the bill's)
    trip_days_ahead: tuple[int, int] | None = None  # a trip starting this many days from today
    duplicate_invoice: bool = False  # the period's billing run fired twice
    # The period's bill also carries data coupons bought and roaming used that month (drawn):
    # its amount is not the plan fees (a duplicate charge's answer must be read from it).
    bill_extras: bool = False
    failed_payment: bool = False  # the latest payment failed
    # The latest two bills are unpaid and the one before is long overdue: the account and its
    # postpaid lines are suspended (dunning, products.yaml's billing.suspend_after_days).
    arrears: bool = False
    active_addons: tuple[str, ...] = ()  # one of them is active on the line
    data_need_gb: tuple[int, int] | None = None  # extra data the customer asks for
    budget: tuple[int, int] | None = None  # the caller's monthly budget incl. VAT, SAR
    target_plans: tuple[str, ...] = ()  # the plan the customer asks to move to
    new_email: bool = False  # the customer gives a new email address
    # Share of episodes whose caller is not the line's holder (an account takeover attempt):
    # the identity check fails and the operator's rules refuse the change they ask for.
    impostor_share: float = Field(default=0.0, ge=0.0, le=0.5)
