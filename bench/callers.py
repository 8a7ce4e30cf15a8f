"""The ways an agent reaches the memory service that bench.agent_reach compares, and their cost.

Each `Way` has a remember and a recall (async, so that the SDK's client runs beside the blocking
ones in one event loop) and the process id of the server it calls, whose CPU `cpu_ns` reads.
All of them send the same arguments: limit 10, min_confidence 0 (the API's default; the tool's
is 0.5), and a content that is new each call (a repeated one would be merged, a cheaper write).
"""

from __future__ import annotations

import http.client
import json
import os
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from bench.generator import TOPICS, project_id
from bench.server import ServerProcess
from kg.client import MemoryClient

__all__ = ["LABELS", "TOKEN", "Way", "cpu_ns", "ways"]

TOKEN = "bench-agent-reach"
LABELS = {"http": "HTTP API (http.client, keep-alive)",
          "httpx": "HTTP API (httpx2, the SDK client's HTTP library)", "client": "MemoryClient",
          "mcp": "MCP over HTTP (SDK client)",
          "mcp_raw": "MCP over HTTP (raw POST, 2026-07-28 revision)",
          "mcp_2025": "MCP over HTTP (raw POST, 2025-06-18 revision)"}
RECALL_PROJECT, REMEMBER_PROJECT = project_id(0), project_id(1)
QUERIES = [f"{a} {b}" for a in TOPICS[:10] for b in TOPICS[10:20]]
RECALL_ARGS: dict[str, Any] = {"limit": 10, "min_confidence": 0.0}
# The envelope the SDK's client puts in every request of the 2026-07-28 revision.
_META_2026 = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
              "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
              "io.modelcontextprotocol/clientCapabilities": {}}

Call = Callable[[int], Awaitable[None]]
Post = Callable[[str, dict[str, Any], int, dict[str, str]], Any]


def _content(way: str, i: int) -> str:
    return (f"The {TOPICS[i % len(TOPICS)]} layer of {way} build {i} depends on "
            f"{TOPICS[(i * 7 + 3) % len(TOPICS)]} at {time.time_ns()}")


def _poster(port: int, headers: dict[str, str]) -> Post:
    """A JSON POST on one keep-alive connection: the parsed answer of the expected status."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    sent = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json", **headers}

    def post(path: str, body: dict[str, Any], status: int, extra: dict[str, str]) -> Any:
        conn.request("POST", path, json.dumps(body), {**sent, **extra})
        response = conn.getresponse()
        data = response.read()
        assert response.status == status, data[:300]
        return json.loads(data)

    return post


def _http_calls(port: int, way: str) -> dict[str, Call]:
    post = _poster(port, {"Accept": "application/json"})

    async def remember(i: int) -> None:
        post(f"/v1/projects/{REMEMBER_PROJECT}/memories",
             {"content": _content(way, i), "confidence": 0.8}, 201, {})

    async def recall(i: int) -> None:
        found = post(f"/v1/projects/{RECALL_PROJECT}/recall",
                     {"query": QUERIES[i % len(QUERIES)], **RECALL_ARGS}, 200, {})
        assert found["hits"], found

    return {"remember": remember, "recall": recall}


def _httpx_calls(web: httpx2.AsyncClient, url: str) -> dict[str, Call]:
    """The HTTP API through the async httpx2 client the SDK's MCP client sends with."""
    async def post(path: str, body: dict[str, Any], status: int) -> Any:
        response = await web.post(f"{url}{path}", json=body,
                                  headers={"Accept": "application/json"})
        assert response.status_code == status, response.text[:300]
        return response.json()

    async def remember(i: int) -> None:
        await post(f"/v1/projects/{REMEMBER_PROJECT}/memories",
                   {"content": _content("httpx", i), "confidence": 0.8}, 201)

    async def recall(i: int) -> None:
        found = await post(f"/v1/projects/{RECALL_PROJECT}/recall",
                           {"query": QUERIES[i % len(QUERIES)], **RECALL_ARGS}, 200)
        assert found["hits"], found

    return {"remember": remember, "recall": recall}


