"""Drives an MCP server with the official Python SDK (PyPI `mcp`), as an agent's client.

    drive.py stdio EYWA_BIN CALLS.json      spawns `EYWA_BIN mcp` (EYWA_* passed through)
    drive.py http URL CALLS.json [OPTIONS]  speaks streamable HTTP to URL

Options for http:
    --header 'NAME: VALUE'   sent with every request (repeatable), as `Authorization: Bearer …`
    --cafile PEM             the certificate(s) to trust for an https URL
    --http1 | --http2        offer only that HTTP version (default: HTTP/1.1, httpx's own)

CALLS.json is a list of {"tool": name, "arguments": {...}}. Prints one JSON object: the
server's name, the tools it lists (name, description, input schema) and, for each call,
whether it was a tool error, its text, or the protocol error it raised instead. Over http
it also holds "http": the status, HTTP version and WWW-Authenticate ("challenge") of every
response. When the session cannot even start, it holds "init_error" instead of the rest,
and drive.py exits 1."""
import argparse
import asyncio
import json
import os
import ssl
import sys

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

try:  # the SDK's HTTP client from 2.0; httpx before
    import httpx2 as httpx
except ImportError:  # pragma: no cover
    import httpx


def field(obj, snake, camel):
    """A model field: the SDK spells them in snake_case from 2.0, camelCase before."""
    return getattr(obj, snake) if hasattr(obj, snake) else getattr(obj, camel)


async def drive(session, calls):
    try:
        init = await session.initialize()
    except Exception as e:  # refused before any tool: the test reads why
        return {"init_error": f"{type(e).__name__}: {e}"}
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


def http_client(args, exchanges):
    """An HTTP client as an agent would configure one: its headers, CA and HTTP version;
    every response's status and version noted in `exchanges`."""
    headers = {}
    for header in args.header:
        name, _, value = header.partition(":")
        headers[name.strip()] = value.strip()

    async def seen(response):
        exchanges.append({
            "status": response.status_code,
            "version": response.http_version,
            "challenge": response.headers.get("www-authenticate"),
        })

    return httpx.AsyncClient(
        headers=headers,
        # The SDK's own defaults: 30 s, and 300 s to read a held-open stream.
        timeout=httpx.Timeout(30.0, read=300.0),
        verify=ssl.create_default_context(cafile=args.cafile) if args.cafile else True,
        http1=not args.http2,
        http2=args.http2,
        event_hooks={"response": [seen]},
        # No proxy or CA from the environment: the server is the one named.
        trust_env=False,
    )


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=["stdio", "http"])
    parser.add_argument("target")
    parser.add_argument("calls")
    parser.add_argument("--header", action="append", default=[])
    parser.add_argument("--cafile")
    version = parser.add_mutually_exclusive_group()
    version.add_argument("--http1", action="store_true")
    version.add_argument("--http2", action="store_true")
    args = parser.parse_args()
    with open(args.calls) as f:
        calls = json.load(f)
    if args.kind == "stdio":
        env = {k: v for k, v in os.environ.items() if k.startswith("EYWA_") or k in ("HOME", "PATH")}
        params = StdioServerParameters(command=args.target, args=["mcp"], env=env)
        async with stdio_client(params) as streams:
            async with ClientSession(*streams) as session:
                out = await drive(session, calls)
    else:
        exchanges = []
        async with http_client(args, exchanges) as client:
            async with streamable_http_client(args.target, http_client=client) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    out = await drive(session, calls)
        out["http"] = exchanges
    print(json.dumps(out))
    if "init_error" in out:
        sys.exit(1)


asyncio.run(main())
