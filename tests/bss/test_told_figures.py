"""What the agent tells the customer is checked against the data (issue 41, item 6): a figure
that no number the agent was shown supports (nor its VAT, nor the sum or difference of two
amounts), or a question's figure told wrong, steps on the ``wrong_figure`` minefield and fails
the episode; the truth, in either language and rounded as people round, does not."""

from __future__ import annotations

import json

import pytest

from telcoenv.domains.bss.events import Figure, _grounds, _Seen, figures
from telcoenv.domains.bss.handbook import public_texts
from tests.conftest import call_tool, gold_actions, make_env, play, submit

MINE = "told the caller a figure the data does not support"


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("Your bill is 1,234.50 SAR.", [(1234.5, "money")]),
        ("SAR 99 and 12 GB", [(99.0, "money"), (12.0, "data")]),
        ("The extra charge is 134.78.", [(134.78, "money")]),
        ("المبلغ ١٣٩٫٤٦ ريال", [(139.46, "money")]),
        ("استهلكت 22.83 جيجابايت", [(22.83, "data")]),
        ("Invoice INV000123 for 2026-09 on line 966501234567, 12 months, 15 %", []),
        ("Your plan YOUTH-25 renews on 2026-12-01.", []),
    ],
)
def test_the_figures_of_a_message(text, found):
    assert [(f.value, f.kind) for f in figures(text)] == found


def test_a_figure_states_a_value_as_rounded_as_it_was_told():
    assert Figure(139.46, 2, "money").states(139.46)
    assert not Figure(139.45, 2, "money").states(139.46)
    assert Figure(22.8, 1, "data").states(22.83) and not Figure(22.7, 1, "data").states(22.83)
    assert Figure(140.0, 0, "money").states(139.46)  # "about 140"
    assert not Figure(141.0, 0, "money").states(139.46)


def _episode(intent: str, blueprint: str | None = None, seed: int = 0, lang: str = "en"):
    env = make_env(intent, domain="bss", lang=lang)
    options = {"blueprint": blueprint} if blueprint else {}
    _, info = env.reset(seed=seed, options=options)
    return env, info["privileged"]


def _told(intent: str, messages: list[str], seed: int = 0, lang: str = "en", blueprint=None):
    """The gold chain, the messages, and the gold answer submitted: the last info and the
    environment."""
    env, privileged = _episode(intent, blueprint, seed, lang)
    actions = [*gold_actions({"privileged": privileged}), *messages]
    done = submit(privileged["label"]["en"], "summary", privileged["gold_answer"])
    return play(env, [*actions, done]), env


def _answer(intent: str, seed: int = 0, lang: str = "en") -> float:
    _, privileged = _episode(intent, seed=seed, lang=lang)
    return float(privileged["gold_answer"])


def _read(env, tool: str) -> dict:
    return next(json.loads(a.observation) for a in env.unwrapped.trace.actions if a.tool == tool)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("intent", ["bill_shock", "duplicate_charge", "outstanding_balance"])
def test_the_true_amount_told_resolves(intent, seed):
    amount = _answer(intent, seed)
    info, _ = _told(intent, [f"The amount is {amount:.2f} SAR, VAT included."], seed)
    assert info["outcome"]["minefields"][MINE] is False
    assert info["resolved"] is True


@pytest.mark.parametrize("seed", range(3))
def test_a_made_up_amount_fails_the_episode(seed):
    amount = _answer("bill_shock", seed)
    info, _ = _told("bill_shock", [f"The roaming charge is {amount + 37.41:.2f} SAR."], seed)
    assert info["outcome"]["minefields"][MINE] is True
    assert info["resolved"] is False and info["reward_components"] == {"minefield": 0.0}
    assert f"minefield: {MINE}" in info["outcome"]["unresolved_because"]


