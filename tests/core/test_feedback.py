"""Errors a model can act on (issue 15, item 4, in part): every error observation keeps its JSON
type and message and adds one sentence, in the episode's language, saying what to do next."""

from __future__ import annotations

import json

import pytest

import telcoenv
from telcoenv import feedback
from telcoenv.feedback import NEXT_STEPS, next_step, silence_reply
from tests.conftest import ARABIC, HOSTILE_ACTIONS, make_env, tool_call


@pytest.mark.parametrize("lang", ["en", "ar"])
@pytest.mark.parametrize("domain", ["network", "bss"])
def test_an_empty_reply_is_answered_in_words_with_what_to_do_and_counted(lang, domain):
    """A model that went silent gets a conversation turn from the counterpart (not a JSON
    error it cannot act on), saying nothing came and what to do; the action is counted."""
    env = make_env("beam_misalignment" if domain == "network" else "bill_shock", domain=domain)
    env.reset(seed=1, options={"lang": lang})
    counterpart = env.unwrapped.domain.counterpart
    for empty in ({"role": "assistant", "content": ""}, {"content": "   "}, "", "\n"):
        observation, _, terminated, truncated, info = env.step(empty)
        assert observation == silence_reply(lang, counterpart) and not (terminated or truncated)
        assert not observation.startswith("{") and "submit_resolution" in observation
        assert bool(ARABIC.search(observation)) == (lang == "ar")
        record = env.trace.actions[-1]
        assert (record.kind, record.valid, record.error_kind) == ("invalid", False, "empty_action")
        assert info["action"]["error_type"] == "empty_action"
    assert info["invalid_actions"] == 4


@pytest.mark.parametrize("lang", ["en", "ar"])
@pytest.mark.parametrize(
    ("env_name", "domain", "call", "tool"),
    [
        (
            "bill_shock",
            "bss",
            {"name": "get_bill", "arguments": {"account_id": "A000000", "period": "2026-08"}},
            "get_customer",
        ),
        (
            "beam_misalignment",
            "network",
            {"name": "oss_query", "arguments": {"cell_id": "NR-URB-MACRO-000", "window": "1h"}},
            "oss_query",
        ),
    ],
)
def test_an_unknown_id_names_the_tool_that_lists_the_valid_ones(lang, env_name, domain, call, tool):
    env = make_env(env_name, domain=domain, lang=lang)
    env.reset(seed=1)
    error = json.loads(env.step(call)[0])["error"]
    assert error["type"] == "not_found" and tool in error["next"]
    assert bool(ARABIC.search(error["next"])) == (lang == "ar")


@pytest.mark.parametrize(
    ("intent", "domain"), [("coverage_hole", "network"), ("bill_shock", "bss")]
)
def test_every_error_says_what_to_do_next(intent, domain):
    env = make_env(intent, domain=domain, lang="ar", require_approval=True)
    env.reset(seed=4)
    actions = [
        *HOSTILE_ACTIONS,
        tool_call("no_such_tool"),
        tool_call("get_customer", customer_id="C999999"),
        tool_call("neighbor_audit", cell_id="NR-URB-MACRO-999"),
    ]
    errors = {}
    for action in actions:
        observation = env.step(action)[0]
        if observation.startswith("{") and '"error"' in observation:
            error = json.loads(observation)["error"]
            errors[error["type"]] = error
            assert error["message"]
            if error["type"] in NEXT_STEPS:
                assert ARABIC.search(error["next"]), error
    assert {"unknown_tool", "not_found"} <= set(errors)
    who = "المهندس" if domain == "network" else "العميل"  # the counterpart, named in Arabic
    assert who in errors["not_found"]["next"]


@pytest.mark.parametrize("empty", ["", None])
def test_an_empty_optional_argument_is_told_to_be_left_out(empty):
    """The 1.5B model filled update_contact's optional phone with "" four times over; the
    message says the argument is optional, and a required empty argument keeps the usual one."""
    env = make_env("contact_update", domain="bss")
    env.reset(seed=1)
    call = tool_call(
        "update_contact", customer_id="C000001", email="a@mail.example.sa", phone=empty
    )
    error = json.loads(env.step(call)[0])["error"]
    shown = '""' if empty == "" else "null"
    assert error["type"] == "invalid_arguments"
    assert (
        f"argument 'phone' is optional and was given empty ({shown}): leave it out"
        in (error["message"])
    )
    # The advice is to call again without it: "correct the argument" made the 1.5B model ask
    # the customer for a new phone number and set one nobody asked for.
    assert error["next"] == NEXT_STEPS["empty_optional"]["en"] and "leave out" in error["next"]
    required = json.loads(env.step(tool_call("update_contact", customer_id="", email="a@b.sa"))[0])
    assert "optional" not in required["error"]["message"]
    assert "customer_id" in required["error"]["message"]
    assert "get_customer" in required["error"]["next"]  # an empty id: where ids come from


