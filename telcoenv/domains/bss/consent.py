"""What the customer agrees to, and what their yes allows.

A message that asks the customer to approve a change (:func:`telcoenv.text.asks_for_approval`)
is read for the change it describes (:func:`described`): the plans and add-ons it names (by id
or display name, either language), the lines, phones, emails, subscriptions and amounts. The
customer answers as a customer would (:func:`decide`): they agree to the change they asked for,
described with its price when it costs money, and to nothing else. They ask what exactly will
change when the message names nothing, and what it costs when a plan or an add-on comes without
a price; they refuse another plan than the one they named, a pack for the wrong zone or one too
small for the data they need, another email than their new one, another add-on than theirs, a
line that is not theirs, and any change when they only asked a question (a credit to their
account, or a dispute of an invoice named, excepted; a payment taken or a card replaced is a
change). They judge with what they
know (their request, their trip, their need), not with the answer the agent must find: a pack
larger than needed is agreed to, and the verification then finds it is not the cheapest.

A yes allows one write: the one it describes (:meth:`Consent.covers`). The call's plan,
add-on, subscription, email or amount must be the one named, a line named must be the call's,
and a price told must be the item's (with or without VAT): a yes to a described change is no
yes to another, and a price the customer was told wrongly is no consent to the real one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

from telcoenv.domains.bss.generator import answer_vocabulary, products
from telcoenv.domains.bss.state import (
    ADDON,
    INVOICE,
    LINE,
    PLAN,
    SUBSCRIPTION,
    BssState,
)
from telcoenv.text import ARABIC_DIGITS

_LINE = re.compile(r"(?<![\d+-])\d{9,15}(?![\d-])")  # a line number, as 9665...
_PHONE = re.compile(r"\+\d{8,15}\b")  # a contact phone, E.164 as update_contact takes it
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
_SUBSCRIPTION = re.compile(r"\b(?:SUB|LA)\d{6}\b")
_INVOICE = re.compile(r"\bINV\d{6}\b")
# A payment taken or a card replaced (retry_payment, update_payment_card), not a credit given.
_PAYMENT = re.compile(
    r"\b(?:take|collect|retry|process|make|charge)\w* (?:a |the |your )?(?:payment|card)"
    r"|\bpay (?:your|the|this|that) (?:bill|invoice|balance)|\b(?:new|replace\w*|update\w*) "
    r"(?:the |your )?card|\bcard ending"
    r"|إعادة محاولة الدفع|سداد الفاتورة|تحصيل|خصم المبلغ|بطاقة جديدة|تحديث البطاقة"
    r"|البطاقة المنتهية ب",
    re.IGNORECASE,
)
# An amount: digits with an optional decimal part, not part of an id, a date or a line number,
# and not a quantity of data or days.
_AMOUNT = re.compile(
    r"(?<![\w.\-/])\d{1,6}(?:[.,]\d{1,2})?(?![\w\-/]|\.\d|\s*(?:gb|days?|جيجا|يوم|أيام))",
    re.IGNORECASE,
)
# What a customer asking for a change wants, by the write tool of their request.
_CHARGED = ("change_plan", "subscribe_addon")  # a change that costs money: its price is told


@dataclass(frozen=True)
class Described:
    """The change a message describes: what it names."""

    plans: frozenset[str]
    addons: frozenset[str]
    lines: frozenset[str]
    phones: frozenset[str]
    emails: frozenset[str]
    subscriptions: frozenset[str]
    amounts: tuple[float, ...]
    payment: bool = False  # a payment to take or a card to replace
    invoices: frozenset[str] = frozenset()  # the invoices it names (one to dispute)

    @property
    def items(self) -> frozenset[str]:
        """The products and subscriptions named (what would change)."""
        return self.plans | self.addons | self.subscriptions


# The episode's approval gate and the customer's reply both read a request: parsed once.
@lru_cache(maxsize=256)
def described(message: str) -> Described:
    """What ``message`` names of a change."""
    text = message.translate(ARABIC_DIGITS)
    vocabulary = answer_vocabulary()
    lines = frozenset(_LINE.findall(text))
    emails = frozenset(e.rstrip(".").casefold() for e in _EMAIL.findall(text))
    blanked = _EMAIL.sub(" ", _LINE.sub(" ", _PHONE.sub(" ", text)))
    for name in _product_names():  # the 25 of YOUTH-25, the 14 of "Europe Roaming 14 days"
        blanked = re.sub(re.escape(name), " ", blanked, flags=re.IGNORECASE)
    amounts = tuple(float(a.replace(",", ".")) for a in _AMOUNT.findall(blanked))
    return Described(
        plans=frozenset(vocabulary.named(text, "plan")),
        addons=frozenset(vocabulary.named(text, "addon")),
        lines=lines,
        phones=frozenset(_PHONE.findall(text)),
        emails=emails,
        subscriptions=frozenset(_SUBSCRIPTION.findall(text)),
        amounts=amounts,
        payment=_PAYMENT.search(text) is not None,
        invoices=frozenset(_INVOICE.findall(text)),
    )


@cache
def _product_names() -> tuple[str, ...]:
    """Every plan's and add-on's id and display names, longest first."""
    items = [*products()["plans"], *products()["addons"]]
    names = {i.get("plan_id") or i["addon_id"] for i in items}
    names |= {n.translate(ARABIC_DIGITS) for i in items for n in (i["name"]["en"], i["name"]["ar"])}
    return tuple(sorted(names, key=len, reverse=True))


@dataclass(frozen=True)
class Consent:
    """The customer's answer to a request for approval: ``objection`` is None when they agree
    (else the phrase key of ``customer.yaml``'s ``objections`` that says why not)."""

    change: Described
    objection: str | None
    state: BssState

    @property
    def agreed(self) -> bool:
        return self.objection is None

    def covers(self, tool: str, arguments: Mapping[str, Any]) -> str | None:
        """Why this yes does not allow the call (None: it does)."""
        change, state = self.change, self.state
        line = arguments.get("msisdn")
        if line is not None and change.lines and line not in change.lines:
            return f"the customer approved a change on line {', '.join(sorted(change.lines))}"
        if tool == "change_plan":
            plan_id = arguments.get("plan_id")
            return self._item("plan", plan_id, change.plans, PLAN, line=arguments.get("msisdn"))
        if tool == "subscribe_addon":
            return self._item("add-on", arguments.get("addon_id"), change.addons, ADDON)
        if tool == "cancel_addon":
            subscription = str(arguments.get("subscription_id"))
            rows = state.rows(SUBSCRIPTION, subscription)
            addon = rows[0]["addon_id"] if rows else None
            if subscription in change.subscriptions or addon in change.addons:
                return None
            return f"the customer approved cancelling {_listed(change.items)}, not {subscription}"
        if tool == "update_contact":
            email = arguments.get("email")
            if email is not None and str(email).casefold() not in change.emails:
                return f"the customer approved the email {_listed(change.emails)}, not {email}"
            phone = arguments.get("phone")
            if phone is not None and phone not in change.phones:
                return f"the customer approved the phone {_listed(change.phones)}, not {phone}"
            return None
        if tool == "apply_credit":
            amount = arguments.get("amount")
            if isinstance(amount, (int, float)) and _told(float(amount), change.amounts):
                return None
            return f"the customer approved a credit of {_listed(map(str, change.amounts))}"
        if tool == "retry_payment":
            return self._payment(str(arguments.get("invoice_id")))
        if tool == "update_payment_card":
            last4 = str(arguments.get("card_last4"))
            if last4.isdigit() and _told(float(last4), change.amounts):
                return None
            return f"the customer approved no card ending {last4}: name the card's last 4 digits"
        return None

    def _payment(self, invoice_id: str) -> str | None:
        """A payment is approved with its amount: what the invoice still owes."""
        rows = self.state.rows(INVOICE, invoice_id)
        if not rows:
            return None  # the tool refuses the unknown invoice itself
        due = self.state.amount_due(rows[0])
        if _told(due, self.change.amounts):
            return None
        return (
            f"the amount told ({_listed(map(str, self.change.amounts))} SAR) is not what invoice "
            f"{invoice_id} still owes ({due:.2f} SAR): tell the customer and ask again"
        )

    def _item(
        self, what: str, value: Any, named: frozenset[str], query: Any, line: Any = None
    ) -> str | None:
        if value not in named:
            return f"the customer approved the {what} {_listed(named)}, not {value}"
        rows = self.state.rows(query, value)
        if rows and not any(_told(rows[0][k], self.change.amounts) for k in _PRICES):
            return (
                f"the price told ({_listed(map(str, self.change.amounts))} SAR) is not "
                f"{value}'s ({rows[0]['price']:.2f} SAR incl. VAT): tell the customer the "
                "price and ask again"
            )
        lines = self.state.rows(LINE, line) if rows and query is PLAN else []
        fee = self.state.early_change_fee(lines[0], rows[0]) if lines else None
        if fee is not None:
            with_vat = round(fee[0] * (1 + products()["vat_rate"]) + 1e-9, 2)
            if not (_told(fee[0], self.change.amounts) or _told(with_vat, self.change.amounts)):
                return (
                    f"the customer was not told the early-change fee ({with_vat:.2f} SAR incl. "
                    f"VAT, {fee[1]} months of commitment left): tell them and ask again"
                )
        return None


_PRICES = ("price", "price_excl_vat")


def _told(value: float, amounts: tuple[float, ...]) -> bool:
    return any(abs(value - amount) < 0.005 for amount in amounts)


def _listed(values: Any) -> str:
    shown = sorted(values)
    return ", ".join(shown) if shown else "nothing named"


def decide(
    change: Described,
    wants: Mapping[str, Any],
    own_lines: frozenset[str],
    state: BssState,
) -> Consent:
    """The customer's answer to the described change. ``wants``: what they asked for (see
    :func:`wants_of`); ``own_lines``: the lines of their account."""
    return Consent(change, _objection(change, wants, own_lines), state)


def _objection(change: Described, wants: Mapping[str, Any], own: frozenset[str]) -> str | None:
    if change.lines - own:
        return "not_my_line"
    tool = wants.get("tool")
    if tool in (None, "open_care_ticket"):  # a question, or a fix by the back office
        # No product, contact or payment change was asked for.
        if change.items or change.emails or change.payment:
            return "no_change"
        # Money back is welcome (an amount, or the invoice to dispute named); a follow-up is
        # what a customer who asked for a fix wants.
        return None if change.amounts or change.invoices or tool is not None else "what"
    if not change.items and not change.emails:
        return "what"
    if len(change.plans) > 1 or len(change.addons) > 1:
        return "which"
    if tool in _CHARGED and not change.amounts:
        return "price"
    if tool == "change_plan":
        return None if change.plans == {wants["plan_id"]} else "other_plan"
    if tool == "subscribe_addon":
        return None if change.addons and _fits(next(iter(change.addons)), wants) else "other_pack"
    if tool == "cancel_addon":
        mine = {wants["subscription_id"], wants["addon_id"]}
        named = change.subscriptions | change.addons
        return None if named and named <= mine else "other_addon"
    if tool == "update_contact":
        return None if change.emails == {str(wants["email"]).casefold()} else "other_email"
    return None


def _fits(addon_id: str, wants: Mapping[str, Any]) -> bool:
    """Whether the add-on does what the customer asked: a pack for their trip's zone, or a
    coupon of at least the data they need."""
    addon = next((a for a in products()["addons"] if a["addon_id"] == addon_id), None)
    if addon is None:
        return False
    if wants.get("zone"):
        return addon["kind"] == "roaming" and addon["zone"] == wants["zone"]
    return addon["kind"] == "data_coupon" and (addon["data_gb"] or 0) >= wants["need_gb"]


def wants_of(write_tools: set[str], values: Mapping[str, Any], state: BssState) -> dict[str, Any]:
    """What the customer asked to change (their intent's write, if any) and what they know of
    it: the plan they named, their trip's zone or the data they need, their add-on, their new
    email, or a back-office follow-up (a dispute). Nothing the agent must find."""
    tools = [
        t
        for t in (
            "change_plan",
            "subscribe_addon",
            "cancel_addon",
            "update_contact",
            "open_care_ticket",
        )
        if t in write_tools
    ]
    if not tools:
        return {}
    tool = tools[0]
    wants: dict[str, Any] = {"tool": tool}
    if tool == "change_plan":
        wants["plan_id"] = values["plan_id"]
    elif tool == "subscribe_addon":
        wants["zone"] = values.get("zone") if values.get("destination") else None
        wants["need_gb"] = values.get("need_gb") or 0
    elif tool == "cancel_addon":
        subscription = values["subscription_id"]
        rows = state.rows(SUBSCRIPTION, subscription)
        wants |= {
            "subscription_id": subscription,
            "addon_id": rows[0]["addon_id"] if rows else None,
        }
    elif tool == "update_contact":
        wants["email"] = values["email"]
    return wants  # a ticket: the follow-up of a fix they asked for
