"""WorkingContext (seed 000 §1.2.2).

Mapping of seed 000 §1.2.2:
- 'new/0 creates empty context with default max_tokens (12_000)' → test_new_defaults
- 'new/1 accepts custom max_tokens value' → test_new_custom_max_tokens
- 'put/4 creates new context item with all required fields' → test_put_creates_item_with_all_fields
- 'put/4 sets first_seen and last_accessed to current time' → test_put_sets_times_for_new_item
- 'put/4 updates existing item, incrementing access_count' → test_put_update_increments_access_count
- 'put/4 updates last_accessed but preserves first_seen' → test_put_update_preserves_first_seen
- 'put/4 accepts source option' → test_put_accepts_source
- 'put/4 accepts confidence option (0.0 to 1.0)' → test_put_accepts_confidence
- 'put/4 accepts memory_type option overriding inference' → test_put_memory_type_overrides
- 'get/2 returns {context, value} for existing key' → test_get_returns_value
- 'get/2 increments access_count on retrieval' → test_get_increments_access_count
- 'get/2 updates last_accessed on retrieval' → test_get_updates_last_accessed
- 'get/2 returns {context, nil} for missing keys' → test_get_missing_returns_none
- 'delete/2 removes item' → test_delete_removes_item
- 'delete/2 handles non-existent keys gracefully' → test_delete_missing_is_harmless
- 'to_list/1 returns all items as list' → test_to_list
- 'to_map/1 returns key-value pairs without metadata' → test_to_map
- 'size/1 returns correct count' → test_size
- 'clear/1 resets to empty context' → test_clear
- 'infer_memory_type :fact for :framework from :tool' → test_infer_fact_for_tool_facts
- 'infer_memory_type :assumption for :user_intent from :inferred' → test_infer_assumption
- 'infer_memory_type :discovery for :discovered_patterns' → test_infer_discovery
- 'infer_memory_type nil for ephemeral keys like :active_errors' → test_infer_none_for_ephemeral
Plus: the token budget (max_tokens enforced, state unchanged) and snapshot/restore.
"""

from __future__ import annotations

import json

import pytest

from kg.shortterm import ContextBudgetExceededError, InvalidContextValueError, WorkingContext
from kg.shortterm.working_context import infer_memory_type
from kg.terms import ContextKey, ContextSource, MemoryType, UnknownContextKeyError


class Clock:
    def __init__(self, start: float = 1000.0) -> None:
        self.t = start

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def ctx(clock: Clock) -> WorkingContext:
    return WorkingContext(now=clock)


def test_new_defaults() -> None:
    ctx = WorkingContext()
    assert (ctx.max_tokens, ctx.size(), ctx.current_tokens) == (12_000, 0, 0)


def test_new_custom_max_tokens() -> None:
    assert WorkingContext(500).max_tokens == 500


def test_put_creates_item_with_all_fields(ctx: WorkingContext) -> None:
    ctx.put(ContextKey.FRAMEWORK, "Flask", source="tool", confidence=0.9)
    item = ctx.item("framework")
    assert item is not None
    assert (item.key, item.value, item.source, item.confidence) == (
        ContextKey.FRAMEWORK,
        "Flask",
        ContextSource.TOOL,
        0.9,
    )
    assert item.access_count == 1 and item.suggested_type is MemoryType.FACT
    assert item.tokens == 1 + 10  # len("Flask") // 4 + memory overhead


def test_put_sets_times_for_new_item(ctx: WorkingContext, clock: Clock) -> None:
    ctx.put("active_file", "app.py")
    item = ctx.item("active_file")
    assert item is not None and item.first_seen == item.last_accessed == clock.t


def test_put_update_increments_access_count(ctx: WorkingContext) -> None:
    ctx.put("active_file", "a.py")
    ctx.put("active_file", "b.py")
    item = ctx.item("active_file")
    assert item is not None and (item.value, item.access_count) == ("b.py", 2)


def test_put_update_preserves_first_seen(ctx: WorkingContext, clock: Clock) -> None:
    ctx.put("active_file", "a.py")
    clock.t += 60
    ctx.put("active_file", "b.py")
    item = ctx.item("active_file")
    assert item is not None and (item.first_seen, item.last_accessed) == (clock.t - 60, clock.t)


@pytest.mark.parametrize("source", ["inferred", "explicit", "tool"])
def test_put_accepts_source(ctx: WorkingContext, source: str) -> None:
    ctx.put("current_task", "refactor", source=source)
    item = ctx.item("current_task")
    assert item is not None and item.source is ContextSource(source)


@pytest.mark.parametrize("confidence", [0.0, 0.5, 1.0, 1])
def test_put_accepts_confidence(ctx: WorkingContext, confidence: float) -> None:
    ctx.put("current_task", "x", confidence=confidence)
    item = ctx.item("current_task")
    assert item is not None and item.confidence == confidence


def test_put_memory_type_overrides(ctx: WorkingContext) -> None:
    ctx.put("framework", "Flask", source="tool", memory_type="decision")
    item = ctx.item("framework")
    assert item is not None and item.suggested_type is MemoryType.DECISION