def test_each_problem_is_named_once():
    """A null breaks both the type and the enum of create_ticket's optional team: the message
    named it twice, and the three problems shown left out a third argument."""
    env = make_env("beam_misalignment")
    env.reset(seed=1)
    call = tool_call("create_ticket", summary="x", severity="major", team=None, cell_id=None)
    message = json.loads(env.step(call)[0])["error"]["message"]
    assert message == (
        "invalid arguments for create_ticket: "
        "argument 'cell_id' is optional and was given empty (null): leave it out; "
        "argument 'team' is optional and was given empty (null): leave it out"
    )


def test_a_value_of_the_wrong_form_is_told_what_is_expected_all_problems_at_once():
    """The 1.5B model's first call: a made-up customer id and an empty optional phone. Both are
    named in one message, each id by its description (where it comes from), not by a regex."""
    env = make_env("contact_update", domain="bss")
    env.reset(seed=0)
    call = tool_call("update_contact", customer_id="1234567890", email="a@b", phone="")
    error = json.loads(env.step(call)[0])["error"]
    assert error["type"] == "invalid_arguments"
    assert error["message"] == (
        "invalid arguments for update_contact: "
        "argument 'customer_id': '1234567890' is not of the expected form "
        '(Customer id from get_customer, e.g. "C000000") '
        "('1234567890' has the form of 'msisdn', not of 'customer_id'); "
        "argument 'email': 'a@b' is not of the expected form "
        '(New email address, ASCII, e.g. "name@mail.example.sa"); '
        "argument 'phone' is optional and was given empty (\"\"): leave it out"
    )
    assert "[0-9]" not in error["message"]


@pytest.mark.parametrize("lang", ["en", "ar"])
def test_a_made_up_id_is_told_where_the_real_ids_come_from(lang):
    """The 1.5B model's first call again: "correct the argument" left it guessing (it passed the
    advice on to the customer). An id of the wrong form gets the advice of an unknown id, which
    names the tool that lists the real ones; the error keeps its type."""
    env = make_env("contact_update", domain="bss", lang=lang)
    env.reset(seed=0)
    made_up = tool_call("update_contact", customer_id="CUST-1", email="a@mail.example.sa")
    error = json.loads(env.step(made_up)[0])["error"]
    unknown = json.loads(env.step(tool_call("get_customer", customer_id="C999999"))[0])["error"]
    assert (error["type"], unknown["type"]) == ("invalid_arguments", "not_found")
    assert error["next"] == unknown["next"] and "get_customer" in error["next"]
    assert bool(ARABIC.search(error["next"])) == (lang == "ar")
    # Other values of the wrong form (an email, a month) keep the advice to correct them.
    for call in (
        tool_call("update_contact", customer_id="C000001", email="a@b"),
        tool_call("get_bill", account_id="A000001", period="August"),
    ):
        error = json.loads(env.step(call)[0])["error"]
        assert error["type"] == "invalid_arguments"
        assert error["next"] == NEXT_STEPS["invalid_arguments"][lang]


def test_a_call_in_another_shape_is_named_not_taken_for_silence():
    """``{"tool": ..., "args": ...}`` (another framework's call) is a malformed action that names
    its keys and the expected shape, not an empty message."""
    env = make_env("contact_update", domain="bss")
    env.reset(seed=1)
    observation = env.step({"tool": "get_customer", "args": {"msisdn": "1"}})[0]
    error = json.loads(observation)["error"]
    assert error["type"] == "malformed_action"
    assert "'args', 'tool'" in error["message"] and '"name": <tool>' in error["message"]
    assert env.trace.actions[-1].error_kind == "malformed_action"
    # An assistant message with only empty fields is still silence.
    silent = env.step({"role": "assistant", "content": None, "refusal": None, "tool_calls": []})
    assert silent[0] == silence_reply("en", env.unwrapped.domain.counterpart)


