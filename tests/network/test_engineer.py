"""The simulated engineer: message classification, phrasing helpers and seeded replies."""

from __future__ import annotations

import pytest

from telcoenv.domains.network.engineer import (
    claims_change,
    claims_submission,
    classify_message,
    phrases,
    window_phrase,
)
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


CLAIMED_SUBMISSION = {
    "en": 'I have submitted the resolution with the intent as "PCI Collision" and the summary as'
    ' "PCI overlap on the cell".',
    "ar": "قمت بتقديم الحل بنوع المشكلة تعارض PCI وملخص عن التداخل.",
}
CLAIMED_CHANGE = {
    "en": "I have applied the new PCI to the cell; handovers should recover now.",
    "ar": "تم تعديل معرف الخلية الفيزيائي للخلية، ويفترض أن تتحسن عمليات التسليم الآن.",
}


@pytest.mark.parametrize("lang", ["en", "ar"])
def test_a_claimed_submission_is_answered_that_nothing_was_submitted(lang):
    """Run s11b (pci_collision en): the model told the engineer "I have submitted the
    resolution with the intent as ..." five times without calling submit_resolution, each
    acknowledged as a report. A message submits nothing: the engineer says so."""
    env = TelcoEnv("pci_collision", lang=lang, embedder=None)
    env.reset(seed=0)
    answers = {env.step(CLAIMED_SUBMISSION[lang])[0] for _ in range(6)}
    assert answers <= set(phrases()["replies"]["not_submitted"][lang]) and len(answers) > 1
    assert not env.unwrapped.trace.terminated and env.unwrapped.trace.submission is None


@pytest.mark.parametrize("lang", ["en", "ar"])
def test_a_claimed_change_is_checked_against_the_network(lang):
    """A report that claims a change while the network is as it was is told that nothing
    changed on the cell; once the change was made with a tool, the same report is
    acknowledged as any other."""
    env = TelcoEnv("pci_collision", lang=lang, embedder=None, privileged=True)
    _, info = env.reset(seed=0)
    cell = env.unwrapped.trace.start_state["serving_cell"]["cell_id"]
    not_changed = {t.format(cell_id=cell) for t in phrases()["replies"]["not_changed"][lang]}
    assert env.step(CLAIMED_CHANGE[lang])[0] in not_changed
    fix = next(s for s in info["privileged"]["gold_chain"] if s["tool"] == "optimize_cell")
    arguments = {**fix["arguments"], "reason": "PCI clash with a neighbour"}
    observation, *_ = env.step({"name": "optimize_cell", "arguments": arguments})
    assert "error" not in observation
    answer = env.step(CLAIMED_CHANGE[lang])[0]
    assert answer not in not_changed and "submit_resolution" in answer


@pytest.mark.parametrize(
    ("message", "change", "submission"),
    [
        ("I have applied the new tilt.", True, False),
        ("I changed nothing yet.", False, False),
        ("I have not applied any change.", False, False),
        ("I will submit the resolution next.", False, False),
        ("تم تعديل الميل.", True, False),
        ("طبقت الميل الجديد.", True, False),
        ("لم يتم تطبيق أي تغيير.", False, False),  # "تم" inside a negated "يتم"
        ("ما طبقت أي تغيير بعد.", False, False),
        ("يتم تطبيق التغيير الآن.", False, False),  # "is being applied": not done
        ("قمت بتقديم الحل.", False, True),
        ("ما قمت بتقديم الحل.", False, False),
        ("لم يتم إرسال الحل بعد.", False, False),
    ],
)
def test_a_claim_is_an_affirmative_statement(message, change, submission):
    assert (claims_change(message), claims_submission(message)) == (change, submission)
