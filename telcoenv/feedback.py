"""What an agent should do next after an error: one plain sentence in the episode's language.

Every error observation keeps its machine-readable ``{"error": {"type", "message"}}``; the
episode adds ``"next"`` from here, so that a model that cannot act on a bare error type (an
empty reply, an unknown id) is told what would move the episode on.
"""

from __future__ import annotations

from collections.abc import Mapping

from telcoenv.specs import Language

_AGAIN = {
    "en": "Call one of your tools, write a plain message to the {who}, or call submit_resolution "
    "to finish.",
    "ar": "استدعِ إحدى أدواتك، أو اكتب رسالة نصية إلى {who}، أو استدعِ submit_resolution لإنهاء "
    "الحالة.",
}
_FIX_ARGUMENTS = {
    "en": "Correct the argument the message names and call the tool again.",
    "ar": "صحّح الوسيط المذكور في الرسالة ثم استدعِ الأداة مرة أخرى.",
}
_OVER = {
    "en": "The episode is over: call reset() to start a new one.",
    "ar": "انتهت الحالة: استدعِ reset() لبدء حالة جديدة.",
}
NEXT_STEPS: dict[str, dict[str, str]] = {
    "empty_action": _AGAIN,
    "malformed_action": _AGAIN,
    "malformed_json": _AGAIN,
    "unsupported_action": _AGAIN,
    "invalid_text": _AGAIN,
    "unknown_tool": {
        "en": "Call a tool by the exact name it has in your tool list, or write to the {who}.",
        "ar": "استدعِ الأداة باسمها كما يرد في قائمة أدواتك، أو اكتب إلى {who}.",
    },
    "submission_as_text": {
        "en": "To finish, call the tool submit_resolution (a tool call, not text) with the intent "
        "and a summary; to write to the {who}, do not start with the tool's name.",
        "ar": "لإنهاء الحالة، استدعِ الأداة submit_resolution (استدعاء أداة وليس نصاً) مع نوع "
        "المشكلة وملخص؛ وللكتابة إلى {who} لا تبدأ رسالتك باسم الأداة.",
    },
    "invalid_arguments": _FIX_ARGUMENTS,
    # Advice only (the error's type stays invalid_arguments): see tooling._advice.
    "empty_optional": {
        "en": "Call the tool again and leave out the arguments the message names; do not fill "
        "them in.",
        "ar": "استدعِ الأداة مرة أخرى دون الوسائط المذكورة في الرسالة، ولا تملأها بقيم.",
    },
    "unexpected_arguments": {
        "en": "Call the tool again with only the arguments it takes (the message lists them); "
        "put anything else into one of them, such as a summary, or leave it out.",
        "ar": "استدعِ الأداة مرة أخرى بالوسائط التي تقبلها فقط (الرسالة تذكرها)، وضع ما سواها "
        "داخل أحدها، كالملخص، أو اتركه.",
    },
    "malformed_arguments": _FIX_ARGUMENTS,
    "bad_args": _FIX_ARGUMENTS,
    "not_found": {
        "en": "Use an id that an earlier tool output or the {who} gave you; do not copy the "
        "examples of the tool descriptions.",
        "ar": "استخدم معرّفاً ورد في مخرجات أداة سابقة أو أعطاك إياه {who}، ولا تنسخ أمثلة أوصاف "
        "الأدوات.",
    },
    "rejected": {
        "en": "Nothing was changed: read the reason, then change the request or choose another "
        "action.",
        "ar": "لم يتغير شيء: اقرأ السبب، ثم عدّل الطلب أو اختر إجراءً آخر.",
    },
    "approval_required": {
        "en": "Ask the {who} to approve this change in a plain message, then call the tool again.",
        "ar": "اطلب من {who} الموافقة على هذا التغيير في رسالة نصية، ثم استدعِ الأداة مرة أخرى.",
    },
    "step_budget_exhausted": _OVER,
    "episode_ended": _OVER,
    "execution": {
        "en": "Try the call again with other arguments, or choose another tool.",
        "ar": "أعد المحاولة بوسائط أخرى، أو اختر أداة أخرى.",
    },
}
# What the counterpart says to an empty message, before the advice (it is answered in words,
# not with a JSON error: a model that went silent needs a conversation turn it can follow).
SILENCE = {
    "en": "I didn't get any message from you.",
    "ar": "لم تصلني منك أي رسالة.",
}
# What the counterpart says when asked to call one of the agent's tools or to give its output:
# it has no tools (a 1.5B model asked the engineer for the output of kpi_timeseries for 8 steps).
NOT_THEIR_TOOL = {
    "en": "I can't run {tool}: the tools are yours, not mine. Call {tool} yourself.",
    "ar": "لا أستطيع تشغيل {tool}، فالأدوات لديك وليست لدي. استدعِ {tool} بنفسك.",
}
NOT_THEIR_TOOLS = {
    "en": "I can't run tools: they are yours, not mine. Make the call yourself.",
    "ar": "لا أستطيع تشغيل الأدوات، فهي لديك وليست لدي. استدعِ الأداة بنفسك.",
}
# How the counterpart is named in Arabic; another domain's counterpart keeps its own name.
_ARABIC_NAMES = {"engineer": "المهندس", "customer": "العميل", "subscriber": "المشترك"}


