"""Drives an MCP server with the official Python SDK (PyPI `mcp`), as an agent's client.

    drive.py stdio EYWA_BIN CALLS.json      spawns `EYWA_BIN mcp` (EYWA_* passed through)
    drive.py http URL CALLS.json            speaks streamable HTTP to URL

CALLS.json is a list of {"tool": name, "arguments": {...}}. Prints one JSON object: the
server's name, the tools it lists (name, description, input schema) and, for each call,
whether it was a tool error, its text, or the protocol error it raised instead."""
import asyncio
import json
import os
import sys

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client


def field(obj, snake, camel):
    """A model field: the SDK spells them in snake_case from 2.0, camelCase before."""
    return getattr(obj, snake) if hasattr(obj, snake) else getattr(obj, camel)


async def drive(session, calls):
    init = await session.initialize()
    listed = await session.list_tools()
    tools = [
        {"name": t.name, "description": t.description, "schema": field(t, "input_schema", "inputSchema")}
        for t in listed.tools
    ]
    results = []
    for call in calls:
        try:
            r = await session.call_tool(call["tool"], call.get("arguments") or {})
            text = "".join(getattr(c, "text", "") for c in r.content)
            results.append({"tool": call["tool"], "is_error": bool(field(r, "is_error", "isError")), "text": text})
        except Exception as e:  # a protocol error: what the tests say must not happen
            results.append({"tool": call["tool"], "protocol_error": f"{type(e).__name__}: {e}"})
    return {"server": field(init, "server_info", "serverInfo").name, "tools": tools, "results": results}


async def main():
    kind, target, calls_file = sys.argv[1:4]
    with open(calls_file) as f:
        calls = json.load(f)
    if kind == "stdio":
        env = {k: v for k, v in os.environ.items() if k.startswith("EYWA_") or k in ("HOME", "PATH")}
        params = StdioServerParameters(command=target, args=["mcp"], env=env)
        async with stdio_client(params) as streams:
            async with ClientSession(*streams) as session:
                out = await drive(session, calls)
    else:
        async with streamable_http_client(target) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                out = await drive(session, calls)
    print(json.dumps(out))


asyncio.run(main())
