"""MCP over Streamable HTTP at /mcp/<project> of a real `jido-kg serve`, and the stdio bridge to it.

The clients are the `mcp` SDK's own: its Streamable HTTP client against the service, and its
stdio client spawning `jido-kg mcp --url` while the service holds the store. Auth is the HTTP
API's: reads follow KG_ANONYMOUS_READ, writes need a write token (401 without one, 403 with a
token that does not allow it), all as HTTP answers in the one JSON error shape.
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from kg.longterm.tools import TOOL_DEFINITIONS
from kg.mcp_server import ASSEMBLE_TOOL, ToolScope, call_tool
from kg.memory import memory_iri
from kg.memory_service import MemoryService
from tests.agent.conftest import TOKENS
from tests.agent.test_mcp import session as stdio_scenario
from tests.conftest import ROOT, RunningServer, jido_kg_command

Factory = Callable[..., RunningServer]
SECURED = {"KG_TOKENS": json.dumps(TOKENS)}
MCP_HEADERS = {"Accept": "application/json, text/event-stream",
               "Content-Type": "application/json"}
REMEMBER = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "remember", "arguments": {"content": "Deploys run on Fridays"}}}
RECALL = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
          "params": {"name": "recall", "arguments": {"query": "deploys"}}}


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    async def main() -> None:
        with anyio.fail_after(90):
            await scenario()

    anyio.run(main)


@asynccontextmanager
async def connect(server: RunningServer, project: str,
                  token: str | None = None) -> AsyncIterator[Client]:
    """The SDK's Streamable HTTP client on the project's endpoint, with a bearer token."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers) as http:
        url = f"{server.url}/mcp/{project}"
        async with Client(streamable_http_client(url, http_client=http)) as client:
            yield client


def post(server: RunningServer, path: str, body: Any, token: str | None = None,
         method: str = "POST") -> tuple[int, dict[str, str], Any]:
    """One raw HTTP request: status, headers and the JSON body."""
    headers = {**MCP_HEADERS, **({"Authorization": f"Bearer {token}"} if token else {})}
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(server.url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, dict(r.headers), json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), json.loads(e.read())


def error_of(answer: tuple[int, dict[str, str], Any], status: int) -> dict[str, Any]:
    """The one JSON error shape with this status."""
    code, _, body = answer
    assert code == status, body
    assert set(body) == {"error"} and set(body["error"]) == {"status", "code", "message",
                                                             "details"}
    assert body["error"]["status"] == status
    return body["error"]  # type: ignore[no-any-return]


def stored(server: RunningServer, memory_id: str) -> dict[str, str]:
    """The memory's content and retirement as the SPARQL endpoint sees them."""
    iri = f"<{memory_iri(memory_id).value}>"
    query = ("PREFIX jido: <https://jido.ai/ontology#> SELECT ?content ?retired WHERE { "
             f"GRAPH ?g {{ {iri} jido:content ?content OPTIONAL {{ {iri} jido:retiredAt ?retired "
             "} } }")
    req = urllib.request.Request(f"{server.url}/sparql?query={quote(query)}",
                                 headers={"Accept": "application/sparql-results+json",
                                          "Authorization": "Bearer r-token"})
    with urllib.request.urlopen(req, timeout=30) as r:
        rows = json.loads(r.read())["results"]["bindings"]
    assert len(rows) == 1, rows
    return {name: value["value"] for name, value in rows[0].items()}


