"""The OpenAI-compatible agent (official openai SDK) against a strict chat-completions stub
server on loopback."""

from __future__ import annotations

import asyncio
import json
import pickle
import time

import pytest

from telcoenv.agents import load_agent, run_episode
from telcoenv.agents.openai_agent import (
    ModelServerError,
    OpenAIAgent,
    _is_refusal,
    arguments_call,
    calls_in_text,
)
from telcoenv.env import TelcoEnv
from telcoenv.errors import TelcoEnvError
from telcoenv.evaluation.runner import RunConfig, build_grid, evaluate
from tests.conftest import result_store
from tests.stub_openai import StubServer, conversation_error

TOOLS = {"oss_query", "submit_resolution", "create_ticket"}


@pytest.fixture
def server():
    stub = StubServer()
    yield stub
    stub.close()


def _agent(server: StubServer, model: str, **options):
    options = {"timeout": 1.0, "prompt_price": 0.5, "completion_price": 1.5, **options}
    return load_agent("openai", model=model, base_url=server.base_url, api_key="sk-test", **options)


def _valid_conversations(server: StubServer) -> bool:
    return all(conversation_error(r["messages"]) is None for r in server.requests)


def test_tool_calling_episode_with_usage(server):
    env = TelcoEnv("beam_misalignment", embedder=None)
    agent = _agent(server, "scripted")
    _, info = run_episode(env, agent, seed=5)
    assert info["trace"].predicted_chain == ["oss_query"]
    assert info["trace"].submission.intent == "Beam Misalignment"
    first, second = server.requests
    assert first["model"] == "scripted" and first["tool_choice"] == "auto"
    assert first["max_tokens"] == 512 and first["temperature"] == 0.0
    assert {t["function"]["name"] for t in first["tools"]} >= {"oss_query", "submit_resolution"}
    assert first["messages"][0]["role"] == "system"
    tool_message = second["messages"][-1]  # the result went back under the call's id
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "call_0"
    usage = agent.usage
    assert usage["requests"] == 2 and usage["completion_tokens"] == 40
    assert usage["first_prompt_tokens"] > 0 and usage["seconds"] > 0
    expected = (usage["prompt_tokens"] * 0.5 + usage["completion_tokens"] * 1.5) / 1000
    assert usage["cost"] == pytest.approx(expected)


@pytest.mark.parametrize("model", ["fenced", "hermes", "bare"])
@pytest.mark.parametrize("lang", ["en", "ar"])
def test_calls_written_in_text_become_real_calls(server, model, lang):
    env = TelcoEnv("beam_misalignment", embedder=None, lang=lang)
    agent = _agent(server, model)
    _, info = run_episode(env, agent, seed=5)
    trace = info["trace"]
    assert trace.predicted_chain == ["oss_query"] and trace.terminated
    assert trace.submission.intent == "Beam Misalignment"
    assert agent.usage["text_tool_calls"] == 2
    assert _valid_conversations(server)
    kept = server.requests[1]["messages"][-2]  # the parsed call is kept as a real call
    assert kept["tool_calls"][0]["function"]["name"] == "oss_query"
    assert "{" not in (kept["content"] or "")  # and the text around it only, by default


def test_a_made_up_tool_result_after_a_call_is_not_kept(server):
    """Recorded from Qwen2.5-Coder-1.5B (contact_update en, run s10b): a call, then a
    ``<tool_response>`` of its own saying the email "has been updated successfully". The kept
    text stops before it; the environment's result is the only one the model reads."""
    call = '{"name": "get_customer", "arguments": {"msisdn": "966536333041"}}'
    text = call + '\n<tool_response>\n{"status": "updated successfully"}\n</tool_response>'
    reply = {"role": "assistant", "content": text}
    info, agent, _ = _replayed("contact_update", [reply], "bss", keep_call_text=True)
    kept = agent.messages[2]
    assert kept["tool_calls"][0]["function"]["name"] == "get_customer"
    assert kept["content"] == call and "updated successfully" not in json.dumps(agent.messages)


