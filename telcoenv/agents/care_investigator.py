"""An honest customer-care baseline: reads the intent from the customer's words and the account
data, asks the customer for what only they know, computes the answer from the BSS, and submits.

It plays the customer-care (BSS) domain only and never sees privileged information. What it
uses: the customer's opening and replies, the tool outputs, ``info["language"]`` and
``info["require_approval"]``, and the public catalogue through the domain registry (the
intents' labels and the tools' ``approval`` flags). It never reads ``info["privileged"]``, the
trace, the episode's ground truth or a phrase bank: the opening is read with the keyword cues
of :data:`CUES`, words of customer care written for this agent (with the documented openings
of ``intents.yaml`` and ``symptoms.yaml`` in view, as any developer would read them; the agent
does not load them). The episode runs in four stages:

1. **The opening.** The first cue of :data:`CUES` whose keyword groups all appear in the
   opening (matched as :func:`telcoenv.text.keyword_pattern` does: case- and Arabic-spelling-
   insensitive, at the start of a word) names one intent, or a *family* of intents that say the
   same thing and that the data or the customer tells apart (a bill higher than usual: a
   roaming charge or a duplicate invoice). No cue at all, or a family the data alone cannot
   tell apart (the symptom tier's "something about my bill", "a change on my account"): the
   customer is asked to say again what they need (a question they cannot answer with a fact,
   so they restate their request), and the reply is read with the cues; a reading narrower
   than the one before is kept.
   Ids the opening states are kept: a month ``YYYY-MM``, an email address, a plan id
   (capitals, a hyphen and more: ``POST-PLUS``).
2. **The customer.** One plain message, in the episode's language, asks for the line number
   and for what the candidates need that the BSS cannot tell: the trip (destination and date)
   for a roaming pack, how much data for a top-up, the monthly budget for a recommendation, the
   plan for a plan change and the new address for a contact update when the opening names
   none, the month when a bill or family question names none. The reply is read with regular
   expressions: the line number (9 to 15 digits), a date ``YYYY-MM-DD``, a month, a number
   before GB / SAR (or their Arabic), an email address, a plan id, a country (English or Arabic
   name). A reply without a line number gets the question once more.
3. **The data.** ``get_customer`` with the line number gives the customer id, age and segment,
   the account that holds the line, the line's payment type and its active add-ons. Then the
   reads the intent needs (its public gold chain in ``intents.yaml``), and the decision rules
   below choose among the candidates and compute the answer.
4. **The change and the submission.** Before the first change, the customer is asked for
   their full name and date of birth (read with :func:`read_identity`: capitalised Latin words
   or the Arabic words around them; a date as ``YYYY-MM-DD``, ``DD/MM/YYYY`` or ``15 March
   1988``, Arabic months too) and ``verify_identity`` checks them; a failed check is final
   (the customer would repeat the same details): the customer is told the details do not match
   and referred to a store, nothing is changed, and the summary says so. Then the change the
   customer asked for, and only that one,
   after asking their approval in a plain message when ``info["require_approval"]`` is set (a
   refused ``approval_required`` call is asked for and tried once more); then
   ``submit_resolution`` with the chosen intent's label in the episode's language, a short
   summary, and for a question the answer as the BSS states it.

Decision rules
--------------
* **Bill higher than usual** (bill shock or duplicate charge): ``get_bill`` of the month. Two or
  more invoices of the month for the same amount (a billing run that fired twice: the second has
  no items and was issued seconds later) is a *duplicate charge*: the answer is that amount
  (the invoice's total incl. VAT), and a ``billing_dispute`` ticket is opened naming both
  invoice ids; no credit (a credit is no part of a dispute until billing has checked it).
  Otherwise the month's ``roaming`` items are a *bill shock*: the answer is their amount as
  itemised (from ``amount_excl_vat_by_kind`` when the bill is summarised) with the VAT the
  invoice applies (its ``vat`` over its ``amount_excl_vat``): what the customer pays. Nothing
  is changed (pay-as-you-go roaming is a true charge).
* **Latest bill unpaid** (payment failure or outstanding balance): the customer's question
  tells them apart: *why* (why, went wrong, failed, ...) is a payment failure, *how much* (owe,
  balance, ...) an outstanding balance. When the opening says neither, the customer is asked
  to say again what they need, and their words are read again. ``get_payment_history``: a
  *payment failure*'s answer is the stored ``failure_reason`` of the latest payment that did
  not settle, word for word. An *outstanding balance* is the history's open invoices (issued,
  overdue or disputed), a month's double-fired copy (same amount) counted once, plus the credit
  notes (negative amounts: they reduce what is owed); a summarised history that left out a
  credit note is read again in full.
* **Data that will not cover the need** (data top-up or roaming pack): the customer is asked
  whether they travel. A trip (destination and date) is a *roaming pack*: the destination's
  zone is GCC for a GCC member state, EUROPE for a European country, WORLD otherwise (the zones
  ``list_addons`` offers); the cheapest pack of that zone sold to the line's payment type is
  subscribed from the trip's date. No trip is a *data top-up*: ``get_realtime_charges`` gives
  today's date (``as_of``) and the open billing cycle's usage so far, ``get_usage`` the cycle,
  and the cheapest data coupon sold to the line's payment type that holds the GB the customer
  asked for is subscribed from today.
* **The line's products** (add-on cancellation or plan change): words of removing
  (cancel, remove, no longer need) or of another plan decide; when neither, an active add-on on
  the caller's line makes it a *cancellation* and none a *plan change*. A cancellation cancels
  the line's active add-on (the subscription ``get_customer`` lists). A plan change reads the
  plan the customer named with the move's quote for the line (``get_plan`` with ``msisdn``: an
  early-change fee while a commitment runs, told with the price) and moves the line to it
  (``change_plan``).
* **Data use** (average, family, recommendation), told apart by the question: *average*
  (average), *family* (family, together, every line), *recommendation* (cheapest, budget);
  when the opening asks none of them, the customer is asked to say again what they need.
  The *average* is over the closed billing cycles of ``get_usage`` (12; the open cycle's usage
  so far is apart and left out) whose data was measured: ``null`` is a cycle not collected and
  is left out, ``0`` a cycle without use and is counted; the mean is rounded half up to the
  cent. A *recommendation* computes that average, then
  ``list_plans`` (postpaid, the customer's segment): among the plans the customer's age allows
  whose data covers the average (``null`` data: unlimited) and whose price incl. VAT is within
  the budget, the cheapest (none within the budget: the cheapest that covers the average).
  The answer is its plan id. *Family* usage is ``get_family_usage`` of the account and month:
  the members' data summed over those measured (``not_collected`` members left out).
* **Contact details**: ``update_contact`` of the customer with the new email address (from the
  opening, or asked for).

Only the caller's records are read: the test accounts and every other customer of the base are
never looked at. The agent is deterministic (no random draws), never raises on an odd
observation (a tool's error JSON is read as no output; anything unreadable ends the
investigation and submits what is known) and submits before the step budget runs out: the
last step of ``max_steps`` is the submission, and optional reads are skipped when the budget
is short.
"""