def test_round_trip_over_http_is_visible_to_sparql(server_factory: Factory) -> None:
    server = server_factory(extra_env=SECURED)

    async def scenario() -> None:
        async with connect(server, "mcp-demo", "w-token") as client:
            listed = await client.list_tools()
            published = {t.name: t.input_schema for t in listed.tools}
            assert published == {d["name"]: d["input_schema"]
                                 for d in [*TOOL_DEFINITIONS, ASSEMBLE_TOOL]}
            saved = await client.call_tool("remember", {
                "content": "The billing service is written in Kotlin", "type": "fact",
                "confidence": 0.9})
            assert saved.is_error is False, saved.structured_content
            memory_id = saved.structured_content["result"]["memory_id"]
            assert stored(server, memory_id) == {
                "content": "The billing service is written in Kotlin"}
            found = await client.call_tool("recall", {"query": "billing Kotlin"})
            hits = found.structured_content["result"]["memories"]
            assert [h["memory_id"] for h in hits] == [memory_id]
            prompt = await client.call_tool("assemble_context", {"query_hint": "billing"})
            result = prompt.structured_content["result"]
            assert "(high confidence) The billing service is written in Kotlin" in (
                result["prompt"])
            assert result["tokens"] > 0
            bad = await client.call_tool("forget", {"memory_id": "nope", "reason": "x"})
            assert bad.is_error is True
            assert bad.structured_content["error"]["code"] == "memory_not_found"
            gone = await client.call_tool("forget", {"memory_id": memory_id,
                                                     "reason": "moved to Go"})
            assert gone.is_error is False
            assert "retired" in stored(server, memory_id)
            again = await client.call_tool("recall", {"query": "billing Kotlin"})
            assert again.structured_content["result"]["memories"] == []

    run(scenario)


def test_writes_need_a_write_token(server_factory: Factory) -> None:
    server = server_factory(extra_env=SECURED)
    for token in (None, "not-a-token"):
        refused = post(server, "/mcp/demo", REMEMBER, token)
        assert refused[1]["WWW-Authenticate"].startswith("Bearer")
        assert error_of(refused, 401)["code"] == "unauthenticated"
    assert error_of(post(server, "/mcp/demo", RECALL, "not-a-token"), 401)
    # A write hidden in a batch, or behind a name that is not a string, is still a write.
    assert error_of(post(server, "/mcp/demo", [RECALL, REMEMBER]), 401)
    odd = {**REMEMBER, "params": {"name": ["recall"], "arguments": {}}}
    assert error_of(post(server, "/mcp/demo", odd), 401)
    # A read token reads, and may not write.
    assert error_of(post(server, "/mcp/demo", REMEMBER, "r-token"), 403)["code"] == "forbidden"
    status, _, body = post(server, "/mcp/demo", RECALL, "r-token")
    assert status == 200 and body["result"]["isError"] is False

    async def scenario() -> None:
        # Anonymous reads are allowed here (KG_ANONYMOUS_READ defaults to true): the SDK client
        # connects and recalls, and its remember is refused by the HTTP 401.
        async with connect(server, "demo") as client:
            found = await client.call_tool("recall", {"query": "deploys"})
            assert found.structured_content["result"]["memories"] == []
            with pytest.raises(MCPError):
                await client.call_tool("remember", {"content": "Deploys run on Fridays"})
        async with connect(server, "demo", "w-token") as client:
            found = await client.call_tool("recall", {"query": "deploys"})
            assert found.structured_content["result"]["memories"] == []  # nothing written

    run(scenario)


def test_without_anonymous_reads_the_whole_endpoint_needs_a_token(
        server_factory: Factory) -> None:
    server = server_factory(extra_env={**SECURED, "KG_ANONYMOUS_READ": "false"})
    tools_list = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    assert error_of(post(server, "/mcp/demo", tools_list), 401)
    assert error_of(post(server, "/mcp/demo", RECALL), 401)
    assert post(server, "/mcp/demo", tools_list, "r-token")[0] == 200

    async def scenario() -> None:
        # The SDK client's connect fails (inside its task group) on the HTTP 401.
        with pytest.RaisesGroup(MCPError, flatten_subgroups=True):
            async with connect(server, "demo"):
                pass

    run(scenario)


def test_a_token_of_another_project_is_refused(server_factory: Factory) -> None:
    server = server_factory(extra_env=SECURED)  # demo-writer is write@demo
    for body in (REMEMBER, RECALL, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}):
        assert error_of(post(server, "/mcp/other", body, "demo-writer"), 403)["code"] == \
            "forbidden"
    status, _, body = post(server, "/mcp/demo", REMEMBER, "demo-writer")
    assert status == 200 and body["result"]["isError"] is False
    assert error_of(post(server, "/mcp/not%20a%20project", RECALL), 400)
    # No server-to-client SSE stream is offered: GET is 405, as the MCP spec allows.
    refused = post(server, "/mcp/demo", None, method="GET")
    assert error_of(refused, 405) and "POST" in refused[1]["Allow"]