def next_step(
    kind: str,
    lang: Language,
    counterpart: str,
    overrides: Mapping[str, Mapping[str, str]] | None = None,
) -> str | None:
    """The sentence that tells the agent what to do after an error of ``kind`` (``None`` for
    a kind with no advice); a domain's ``overrides`` (its ``next_steps``: which of its tools
    lists the valid ids) win over the generic advice. A refined kind (``not_found.msisdn``:
    an id that has the form of a line number) falls back to its base kind."""
    overrides = overrides or {}
    sentences = overrides.get(kind) or NEXT_STEPS.get(kind)
    if sentences is None and "." in kind:
        return next_step(kind.split(".")[0], lang, counterpart, overrides)
    if sentences is None:
        return None
    return sentences.get(lang, sentences["en"]).format(who=counterpart_name(counterpart, lang))


def counterpart_name(counterpart: str, lang: Language) -> str:
    """The counterpart as the advice names it in ``lang``."""
    return _ARABIC_NAMES.get(counterpart, counterpart) if lang == "ar" else counterpart


def silence_reply(lang: Language, counterpart: str) -> str:
    """The counterpart's answer to an empty message: that nothing came, and what to do."""
    advice = next_step("empty_action", lang, counterpart) or ""
    return f"{SILENCE.get(lang, SILENCE['en'])} {advice}".strip()


def not_their_tool_reply(tool: str, lang: Language) -> str:
    """The counterpart's answer to a request to call the agent's ``tool`` (``""``: a tool the
    request does not name): call it yourself."""
    texts = NOT_THEIR_TOOL if tool else NOT_THEIR_TOOLS
    return texts.get(lang, texts["en"]).format(tool=tool)


# The ``hints`` curriculum knob: after every step, the next gold step's tool or call
# (telcoenv.curriculum).
HINT = {
    "en": "Hint: the next step is to call {tool}.",
    "ar": "تلميح: الخطوة التالية هي استدعاء {tool}.",
}
HINT_CALL = {
    "en": "Hint: the next step is this call:",
    "ar": "تلميح: الخطوة التالية هي هذا الاستدعاء:",
}
HINT_SUBMIT_CALL = {
    "en": "Hint: the investigation and the fix are done: submit this, with a summary of the "
    "cause, the evidence and what you did added to it:",
    "ar": "تلميح: اكتمل التحقيق والإصلاح: أرسل هذا الاستدعاء بعد أن تضيف إليه ملخصاً للسبب "
    "والأدلة وما قمت به:",
}
HINT_SUBMIT = {
    "en": "Hint: the investigation and the fix are done: call submit_resolution with the intent "
    "and a summary.",
    "ar": "تلميح: اكتمل التحقيق والإصلاح: استدعِ submit_resolution مع نوع المشكلة وملخص.",
}


def hint(tool: str | None, lang: Language, *, call: bool = False) -> str:
    """The hint after a step: call ``tool`` next, or (``None``: the gold chain is done)
    submit; with ``call``, the words that introduce the call written out after them."""
    if call:
        table = HINT_CALL if tool is not None else HINT_SUBMIT_CALL
        return table.get(lang, table["en"])
    if tool is None:
        return HINT_SUBMIT.get(lang, HINT_SUBMIT["en"])
    return HINT.get(lang, HINT["en"]).format(tool=tool)
