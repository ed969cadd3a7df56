"""The operator's written policy as pages the agent searches and reads (``policy.yaml``).

Pages come in English and Arabic: the customer-care handbook in force, the product catalogue
(built from ``products.yaml``), the business accounts' guide, and a superseded edition that
states the rules of its day (VAT at 5 %): the agent must notice which page is in force. Every
figure a page states is filled from ``products.yaml`` when the pages are built, so the pages
and the database cannot disagree.

Search is BM25 (Robertson and Zaragoza, 2009) over the pages' sections, in the query's
language: words are folded as :func:`telcoenv.text.normalize` folds them and lightly stemmed
(an English plural, an Arabic article or proclitic). The corpus is built once per process
and shared by every environment.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal

from pydantic import Field

from telcoenv.catalog import fill_gold_arguments
from telcoenv.datafiles import parse_yaml
from telcoenv.documents import Document, DocumentSection
from telcoenv.domains.bss.catalogue import products
from telcoenv.specs import Bilingual, FrozenModel, GoldStep, Language
from telcoenv.text import normalize
from telcoenv.trace import GoldCall

LANGUAGES: tuple[Language, ...] = ("en", "ar")
#: The handbook whose rules the intents follow (``intents.yaml``'s ``policy`` lists).
HANDBOOK = "care-handbook"
RESULTS = 5  # sections a search returns
SNIPPET = 220  # characters of a result's snippet
SECTION_ENTRIES = 6  # catalogue entries in a section: a section reads within a read's bound


class Permit(FrozenModel):
    """A change a rule allows beyond an intent's own: its calls, when the episode's value
    ``when`` exists (a duplicate invoice's amount: there is a duplicate to dispute)."""

    when: str
    calls: tuple[GoldStep, ...]


class RuleSpec(FrozenModel):
    """One rule, in both languages (``{figure}`` placeholders filled from the products)."""

    rule_id: str = Field(pattern=r"^[a-z]+\.[a-z_]+$")
    en: str
    ar: str
    tools: tuple[str, ...] = ()  # the calls it asks for or allows
    answers: bool = False  # it says how a question's answer is found
    general: bool = False  # it holds in every conversation
    permits: Permit | None = None


class SectionSpec(FrozenModel):
    """A section of a page: its title and rules."""

    section_id: str = Field(pattern=r"^[a-z][a-z-]*$")
    title: Bilingual
    rules: tuple[RuleSpec, ...]


class PageSpec(FrozenModel):
    """A page: in force or superseded, for a segment; ``values`` override the figures."""

    page_id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    title: Bilingual
    edition: Bilingual
    status: Literal["current", "superseded"]
    segment: Literal["consumer", "business", "all"]
    values: dict[str, str | int | float] = Field(default_factory=dict)
    catalogue: bool = False  # its sections are generated from products.yaml
    sections: tuple[SectionSpec, ...]


class PolicyFile(FrozenModel):
    """``policy.yaml``."""

    pages: tuple[PageSpec, ...]


@dataclass(frozen=True, slots=True)
class Section:
    """One section of a page in one language: its rules' texts, in order."""

    page_id: str
    section_id: str
    language: Language
    title: str
    rules: tuple[tuple[str, str], ...]  # (rule id, text)

    @property
    def text(self) -> str:
        return " ".join(text for _, text in self.rules)


@dataclass(frozen=True, slots=True)
class Page:
    page_id: str
    title: Bilingual
    edition: Bilingual
    status: str
    segment: str
    sections: dict[Language, tuple[Section, ...]]


def published_id(page_id: str, language: Language) -> str:
    """A page's id as the tools show it: each language is a page of its own (``-ar``)."""
    return page_id if language == "en" else f"{page_id}-ar"


def parse_published_id(published: str) -> tuple[str, Language]:
    """The page and language of a published page id."""
    if published.endswith("-ar"):
        return published.removesuffix("-ar"), "ar"
    return published, "en"


# --- figures ----------------------------------------------------------------------------------


def _amount(value: float) -> str:
    return f"{value:,.2f}"


def _figures(language: Language) -> dict[str, str]:
    """Every figure a page may state, from ``products.yaml``, worded in ``language``."""
    # Imported here: the customer module imports the tools, which import this one.
    from telcoenv.domains.bss.customer import phrases

    catalogue = products()
    countries: dict[str, list[str]] = {}
    for country, zone in catalogue["destinations"].items():
        name = country if language == "en" else phrases()["destinations_ar"][country]
        countries.setdefault(zone, []).append(name)
    comma = ", " if language == "en" else "، "
    other = {"en": "any other country, such as", "ar": "أي بلد آخر، مثل"}[language]
    zones = [
        f"{zone} ({other + ' ' if zone == 'WORLD' else ''}{comma.join(names)})"
        for zone, names in countries.items()
    ]
    per_gb = catalogue["roaming_payg_per_gb"]
    unit = {"en": "per GB excluding VAT", "ar": "لكل جيجابايت دون الضريبة"}[language]
    rates = comma.join(
        f"{zone} {_amount(rate)} {catalogue['currency']}" for zone, rate in per_gb.items()
    )
    months = catalogue["policy"]["commitment"]["months"]
    joined = {"en": " or ", "ar": " أو "}[language].join(str(m) for m in months)
    return {
        "currency": catalogue["currency"],
        "vat_percent": f"{catalogue['vat_rate'] * 100:g}",
        "credit_authority": _amount(catalogue["policy"]["credit_authority"]),
        "payment_attempts": str(catalogue["policy"]["payment_attempts"]),
        "suspend_after_days": str(catalogue["billing"]["suspend_after_days"]),
        "payment_terms_days": str(catalogue["billing"]["payment_terms_days"]),
        "family_member_fee": _amount(catalogue["billing"]["family_member_fee"]),
        "commitment_months": joined,
        "zones": ("; " if language == "en" else "؛ ").join(zones),
        "payg_rates": f"{rates} {unit}",
    }


# --- the product catalogue's sections ---------------------------------------------------------

_WORDS = {
    "en": {
        "month": "a month excluding VAT",
        "with_vat": "with VAT",
        "unlimited": "unlimited",
        "minutes": "minutes",
        "sms": "SMS",
        "ages": "ages",
        "and_over": "and over",
        "days": "days",
        "sold_to": "sold to",
        "zone": "zone",
    },
    "ar": {
        "month": "شهرياً دون الضريبة",
        "with_vat": "مع الضريبة",
        "unlimited": "غير محدود",
        "minutes": "دقيقة",
        "sms": "رسالة",
        "ages": "الأعمار",
        "and_over": "فما فوق",
        "days": "يوماً",
        "sold_to": "متاحة لـ",
        "zone": "منطقة",
    },
}
_SEPARATORS = {"en": (", ", "; "), "ar": ("، ", "؛ ")}
_KINDS = {
    "prepaid": Bilingual(en="Prepaid plans", ar="الباقات المسبقة الدفع"),
    "postpaid": Bilingual(en="Postpaid plans", ar="الباقات الآجلة الدفع"),
    "business": Bilingual(en="Business plans", ar="باقات الأعمال"),
    "roaming": Bilingual(en="Roaming packs", ar="باقات التجوال"),
    "data_coupon": Bilingual(en="Data coupons", ar="قسائم البيانات"),
}


def _allowance(value: float | None, unit: str, words: Mapping[str, str]) -> str:
    return f"{words['unlimited']} {unit}" if value is None else f"{value:g} {unit}"


def _data(value: float | None, language: Language) -> str:
    if language == "en":
        return "unlimited data" if value is None else f"{value:g} GB data"
    return "بيانات غير محدودة" if value is None else f"بيانات {value:g} GB"


def _plan_entry(plan: Mapping[str, Any], language: Language) -> str:
    words, vat = _WORDS[language], products()["vat_rate"]
    ages = f"{plan['min_age']}-{plan['max_age']}" if plan["max_age"] else f"{plan['min_age']}"
    ages += "" if plan["max_age"] else f" {words['and_over']}"
    name, (comma, semicolon) = plan["name"][language], _SEPARATORS[language]
    return (
        f"{name} ({plan['plan_id']}): {_amount(plan['price'])} {products()['currency']} "
        f"{words['month']} ({_amount(plan['price'] * (1 + vat))} {words['with_vat']})"
        f"{semicolon}{_data(plan['data_gb'], language)}{comma}"
        f"{_allowance(plan['voice_min'], words['minutes'], words)}{comma}"
        f"{_allowance(plan['sms'], words['sms'], words)}{semicolon}{words['ages']} {ages}."
    )


def _addon_entry(addon: Mapping[str, Any], language: Language) -> str:
    words, (comma, semicolon) = _WORDS[language], _SEPARATORS[language]
    zone = f" {words['zone']} {addon['zone']}{comma.rstrip()}" if addon["zone"] else ""
    return (
        f"{addon['name'][language]} ({addon['addon_id']}):{zone} "
        f"{_amount(addon['price'])} {products()['currency']}{comma}{addon['data_gb']:g} GB{comma}"
        f"{addon['validity_days']} {words['days']}{semicolon}{words['sold_to']} "
        f"{comma.join(addon['payment'])}."
    )


def _catalogue_sections(language: Language) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """(section id, title, entries) of the product catalogue, one section per kind."""
    catalogue = products()
    groups: dict[str, list[tuple[str, str]]] = {}
    for plan in catalogue["plans"]:
        kind = "business" if plan["segment"] == "business" else plan["payment"]
        groups.setdefault(kind, []).append((plan["plan_id"], _plan_entry(plan, language)))
    for addon in catalogue["addons"]:
        groups.setdefault(addon["kind"], []).append(
            (addon["addon_id"], _addon_entry(addon, language))
        )
    sections = []
    for kind, entries in groups.items():
        parts = [entries[i : i + SECTION_ENTRIES] for i in range(0, len(entries), SECTION_ENTRIES)]
        for number, part in enumerate(parts, start=1):
            section_id = kind.replace("_", "-") + (f"-{number}" if number > 1 else "")
            title = _KINDS[kind].in_lang(language)
            title += f" ({number}/{len(parts)})" if len(parts) > 1 else ""
            sections.append((section_id, title, part))
    return sections


# --- the corpus -------------------------------------------------------------------------------


def _fill(text: str, figures: Mapping[str, Any]) -> str:
    return " ".join(text.format_map(figures).split())


def _page(spec: PageSpec) -> Page:
    sections: dict[Language, tuple[Section, ...]] = {}
    for language in LANGUAGES:
        figures = {**_figures(language), **{k: str(v) for k, v in spec.values.items()}}
        built = [
            Section(
                spec.page_id,
                section.section_id,
                language,
                section.title.in_lang(language),
                tuple(
                    (rule.rule_id, _fill(getattr(rule, language), figures))
                    for rule in section.rules
                ),
            )
            for section in spec.sections
        ]
        if spec.catalogue:
            built += [
                Section(spec.page_id, section_id, language, title, tuple(entries))
                for section_id, title, entries in _catalogue_sections(language)
            ]
        sections[language] = tuple(built)
    return Page(spec.page_id, spec.title, spec.edition, spec.status, spec.segment, sections)


@cache
def policy_file() -> PolicyFile:
    """``policy.yaml``, validated."""
    text = resources.files(__package__).joinpath("policy.yaml").read_text("utf-8")
    return PolicyFile.model_validate(parse_yaml(text, "policy.yaml"))


def rules() -> dict[str, RuleSpec]:
    """The rules of the handbook in force, by id (what the intents follow)."""
    page = next(p for p in policy_file().pages if p.page_id == HANDBOOK)
    return {rule.rule_id: rule for section in page.sections for rule in section.rules}


def permitted_calls(values: Mapping[str, Any]) -> list[GoldCall]:
    """The calls the handbook's rules allow in an episode with ``values``: each rule's
    ``permits`` whose value ``when`` the episode has, filled with the episode's values."""
    calls = []
    for rule in rules().values():
        permit = rule.permits
        if permit is not None and values.get(permit.when) is not None:
            calls += [
                GoldCall(tool=step.tool, arguments=fill_gold_arguments(step.arguments, values))
                for step in permit.calls
            ]
    return calls


# --- search -----------------------------------------------------------------------------------

# Words too common to tell sections apart (English and Arabic, folded as normalize folds them).
_STOP_WORDS = (
    "a an and are as at be by for from has have how i if in is it its my of on or the to "
    "what when which who why with you your do does can me "
    "في من على الى عن ما ماذا هل هو هي ان او مع كم كيف لماذا التي الذي هذا هذه"
)
_STOP = frozenset(_STOP_WORDS.split())
_ARABIC_PREFIXES = ("وال", "بال", "كال", "فال", "لل", "ال")


def _stem(word: str) -> str:
    if "\u0600" <= word[0] <= "\u06ff":
        for prefix in _ARABIC_PREFIXES:
            if word.startswith(prefix) and len(word) - len(prefix) >= 3:
                return word[len(prefix) :]
        return word
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def terms(text: str) -> list[str]:
    """The words BM25 compares: folded, without stop words, lightly stemmed.

    >>> terms("The VAT on invoices"), terms("الفواتير والضريبة")
    (['vat', 'invoice'], ['فواتير', 'ضريبه'])
    """
    words = re.findall(r"\w+", normalize(text))
    return [_stem(w) for w in words if w not in _STOP and not (len(w) == 1 and w.isalpha())]


class _Index:
    """BM25 over one language's sections (k1 = 1.2, b = 0.75)."""

    K1, B = 1.2, 0.75

    def __init__(self, sections: list[Section]) -> None:
        self.sections = sections
        self.counts = [Counter(terms(f"{s.title} {s.text}")) for s in sections]
        self.lengths = [sum(c.values()) for c in self.counts]
        self.mean = sum(self.lengths) / max(len(self.lengths), 1)
        frequency = Counter(t for c in self.counts for t in c)
        n = len(sections)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in frequency.items()}

    def scores(self, query: list[str]) -> list[float]:
        out = []
        for counts, length in zip(self.counts, self.lengths, strict=True):
            norm = self.K1 * (1 - self.B + self.B * length / self.mean)
            out.append(
                sum(
                    self.idf[t] * counts[t] * (self.K1 + 1) / (counts[t] + norm)
                    for t in query
                    if t in counts
                )
            )
        return out


