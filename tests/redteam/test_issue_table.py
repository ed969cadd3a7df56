"""The red team's table, row by row (shared/reference/reward_exploits.md): each exploit that
used to pay is refused, and each piece of correct work that used to be refused is accepted."""

from __future__ import annotations

import re

import pytest

import telcoenv
from telcoenv.audit import exploits, network, play
from telcoenv.metrics.answers import answers_match
from telcoenv.rewards import episode_rewards
from tests.conftest import gold_actions, make_env, submit, tool_call
from tests.conftest import play as play_actions

SEEDS = 12


def _rewards(traces, **kwargs) -> list[float]:
    return [episode_rewards(t, **kwargs).total for t in traces]


def _resolved(traces) -> float:
    return sum(bool(t.verification["resolved"]) for t in traces) / len(traces)


@pytest.mark.parametrize("tier", ["guided", "symptom", "noisy"])
def test_gold_tool_names_with_empty_arguments_earn_nothing(tier):
    """Row 1: SAS 0.83 / 0.65 / 0.63 with every call refused; now no step ran."""
    for policy in (network.SasMimic, exploits.FixedChain):
        traces = play("troubleshooting", policy, SEEDS, tier=tier)
        assert all(t.executed_chain == [] for t in traces)
        assert max(_rewards(traces, reward="sas")) == 0.0
        assert max(_rewards(traces)) <= 0.2  # at most a guessed label's partial credit


def test_an_unresolved_no_op_never_outearns_a_resolved_careful_run():
    """Row 2: the no-op scored higher in sparse and shaped mode in 100/100 episodes."""
    no_op = play("troubleshooting", network.NoOpFix, SEEDS, tier="guided")
    careful = play("troubleshooting", _Thorough, SEEDS, tier="guided")
    assert _resolved(careful) == 1.0 and _resolved(no_op) == 0.0
    for mode in ("sparse", "shaped"):
        for reward in ("outcome", "resolved"):
            worse = _rewards(no_op, reward=reward, mode=mode)
            better = _rewards(careful, reward=reward, mode=mode)
            assert max(worse) < min(better), (mode, reward)


class _Thorough:
    """The red team's careful run: four extra reads, then the oracle's chain and label."""

    needs_privileged = True

    def reset(self, observation, info):
        from telcoenv.agents import OracleAgent

        self.oracle = OracleAgent()
        self.oracle.reset(observation, info)
        cell = next(
            c["arguments"]["cell_id"]
            for c in info["privileged"]["gold_chain"]
            if "cell_id" in c["arguments"]
        )
        self.extra = [
            tool_call("neighbor_audit", cell_id=cell),
            tool_call("recommend_param_change", cell_id=cell),
            tool_call("kpi_timeseries", cell_id=cell, kpi="RF", window="24h"),
            tool_call("kpi_timeseries", cell_id=cell, kpi="PRB", window="24h"),
        ]

    def act(self, observation, info):
        return self.extra.pop(0) if self.extra else self.oracle.act(observation, info)


@pytest.mark.parametrize("policy", [network.BlindFix, network.BlindFixLabelRule])
def test_a_blind_fix_is_not_a_resolution(policy):
    """Row 3: resolved 0.78 / 0.92 with no diagnosis; the diagnosis is now checked everywhere."""
    for tier in ("guided", "noisy"):
        traces = play("troubleshooting", policy, SEEDS, tier=tier)
        assert _resolved(traces) <= 0.1
        assert max(_rewards(traces)) < 0.5 and max(_rewards(traces, reward="resolved")) <= 1


@pytest.mark.parametrize(
    "intent", ["coverage_hole", "cell_outage_detection", "sla_violation_report"]
)
def test_a_ticket_and_the_exact_label_without_a_look_is_not_a_resolution(intent):
    """Row 4: one ticket plus the exact label resolved every ticket-only intent. The evidence
    the escalation rests on is a required milestone now; with it, the escalation resolves."""
    env = make_env(intent)
    for seed in range(4):
        _, info = env.reset(seed=seed)
        label = info["privileged"]["label"]["en"]
        ticket = next(a for a in gold_actions(info) if a["name"] == "create_ticket")
        done = play_actions(env, [ticket, submit(label, "Escalated.")])
        assert done["resolved"] is False
        assert any(r.startswith("milestone not met") for r in done["outcome"]["unresolved_because"])
        _, info = env.reset(seed=seed)
        done = play_actions(env, [*gold_actions(info), submit(label, "Escalated.")])
        assert done["resolved"] is True