@pytest.mark.parametrize("model", ["fenced", "hermes", "bare"])
def test_keep_call_text_keeps_the_models_turn_as_written(server, model):
    env = TelcoEnv("beam_misalignment", embedder=None)
    agent = _agent(server, model, keep_call_text=True)
    _, info = run_episode(env, agent, seed=5)
    assert info["trace"].predicted_chain == ["oss_query"]
    assert _valid_conversations(server)
    kept = server.requests[1]["messages"][-2]
    assert kept["tool_calls"][0]["function"]["name"] == "oss_query"
    assert '"name": "oss_query"' in kept["content"] and '"arguments"' in kept["content"]


def test_native_parser_keeps_text_as_a_message(server):
    env = TelcoEnv("beam_misalignment", embedder=None, max_steps=3)
    agent = _agent(server, "fenced", tool_call_parser="native")
    _, info = run_episode(env, agent, seed=5)
    assert info["trace"].predicted_chain == [] and info["trace"].truncated
    assert {a.kind for a in info["trace"].actions} == {"message"}


def test_an_empty_reply_is_counted_and_the_conversation_stays_valid(server):
    env = TelcoEnv("beam_misalignment", embedder=None)
    agent = _agent(server, "empty", empty_retries=0)
    _, info = run_episode(env, agent, seed=5)
    assert agent.usage["empty_replies"] == 1 and info["trace"].terminated
    second = server.requests[1]["messages"]
    assert second[-2] == {"role": "assistant", "content": ""}
    assert second[-1]["role"] == "user" and "didn't get any message" in second[-1]["content"]
    assert _valid_conversations(server)


def test_an_empty_reply_is_sampled_again_warmer_and_seeded(server):
    env = TelcoEnv("beam_misalignment", embedder=None)
    agent = _agent(server, "empty")
    _, info = run_episode(env, agent, seed=5)
    first, again = server.requests[:2]
    assert first["temperature"] == 0.0 and "seed" not in first
    assert again["temperature"] == 0.7 and again["seed"] == 1
    assert again["messages"] == first["messages"]  # the empty reply is not kept
    assert agent.usage["empty_replies"] == 1 and info["invalid_actions"] == 0
    assert info["trace"].predicted_chain == ["oss_query"] and _valid_conversations(server)


def test_a_refused_action_answers_every_call(server):
    """An action the environment refuses as a whole still answers each call by its id."""
    env = TelcoEnv("beam_misalignment", embedder=None)
    observation, info = env.reset(seed=5)
    agent = _agent(server, "scripted")
    agent.reset(observation, info)
    agent._turn, agent._pending = 1, ["call_a", "call_b"]
    agent.messages.append(
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": i, "type": "function", "function": {"name": "x", "arguments": "{}"}}
                for i in ("call_a", "call_b")
            ],
        }
    )
    observation, *_, info = env.step({"tool_calls": "not a list"})
    agent.act(observation, info)
    assert _valid_conversations(server)
    answers = server.requests[0]["messages"][-2:]
    assert [m["tool_call_id"] for m in answers] == ["call_a", "call_b"]
    assert all(m["content"] == observation for m in answers)


def test_transient_errors_are_retried_by_the_sdk(server):
    env = TelcoEnv("beam_misalignment", embedder=None)
    agent = _agent(server, "flaky")
    _, info = run_episode(env, agent, seed=5)
    assert info["trace"].terminated
    assert agent.usage["retries"] == 4 and agent.usage["requests"] == 6


def test_a_generation_timeout_is_not_resent_unless_asked(server):
    env = TelcoEnv("beam_misalignment", embedder=None)
    agent = _agent(server, "slow", max_retries=3)
    with pytest.raises(ModelServerError, match=r"within 1 s; not resent"):
        run_episode(env, agent, seed=0)
    assert len(server.requests) == 1
    agent = _agent(server, "slow", max_retries=1, retry_timeouts=True, timeout=0.5)
    with pytest.raises(ModelServerError, match=r"within 0\.5 s"):
        run_episode(env, agent, seed=0)
    assert len(server.requests) == 3


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("unauthorized", "refused the request: HTTP 401"),
        ("garbage", "malformed chat-completions response"),
    ],
)
def test_failures_raise_a_clear_error(server, model, message):
    env = TelcoEnv("beam_misalignment", embedder=None)
    agent = _agent(server, model, max_retries=1)
    with pytest.raises(ModelServerError, match=message):
        run_episode(env, agent, seed=0)


