"""Gold resolution summaries: the intent's resolution template filled with the episode's values.

A summary states the diagnosis (root cause), the evidence (the episode's key sampled KPIs, quoted
with units), the corrective action, the steps of the gold chain (including the ticket where the
intent requires one) and the follow-up, in English and in Modern Standard Arabic. It is the
reference RA compares an agent's summary with.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

from telcoenv.datafiles import parse_yaml
from telcoenv.domains.network.engineer import (
    join_phrases,
    quote_kpis,
    ranked_evidence,
    window_phrase,
)
from telcoenv.domains.network.models import Intent
from telcoenv.specs import LANGUAGES, GoldStep, Language


@cache
def phrases() -> dict[str, Any]:
    return parse_yaml(
        resources.files(__package__).joinpath("summaries.yaml").read_text("utf-8"), "summaries.yaml"
    )


def _action(step: GoldStep, values: dict[str, Any], lang: Language) -> str:
    bank = phrases()
    fields = {
        **values,
        "window": window_phrase(values["window"], lang),
        "changes": values["changes"],
        "severity": bank["severities"][values["ticket_severity"]][lang],
        "team": bank["teams"][values["ticket_team"]][lang],
    }
    kpi = step.arguments.get("kpi")
    if kpi is not None:
        fields["kpi"] = bank["families"][kpi][lang]
    return bank["actions"][step.tool][lang].format_map(fields)


def gold_summary(
    intent: Intent, values: dict[str, Any], sampled: dict[str, float], lang: Language
) -> str:
    """The gold resolution summary of an episode in ``lang``."""
    evidence = quote_kpis(
        ranked_evidence(sampled, intent.evidence, intent.fault.context_kpis)[:3], sampled, lang
    )
    resolution = intent.resolution
    fields = {**values, "window": window_phrase(values["window"], lang)}
    return phrases()["template"][lang].format_map(
        {
            **fields,
            "root_cause": resolution.root_cause.in_lang(lang).format_map(fields),
            "corrective_action": resolution.corrective_action.in_lang(lang).format_map(fields),
            "evidence": evidence,
            "actions": join_phrases(
                [_action(step, values, lang) for step in intent.gold_chain], lang
            ),
        }
    )


def gold_summaries(
    intent: Intent, values: dict[str, Any], sampled: dict[str, float]
) -> dict[str, str]:
    """The gold summary in every language."""
    return {lang: gold_summary(intent, values, sampled, lang) for lang in LANGUAGES}
