"""The written care policy (``policy.yaml``, ``handbook.py``): its figures are the products'
figures, every care intent's chain follows rules the handbook writes (and every rule maps to
the intents that depend on it), search finds the rule a question needs in both languages,
the reading tools refuse bad input with the way on, and a change a rule allows is not
collateral while one it does not allow still is."""

from __future__ import annotations

import json
import re
import sys
from html.parser import HTMLParser

import pytest

from telcoenv.domains import get_domain
from telcoenv.domains.bss.catalogue import products
from telcoenv.domains.bss.handbook import (
    HANDBOOK,
    SNIPPET,
    document,
    handbook,
    permitted_calls,
    published_id,
    rules,
    terms,
)
from telcoenv.domains.bss.tools import TOOLS
from telcoenv.domains.bss.verification import SESSION_TOOLS
from telcoenv.errors import ToolError
from tests.conftest import gold_actions, make_env, play, submit, tool_call

DOMAIN = get_domain("bss")
INTENTS = DOMAIN.catalog.intents
WRITES = DOMAIN.write_tools


def _text(page_id: str, language: str) -> str:
    return " ".join(s.text for s in handbook().pages[page_id].sections[language])


# --- one source of truth -----------------------------------------------------------------------


@pytest.mark.parametrize("language", ["en", "ar"])
def test_the_handbook_states_the_products_figures(language):
    catalogue, text = products(), _text(HANDBOOK, language)
    assert (
        f"{catalogue['vat_rate'] * 100:g} ٪" in text or f"{catalogue['vat_rate'] * 100:g} %" in text
    )
    assert f"{catalogue['policy']['credit_authority']:.2f}" in text
    assert f"{catalogue['billing']['family_member_fee']:.2f}" in text
    for number in (
        catalogue["policy"]["payment_attempts"],
        catalogue["billing"]["suspend_after_days"],
        catalogue["billing"]["payment_terms_days"],
        *catalogue["policy"]["commitment"]["months"],
    ):
        assert re.search(rf"(?<!\d){number}(?!\d)", text), number
    for zone, rate in catalogue["roaming_payg_per_gb"].items():
        assert f"{zone} {rate:.2f}" in text
    assert "{" not in text and "}" not in text  # every figure filled


def test_the_roaming_rule_puts_every_destination_in_its_zone():
    text = _text(HANDBOOK, "en")
    zones = re.findall(r"(GCC|EUROPE|WORLD) \(([^)]*)\)", text)
    listed = {
        country.strip(): zone
        for zone, names in zones
        for country in names.removeprefix("any other country, such as ").split(",")
    }
    assert listed == products()["destinations"]


def test_the_catalogue_lists_every_plan_and_add_on_at_its_price():
    text = _text("product-catalogue", "en")
    vat = products()["vat_rate"]
    for plan in products()["plans"]:
        assert f"({plan['plan_id']}): {plan['price']:.2f} SAR" in text
        assert f"{plan['price'] * (1 + vat):.2f} with VAT" in text
    for addon in products()["addons"]:
        assert f"({addon['addon_id']})" in text and f"{addon['price']:.2f} SAR" in text


def test_the_superseded_edition_states_the_rules_of_its_day():
    old = _text("care-handbook-2019", "en")
    assert "VAT at 5 %" in old and "100.00" in old
    page = handbook().pages["care-handbook-2019"]
    assert page.status == "superseded" and "superseded" in page.edition.en


# --- every rule maps to the intents that depend on it ------------------------------------------


def test_every_change_and_identity_check_of_a_gold_chain_follows_a_listed_rule():
    written = rules()
    for intent in INTENTS:
        assert intent.policy, f"{intent.key} lists no rule"
        covered = {tool for rule in intent.policy for tool in written[rule].tools}
        for step in intent.gold_chain:
            if step.tool in WRITES or step.tool in SESSION_TOOLS:
                assert step.tool in covered, (intent.key, step.tool)


def test_every_question_names_the_rule_that_says_how_to_answer_it():
    written = rules()
    for intent in INTENTS:
        if intent.answer is not None:
            assert any(written[rule].answers for rule in intent.policy), intent.key