def test_an_unreachable_server_is_named():
    agent = OpenAIAgent("m", base_url="http://127.0.0.1:9/v1", max_retries=0, connect_timeout=1)
    env = TelcoEnv("beam_misalignment", embedder=None)
    with pytest.raises(ModelServerError, match=r"cannot reach http://127.0.0.1:9/v1 after 1"):
        run_episode(env, agent, seed=0)


def _first_async_action(agent: OpenAIAgent) -> dict:
    env = TelcoEnv("beam_misalignment", embedder=None)
    observation, info = env.reset(seed=0)
    agent.reset(observation, info)

    async def act() -> dict:
        try:
            return await agent.aact(observation, info)
        finally:
            await agent.aclose()

    return asyncio.run(act())


def test_the_async_client_keeps_the_timeout_rules_and_names_an_unreachable_server(server):
    """The async client runs on the SDK's aiohttp backend: a generation timeout is not resent
    unless asked, and a refused connection reads as one (the SDK's aiohttp adapter calls it a
    connect timeout)."""
    with pytest.raises(ModelServerError, match=r"within 1 s; not resent"):
        _first_async_action(_agent(server, "slow", max_retries=3))
    assert len(server.requests) == 1
    with pytest.raises(ModelServerError, match=r"within 0\.5 s"):
        _first_async_action(_agent(server, "slow", max_retries=1, retry_timeouts=True, timeout=0.5))
    assert len(server.requests) == 3
    agent = OpenAIAgent("m", base_url="http://127.0.0.1:9/v1", max_retries=0, connect_timeout=1)
    with pytest.raises(ModelServerError, match=r"cannot reach .* after 1 attempts: ConnectError"):
        _first_async_action(agent)


def test_async_client_plays_the_same_episode(server):
    async def play(agent: OpenAIAgent) -> list[str]:
        env = TelcoEnv("beam_misalignment", embedder=None)
        observation, info = env.reset(seed=5)
        agent.reset(observation, info)
        done = False
        while not done:
            action = await agent.aact(observation, info)
            observation, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
        return [a.observation for a in info["trace"].actions]

    sync_env = TelcoEnv("beam_misalignment", embedder=None)
    _, info = run_episode(sync_env, _agent(server, "fenced"), seed=5)
    assert asyncio.run(play(_agent(server, "fenced"))) == [
        a.observation for a in info["trace"].actions
    ]


def test_the_agent_pickles_for_worker_processes(server):
    agent = _agent(server, "scripted")
    run_episode(TelcoEnv("beam_misalignment", embedder=None), agent, seed=5)
    copy = pickle.loads(pickle.dumps(agent))
    _, info = run_episode(TelcoEnv("beam_misalignment", embedder=None), copy, seed=5)
    assert info["trace"].terminated


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"tool_call_parser": "xml"}, "tool_call_parser must be one of"),
        ({"max_tokens": 0}, "max_tokens must be a positive integer"),
        ({"timeout": -1}, "timeout must be a positive number"),
        ({"max_retries": -1}, "max_retries must be a non-negative integer"),
        ({"empty_retries": -1}, "empty_retries must be an integer >= 0"),
    ],
)
def test_bad_options_are_named(options, message):
    with pytest.raises(TelcoEnvError, match=message):
        OpenAIAgent("m", **options)


@pytest.mark.parametrize(
    ("text", "parser", "name"),
    [
        ('<tool_call>{"name": "oss_query", "arguments": {"cell_id": "x"}}</tool_call>', "auto", 1),
        ('```json\n{"name": "create_ticket", "arguments": {}}\n```', "auto", 1),
        ('Calling {"name": "oss_query", "arguments": {}} then {"name": "x"}', "json", 2),
        ('{"name": "oss_query", "arguments": {}} and {"name": "create_ticket"}', "auto", 2),
        ('I saw {"cell": "x"} in the output', "auto", 0),
        ('{"name": "weather", "arguments": {}}', "auto", 0),
        ('{"name": "weather", "arguments": {}}', "json", 1),
        ('{"name": "oss_query", "parameters": {"type": "object", "properties": {}}}', "auto", 0),
        ("The beam is misaligned.", "auto", 0),
        ("", "auto", 0),
    ],
)
def test_calls_in_text(text, parser, name):
    action = calls_in_text(text, parser, TOOLS)
    assert (0 if action is None else len(action["tool_calls"])) == name


