"""MCP server: serve telcoenv episodes to any Model Context Protocol client with the ``mcp`` SDK.

MCP's contract (``mcp.server.lowlevel.Server``, SDK 2.x): a server answers ``tools/list``,
``tools/call``, ``resources/list`` and ``resources/read``, and gives the client its
``instructions`` when it connects. A tool has a name, a description and a JSON Schema
``inputSchema``; a tool result is a list of content blocks, optional ``structuredContent`` and
``isError`` (a failure the model should see and recover from, not a protocol error). The server
runs over stdio (one client, the process that launched it) or streamable HTTP (``/mcp``).

This module serves one :class:`telcoenv.env.TelcoEnv` episode at a time (every HTTP session
sees the same episode); every behaviour (episodes, tools, replies, errors, metrics, rewards)
comes from TelcoEnv:

* Tools: the episode's tools exactly as ``info["tools"]`` gives them to a Gymnasium agent (the
  name, the description, and ``parameters`` as the ``inputSchema``), ``submit_resolution``
  included; ``message`` (``{"text"}``: a plain message to the counterpart, the engineer or the
  customer, who answers in words); and ``reset`` (a new episode; ``seed`` defaults to the
  previous episode's seed + 1).
* A tool result: the observation text (the tool's JSON, the counterpart's reply, its
  ``{"error": ...}`` JSON, or the opening message after ``reset``), then the episode's status as
  JSON (also the ``structuredContent``): the step's reward, the steps taken, ``terminated`` and
  ``truncated``, at the end the metrics and the verdict, and the call's ``action`` (its kind,
  validity and error type, as ``info["action"]``). ``isError`` is set when TelcoEnv
  refused the action (unknown tool, invalid arguments, an empty message, an action after the
  end: counted in the episode like a Gymnasium agent's), when ``reset`` was refused (a bad
  seed), and when ``message`` or ``reset`` got arguments they do not take (no step is taken).
* Resources (``telcoenv://episode/...``): ``statement`` and ``instructions`` (text), the
  ``transcript`` (JSON: the trace without what would give the answer away while the episode
  runs; the whole ``EpisodeTrace`` at the end, as ``info["trace"]``) and the ``metrics`` (JSON:
  the status, with the metrics once the episode has ended).
* Instructions: the system prompt of ``info["instructions"]``, how the MCP tools stand for a
  Gymnasium agent's actions, and the current episode's opening message.

Install with the ``mcp`` extra (``pip install "telcoenv[mcp]"``); ``telcoenv mcp`` runs
:func:`serve_mcp`.

>>> episodes = TelcoMCPEnv("beam_misalignment", embedder=None)
>>> result = episodes.call_tool("no_such_tool", {})
>>> result.is_error, json.loads(result.content[0].text)["error"]["type"]
(True, 'unknown_tool')
>>> episodes.call_tool("reset", {}).structured_content["seed"]
1
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from typing import Any, Literal

from pydantic_core import to_jsonable_python

try:
    import anyio
    from mcp import types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server
    from mcp.shared.exceptions import MCPError
except ModuleNotFoundError as exc:  # pragma: no cover - exercised only without the extra
    if not (exc.name or "").startswith(("mcp", "anyio")):
        raise
    raise ModuleNotFoundError(
        "telcoenv.integrations.mcp needs the mcp SDK: pip install 'telcoenv[mcp]'", name=exc.name
    ) from exc

import telcoenv
from telcoenv.actions import message_action
from telcoenv.errors import TelcoEnvError
from telcoenv.options import check_seed

__all__ = ["RESOURCES", "TelcoMCPEnv", "create_mcp_server", "serve_mcp"]

Transport = Literal["stdio", "http"]

RESOURCES: dict[str, tuple[str, str]] = {
    "telcoenv://episode/statement": ("text/plain", "The counterpart's opening message"),
    "telcoenv://episode/instructions": ("text/plain", "The system prompt of the episode"),
    "telcoenv://episode/transcript": (
        "application/json",
        "The episode so far (the whole trace once it has ended)",
    ),
    "telcoenv://episode/metrics": (
        "application/json",
        "Steps, rewards and, once the episode has ended, its metrics",
    ),
}
"""The resources of the current episode: URI -> (MIME type, description)."""

# What the transcript shows while the episode runs: the trace's other fields (gold chain,
# gold label and summary, sampled facts, start state) would give the answer away.
_RUNNING_TRACE_FIELDS = {
    "episode_id",
    "env_id",
    "domain",
    "language",
    "problem_statement",
    "actions",
    "terminated",
    "truncated",
}

_HOW_TO = (
    "Over MCP, a plain message to the {counterpart} is the `message` tool; every other action is "
    "a call of the tool of that name, and `submit_resolution` ends the episode (its result "
    "carries the reward and the metrics). `reset` starts a new episode and returns its opening "
    "message; the resources telcoenv://episode/transcript and telcoenv://episode/metrics hold "
    "the episode so far."
)


def _jsonable(value: Any) -> Any:
    """``value`` as plain JSON types (pydantic models dumped, tuples as lists)."""
    return to_jsonable_python(value, fallback=repr)


def _error_text(kind: str, message: str) -> str:
    """An error in TelcoEnv's observation format."""
    return json.dumps({"error": {"type": kind, "message": message}}, ensure_ascii=False)


