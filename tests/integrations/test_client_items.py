"""The client's item and conversation methods return what MemoryService returns in-process."""

from __future__ import annotations

from kg.client import MemoryClient
from kg.memory_service import MemoryService
from tests.client.comparison import normal
from tests.integrations.conftest import fresh_project


def test_item_operations_match_the_service(memory: MemoryClient, local: MemoryService) -> None:
    project = fresh_project()
    for service in (memory, local):
        service.put_item(project, "memories.alice", "tea", {"content": "Likes green tea"},
                         agent="bot")
        service.put_item(project, "memories.alice", "tea", {"content": "Likes black tea", "n": 2},
                         memory_type="convention")
        service.put_item(project, "memories.bob", "k", {"b": 1, "a": [True]}, content="Bob's")
        service.remember(project, "Orders ship from Leeds")
    for call in [
        lambda s: s.list_memories(project),
        lambda s: s.list_memories(project, limit=1, offset=1),
        lambda s: s.list_memories(project, memory_type="convention"),
        lambda s: s.list_memories(project, namespace_prefix="memories"),
        lambda s: s.list_memories(project, namespace="memories.alice", key="tea"),
        lambda s: s.list_memories(project, namespace_prefix="", value_filter={"n": {"$gt": 1}}),
        lambda s: s.item_namespaces(project),
        lambda s: s.item_namespaces(project, prefix="memories.bob"),
    ]:
        assert normal(call(memory)) == normal(call(local))
    remote = memory.recall_items(project, "black tea", namespace_prefix="memories")
    here = local.recall_items(project, "black tea", namespace_prefix="memories")
    assert [(normal(h.memory), h.item) for h in remote] == [
        (normal(h.memory), h.item) for h in here]
    assert remote[0].item.key == "tea" and remote[0].score > 0


def test_conversation_items_match_the_service(memory: MemoryClient,
                                              local: MemoryService) -> None:
    project = fresh_project()
    item = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}
    for service in (memory, local):
        service.start_session("conv", project=project)
        service.add_message("conv", "user", "hello")
        assert service.add_message("conv", "assistant", "f({})", item=item).item == item
    assert normal(memory.list_messages("conv")) == normal(local.list_messages("conv"))
    assert normal(memory.pop_message("conv")) == normal(local.pop_message("conv"))
    memory.clear_messages("conv")
    local.clear_messages("conv")
    assert memory.list_messages("conv") == local.list_messages("conv") == ([], 0)
    assert memory.pop_message("conv") is None and local.pop_message("conv") is None
    memory.close_session("conv")