def test_evaluate_stores_usage_and_failures(server, tmp_path):
    store, _ = result_store(tmp_path)
    grid = build_grid(["beam_misalignment"], samples=1, languages=("en",))
    options = {"model": "scripted", "base_url": server.base_url, "timeout": 2.0}
    evaluate(store, "stub", grid, RunConfig("openai", options, embedder=None))
    records = store.records(["stub"])
    assert all(r["status"] == "ok" and r["agent_usage"]["requests"] >= 1 for r in records)
    bad = {**options, "model": "unauthorized"}
    evaluate(store, "bad", grid, RunConfig("openai", bad, embedder=None))
    assert all(r["status"] == "failed" and "HTTP 401" in r["error"] for r in store.records(["bad"]))


def test_a_model_is_required(monkeypatch):
    monkeypatch.delenv("TELCOENV_MODEL", raising=False)
    with pytest.raises(Exception, match="needs a model"):
        load_agent("openai")


def test_evaluate_in_the_compact_format(server, tmp_path):
    """--tool-format compact reaches the model: short specs, compact instructions; the run is
    stored with the format, so a full-format run does not resume it."""
    store, _ = result_store(tmp_path)
    grid = build_grid(["beam_misalignment"], samples=1, languages=("en",))
    options = {"model": "fenced", "base_url": server.base_url, "timeout": 2.0}
    config = RunConfig("openai", options, embedder=None, tool_format="compact")
    evaluate(store, "compact", grid, config)
    first = server.requests[0]
    oss = next(t for t in first["tools"] if t["function"]["name"] == "oss_query")
    assert oss["function"]["description"] == "A cell's OSS record: KPIs, configuration, alarms."
    assert first["messages"][0]["content"].startswith("You are a NOC agent.")
    assert all(r["status"] == "ok" for r in store.records(["compact"]))
    with pytest.raises(TelcoEnvError, match="tool_format"):
        evaluate(store, "bad", grid, RunConfig("openai", options, tool_format="tiny"))


def _replayed(
    env_name: str,
    replies: list[dict],
    domain: str = "network",
    lang: str = "en",
    parse_arguments: bool = False,
    **options,
):
    """A 2-step episode of ``env_name`` whose model replies are ``replies``, in order: its
    info, the agent and the temperature of each request (``parse_arguments``: the server
    refuses, as llama.cpp does, a conversation with a call whose arguments do not parse)."""
    stub = StubServer(replays={"replayed": replies}, parse_arguments=parse_arguments)
    try:
        env = TelcoEnv(env_name, domain=domain, embedder=None, max_steps=2, lang=lang)
        agent = OpenAIAgent("replay:replayed", base_url=stub.base_url, **options)
        _, info = run_episode(env, agent, seed=0)
        return info, agent, [r["temperature"] for r in stub.requests]
    finally:
        stub.close()


def test_a_reply_that_repeats_the_last_message_is_sampled_again(server):
    """Recorded from Qwen2.5-Coder-1.5B: the same question again and again, whatever the
    customer answered; the second time, it is asked again, warmer."""
    loop = {"role": "assistant", "content": "Please provide your line number."}
    call = {"role": "assistant", "content": '{"name": "get_customer", "arguments": {}}'}
    info, agent, temperatures = _replayed("contact_update", [loop, loop, call], domain="bss")
    assert temperatures[:3] == [0.0, 0.0, 0.7]
    assert agent.usage["repeated_replies"] == 1
    assert [a.kind for a in info["trace"].actions][:2] == ["message", "tool_call"]