@dataclass(frozen=True)
class Handbook:
    pages: dict[str, Page]
    indexes: dict[Language, _Index]

    def search(self, query: str, language: Language) -> list[dict[str, Any]]:
        """The sections that best match ``query``, best first (at most :data:`RESULTS`)."""
        words = terms(query)
        index = self.indexes[language]
        ranked = sorted(
            ((score, i) for i, score in enumerate(index.scores(words)) if score > 0),
            key=lambda pair: (-pair[0], pair[1]),
        )[:RESULTS]
        results = []
        for score, i in ranked:
            section = index.sections[i]
            page = self.pages[section.page_id]
            results.append(
                {
                    "page_id": published_id(page.page_id, language),
                    "section_id": section.section_id,
                    "title": f"{page.title.in_lang(language)}: {section.title}",
                    "status": page.status,
                    "segment": page.segment,
                    "score": round(score, 2),
                    "snippet": _snippet(section, words),
                }
            )
        return results


def _snippet(section: Section, words: list[str]) -> str:
    """The rule with the most query words, cut at :data:`SNIPPET` characters."""
    wanted = set(words)
    best = max(section.rules, key=lambda rule: len(wanted & set(terms(rule[1]))))[1]
    return best if len(best) <= SNIPPET else best[: SNIPPET - 3].rstrip() + "..."


