"""A chat-completions server on loopback for the OpenAI agent's tests.

Behaviour by model name: ``scripted`` answers with an ``oss_query`` tool call on the cell named
in the conversation, then ``submit_resolution``; ``thorough`` reads the cell three times (1 h,
3 h and 1 d windows) before it submits; ``flaky`` fails twice with HTTP 503 (with a
short ``Retry-After``) before each answer; ``slow`` sleeps past the client's timeout;
``unauthorized`` answers 401; ``garbage`` answers 200 with a body that is not JSON. The text
models write the same calls in the message text, as small models do: ``fenced`` (a ```json
fence), ``hermes`` (``<tool_call>`` tags), ``bare`` (a bare object after a sentence);
``empty`` answers with empty content first (at temperature 0; a warmer, seeded request gets the
call). ``malformed`` first sends two calls the environment refuses (``oss_query`` with its
arguments cut off mid-JSON, and a tool that does not exist), then submits. Every answer is a
whole ``chat.completion`` (with ``created``, which strict clients require) and reports token
usage.

``replay:<name>`` answers the k-th request for that model with the k-th reply of
``StubServer(replays={name: [...]})`` (recorded replies of a real model; an empty reply after
the last). ``StubServer(latency=s)`` answers every request ``s`` seconds late, as a served
model that takes that long to generate; it answers many requests at once.

Like a strict hosted API, the server refuses (HTTP 400) a conversation in which a tool call
has no id or arguments that are not JSON text, is not answered by exactly one tool message, or a
tool message answers no call. ``StubServer(parse_arguments=True)`` also refuses, as llama.cpp's
server does (it renders the history with the chat template), a tool call whose arguments do not
parse as JSON (a hosted API takes them as text).
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

CELL = re.compile(r"\b(?:NR|LTE)-[A-Z]{3}-[A-Z]+-\d+\b")
# The windows the thorough model reads the cell over, one call each.
WINDOWS = {"scripted": ("1h",), "thorough": ("1h", "3h", "1d")}


def conversation_error(messages: list[dict[str, Any]], parse_arguments: bool = False) -> str | None:
    """What a strict server would refuse in ``messages``, or ``None``."""
    open_ids: list[str] = []
    for message in messages:
        role = message.get("role")
        if role == "tool":
            if message.get("tool_call_id") not in open_ids:
                return f"tool message answers no open call: {message.get('tool_call_id')!r}"
            open_ids.remove(message["tool_call_id"])
            continue
        if open_ids:
            return f"tool calls {open_ids} have no tool message before a {role} message"
        if role == "assistant":
            calls = message.get("tool_calls") or []
            if not calls and message.get("content") is None:
                return "an assistant message needs content or tool_calls"
            ids = [call.get("id") for call in calls]
            if not all(ids) or len(set(ids)) != len(ids):
                return f"tool calls need distinct ids, got {ids}"
            for call in calls:  # OpenAI's own wording
                arguments = (call.get("function") or {}).get("arguments")
                if not isinstance(arguments, str):
                    return (
                        "Invalid type for 'function.arguments': expected a string, "
                        "but got an object instead."
                    )
                if parse_arguments and not _parses(arguments):  # llama.cpp's wording
                    return "Failed to parse tool call arguments as JSON"
            open_ids = list(ids)
    return None


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def _written(model: str, call: dict[str, Any]) -> str:
    """A call written in the text, as small models write it."""
    body = json.dumps({"name": call["name"], "arguments": json.loads(call["arguments"])})
    if model == "fenced":
        return f"I will call the tool now.\n```json\n{body}\n```"
    if model == "hermes":
        return f"<tool_call>\n{body}\n</tool_call>"
    return f"Next step: {body}"


# What the malformed model sends first: a call whose arguments are cut off, and an unknown tool.
MALFORMED_CALLS = [
    {
        "id": "bad_0",
        "type": "function",
        "function": {"name": "oss_query", "arguments": '{"cell_id": "NR-'},
    },
    {"id": "bad_1", "type": "function", "function": {"name": "no_such_tool", "arguments": "{}"}},
]


def _reply(messages: list[dict[str, Any]], model: str, temperature: float = 0.0) -> dict[str, Any]:
    called = sum(1 for m in messages if m["role"] == "assistant")
    if model == "malformed" and called == 0:
        return {"role": "assistant", "content": None, "tool_calls": MALFORMED_CALLS}
    if model == "empty" and called == 0 and temperature == 0:
        return {"role": "assistant", "content": ""}
    # The empty turn, when the agent kept it, does not count as a call.
    called -= any(
        m["role"] == "assistant" and not m.get("content") and not m.get("tool_calls")
        for m in messages
    )
    text = " ".join(str(m.get("content") or "") for m in messages)
    cell = CELL.search(text)
    windows = WINDOWS.get(model, WINDOWS["scripted"])
    if called < len(windows) and cell:
        call = {
            "name": "oss_query",
            "arguments": json.dumps({"cell_id": cell.group(0), "window": windows[called]}),
        }
    else:
        call = {
            "name": "submit_resolution",
            "arguments": json.dumps(
                {"intent": "Beam Misalignment", "summary": "Beam weights steered off boresight."}
            ),
        }
    if model in ("fenced", "hermes", "bare"):
        return {"role": "assistant", "content": _written(model, call)}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": f"call_{called}", "type": "function", "function": call}],
    }


class _Handler(BaseHTTPRequestHandler):
    failures: ClassVar[dict[int, int]] = {}
    # Keep-alive, as served models answer: the client's pool reuses its connections (with
    # Nagle off, so that the body does not wait for the ACK of the headers).
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def handle(self) -> None:
        with contextlib.suppress(ConnectionError):  # the client gave up (the timeout test)
            super().handle()

    def _send(self, status: int, body: bytes, retry_after_ms: int | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        if retry_after_ms is not None:
            self.send_header("retry-after-ms", str(retry_after_ms))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        if not self.path.endswith("/chat/completions"):
            self._send(404, b'{"error": "not found"}')
            return
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        model, messages = request["model"], request["messages"]
        self.server.requests.append(request)  # type: ignore[attr-defined]
        time.sleep(self.server.latency)  # type: ignore[attr-defined]
        if model == "unauthorized":
            self._send(401, b'{"error": {"message": "invalid api key"}}')
            return
        if model == "garbage":
            self._send(200, b"<html>not json</html>")
            return
        problem = conversation_error(messages, self.server.parse_arguments)  # type: ignore[attr-defined]
        if problem is not None:
            self._send(400, json.dumps({"error": {"message": problem}}).encode())
            return
        if model == "slow":
            time.sleep(3)
        if model == "flaky":
            key = len(messages)
            count = _Handler.failures.get(key, 0)
            if count < 2:
                _Handler.failures[key] = count + 1
                self._send(503, b'{"error": "overloaded"}', retry_after_ms=10)
                return
        prompt = sum(len(json.dumps(m)) for m in messages) // 4
        if model.startswith("replay:"):
            message = self.server.replay(model.removeprefix("replay:"))  # type: ignore[attr-defined]
        else:
            message = _reply(messages, model, request.get("temperature", 0.0))
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        body = {
            "id": "stub",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": 20,
                "total_tokens": prompt + 20,
            },
        }
        self._send(200, json.dumps(body).encode())


class _Server(ThreadingHTTPServer):
    # Many episodes in flight connect at once: a short listen queue would drop connections.
    request_queue_size = 256


class StubServer:
    """Start on a free loopback port; ``base_url`` ends in ``/v1``; stop with ``close()``."""

    def __init__(
        self,
        replays: dict[str, list[dict[str, Any]]] | None = None,
        latency: float = 0.0,
        parse_arguments: bool = False,
    ) -> None:
        self.httpd = _Server(("127.0.0.1", 0), _Handler)
        self.httpd.parse_arguments = parse_arguments  # type: ignore[attr-defined]
        self.httpd.requests = []  # type: ignore[attr-defined]
        self.httpd.latency = latency  # type: ignore[attr-defined]
        queues = {name: list(replies) for name, replies in (replays or {}).items()}
        self.httpd.replay = lambda name: (  # type: ignore[attr-defined]
            queues[name].pop(0) if queues[name] else {"role": "assistant", "content": ""}
        )
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self.httpd.requests  # type: ignore[attr-defined]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