class TelcoMCPEnv:
    """The episode an MCP server serves: MCP tool calls in, results and resources out.

    Args:
        env_id: a telcoenv name or Gymnasium id, built with :func:`telcoenv.make`.
        seed: the first episode's seed; a ``reset`` without one takes the previous seed + 1.
        **env_kwargs: keyword arguments of :class:`telcoenv.env.TelcoEnv` (``lang``,
            ``embedder``, ``max_steps``, ...). Bad values raise
            :class:`telcoenv.errors.TelcoEnvError` here, as does a domain with a tool named
            ``message`` or ``reset``.

    The first episode starts here. :meth:`call_tool` never raises on client input: every
    refusal is a tool result with ``is_error`` set.
    """

    def __init__(self, env_id: str = "troubleshooting", *, seed: int = 0, **env_kwargs: Any):
        self.env = telcoenv.make(env_id, **env_kwargs)
        self.counterpart: str = self.telco_env.domain.counterpart
        self._actions: dict[str, Callable[[dict[str, Any]], types.CallToolResult]] = {
            "message": self._message,
            "reset": self._reset,
        }
        clash = sorted(set(self._actions) & {t["function"]["name"] for t in self.telco_env.tools})
        if clash:
            raise TelcoEnvError(f"{env_id} has tools named {clash}, which the MCP server takes")
        self._start(seed)

    @property
    def telco_env(self) -> Any:
        """The unwrapped :class:`telcoenv.env.TelcoEnv` (its ``trace``, ``domain``, ...)."""
        return self.env.unwrapped

    @property
    def instructions(self) -> str:
        """The server's instructions: the system prompt, the MCP mapping, the opening message."""
        how_to = _HOW_TO.format(counterpart=self.counterpart)
        return (
            f"{self._instructions}\n\n{how_to}\n\n"
            f"The {self.counterpart}'s opening message of the current episode:\n{self._statement}"
        )

    # --- tools ------------------------------------------------------------------------------------

    def tools(self) -> list[types.Tool]:
        """The episode's tools as TelcoEnv offers them, then ``message`` and ``reset``."""
        return [*self._env_tools, *self._server_tools()]

    def call_tool(self, name: str, arguments: Mapping[str, Any] | None) -> types.CallToolResult:
        """Run one tool call: the server's own tools here, every other name through TelcoEnv,
        which judges it (unknown tools and bad arguments included)."""
        arguments = dict(arguments or {})
        action = self._actions.get(name)
        if action is not None:
            return action(arguments)
        return self._step({"name": name, "arguments": arguments})

    def _server_tools(self) -> list[types.Tool]:
        counterpart = self.counterpart
        message = {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "What to say"}},
            "required": ["text"],
            "additionalProperties": False,
        }
        reset = {
            "type": "object",
            "properties": {
                "seed": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "The episode's seed (default: the previous seed + 1)",
                }
            },
            "additionalProperties": False,
        }
        return [
            types.Tool(
                name="message",
                description=f"Send a plain message to the {counterpart}, who answers in words "
                "(ask what only they know, or for approval of a change).",
                input_schema=message,
            ),
            types.Tool(
                name="reset",
                description=f"Start a new episode; returns the {counterpart}'s opening message.",
                input_schema=reset,
            ),
        ]

    def _message(self, arguments: dict[str, Any]) -> types.CallToolResult:
        text = arguments.get("text")
        if set(arguments) != {"text"} or not isinstance(text, str):
            return self._refused("message", "message takes one argument, 'text' (a string)")
        # An assistant message, so that text starting with "{" is not read as a JSON tool call.
        return self._step(message_action(text))

    def _reset(self, arguments: dict[str, Any]) -> types.CallToolResult:
        if set(arguments) - {"seed"}:
            return self._refused(
                "reset", "reset takes one optional argument, 'seed' (an integer >= 0)"
            )
        seed = arguments.get("seed")
        try:
            self._start(self._status["seed"] + 1 if seed is None else seed)
        except TelcoEnvError as exc:
            return self._refused("reset", str(exc), "invalid_reset")
        return self._result(self._statement, {"kind": "reset", "valid": True, "error_type": None})

    # --- the episode ------------------------------------------------------------------------------

    def _start(self, seed: Any) -> None:
        seed = check_seed(seed)  # a numpy integer as a plain one: the status goes out as JSON
        statement, info = self.env.reset(seed=seed)
        self._statement: str = statement
        self._instructions: str = info["instructions"]
        self._env_tools = [
            types.Tool(
                name=spec["function"]["name"],
                description=spec["function"]["description"],
                input_schema=spec["function"]["parameters"],
            )
            for spec in info["tools"]
        ]
        self._status: dict[str, Any] = {
            "episode_id": info["episode_id"],
            "seed": seed,
            "steps": 0,
            "max_steps": self.telco_env.max_steps,
            "reward": 0.0,
            "total_reward": 0.0,
            "terminated": False,
            "truncated": False,
            "metrics": None,
            "resolved": None,
        }

    def _step(self, action: Any) -> types.CallToolResult:
        try:
            text, reward, terminated, truncated, info = self.env.step(action)
        except TelcoEnvError as exc:  # a reward function or an embedder failed at the end
            return self._refused("step", str(exc), "episode_error")
        status = self._status
        status.update(
            steps=int(info["steps"]),
            reward=float(reward),
            total_reward=status["total_reward"] + float(reward),
            terminated=bool(terminated),
            truncated=bool(truncated),
        )
        if terminated or truncated:
            status.update(metrics=_jsonable(info.get("metrics")), resolved=info.get("resolved"))
        return self._result(text, info["action"])

    def _result(self, text: str, action: dict[str, Any]) -> types.CallToolResult:
        """The observation and the status, with this call's ``action`` (its kind, validity and
        error type: the same for every refusal, whether the text is JSON or words)."""
        status = {**self._status, "action": _jsonable(action)}
        blocks = [text, json.dumps(status, ensure_ascii=False)]
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=block) for block in blocks],
            structured_content=status,
            is_error=not action["valid"],
        )

    def _refused(
        self, kind: str, message: str, error_type: str = "invalid_arguments"
    ) -> types.CallToolResult:
        action = {"kind": kind, "valid": False, "error_type": error_type}
        return self._result(_error_text(error_type, message), action)

    # --- resources --------------------------------------------------------------------------------

    def resources(self) -> list[types.Resource]:
        """The resources of the current episode."""
        return [
            types.Resource(uri=uri, name=uri.rsplit("/", 1)[1], description=about, mime_type=mime)
            for uri, (mime, about) in RESOURCES.items()
        ]

    def read_resource(self, uri: str) -> types.TextResourceContents:
        """A resource's current content; an unknown URI raises ``KeyError``."""
        mime, _ = RESOURCES[uri]
        match uri.rsplit("/", 1)[1]:
            case "statement":
                text = self._statement
            case "instructions":
                text = self._instructions
            case "transcript":
                ended = self._status["terminated"] or self._status["truncated"]
                fields = None if ended else _RUNNING_TRACE_FIELDS
                text = self.telco_env.trace.model_dump_json(include=fields)
            case _:
                text = json.dumps(self._status, ensure_ascii=False)
        return types.TextResourceContents(uri=uri, mime_type=mime, text=text)

    def close(self) -> None:
        """Release the TelcoEnv (its episode database)."""
        self.env.close()