from __future__ import annotations

import calendar
import contextlib
import datetime as dt
import json
import re
from collections.abc import Generator, Iterable
from dataclasses import dataclass, field
from typing import Any

from telcoenv.agents.scripted import Action, GeneratorAgent
from telcoenv.domains import get_domain
from telcoenv.text import ARABIC_DIGITS, keyword_pattern, normalize
from telcoenv.tooling import RESERVED_SUBMIT

BILL_SHOCK = "BILL_SHOCK"
DUPLICATE_CHARGE = "DUPLICATE_CHARGE"
PAYMENT_FAILURE = "PAYMENT_FAILURE"
OUTSTANDING_BALANCE = "OUTSTANDING_BALANCE"
ROAMING_PACK = "ROAMING_PACK"
ADDON_CANCELLATION = "ADDON_CANCELLATION"
DATA_TOPUP = "DATA_TOPUP"
AVERAGE_DATA_USE = "AVERAGE_DATA_USE"
PLAN_RECOMMENDATION = "PLAN_RECOMMENDATION"
PLAN_CHANGE = "PLAN_CHANGE"
FAMILY_DATA = "FAMILY_DATA"
CONTACT_UPDATE = "CONTACT_UPDATE"
INTENTS = (
    BILL_SHOCK,
    DUPLICATE_CHARGE,
    PAYMENT_FAILURE,
    OUTSTANDING_BALANCE,
    ROAMING_PACK,
    ADDON_CANCELLATION,
    DATA_TOPUP,
    AVERAGE_DATA_USE,
    PLAN_RECOMMENDATION,
    PLAN_CHANGE,
    FAMILY_DATA,
    CONTACT_UPDATE,
)
USAGE_MONTHS = 12  # "over the last year": the months get_usage returns for an average


# --- reading the customer's words ----------------------------------------------------------------


@dataclass(frozen=True)
class Cue:
    """One rule of the opening: every keyword group has a keyword in the text (``any`` of the
    group, ``all`` groups), or the text matches ``pattern``. ``intents`` is one intent, or a
    family the data or the customer tells apart."""

    intents: tuple[str, ...]
    groups: tuple[tuple[str, ...], ...]
    why: str
    pattern: str | None = None  # a regular expression that also makes the cue hold

    def holds(self, text: str) -> bool:
        """Whether the cue holds for ``text`` (:func:`telcoenv.text.normalize`-d)."""
        if self.pattern is not None and re.search(self.pattern, text):
            return True
        return all(_pattern(group).search(text) for group in self.groups)


_PATTERNS: dict[tuple[str, ...], re.Pattern[str]] = {}


def _pattern(keywords: tuple[str, ...]) -> re.Pattern[str]:
    if keywords not in _PATTERNS:
        _PATTERNS[keywords] = keyword_pattern(keywords)
    return _PATTERNS[keywords]


#: The opening's cues, first match wins: specific words before a family's shared ones.
# fmt: off
CUES: tuple[Cue, ...] = (
    Cue((CONTACT_UPDATE,),
        (("email", "e-mail", "mail address", "contact details", "بريد", "ايميل", "الايميل"),),
        "the personal record: the email address", pattern=r"[\w.+-]+@[\w-]+\.[\w.-]+"),
    Cue((PLAN_RECOMMENDATION,),
        (("cheapest", "budget", "which plan should", "best plan", "recommend", "ارخص", "ميزانيت",
          "تناسبني", "افضل باقه", "انسب باقه"),),
        "a plan to choose: the cheapest within a budget"),
    Cue((FAMILY_DATA,),
        (("family", "together", "combined", "every line", "all the lines", "all lines", "عائل",
          "معا$", "جميع الخطوط", "كل الخطوط", "مجموع"),),
        "the lines of the account together"),
    Cue((AVERAGE_DATA_USE,),
        (("average", "typical month", "usually use", "normally use", "متوسط", "معدل"),),
        "an average of the data use"),
    Cue((DUPLICATE_CHARGE,),
        (("twice", "duplicate", "double", "two times", "مرتين", "مكرر", "تكرار"),),
        "charged twice for one month"),
    Cue((BILL_SHOCK, DUPLICATE_CHARGE),
        (("usual", "higher", "expected", "normally", "way up", "extra charge", "too much",
          "too high", "المعتاد", "العاده", "بكثير", "ارتفع", "الزائد", "الزياده", "اعلي من"),),
        "a bill far above the usual one: the bill's items tell why"),
    Cue((OUTSTANDING_BALANCE,),
        (("owe", "balance", "amount due", "total due", "مستحق", "كم علي", "ما علي"),),
        "how much is owed"),
    Cue((PAYMENT_FAILURE,),
        (("fail", "why", "went wrong", "what happened", "declin", "reason", "go through",
          "فشل", "لماذا", "ليش", "السبب", "ما الذي حدث", "ماذا حدث", "لم ينجح", "ما نجح", "رفض",
          "مرفوض"),),
        "why a payment did not go through"),
    Cue((PAYMENT_FAILURE, OUTSTANDING_BALANCE),
        (("unpaid", "not been paid", "hasn't been paid", "not paid", "still open", "paid it",
          "overdue", "غير مدفوع", "لم تدفع", "مفتوحه", "غير مسدد", "دفعتها", "سددتها"),),
        "a bill said to be unpaid: the customer's question tells why or how much"),
    Cue((ADDON_CANCELLATION,),
        (("cancel", "remove", "unsubscribe", "take it off", "take off", "deactivate",
          "الغاء", "الغي", "الغ$", "ازال", "تزيل", "اوقف", "ايقاف"),),
        "something on the line to take off"),
    Cue((ROAMING_PACK,),
        (("roaming", "travel", "abroad", "trip", "fly", "تجوال", "اسافر", "سفر", "سافر",
          "الخارج", "رحله"),),
        "a trip abroad"),
    Cue((DATA_TOPUP,),
        (("run out", "ran out", "runs out", "more data", "used up", "used all", "top up",
          "top-up", "top me up", "out of data", "no data left", "نفد", "نفاد", "خلص", "شحن"),),
        "the data allowance used up"),
    Cue((DATA_TOPUP, ROAMING_PACK),
        (("data", "بيانات"),
         ("need", "cover", "enough", "rely", "احتاج", "تغطي", "تفي", "الاعتماد", "يمنحني",
          "يوفر", "ينقص")),
        "data that does not cover a need: a trip or an allowance used up"),
    Cue((PLAN_CHANGE,),
        (("plan", "باقه"),
         ("switch", "move", "another", "different", "upgrade", "downgrade", "تحويل", "انتقال",
          "انقل", "نقل", "حولني", "اخري", "مختلف")),
        "another plan, or a plan the catalogue lists named",
        pattern=r"\b(?:post|pre|youth|senior|biz)-(?!paid)[a-z0-9]+"),
    Cue((ADDON_CANCELLATION,),
        (("add-on", "addon", "no longer", "لم اعد بحاجه", "ينفعني"),),
        "something on the line no longer needed"),
    Cue((ADDON_CANCELLATION, PLAN_CHANGE),
        (("my line", "خطي"),
         ("suit", "set up", "change", "happy", "يناسب", "مضبوط", "تغيير", "راض")),
        "what is on the line: an add-on or the plan"),
    Cue((AVERAGE_DATA_USE, FAMILY_DATA, PLAN_RECOMMENDATION), (("data", "بيانات"),),
        "how much data the account uses"),
    Cue((BILL_SHOCK, DUPLICATE_CHARGE, PAYMENT_FAILURE, OUTSTANDING_BALANCE),
        (("bill", "pay", "charge", "invoice", "فاتور", "تطلبون", "مبالغ", "ادفع"),),
        "something about the bill: the customer says what when asked"),
    Cue((DATA_TOPUP, ROAMING_PACK, ADDON_CANCELLATION, PLAN_CHANGE, CONTACT_UPDATE),
        (("account", "my line", "حساب", "خطي"),),
        "a change on the account: the customer says which when asked"),
)
# fmt: on


