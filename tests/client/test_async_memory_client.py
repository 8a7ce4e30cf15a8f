"""AsyncMemoryClient against a real `jido-kg serve`: the same records, errors and retry rule as
MemoryClient (they send the same operations), under asyncio.
"""

from __future__ import annotations

import asyncio

import pytest

from kg.client import AsyncMemoryClient, MemoryClient, ServiceUnreachableError
from kg.errors import PermissionDeniedError
from kg.memory_service import MemoryService
from kg.shortterm import SessionNotFoundError
from kg.terms import MemoryType, SessionStatus
from tests.client.comparison import normal
from tests.client.proxy import FlakyProxy
from tests.conftest import RunningServer


def test_a_session_round_trips_as_with_the_blocking_client(
    service_server: RunningServer, writer: MemoryClient, local: MemoryService
) -> None:
    async def scenario() -> None:
        async with AsyncMemoryClient(service_server.url, token="w-token") as memory:
            started = await memory.start_session("async1", project="asyncproj")
            assert normal(started) == normal(writer.session("async1"))
            local.start_session("async1", project="asyncproj")
            item = await memory.put_context_item("async1", "framework", "Flask", source="tool")
            assert normal(item) == normal(local.put_context_item(
                "async1", "framework", "Flask", source="tool", confidence=1.0))
            await memory.add_message("async1", "user", "Which framework?")
            messages, tokens = await memory.list_messages("async1")
            assert normal(messages) == normal(writer.list_messages("async1")[0]) and tokens > 0
            remembered = await memory.remember("asyncproj", "The API is written with Flask",
                                               memory_type=MemoryType.CODING_STANDARD)
            assert normal(remembered) == normal(local.remember(
                "asyncproj", "The API is written with Flask",
                memory_type=MemoryType.CODING_STANDARD))
            hits = await memory.recall("asyncproj", "flask")
            assert [h.memory.id for h in hits] == [remembered.id]
            turn = await memory.assemble_context("async1", query_hint="flask")
            assert "The API is written with Flask" in turn.system_prompt
            assert (await memory.session_project("async1")) == "asyncproj"
            closed, report = await memory.close_session("async1")
            assert closed.status is SessionStatus.CLOSED and report.details["trigger"]
            with pytest.raises(SessionNotFoundError):
                await memory.session("async1")
        async with AsyncMemoryClient(service_server.url, token="demo-writer") as demo:
            with pytest.raises(PermissionDeniedError):
                await demo.remember("asyncproj", "not my project")

    asyncio.run(scenario())


def test_reads_retry_and_writes_do_not(service_server: RunningServer,
                                       writer: MemoryClient) -> None:
    writer.start_session("async2", project="asyncproj")

    async def scenario() -> None:
        with FlakyProxy(service_server.port, drop=2) as proxy:
            async with AsyncMemoryClient(proxy.url, token="w-token", backoff=0.01) as memory:
                assert (await memory.list_context("async2"))[0] == []
                assert proxy.targets() == ["GET /v1/sessions/async2/context"] * 3
        with FlakyProxy(service_server.port, drop=1) as proxy:
            async with AsyncMemoryClient(proxy.url, token="w-token", backoff=0.01) as memory:
                with pytest.raises(ServiceUnreachableError) as raised:
                    await memory.add_message("async2", "user", "sent once")
                assert proxy.targets() == ["POST /v1/sessions/async2/messages"]
        assert proxy.url in raised.value.message

    asyncio.run(scenario())
    assert writer.list_messages("async2") == ([], 0)
