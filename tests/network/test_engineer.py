"""The simulated engineer: message classification, phrasing helpers and seeded replies."""

from __future__ import annotations

import pytest

from telcoenv.domains.network.engineer import classify_message, phrases, window_phrase
from telcoenv.env import TelcoEnv


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ("Which cell is affected?", "cell_id"),
        ("What's the site id?", "cell_id"),
        ("Over what time window did it start?", "window"),
        ("May I apply the tilt change?", "approval"),
        ("Shall I go ahead with the ticket?", "approval"),
        ("Thanks, looking now.", "report"),  # asks nothing: findings or a plan
        ("Root cause: a PCI collision with NR-SUB-MACRO-101.", "report"),
        ("Can you tell me the weather there?", "other"),  # asks what the engineer can't tell
        ("الخلية تعاني من تعارض في معرف الخلية الفيزيائي.", "report"),
        ("هل تعرف حالة الطقس هناك؟", "other"),
        ("ما هو معرف الخلية؟", "cell_id"),
        ("منذ متى بدأت المشكلة؟", "started"),
        ("هل يمكنني تنفيذ التغيير؟", "approval"),
    ],
)
def test_messages_are_classified(message, kind):
    assert classify_message(message) == kind


@pytest.mark.parametrize(
    ("window", "en", "ar"),
    [
        ("1h", "the last hour", "الساعة الماضية"),
        ("2h", "the last 2 hours", "الساعتين الماضيتين"),
        ("6h", "the last 6 hours", "آخر 6 ساعات"),
        ("24h", "the last 24 hours", "آخر 24 ساعة"),
        ("30m", "the last 30 minutes", "آخر 30 دقيقة"),
        ("1d", "the last 24 hours", "آخر 24 ساعة"),
    ],
)
def test_window_phrases(window, en, ar):
    assert window_phrase(window, "en") == en and window_phrase(window, "ar") == ar


def test_replies_use_the_episode_facts_in_both_languages():
    for lang in ("en", "ar"):
        env = TelcoEnv("coverage_hole", lang=lang)
        env.reset(seed=2)
        network = env.trace.start_state
        answers = {env.step("Which cell is it?")[0] for _ in range(5)}
        assert all(
            network["serving_cell"]["cell_id"] in a or network["cluster_id"] in a for a in answers
        )
        assert len(answers) > 1  # seeded variation, not one canned line


def test_every_intent_has_symptom_phrasing_in_both_languages(catalog):
    bank = phrases()
    for intent in catalog.intents:
        for lang in ("en", "ar"):
            assert len(bank["symptoms"][intent.key][lang]) >= 4


@pytest.mark.parametrize("lang", ["en", "ar"])
def test_a_report_is_acknowledged_with_how_the_case_closes(lang):
    """Recorded from Qwen2.5-Coder-1.5B (pci_collision en): the model told the engineer its
    findings nine times ("The cluster ... is experiencing downlink throughput drop due to
    handover issues ...") and heard "That's all I know from the field. Can you check ...?" each
    time. A message that asks nothing is acknowledged, with the way to close the case; it
    approves nothing."""
    env = TelcoEnv("pci_collision", lang=lang, embedder=None, require_approval=True)
    env.reset(seed=0)
    findings = (
        "The handover success rate dropped to 84.4% because of a PCI clash with a neighbour."
        if lang == "en"
        else "انخفض معدل نجاح التسليم إلى 84.4% بسبب تعارض معرف الخلية الفيزيائي مع خلية مجاورة."
    )
    answers = {env.step(findings)[0] for _ in range(6)}
    assert len(answers) > 1 and all("submit_resolution" in a for a in answers)
    assert not any(a in phrases()["replies"]["approval"][lang] for a in answers)
    assert not env.unwrapped.episode.approval.approved