def test_every_rule_is_followed_by_an_intent_or_holds_in_every_conversation():
    followed: dict[str, list[str]] = {}
    for intent in INTENTS:
        for rule in intent.policy:
            followed.setdefault(rule, []).append(intent.key)
    for rule_id, rule in rules().items():
        assert rule.general or followed.get(rule_id), f"{rule_id}: no intent depends on it"
    # The mapping, as docs/customer_care.md prints it.
    assert followed["identity.verify_first"] == [
        i.key for i in INTENTS if any(s.tool == "verify_identity" for s in i.gold_chain)
    ]


def test_the_docs_table_is_the_mapping():
    from telcoenv.datafiles import data_root

    doc = (data_root() / "docs" / "customer_care.md").read_text("utf-8")
    for rule_id in rules():
        followers = [i.key for i in INTENTS if rule_id in i.policy]
        row = next((line for line in doc.splitlines() if line.startswith(f"| `{rule_id}`")), None)
        assert row is not None, f"docs/customer_care.md has no row for {rule_id}"
        cells = row.split("|")
        assert [k for k in re.findall(r"[A-Z_]{4,}", cells[3])] == followers, rule_id


def test_a_bad_rule_list_is_refused_when_the_intents_load(tmp_path):
    from telcoenv.datafiles import data_root
    from telcoenv.domains.bss.blueprints import load_care_intents
    from telcoenv.errors import CatalogError

    text = (data_root() / "intents.yaml").read_text("utf-8")
    unknown = text.replace("policy: [identity.questions, payments.failure]", "policy: [no.such]")
    (tmp_path / "unknown.yaml").write_text(unknown, "utf-8")
    with pytest.raises(CatalogError, match=r"no rule 'no\.such'"):
        load_care_intents(tmp_path / "unknown.yaml")
    uncovered = text.replace(
        "policy: [identity.verify_first, contact.email, changes.consent]",
        "policy: [identity.verify_first, changes.consent]",
    )
    (tmp_path / "uncovered.yaml").write_text(uncovered, "utf-8")
    with pytest.raises(CatalogError, match="asks for update_contact"):
        load_care_intents(tmp_path / "uncovered.yaml")


# --- search and read ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "section"),
    [
        ("how much may I credit a customer in one call", "disputes"),
        ("customer charged twice, duplicate invoice", "disputes"),
        ("which roaming pack for a trip to Turkey", "addons"),
        ("which VAT rate do invoices add to catalogue prices", "billing"),
        ("average monthly data with a month not collected", "usage"),
        ("early change fee while the commitment runs", "plans"),
        ("check the caller's name and date of birth", "identity"),
        ("why did the payment fail", "payments"),
        ("الحد الأقصى للرصيد الدائن في المحادثة", "disputes"),
        ("باقة تجوال لرحلة إلى تركيا", "addons"),
        ("رسوم التغيير المبكر والالتزام", "plans"),
        ("التحقق من الاسم وتاريخ الميلاد", "identity"),
        ("متوسط استهلاك البيانات الشهري", "usage"),
    ],
)
def test_search_finds_the_section_in_force_that_answers(query, section):
    found = TOOLS["search_policy"](None, query=query)
    current = [r for r in found["results"] if r["status"] == "current"]
    assert current[0]["page_id"].removesuffix("-ar") == HANDBOOK
    assert current[0]["section_id"] == section
    arabic = re.search("[\u0600-\u06ff]", query) is not None
    assert all(r["page_id"].endswith("-ar") == arabic for r in found["results"])
    assert all(len(r["snippet"]) <= SNIPPET for r in found["results"])
    scores = [r["score"] for r in found["results"]]
    assert scores == sorted(scores, reverse=True)


def test_a_search_shows_which_pages_are_not_in_force():
    found = TOOLS["search_policy"](None, query="VAT rate on invoices")
    statuses = {r["page_id"]: r["status"] for r in found["results"]}  # English pages
    assert statuses["care-handbook-2019"] == "superseded" and statuses[HANDBOOK] == "current"