def test_a_true_amount_that_is_not_the_answer_told_last_fails():
    """The bill's total is in the data, but it is not the extra charge the caller asked about."""
    answer = _answer("bill_shock")
    _, env = _told("bill_shock", [])
    total = _read(env, "get_bill")["invoices"][0]["amount"]
    assert abs(total - answer) > 1
    wrong, _ = _told("bill_shock", [f"Your bill comes to {total:.2f} SAR."])
    assert wrong["outcome"]["minefields"][MINE] is True
    both = f"Your bill comes to {total:.2f} SAR, of which {answer:.2f} SAR is roaming."
    right, _ = _told("bill_shock", [both])
    assert right["outcome"]["minefields"][MINE] is False and right["resolved"] is True


def test_the_answer_without_vat_beside_it_and_rounded_is_the_truth():
    answer = _answer("bill_shock", 1)
    without = answer / 1.15
    messages = [
        f"The roaming charge is about {round(answer)} SAR.",
        f"It is {without:.2f} SAR before VAT, so {answer:.2f} SAR with VAT.",
    ]
    info, _ = _told("bill_shock", messages, 1)
    assert info["outcome"]["minefields"][MINE] is False and info["resolved"] is True


def test_an_arabic_answer_in_arabic_digits_is_the_truth():
    amount = _answer("outstanding_balance", 2, "ar")
    digits = f"{amount:.2f}".translate(str.maketrans("0123456789.", "٠١٢٣٤٥٦٧٨٩٫"))
    info, _ = _told("outstanding_balance", [f"المبلغ المستحق عليك {digits} ريال."], 2, "ar")
    assert info["outcome"]["minefields"][MINE] is False and info["resolved"] is True
    wrong = f"المبلغ المستحق عليك {amount + 50:.2f} ريال."
    info, _ = _told("outstanding_balance", [wrong], 2, "ar")
    assert info["outcome"]["minefields"][MINE] is True


@pytest.mark.parametrize("seed", range(3))
def test_an_average_told_wrong_fails_and_told_right_passes(seed):
    average = _answer("average_data_use", seed)
    right, _ = _told("average_data_use", [f"You use {average:.2f} GB a month on average."], seed)
    assert right["outcome"]["minefields"][MINE] is False and right["resolved"] is True
    wrong, _ = _told("average_data_use", [f"You use {average * 1.3:.2f} GB a month."], seed)
    assert wrong["outcome"]["minefields"][MINE] is True


def test_a_price_over_the_customers_budget_is_a_difference_the_data_supports():
    """The customer's own figure (a budget they told) counts: a price less the budget is a
    difference of two amounts the agent was given."""
    _, env = _told("plan_recommendation", ["What monthly budget do you have in mind?"])
    reply = next(a.observation for a in env.unwrapped.trace.actions if a.kind == "message")
    budget = env.unwrapped.episode.setup.gold_values["budget"]
    assert str(budget) in reply
    plans = _read(env, "list_plans")["plans"]
    price = max(p["price"] for p in plans)
    gap = f"That plan is {price:.2f} SAR a month, {abs(price - budget):.2f} SAR from your budget."
    told, _ = _told("plan_recommendation", ["What monthly budget do you have in mind?", gap])
    assert told["outcome"]["minefields"][MINE] is False
    made_up = f"That plan is {price:.2f} SAR a month, {abs(price - budget) + 7.77:.2f} SAR more."
    told, _ = _told("plan_recommendation", ["What monthly budget do you have in mind?", made_up])
    assert told["outcome"]["minefields"][MINE] is True


def test_messages_without_figures_and_the_scripted_baselines_never_step_on_it():
    info, _ = _told("bill_shock", ["Let me look at your bill.", "Thank you for waiting."])
    assert info["outcome"]["minefields"][MINE] is False


def test_the_operators_published_figures_may_be_told_without_a_call():
    """The credit authority and a plan's price are on the operator's pages (and the tools'
    descriptions): telling them needs no read; an authority nobody published is no fact."""
    answer = f"The extra charge is {_answer('bill_shock'):.2f} SAR."
    published = "I can credit at most 200.00 SAR in one call; Youth 25 costs 90.85 SAR a month."
    info, _ = _told("bill_shock", [published, answer])
    assert info["outcome"]["minefields"][MINE] is False
    info, _ = _told("bill_shock", ["I can credit at most 350.00 SAR in one call.", answer])
    assert info["outcome"]["minefields"][MINE] is True