def _client_calls(client: MemoryClient) -> dict[str, Call]:
    async def remember(i: int) -> None:
        client.remember(REMEMBER_PROJECT, _content("client", i), confidence=0.8)

    async def recall(i: int) -> None:
        assert client.recall(RECALL_PROJECT, QUERIES[i % len(QUERIES)],
                             limit=RECALL_ARGS["limit"],
                             min_confidence=RECALL_ARGS["min_confidence"])

    return {"remember": remember, "recall": recall}


def _mcp_calls(writer: Client, reader: Client, way: str) -> dict[str, Call]:
    async def remember(i: int) -> None:
        done = await writer.call_tool(
            "remember", {"content": _content(way, i), "confidence": 0.8})
        assert done.is_error is False, done.structured_content

    async def recall(i: int) -> None:
        found = await reader.call_tool("recall", {"query": QUERIES[i % len(QUERIES)],
                                                  **RECALL_ARGS})
        assert found.is_error is False, found.structured_content
        assert found.structured_content and found.structured_content["result"]["memories"]

    return {"remember": remember, "recall": recall}


def _raw_mcp_calls(port: int, version: str) -> dict[str, Call]:
    post = _poster(port, {"Accept": "application/json, text/event-stream",
                          "MCP-Protocol-Version": version})
    way = f"mcp-{version}"

    def call(project: str, i: int, name: str, arguments: dict[str, Any]) -> Any:
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        headers = {}
        if version == "2026-07-28":
            params["_meta"] = _META_2026
            headers = {"Mcp-Method": "tools/call", "Mcp-Name": name}
        body = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}
        result = post(f"/mcp/{project}", body, 200, headers)["result"]
        assert result["isError"] is False, result
        return result["structuredContent"]

    async def remember(i: int) -> None:
        call(REMEMBER_PROJECT, i, "remember", {"content": _content(way, i), "confidence": 0.8})

    async def recall(i: int) -> None:
        found = call(RECALL_PROJECT, i, "recall", {"query": QUERIES[i % len(QUERIES)],
                                                   **RECALL_ARGS})
        assert found["result"]["memories"], found

    return {"remember": remember, "recall": recall}


async def _sdk_client(stack: AsyncExitStack, web: httpx2.AsyncClient, url: str) -> Client:
    return await stack.enter_async_context(Client(streamable_http_client(url, http_client=web)))


@dataclass(frozen=True)
class Way:
    """One way of calling: its remember and recall, and the process tree of its server."""

    calls: dict[str, Call]
    server_pid: int


async def ways(stack: AsyncExitStack, servers: dict[str, ServerProcess]) -> dict[str, Way]:
    """Every way of calling, by name ("before:" ways for a server of an older checkout)."""
    web = await stack.enter_async_context(
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}))
    ways: dict[str, Way] = {}
    for side, server in servers.items():
        prefix = "" if side == "now" else f"{side}:"
        writer = await _sdk_client(stack, web, f"{server.url}/mcp/{REMEMBER_PROJECT}")
        reader = await _sdk_client(stack, web, f"{server.url}/mcp/{RECALL_PROJECT}")
        ways[f"{prefix}http"] = Way(_http_calls(server.port, f"{prefix}http"), server.pid)
        ways[f"{prefix}mcp"] = Way(_mcp_calls(writer, reader, f"{prefix}mcp"), server.pid)
        if side == "now":
            memory = stack.enter_context(MemoryClient(server.url, token=TOKEN))
            ways["client"] = Way(_client_calls(memory), server.pid)
            ways["httpx"] = Way(_httpx_calls(web, server.url), server.pid)
            ways["mcp_raw"] = Way(_raw_mcp_calls(server.port, "2026-07-28"), server.pid)
            ways["mcp_2025"] = Way(_raw_mcp_calls(server.port, "2025-06-18"), server.pid)
    return ways


def cpu_ns(pid: int) -> int:
    """CPU time of a process tree, every thread (schedstat: exact, where /proc/PID/stat counts
    10 ms ticks), in ns; threads that have ended are not counted."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                total += int(Path(f"/proc/{current}/task/{task}/schedstat").read_text().split()[0])
                todo += map(int, Path(f"/proc/{current}/task/{task}/children").read_text().split())
            except OSError:
                continue
    return total