def read_opening(text: str) -> tuple[Cue | None, tuple[str, ...]]:
    """The first cue that holds for ``text`` and its candidate intents (no cue: all)."""
    folded = normalize(text if isinstance(text, str) else "")
    for cue in CUES:
        if cue.holds(folded):
            return cue, cue.intents
    return None, INTENTS


def cues_markdown() -> str:
    """:data:`CUES` as a Markdown table (docs/customer_care.md shows it)."""
    lines = ["| order | intents | keywords (every group) | why |", "|---|---|---|---|"]
    for index, cue in enumerate(CUES, 1):
        groups = " + ".join("(" + ", ".join(group) + ")" for group in cue.groups)
        if cue.pattern is not None:
            groups += f", or `{cue.pattern}`"
        cells = [str(index), ", ".join(cue.intents), groups, cue.why]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


MSISDN = re.compile(r"(?<![\d-])\d{9,15}(?![\d-])")
DATE = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")
MONTH = re.compile(r"(?<![\d-])(\d{4}-\d{2})(?![\d-])")
EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
GIGABYTES = re.compile(r"(\d+(?:\.\d+)?)\s*(?:GB|gb|Gb|gigabytes?|جيجا)")
RIYALS = re.compile(r"(\d+(?:\.\d+)?)\s*(?:SAR|sar|riyals?|ريال|ر\.س)")

# Where a trip goes: the roaming zones list_addons offers (GCC, EUROPE, WORLD), by geography.
GCC = ("UAE", "United Arab Emirates", "Bahrain", "Kuwait", "Oman", "Qatar", "Saudi Arabia")
EUROPE = (
    *("France", "Germany", "Italy", "Spain", "United Kingdom", "UK", "Portugal", "Netherlands"),
    *("Belgium", "Switzerland", "Austria", "Greece", "Ireland", "Sweden", "Norway", "Denmark"),
    *("Finland", "Poland", "Czech Republic", "Hungary", "Croatia", "Luxembourg", "Malta"),
)
# Country names as an Arabic speaker says them (normalised spelling), and their English name.
COUNTRIES_AR = {
    "الامارات": "UAE",
    "البحرين": "Bahrain",
    "الكويت": "Kuwait",
    "عمان": "Oman",
    "قطر": "Qatar",
    "فرنسا": "France",
    "المانيا": "Germany",
    "ايطاليا": "Italy",
    "اسبانيا": "Spain",
    "المملكه المتحده": "United Kingdom",
    "بريطانيا": "United Kingdom",
    "البرتغال": "Portugal",
    "هولندا": "Netherlands",
    "سويسرا": "Switzerland",
    "اليونان": "Greece",
    "تركيا": "Turkey",
    "مصر": "Egypt",
    "اليابان": "Japan",
    "الولايات المتحده": "United States",
    "امريكا": "United States",
    "ماليزيا": "Malaysia",
    "الهند": "India",
    "الصين": "China",
}
COUNTRIES_EN = (
    *GCC,
    *EUROPE,
    *("Turkey", "Egypt", "Japan", "United States", "USA", "Malaysia", "India", "China"),
    *("Indonesia", "Thailand", "Singapore", "Canada", "Australia", "Morocco", "Jordan"),
)


def zone_of(country: str) -> str:
    """The roaming zone of a country: GCC member states, European countries, else WORLD."""
    if country in GCC:
        return "GCC"
    if country in EUROPE:
        return "EUROPE"
    return "WORLD"


def find_country(text: str) -> str | None:
    """The first country ``text`` names (English or Arabic), by its English name."""
    for name in sorted(COUNTRIES_EN, key=len, reverse=True):
        if re.search(rf"\b{re.escape(name)}\b", text):
            return name
    folded = normalize(text)
    for name, english in sorted(COUNTRIES_AR.items(), key=lambda kv: -len(kv[0])):
        if keyword_pattern([name + "$"]).search(folded):
            return english
    return None


@dataclass
class Facts:
    """What the customer said (the opening and their replies)."""

    msisdn: str | None = None
    period: str | None = None
    email: str | None = None
    plan_id: str | None = None
    country: str | None = None
    start_date: str | None = None
    need_gb: float | None = None
    budget: float | None = None
    no_trip: bool = False
    said: list[str] = field(default_factory=list)

    def learn(self, text: Any) -> None:
        if not isinstance(text, str):
            return
        text = text.translate(ARABIC_DIGITS)
        self.said.append(text)
        found = MSISDN.search(text)
        if found and self.msisdn is None:
            self.msisdn = found.group(0)
        email = EMAIL.search(text)
        if email:
            self.email = email.group(0).rstrip(".")
        date = DATE.search(_BIRTH.sub("", text))  # a birth date is no trip date
        if date:
            self.start_date = date.group(1)
        month = MONTH.search(text)
        if month and self.period is None:
            self.period = month.group(1)
        # A plan named by its id or display name, English or Arabic (the catalogue's names).
        plans = get_domain("bss").answer_vocabulary.named(text, "plan")
        if len(plans) == 1:
            self.plan_id = next(iter(plans))
        country = find_country(text)
        if country:
            self.country = country
        gigabytes = GIGABYTES.search(text)
        if gigabytes:
            self.need_gb = float(gigabytes.group(1))
        riyals = RIYALS.search(text)
        if riyals:
            self.budget = float(riyals.group(1))
        if _NO_TRIP.search(normalize(text)):
            self.no_trip = True


