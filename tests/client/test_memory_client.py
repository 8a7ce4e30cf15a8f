"""MemoryClient against a real `jido-kg serve`: every operation round-trips and returns what an
in-process MemoryService returns for the same data; every error status arrives as its kg class.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest

from kg.client import MemoryClient, RemoteHit
from kg.client.decoding import NOT_CARRIED_TIME
from kg.client.operations import Call
from kg.client.transport import Transport
from kg.errors import (
    AuthenticationError,
    KgError,
    PayloadTooLargeError,
    PermissionDeniedError,
    QueryTimeoutError,
    StoreUnavailableError,
    ValidationError,
    http_status,
)
from kg.longterm.errors import MemoryNotFoundError, MemoryRetiredError
from kg.memory_service import MemoryService
from kg.shortterm import (
    ContextKeyNotFoundError,
    SessionExistsError,
    SessionNotFoundError,
    SessionStateError,
)
from kg.terms import ContextKey, ContextSource, MemoryType, SessionStatus, UnknownContextKeyError
from tests.client.comparison import EPOCH, normal
from tests.client.conftest import TOKEN_ENV
from tests.conftest import ROOT, RunningServer


def test_every_operation_returns_what_memory_service_returns(
    writer: MemoryClient, local: MemoryService
) -> None:
    sid, project = "same1", "sameproj"

    def both(name: str, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        remote, here = getattr(writer, name)(*args, **kwargs), getattr(local, name)(*args, **kwargs)
        assert normal(remote) == normal(here), name
        return remote, here

    both("start_session", sid, project=project, agent="bot")
    both("put_context_item", sid, ContextKey.FRAMEWORK, "Django", source=ContextSource.TOOL,
         confidence=1.0, memory_type=None)
    item, _ = both("put_context_item", sid, "current_task", {"goal": "migrate", "steps": [1, 2]},
                   source="explicit", confidence=0.9, memory_type=MemoryType.AGENT_RULE)
    assert item.value == {"goal": "migrate", "steps": [1, 2]}
    assert (item.first_seen, item.last_accessed) == (NOT_CARRIED_TIME, NOT_CARRIED_TIME)
    item, _ = both("get_context_item", sid, "framework")
    assert item.access_count == 2  # the put and this read
    both("list_context", sid)
    message, _ = both("add_message", sid, "user", "Where is staging?")
    assert message.timestamp > EPOCH.timestamp()
    both("list_messages", sid)
    inferred, _ = both("process_response", sid, "This is a Go project; editing deploy.go.")
    assert inferred == {"active_file": "deploy.go", "primary_language": "Go"}
    both("add_pending", sid, "Releases are tagged vX.Y.Z", memory_type="process_convention",
         confidence=0.8, source_type="agent", rationale="seen in CI", importance_score=None)
    both("add_pending", sid, "maybe tabs", memory_type=MemoryType.FACT, confidence=0.4,
         source_type="user", rationale=None, importance_score=0.2)
    ready, _ = both("list_pending", sid, threshold=0.6)
    assert [p.content for p in ready] == ["Releases are tagged vX.Y.Z"]
    assert len(both("list_pending", sid, threshold=0.1)[0]) == 2

    memory, here = both("remember", project, "Staging runs on Fly.io", memory_type="fact",
                        confidence=0.9, source_type="user", session_id=sid, agent="bot",
                        rationale="the user said so")
    assert memory.timestamp.tzinfo is UTC and memory.evidence == ()
    assert writer.get_memory(project, memory.id) == memory
    assert normal(writer.get_memory(project, memory.id)) == normal(local.get_memory(project,
                                                                                   here.id))
    remote_hits = writer.recall(project, "staging", limit=5, types=[MemoryType.FACT])
    local_hits = local.recall(project, "staging", limit=5, types=[MemoryType.FACT])
    assert all(isinstance(h, RemoteHit) and h.score > 0 for h in remote_hits)
    assert normal([h.memory for h in remote_hits]) == normal([h.memory for h in local_hits])
    turn, _ = both("assemble_context", sid, query_hint="staging host", token_budget=4000,
                   base_prompt="You are helpful.")
    assert "Staging runs on Fly.io" in turn.system_prompt and turn.context is not None
    assert turn.context.token_counts.total <= 4000 == turn.context.budget.total

    both("promote", sid)
    info, _ = both("pause_session", sid)
    assert info.status is SessionStatus.PAUSED
    both("resume_session", sid)
    both("session", sid)
    assert writer.session_project(sid) == project
    remote_snapshot = writer.snapshot_session(sid)
    assert {k: remote_snapshot[k] for k in ("version", "id", "project", "agent", "status")} == {
        "version": 1, "id": sid, "project": project, "agent": "bot", "status": "active"}
    handed = writer.hand_off_session(sid)
    with pytest.raises(SessionNotFoundError):
        writer.session(sid)
    restored = writer.restore_session(handed)
    # The same snapshot continues the session in the in-process service too.
    local.hand_off_session(sid)
    assert normal(restored) == normal(local.restore_session(handed))
    closed, _ = both("close_session", sid)
    assert closed[0].status is SessionStatus.CLOSED
    forgotten = writer.forget(project, memory.id, reason="moved to Render")
    assert normal(forgotten) == normal(local.forget(project, here.id, reason="moved to Render"))
    assert forgotten.retirement_reason == "moved to Render" and forgotten.retired_at is not None


def test_context_items_and_sessions_by_their_defaults(writer: MemoryClient) -> None:
    started = writer.start_session(project="defaults")  # the service mints the id
    assert len(started.id) == 32 and started.status is SessionStatus.ACTIVE
    item = writer.put_context_item(started.id, "framework", None)
    assert (item.value, item.source, item.confidence) == (None, ContextSource.EXPLICIT, 1.0)
    writer.delete_context_item(started.id, ContextKey.FRAMEWORK)
    assert writer.list_context(started.id)[0] == []
    with pytest.raises(ContextKeyNotFoundError):
        writer.delete_context_item(started.id, "framework")
    pending = writer.add_pending(started.id, "Deploys go through CI")
    assert (pending.memory_type, pending.confidence, pending.importance_score) == (
        MemoryType.FACT, 0.8, 1.0)
    report = writer.promote(started.id)
    assert len(report.promoted) == 1
    promoted = writer.get_memory("defaults", report.promoted[0])
    assert promoted.content == "Deploys go through CI" and promoted.session == started.id


def expect(error_class: type[KgError], code: str, status: int,
           call: Callable[[], object]) -> KgError:
    with pytest.raises(KgError) as raised:
        call()
    error = raised.value
    assert type(error) is error_class, (type(error), error)
    assert (error.code, http_status(error)) == (code, status)
    assert error.message and isinstance(error.details, dict)
    return error


def test_each_error_status_becomes_its_kg_class(service_server: RunningServer,
                                                writer: MemoryClient) -> None:
    anonymous = MemoryClient(service_server.url)
    reader = MemoryClient(service_server.url, token="r-token")
    wrong = MemoryClient(service_server.url, token="nope")
    writer.start_session("err1", project="errors")
    memory = writer.remember("errors", "Errors travel as JSON")

    expect(AuthenticationError, "unauthenticated", 401,
           lambda: anonymous.start_session(project="errors"))
    expect(AuthenticationError, "unauthenticated", 401, lambda: wrong.session("err1"))
    expect(PermissionDeniedError, "forbidden", 403, lambda: reader.remember("errors", "x"))
    assert reader.session("err1").id == "err1"  # reading is allowed
    expect(SessionNotFoundError, "session_not_found", 404, lambda: writer.session("missing"))
    expect(MemoryNotFoundError, "memory_not_found", 404,
           lambda: writer.get_memory("errors", "0" * 32))
    expect(SessionExistsError, "session_exists", 409,
           lambda: writer.start_session("err1", project="errors"))
    writer.pause_session("err1")
    expect(SessionStateError, "session_state", 409,
           lambda: writer.add_message("err1", "user", "hello"))
    writer.forget("errors", memory.id)
    expect(MemoryRetiredError, "memory_retired", 409, lambda: writer.forget("errors", memory.id))
    expect(UnknownContextKeyError, "unknown_context_key", 400,
           lambda: writer.get_context_item("err1", "not_a_key"))
    # Errors of the service's HTTP layer arrive as their kg base class, with the server's code.
    invalid = expect(ValidationError, "invalid_request", 400,
                     lambda: writer.remember("errors", "x", confidence=2.0))
    assert invalid.details["errors"][0]["loc"] == ["confidence"]
    expect(ValidationError, "invalid_request", 400, lambda: writer.recall("errors", "x", limit=0))
    for client in (anonymous, reader, wrong):
        client.close()


def test_project_scoping_is_permission_denied(service_server: RunningServer,
                                              writer: MemoryClient) -> None:
    with MemoryClient(service_server.url, token="demo-writer") as demo:
        demo.start_session("scoped1", project="demo")
        assert demo.remember("demo", "demo fact").project == "demo"
        expect(PermissionDeniedError, "forbidden", 403,
               lambda: demo.start_session("scoped2", project="acme"))
        expect(PermissionDeniedError, "forbidden", 403, lambda: demo.remember("acme", "x"))
        writer.start_session("acme1", project="acme")
        expect(PermissionDeniedError, "forbidden", 403,
               lambda: demo.put_context_item("acme1", "framework", "x"))
        expect(PermissionDeniedError, "forbidden", 403, lambda: demo.close_session("acme1"))
    assert writer.session("acme1").status is SessionStatus.ACTIVE


def test_a_body_over_the_limit_is_payload_too_large(
    server_factory: Callable[..., RunningServer],
) -> None:
    server = server_factory(extra_env={**TOKEN_ENV, "KG_MAX_BODY_BYTES": "1024"})
    with MemoryClient(server.url, token="w-token") as client:
        client.start_session("big", project="limits")
        expect(PayloadTooLargeError, "request_entity_too_large", 413,
               lambda: client.put_context_item("big", "current_task", "x" * 2000))
        assert client.list_context("big")[0] == []


def test_a_store_that_is_down_is_store_unavailable(
    server_factory: Callable[..., RunningServer], tmp_path: Path,
) -> None:
    from tests.remote.conftest import start_oxigraph

    database = start_oxigraph(tmp_path / "oxigraph")
    try:
        url = database.url
        server = server_factory(extra_env={
            **TOKEN_ENV, "KG_BACKEND": "remote", "KG_REMOTE_DIALECT": "oxigraph",
            "KG_REMOTE_QUERY_URL": f"{url}/query", "KG_REMOTE_UPDATE_URL": f"{url}/update",
            "KG_REMOTE_GRAPH_STORE_URL": f"{url}/store", "KG_REMOTE_RETRIES": "0"})
        with MemoryClient(server.url, token="w-token") as client:
            memory = client.remember("down", "The store is remote")
            database.stop()
            expect(StoreUnavailableError, "store_unavailable", 503,
                   lambda: client.get_memory("down", memory.id))
            expect(StoreUnavailableError, "store_unavailable", 503,
                   lambda: client.remember("down", "written while the store is down"))
    finally:
        database.stop()


def test_a_query_past_its_limit_is_query_timeout(
    server_factory: Callable[..., RunningServer],
) -> None:
    # The memory API has no query of its own to time out: the SPARQL endpoint's 504 goes
    # through the same transport and error table. ~1 s of work against a 0.05 s limit.
    server = server_factory(extra_env={"KG_BACKEND": "embedded"})
    slow = ("SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?x { ?a ?b ?c } GRAPH ?y { ?d ?e ?f } "
            "FILTER(STRLEN(STR(?c)) < STRLEN(STR(?f))) }")
    transport = Transport(server.url)
    expect(QueryTimeoutError, "query_timeout", 504, lambda: transport.send(
        Call("GET", "/sparql", params={"query": slow, "timeout": "0.05"}, read=True)))
    transport.close()


def _codes(setup: str) -> set[str]:
    """The codes of the kg error classes loaded in a fresh interpreter after `setup`."""
    script = (f"{setup}\nimport json\nfrom kg.client.errors import kg_error_classes\n"
              "print(json.dumps(sorted({c.code for c in kg_error_classes()})))")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_a_fresh_client_process_knows_every_code_the_service_can_answer_with() -> None:
    """An answer finds its kg class whatever else the client's process happened to import."""
    service = _codes("from api import create_app\nfrom api.server import serve\n"
                     "from kg.settings import Settings\n"
                     "create_app(Settings(store=':memory:', embedder='none'))")
    client = _codes("import kg.client")
    assert len(service) > 30
    assert service - client == set()


def test_the_documented_example_runs(service_server: RunningServer) -> None:
    doc = (ROOT / "docs" / "agent-api.md").read_text(encoding="utf-8")
    section = doc.split("\n## Python client\n", 1)[1]
    example = section.split("```python\n", 1)[1].split("```", 1)[0]
    example = example.replace("http://127.0.0.1:7879", service_server.url).replace(
        '"s3cret"', '"w-token"')
    done = subprocess.run([sys.executable, "-c", example], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "Orders ship from Leeds" in done.stdout and "refund order 1042" in done.stdout
