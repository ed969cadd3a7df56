"""A chat-completions server on loopback for the OpenAI agent's tests.

Behaviour by model name: ``scripted`` answers with an ``oss_query`` tool call on the cell named
in the conversation, then ``submit_resolution``; ``flaky`` fails twice with HTTP 503 before each
answer; ``slow`` sleeps past the client's timeout; ``unauthorized`` answers 401; ``garbage``
answers 200 with a body that is not JSON. Every answer reports token usage.
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


def _reply(messages: list[dict[str, Any]]) -> dict[str, Any]:
    called = sum(1 for m in messages if m["role"] == "assistant")
    text = " ".join(str(m.get("content") or "") for m in messages)
    cell = CELL.search(text)
    if called == 0 and cell:
        call = {
            "name": "oss_query",
            "arguments": json.dumps({"cell_id": cell.group(0), "window": "1h"}),
        }
    else:
        call = {
            "name": "submit_resolution",
            "arguments": json.dumps(
                {"intent": "Beam Misalignment", "summary": "Beam weights steered off boresight."}
            ),
        }
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": f"call_{called}", "type": "function", "function": call}],
    }


class _Handler(BaseHTTPRequestHandler):
    failures: ClassVar[dict[int, int]] = {}

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError):  # the client gave up (the timeout test)
            self.wfile.write(body)

    def do_POST(self) -> None:
        if not self.path.endswith("/chat/completions"):
            self._send(404, b'{"error": "not found"}')
            return
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        model, messages = request["model"], request["messages"]
        self.server.requests.append(request)  # type: ignore[attr-defined]
        if model == "unauthorized":
            self._send(401, b'{"error": {"message": "invalid api key"}}')
            return
        if model == "garbage":
            self._send(200, b"<html>not json</html>")
            return
        if model == "slow":
            time.sleep(3)
        if model == "flaky":
            key = len(messages)
            count = _Handler.failures.get(key, 0)
            if count < 2:
                _Handler.failures[key] = count + 1
                self._send(503, b'{"error": "overloaded"}')
                return
        prompt = sum(len(json.dumps(m)) for m in messages) // 4
        body = {
            "id": "stub",
            "object": "chat.completion",
            "model": model,
            "choices": [{"index": 0, "message": _reply(messages), "finish_reason": "tool_calls"}],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": 20,
                "total_tokens": prompt + 20,
            },
        }
        self._send(200, json.dumps(body).encode())


class StubServer:
    """Start on a free loopback port; ``base_url`` ends in ``/v1``; stop with ``close()``."""

    def __init__(self) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.requests = []  # type: ignore[attr-defined]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self.httpd.requests  # type: ignore[attr-defined]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