def test_get_returns_value(ctx: WorkingContext) -> None:
    ctx.put("framework", "Flask")
    assert ctx.get("framework") == "Flask"
    assert ctx.get(ContextKey.FRAMEWORK) == "Flask"


def test_get_increments_access_count(ctx: WorkingContext) -> None:
    ctx.put("framework", "Flask")
    ctx.get("framework")
    ctx.get("framework")
    item = ctx.item("framework")
    assert item is not None and item.access_count == 3


def test_get_updates_last_accessed(ctx: WorkingContext, clock: Clock) -> None:
    ctx.put("framework", "Flask")
    clock.t += 5
    ctx.get("framework")
    item = ctx.item("framework")
    assert item is not None and item.last_accessed == clock.t and item.first_seen == clock.t - 5


def test_get_missing_returns_none(ctx: WorkingContext) -> None:
    assert ctx.get("framework") is None
    with pytest.raises(UnknownContextKeyError, match="'frameworks'"):
        ctx.get("frameworks")


def test_delete_removes_item(ctx: WorkingContext) -> None:
    ctx.put("framework", "Flask")
    assert ctx.delete("framework") is True
    assert ctx.get("framework") is None and ctx.current_tokens == 0


def test_delete_missing_is_harmless(ctx: WorkingContext) -> None:
    assert ctx.delete("framework") is False


def test_to_list(ctx: WorkingContext) -> None:
    ctx.put("framework", "Flask")
    ctx.put("active_file", "app.py")
    items = ctx.to_list()
    assert [i.key for i in items] == [ContextKey.FRAMEWORK, ContextKey.ACTIVE_FILE]
    items[0].value = "mutated"  # copies: the context is unaffected
    assert ctx.get("framework") == "Flask"


def test_to_map(ctx: WorkingContext) -> None:
    ctx.put("framework", "Flask")
    ctx.put("discovered_patterns", ["repository pattern"])
    assert ctx.to_map() == {"framework": "Flask", "discovered_patterns": ["repository pattern"]}


def test_size(ctx: WorkingContext) -> None:
    for key in ("framework", "active_file", "framework"):
        ctx.put(key, "v")
    assert ctx.size() == 2


def test_clear(ctx: WorkingContext) -> None:
    ctx.put("framework", "Flask")
    ctx.clear()
    assert (ctx.size(), ctx.current_tokens, ctx.to_list()) == (0, 0, [])


def test_infer_fact_for_tool_facts() -> None:
    for key in (ContextKey.FRAMEWORK, ContextKey.PRIMARY_LANGUAGE, ContextKey.PROJECT_ROOT):
        assert infer_memory_type(key, ContextSource.TOOL) is MemoryType.FACT
        assert infer_memory_type(key, ContextSource.INFERRED) is None


def test_infer_assumption() -> None:
    assert (
        infer_memory_type(ContextKey.USER_INTENT, ContextSource.INFERRED) is MemoryType.ASSUMPTION
    )
    assert infer_memory_type(ContextKey.USER_INTENT, ContextSource.EXPLICIT) is None


def test_infer_discovery() -> None:
    for source in ContextSource:
        assert infer_memory_type(ContextKey.DISCOVERED_PATTERNS, source) is MemoryType.DISCOVERY
    assert infer_memory_type(ContextKey.PENDING_QUESTIONS, ContextSource.TOOL) is MemoryType.UNKNOWN


def test_infer_none_for_ephemeral() -> None:
    for source in ContextSource:
        assert infer_memory_type(ContextKey.ACTIVE_ERRORS, source) is None
        assert infer_memory_type(ContextKey.ACTIVE_FILE, source) is None


def test_budget_is_enforced_and_state_unchanged(clock: Clock) -> None:
    ctx = WorkingContext(100, now=clock)
    ctx.put("current_task", "a" * 200)  # 50 + 10 = 60 tokens
    before = ctx.snapshot()
    with pytest.raises(ContextBudgetExceededError, match=r"'active_file'.*max_tokens=100"):
        ctx.put("active_file", "b" * 200)  # would be 120
    assert ctx.snapshot() == before and ctx.current_tokens == 60
    ctx.put("current_task", "a" * 320)  # replacing an item counts only its new size: 90
    assert ctx.current_tokens == 90


def test_values_are_copied_and_must_be_json(ctx: WorkingContext) -> None:
    value = {"files": ["a.py"]}
    ctx.put("file_relationships", value)
    value["files"].append("b.py")
    assert ctx.get("file_relationships") == {"files": ["a.py"]}
    with pytest.raises(InvalidContextValueError, match="object"):
        ctx.put("framework", object())
    with pytest.raises(InvalidContextValueError):
        ctx.put("framework", float("nan"))


def test_snapshot_restore_roundtrip(ctx: WorkingContext, clock: Clock) -> None:
    ctx.put("framework", "Flask", source="tool", confidence=0.7)
    ctx.put("discovered_patterns", ["x", {"y": 1}])
    data = json.loads(json.dumps(ctx.snapshot()))
    other = WorkingContext(now=clock)
    other.restore(data)
    assert other.snapshot() == ctx.snapshot() and other.current_tokens == ctx.current_tokens
