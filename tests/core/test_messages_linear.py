"""Huge plain messages: answered at once, by their start only (the first ROUTED_SENTENCES
sentences of the first ROUTED_CHARS characters are routed; approval reads APPROVAL_CHARS)."""

from __future__ import annotations

import time

import pytest

from telcoenv.domains import get_domain
from telcoenv.domains.bss import customer
from telcoenv.domains.network import engineer
from telcoenv.env import TelcoEnv
from telcoenv.routing import ROUTED_CHARS, ROUTED_SENTENCES
from telcoenv.text import APPROVAL_CHARS
from tests.conftest import serving_cell

# Realistic agent chatter that asks neither counterpart anything.
FILLER = {
    "en": "I am still reviewing the radio parameters before we continue. ",
    "ar": "ما زلت أراجع معاملات الراديو قبل أن نستمر في العمل. ",
}
# A question each counterpart answers with a fact of the episode.
QUESTION = {
    ("network", "en"): "Which cell is affected?",
    ("network", "ar"): "ما هو معرف الخلية؟",
    ("bss", "en"): "What is your phone number?",
    ("bss", "ar"): "ما هو رقم جوالك؟",
}
SIZES = [1_000_000, 10_000_000]


def filler(lang: str, size: int) -> str:
    unit = FILLER[lang]
    return (unit * (size // len(unit) + 1))[:size]


@pytest.fixture(scope="module")
def envs() -> dict[str, TelcoEnv]:
    return {
        "network": TelcoEnv("beam_misalignment", embedder=None),
        "bss": TelcoEnv(None, domain="bss", embedder=None),
    }


def answer(env: TelcoEnv, lang: str, message: str) -> str:
    """The counterpart's reply to ``message`` as the first step of one fixed episode."""
    env.reset(seed=0, options={"lang": lang})
    return env.step(message)[0]


def fact(env: TelcoEnv, domain: str) -> str:
    """What the question asks: the serving cell, or the caller's line number."""
    if domain == "network":
        return serving_cell(env)
    return env.trace.start_state["msisdns"][0]


@pytest.mark.parametrize("lang", ["en", "ar"])
def test_the_filler_and_the_questions_are_what_the_tests_assume(lang):
    text = filler(lang, 20_000)
    assert engineer.classify_message(text) == "report" and customer.asked_topics(text) == []
    assert engineer.classify_message(QUESTION["network", lang]) == "cell_id"
    assert customer.asked_topics(QUESTION["bss", lang]) == ["msisdn"]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("lang", ["en", "ar"])
@pytest.mark.parametrize("domain", ["network", "bss"])
def test_a_huge_message_gets_the_reply_of_its_question(envs, domain, lang, size):
    env = envs[domain]
    short = answer(env, lang, QUESTION[domain, lang])
    assert fact(env, domain) in short
    message = QUESTION[domain, lang] + " " + filler(lang, size)
    started = time.perf_counter()
    huge = answer(env, lang, message)
    assert time.perf_counter() - started < 2.0  # a sanity bound; it takes milliseconds
    assert huge == short  # the same seeded reply as to the question alone
    assert env.trace.actions[-1].raw == message  # recorded whole, only classified in part


@pytest.mark.parametrize("lang", ["en", "ar"])
@pytest.mark.parametrize("domain", ["network", "bss"])
def test_a_question_past_the_routed_start_does_not_count(envs, domain, lang):
    env, question = envs[domain], QUESTION[domain, lang]
    nothing_asked = answer(env, lang, filler(lang, 2 * ROUTED_CHARS))
    assert nothing_asked != answer(env, lang, question)
    assert answer(env, lang, filler(lang, ROUTED_CHARS) + question) == nothing_asked
    sentences = FILLER[lang] * ROUTED_SENTENCES  # the question is sentence number 9
    assert answer(env, lang, sentences + question) == nothing_asked
    within = FILLER[lang] * (ROUTED_SENTENCES - 1) + question
    assert len(within) < ROUTED_CHARS
    assert answer(env, lang, within) == answer(env, lang, question)


@pytest.mark.parametrize(
    ("domain", "approval"),
    [
        ("network", "May I apply the tilt change?"),
        ("network", "هل يمكنني تنفيذ التغيير؟"),
        ("bss", "Shall I go ahead with the change?"),
        ("bss", "هل توافق على التغيير؟"),
    ],
)
def test_approval_is_read_within_the_cap_only(domain, approval):
    asks = get_domain(domain).asks_approval
    lang = "en" if approval.isascii() else "ar"
    assert asks(approval + " " + filler(lang, 10_000_000))
    assert not asks(filler(lang, APPROVAL_CHARS) + approval)