def test_a_crowded_settings_object_is_told_to_carry_only_the_changes():
    """The 1.5B model sent optimize_cell with all 19 parameters, three out of range, three times;
    the message now says to send only the parameters to change (one wrong value does not)."""
    env = make_env("beam_misalignment")
    env.reset(seed=1)
    crowded = {"tilt_deg": 2, "max_ue_per_tti": 100, "olla_bler_target_pct": 50}
    error = json.loads(env.step(tool_call("optimize_cell", cell_id="X", changes=crowded))[0])
    assert "put in 'changes' only the parameters you mean to change" in error["error"]["message"]
    single = json.loads(
        env.step(tool_call("optimize_cell", cell_id="X", changes={"max_ue_per_tti": 100}))[0]
    )
    assert "only the parameters" not in single["error"]["message"]


@pytest.mark.parametrize(
    "action",
    [
        "submit_resolution: The intent is PCI collision. The summary is ...",
        {"role": "assistant", "content": "**Submit_Resolution** intent: PCI collision"},
        {"content": '{"intent": "PCI Collision", "summary": "PCI changed on the cell"}'},
        '  submit_resolution(intent="PCI Collision", summary="...")',
        # A 1.5B model's reply, eight times in one episode (the tool's name as the intent).
        '```json\n{\n  "intent": "submit_resolution",\n  "summary": "PCI clash."\n}\n```',
        '```JSON {"intent": "PCI Collision", "summary": "PCI changed"}',  # the fence never closed
    ],
)
@pytest.mark.parametrize("lang", ["en", "ar"])
def test_a_submission_written_as_text_is_refused_not_sent_to_the_engineer(action, lang):
    env = make_env("pci_collision", lang=lang)
    env.reset(seed=2)
    before = env.unwrapped.episode.counterpart_messages
    observation, reward, terminated, truncated, info = env.step(action)
    error = json.loads(observation)["error"]
    assert error["type"] == "submission_as_text"
    assert "call the tool submit_resolution" in error["message"]
    assert "submit_resolution" in error["next"] and bool(ARABIC.search(error["next"])) == (
        lang == "ar"
    )
    assert env.unwrapped.episode.counterpart_messages == before
    assert info["invalid_actions"] == 1 and not terminated and not truncated


@pytest.mark.parametrize(
    "text",
    [
        "Before I call submit_resolution: which time window should I check?",
        "submitting the resolution now? Which cell is it?",
    ],
)
def test_a_message_that_only_mentions_the_submission_reaches_the_engineer(text):
    env = make_env("pci_collision")
    env.reset(seed=2)
    observation, *_ = env.step(text)
    assert not observation.startswith('{"error"')
    assert env.unwrapped.episode.counterpart_messages == 1


def test_an_object_without_an_intent_is_no_submission():
    env = make_env("pci_collision")
    env.reset(seed=2)
    observation, *_ = env.step({"content": '{"summary": "a summary and no intent"}'})
    assert env.unwrapped.episode.counterpart_messages == 1
    assert not observation.startswith('{"error"')


@pytest.mark.parametrize(
    ("env_name", "domain", "message", "tool"),
    [
        (
            "pci_collision",
            "network",
            "Please provide the output of the `kpi_timeseries` function call for the cell.",
            "kpi_timeseries",
        ),
        (
            "pci_collision",
            "network",
            "Please call the tool `device_cap_lookup` to check the device capabilities.",
            "device_cap_lookup",
        ),
        ("contact_update", "bss", "يرجى استدعاء get_customer برقمك", "get_customer"),
        (  # the error's advice passed on to the engineer (run s9d), answered "No, people are
            # still getting cut off" before
            "pci_collision",
            "network",
            "To resolve this issue, please correct the arguments in the `optimize_cell` function"
            " call. The `max_ue_per_tti` should be between 1 and 64.",
            "optimize_cell",
        ),
        (  # run s11a: the tool left unnamed, 9 of 18 replies of pci_collision en, answered
            # as questions about the time window ("Please look at the last 12 hours.")
            "pci_collision",
            "network",
            "To check NR-SUB-MACRO-857 over the last 12 hours, please call the tool with the"
            ' following arguments: {"cell_id": "NR-SUB-MACRO-857", "window": "12h"}',
            "",
        ),
        ("contact_update", "bss", "يرجى استدعاء الأداة بالوسائط التالية", ""),
    ],
)
@pytest.mark.parametrize("lang", ["en", "ar"])
def test_asked_to_run_the_agents_tool_the_counterpart_says_to_call_it(
    env_name, domain, message, tool, lang
):
    """A 1.5B model asked the engineer for its own tools' output for 8 steps of one episode
    ("Please provide the output of the `kpi_timeseries` function call ..."), each answered as a
    question about the time window; the counterpart has no tools and says so."""
    env = telcoenv.make(env_name, domain=domain, embedder=None, lang=lang)
    env.reset(seed=2)
    reply, _, _, _, info = env.step(message)
    assert reply == feedback.not_their_tool_reply(tool, lang)
    assert (tool or "tools") in reply if lang == "en" else (tool or "الأدوات") in reply
    assert bool(ARABIC.search(reply)) == (lang == "ar")
    assert info["engineer_messages"] == 1 and info["invalid_actions"] == 0