def test_the_tools_refuse_a_write_outside_a_writable_scope(service: MemoryService) -> None:
    """The second line behind the endpoint's 401/403: a read-only scope cannot write."""
    scope = ToolScope(project="demo", may_write=False)
    refused = call_tool(service, "remember", {"content": "Deploys run on Fridays"}, scope=scope)
    assert refused.is_error is True
    assert refused.structured_content["error"]["code"] == "permission_denied"
    found = call_tool(service, "recall", {"query": "deploys"}, scope=scope)
    assert found.is_error is False and found.structured_content["result"]["memories"] == []
    prompt = call_tool(service, "assemble_context", {}, scope=scope)
    assert prompt.structured_content == {"ok": True, "result": {"prompt": "", "tokens": 0}}


def bridge(server: RunningServer, *extra: str, env: dict[str, str] | None = None,
           ) -> StdioServerParameters:
    """`jido-kg mcp --url` on the server, as an MCP client configuration would start it."""
    command, *args = jido_kg_command()
    return StdioServerParameters(
        command=command, args=[*args, "mcp", "--url", server.url, *extra], cwd=str(ROOT),
        env={**os.environ, **(env or {})})


def test_stdio_bridge_round_trips_while_serve_holds_the_store(
        server_factory: Factory, tmp_path: Path) -> None:
    server = server_factory(extra_env={**SECURED, "KG_BACKEND": "embedded"})
    token_file = tmp_path / "token"
    token_file.write_text("w-token\n", encoding="utf-8")
    params = bridge(server, "--project", "mcp-demo", "--token-file", str(token_file))
    run(lambda: stdio_scenario(params))

    async def read_only() -> None:
        # The token from KG_TOKEN; a read token's write is refused with the service's reason.
        params = bridge(server, "--project", "mcp-demo", env={"KG_TOKEN": "r-token"})
        async with Client(params) as client:
            found = await client.call_tool("recall", {"query": "billing"})
            assert found.is_error is False
            with pytest.raises(MCPError, match="HTTP 403 forbidden"):
                await client.call_tool("remember", {"content": "Billing moved to Go"})
            # With the service gone a call fails alone: the bridge stays up for the next one.
            server.stop()
            for _ in range(2):
                with pytest.raises(MCPError, match="cannot reach the jido-kg service"):
                    await client.call_tool("recall", {"query": "billing"})

    run(read_only)


def jido_kg(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the CLI with no MCP client on stdin."""
    return subprocess.run([*jido_kg_command(), *args], cwd=ROOT, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120, env={**os.environ, **(env or {})})


def test_store_in_use_and_bad_bridges_say_what_to_do(server_factory: Factory,
                                                     tmp_path: Path) -> None:
    server = server_factory(extra_env={**SECURED, "KG_BACKEND": "embedded"})
    held = jido_kg("mcp", "--store", str(server.store_dir), "--project", "demo")
    assert held.returncode == 2
    assert "already open in another process" in held.stderr and "--url" in held.stderr
    both = jido_kg("mcp", "--url", server.url, "--store", str(tmp_path / "s"))
    assert both.returncode == 2 and "--url and --store" in both.stderr
    wrong_token = jido_kg("mcp", "--url", server.url, "--project", "demo",
                          env={"KG_TOKEN": "not-a-token"})
    assert wrong_token.returncode == 2
    assert "refused" in wrong_token.stderr and "HTTP 401" in wrong_token.stderr
    server.stop()
    gone = jido_kg("mcp", "--url", server.url, "--project", "demo")
    assert gone.returncode == 2 and f"cannot reach the jido-kg service at {server.url}" in (
        gone.stderr)
