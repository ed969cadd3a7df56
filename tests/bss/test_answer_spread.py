"""No free answers: no single answer is right in more than half of a care intent's episodes,
and the payment failure reason, drawn among several, is consistent with its payment record.

An answer that is the gold answer of most episodes can be submitted without reading anything
(every payment failure was "card expired" before the reasons were drawn). For every care intent
that asks a question, the most frequent gold answer over many seeds is the gold answer of at
most half of the episodes, and, submitted as the answer of every episode, it is judged right in
at most half of them (the matcher, not only the spelling).
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest

import telcoenv
from telcoenv.domains.bss import bss_domain
from telcoenv.domains.bss.generator import generate, payment_failures
from telcoenv.domains.bss.scenario import sample_scenario
from telcoenv.domains.bss.schema import bss_metadata
from telcoenv.metrics.answers import answers_match

COLUMNS = list(bss_metadata().tables["payments"].columns.keys())
INTENTS = (
    "bill_shock",
    "duplicate_charge",
    "payment_failure",
    "outstanding_balance",
    "average_data_use",
    "plan_recommendation",
    "family_data",
)


def _golds(intent: str, seeds: int) -> list[str]:
    env = telcoenv.make(intent, embedder=None, privileged=True)
    try:
        return [env.reset(seed=seed)[1]["privileged"]["gold_answer"] for seed in range(seeds)]
    finally:
        env.close()


def _check_spread(intent: str, seeds: int) -> None:
    golds = _golds(intent, seeds)
    assert all(golds), f"{intent}: an episode without a gold answer"
    top, count = Counter(golds).most_common(1)[0]
    assert count <= seeds / 2, f"{intent}: {top!r} is the answer of {count}/{seeds} episodes"
    vocabulary = bss_domain().answer_vocabulary
    judged = sum(answers_match(top, gold, vocabulary=vocabulary) for gold in golds)
    assert judged <= seeds / 2, f"{intent}: submitting {top!r} passes {judged}/{seeds}"


@pytest.mark.parametrize("intent", INTENTS)
def test_no_answer_is_right_in_most_of_150_episodes(intent):
    _check_spread(intent, 150)


@pytest.mark.slow  # 7,000 resets: about a minute
@pytest.mark.parametrize("intent", INTENTS)
def test_no_answer_is_right_in_most_of_1000_episodes(intent):
    _check_spread(intent, 1000)


def test_the_payment_failures_draw_every_stored_reason():
    """Every reason of products.yaml is drawn, and each is the one stored on the failed payment
    (tests/bss/test_bss_data.py checks the payment records themselves)."""
    reasons = {f.reason for f in payment_failures()}
    assert set(_golds("payment_failure", 100)) == reasons


def test_every_payment_record_is_consistent_with_its_reason_and_account():
    """Over many episodes: an account pays every bill the same way; a card has its last digits
    and an expiry month, a direct debit neither; a card is valid beyond each settled payment,
    an expired card's month is before the failed payment's; the failed payment's method and
    channel are ones its reason happens to (3-D Secure: an online card payment); and the gold
    answer is the reason stored on it."""
    failures = {f.reason: f for f in payment_failures()}
    blueprints = bss_domain().catalog.blueprints
    seen: Counter[tuple[str, str, str]] = Counter()
    for position, blueprint in enumerate(blueprints["PAYMENT_FAILURE"]):
        for index in range(100):
            rng = np.random.default_rng([index, position])
            data = generate(rng, "e", sample_scenario(blueprint, rng).focal)
            payments = [dict(zip(COLUMNS, row, strict=True)) for row in data.rows["payments"]]
            by_account: dict[str, set[tuple[str, str, str | None, str | None]]] = {}
            for p in payments:
                way = (p["method"], p["channel"], p["card_last4"], p["card_expiry"])
                by_account.setdefault(p["account_id"], set()).add(way)
                assert (p["method"] == "card") == (p["card_last4"] is not None), p
                assert (p["method"] == "card") == (p["card_expiry"] is not None), p
                assert p["card_last4"] is None or re.fullmatch(r"[0-9]{4}", p["card_last4"])
                if p["status"] == "settled" and p["method"] == "card":
                    assert p["card_expiry"] >= p["paid_at"][:7], p
                assert (p["status"] == "failed") == (p["failure_reason"] is not None), p
            assert all(len(ways) == 1 for ways in by_account.values())
            (failed,) = [p for p in payments if p["status"] == "failed"]
            assert failed["account_id"] == data.account_id
            failure = failures[failed["failure_reason"]]
            assert failed["method"] in failure.methods and failed["channel"] in failure.channels
            expired = failed["method"] == "card" and failed["card_expiry"] < failed["paid_at"][:7]
            assert expired == failure.card_expired, failed
            assert data.facts["failure_reason"] == failed["failure_reason"]
            seen[(failed["failure_reason"], failed["method"], failed["channel"])] += 1
    assert {reason for reason, _, _ in seen} == set(failures)
    assert {(m, c) for r, m, c in seen if r == "3-D Secure authentication failed"} == {
        ("card", "online")
    }
    assert ("insufficient funds", "direct_debit", "autopay") in seen
