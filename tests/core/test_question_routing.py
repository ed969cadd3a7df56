"""Counterparts route questions by meaning: measured on an independent paraphrase set, with a
reply that lists what the counterpart can tell when a message asks nothing it knows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

import telcoenv
from telcoenv.domains.bss import customer
from telcoenv.domains.network import engineer
from telcoenv.errors import CatalogError, ToolError
from telcoenv.routing import OTHER, QuestionRouter, asks, load_prototypes, split_sentences

# Written by someone who never saw the prototypes (telcoenv/domains/*/questions.yaml), as real
# models ask; the routing was tuned on the even-numbered messages and never on the odd ones.
PARAPHRASES = yaml.safe_load(
    (Path(__file__).parents[1] / "data" / "question_paraphrases.yaml").read_text("utf-8")
)
ROUTERS = {"engineer": engineer.question_router, "customer": customer.question_router}
PROTOTYPES = {
    "engineer": Path(engineer.__file__).with_name("questions.yaml"),
    "customer": Path(customer.__file__).with_name("questions.yaml"),
}


def _cases(role: str, half: int | None = None) -> list[tuple[str, str, str]]:
    """(kind, lang, message) of the paraphrase set, without a message that is also one of the
    prototypes (word for word: that measures nothing)."""
    prototypes = load_prototypes(PROTOTYPES[role])
    known = {q.strip().lower() for by_lang in prototypes.values() for q in by_lang["en"]}
    known |= {q.strip() for by_lang in prototypes.values() for q in by_lang["ar"]}
    return [
        (kind, lang, message)
        for kind, by_lang in PARAPHRASES[role].items()
        for lang, messages in by_lang.items()
        for index, message in enumerate(messages)
        if (half is None or index % 2 == half)
        and message.strip().lower() not in known
        and message.strip() not in known
    ]


def _accuracy(role: str, cases: list[tuple[str, str, str]]) -> float:
    router = ROUTERS[role]()
    return sum((router.route(m) or [OTHER])[0] == kind for kind, _, m in cases) / len(cases)


def test_the_paraphrase_set_is_large_enough():
    for role, kinds in PARAPHRASES.items():
        assert set(kinds) == {*ROUTERS[role]().kinds, OTHER}
        for by_lang in kinds.values():
            assert len(by_lang["en"]) >= 30 and len(by_lang["ar"]) >= 30


@pytest.mark.slow
@pytest.mark.parametrize("role", ["engineer", "customer"])
def test_routing_accuracy_is_at_least_90_percent(role):
    """The held-out half (odd-numbered messages) and the whole set, both languages.
    Measured when written: engineer 0.903 held out (0.927 all), customer 0.920 (0.930 all);
    customer with the wrap-up kind ``done``: 0.907 held out (0.915 all); with the statement
    check (a sentence asks only in the form of a question or request): engineer 0.906 (0.938),
    customer 0.943 (0.942); with the customer's ``request`` kind (what they need, as a whole):
    customer 0.929 (0.925)."""
    assert _accuracy(role, _cases(role, half=1)) >= 0.90
    assert _accuracy(role, _cases(role)) >= 0.90


STATEMENTS = yaml.safe_load(
    (Path(__file__).parents[1] / "data" / "agent_statements.yaml").read_text("utf-8")
)


@pytest.mark.slow
def test_a_read_out_is_no_question_for_the_customer():
    """Read-outs of an account that name a line, a bill or a plan ask the customer nothing.
    Before the statement check, 46 of these 70 were routed to a kind of fact (the customer
    answered "It's 9665..." to "It looks like your line is active"); measured after: 4."""
    router = customer.question_router()
    routed = [m for lang in ("en", "ar") for m in STATEMENTS[lang] if router.route(m)]
    assert len(routed) <= 0.10 * (len(STATEMENTS["en"]) + len(STATEMENTS["ar"])), routed


@pytest.mark.parametrize(
    "sentence",
    [
        "Which month is the bill for",
        "OK, what is your new email address.",
        "Thanks what's your number",
        "Please share your line number.",
        "Could you tell me the month",
        "Provide the line number.",
        "Your line number?",
        "ممكن رقم جوالك",
        "وش رقم الخط",
        "لو سمحت أعطني رقمك",
        "هل الفاتورة لشهر أغسطس",
        "كم جيجا تحتاج",
    ],
)
def test_a_question_or_request_has_the_form_of_one(sentence):
    assert asks(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "Your line 966512345678 is active and postpaid.",
        "It looks like your line is active and on a postpaid plan.",
        "The account has a balance of $0.00, which is lower than the usual balance.",
        "I have updated your email and the line is active.",
        "Got your line ID.",
        # run s11a, bill_shock en: answered "Sorry, I don't know that" as a question
        "Based on the details you provided, the extra charge is related to data usage in Turkey.",
        "The new address has been confirmed.",
        "خطك فعال ومفوتر.",
        "فاتورتك لشهر أغسطس فيها رسوم تجوال.",
    ],
)
def test_a_statement_has_no_question_form(sentence):
    assert not asks(sentence)


@pytest.mark.parametrize("lang", ["en", "ar"])
def test_the_customer_does_not_answer_a_read_out_with_their_number(lang):
    """A 1.5B model read the account out ("It looks like your line is active and on a postpaid
    plan.") and the customer answered with their line number, 8 times in one episode; now the
    customer says they still have no answer and restates the question."""
    env = telcoenv.make("bill_shock", domain="bss", embedder=None, lang=lang)
    env.reset(seed=2)
    number = env.unwrapped.trace.start_state["msisdns"][0]
    readout = {
        "en": "It looks like your line is active and on a postpaid plan.",
        "ar": "يبدو أن خطك فعال وعلى باقة مفوترة.",
    }[lang]
    reply, *_ = env.step(readout)
    assert number not in reply
    assert reply.startswith(tuple(customer.phrases()["unanswered"][lang])), reply


@pytest.mark.slow
@pytest.mark.parametrize("role", ["engineer", "customer"])
@pytest.mark.parametrize("lang", ["en", "ar"])
def test_each_language_routes_well(role, lang):
    cases = [c for c in _cases(role) if c[1] == lang]
    assert _accuracy(role, cases) >= 0.85


def test_routing_is_deterministic_and_a_statement_asks_nothing():
    router = engineer.question_router()
    message = "Thanks. Which cell is affected? And when did it start?"
    assert router.route(message) == router.route(message)
    assert set(router.route(message)) == {"cell_id", "started"}
    assert router.route("I checked the KPIs and I am applying the fix now.") == []
    assert router.route("") == [] and router.route("?!... \n") == []


def test_sentences_are_split_where_a_model_ends_them():
    text = "Hello! Which cell is it?\nWhen did it start؟ Cell NR-URB-MACRO-000 v1.2 looks odd."
    assert split_sentences(text) == [
        "Hello!",
        "Which cell is it?",
        "When did it start؟",
        "Cell NR-URB-MACRO-000 v1.2 looks odd.",
    ]


@pytest.mark.parametrize("lang", ["en", "ar"])
def test_the_engineer_lists_what_it_can_tell(lang):
    env = telcoenv.make("beam_misalignment", embedder=None, lang=lang)
    env.reset(seed=2)
    question = "Do you know the weather there?" if lang == "en" else "هل تعرف حالة الطقس هناك؟"
    reply, *_ = env.step(question)
    can_tell = engineer.phrases()["can_tell"][lang]
    assert any(reply.endswith(sentence) for sentence in can_tell)


@pytest.mark.parametrize("lang", ["en", "ar"])
def test_the_customer_lists_what_they_can_tell(lang):
    env = telcoenv.make("bill_shock", domain="bss", embedder=None, lang=lang)
    env.reset(seed=2)
    reply, *_ = env.step("What firmware runs on the billing server?")
    facts = customer.phrases()["facts"]
    assert facts["msisdn"][lang] in reply and facts["period"][lang] in reply
    assert not re.search(r"\d{12}", reply)  # the list names the facts, it does not give them


def test_the_customer_answers_two_questions_in_one_message():
    env = telcoenv.make("bill_shock", domain="bss", embedder=None)
    env.reset(seed=2)
    number = env.unwrapped.trace.start_state["msisdns"][0]
    reply, *_ = env.step("Could you give me your mobile number? Also, which month is the bill?")
    assert number in reply and re.search(r"\d{4}-\d{2}", reply)


@pytest.mark.parametrize(
    ("document", "where"),
    [
        ({"kinds": {"cell_id": {"en": ["Which cell?"], "ar": ["أي خلية؟"]}}}, "kinds"),
        ({"kinds": {"other": {"en": ["Thanks."]}}}, "kinds.other.ar"),
        ({"kinds": {"other": {"en": ["x"], "ar": ["y"], "keywords": "cell"}}}, "keywords"),
    ],
)
def test_bad_prototypes_are_refused_with_their_place(tmp_path, document, where):
    path = tmp_path / "questions.yaml"
    path.write_text(yaml.safe_dump(document, allow_unicode=True), encoding="utf-8")
    with pytest.raises(CatalogError, match=re.escape(where)):
        load_prototypes(path)


def test_a_router_needs_other_prototypes():
    with pytest.raises(ValueError, match="other"):
        QuestionRouter({"cell_id": {"en": ["Which cell?"], "ar": ["أي خلية؟"]}})


def test_a_request_after_a_comma_is_heard_as_well():
    """A real model's "To update your email address, please provide your line number." asks
    for the line number: the customer gives it (and the address the sentence is about)."""
    assert customer.question_router().route(
        "To update your email address, please provide your line number."
    ) == ["email", "msisdn"]
    env = telcoenv.make("contact_update", domain="bss", embedder=None)
    env.reset(seed=0)
    number = env.unwrapped.trace.start_state["msisdns"][0]
    reply, *_ = env.step("To update your email address, please provide your line number.")
    assert number in reply


@pytest.mark.parametrize(
    ("message", "kinds"),
    [
        (
            "Can you please provide your line number and your new email address?",
            {"email", "msisdn"},
        ),
        ("Please share your mobile number and the billing month.", {"msisdn", "period"}),
        ("هل يمكنك تزويدي برقم خطك وبريدك الإلكتروني الجديد؟", {"email", "msisdn"}),
        # run s11a, contact_update en: an id the customer does not know and the new address
        # (answered with the address alone); they give their line for the id
        ("Please provide your customer id and new email address.", {"email", "msisdn"}),
        ("من فضلك أعطني معرف العميل والبريد الجديد", {"email", "msisdn"}),
        # A statement asks nothing, and a word that starts with و is no conjunction.
        ("I checked your bill and it looks fine.", set()),
        ("ما هو وقت بدء المشكلة؟", {"noticed"}),
    ],
)
def test_two_requests_joined_by_and_are_both_heard(message, kinds):
    """A real model asked "your line number and your new email address?" and the customer gave
    only the address, four times over: each part joined by "and" / "و" adds the kind it names."""
    assert set(customer.question_router().route(message)) == kinds


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        # run s11a, bill_shock en: routed to the plan, answered "I'm not sure"
        ("Okay, I just asked for the customer's line number. Please provide it to me.", "msisdn"),
        ("The new email is needed to update your details. Please send it to me.", "email"),
        ("البريد الجديد مطلوب للتحديث. من فضلك أعطني إياه.", "email"),
        ("أحتاج رقم خطك. من فضلك زودني به.", "msisdn"),
        ("أحتاج بريدك الإلكتروني الجديد. من فضلك أرسله لي.", "email"),
        ("لم يصلني رقم خطك بعد. اكتبه هنا من فضلك.", "msisdn"),
    ],
)
def test_a_request_for_it_asks_for_what_the_sentence_before_names(message, kind):
    assert customer.question_router().route(message)[:1] == [kind]


@pytest.mark.parametrize(
    "message",
    [
        "Can you please provide your line number and your new email address?",
        "Please provide your customer id and new email address.",
    ],
)
def test_the_customer_gives_both_facts_asked_with_and(message):
    env = telcoenv.make("contact_update", domain="bss", embedder=None)
    env.reset(seed=0)
    number = env.unwrapped.trace.start_state["msisdns"][0]
    reply, *_ = env.step(message)
    assert number in reply and "@" in reply


@pytest.mark.parametrize("lang", ["en", "ar"])
def test_the_customer_answers_a_wrap_up_as_a_customer_would(lang):
    """Told that the request is done, or asked whether there is anything else, the customer says
    that is all once the change they asked for was made (the 1.5B model's "Your email has been
    updated. Anything else?" used to get the new address again, and it repeated the claim until
    the budget ran out). Before any change was made, they say they have heard of none and
    restate the request. A wrap-up that also asks for a fact gets the fact."""
    env = telcoenv.make("contact_update", domain="bss", embedder=None, lang=lang, privileged=True)
    _, info = env.reset(seed=2)
    bank = customer.phrases()
    wrap_ups = {
        "en": [
            "Your email address has been updated. Is there anything else I can help with?",
            "Thank you for updating your contact information. If you have any other "
            "questions, feel free to ask.",
        ],
        "ar": ["تم تحديث بريدك الإلكتروني. هل هناك أي شيء آخر؟", "أبشر، خلصنا طلبك."],
    }[lang]
    opening = env.unwrapped.episode.setup.problem_statement
    greeting = next(g for g in bank["greetings"][lang] if opening.startswith(g + " "))
    request = opening.removeprefix(greeting + " ")
    for message in wrap_ups:  # claimed, not made
        reply, *_ = env.step(message)
        assert reply.startswith(tuple(bank["not_yet"][lang])) and reply.endswith(request)
    number = env.unwrapped.trace.start_state["msisdns"][0]
    ask = {"en": "Done. What is your line number?", "ar": "تم. ما رقم جوالك؟"}[lang]
    assert number in env.step(ask)[0]
    for call in info["privileged"]["gold_chain"]:  # the change, made
        env.step({"name": call["tool"], "arguments": call["arguments"]})
    for message in wrap_ups:
        assert env.step(message)[0] in bank["satisfied"][lang]


def test_a_question_needs_no_change_and_an_undone_change_is_not_heard_of():
    """A customer who asked a question is satisfied by a wrap-up once they heard the answer
    (nothing to change); a change that was undone sends no confirmation."""
    env = telcoenv.make("bill_shock", domain="bss", embedder=None)
    env.reset(seed=2)
    env.step(f"It is a charge of {env.unwrapped.trace.gold_answer} SAR.")
    assert env.step("Anything else I can help with?")[0] in customer.phrases()["satisfied"]["en"]
    env = telcoenv.make("contact_update", domain="bss", embedder=None)
    env.reset(seed=2)
    state = env.unwrapped.episode.setup.state
    with pytest.raises(ToolError), state.db.change():
        state.update("customers", "customer_id", "C000000", email="undone@mail.example.sa")
        assert state.kept_writes == 1
        raise ToolError("refused", kind="rejected")
    assert state.kept_writes == 0
    assert env.step("All done!")[0].startswith(tuple(customer.phrases()["not_yet"]["en"]))


@pytest.mark.parametrize(
    "message", ["Please enter your customer ID.", "من فضلك أدخل رقم العميل الخاص بك."]
)
def test_asked_for_an_id_they_do_not_know_the_customer_gives_their_line(message):
    """The 1.5B model asked for the customer id (in English, of an Arabic speaker) and got the
    new email address back; a caller gives the number they know."""
    assert customer.question_router().route(message)[:1] == ["msisdn"]


@pytest.mark.parametrize("lang", ["en", "ar"])
@pytest.mark.parametrize("asked", ["internal id", "line"])
def test_the_customer_says_they_know_their_line_not_an_internal_id(lang, asked):
    """Asked for "your customer ID" the customer says they do not know it and gives their line
    (the 1.5B model asked for the customer ID for 12 steps, each answered "The line is ..."
    only, and never called get_customer with it); asked for the line, they just give it."""
    env = telcoenv.make("contact_update", domain="bss", embedder=None, lang=lang)
    env.reset(seed=2)
    number = env.unwrapped.trace.start_state["msisdns"][0]
    message = {
        ("en", "internal id"): "Please enter your customer ID.",
        ("ar", "internal id"): "من فضلك أدخل رقم العميل الخاص بك.",
        ("en", "line"): "Please enter your mobile number.",
        ("ar", "line"): "من فضلك أدخل رقم جوالك.",
    }[lang, asked]
    reply, *_ = env.step(message)
    templates = customer.phrases()["line_not_id" if asked == "internal id" else "answers"]
    options = templates[lang] if asked == "internal id" else templates["msisdn"][lang]
    assert reply in {t.format(msisdn=number) for t in options}


@pytest.mark.parametrize(
    ("answer", "message", "given"),
    [
        ("267.0", "The extra charge is 267 SAR of roaming data.", True),
        ("267.0", "That comes to 267.00 SAR.", True),
        ("1267.5", "You owe 1,267.50 SAR.", True),
        ("267.0", "Your bill is 2670 SAR.", False),
        ("267.0", "Let me check your bill.", False),
        ("card expired", "The payment failed because the card expired.", True),
        # Any phrasing of the stored reason, and display names of ids (the answer matcher's).
        ("card expired", "It failed: the card has expired.", True),
        ("card expired", "انتهت صلاحية بطاقتك", True),
        ("card expired", "Your bank declined the payment.", False),
        ("POST-PLUS", "I recommend post-plus.", True),
        ("POST-PLUS", "I recommend Postpaid Plus.", True),
        ("POST-PLUS", "I recommend Postpaid Essential.", False),
    ],
)
def test_the_customer_hears_the_answer_in_its_amount_or_words(answer, message, given):
    assert customer.gives_answer(answer, message) is given


@pytest.mark.parametrize("lang", ["en", "ar"])
def test_a_question_asked_is_not_wrapped_up_before_it_is_answered(lang):
    """The 1.5B model said it could not answer without more details, then "If you have any
    other questions, feel free to ask.", and the customer said "That's all I needed": now they
    ask their question again until a message gives its answer."""
    env = telcoenv.make("bill_shock", domain="bss", embedder=None, lang=lang)
    env.reset(seed=2)
    answer = env.unwrapped.trace.gold_answer
    wrap_up = "Is there anything else I can help you with today?"
    reply, *_ = env.step(wrap_up)
    assert reply.startswith(tuple(customer.phrases()["unanswered"][lang]))
    assert env.unwrapped.trace.problem_statement.rsplit(". ", 1)[-1] in reply  # the question
    env.step(f"The extra charge on that bill is {float(answer):.2f} SAR.")
    assert env.step(wrap_up)[0] in customer.phrases()["satisfied"][lang]


@pytest.mark.parametrize("lang", ["en", "ar"])
def test_a_statement_hears_the_question_again_and_the_answer_thanks(lang):
    """Recorded from Qwen2.5-Coder-1.5B (bill_shock en, run s10a): "The extra charge is likely
    due to a duplicate charge." and read-outs of the account got "Sorry, I didn't follow.",
    as would the right answer. A message that asks nothing hears the question again while it
    is unanswered; one that states the answer is thanked; a question is answered as before."""
    env = telcoenv.make("bill_shock", domain="bss", embedder=None, lang=lang)
    env.reset(seed=2)
    bank, answer = customer.phrases(), env.unwrapped.trace.gold_answer
    question = env.unwrapped.trace.problem_statement.rsplit(". ", 1)[-1]
    guesses = {
        "en": ["The extra charge is likely due to a duplicate charge.", "Let me check your bill."],
        "ar": ["الرسوم الإضافية على الأرجح بسبب خصم مكرر.", "سأراجع فاتورتك الآن."],
    }[lang]
    for guess in guesses:
        reply, *_ = env.step(guess)
        assert reply.startswith(tuple(bank["unanswered"][lang])) and question in reply
    reply, *_ = env.step("What is your line number?" if lang == "en" else "ما رقم جوالك؟")
    assert not reply.startswith(tuple(bank["unanswered"][lang]))  # a question gets its answer
    said = {
        "en": "The extra charge is {} SAR of roaming.",
        "ar": "الرسوم الإضافية {} ريال للتجوال.",
    }
    reply, *_ = env.step(said[lang].format(f"{float(answer):.2f}"))
    # The Arabic sentence is taken for a wrap-up (as "that is all"): answered, so satisfied.
    assert reply in bank["explained"][lang] + (bank["satisfied"][lang] if lang == "ar" else [])
    # Once answered, a statement is no longer met with the question.
    reply, *_ = env.step(guesses[1])
    assert not reply.startswith(tuple(bank["unanswered"][lang]))


def test_a_change_request_is_not_met_with_the_question_again():
    """contact_update asks for a change, not a question: a statement is unclear, as before."""
    env = telcoenv.make("contact_update", domain="bss", embedder=None)
    env.reset(seed=2)
    reply, *_ = env.step("Your line is active and on a postpaid plan.")
    assert not reply.startswith(tuple(customer.phrases()["unanswered"]["en"]))