def test_a_reply_that_cycles_or_echoes_a_tool_result_is_sampled_again(server):
    """Recorded from Qwen2.5-Coder-1.5B after the routing fix: it alternated between echoing
    the tool's error as text (``<tool_response> ...``) and the same question, for 10 steps."""
    echo = {"role": "assistant", "content": '<tool_response> {"error": {"type": "not_found"}}'}
    ask = {"role": "assistant", "content": "Can you please provide your line number?"}
    call = {"role": "assistant", "content": '{"name": "get_customer", "arguments": {}}'}
    # ask; echo (sampled again) -> ask (repeats the first: sampled again) -> call
    replies = [ask, echo, ask, call]
    info, agent, temperatures = _replayed("contact_update", replies, "bss", empty_retries=2)
    assert temperatures == [0.0, 0.0, 0.7, 0.7]
    assert agent.usage["repeated_replies"] == 2
    assert [a.kind for a in info["trace"].actions] == ["message", "tool_call"]


def test_a_call_the_environment_just_refused_is_not_sent_again_unchanged(server):
    """Recorded from Qwen2.5-Coder-1.5B: the same out-of-range optimize_cell call three times
    in a row. A call that repeats a refused one is sampled again, warmer; a corrected one is
    sent."""
    bad = {"role": "assistant", "content": '{"name": "oss_query", "arguments": {"cell_id": 5}}'}
    good = {"role": "assistant", "content": '{"name": "oss_query", "arguments": {"cell_id": "X"}}'}
    info, agent, temperatures = _replayed("beam_misalignment", [bad, bad, good])
    assert temperatures == [0.0, 0.0, 0.7]
    assert agent.usage["repeated_replies"] == 1
    arguments = [a.arguments for a in info["trace"].actions]
    assert arguments == [{"cell_id": 5}, {"cell_id": "X"}]
    assert info["trace"].actions[0].error_kind == "invalid_arguments"


def test_a_reply_that_passes_the_advice_on_to_the_customer_is_sampled_again(server):
    """Recorded from Qwen2.5-Coder-1.5B: after a refused call it told the customer "Ok, please
    correct the argument the message names and call the tool again." (the error's advice,
    meant for the agent). Such a reply is sampled again, warmer; other text is sent."""
    bad = {
        "role": "assistant",
        # A malformed email (a made-up id now gets the advice to call get_customer).
        "content": '{"name": "update_contact", "arguments": {"customer_id": "C000001", '
        '"email": "a@b"}}',
    }
    parrot = {
        "role": "assistant",
        "content": "Ok, please correct the argument the message names and call the tool again.",
    }
    ask = {"role": "assistant", "content": "What is your line number?"}
    info, agent, temperatures = _replayed("contact_update", [bad, parrot, ask], domain="bss")
    assert temperatures == [0.0, 0.0, 0.7]
    assert agent.usage["repeated_replies"] == 1
    actions = info["trace"].actions
    assert [a.kind for a in actions] == ["tool_call", "message"]
    assert actions[1].raw == "What is your line number?"


@pytest.mark.parametrize(
    "text",
    [
        "Please call the tool `kpi_timeseries` with the cell ID and the window `12h`.",
        "يرجى استدعاء الأداة kpi_timeseries للخلية",
        # run s11a, pci_collision en: the tool left unnamed, 9 of 18 replies
        'To submit the resolution, please call the tool with the following arguments: {"intent"'
        ': "PCI Collision", "summary": "PCI clash with a neighbour."}',
        "يرجى استدعاء الأداة بالوسائط التالية: {}",
    ],
)
def test_a_reply_that_asks_the_counterpart_to_call_a_tool_is_sampled_again(server, text):
    """Recorded from Qwen2.5-Coder-1.5B: "Please call the tool `kpi_timeseries` ..." to the
    engineer, 8 times in one episode. The engineer has no tools: such a reply is sampled again;
    the agent's own plan ("I will call ...") and a tool's name without a request are sent."""
    hand_over = {"role": "assistant", "content": text}
    plan = {"role": "assistant", "content": "I will call kpi_timeseries next: which window?"}
    named = {"role": "assistant", "content": "The kpi_timeseries output is clear. Since when?"}
    info, agent, temperatures = _replayed("beam_misalignment", [hand_over, plan, named])
    assert temperatures == [0.0, 0.7, 0.0]
    assert agent.usage["repeated_replies"] == 1
    assert [a.raw for a in info["trace"].actions] == [plan["content"], named["content"]]