@cache
def handbook() -> Handbook:
    """Every page, built once per process and shared by the environments."""
    pages = {spec.page_id: _page(spec) for spec in policy_file().pages}
    indexes = {
        language: _Index([s for page in pages.values() for s in page.sections[language]])
        for language in LANGUAGES
    }
    return Handbook(pages, indexes)


@cache
def public_texts() -> tuple[str, ...]:
    """The texts of the pages in force, section by section: their figures (prices, fees,
    allowances, rates) are what an agent may tell a customer without reading it in the
    episode."""
    return tuple(
        section.text
        for page in handbook().pages.values()
        if page.status == "current"
        for section in page.sections["en"]
    )


# --- pages as documents -----------------------------------------------------------------------


def document(page_id: str, language: Language) -> Document:
    """A page in one language as a published document (text, HTML, PDF)."""
    page = handbook().pages[page_id]
    return Document(
        page.title.in_lang(language),
        page.edition.in_lang(language),
        page.status,
        page.segment,
        language,
        tuple(
            DocumentSection(section.section_id, section.title, section.rules)
            for section in page.sections[language]
        ),
    )


def documents() -> dict[str, Document]:
    """Every page in both languages, by published id (``care-handbook``, ``care-handbook-ar``)."""
    return {
        published_id(page_id, language): document(page_id, language)
        for page_id in handbook().pages
        for language in LANGUAGES
    }