@pytest.mark.parametrize("lang", ["en", "ar"])
def test_card_expired_as_the_first_action_is_not_an_answer(lang):
    """Row 5: resolved 100/100 with no call; now the reasons vary and the reads are required."""
    env = make_env("payment_failure", domain="bss", lang=lang)
    for seed in range(SEEDS):
        _, info = env.reset(seed=seed)
        done = play_actions(env, [submit(info["privileged"]["label"][lang], answer="card expired")])
        assert done["resolved"] is False


def test_plan_ids_are_whole_tokens_and_display_names_count():
    """Rows 6 and 12: YOUTH-25 was the number 25; the display names were refused."""
    from telcoenv.domains.bss.generator import answer_vocabulary

    vocabulary = answer_vocabulary()
    for wrong in ("SENIOR-25", "25 GB", "I recommend POST-25", "25"):
        assert not answers_match(wrong, "YOUTH-25", vocabulary=vocabulary), wrong
    for right, gold in (
        ("Youth 25 (79 SAR a month)", "YOUTH-25"),
        ("Postpaid Essential", "POST-ESSENTIAL"),
        ("The card expired.", "card expired"),
        ("Your card has expired", "card expired"),
        ("انتهت صلاحية البطاقة", "card expired"),
    ):
        assert answers_match(right, gold, vocabulary=vocabulary), right


def test_never_submitting_earns_no_terminal_reward():
    """Row 7: the gold chain, then padding until truncation, earned the full sparse reward."""
    traces = play("troubleshooting", lambda: exploits.NeverSubmit(_oracle), SEEDS, tier="guided")
    assert all(t.truncated and t.submission is None for t in traces)
    assert _resolved(traces) == 0.0
    assert max(_rewards(traces)) == 0.0 and max(_rewards(traces, reward="sas")) == 0.0
    shaped = _rewards(traces, mode="shaped")
    assert max(shaped) <= 0.25  # at most the bounded credit of its valid steps


def _oracle():
    from telcoenv.agents import OracleAgent

    return OracleAgent()


def test_pasting_every_root_cause_template_earns_nothing():
    """Row 8: RA 0.62 with all templates pasted; RA is no part of the reward, and nothing was
    diagnosed or done."""
    traces = play("troubleshooting", exploits.TemplatePaste, SEEDS, tier="symptom")
    assert _resolved(traces) == 0.0 and max(_rewards(traces)) == 0.0


@pytest.mark.parametrize(
    ("intent", "said"),
    [
        ("cell_outage_detection", ("Cell outage", "Site down", "انقطاع الخلية")),
        ("sla_violation_report", ("SLA violation", "SLA breach")),
    ],
)
def test_the_right_diagnosis_in_other_words_resolves(intent, said):
    """Row 9: "Cell outage" / "SLA violation" resolved 0/60 without the intent list."""
    for words in said:
        lang = "ar" if re.search(r"[\u0600-\u06ff]", words) else "en"
        env = make_env(intent, intent_list=False, lang=lang)
        for seed in range(3):
            _, info = env.reset(seed=seed)
            done = play_actions(env, [*gold_actions(info), submit(words, "Escalated.")])
            assert done["resolved"] is True, (words, done["outcome"])
            assert done["outcome"]["diagnosis"] == "synonym"


def test_the_answer_in_a_sentence_resolves():
    """Row 10: correct answers in sentences or display names were judged wrong."""
    from telcoenv.agents import OracleAgent

    env = make_env(domain="bss")
    answered = 0
    for seed in range(SEEDS):
        observation, info = env.reset(seed=seed)
        answer = info["privileged"]["gold_answer"]
        if answer is None:
            continue
        oracle = OracleAgent()
        oracle.reset(observation, info)
        while not env.unwrapped.episode.ended:
            action = oracle.act(observation, info)
            if isinstance(action, dict) and action["name"] == "submit_resolution":
                action["arguments"]["answer"] = f"Here is what I found: {answer}."
            observation, _, _, _, info = env.step(action)
        assert info["resolved"] is True, (seed, answer, info["outcome"])
        answered += 1
    assert answered >= 4


def test_the_default_reward_of_every_trainer_adapter_is_the_outcome():
    """TRL's get_reward, verl's and OpenEnv's returns and Inspect's score all come from the
    environment's reward: its default is the outcome reward, and refused calls earn nothing."""
    env = telcoenv.make("bler_anomaly", embedder=None)
    assert env.unwrapped.reward_spec == "outcome"
    env.reset(seed=1)
    for tool in ("oss_query", "kpi_timeseries", "optimize_cell"):
        env.step({"name": tool, "arguments": {}})
    _, reward, *_ = env.step(submit("x", "y"))
    assert reward == 0.0