def test_bm25_scores_by_hand():
    # One query word: idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / mean)).
    import math

    index = handbook().indexes["en"]
    word = "coupon"
    i = next(n for n, s in enumerate(index.sections) if s.section_id == "addons")
    n = len(index.sections)
    df = sum(1 for c in index.counts if word in c)
    tf, length = index.counts[i][word], index.lengths[i]
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    expected = idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / index.mean))
    assert index.scores([word])[i] == pytest.approx(expected)
    assert terms("Coupons, the invoices") == ["coupon", "invoice"]


def test_nothing_matching_is_an_answer_with_the_way_on():
    found = TOOLS["search_policy"](None, query="zzzz qqqq")
    assert found["results"] == [] and "read_policy" in found["hint"]


@pytest.mark.parametrize(
    ("arguments", "kind", "says"),
    [
        ({"page_id": "no-such-page"}, "not_found", "pages: care-handbook"),
        ({"page_id": "no-such-page-ar"}, "not_found", "care-handbook-ar"),
        ({"page_id": HANDBOOK, "section_id": "nope"}, "not_found", "sections: identity"),
    ],
)
def test_read_policy_refuses_with_what_exists(arguments, kind, says):
    with pytest.raises(ToolError, match=says) as error:
        TOOLS["read_policy"](None, **arguments)
    assert error.value.kind == kind


def test_search_refuses_an_empty_query():
    with pytest.raises(ToolError, match="1-300 characters") as error:
        TOOLS["search_policy"](None, query="   ")
    assert error.value.kind == "bad_args"


@pytest.mark.parametrize("language", ["en", "ar"])
def test_every_section_reads_whole_within_the_output_bound(language):
    for name, page in handbook().pages.items():
        page_id = published_id(name, language)
        contents = TOOLS["read_policy"](None, page_id=page_id)
        assert [s["section_id"] for s in contents["sections"]] == [
            s.section_id for s in page.sections[language]
        ]
        for section in page.sections[language]:
            read = TOOLS["read_policy"](None, page_id=page_id, section_id=section.section_id)
            assert len(json.dumps(read, ensure_ascii=False)) <= 1500, (page_id, section)
            assert [r["text"] for r in read["rules"]] == [t for _, t in section.rules]