# A birth date said with the customer's name ("born on ...", "ومواليد ..."), up to its clause's end.
_BIRTH = re.compile(r"(?:born|birth|ميلادي|الميلاد|مواليد)[^.;،]*", re.IGNORECASE)
# "No, I haven't travelled / I'm not planning to", "لا، لم أسافر ... ولا أنوي السفر".
_NO_TRIP = keyword_pattern(
    [
        *("no, i", "not planning", "no trip", "haven't travel", "at home", "not travel"),
        *("لا، لم", "لا انوي", "ولا انوي", "ليست لدي رحله", "لم اسافر", "في البلد"),
    ]
)


# A birth date as a customer says it: 1988-03-15, 15/03/1988 (day first), 15 March 1988.
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_DMY_DATE = re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{4})\b")
_MONTHS = {
    **{m: n for n, m in enumerate(calendar.month_name) if m},
    **dict(zip(("يناير", "فبراير", "مارس", "أبريل", "مايو", "يونيو"), range(1, 7), strict=True)),
    **dict(
        zip(("يوليو", "أغسطس", "سبتمبر", "أكتوبر", "نوفمبر", "ديسمبر"), range(7, 13), strict=True)
    ),
}
_LONG_DATE = re.compile(r"\b(\d{1,2})\s+(" + "|".join(_MONTHS) + r")\s+(\d{4})\b")
# Latin names: capitalised words, hyphenated family names (Omar Al-Harbi).
_LATIN_NAME = re.compile(r"\b[A-Z][a-z]+(?:[ -][A-Z][a-z]+)+\b")
# Words around an Arabic name: "اسمي ... وتاريخ ميلادي", "أنا ...، ومواليد", "...، تاريخ الميلاد".
_ARABIC_FILLER = re.compile(r"^(?:اسمي|أنا|انا)\s+|\s*(?:،|,|\s+و?تاريخ|\s+ومواليد).*$")


def read_birth_date(text: str) -> str | None:
    """A birth date in the customer's words, as YYYY-MM-DD (None: none said)."""
    text = text.translate(ARABIC_DIGITS)
    if found := _ISO_DATE.search(text):
        year, month, day = map(int, found.groups())
    elif found := _DMY_DATE.search(text):
        day, month, year = map(int, found.groups())
    elif found := _LONG_DATE.search(text):
        day, month, year = int(found.group(1)), _MONTHS[found.group(2)], int(found.group(3))
    else:
        return None
    with contextlib.suppress(ValueError):
        return dt.date(year, month, day).isoformat()
    return None


def read_identity(text: str) -> tuple[str | None, str | None]:
    """The full name and birth date a customer states ("My name is Omar Al-Harbi and I was
    born on 15 March 1988", "عمر الحربي، تاريخ الميلاد 15/03/1988")."""
    born = read_birth_date(text)
    # The sentence that states the date ("Please check again. Omar Al-Harbi, born ...").
    sentences = re.split(r"(?<=[.!?؟])\s+", text.strip())
    text = next((s for s in sentences if read_birth_date(s)), text)
    if found := _LATIN_NAME.search(text):
        return found.group(0), born
    arabic = _ARABIC_FILLER.sub("", text.strip()).strip(" .")
    return (arabic or None) if re.search(r"[\u0600-\u06ff]", arabic) else None, born


# --- phrases -------------------------------------------------------------------------------------

PHRASES: dict[str, dict[str, str]] = {
    "en": {
        "msisdn": "What is your mobile number?",
        "trip": "Are you planning to travel abroad? If so, where and on what date?",
        "need_gb": "How much data do you need?",
        "budget": "What is your monthly budget?",
        "plan": "Which plan do you want?",
        "email": "What is your new email address?",
        "period": "Which month is this about?",
        "date": "On what date do you leave?",
        "clarify": "Could you say again what you need?",
        "identity": "Before I change anything, please confirm your full name and date of birth.",
        "not_verified": "I'm sorry, the name and date of birth do not match our records, so I "
        "cannot change this account. The account holder can visit one of our stores with "
        "their national ID.",
        "approve_subscribe_addon": (
            "May I subscribe your line {msisdn} to {addon_id} from {start_date}{cost}?"
        ),
        "approve_cancel_addon": "May I cancel the add-on {subscription_id} on your line?",
        "approve_change_plan": "May I switch your line {msisdn} to the {plan_id} plan{cost}?",
        "cost": ", at {price} SAR incl. VAT",
        "fee": ", with an early change fee of {fee} SAR incl. VAT",
        "approve_update_contact": "May I update your email address to {email}?",
        "approve_apply_credit": "May I apply a credit to your account?",
    },
    "ar": {
        "msisdn": "ما رقم جوالك؟",
        "trip": "هل تخطط للسفر إلى الخارج؟ إن كان كذلك فإلى أين وفي أي تاريخ؟",
        "need_gb": "كم من البيانات تحتاج؟",
        "budget": "ما ميزانيتك الشهرية؟",
        "plan": "أي باقة تريد؟",
        "email": "ما عنوان بريدك الإلكتروني الجديد؟",
        "period": "عن أي شهر تتحدث؟",
        "date": "في أي تاريخ تغادر؟",
        "clarify": "حتى أتأكد من أنني أساعدك في الأمر الصحيح: ما الذي تريد مني أن أفعله بالضبط؟",
        "identity": "قبل أي تغيير، أرجو تأكيد اسمك الكامل وتاريخ ميلادك.",
        "not_verified": "عذراً، الاسم وتاريخ الميلاد لا يطابقان سجلاتنا، لذا لا يمكنني تعديل هذا "
        "الحساب. يمكن لصاحب الحساب زيارة أحد فروعنا ومعه هويته الوطنية.",
        "approve_subscribe_addon": (
            "هل توافق على تفعيل {addon_id} على خطك {msisdn} من {start_date}{cost}؟"
        ),
        "approve_cancel_addon": "هل توافق على إلغاء الخدمة الإضافية {subscription_id} على خطك؟",
        "approve_change_plan": "هل توافق على نقل خطك {msisdn} إلى باقة {plan_id}{cost}؟",
        "cost": " بسعر {price} ريال شاملاً الضريبة",
        "fee": " مع رسوم تغيير مبكر قدرها {fee} ريال شاملة الضريبة",
        "approve_update_contact": "هل توافق على تحديث بريدك الإلكتروني إلى {email}؟",
        "approve_apply_credit": "هل توافق على إضافة رصيد دائن إلى حسابك؟",
    },
}

