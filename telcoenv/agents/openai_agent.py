"""An agent backed by any OpenAI-compatible chat-completions endpoint, on the official ``openai``
SDK (sync and async clients, connection pooling, the SDK's retries and timeouts; each request
goes through the client's generic ``post``, see :meth:`OpenAIAgent._request`).

Works with vLLM, Ollama, llama.cpp servers and hosted APIs. Settings come from the constructor or
from the environment: ``OPENAI_BASE_URL`` (default ``http://127.0.0.1:8000/v1``),
``OPENAI_API_KEY`` and ``TELCOENV_MODEL``.

The defaults suit a slow local server: ``max_tokens`` is set, the read timeout is long, and a
request that timed out while the server was generating is not sent again (the server would keep
computing the abandoned one) unless ``retry_timeouts=True``. Connection errors, HTTP 408/409/429
and 5xx are retried by the SDK with its backoff (it honours ``Retry-After``).

Small models often write a tool call in the message text instead of as a native call: a
``<tool_call>`` block, a ``<function name=... arguments=.../>`` element, a fenced or bare
``{"name": ..., "arguments": ...}`` object. ``tool_call_parser`` (``auto``, ``native``,
``hermes``, ``function_tags`` or ``json``) turns those into real calls
with :mod:`telcoenv.wrappers.parsers`; ``auto`` accepts them only when every call names one of
the episode's tools, so a message that merely contains braces stays a message.

The agent keeps the conversation valid for strict servers: every tool call has an id and is
answered by exactly one tool message (an action the environment refused as a whole is answered,
call by call, with that refusal), a call's arguments are JSON text (also for a call read from the
message text), and an empty reply is kept as empty content.

For many episodes in flight in one process (``telcoenv evaluate --concurrency N``), ``aact`` is
``act`` on the async client, and ``copies(n)`` makes the ``n`` agents, each keeping its own
conversation, on one async client whose pool keeps ``n`` connections.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import time
from typing import Any

import aiohttp
import httpx2  # the openai SDK's own HTTP client
import openai

# The transport of the SDK's aiohttp client (openai.DefaultAioHttpClient), to wrap it.
from openai._vendor.httpx_aiohttp.transport import AiohttpTransport

from telcoenv.errors import ModelServerError, TelcoEnvError
from telcoenv.text import handed_over_tool
from telcoenv.wrappers.parsers import PARSERS

TOOL_CALL_PARSERS = ("auto", "native", "hermes", "function_tags", "json")
DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"
# A custom transport brings its own pool: as large as the SDK's, so many episodes in flight
# share keep-alive connections.
CHAT_PATH = "/chat/completions"  # relative to the client's base URL
POOL = httpx2.Limits(max_connections=1000, max_keepalive_connections=100)
#: A text reply that repeats one of the agent's last this-many text replies is sampled again.
REPEAT_WINDOW = 4
#: A text reply that contains the counterpart's last message, or is part of it, is sampled
#: again when the shorter of the two has at least this many characters.
ECHO_CHARS = 16
# A tool result the model wrote itself after its call (the Hermes template's tag): not kept
# with the call's text, so the model does not read its own made-up result as the real one.
_TOOL_RESPONSE = re.compile(r"<tool_response>.*?(?:</tool_response>|$)", re.DOTALL)


class OpenAIAgent:
    """Chat-completions tool calling against an OpenAI-compatible server.

    Args:
        model: model name (default ``$TELCOENV_MODEL``).
        base_url: server URL up to ``/v1`` (default ``$OPENAI_BASE_URL``).
        api_key: bearer token (default ``$OPENAI_API_KEY``; local servers need none).
        temperature: sampling temperature (0 for reproducible runs where the server allows).
        max_tokens: completion tokens per request (``None``: the server's default, which on
            some local servers is unbounded).
        timeout: seconds to wait for an answer (the whole generation on a non-streaming
            request); ``connect_timeout`` for opening the connection.
        max_retries: the SDK's retries of connection errors, HTTP 408/409/429 and 5xx.
        retry_timeouts: also resend a request that timed out while the server was generating.
        tool_call_parser: how tool calls written in the message text become calls: ``auto``
            (``<tool_call>`` blocks, then ``<function>`` elements, then JSON objects, only for
            the episode's tool names; then an object of one tool's arguments without its name,
            ``{"intent": ..., "summary": ...}``), ``hermes``, ``function_tags``, ``json`` or
            ``native`` (text is always a message).
        empty_retries: how many times an empty reply (no text, no call), or a message that
            repeats the previous one word for word, is asked again, at ``retry_temperature``
            with a fixed ``seed`` (reproducible where the server honours it): small models at
            temperature 0 can fall silent, or loop, for good after an error.
        drop_empty_optional: leave out of a call the optional arguments the model sent empty
            (``""`` or ``null``; counted in ``usage["dropped_arguments"]``); required ones are
            sent as they are.
        keep_call_text: a call read from the message text keeps that text as the kept
            message's content, so the model sees its turn as it wrote it, less any
            ``<tool_response>`` it made up after the call (default: only the text around the
            call). A trade-off measured on Qwen2.5-Coder-1.5B: with the text kept, its network
            episodes went on after a tool error where they fell silent (valid actions 16/20 ->
            19/21), but in customer care it repeated its refused call verbatim to the end of
            the budget (45/48 -> 19/48); see docs/performance.md.
        prompt_price / completion_price: cost per 1,000 tokens, used when the server reports no
            ``usage.cost``.
        extra_body: extra request fields passed through (e.g. ``{"top_k": 20}``).
    """

    needs_privileged = False
    domains = None  # every domain: the tools come from the episode

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        temperature: float = 0.0,
        max_tokens: int | None = 512,
        timeout: float = 600.0,
        connect_timeout: float = 10.0,
        max_retries: int = 2,
        retry_timeouts: bool = False,
        tool_call_parser: str = "auto",
        empty_retries: int = 1,
        retry_temperature: float = 0.7,
        drop_empty_optional: bool = True,
        keep_call_text: bool = False,
        prompt_price: float = 0.0,
        completion_price: float = 0.0,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        self.model = model or os.environ.get("TELCOENV_MODEL", "")
        if not self.model:
            raise TelcoEnvError(
                "the openai agent needs a model: --agent-options "
                "'{\"model\": ...}' or TELCOENV_MODEL"
            )
        _check_options(tool_call_parser, max_tokens, timeout, connect_timeout, max_retries)
        if not isinstance(empty_retries, int) or empty_retries < 0:
            raise TelcoEnvError(f"empty_retries must be an integer >= 0, not {empty_retries!r}")
        self.base_url = _server_url(
            base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        )
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY", "")
        self.temperature, self.max_tokens = temperature, max_tokens
        self.timeout, self.connect_timeout = timeout, connect_timeout
        self.max_retries, self.retry_timeouts = max_retries, retry_timeouts
        self.tool_call_parser = tool_call_parser
        self.empty_retries, self.retry_temperature = empty_retries, retry_temperature
        self.drop_empty_optional = bool(drop_empty_optional)
        self.keep_call_text = bool(keep_call_text)
        self.prices = (prompt_price, completion_price)
        self.extra_body = dict(extra_body or {})
        self.messages: list[dict[str, Any]] = []
        self.tools: list[dict[str, Any]] = []
        self.usage = _empty_usage()
        self._pending: list[str] = []  # ids of the last action's tool calls, awaiting results
        self._pending_as_text = False  # the last action's calls are kept as text (see _kept)
        self._turn = 0
        self._sync_client: Any = None
        self._async_client: Any = None

    # -- the agent protocol -------------------------------------------------------------------

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        self.messages = [dict(m) for m in info["messages"]]
        self.tools = info["tools"]
        self.usage = _empty_usage()
        self._pending, self._turn, self._pending_as_text = [], 0, False

    def act(self, observation: str, info: dict[str, Any]) -> dict[str, Any]:
        self._receive(observation, info)
        started = time.perf_counter()
        post = self._client().post
        reply, attempt = self._reply(post, 0), 0
        while self._stuck(reply) and attempt < self.empty_retries:
            attempt += 1
            reply = self._reply(post, attempt)
        return self._answer(reply, started)

    async def aact(self, observation: str, info: dict[str, Any]) -> dict[str, Any]:
        """:meth:`act` on the async client, for many episodes in flight in one process."""
        self._receive(observation, info)
        started = time.perf_counter()
        post = self._client(asynchronous=True).post
        attempt = 0
        while True:
            try:
                raw = await post(CHAT_PATH, body=self._request(attempt), cast_to=httpx2.Response)
            except Exception as exc:  # mapped to one ModelServerError with the server's words
                raise self._failure(exc) from None
            reply = self._parsed(raw)
            if not self._stuck(reply) or attempt == self.empty_retries:
                return self._answer(reply, started)
            attempt += 1

    def _stuck(self, reply: dict[str, Any]) -> bool:
        """An empty reply (no call, no text), one that repeats one of its last
        :data:`REPEAT_WINDOW` text replies word for word, or one that only echoes a tool result
        (``<tool_response>``, the tag of the Hermes chat template): a small model at temperature
        0 can loop on any of these, or cycle between two of them, for the rest of the budget.
        The same goes for calls that repeat, argument for argument, calls the environment has
        just refused (it would refuse them again), and for a reply that passes an error's
        advice on, asks the counterpart to call a tool, echoes the counterpart, or is a canned
        refusal ("I'm sorry, but I can't assist with that."). Counted in ``empty_replies`` and
        ``repeated_replies``."""
        content = str(reply.get("content") or "").strip()
        if not reply.get("tool_calls") and not content:
            self.usage["empty_replies"] += 1
            return True
        calls = reply.get("tool_calls") or self._written_calls(content)
        if calls:
            repeated = self._refused_again(calls)
            self.usage["repeated_replies"] += repeated
            return repeated
        texts = [
            str(m.get("content") or "").strip()
            for m in self.messages
            if m["role"] == "assistant" and not m.get("tool_calls")
        ]
        repeated = (
            content in texts[-REPEAT_WINDOW:]
            or content.startswith("<tool_response>")
            or self._passes_on_advice(content)
            or self._hands_over_a_tool(content)
            or self._echoes_counterpart(content)
            or _is_refusal(content)
        )
        self.usage["repeated_replies"] += repeated
        return repeated

    def _hands_over_a_tool(self, content: str) -> bool:
        """Whether a text reply asks the counterpart to call one of the agent's own tools
        ("Please call the tool `kpi_timeseries` with the cell ID ...", 8 replies of one
        episode): the engineer or the customer has no tools."""
        return handed_over_tool(content, self._tool_names()) is not None

    def _echoes_counterpart(self, content: str) -> bool:
        """Whether a text reply repeats the counterpart's last message, or is part of it
        ("السلام عليكم، أرجو تحديث بريدي الإلكتروني ..." back to the customer who wrote it, for
        all 12 steps of an episode): the model took the counterpart's role. Short replies
        ("Thanks.") are not compared. So is a reply that writes out the message of an error the
        environment returned in this episode (a ```` ``` ```` block of the error's JSON, sent
        to the customer three times in one episode; the raw JSON of the first call's error,
        sent to the customer at steps 11 and 16 of another)."""
        said = " ".join(content.casefold().split())
        if self._echoes_an_error(said):
            return True
        for message in reversed(self.messages):
            if message["role"] == "assistant":
                return False
            if message["role"] == "user":
                theirs = " ".join(str(message.get("content") or "").casefold().split())
                shorter = min(len(said), len(theirs))
                return shorter >= ECHO_CHARS and (said in theirs or theirs in said)
        return False

    def _echoes_an_error(self, said: str) -> bool:
        """Whether ``said`` (casefolded, spaces collapsed) writes out the message of an error
        any tool message of the conversation holds (JSON and all)."""
        for message in self.messages:
            error = _error_message(message.get("content")) if message["role"] == "tool" else None
            if (
                error is not None
                and len(error) >= ECHO_CHARS
                and _unquoted(error) in _unquoted(said)
            ):
                return True
        return False

    def _passes_on_advice(self, content: str) -> bool:
        """Whether a text reply repeats the ``next`` advice of an error the environment sent
        since the model's last reply ("Ok, please correct the argument the message names and
        call the tool again.", said to the customer): advice meant for the agent."""
        said = " ".join(content.casefold().split())
        for message in reversed(self.messages):
            if message["role"] == "assistant":
                return False
            advice = _advice(message.get("content"))
            if advice and advice in said:
                return True
        return False

    def _written_calls(self, content: str) -> list[dict[str, Any]]:
        """The calls a text reply writes (as :meth:`_action` will read them)."""
        written = self._written(content)
        return written["tool_calls"] if written is not None else []

    def _written(self, content: str) -> dict[str, Any] | None:
        """The assistant message with the calls a text reply writes, or ``None``."""
        if self.tool_call_parser == "native":
            return None
        written = calls_in_text(content, self.tool_call_parser, self._tool_names())
        if written is None and self.tool_call_parser == "auto":
            written = arguments_call(content, self.tools)
        return written

    def _refused_again(self, calls: list[dict[str, Any]]) -> bool:
        """Whether every call repeats one of the last action's calls that were refused."""
        last = next((m for m in reversed(self.messages) if m.get("tool_calls")), None)
        if last is None:
            return False
        refused_ids = {
            m.get("tool_call_id")
            for m in self.messages[self.messages.index(last) + 1 :]
            if m["role"] == "tool" and str(m.get("content") or "").startswith('{"error"')
        }
        refused = {_call_key(c) for c in last["tool_calls"] if c.get("id") in refused_ids}
        return bool(refused) and all(_call_key(call) in refused for call in calls)

    def close(self) -> None:
        """Close the pooled connections (the agent can still be used: they reopen)."""
        if self._sync_client is not None:
            self._sync_client.close()
        self._sync_client = None

    # -- many episodes in flight --------------------------------------------------------------

    def copies(self, n: int) -> list[OpenAIAgent]:
        """``n`` agents with these settings, one per episode in flight, sharing one async client
        whose pool keeps ``n`` connections (each agent keeps its own conversation)."""
        client = _make_client(self, asynchronous=True, connections=n)
        agents = []
        for _ in range(n):
            agent = copy.deepcopy(self)  # the settings and a conversation of its own, no client
            agent._async_client = client
            agents.append(agent)
        return agents

    async def aclose(self) -> None:
        """Close the async client's connections (those of every copy sharing it)."""
        if self._async_client is not None:
            await self._async_client.close()
        self._async_client = None

    # -- the conversation ---------------------------------------------------------------------

    def _receive(self, observation: str, info: dict[str, Any]) -> None:
        """Add what the environment answered to the last action, keeping every call answered."""
        if self._turn == 0:
            return
        messages = list(info.get("messages") or [{"role": "user", "content": observation}])
        answered = {m.get("tool_call_id") for m in messages if m.get("role") == "tool"}
        missing = [call_id for call_id in self._pending if call_id not in answered]
        if missing:  # the environment refused the action as a whole: each call gets the refusal
            messages = [m for m in messages if m.get("role") == "tool"] + [
                {"role": "tool", "tool_call_id": call_id, "content": observation}
                for call_id in missing
            ]
        if self._pending_as_text:  # the calls are text in the history: so are their answers
            messages = [_as_user(m) for m in messages]
        self.messages.extend(messages)
        self._pending, self._pending_as_text = [], False

    def _answer(self, reply: dict[str, Any], started: float) -> dict[str, Any]:
        self.usage["seconds"] += time.perf_counter() - started
        self._turn += 1
        message = self._action(reply)
        kept = _kept(message)
        self.messages.append(kept)
        self._pending = [call["id"] for call in message.get("tool_calls", ())]
        self._pending_as_text = kept is not message
        return message

    def _action(self, reply: dict[str, Any]) -> dict[str, Any]:
        """The assistant message to keep and to send to the environment."""
        content = reply.get("content") or ""
        calls = reply.get("tool_calls") or []
        if not calls:
            written = self._written(content)
            if written is not None:
                self.usage["text_tool_calls"] += len(written["tool_calls"])
                calls = written["tool_calls"]
                kept = _TOOL_RESPONSE.sub("", content).strip() if self.keep_call_text else ""
                content = kept or written.get("content") or ""
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = [self._with_id(call, index) for index, call in enumerate(calls)]
        return message

    def _with_id(self, call: dict[str, Any], index: int) -> dict[str, Any]:
        # The environment answers each call under this id; strict servers need one per call.
        call_id = call.get("id") or f"call_{self._turn}_{index}"
        function = dict(call.get("function") or {})
        if self.drop_empty_optional:
            function = self._without_empty_optionals(function)
        if not isinstance(function.get("arguments"), str):
            # A call read from the text has its arguments as an object; chat-completions
            # servers want JSON text (OpenAI answers HTTP 400 "expected a string, but got
            # an object" on the next request of the conversation).
            function["arguments"] = json.dumps(function.get("arguments", {}), ensure_ascii=False)
        return {"id": call_id, "type": "function", "function": function}

    def _without_empty_optionals(self, function: dict[str, Any]) -> dict[str, Any]:
        """The call without its optional arguments sent empty (``""`` or ``null``), which
        small models fill in for every parameter of the schema (the 1.5B model sent
        update_contact's ``phone`` as ``""`` in every call, was told to leave it out, and did
        not); required arguments are sent as they are, for the environment to judge."""
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except (ValueError, RecursionError):  # the environment names what is wrong
                return function
        spec = next(
            (t["function"] for t in self.tools if t["function"]["name"] == function.get("name")),
            None,
        )
        if not isinstance(arguments, dict) or spec is None:
            return function
        required = set((spec.get("parameters") or {}).get("required") or ())
        kept = {k: v for k, v in arguments.items() if k in required or v not in ("", None)}
        if len(kept) == len(arguments):
            return function
        self.usage["dropped_arguments"] += len(arguments) - len(kept)
        return {**function, "arguments": kept}

    def _tool_names(self) -> set[str]:
        return {tool["function"]["name"] for tool in self.tools}

    # -- the server ---------------------------------------------------------------------------

    def _request(self, attempt: int = 0) -> dict[str, Any]:
        """The request body; an empty reply's ``attempt`` samples again, warmer and seeded.

        It goes out through the SDK client's generic ``post`` (its retries, timeouts and
        connection pool), not ``chat.completions.create``: the conversation and the tool
        schemas are plain JSON already, and ``create`` walks every parameter against its typed
        definitions on each request (hashing the union of every OpenAI model name for
        ``model``) and builds typed models of the response: about a third of the client's CPU
        per request, which bounds the episodes one process keeps in flight
        (docs/performance.md). The JSON sent is the same.
        """
        request: dict[str, Any] = {
            "model": self.model,
            "messages": self.messages,
            "tool_choice": "auto",
            "temperature": self.temperature if attempt == 0 else self.retry_temperature,
        }
        if attempt:
            request["seed"] = attempt
        if self.max_tokens is not None:
            request["max_tokens"] = self.max_tokens
        request["tools"] = self.tools
        request.update(self.extra_body)
        return request

    def _reply(self, post: Any, attempt: int) -> dict[str, Any]:
        try:
            raw = post(CHAT_PATH, body=self._request(attempt), cast_to=httpx2.Response)
        except Exception as exc:  # mapped to one ModelServerError with the server's words
            raise self._failure(exc) from None
        return self._parsed(raw)

    def _parsed(self, raw: httpx2.Response) -> dict[str, Any]:
        # The SDK numbers the attempts of a request in this header.
        retries = int(raw.request.headers.get("x-stainless-retry-count") or 0)
        self.usage["requests"] += 1 + retries
        self.usage["retries"] += retries
        try:
            completion = raw.json()
            message = _without_none(completion["choices"][0]["message"])
            if not isinstance(message, dict):
                raise TypeError(f"the message is {type(message).__name__}, not an object")
        except Exception as exc:
            raise ModelServerError(
                f"{self.base_url} sent a malformed chat-completions response "
                f"({type(exc).__name__}): {raw.text[:300]!r}"
            ) from None
        usage = completion.get("usage")
        self._account(usage if isinstance(usage, dict) else {})
        return message

    def _failure(self, exc: Exception) -> ModelServerError:
        if isinstance(exc, openai.APITimeoutError):
            again = "" if self.retry_timeouts else "; not resent (retry_timeouts=true resends)"
            return ModelServerError(
                f"{self.base_url} did not answer within {self.timeout:g} s{again}; "
                "raise timeout or lower max_tokens"
            )
        if isinstance(exc, openai.APIStatusError):
            detail = exc.response.text[:300]
            return ModelServerError(
                f"{self.base_url} refused the request: HTTP {exc.status_code}: {detail}"
            )
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc
            return ModelServerError(
                f"cannot reach {self.base_url} after {self.max_retries + 1} attempts: "
                f"{type(cause).__name__}: {cause}"
            )
        return ModelServerError(
            f"{self.base_url} sent a malformed chat-completions response: "
            f"{type(exc).__name__}: {str(exc)[:300]}"
        )

    def _client(self, asynchronous: bool = False) -> Any:
        """The pooled SDK client, made on first use (so that a run that never asks costs
        nothing and the agent pickles for worker processes before it is used)."""
        if asynchronous and self._async_client is None:
            self._async_client = _make_client(self, asynchronous=True)
        if not asynchronous and self._sync_client is None:
            self._sync_client = _make_client(self, asynchronous=False)
        return self._async_client if asynchronous else self._sync_client

    def _account(self, usage: dict[str, Any]) -> None:
        prompt = int(usage.get("prompt_tokens") or 0)
        completion = int(usage.get("completion_tokens") or 0)
        if self.usage["first_prompt_tokens"] == 0:
            self.usage["first_prompt_tokens"] = prompt
        self.usage["max_prompt_tokens"] = max(self.usage["max_prompt_tokens"], prompt)
        self.usage["prompt_tokens"] += prompt
        self.usage["completion_tokens"] += completion
        if usage.get("cost") is not None:
            self.usage["cost"] += float(usage["cost"])
        else:
            self.usage["cost"] += (prompt * self.prices[0] + completion * self.prices[1]) / 1000

    def __getstate__(self) -> dict[str, Any]:  # worker processes get a copy without sockets
        return {**self.__dict__, "_sync_client": None, "_async_client": None}


def calls_in_text(text: str, parser: str, tool_names: set[str]) -> dict[str, Any] | None:
    """The assistant message with ``tool_calls`` that ``text`` writes out, or ``None`` when it
    is a plain message. ``auto`` tries ``<tool_call>`` blocks, then ``<function>`` elements,
    then JSON, and accepts a parse
    only when every call names one of ``tool_names``; a named parser's calls are taken as they
    are (the environment then names an unknown tool)."""
    if not text.strip():
        return None
    for name in ("hermes", "function_tags", "json") if parser == "auto" else (parser,):
        action = PARSERS[name](text)
        calls = action.get("tool_calls") if isinstance(action, dict) else None
        if not calls:
            continue
        if parser != "auto" or all(c["function"].get("name") in tool_names for c in calls):
            return action
    return None


def arguments_call(text: str, tools: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A call written as its arguments alone, bare or in a ```` ```json ```` block: an object
    without a tool name whose keys are parameters of exactly one tool and include every
    parameter it requires, else include the required parameters of exactly one tool (a 1.5B
    model wrote ``{"intent": "submit_resolution", "summary": ...}`` ten times in one episode,
    each refused as a submission written as text). Keys that are no parameter of that tool
    stay in the call, for the environment to name them (``{"intent", "summary", "root
    cause", "evidence"}``, six times in another). ``None`` for anything else."""
    fenced = _FENCE.match(text.strip())
    body = (fenced.group(1) if fenced else text).strip()
    if not (body.startswith("{") and body.endswith("}")):
        return None
    try:
        arguments = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(arguments, dict) or {"name", "function", "arguments"} & arguments.keys():
        return None
    fits, covers = [], []  # every key a parameter / only every required parameter there
    for tool in tools:
        parameters = tool["function"].get("parameters") or {}
        required = set(parameters.get("required") or ())
        if required and required <= arguments.keys():
            covers.append(tool["function"]["name"])
            if arguments.keys() <= set(parameters.get("properties") or ()):
                fits.append(tool["function"]["name"])
    matching = fits if fits else covers
    if len(matching) != 1:
        return None
    call = {"type": "function", "function": {"name": matching[0], "arguments": arguments}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def _kept(message: dict[str, Any]) -> dict[str, Any]:
    """The assistant message as the conversation keeps it: as sent, unless a call's arguments
    are not JSON, which servers that render the history with the chat template refuse (llama.cpp
    answers HTTP 500 "Failed to parse tool call arguments as JSON" to every later request: the
    1.5B model dropped one closing brace of 19 settings and the episode died); those calls are
    kept as the text the model wrote."""
    calls = message.get("tool_calls") or ()
    if all(_is_json(call["function"].get("arguments")) for call in calls):
        return message
    written = "".join(
        f'<tool_call>{{"name": {json.dumps(c["function"].get("name"))}, '
        f'"arguments": {c["function"].get("arguments")}}}</tool_call>'
        for c in calls
    )
    text = str(message.get("content") or "").strip()
    if all(str(c["function"].get("arguments")) in text for c in calls):
        return {"role": "assistant", "content": text}  # the text holds the calls as written
    return {"role": "assistant", "content": f"{text}\n{written}".strip()}


def _is_json(text: Any) -> bool:
    try:
        json.loads(text)
    except (TypeError, ValueError, RecursionError):
        return False
    return True


def _as_user(message: dict[str, Any]) -> dict[str, Any]:
    """A tool result as a user message (its call is text in the history, with no id)."""
    if message.get("role") != "tool":
        return message
    return {"role": "user", "content": message.get("content")}


def _without_none(value: Any) -> Any:
    """JSON without its null members (as the SDK's typed message left them out)."""
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value


def _empty_usage() -> dict[str, float]:
    return {
        "requests": 0,
        "retries": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "first_prompt_tokens": 0,
        "max_prompt_tokens": 0,
        "cost": 0.0,
        "seconds": 0.0,
        "empty_replies": 0,
        "repeated_replies": 0,
        "text_tool_calls": 0,
        "dropped_arguments": 0,
    }


def _check_options(
    parser: str, max_tokens: int | None, timeout: float, connect: float, retries: int
) -> None:
    """Bad settings raise at construction, each naming what is wrong."""
    if parser not in TOOL_CALL_PARSERS:
        raise TelcoEnvError(f"tool_call_parser must be one of {TOOL_CALL_PARSERS}, not {parser!r}")
    if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
        raise TelcoEnvError(f"max_tokens must be a positive integer or null, not {max_tokens!r}")
    for name, value in (("timeout", timeout), ("connect_timeout", connect)):
        if not isinstance(value, int | float) or value <= 0:
            raise TelcoEnvError(f"{name} must be a positive number of seconds, not {value!r}")
    if not isinstance(retries, int) or retries < 0:
        raise TelcoEnvError(f"max_retries must be a non-negative integer, not {retries!r}")


def _server_url(url: Any) -> str:
    """The server's URL without a final slash; one that is no http(s) URL is refused here, not
    by every request of a run."""
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise TelcoEnvError(
            f"base_url must be an http:// or https:// URL such as http://localhost:8000/v1, "
            f"not {url!r}"
        )
    return url.rstrip("/")


# A message that is one ```json block (closed or not).
_FENCE = re.compile(r"```(?:json)?\s*(.*?)(?:```\s*$|$)", re.DOTALL | re.IGNORECASE)
# A canned refusal of a plain task ("I'm sorry, but I can't assist with that.", 3 replies of one
# episode, each ending the model's plan): sampled again.
_REFUSAL_CHARS = 200
_REFUSAL = re.compile(
    r"\s*(?:i['’]?m sorry|sorry|i apologi[sz]e)?[,.!]?\s*(?:but\s+)?"
    r"i\s+(?:can(?:no|['’])t|am\s+(?:not\s+able|unable)\s+to|won['’]t\s+be\s+able\s+to)\s+"
    r"(?:assist|help)(?:\s+you)?\s+with\s+(?:that|this)(?:\s+request)?\s*[.!]?\s*$"
    r"|\s*(?:عذراً|آسف)?[،,]?\s*(?:لكن\s*)?(?:لا\s+أستطيع|لا\s+يمكنني)\s+(?:المساعدة|مساعدتك)"
    r"(?:\s+في\s+(?:ذلك|هذا))?\s*[.!]?\s*$"
)


def _is_refusal(content: str) -> bool:
    """Whether a reply is a canned refusal. Matched with its whitespace runs made single
    spaces: the pattern's neighbouring ``\\s*`` would try every split of a long run (quadratic
    time on a reply of spaces, which small models write)."""
    if len(content) > _REFUSAL_CHARS:  # a canned refusal is one short sentence
        return False
    return _REFUSAL.match(" ".join(content.casefold().split())) is not None


def _advice(content: Any) -> str | None:
    """The ``next`` advice of an error observation, case-folded, without its final stop."""
    advice = _error_field(content, "next")
    if advice is None:
        return None
    return advice.rstrip(".") or None


def _unquoted(text: str) -> str:
    """``text`` without quotes and backslashes: an error copied as JSON escapes its quotes."""
    return text.replace("\\", "").replace('"', "")


def _error_message(content: Any) -> str | None:
    """The ``message`` of an error observation, case-folded."""
    return _error_field(content, "message")


def _error_field(content: Any, field: str) -> str | None:
    text = str(content or "")
    if not text.startswith('{"error"'):
        return None
    try:
        value = json.loads(text)["error"].get(field)
    except (ValueError, KeyError, AttributeError, TypeError):
        return None
    return " ".join(value.casefold().split()) if isinstance(value, str) else None


def _call_key(call: dict[str, Any]) -> str:
    """A call's tool and arguments, whether the arguments are JSON text or an object."""
    function = call.get("function") or {}
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        # Text that is no JSON (or too deep for Python's decoder) is compared as it is.
        with contextlib.suppress(ValueError, RecursionError):
            arguments = json.loads(arguments)
    return json.dumps([function.get("name"), arguments], sort_keys=True, default=str)


def _make_client(agent: OpenAIAgent, *, asynchronous: bool, connections: int | None = None) -> Any:
    """An SDK client; without ``retry_timeouts`` its transport turns a read timeout (the server
    was generating) into an error the SDK raises at once instead of resending. ``connections``
    sizes its pool (one per episode in flight; default :data:`POOL`)."""
    limits = POOL
    if connections is not None:
        limits = httpx2.Limits(max_connections=connections, max_keepalive_connections=connections)
    timeout = httpx2.Timeout(agent.timeout, connect=agent.connect_timeout)
    options: dict[str, Any] = {
        "base_url": agent.base_url,
        "api_key": agent.api_key or "none",  # local servers ignore it; the SDK requires one
        "timeout": timeout,
        "max_retries": agent.max_retries,
    }
    if asynchronous:
        # The SDK's aiohttp backend (``openai[aiohttp]``): with 64 episodes in flight its
        # requests cost the event loop markedly less CPU than httpx's (docs/performance.md).
        transport = _AsyncTransport(AiohttpTransport(limits=limits), agent.retry_timeouts)
        options["http_client"] = openai.DefaultAioHttpClient(transport=transport)
        return openai.AsyncOpenAI(**options)
    if not agent.retry_timeouts:
        options["http_client"] = openai.DefaultHttpxClient(transport=_NoResend(limits=limits))
    return openai.OpenAI(**options)


class _NoResend(httpx2.HTTPTransport):
    """A read timeout (the server was generating) becomes an ``openai.APITimeoutError``, which
    the SDK propagates as it is instead of resending the request."""

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            return super().handle_request(request)
        except httpx2.ReadTimeout:
            raise openai.APITimeoutError(request=request) from None


class _AsyncTransport(httpx2.AsyncBaseTransport):
    """The async client's transport around the SDK's aiohttp one: :class:`_NoResend`'s rule
    unless ``resend_timeouts``, and a refused connection reported as one (the SDK's adapter
    maps aiohttp's ``ClientConnectorError`` to a connect *timeout*, which would read "did not
    answer within 600 s" for a server that is not there)."""

    def __init__(self, transport: httpx2.AsyncBaseTransport, resend_timeouts: bool) -> None:
        self.transport, self.resend_timeouts = transport, resend_timeouts

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            return await self.transport.handle_async_request(request)
        except httpx2.ConnectTimeout as exc:
            if isinstance(exc.__cause__, aiohttp.ClientConnectorError):
                raise httpx2.ConnectError(str(exc), request=request) from exc.__cause__
            raise
        except httpx2.ReadTimeout:
            if self.resend_timeouts:
                raise
            raise openai.APITimeoutError(request=request) from None

    async def aclose(self) -> None:
        await self.transport.aclose()