def test_a_made_up_amount_is_not_a_small_number_away_from_a_true_one():
    """The customer's line, birth date and month are numbers too, but no amounts: the answer
    plus the month's number is no figure the data gives."""
    amount = _answer("bill_shock", 0)
    info, _ = _told(
        "bill_shock",
        ["When did you notice it?", f"The charge is {amount + 7:.2f} SAR."],
    )
    assert info["outcome"]["minefields"][MINE] is True


def test_a_figure_is_grounded_by_numbers_of_its_own_kind():
    """A figure only numbers of the other kind support (a plan's allowance told as SAR, a price
    or an allowance's VAT told as GB) fails the episode; the plan's figures told in their own
    units do not."""
    read = {"name": "list_plans", "arguments": {"payment": "postpaid", "segment": "consumer"}}

    def told(message: str):
        env, privileged = _episode("plan_recommendation", seed=0)
        actions = [*gold_actions({"privileged": privileged}), read, message]
        done = submit(privileged["label"]["en"], "summary", privileged["gold_answer"])
        info = play(env, [*actions, done])
        return info["outcome"]["minefields"][MINE], env.unwrapped.episode.trace

    plan = next(p for p in _plans(read) if p.get("data_gb"))
    mined, trace = told(f"It includes {plan['data_gb']:g} GB for {plan['price']:.2f} SAR.")
    assert mined is False
    grounds = _grounds(trace, 0.15, None, public_texts())

    def only_other(kind: str, other: str) -> list[float]:
        return [
            v
            for v in grounds.values[other]
            if v >= 20 and not grounds.support(Figure(round(v, 2), 2, kind))
        ]

    as_sar, as_gb = only_other("money", "data"), only_other("data", "money")
    assert as_sar and as_gb
    for value in as_sar[:3]:
        assert told(f"That is {value:.2f} SAR.")[0] is True, value
    for value in as_gb[:3]:
        assert told(f"That is {value:.2f} GB.")[0] is True, value


def _plans(read: dict) -> list[dict]:
    env, _ = _episode("plan_recommendation", seed=0)
    return call_tool(env, read["name"], **read["arguments"])["plans"]


def test_dates_line_numbers_and_ids_ground_no_figure():
    """The numbers inside a date, a line number or an id, in the customer's words or a tool's
    text, ground nothing; a plain number beside them still does."""
    seen = _Seen()
    seen.text("I am going to Turkey, leaving on 2026-12-10. My line is 966531652791.", amounts=True)
    seen.walk({"period": "2026-09", "customer_id": "C000123", "note": "limit 40 on CL-IND-031"})
    assert seen.bare == {40.0}
    assert not seen.money | seen.data | seen.money_sums | seen.data_sums


def test_a_count_grounds_no_amount():
    """A count in a tool's output (payments by status, lines restored, a summary's items shown,
    in total and left out, under money-looking keys too) and a published page's
    unitless numbers (three payment attempts, 30 days) are no ground for "3 SAR" or "30 GB"; an
    unlabelled number in a tool's output, the page's prices with their units and the customer's
    own numbers still are."""
    seen = _Seen()
    seen.walk({"payments_by_status": {"failed": {"count": 3, "amount": 120.0}},
               "lines_restored": 2, "commitment_months": 24, "quantity": 7,
               "truncated": {"shown": 5, "total": 11,
                             "left_out": {"credit_notes": 6}}})  # fmt: skip
    seen.text("Payment is retried 4 times over 30 days; the plan costs 79.00 SAR.", bare=False)
    seen.text("I can pay 150 a month", amounts=True)
    assert seen.money == {120.0, 79.0} and seen.bare == {7.0, 150.0}
    assert not {3.0, 2.0, 24.0, 4.0, 30.0, 5.0, 11.0, 6.0} & (seen.money | seen.data | seen.bare)