class _Checked(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.ids: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in ("meta", "html", "head", "body", "title"):
            self.open.append(tag)
        self.ids += [v for k, v in attrs if k == "id"]

    def handle_endtag(self, tag):
        if tag not in ("html", "head", "body", "title"):
            assert self.open.pop() == tag


@pytest.mark.parametrize("language", ["en", "ar"])
def test_pages_render_as_html_with_every_rule(language):
    for page_id, page in handbook().pages.items():
        page_html = document(page_id, language).html
        parser = _Checked()
        parser.feed(page_html)
        assert parser.open == []
        assert ('dir="rtl"' in page_html) == (language == "ar")
        for section in page.sections[language]:
            assert section.section_id in parser.ids
            assert all(rule_id in parser.ids for rule_id, _ in section.rules)


# --- what a rule allows is not collateral ------------------------------------------------------


def _balance_episode(seed: int):
    env = make_env("outstanding_balance", domain="bss")
    _, info = env.reset(seed=seed, options={"blueprint": "outstanding_balance_failed_payment"})
    return env, info["privileged"]


def _dispute(values, category="billing_dispute"):
    return [
        tool_call(
            "verify_identity",
            customer_id=values["customer_id"],
            full_name=values["full_name"],
            birth_date=values["birth_date"],
        ),
        tool_call(
            "open_care_ticket",
            customer_id=values["customer_id"],
            category=category,
            summary="The bill was issued twice; please cancel the copy.",
        ),
    ]


@pytest.mark.parametrize("seed", range(3))
def test_a_dispute_for_a_duplicate_found_in_a_balance_enquiry_is_allowed(seed):
    env, privileged = _balance_episode(seed)
    values = privileged["values"]
    info = play(
        env,
        [
            *gold_actions({"privileged": privileged}),
            *_dispute(values),
            submit("Outstanding Balance", "balance", privileged["gold_answer"]),
        ],
    )
    verdict = info["verification"]
    assert verdict["resolved"], verdict
    assert verdict["collateral_changes"] == []
    assert [c["table"] for c in verdict["permitted_changes"]] == ["tickets"]


@pytest.mark.parametrize(
    ("ask", "agreed"),
    [
        ("May I open a billing dispute for the duplicated invoice {invoice}?", True),
        ("May I open a billing dispute for the duplicated bill of {amount:.2f} SAR?", True),
        ("May I open a billing dispute for you?", False),  # "for what?"
    ],
)
def test_the_caller_agrees_to_the_dispute_of_a_duplicate_named_by_its_invoice(ask, agreed):
    """A caller who only asked for their balance agrees to a dispute of the duplicate when the
    request names the invoice or its amount (money back is welcome), and asks what exactly
    when it names neither; the dispute, then the balance told, resolves the episode."""
    env = make_env("outstanding_balance", domain="bss", require_approval=True)
    options = {"blueprint": "outstanding_balance_failed_payment"}
    _, info = env.reset(seed=0, options=options)
    privileged = info["privileged"]
    setup = env.unwrapped.episode.setup
    facts = setup.truth.facts
    question = ask.format(invoice=facts["duplicate_invoice"], amount=facts["duplicate_amount"])
    assert DOMAIN.asks_approval(question)
    assert DOMAIN.consent(setup, question).agreed is agreed
    balance = f"Your balance is {float(privileged['gold_answer']):.2f} SAR."
    info = play(
        env,
        [
            *gold_actions({"privileged": privileged}),
            question,
            *_dispute(privileged["values"]),
            balance,  # the last amount told is the answer
            submit("Outstanding Balance", "balance", privileged["gold_answer"]),
        ],
    )
    verdict = info["verification"]
    assert verdict["resolved"], verdict
    assert [c["table"] for c in verdict["permitted_changes"]] == ["tickets"]


def test_a_ticket_the_policy_does_not_ask_for_is_still_collateral():
    env, privileged = _balance_episode(0)
    info = play(
        env,
        [
            *gold_actions({"privileged": privileged}),
            *_dispute(privileged["values"], "other"),
            submit("Outstanding Balance", "balance", privileged["gold_answer"]),
        ],
    )
    verdict = info["verification"]
    assert not verdict["resolved"] and verdict["permitted_changes"] == []
    assert [c["table"] for c in verdict["collateral_changes"]] == ["tickets"]


def test_a_rule_permits_its_calls_only_when_the_episode_has_its_value():
    from telcoenv.domains.bss.blueprints import CARE_EXAMPLE_VALUES

    calls = permitted_calls(CARE_EXAMPLE_VALUES)
    assert [c.tool for c in calls] == ["verify_identity", "open_care_ticket"]
    assert calls[1].arguments["category"] == "billing_dispute"
    assert permitted_calls({**CARE_EXAMPLE_VALUES, "duplicate_amount": None}) == []


def test_without_a_duplicate_a_dispute_is_collateral():
    env = make_env("outstanding_balance", domain="bss")
    _, info = env.reset(seed=0, options={"blueprint": "outstanding_balance_heavy_user"})
    privileged = info["privileged"]
    info = play(
        env,
        [
            *gold_actions({"privileged": privileged}),
            *_dispute(privileged["values"]),
            submit("Outstanding Balance", "balance", privileged["gold_answer"]),
        ],
    )
    assert not info["verification"]["resolved"]
    assert info["verification"]["collateral_changes"]


def test_a_second_dispute_of_a_duplicate_charge_is_collateral():
    env = make_env("duplicate_charge", domain="bss")
    _, info = env.reset(seed=0)
    privileged = info["privileged"]
    gold = gold_actions({"privileged": privileged})
    info = play(
        env,
        [*gold, gold[-1], submit("Duplicate Charge", "dispute", privileged["gold_answer"])],
    )
    verdict = info["verification"]
    assert not verdict["resolved"] and len(verdict["collateral_changes"]) == 1


# --- the pages outside an episode: telcoenv policy -----------------------------------------------


def test_the_cli_lists_prints_and_writes_the_pages(tmp_path, capsys):
    from telcoenv.cli import main

    assert main(["policy"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listed] == list(DOMAIN.policy_pages())
    assert any("superseded" in line for line in listed)
    assert main(["policy", "care-handbook-ar"]) == 0
    text = capsys.readouterr().out
    assert "دليل خدمة العملاء" in text and "[identity.verify_first]" in text
    assert main(["policy", "--html", str(tmp_path)]) == 0
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == sorted(f"{page}.html" for page in DOMAIN.policy_pages())
    assert 'dir="rtl"' in (tmp_path / "care-handbook-ar.html").read_text("utf-8")


def _pdf_text(body: bytes) -> tuple[int, str]:
    """The pages and the text a PDF reader (pypdf) takes out of a PDF."""
    import io

    import pypdf

    reader = pypdf.PdfReader(io.BytesIO(body))
    return len(reader.pages), "\n".join(page.extract_text() for page in reader.pages)


def _found(title: str, language: str, text: str) -> bool:
    """Whether a PDF's text has a title: whole in English, each Arabic word in Arabic (a Latin
    or numeric run beside them, as "(1/2)", comes out in visual order, its brackets mirrored)."""
    if language == "en":
        return " ".join(title.split()) in text
    return all(word in text for word in re.sub(r"[^\u0600-\u06FF ]", " ", title).split())


@pytest.mark.slow
@pytest.mark.parametrize("language", ["en", "ar"])
def test_every_page_reads_back_from_its_pdf_with_every_section_and_rule(language):
    """A PDF reader finds every section's title and every rule id of every page in its PDF (the
    text is embedded, Arabic shaped and in reading order); the same page gives the same bytes."""
    for page_id in handbook().pages:
        page = document(page_id, language)
        body = page.pdf()
        assert body.startswith(b"%PDF-") and body == page.pdf()
        count, text = _pdf_text(body)
        flat = " ".join(text.split())
        assert count >= 1 and _found(page.title, language, flat), page_id
        for section in page.sections:
            assert _found(section.title, language, flat), (page_id, section.section_id)
            for rule_id, rule in section.paragraphs:
                assert rule_id in flat, (page_id, rule_id)
                if language == "en":  # whole (a wrapped Arabic line mixes the runs' order)
                    assert " ".join(rule.split()) in flat, (page_id, rule_id)


def test_the_cli_writes_the_pages_as_pdf_and_names_the_missing_extra(tmp_path, capsys, monkeypatch):
    from telcoenv.cli import main

    assert main(["policy", "--pdf", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"{page}.pdf" for page in DOMAIN.policy_pages()
    )
    count, text = _pdf_text((tmp_path / "care-handbook-ar.pdf").read_bytes())
    assert count >= 1 and "دليل خدمة العملاء" in text
    capsys.readouterr()
    monkeypatch.setitem(sys.modules, "fpdf", None)  # as if the extra were not installed
    assert main(["policy", "--pdf", str(tmp_path / "again")]) == 2
    err = capsys.readouterr().err
    assert 'pip install "telcoenv[pdf]"' in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["policy", "no-such-page"], "unknown page 'no-such-page'; pages: care-handbook"),
        (["policy", "--domain", "network"], "the network domain cannot show a written policy"),
    ],
)
def test_a_cli_mistake_is_one_line(argv, says, capsys):
    from telcoenv.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_every_tool_a_rule_names_exists_and_its_permits_are_valid_calls():
    from telcoenv.domains.bss.blueprints import CARE_EXAMPLE_VALUES

    tools = DOMAIN.catalog.tools
    for rule in rules().values():
        assert set(rule.tools) <= set(tools), rule.rule_id
        if rule.permits is None:
            continue
        assert rule.permits.when in CARE_EXAMPLE_VALUES, rule.rule_id
        for call in permitted_calls(CARE_EXAMPLE_VALUES):
            spec = tools[call.tool]
            assert set(call.arguments) <= set(spec.parameters["properties"]), call
            assert set(spec.parameters.get("required", ())) <= set(call.arguments), call
