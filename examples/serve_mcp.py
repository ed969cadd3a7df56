"""Play a telcoenv episode through the MCP server, with the official SDK's stdio client.

    pip install "telcoenv[mcp]"
    python examples/serve_mcp.py

This launches ``telcoenv mcp`` as a subprocess, as a desktop MCP client would, and plays a few
calls: it reads the opening message, asks the engineer, makes one call the environment refuses
(``isError``) and submits a resolution, whose result carries the reward and the metrics. To give
the same server to a desktop client, add it to the client's MCP configuration::

    {"mcpServers": {"telcoenv": {"command": "telcoenv",
                                 "args": ["mcp", "--env", "troubleshooting"]}}}
"""

from __future__ import annotations

import json
import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ENV, SEED = "beam_misalignment", 1


async def play(env: str, seed: int) -> None:
    """Connect to a new ``telcoenv mcp`` server over stdio and play a short episode."""
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "telcoenv", "mcp", "--env", env, "--seed", str(seed), "--embedder", "none"],
    )
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = (await session.list_tools()).tools
        ours = " and ".join(tool.name for tool in tools[-2:])
        print(f"{len(tools)} tools: the environment's, then {ours}")
        statement = await session.read_resource("telcoenv://episode/statement")
        print("ENGINEER:", statement.contents[0].text)
        reply = await session.call_tool("message", {"text": "Which cell is affected?"})
        print("REPLY:", reply.content[0].text)
        refused = await session.call_tool("coverage_map", {"area": "CL-X"})  # no resolution
        print("REFUSED:", refused.is_error, refused.content[0].text[:100])
        submitted = await session.call_tool(
            "submit_resolution", {"intent": "Beam Misalignment", "summary": "Beams re-aligned."}
        )
        status = submitted.structured_content
        print("REWARD:", status["reward"], "METRICS:", json.dumps(status["metrics"])[:120])


if __name__ == "__main__":
    anyio.run(play, ENV, SEED)