def create_mcp_server(episodes: TelcoMCPEnv) -> Server[Any]:
    """The MCP server (``mcp.server.lowlevel.Server``) of ``episodes``.

    Run it with ``server.run(...)`` over a transport's streams, or serve
    ``server.streamable_http_app()``; :func:`serve_mcp` does either. Its ``instructions`` follow
    the current episode.
    """

    async def list_tools(_: Any, __: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=episodes.tools())

    async def call_tool(_: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        result = episodes.call_tool(params.name, params.arguments)
        server.instructions = episodes.instructions  # for clients that connect later (HTTP)
        return result

    async def list_resources(_: Any, __: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=episodes.resources())

    async def read_resource(
        _: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        try:
            contents = episodes.read_resource(params.uri)
        except KeyError:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"unknown resource {params.uri!r}; resources: {sorted(RESOURCES)}",
            ) from None
        return types.ReadResourceResult(contents=[contents])

    server: Server[Any] = Server(
        "telcoenv",
        version=telcoenv.__version__,
        title=f"telcoenv {episodes.telco_env.env_id}",
        instructions=episodes.instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )
    return server


def serve_mcp(
    env_id: str = "troubleshooting",
    *,
    transport: Transport = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
    seed: int = 0,
    **env_kwargs: Any,
) -> None:
    """Serve ``env_id`` over ``transport`` until the client leaves (stdio) or an interrupt
    (HTTP, at ``http://HOST:PORT/mcp``). The first episode starts before serving, so a bad
    ``env_id`` or keyword raises :class:`telcoenv.errors.TelcoEnvError` here."""
    episodes = TelcoMCPEnv(env_id, seed=seed, **env_kwargs)
    server = create_mcp_server(episodes)
    where = "stdio" if transport == "stdio" else f"http://{host}:{port}/mcp"
    print(f"telcoenv mcp: serving {env_id} (seed {seed}) over {where}", file=sys.stderr)
    try:
        if transport == "stdio":
            anyio.run(_serve_stdio, server)
        else:
            anyio.run(_serve_http, server, host, port)
    finally:
        episodes.close()


async def _serve_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def _serve_http(server: Server[Any], host: str, port: int) -> None:
    import uvicorn  # installed with mcp

    app = server.streamable_http_app(host=host)
    await uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning")).serve()
