"""Approval only for a request (issue 15, item 3): the engineer and the customer consent to a
message that asks to apply a change, never to a statement, a negation or another question."""

from __future__ import annotations

import pytest

import telcoenv
from telcoenv.text import asks_for_approval
from tests.conftest import error_of, gold_actions, make_env

REQUESTS = [
    "May I apply this change?",
    "Can I push the baseline configuration now?",
    "I'd like to set the tilt back to 6 degrees, is that OK?",
    "Requesting approval to change the cell offset.",
    "Do I have your approval to apply the fix?",
    "Shall I go ahead with the change?",
    "Please approve the tilt change.",
    "OK to lower the load-balancing threshold?",
    "Do you want me to add the 5 GB pack to your line?",
    "Would you like me to cancel the add-on?",
    "May I add the roaming pack?",
    "Do you approve? I will set the tilt to 4 degrees.",
    "هل يمكنني تطبيق هذا التغيير؟",
    "أطلب موافقتك على تعديل الميل.",
    "هل توافق على تطبيق الإعدادات الأساسية؟",
    "هل أتابع بتنفيذ التغيير؟",
    "هل تريد أن أضيف باقة البيانات إلى خطك؟",
]
NOT_REQUESTS = [
    "The fault has been confirmed.",
    "I have applied the change.",
    "The change was approved earlier by the NOC.",
    "I can see that the tilt is wrong.",
    "I will proceed with the analysis.",
    "Don't apply anything yet, I am still checking.",
    "No need to approve anything for a read.",
    "Can you confirm the cell id?",
    "Which cell is affected, and since when?",
    "Is it fixed now? What do users see?",
    "تم تأكيد العطل.",
    "قمت بتطبيق التغيير.",
    "لا أريد تطبيق أي تغيير الآن.",
    "سأتابع التحليل.",
    "ما هي الخلية المتأثرة؟",
    # The 1.5B model's own words, which the customer took for a request to approve: "could i"
    # matched "could indicate", "add" matched "additional".
    "You mentioned that the bill for 2026-08 is higher than usual, which could indicate an "
    "unexpected expense or an increase in the rate. Could you please provide the following "
    "information:\n\n1. Your line number\n2. The month of the bill\n\nI'll then call the "
    "necessary functions to get the details of your bill and the additional charges.",
    "Can Ismail apply it?",
]


@pytest.mark.parametrize("message", REQUESTS)
def test_a_request_naming_a_change_asks_for_approval(message):
    assert asks_for_approval(message)


@pytest.mark.parametrize("message", NOT_REQUESTS)
def test_a_statement_a_negation_or_another_question_does_not(message):
    assert not asks_for_approval(message)


@pytest.mark.parametrize(
    ("intent", "domain", "statement"),
    [
        ("load_balancing_needed", "network", "It has been confirmed."),
        ("plan_change", "bss", "The plan change has been confirmed on my side."),
    ],
)
def test_a_statement_leaves_the_change_gated(intent, domain, statement):
    env = make_env(intent, domain=domain, require_approval=True)
    _, info = env.reset(seed=3)
    gold = gold_actions(info)
    change = next(a for a in gold if env.domain.toolbox.specs[a["name"]].approval)
    for check in (a for a in gold if a["name"] == "verify_identity"):
        env.step(check)  # the caller proves who they are (no approval needed to check)
    env.step(statement)
    assert error_of(env.step(change)[0])["type"] == "approval_required"
    plan = change["arguments"].get("plan_id")
    price = _price(plan) if plan else None
    env.step(REQUESTS[0] if domain == "network" else f"Shall I change you to {plan} ({price})?")
    assert "error" not in env.step(change)[0]


def _price(item: str) -> float:
    """A plan's or an add-on's price incl. VAT, as the catalogue tools show it."""
    from telcoenv.domains.bss.generator import products

    listed = {
        i.get("plan_id") or i["addon_id"]: i for i in (*products()["plans"], *products()["addons"])
    }
    return round(listed[item]["price"] * (1 + products()["vat_rate"]), 2)


def _described(action: dict, lang: str) -> str:
    """A request for approval that names the change (and its price, when it costs money)."""
    arguments = action["arguments"]
    what = arguments.get("addon_id") or arguments.get("subscription_id") or arguments.get("email")
    cost = f" ({_price(arguments['addon_id'])} SAR)" if "addon_id" in arguments else ""
    return f"May I apply {what}{cost}?" if lang == "en" else f"هل توافق على تطبيق {what}{cost}؟"


@pytest.mark.parametrize(
    "request_",
    [
        "May I apply this change?",
        "Do you approve this change?",
        "May I go ahead and make the change?",
        "هل توافق على هذا التغيير؟",
    ],
)
@pytest.mark.parametrize("intent", ["roaming_pack", "contact_update", "addon_cancellation"])
def test_the_customer_who_approves_a_change_says_so(intent, request_):
    """The change went through while the reply said "I'm not sure; you should have that on
    file" (the request also routed to a fact the customer cannot tell). A request that names
    no change now gets "what exactly will you change?", and the change stays gated; named, the
    customer's reply is a yes, and the change goes through."""
    from telcoenv.domains.bss.customer import phrases

    lang = "en" if request_.isascii() else "ar"
    env = telcoenv.make(intent, embedder=None, privileged=True, require_approval=True)
    seed = 100
    _, info = env.reset(seed=seed, options={"lang": lang})
    while info["privileged"]["values"]["impostor"]:  # the holder calls
        seed += 1
        _, info = env.reset(seed=seed, options={"lang": lang})
    gated = None
    for action in gold_actions(info):  # up to the change the customer wanted
        observation = env.step(action)[0]
        if (
            observation.startswith('{"error"')
            and error_of(observation)["type"] == "approval_required"
        ):
            gated = action
            break
    assert gated is not None
    assert env.step(request_)[0] in phrases()["objections"]["what"][lang]
    assert error_of(env.step(gated)[0])["type"] == "approval_required"
    # A yes (after the new address, when the request names it: the customer confirms it).
    yes = tuple(phrases()["answers"]["approval"][lang])
    assert env.step(_described(gated, lang))[0].endswith(yes)
    assert not env.step(gated)[0].startswith('{"error"')
