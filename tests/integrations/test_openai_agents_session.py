"""JidoSession against a real `jido-kg serve`, compared with the Agents SDK's SQLiteSession.

The same random sequence of add_items / get_items(limit) / pop_item / clear_session runs on
both (items of every kind the SDK sends: messages with text or content parts, function calls
and their outputs, reasoning, anything JSON, in any script) and every answer must be equal.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from agents import Agent, Model, Runner, SQLiteSession, Usage, function_tool, set_tracing_disabled
from agents.items import (
    ModelResponse,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)
from agents.memory import Session, SessionSettings
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule, run_state_machine_as_test

from kg.client import AsyncMemoryClient, MemoryClient
from kg.integrations.openai_agents import JidoSession, item_role, item_text
from kg.shortterm import Role
from tests.conftest import RunningServer
from tests.integrations.conftest import NO_SHRINKING, TOKEN, fresh_project

TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=60)
JSON = st.recursive(st.none() | st.booleans() | st.integers(-10**6, 10**6) | TEXT
                    | st.floats(allow_nan=False, allow_infinity=False),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(TEXT, inner, max_size=3), max_leaves=8)
CALL_IDS = st.text("abcdef0123456789", min_size=4, max_size=8).map(lambda s: "call_" + s)
ITEMS = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system", "developer"]),
                           "content": TEXT}),
    st.fixed_dictionaries({"type": st.just("message"), "role": st.just("assistant"),
                           "content": st.lists(st.fixed_dictionaries(
                               {"type": st.just("output_text"), "text": TEXT,
                                "annotations": st.just([])}), max_size=2)},
                          optional={"id": CALL_IDS, "status": st.just("completed")}),
    st.fixed_dictionaries({"type": st.just("function_call"), "call_id": CALL_IDS,
                           "name": st.sampled_from(["get_weather", "lookup_order", "日本"]),
                           "arguments": JSON.map(json.dumps)}),
    st.fixed_dictionaries({"type": st.just("function_call_output"), "call_id": CALL_IDS,
                           "output": TEXT}),
    st.fixed_dictionaries({"type": st.just("reasoning"), "id": CALL_IDS,
                           "summary": st.lists(st.fixed_dictionaries(
                               {"type": st.just("summary_text"), "text": TEXT}), max_size=2)}),
    st.dictionaries(TEXT, JSON, max_size=4),  # any JSON object the SDK may hand over
)
LIMITS = st.one_of(st.none(), st.integers(-2, 8))


class SessionComparison(RuleBasedStateMachine):
    """The four Session calls on JidoSession (a fresh service session) and on SQLiteSession."""

    url: str

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.client = AsyncMemoryClient(self.url, token=TOKEN)
        session_id = "s" + uuid.uuid4().hex
        self.jido = JidoSession(session_id, self.client, project=fresh_project())
        self.reference = SQLiteSession(session_id)
        self.size = 0

    def both(self, method: str, *args: Any) -> tuple[Any, Any]:
        async def run() -> tuple[Any, Any]:
            mine = await getattr(self.jido, method)(*args)
            theirs = await getattr(self.reference, method)(*args)
            return mine, theirs
        return self.loop.run_until_complete(run())

    @rule(items=st.lists(ITEMS, max_size=4))
    def add_items(self, items: list[Any]) -> None:
        assert self.both("add_items", items) == (None, None)
        self.size += len(items)

    @rule(limit=LIMITS)
    def get_items(self, limit: int | None) -> None:
        mine, theirs = self.both("get_items", limit)
        assert mine == theirs

    @rule()
    def pop_item(self) -> None:
        mine, theirs = self.both("pop_item")
        assert mine == theirs
        self.size = max(0, self.size - 1)

    @precondition(lambda self: self.size > 0)
    @rule()
    def clear_session(self) -> None:
        assert self.both("clear_session") == (None, None)
        self.size = 0

    def teardown(self) -> None:
        mine, theirs = self.both("get_items")
        assert mine == theirs
        self.reference.close()
        self.loop.run_until_complete(self.client.aclose())
        self.loop.close()


def test_jido_session_behaves_like_sqlite_session(service_server: RunningServer) -> None:
    machine = type("Machine", (SessionComparison,), {"url": service_server.url})
    run_state_machine_as_test(machine, settings=settings(
        max_examples=20, stateful_step_count=40, deadline=None, phases=NO_SHRINKING,
        suppress_health_check=list(HealthCheck)))


def test_the_session_is_started_when_missing_and_again_after_a_close(
    service_server: RunningServer, memory: MemoryClient,
) -> None:
    project = fresh_project()

    async def scenario() -> None:
        session = JidoSession("chat-1" + uuid.uuid4().hex[:6], memory, project=project,
                              session_settings=SessionSettings(limit=2))
        assert isinstance(session, Session)  # the SDK's runtime-checkable protocol
        assert await session.get_items() == []
        await session.add_items([{"role": "user", "content": "Where do orders ship from?"},
                                 {"role": "assistant", "content": "From Leeds."},
                                 {"role": "user", "content": "Thanks"}])
        assert [i["content"] for i in await session.get_items()] == ["From Leeds.", "Thanks"]
        assert len(await session.get_items(limit=None)) == 2  # the settings' limit
        assert len(await session.get_items(limit=10)) == 3
        info = memory.session(session.session_id)
        assert info.project == project and info.messages == 3
        memory.close_session(session.session_id)
        await session.add_items([{"role": "user", "content": "Hello again"}])
        assert await session.get_items() == [{"role": "user", "content": "Hello again"}]
        # Messages added by other means come back as easy input messages.
        memory.add_message(session.session_id, "assistant", "Hi!")
        assert (await session.get_items())[-1] == {"role": "assistant", "content": "Hi!"}

    asyncio.run(scenario())


def test_items_give_the_conversation_their_text(service_server: RunningServer) -> None:
    call = {"type": "function_call", "call_id": "c1", "name": "get_weather",
            "arguments": '{"city": "Leeds"}'}
    output = {"type": "function_call_output", "call_id": "c1", "output": "12 °C, rain"}
    parts = {"type": "message", "role": "assistant",
             "content": [{"type": "output_text", "text": "It rains", "annotations": []}]}
    assert (item_role(call), item_text(call)) == (Role.ASSISTANT, 'get_weather({"city": "Leeds"})')
    assert (item_role(output), item_text(output)) == (Role.TOOL, "12 °C, rain")
    assert (item_role(parts), item_text(parts)) == (Role.ASSISTANT, "It rains")
    assert item_role({"role": "developer", "content": "Be brief"}) is Role.SYSTEM

    async def scenario() -> None:
        async with AsyncMemoryClient(service_server.url, token=TOKEN) as client:
            session = JidoSession("s" + uuid.uuid4().hex, client, project=fresh_project())
            await session.add_items([{"role": "user", "content": "Weather in Leeds?"}, call,
                                     output, parts])
            messages, _ = await client.list_messages(session.session_id)
            assert [(m.role.value, m.content) for m in messages] == [
                ("user", "Weather in Leeds?"), ("assistant", 'get_weather({"city": "Leeds"})'),
                ("tool", "12 °C, rain"), ("assistant", "It rains")]
            turn = await client.assemble_context(session.session_id)
            assert "12 °C, rain" in turn.system_prompt or any(
                "12 °C" in m.content for m in turn.context.conversation)

    asyncio.run(scenario())


class ScriptedModel(Model):
    """An Agents SDK model without a network: a tool call, then answers; it keeps its inputs."""

    def __init__(self) -> None:
        self.inputs: list[Any] = []

    async def get_response(self, system_instructions: str | None, input: Any, *args: Any,
                           **kwargs: Any) -> ModelResponse:
        self.inputs.append(input)
        turn = len(self.inputs)
        if turn == 1:
            out: list[Any] = [ResponseFunctionToolCall(
                type="function_call", call_id="call_1", name="get_weather", id="fc_1",
                arguments=json.dumps({"city": "Leeds"}), status="completed")]
        else:
            out = [ResponseOutputMessage(
                id=f"msg_{turn}", type="message", role="assistant", status="completed",
                content=[ResponseOutputText(type="output_text", text=f"answer {turn}",
                                            annotations=[])])]
        return ModelResponse(output=out, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def test_a_runner_continues_the_conversation_kept_in_the_service(
    service_server: RunningServer,
) -> None:
    set_tracing_disabled(True)  # no trace export (it would need an OpenAI key and the network)

    @function_tool
    def get_weather(city: str) -> str:
        """The weather of a city."""
        return f"12 °C in {city}"

    model = ScriptedModel()
    agent = Agent(name="support", instructions="Be brief.", model=model, tools=[get_weather])

    async def scenario() -> None:
        async with AsyncMemoryClient(service_server.url, token=TOKEN) as client:
            session = JidoSession("run" + uuid.uuid4().hex, client, project=fresh_project())
            first = await Runner.run(agent, "Weather in Leeds?", session=session)
            second = await Runner.run(agent, "And tomorrow?", session=session)
            assert (first.final_output, second.final_output) == ("answer 2", "answer 3")
            history = model.inputs[-1]  # what the model saw on the second run
            assert [i.get("type") or i.get("role") for i in history] == [
                "user", "function_call", "function_call_output", "message", "user"]
            assert history[2]["output"] == "12 °C in Leeds" and history[-1]["content"] == (
                "And tomorrow?")
            assert len(await session.get_items()) == 6

    try:
        asyncio.run(scenario())
    finally:
        set_tracing_disabled(False)