def test_a_reply_that_echoes_the_counterpart_is_sampled_again(server):
    """Recorded from Qwen2.5-Coder-1.5B (contact_update ar, all 12 steps): the customer's own
    message sent back, with a greeting added, or a part of their last message. Such a reply is
    sampled again; a short acknowledgement and a reply that only shares words are sent."""
    env = TelcoEnv("contact_update", domain="bss", embedder=None, lang="ar")
    opening, _ = env.reset(seed=0)  # recorded: "مساء الخير. أرجو تحديث بريدي الإلكتروني إلى ..."
    assert "أرجو تحديث بريدي الإلكتروني" in opening  # the recorded request, today's greeting
    echo = {"role": "assistant", "content": "مرحباً، " + opening}
    part = {"role": "assistant", "content": "أرجو تحديث بريدي الإلكتروني"}
    ask = {"role": "assistant", "content": "ما رقم جوالك المسجل لتحديث بريدك الإلكتروني؟"}
    info, agent, temperatures = _replayed(
        "contact_update", [echo, part, ask], "bss", "ar", empty_retries=2
    )
    assert temperatures[:3] == [0.0, 0.7, 0.7]  # the replay starts over for the second step
    assert [a.raw for a in info["trace"].actions][:1] == [ask["content"]]
    assert not OpenAIAgent("m")._echoes_counterpart("شكراً.")


@pytest.mark.parametrize("as_text", [True, False])
def test_optional_arguments_sent_empty_are_left_out(server, as_text):
    """Recorded from Qwen2.5-Coder-1.5B: update_contact with ``"phone": ""`` in every call,
    refused each time although the error said to leave it out. The agent drops optional
    arguments sent empty ("" or null); a required one sent empty reaches the environment, which
    refuses it; ``drop_empty_optional=False`` sends the call as written."""
    arguments = {"customer_id": "C000001", "email": "a@mail.example.sa", "phone": "", "x": None}
    empty_id = {"customer_id": "", "email": "a@mail.example.sa"}

    def call(args: dict) -> dict:
        encoded = json.dumps(args) if as_text else args
        function = {"name": "update_contact", "arguments": encoded}
        return {"role": "assistant", "tool_calls": [{"id": "c", "function": function}]}

    info, agent, _ = _replayed("contact_update", [call(arguments), call(empty_id)], "bss")
    sent = [a.arguments for a in info["trace"].actions]
    assert sent[0] == {"customer_id": "C000001", "email": "a@mail.example.sa"}
    assert sent[1] == empty_id and info["trace"].actions[1].error_kind == "invalid_arguments"
    # A null member of an arguments object is gone with the reply's other nulls already.
    assert agent.usage["dropped_arguments"] == (2 if as_text else 1)
    # The kept conversation holds JSON text either way, as chat-completions servers require.
    kept = agent.messages[2]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(kept) == sent[0]
    info, agent, _ = _replayed(
        "contact_update", [call(arguments)], "bss", drop_empty_optional=False
    )
    sent = info["trace"].actions[0].arguments
    assert sent == (arguments if as_text else {k: v for k, v in arguments.items() if k != "x"})
    assert agent.usage["dropped_arguments"] == 0


def test_arguments_python_cannot_decode_reach_the_environment(server):
    """Arguments nested deeper than Python's decoder goes raised RecursionError in the agent
    (it decodes them to drop empty optionals and to spot a repeated call), which failed the
    episode; like a number of over 4,300 digits, they go to the environment, which names the
    problem and the episode goes on."""
    deep = {"name": "get_customer", "arguments": "[" * 100_000}
    digits = {"name": "get_customer", "arguments": '{"msisdn": 1' + "0" * 5000 + "}"}
    replies = [
        {"role": "assistant", "tool_calls": [{"id": f"c{i}", "function": call}]}
        for i, call in enumerate([deep, digits])
    ]
    info, _, _ = _replayed("contact_update", replies, "bss")
    actions = info["trace"].actions
    assert [a.error_kind for a in actions] == ["malformed_arguments"] * 2
    assert "too deeply" in actions[0].error and "4,300 digits" in actions[1].error