def test_the_agents_own_plan_or_approval_request_is_no_hand_over():
    env = telcoenv.make("pci_collision", embedder=None)
    env.reset(seed=2)
    for message in (
        "I will call kpi_timeseries next.",
        "May I run optimize_cell on the cell?",
        "I called the tool: the neighbour list shows a PCI clash.",
    ):
        reply, *_ = env.step(message)
        assert "the tools are yours" not in reply


@pytest.mark.parametrize(
    ("value", "form"), [("966536333041", "msisdn"), ("C000123", "customer_id"), ("X-1", None)]
)
def test_an_id_of_the_wrong_form_says_whose_form_it_has(value, form):
    """The 1.5B model passed the customer's line number as ``account_id`` after get_customer
    had listed the account: the error says the value is a line number (an msisdn)."""
    env = telcoenv.make("bill_shock", domain="bss", embedder=None)
    env.reset(seed=2)
    observation, *_ = env.step(tool_call("get_bill", account_id=value, period="2026-08"))
    message = json.loads(observation)["error"]["message"]
    note = f"({value!r} has the form of {form!r}, not of 'account_id')"
    assert (note in message) is (form is not None)
    assert "has the form of" in message or form is None


@pytest.mark.parametrize("lang", ["en", "ar"])
def test_a_line_number_given_as_an_id_is_told_to_look_the_ids_up_with_it(lang):
    """Recorded from Qwen2.5-Coder-1.5B (contact_update en, run s10b): the customer's line
    number as customer_id, five times, each told to ask the customer for their line number,
    which it had. An id that has the form of a line number is told to call get_customer with
    it; other made-up ids keep the advice of an unknown id."""
    env = make_env("contact_update", domain="bss", lang=lang)
    env.reset(seed=0)
    line = tool_call("update_contact", customer_id="966536333041", email="a@mail.example.sa")
    error = json.loads(env.step(line)[0])["error"]
    assert error["type"] == "invalid_arguments" and "msisdn" in error["next"]
    assert "get_customer" in error["next"] and bool(ARABIC.search(error["next"])) == (lang == "ar")
    unknown = json.loads(env.step(tool_call("get_customer", customer_id="C999999"))[0])["error"]
    assert error["next"] != unknown["next"]


def test_a_refined_advice_kind_falls_back_to_its_base_kind():
    assert next_step("not_found.cell_id", "en", "engineer") == next_step(
        "not_found", "en", "engineer"
    )
    assert next_step("no_such_kind.x", "en", "engineer") is None


@pytest.mark.parametrize("lang", ["en", "ar"])
@pytest.mark.parametrize(
    ("env_name", "domain", "call"),
    [
        ("pci_collision", "network", {"intent": "x", "summary": "y", "root cause": "z"}),
        ("contact_update", "bss", {"intent": "x", "summary": "y", "evidence": "z"}),
    ],
)
def test_arguments_a_tool_does_not_take_are_told_to_go_or_into_the_summary(
    lang, env_name, domain, call
):
    """Recorded from Qwen2.5-Coder-1.5B (pci_collision en, run s10b): submit_resolution with
    "root cause" and "evidence" beside intent and summary, told "Correct the argument the
    message names". Arguments the tool does not take, and nothing else wrong, get the advice
    to call again with only those it takes; other problems keep theirs."""
    env = make_env(env_name, domain=domain, lang=lang)
    env.reset(seed=0)
    error = json.loads(env.step(tool_call("submit_resolution", **call))[0])["error"]
    assert error["type"] == "invalid_arguments" and "intent, summary" in error["message"]
    assert error["next"] == NEXT_STEPS["unexpected_arguments"][lang]
    mixed = json.loads(env.step(tool_call("submit_resolution", intent="x", extra=1))[0])["error"]
    assert mixed["next"] == NEXT_STEPS["invalid_arguments"][lang]  # summary missing too