SUMMARIES: dict[str, dict[str, str]] = {
    "en": {
        BILL_SHOCK: "The {period} bill carries pay-as-you-go roaming of {answer} SAR incl. VAT "
        "(no roaming pack): a true charge, nothing changed.",
        DUPLICATE_CHARGE: "{period} was invoiced twice ({invoices}, {answer} SAR each): the "
        "billing run fired twice. Dispute ticket {ticket} opened to cancel the copy.",
        PAYMENT_FAILURE: "The latest payment ({payment}) failed: {answer}.",
        OUTSTANDING_BALANCE: "Outstanding: {answer} SAR (unpaid invoices once per month, "
        "credit notes subtracted).",
        ROAMING_PACK: "Roaming pack {addon_id} ({zone}) subscribed from {start_date} for the "
        "trip to {country}: {result}.",
        ADDON_CANCELLATION: "Add-on {subscription_id} cancelled on line {msisdn}: {result}.",
        DATA_TOPUP: "Data coupon {addon_id} ({need_gb} GB asked) subscribed from {start_date} "
        "on line {msisdn}: {result}.",
        AVERAGE_DATA_USE: "Average data use {answer} GB a month over the {months} months "
        "measured ({missing} not collected).",
        PLAN_RECOMMENDATION: "Recommended plan {answer}: the cheapest open to the customer "
        "covering their average of {average} GB, at {price} SAR a month ({fit} their budget of "
        "{budget} SAR).",
        PLAN_CHANGE: "Line {msisdn} moved to plan {plan_id}: {result}.",
        FAMILY_DATA: "The family used {answer} GB together in {period} ({missing} member(s) "
        "not collected).",
        CONTACT_UPDATE: "Email of customer {customer_id} updated to {email}: {result}.",
    },
    "ar": {
        BILL_SHOCK: "فاتورة {period} فيها رسوم تجوال بالاستخدام بقيمة {answer} ريال شاملة الضريبة "
        "(بلا باقة تجوال): رسوم صحيحة، ولم يُغيَّر شيء.",
        DUPLICATE_CHARGE: "فُوتر شهر {period} مرتين ({invoices}، {answer} ريال لكل منهما). فُتحت "
        "تذكرة الاعتراض {ticket} لإلغاء النسخة المكررة.",
        PAYMENT_FAILURE: "فشلت آخر عملية دفع ({payment}): {answer}.",
        OUTSTANDING_BALANCE: "المبلغ المستحق {answer} ريال (الفواتير غير المدفوعة مرة واحدة لكل "
        "شهر، مع خصم الإشعارات الدائنة).",
        ROAMING_PACK: "فُعّلت باقة التجوال {addon_id} ({zone}) من {start_date} للسفر إلى "
        "{country}: {result}.",
        ADDON_CANCELLATION: "أُلغيت الخدمة الإضافية {subscription_id} على الخط {msisdn}: {result}.",
        DATA_TOPUP: "فُعّلت قسيمة البيانات {addon_id} ({need_gb} جيجابايت مطلوبة) من {start_date} "
        "على الخط {msisdn}: {result}.",
        AVERAGE_DATA_USE: "متوسط استهلاك البيانات {answer} جيجابايت شهرياً على {months} شهراً "
        "مقيساً ({missing} غير مجمّع).",
        PLAN_RECOMMENDATION: "الباقة الموصى بها {answer}: الأرخص المتاحة للعميل التي تغطي "
        "متوسطه {average} جيجابايت، بسعر {price} ريال شهرياً ({fit} ميزانيته البالغة {budget} "
        "ريال).",
        PLAN_CHANGE: "نُقل الخط {msisdn} إلى الباقة {plan_id}: {result}.",
        FAMILY_DATA: "استهلكت العائلة معاً {answer} جيجابايت في {period} ({missing} عضو غير مجمّع).",
        CONTACT_UPDATE: "حُدّث البريد الإلكتروني للعميل {customer_id} إلى {email}: {result}.",
    },
}
# The summary of an episode whose caller failed the identity check (no change was made).
NOT_VERIFIED = {
    "en": "The caller could not be verified as customer {customer_id} (the name or date of "
    "birth did not match the record): no change made, referred to a store.",
    "ar": "تعذر التحقق من أن المتصل هو العميل {customer_id} (الاسم أو تاريخ الميلاد لا يطابق "
    "السجل): لم يُجرَ أي تغيير، وأُحيل إلى أحد الفروع.",
}
_DONE = {"en": ("done", "not done"), "ar": ("تم", "لم يتم")}
_FIT = {"en": ("within", "above"), "ar": ("ضمن", "أعلى من")}


class _Fields(dict):
    """Summary fields: a field nobody filled reads as ``-``."""

    def __missing__(self, key: str) -> str:
        return "-"


# --- small readers -------------------------------------------------------------------------------


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def cents(value: float) -> float:
    """Rounded half up to the cent (the BSS's money and GB figures have two decimals)."""
    return round(value + 1e-9, 2)


def figure(value: float) -> str:
    """A number as the BSS writes it: two decimals at most, no trailing zeros."""
    return f"{cents(value):.2f}".rstrip("0").rstrip(".")


def _vat_rate(invoices: list[dict[str, Any]]) -> float:
    """The VAT rate the BSS applies, as an invoice states it (its VAT over its net amount)."""
    for invoice in invoices:
        net, vat = _number(invoice.get("amount_excl_vat")), _number(invoice.get("vat"))
        if net and vat is not None:
            return round(vat / net, 2)
    return 0.0


def _partial(history: dict[str, Any]) -> bool:
    """Whether a summarised payment history left out a credit note or a payment that did not
    settle (the summary keeps every unsettled payment up to a limit, and the latest credit
    notes): the balance needs them all."""
    left_out = _dict(_dict(history.get("truncated")).get("left_out"))
    if left_out.get("credit_notes"):
        return True
    shown = sum(1 for p in _list(history.get("payments")) if _dict(p).get("status") != "settled")
    counts = _dict(history.get("payments_by_status"))
    unsettled = sum(
        _number(_dict(entry).get("count")) or 0
        for status, entry in counts.items()
        if status != "settled"
    )
    return unsettled > shown


# --- the agent -----------------------------------------------------------------------------------