@pytest.mark.parametrize(
    "refusal",
    [
        "I'm sorry, but I can't assist with that.",
        "I’m sorry, but I can’t assist with that.",
        "I cannot help with this request.",
        "عذراً، لا أستطيع المساعدة في ذلك.",
    ],
)
def test_a_canned_refusal_is_sampled_again(server, refusal):
    """Recorded from Qwen2.5-Coder-1.5B: "I'm sorry, but I can't assist with that." after a
    refused call, three times in one episode, instead of asking for the line number. A reply
    that is only such a refusal is sampled again; one that goes on to ask something is sent."""
    ask = {"role": "assistant", "content": "I can't help with that until I have your number."}
    replies = [{"role": "assistant", "content": refusal}, ask]
    info, agent, temperatures = _replayed("contact_update", replies, "bss")
    assert temperatures[:2] == [0.0, 0.7]
    assert info["trace"].actions[0].raw == ask["content"]


def test_refusals_are_told_apart_in_linear_time():
    # The pattern's neighbouring \s* tried every split of a run of spaces: 8,000 took 4.5 s.
    for text in (" " * 200_000 + "x", "sorry, i can't help with that" + " " * 200_000 + "x"):
        started = time.perf_counter()
        assert not _is_refusal(text)
        assert time.perf_counter() - started < 1.0  # a sanity bound; it takes microseconds
    assert _is_refusal("  I'm sorry,   but I can't\n assist with that.  ")


def test_a_reply_that_writes_out_the_last_error_is_sampled_again(server):
    """Recorded from Qwen2.5-Coder-1.5B: after a refused call, the error's JSON in a ``` block
    as its message to the customer, three times in one episode. Such a reply is sampled
    again; one that only names the problem is sent."""
    function = {"name": "update_contact", "arguments": {"customer_id": "1", "email": "a@b.sa"}}
    bad = {"role": "assistant", "tool_calls": [{"id": "c", "function": function}]}
    error = (
        '```\n{\n  "error": {\n    "message": "invalid arguments for update_contact: '
        "argument 'customer_id': '1' is not of the expected form (Customer id from "
        'get_customer, e.g. \\"C000000\\")"\n  }\n}\n```'
    )
    echo = {"role": "assistant", "content": error}
    ask = {"role": "assistant", "content": "That id was wrong: what is your line number?"}
    info, agent, temperatures = _replayed("contact_update", [bad, echo, ask], "bss")
    assert temperatures == [0.0, 0.0, 0.7]
    assert [a.raw for a in info["trace"].actions][1] == ask["content"]


def test_a_reply_that_writes_out_an_earlier_error_is_sampled_again():
    """Recorded from Qwen2.5-Coder-1.5B (contact_update en, run s10a): the raw JSON of the
    first call's error, sent to the customer at steps 11 and 16, turns after the error came
    back. Such a reply is sampled again however long ago the error was."""
    function = {"name": "update_contact", "arguments": {"customer_id": "1", "email": "a@b.sa"}}
    bad = {"role": "assistant", "tool_calls": [{"id": "c", "function": function}]}
    ask = {"role": "assistant", "content": "What is your line number, please?"}
    stub = StubServer(replays={"replayed": [bad, ask]})
    try:
        env = TelcoEnv("contact_update", domain="bss", embedder=None, max_steps=3)
        agent = OpenAIAgent("replay:replayed", base_url=stub.base_url)
        observation, info = env.reset(seed=0)
        agent.reset(observation, info)
        for _ in range(2):
            observation, *_, info = env.step(agent.act(observation, info))
        error = next(m["content"] for m in agent.messages if m["role"] == "tool")
        assert error.startswith('{"error"') and agent.messages[-1]["content"] == ask["content"]
        assert agent._stuck({"role": "assistant", "content": error})
        assert agent._stuck({"role": "assistant", "content": f"Sorry:\n```\n{error}\n```"})
        assert not agent._stuck({"role": "assistant", "content": "Is 9665 your line?"})
    finally:
        stub.close()


