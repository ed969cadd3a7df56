"""The answer matcher judges what an answer says, not its form: every rule of
telcoenv/metrics/answers.py (and docs/customer_care.md#how-answers-are-judged) both ways, in
English and Arabic, with the BSS vocabulary and without one, and as properties."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from telcoenv.domains.bss import bss_domain
from telcoenv.domains.bss.generator import payment_failures, products
from telcoenv.metrics.answers import Answer, AnswerKind, AnswerVocabulary, answers_match, is_id

CARE = bss_domain().answer_vocabulary
REASONS = [f.reason for f in payment_failures()]
PLANS = [p["plan_id"] for p in products()["plans"]]
ADDONS = [a["addon_id"] for a in products()["addons"]]


def _accepted(submitted: str, gold: str, vocabulary: AnswerVocabulary | None = CARE) -> None:
    assert answers_match(submitted, gold, vocabulary=vocabulary), (submitted, gold)


def _refused(submitted: str, gold: str, vocabulary: AnswerVocabulary | None = CARE) -> None:
    assert not answers_match(submitted, gold, vocabulary=vocabulary), (submitted, gold)


# --- ids --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("submitted", "gold"),
    [
        ("YOUTH-25", "YOUTH-25"),
        ("youth-25", "YOUTH-25"),
        ("YOUTH 25", "YOUTH-25"),
        ("youth_25", "YOUTH-25"),
        ("Youth 25", "YOUTH-25"),  # its display name
        ("I recommend Youth 25 (79 SAR a month)", "YOUTH-25"),  # its numbers do not count
        ("I recommend YOUTH-25 (Youth 25, 79 SAR a month).", "YOUTH-25"),  # named again
        ("أنصحك بباقة الشباب ٢٥", "YOUTH-25"),  # Arabic name, Arabic-Indic digits, proclitic
        ("أنصحك بباقة YOUTH-25 بسعر ٧٩ ريالاً", "YOUTH-25"),
        ("Postpaid Essential", "POST-ESSENTIAL"),
        ("The cheapest plan that fits is Postpaid Essential.", "POST-ESSENTIAL"),
        ("باقة الفاتورة الأساسية", "POST-ESSENTIAL"),
        ("Europe Roaming 14 days", "ROAM-EU-14"),
        ("فعّل باقة تجوال أوروبا ١٤ يوماً", "ROAM-EU-14"),
        ("Take YOUTH-25 and add the DATA-5GB coupon", "YOUTH-25"),  # an add-on: another kind
        ("I would not take Postpaid Plus: Youth 25 is cheaper", "YOUTH-25"),  # negated: none
    ],
)
def test_an_id_named_once_as_a_whole_token_or_by_its_name_matches(submitted, gold):
    _accepted(submitted, gold)


@pytest.mark.parametrize(
    ("submitted", "gold"),
    [
        ("SENIOR-25", "YOUTH-25"),  # near misses
        ("POST-25", "YOUTH-25"),
        ("YOUTH-2", "YOUTH-25"),
        ("YOUTH-250", "YOUTH-25"),
        ("X-YOUTH-25", "YOUTH-25"),
        ("YOUTH-25-X", "YOUTH-25"),
        ("25", "YOUTH-25"),  # an id is never a number
        ("25 GB", "YOUTH-25"),
        ("I recommend POST-25", "YOUTH-25"),
        ("Youth 250", "YOUTH-25"),
        ("YOUTH-25 or POST-PLUS", "YOUTH-25"),  # candidates
        ("Youth 25 or Postpaid Plus", "YOUTH-25"),
        ("Move from Postpaid Essential to Youth 25", "YOUTH-25"),  # another plan named
        ("YOUTH-25 or POST-25", "YOUTH-25"),  # an id of its shape that no plan has
        ("باقة الشباب ٢٥ أو باقة الفاتورة بلس", "YOUTH-25"),
        ("باقة الشباب", "YOUTH-25"),
        ("I would not recommend YOUTH-25", "YOUTH-25"),
        ("Postpaid Plus", "POST-ESSENTIAL"),
        ("Essential", "POST-ESSENTIAL"),
        ("", "YOUTH-25"),
    ],
)
def test_a_near_miss_a_number_or_a_list_of_candidates_is_refused(submitted, gold):
    _refused(submitted, gold)


def test_ids_without_a_vocabulary_are_whole_tokens_named_by_their_spelling():
    for submitted in ("youth 25", "I recommend YOUTH-25.", "YOUTH_25", "وYOUTH-25"):
        _accepted(submitted, "YOUTH-25", None)
    for submitted in ("SENIOR-25", "25", "YOUTH-2", "YOUTH-25 or POST-25", ""):
        _refused(submitted, "YOUTH-25", None)
    _refused("Postpaid Essential", "POST-ESSENTIAL", None)  # names are the vocabulary's
    for submitted in ("ADD-RM-GCC", "add-rm-gcc", "ADD RM GCC", "It is add_rm_gcc."):
        _accepted(submitted, "ADD-RM-GCC", None)
    for submitted in ("ADD-RM", "ADD-RM-GCC-2", "ADD-RM-GCC or ADD-RM-EU"):
        _refused(submitted, "ADD-RM-GCC", None)
    _accepted("Invoice INV000123 is the duplicate", "INV000123", None)
    _accepted("الفاتورة INV000123 مكررة", "INV000123", None)
    for submitted in ("INV00012", "INV000123 or INV000456", "123", "INV 000123"):
        _refused(submitted, "INV000123", None)
    _accepted("INV000123 on account A123456", "INV000123", None)  # another id's shape


def test_is_id():
    assert all(map(is_id, ("YOUTH-25", "POST-ESSENTIAL", "ADD-RM-GCC", "INV000123", "A1")))
    assert not any(map(is_id, ("card expired", "343.8", "25", "-25", "expired", "2026-11")))


# --- numbers ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("submitted", "gold"),
    [
        ("343.8", "343.8"),
        ("The extra charge is 343.80 SAR", "343.8"),
        ("SAR 1,234.5", "1234.50"),
        ("ر.س ١٢٣٫٤", "123.4"),
        ("المبلغ الإضافي ٣٤٣٫٨٠ ريال", "343.8"),
        ("343.80 SAR (343.8)", "343.8"),  # the same number twice: one number
        ("The YOUTH-25 line used 22.83 GB a month", "22.83"),  # an id's digits are no number
        ("Invoice INV1234 was charged 343.80", "343.8"),
    ],
)
def test_a_text_stating_one_number_matches_it(submitted, gold):
    _accepted(submitted, gold)
    _accepted(submitted, gold, None)


@pytest.mark.parametrize(
    ("submitted", "gold"),
    [
        ("117", "117.2"),
        ("117.21", "117.2"),
        ("117.2 or 234.4", "117.2"),  # two different numbers
        ("in 2026-11 it was 343.80", "343.8"),  # a date is numbers too
        ("about 2 or 3", "2"),
        ("between 2-3 GB", "2"),
        ("Youth 25 costs 343.80", "343.8"),  # a name's numbers count for a number
        ("the card expired", "343.8"),
    ],
)
def test_a_text_stating_two_numbers_or_another_matches_none(submitted, gold):
    _refused(submitted, gold)
    _refused(submitted, gold, None)


# --- texts --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("submitted", "gold"),
    [
        ("card expired", "card expired"),
        ("The card expired.", "card expired"),
        ("Your card has expired", "card expired"),
        ("It failed because the card had expired", "card expired"),
        ("Your card ending in 4821 has expired.", "card expired"),
        ("The card's expiry date has passed.", "card expired"),
        ("Reason: card expiry.", "card expired"),
        ("انتهت صلاحية بطاقتك", "card expired"),
        ("فشل الدفع لأن بطاقتك منتهية الصلاحية.", "card expired"),
        ("insufficient funds", "insufficient funds"),
        ("There were not enough funds in the account.", "insufficient funds"),
        ("The card has not expired; the funds were insufficient.", "insufficient funds"),
        ("الرصيد في حسابك غير كافٍ", "insufficient funds"),
        ("bank declined (do not honour)", "bank declined (do not honour)"),
        ("Your bank declined the payment (do not honour).", "bank declined (do not honour)"),
        ("رفض البنك المصدر للبطاقة عملية الدفع", "bank declined (do not honour)"),
        ("3-D Secure authentication failed", "3-D Secure authentication failed"),
        ("The payment failed 3-D Secure verification.", "3-D Secure authentication failed"),
        ("فشلت المصادقة الثلاثية للدفع", "3-D Secure authentication failed"),
        ("card reported lost", "card reported lost"),
        ("The card was reported lost, so it is blocked.", "card reported lost"),
        ("تم الإبلاغ عن فقدان البطاقة", "card reported lost"),
        ("The payment exceeded the card's limit.", "spending limit exceeded"),
        ("تجاوزت العملية حد الإنفاق للبطاقة", "spending limit exceeded"),
        ("The CVV entered was wrong.", "incorrect security code (CVV)"),
        ("رمز الأمان (CVV) غير صحيح", "incorrect security code (CVV)"),
        ("Your direct debit mandate was cancelled.", "direct debit mandate cancelled"),
        ("تم إلغاء تفويض الخصم المباشر", "direct debit mandate cancelled"),
        ("The bank's system was down and the request timed out.", "issuer unavailable"),
        ("البنك المصدر غير متاح", "issuer unavailable"),
        ("The bank flagged it as suspected fraud.", "suspected fraud"),
        ("اشتباه في عملية احتيال", "suspected fraud"),
    ],
)
def test_a_sentence_stating_the_reason_matches(submitted, gold):
    _accepted(submitted, gold)


@pytest.mark.parametrize(
    ("submitted", "gold"),
    [
        ("card expired or insufficient funds", "card expired"),  # two reasons
        ("card expired or insufficient funds", "insufficient funds"),
        ("انتهت صلاحية البطاقة أو الرصيد غير كافٍ", "card expired"),
        ("The card has not expired.", "card expired"),  # negated
        ("Your card isn't expired", "card expired"),
        ("البطاقة ليست منتهية الصلاحية", "card expired"),
        ("insufficient funds", "card expired"),  # another reason
        ("The card was reported lost.", "card expired"),
        ("The payment failed.", "card expired"),  # no reason
        ("", "card expired"),
    ],
)
def test_two_reasons_a_negation_or_another_reason_is_refused(submitted, gold):
    _refused(submitted, gold)


def test_a_text_without_a_vocabulary_must_equal_the_gold_once_normalised():
    _accepted("Card expired.", "card expired", None)
    _accepted("CARD   EXPIRED", "card expired", None)
    _accepted("POST-PLUS", "post plus", None)
    _refused("Your card has expired", "card expired", None)
    _refused("card expired or insufficient funds", "card expired", None)


# --- the vocabulary -----------------------------------------------------------------------------


def test_the_care_vocabulary_is_the_data_files():
    assert [k.name for k in CARE.kinds] == ["plan", "addon", "failure_reason"]
    assert [a.value for a in CARE.kind("plan").answers] == PLANS
    assert [a.value for a in CARE.kind("addon").answers] == ADDONS
    assert [a.value for a in CARE.kind("failure_reason").answers] == REASONS
    essential = next(a for a in CARE.kind("plan").answers if a.value == "POST-ESSENTIAL")
    assert essential.en == ("Postpaid Essential",) and essential.ar == ("باقة الفاتورة الأساسية",)
    assert CARE is bss_domain().answer_vocabulary
    with pytest.raises(KeyError, match="no answer kind 'tariff'"):
        CARE.kind("tariff")


def test_every_answer_matches_by_each_of_its_names_and_no_other():
    """Each plan and add-on by its id and its English and Arabic names, each reason by its
    stored text alone and in a sentence: it matches itself and no other answer of its kind."""
    for name in ("plan", "addon", "failure_reason"):
        answers = CARE.kind(name).answers
        for answer in answers:
            said = [answer.value, f"The answer is: {answer.value}."]
            if name != "failure_reason":
                said += [*answer.en, *answer.ar]
            for text in said:
                assert [
                    a.value for a in answers if answers_match(text, a.value, vocabulary=CARE)
                ] == [answer.value], text


def test_a_vocabulary_refuses_a_duplicate_or_an_empty_form():
    with pytest.raises(ValueError, match="listed twice"):
        AnswerKind("plan", (Answer("A-1"), Answer("a-1")))
    with pytest.raises(ValueError, match="empty"):
        AnswerKind("plan", (Answer("A-1", en=("...",)),))
    with pytest.raises(ValueError, match="negative"):
        AnswerKind("reason", (), words_apart=-1)
    with pytest.raises(ValueError, match="listed twice"):
        AnswerVocabulary((AnswerKind("plan", ()), AnswerKind("plan", ())))


def test_a_longer_name_claims_its_words():
    """A name inside another answer's name is not named by it ("Postpaid Plus" does not name a
    plan called "Postpaid")."""
    plans = AnswerKind(
        "plan", (Answer("POST-1", en=("Postpaid",)), Answer("POST-2", en=("Postpaid Plus",)))
    )
    vocabulary = AnswerVocabulary((plans,))
    _accepted("I recommend Postpaid Plus", "POST-2", vocabulary)
    _refused("I recommend Postpaid Plus", "POST-1", vocabulary)
    _refused("Postpaid or Postpaid Plus", "POST-2", vocabulary)


# --- properties ---------------------------------------------------------------------------------

# Words that name no answer, state no number or id and negate nothing.
FILLER = st.sampled_from(
    (
        *("hello", "dear", "customer", "thanks", "for", "waiting", "we", "checked", "your"),
        *("account", "records", "today", "the", "answer", "is", "here", "result", "kind"),
        *("regards", "team", "please", "see", "below", "as", "requested", "I", "looked", "into"),
        *("مرحباً", "عزيزي", "العميل", "شكراً", "لانتظارك", "راجعنا", "سجلات", "حسابك", "اليوم"),
        *("النتيجة", "هي", "كما", "طلبت", "مع", "التحية", "فريق", "الخدمة"),
    )
)
FILLERS = st.lists(FILLER, max_size=8).map(" ".join)
PUNCTUATION = st.sampled_from(("", ".", ":", ",", " -", "!"))
CONNECTORS = st.sampled_from((" or ", " and ", ", ", " / ", " أو ", " و", " then "))
# How an answer of each kind may be said in a sentence (a reason: its phrasings).
SAID_REASONS = {
    "card expired": ("card expired", "the card has expired", "انتهت صلاحية البطاقة"),
    "insufficient funds": ("insufficient funds", "not enough funds", "الرصيد غير كاف"),
    "bank declined (do not honour)": (
        "bank declined (do not honour)",
        "the bank declined it",
        "رفض البنك الدفع",
    ),
    "3-D Secure authentication failed": (
        "3-D Secure authentication failed",
        "3-D Secure failed",
        "فشلت المصادقة",
    ),
    "card reported lost": ("card reported lost", "the card was reported lost", "البطاقة مفقودة"),
    "spending limit exceeded": ("spending limit exceeded", "over its limit", "تجاوز حد الإنفاق"),
    "incorrect security code (CVV)": ("incorrect security code (CVV)", "a wrong CVV", "رمز الأمان"),
    "direct debit mandate cancelled": (
        "direct debit mandate cancelled",
        "the mandate was cancelled",
        "ألغي التفويض",
    ),
    "issuer unavailable": ("issuer unavailable", "the bank was unavailable", "البنك غير متاح"),
    "suspected fraud": ("suspected fraud", "flagged as fraud", "اشتباه احتيال"),
}
assert set(SAID_REASONS) == set(REASONS)


def _said(kind: str, value: str) -> st.SearchStrategy[str]:
    if kind == "failure_reason":
        return st.sampled_from(SAID_REASONS[value])
    answer = next(a for a in CARE.kind(kind).answers if a.value == value)
    spellings = (value, value.lower(), value.replace("-", " "), *answer.en, *answer.ar)
    return st.sampled_from(spellings)


@st.composite
def two_answers_of_a_kind(draw: st.DrawFn) -> tuple[str, str, str]:
    kind = draw(st.sampled_from(("plan", "addon", "failure_reason")))
    first, second = draw(
        st.lists(
            st.sampled_from([a.value for a in CARE.kind(kind).answers]),
            min_size=2,
            max_size=2,
            unique=True,
        )
    )
    text = (
        draw(FILLERS)
        + " "
        + draw(_said(kind, first))
        + draw(CONNECTORS)
        + draw(_said(kind, second))
        + draw(PUNCTUATION)
        + " "
        + draw(FILLERS)
    )
    return text, first, second


def test_a_negation_inside_a_stated_form_negates_no_id_after_it():
    """ "غير" (un-) is a word of "باقة الفاتورة غير المحدودة" (the unlimited postpaid plan): it
    does not negate the id named next, so the text names two plans and matches neither (found
    by hypothesis in a CI run)."""
    text = " باقة الفاتورة غير المحدودة / PRE-STARTER "
    _refused(text, "POST-UNLIMITED")
    _refused(text, "PRE-STARTER")
    _accepted("باقة الفاتورة غير المحدودة", "POST-UNLIMITED")


@settings(max_examples=300, deadline=None)
@given(two_answers_of_a_kind())
def test_a_text_naming_two_answers_of_a_kind_matches_neither(case):
    text, first, second = case
    assert not answers_match(text, first, vocabulary=CARE), text
    assert not answers_match(text, second, vocabulary=CARE), text


# Ids: a letter first, letters and digits joined by - or _ (the vocabulary's and others).
IDS = st.one_of(
    st.sampled_from([*PLANS, *ADDONS, "ADD-RM-GCC", "INV000123"]),
    st.from_regex(
        re.compile(r"[A-Z]{1,6}(?:[-_][A-Z0-9]{1,5}){1,3}|[A-Z]{1,4}[0-9]{3,8}"), fullmatch=True
    ),
)


@st.composite
def an_id_in_filler(draw: st.DrawFn) -> tuple[str, str]:
    gold = draw(IDS)
    said = draw(st.sampled_from((gold, gold.lower(), re.sub(r"[-_]", " ", gold))))
    return f"{draw(FILLERS)} {said}{draw(PUNCTUATION)} {draw(FILLERS)}", gold


@settings(max_examples=300, deadline=None)
@given(an_id_in_filler(), st.booleans())
def test_an_id_in_filler_sentences_matches(case, with_vocabulary):
    text, gold = case
    assert answers_match(text, gold, vocabulary=CARE if with_vocabulary else None), text


_TO_ARABIC = str.maketrans("0123456789.", "٠١٢٣٤٥٦٧٨٩٫")


@st.composite
def a_number_in_filler(draw: st.DrawFn) -> tuple[str, str]:
    cents = draw(st.integers(0, 10_000_000))
    value = cents / 100
    said = draw(
        st.sampled_from(
            (
                f"{value:.2f}",
                f"{value:.2f}".rstrip("0").rstrip("."),
                f"SAR {value:,.2f}",
                f"{value:.2f} SAR",
                f"{value:.2f} ريال",
                f"{value:.2f} GB",
                f"{value:.2f}".translate(_TO_ARABIC) + " ريال",
            )
        )
    )
    gold = draw(st.sampled_from((f"{value:.2f}", repr(value))))
    return f"{draw(FILLERS)} {said}{draw(PUNCTUATION)} {draw(FILLERS)}", gold


@settings(max_examples=300, deadline=None)
@given(a_number_in_filler(), st.booleans())
def test_a_number_in_filler_sentences_matches(case, with_vocabulary):
    text, gold = case
    assert answers_match(text, gold, vocabulary=CARE if with_vocabulary else None), text