class CareInvestigatorAgent(GeneratorAgent):
    """Reads the customer's request, asks what only they know, reads the account data, makes
    the change asked for, and submits the intent's label with the answer computed from the data
    (see the module docstring for its rules)."""

    needs_privileged = False
    domains = ("bss",)  # its cues, rules and chains are the customer-care intents'

    def __init__(self, max_steps: int = 20) -> None:
        self.max_steps = max_steps
        self.intent: str | None = None
        self.candidates: tuple[str, ...] = INTENTS
        self.answer: str | None = None
        self._language = "en"
        self._policy: Generator[Action, str, None] | None = None
        self._started = False
        self._steps = 0

    # --- protocol ------------------------------------------------------------------------------

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        info = info if isinstance(info, dict) else {}
        language = info.get("language")
        self._language = language if language in PHRASES else "en"
        self._approval = info.get("require_approval") is True
        catalog = get_domain("bss").catalog
        self._labels = {i.key: i.label.in_lang(self._language) for i in catalog.intents}
        self._approves = {name for name, spec in catalog.tools.items() if spec.approval}
        self._opening = observation if isinstance(observation, str) else ""
        self.cue, self.candidates = read_opening(self._opening)
        self.intent = self.candidates[0]
        self.facts = Facts()
        self.facts.learn(self._opening)
        self.answer = None
        self._summary = _Fields()
        self._error: dict[str, Any] = {}
        self._customer: dict[str, Any] = {}
        self._account: dict[str, Any] = {}
        self._line: dict[str, Any] = {}
        self._verified: bool | None = None  # the identity check: not made yet, passed, failed
        self._prices: dict[str, float] = {}  # plans' and add-ons' prices incl. VAT, as read
        self._fees: dict[str, float] = {}  # early-change fees incl. VAT quoted, by plan
        self._start_play()

    def _room(self, steps: int) -> bool:
        """Whether ``steps`` more actions fit before the submission (the budget's last step)."""
        return self._steps + steps < self.max_steps

    # --- the conversation ----------------------------------------------------------------------

    def _play(self) -> Generator[Action, str, None]:
        facts = self.facts
        handlers = {
            BILL_SHOCK: self._bill,
            DUPLICATE_CHARGE: self._bill,
            PAYMENT_FAILURE: self._payments,
            OUTSTANDING_BALANCE: self._payments,
            ROAMING_PACK: self._needs_data,
            DATA_TOPUP: self._needs_data,
            ADDON_CANCELLATION: self._line_products,
            PLAN_CHANGE: self._line_products,
            AVERAGE_DATA_USE: self._data_use,
            FAMILY_DATA: self._data_use,
            PLAN_RECOMMENDATION: self._data_use,
            CONTACT_UPDATE: self._contact,
        }
        # No cue, or a family whose members the data alone cannot tell apart (the bill, a
        # change on the account): the customer says what they see and want when asked.
        if len({handlers[c] for c in self.candidates}) > 1:
            yield from self._clarify()
        yield from self._ask(self._questions())
        if facts.msisdn is None:
            yield from self._ask(["msisdn"])
        if facts.msisdn is None:
            return
        if not (yield from self._get_customer()):
            return
        yield from handlers[self.intent]()

    def _clarify(self) -> Generator[Action, str, None]:
        """Ask the customer to say again what they need, and read it with the cues."""
        self._narrow((yield self._phrase("clarify")))

    def _narrow(self, text: Any) -> None:
        """Read the customer's words again with the cues; keep a narrower reading."""
        self.facts.learn(text)
        cue, candidates = read_opening(text if isinstance(text, str) else "")
        if cue is not None and set(candidates) <= set(self.candidates):
            self.cue, self.candidates = cue, candidates
            self.intent = candidates[0]

    def _questions(self) -> list[str]:
        """What to ask the customer first: the line, and what the candidates need."""
        wanted, facts, candidates = ["msisdn"], self.facts, set(self.candidates)
        if ROAMING_PACK in candidates:
            wanted.append("trip")
        if DATA_TOPUP in candidates:
            wanted.append("need_gb")
        if PLAN_RECOMMENDATION in candidates:
            wanted.append("budget")
        if PLAN_CHANGE in candidates and facts.plan_id is None:
            wanted.append("plan")
        if CONTACT_UPDATE in candidates and facts.email is None:
            wanted.append("email")
        if candidates & {BILL_SHOCK, DUPLICATE_CHARGE, FAMILY_DATA} and facts.period is None:
            wanted.append("period")
        return wanted

    def _ask(self, topics: Iterable[str]) -> Generator[Action, str, str]:
        reply = yield " ".join(self._phrase(topic) for topic in topics)
        self.facts.learn(reply)
        return reply if isinstance(reply, str) else ""

    def _phrase(self, name: str, **fields: Any) -> str:
        return PHRASES[self._language][name].format(**fields)

    # --- tools ---------------------------------------------------------------------------------

    def _call(self, tool: str, arguments: dict[str, Any]) -> Generator[Action, str, Any]:
        """One tool call; returns its output (None for an error or anything unreadable)."""
        observation = yield {"name": tool, "arguments": arguments}
        output: Any = None
        with contextlib.suppress(TypeError, ValueError):
            output = json.loads(observation)
        output = output if isinstance(output, dict) else None
        self._error = {}
        if output is not None and "error" in output:
            self._error = _dict(output.get("error"))
            output = None
        return output

    def _change(self, tool: str, arguments: dict[str, Any]) -> Generator[Action, str, Any]:
        """A change, after the customer's approval when the episode requires it (and once more
        after an ``approval_required`` refusal)."""
        if not (yield from self._verify()):
            return None
        if not self._room(2 if self._approval and tool in self._approves else 1):
            return None
        if self._approval and tool in self._approves:
            yield self._approval_request(tool, arguments)
        output = yield from self._call(tool, arguments)
        if output is None and self._error.get("type") == "approval_required" and self._room(2):
            self._approval = True
            yield self._approval_request(tool, arguments)
            output = yield from self._call(tool, arguments)
        self._summary["result"] = _DONE[self._language][0 if output else 1]
        return output

    def _approval_request(self, tool: str, arguments: dict[str, Any]) -> str:
        """The change described as the customer must hear it: what, on which line, at what
        price (when it costs money and the outputs gave it)."""
        item = arguments.get("addon_id") or arguments.get("plan_id") or ""
        price, fee = self._prices.get(item), self._fees.get(item)
        cost = "" if price is None else self._phrase("cost", price=figure(price))
        cost += "" if fee is None else self._phrase("fee", fee=figure(fee))
        return self._phrase(f"approve_{tool}", cost=cost, **arguments)

    def _verify(self) -> Generator[Action, str, bool]:
        """The identity check before the first change: the customer's name and birth date
        (asked, not learnt as facts: a birth date is no trip date), then ``verify_identity``.
        A failed check is final (the customer repeats the same details): the customer is told,
        and nothing is changed."""
        if self._verified is not None:
            return self._verified
        if not self._room(3):
            return False
        reply = yield self._phrase("identity")
        name, born = read_identity(reply if isinstance(reply, str) else "")
        output = None
        if name and born:
            arguments = {
                "customer_id": self._customer.get("customer_id", ""),
                "full_name": name,
                "birth_date": born,
            }
            output = yield from self._call("verify_identity", arguments)
        self._verified = bool(output and output.get("verified") is True)
        if not self._verified and self._room(1):
            yield self._phrase("not_verified")
        return self._verified

    def _get_customer(self) -> Generator[Action, str, bool]:
        output = yield from self._call("get_customer", {"msisdn": self.facts.msisdn})
        if output is None and self._error.get("type") in ("not_found", "bad_args"):
            self.facts.msisdn = None  # a number misheard: ask once more
            yield from self._ask(["msisdn"])
            if self.facts.msisdn is None:
                return False
            output = yield from self._call("get_customer", {"msisdn": self.facts.msisdn})
        if output is None:
            return False
        self._customer = _dict(output.get("customer"))
        for account in _list(output.get("accounts")):
            for line in _list(_dict(account).get("lines")):
                if _dict(line).get("msisdn") == self.facts.msisdn:
                    self._account, self._line = _dict(account), _dict(line)
        if not self._account and _list(output.get("accounts")):
            self._account = _dict(output["accounts"][0])
        self._summary.update(
            msisdn=self.facts.msisdn,
            customer_id=self._customer.get("customer_id", "-"),
        )
        return True

    @property
    def _account_id(self) -> str:
        return str(self._account.get("account_id", ""))

    def _period(self) -> Generator[Action, str, str | None]:
        """The month the customer asks about: said in the opening, else asked for."""
        if self.facts.period is None:
            yield from self._ask(["period"])
        if self.facts.period is not None:
            self._summary["period"] = self.facts.period
        return self.facts.period

    # --- billing -------------------------------------------------------------------------------

    def _bill(self) -> Generator[Action, str, None]:
        """A bill higher than usual: a duplicate invoice, else the roaming items."""
        period = yield from self._period()
        if period is None:
            return
        bill = yield from self._call("get_bill", {"account_id": self._account_id, "period": period})
        if bill is None:
            return
        invoices = [_dict(i) for i in _list(bill.get("invoices"))]
        amounts: dict[float, list[str]] = {}
        for invoice in invoices:
            amount = _number(invoice.get("amount"))
            if amount is not None:
                amounts.setdefault(cents(amount), []).append(str(invoice.get("invoice_id")))
        twice = [(amount, ids) for amount, ids in amounts.items() if len(ids) >= 2]
        roaming = 0.0
        for invoice in invoices:
            by_kind = _dict(invoice.get("amount_excl_vat_by_kind"))
            if by_kind:
                roaming += _number(by_kind.get("roaming")) or 0.0
                continue
            for item in _list(invoice.get("items")):
                item = _dict(item)
                if item.get("kind") == "roaming":
                    roaming += _number(item.get("amount_excl_vat")) or 0.0
        if twice or (DUPLICATE_CHARGE in self.candidates and not roaming):
            self.intent = DUPLICATE_CHARGE
            if not twice:  # said twice, but one invoice: nothing to dispute
                return
            amount, ids = twice[0]
            self.answer = figure(amount)
            self._summary.update(answer=self.answer, invoices=", ".join(ids))
            summary = (
                f"Invoice {ids[-1]} duplicates invoice {ids[0]} for {period} ({amount:.2f} SAR): "
                "the billing run fired twice; please cancel the copy and refund any payment "
                "taken for it."
            )
            if not (yield from self._verify()):
                return
            ticket = yield from self._call(
                "open_care_ticket",
                {
                    "customer_id": self._customer.get("customer_id", ""),
                    "category": "billing_dispute",
                    "summary": summary,
                },
            )
            self._summary["ticket"] = _dict(ticket).get("ticket_id", "-")
            return
        self.intent = BILL_SHOCK
        if roaming:  # told as the customer pays it: with the VAT the invoice applies
            self.answer = figure(roaming * (1 + _vat_rate(invoices)))
            self._summary["answer"] = self.answer

    def _payments(self) -> Generator[Action, str, None]:
        """A bill said to be unpaid: the failure reason, or the balance."""
        if len(set(self.candidates) & {PAYMENT_FAILURE, OUTSTANDING_BALANCE}) == 2:
            yield from self._clarify()
        history = yield from self._call("get_payment_history", {"account_id": self._account_id})
        if history is None:
            return
        if self.intent == OUTSTANDING_BALANCE and _partial(history) and self._room(2):
            full = yield from self._call(
                "get_payment_history", {"account_id": self._account_id, "detail": "full"}
            )
            history = full or history
        payments = [_dict(p) for p in _list(history.get("payments"))]
        unsettled = [p for p in payments if p.get("status") != "settled"]
        if self.intent == PAYMENT_FAILURE:
            failed = [p for p in unsettled if p.get("failure_reason")]
            if failed:
                latest = max(failed, key=lambda p: str(p.get("paid_at", "")))
                self.answer = str(latest["failure_reason"])
                self._summary.update(answer=self.answer, payment=latest.get("payment_id", "-"))
            return
        # The invoices still open, a period's double-fired copy (same amount) counted once.
        unpaid: dict[tuple[str, float], float] = {}
        for invoice in (_dict(i) for i in _list(history.get("open_invoices"))):
            amount = _number(invoice.get("amount"))
            if amount is not None:
                unpaid[(str(invoice.get("period")), cents(amount))] = amount
        credits = sum(
            _number(_dict(c).get("amount")) or 0.0 for c in _list(history.get("credit_notes"))
        )
        balance = sum(unpaid.values()) + credits
        self.answer = figure(balance)
        self._summary["answer"] = self.answer

    # --- add-ons -------------------------------------------------------------------------------

    def _needs_data(self) -> Generator[Action, str, None]:
        """A trip is a roaming pack; no trip is a data top-up."""
        facts = self.facts
        if ROAMING_PACK in self.candidates and DATA_TOPUP in self.candidates:
            self.intent = ROAMING_PACK if facts.country and not facts.no_trip else DATA_TOPUP
        if self.intent == ROAMING_PACK:
            yield from self._roaming()
        else:
            yield from self._topup()

    def _roaming(self) -> Generator[Action, str, None]:
        facts = self.facts
        if facts.country is None or facts.start_date is None:
            yield from self._ask(["trip"] if facts.country is None else ["date"])
        if facts.country is None or facts.start_date is None:
            return
        zone = zone_of(facts.country)
        listed = yield from self._call("list_addons", {"kind": "roaming", "zone": zone})
        addon = self._cheapest(listed, kind="roaming", zone=zone)
        self._summary.update(zone=zone, country=facts.country, start_date=facts.start_date)
        if addon is None:
            return
        self._summary["addon_id"] = addon
        yield from self._change(
            "subscribe_addon",
            {"msisdn": facts.msisdn, "addon_id": addon, "start_date": facts.start_date},
        )

    def _topup(self) -> Generator[Action, str, None]:
        facts = self.facts
        if facts.need_gb is None:
            yield from self._ask(["need_gb"])
        need = facts.need_gb if facts.need_gb is not None else 1.0
        charges = yield from self._call("get_realtime_charges", {"msisdn": facts.msisdn})
        today = _dict(charges).get("as_of")
        month = _dict(charges).get("period")
        if isinstance(month, str) and self._room(4 if self._approval else 3):
            yield from self._call("get_usage", {"msisdn": facts.msisdn, "period": month})
        if not isinstance(today, str):
            return
        listed = yield from self._call("list_addons", {"kind": "data_coupon"})
        addon = self._cheapest(listed, kind="data_coupon", need=need)
        self._summary.update(need_gb=figure(need), start_date=today)
        if addon is None:
            return
        self._summary["addon_id"] = addon
        yield from self._change(
            "subscribe_addon", {"msisdn": facts.msisdn, "addon_id": addon, "start_date": today}
        )

    def _cheapest(
        self, listed: Any, *, kind: str, zone: str | None = None, need: float = 0.0
    ) -> str | None:
        """The cheapest add-on of ``kind`` (and ``zone``) sold to the line's payment type that
        holds ``need`` GB."""
        payment = self._line.get("payment")
        fitting = []
        for addon in _list(_dict(listed).get("addons")):
            addon = _dict(addon)
            sold_to = _list(addon.get("payment"))
            price = _number(addon.get("price"))
            if price is not None:
                self._prices[str(addon.get("addon_id"))] = price
            if (
                addon.get("kind") == kind
                and (zone is None or addon.get("zone") == zone)
                and (payment is None or payment in sold_to)
                and (_number(addon.get("data_gb")) or 0.0) >= need
                and price is not None
            ):
                fitting.append((price, str(addon.get("addon_id"))))
        return min(fitting)[1] if fitting else None

    def _line_products(self) -> Generator[Action, str, None]:
        """An active add-on to cancel, or a move to the plan the customer names."""
        active = [_dict(a) for a in _list(self._line.get("active_addons"))]
        active = [a for a in active if a.get("status", "active") == "active"]
        if ADDON_CANCELLATION in self.candidates and PLAN_CHANGE in self.candidates:
            self.intent = ADDON_CANCELLATION if active else PLAN_CHANGE
        if self.intent == ADDON_CANCELLATION:
            if not active:
                return
            subscription = str(active[0].get("subscription_id"))
            self._summary["subscription_id"] = subscription
            yield from self._change(
                "cancel_addon", {"msisdn": self.facts.msisdn, "subscription_id": subscription}
            )
            return
        if self.facts.plan_id is None:
            yield from self._ask(["plan"])
        plan_id = self.facts.plan_id
        if plan_id is None:
            return
        self._summary["plan_id"] = plan_id
        if self._room(3 if self._approval else 2):  # the read, the approval, the change
            plan = yield from self._call(
                "get_plan", {"plan_id": plan_id, "msisdn": self.facts.msisdn}
            )
            price = _number(_dict(_dict(plan).get("plan")).get("price"))
            if price is not None:
                self._prices[plan_id] = price
            # A running commitment: a cheaper plan costs an early-change fee, told with it.
            move = _dict(_dict(plan).get("change_for_line"))
            fee = _number(_dict(move.get("early_change_fee")).get("amount"))
            if fee:
                self._fees[plan_id] = fee
        yield from self._change("change_plan", {"msisdn": self.facts.msisdn, "plan_id": plan_id})

    # --- data use ------------------------------------------------------------------------------

    def _data_use(self) -> Generator[Action, str, None]:
        if len(set(self.candidates) & {AVERAGE_DATA_USE, FAMILY_DATA, PLAN_RECOMMENDATION}) > 1:
            yield from self._clarify()
        if self.intent == FAMILY_DATA:
            yield from self._family()
            return
        usage = yield from self._call(
            "get_usage", {"msisdn": self.facts.msisdn, "months": USAGE_MONTHS}
        )
        records = [_dict(r) for r in _list(_dict(usage).get("usage"))]
        measured = [v for v in (_number(r.get("data_gb")) for r in records) if v is not None]
        if not measured:
            return
        average = cents(sum(measured) / len(measured))
        self._summary.update(
            months=len(measured), missing=len(records) - len(measured), average=figure(average)
        )
        if self.intent == AVERAGE_DATA_USE:
            self.answer = figure(average)
            self._summary["answer"] = self.answer
            return
        if self.facts.budget is None:
            yield from self._ask(["budget"])
        segment = self._customer.get("segment") or "consumer"
        plans = yield from self._call("list_plans", {"payment": "postpaid", "segment": segment})
        chosen = self._recommend(plans, average)
        if chosen is not None:
            price, plan = chosen
            budget = self.facts.budget or 0.0
            self.answer = plan
            self._summary.update(
                answer=plan,
                price=figure(price),
                budget=figure(budget),
                fit=_FIT[self._language][0 if price <= budget + 1e-9 else 1],
            )

    def _recommend(self, listed: Any, average: float) -> tuple[float, str] | None:
        """The cheapest plan open to the customer's age whose data covers ``average``, within
        the budget incl. VAT (none within it: the cheapest that covers the average)."""
        age = _number(self._customer.get("age"))
        budget = self.facts.budget
        fitting, within = [], []
        for plan in _list(_dict(listed).get("plans")):
            plan = _dict(plan)
            price = _number(plan.get("price"))
            data = plan.get("data_gb")
            low, high = _number(plan.get("min_age")), _number(plan.get("max_age"))
            if price is None or (data is not None and (_number(data) or 0.0) < average):
                continue
            if age is not None and (
                (low is not None and age < low) or (high is not None and age > high)
            ):
                continue
            fitting.append((price, str(plan.get("plan_id"))))
            if budget is None or price <= budget + 1e-9:
                within.append((price, str(plan.get("plan_id"))))
        return min(within) if within else (min(fitting) if fitting else None)

    def _family(self) -> Generator[Action, str, None]:
        period = yield from self._period()
        if period is None:
            return
        usage = yield from self._call(
            "get_family_usage", {"account_id": self._account_id, "period": period}
        )
        members = [_dict(m) for m in _list(_dict(usage).get("members"))]
        measured = [v for v in (_number(m.get("data_gb")) for m in members) if v is not None]
        if not measured:
            return
        self.answer = figure(sum(measured))
        self._summary.update(answer=self.answer, missing=len(members) - len(measured))

    # --- the personal record -------------------------------------------------------------------

    def _contact(self) -> Generator[Action, str, None]:
        if self.facts.email is None:
            yield from self._ask(["email"])
        email = self.facts.email
        if email is None:
            return
        self._summary["email"] = email
        yield from self._change(
            "update_contact",
            {"customer_id": self._customer.get("customer_id", ""), "email": email},
        )

    # --- the submission ------------------------------------------------------------------------

    def _submit(self) -> dict[str, Any]:
        intent = self.intent or INTENTS[0]
        label = getattr(self, "_labels", {}).get(intent, intent)
        template = (
            NOT_VERIFIED[self._language]
            if self._verified is False
            else SUMMARIES[self._language][intent]
        )
        try:
            summary = template.format_map(self._summary)
        except Exception:  # a summary is always sent, even from an odd episode
            summary = label
        arguments: dict[str, Any] = {"intent": label, "summary": summary}
        if self.answer is not None:
            arguments["answer"] = self.answer
        return {"name": RESERVED_SUBMIT, "arguments": arguments}