def test_a_call_written_as_its_arguments_alone_is_run(server):
    """Recorded from Qwen2.5-Coder-1.5B (beam_misalignment ar): a ```json block of
    submit_resolution's arguments, ten times in one episode, each refused as a submission
    written as text. The agent runs it as the call it is; the episode ends with it."""
    fenced = '```json\n{\n  "intent": "Beam misalignment",\n  "summary": "Off-axis."\n}\n```'
    info, agent, _ = _replayed("beam_misalignment", [{"role": "assistant", "content": fenced}])
    (submit,) = info["trace"].actions
    assert submit.kind == "submit" and submit.valid and info["trace"].terminated
    assert info["trace"].submission.intent == "Beam misalignment"
    assert agent.usage["text_tool_calls"] == 1


def test_a_submission_object_with_extra_keys_is_a_call_the_environment_refuses(server):
    """Recorded from Qwen2.5-Coder-1.5B (pci_collision en, run s10b): a ```json block with
    intent, summary, "root cause" and "evidence", six times; each was refused as a submission
    written as text. Only submit_resolution requires intent and summary, so the block is
    that call; the environment names the keys it does not take."""
    block = {"intent": "Handover Failure Hotspot", "summary": "PCI overlap.", "root cause": "x"}
    fenced = "```json\n" + json.dumps(block, indent=2) + "\n```"
    info, agent, _ = _replayed("pci_collision", [{"role": "assistant", "content": fenced}])
    submit = info["trace"].actions[0]
    assert submit.kind == "submit" and submit.error_kind == "invalid_arguments"
    assert "'root cause'" in submit.error and "intent, summary" in submit.error
    assert agent.usage["text_tool_calls"] == 1


@pytest.mark.parametrize(
    "text",
    [
        '{"cell_id": "NR-URB-MACRO-001"}',  # the arguments of several tools: which one?
        'Here it is: {"intent": "x", "summary": "y"}',  # prose around it
        '{"intent": "x"}',  # a required argument missing
        '{"cell_id": "NR-URB-MACRO-001", "window": "1h", "colour": "blue"}',  # which tool?
        '{"name": "x", "intent": "x", "summary": "y"}',
    ],
)
def test_an_object_that_is_no_one_tools_arguments_stays_text(text):
    env = TelcoEnv("beam_misalignment", embedder=None)
    _, info = env.reset(seed=0)
    assert arguments_call(text, info["tools"]) is None


@pytest.mark.parametrize("as_text", [False, True])
def test_a_call_whose_arguments_are_not_json_stays_in_the_conversation_as_text(as_text):
    """llama.cpp's server renders the history with the chat template and answers HTTP 500 to a
    conversation holding a tool call whose arguments do not parse: the 1.5B model dropped one
    closing brace of 19 settings and every later request of the episode failed. The call still
    reaches the environment (which names the problem); the conversation keeps it as the text
    the model wrote and the environment's answer as a user message."""
    broken = '{"cell_id": "NR-URB-MACRO-1", "changes": {"tilt_deg": 4}'
    if as_text:
        first = {
            "role": "assistant",
            "content": f'{{"name": "optimize_cell", "arguments": {broken}}}',
        }
    else:
        call = {"id": "c0", "function": {"name": "optimize_cell", "arguments": broken}}
        first = {"role": "assistant", "content": None, "tool_calls": [call]}
    second = {"role": "assistant", "content": "Which cell is it?"}
    info, agent, temperatures = _replayed(
        "beam_misalignment", [first, second], parse_arguments=True
    )
    actions = info["trace"].actions
    assert actions[0].error_kind == "malformed_arguments" and actions[0].tool == "optimize_cell"
    assert actions[1].kind == "message"  # the second request was answered: no server error
    assert len(temperatures) == 2
    kept, answer = agent.messages[2], agent.messages[3]
    assert "tool_calls" not in kept and broken in kept["content"]
    assert answer["role"] == "user" and "malformed_arguments" in answer["content"]
