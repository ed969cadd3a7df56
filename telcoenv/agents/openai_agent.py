"""An agent backed by any OpenAI-compatible chat-completions endpoint with native tool calling.

Works with vLLM, Ollama, llama.cpp servers and hosted APIs. Settings come from the constructor or
from the environment: ``OPENAI_BASE_URL`` (default ``http://127.0.0.1:8000/v1``),
``OPENAI_API_KEY`` and ``TELCOENV_MODEL``. Transient failures (timeouts, connection errors,
HTTP 429 and 5xx) are retried with exponential backoff; other HTTP errors raise at once. Token
usage is accumulated per episode where the server reports it, with a cost from the server's
``usage.cost`` or from the per-token prices given.

The agent keeps the conversation: the environment's system and user messages at reset, then
its own assistant messages and the tool and engineer messages the environment returns.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from typing import Any

from telcoenv.errors import ModelServerError, TelcoEnvError

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


class OpenAIAgent:
    """Chat-completions tool calling against an OpenAI-compatible server.

    Args:
        model: model name (default ``$TELCOENV_MODEL``).
        base_url: server URL up to ``/v1`` (default ``$OPENAI_BASE_URL``).
        api_key: bearer token (default ``$OPENAI_API_KEY``; none for local servers).
        temperature: sampling temperature (0 for reproducible runs where the server allows).
        timeout: seconds per HTTP request.
        max_retries: retries of a transient failure, with backoff ``backoff * 2**attempt`` s.
        prompt_price / completion_price: cost per 1,000 tokens, used when the server reports no
            cost.
        extra_body: extra request fields (e.g. ``{"max_tokens": 512}``).
    """

    needs_privileged = False

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        temperature: float = 0.0,
        timeout: float = 60.0,
        max_retries: int = 4,
        backoff: float = 0.5,
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
        self.base_url = (
            base_url or os.environ.get("OPENAI_BASE_URL") or "http://127.0.0.1:8000/v1"
        ).rstrip("/")
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY", "")
        self.temperature, self.timeout = temperature, timeout
        self.max_retries, self.backoff = max_retries, backoff
        self.prices = (prompt_price, completion_price)
        self.extra_body = dict(extra_body or {})
        self.messages: list[dict[str, Any]] = []
        self.tools: list[dict[str, Any]] = []
        self.usage = self._empty_usage()

    @staticmethod
    def _empty_usage() -> dict[str, float]:
        return {
            "requests": 0,
            "retries": 0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "cost": 0.0,
        }

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        self.messages = [dict(m) for m in info["messages"]]
        self.tools = info["tools"]
        self.usage = self._empty_usage()

    def act(self, observation: str, info: dict[str, Any]) -> dict[str, Any]:
        if info.get("steps", 0) > 0:
            self.messages.extend(info.get("messages") or [{"role": "user", "content": observation}])
        reply = self._complete()
        message = {"role": "assistant", "content": reply.get("content")}
        if reply.get("tool_calls"):
            message["tool_calls"] = reply["tool_calls"]
        self.messages.append(message)
        return message

    def _complete(self) -> dict[str, Any]:
        body = {
            "model": self.model,
            "messages": self.messages,
            "tools": self.tools,
            "tool_choice": "auto",
            "temperature": self.temperature,
            **self.extra_body,
        }
        data = self._post(json.dumps(body).encode())
        try:
            message = data["choices"][0]["message"]
        except (KeyError, IndexError, TypeError) as exc:
            raise ModelServerError(
                f"malformed chat-completions response: {str(data)[:300]}"
            ) from exc
        self._account(data.get("usage") or {})
        return message

    def _post(self, payload: bytes) -> dict[str, Any]:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last_error = ""
        for attempt in range(self.max_retries + 1):
            if attempt:
                self.usage["retries"] += 1
                time.sleep(self.backoff * 2 ** (attempt - 1))
            self.usage["requests"] += 1
            request = urllib.request.Request(
                f"{self.base_url}/chat/completions", data=payload, headers=headers, method="POST"
            )
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    return json.loads(response.read().decode())
            except urllib.error.HTTPError as exc:
                detail = exc.read().decode(errors="replace")[:300]
                last_error = f"HTTP {exc.code}: {detail}"
                if exc.code not in RETRY_STATUS:
                    raise ModelServerError(
                        f"{self.base_url} refused the request: {last_error}"
                    ) from None
            except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
                last_error = f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"
            except json.JSONDecodeError as exc:
                last_error = f"response is not JSON: {exc.msg}"
        raise ModelServerError(
            f"{self.base_url} failed after {self.max_retries + 1} attempts: {last_error}"
        )

    def _account(self, usage: dict[str, Any]) -> None:
        prompt = int(usage.get("prompt_tokens") or 0)
        completion = int(usage.get("completion_tokens") or 0)
        self.usage["prompt_tokens"] += prompt
        self.usage["completion_tokens"] += completion
        if usage.get("cost") is not None:
            self.usage["cost"] += float(usage["cost"])
        else:
            self.usage["cost"] += (prompt * self.prices[0] + completion * self.prices[1]) / 1000
