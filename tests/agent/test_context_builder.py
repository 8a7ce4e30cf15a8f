"""ContextBuilder and format_for_prompt (seed 004 §5.1.3), on the real store. Mapping:

build assembles all components → test_build_assembles_all_components; respects total budget →
test_build_respects_total_budget; with query_hint retrieves more → test_query_hint_retrieves_more;
without hint filters high confidence → test_no_hint_filters_high_confidence; include_memories
false skips → test_include_memories_false; get_conversation truncates →
test_get_conversation_truncates; preserves most recent → test_get_conversation_keeps_recent;
get_working_context serialized map → test_get_working_context_map; get_relevant_memories filters
→ test_get_relevant_memories_filters; assemble_context token counts → test_assemble_counts_tokens;
format_for_prompt valid markdown → test_format_for_prompt_markdown; empty context →
test_format_for_prompt_empty; format_working_context → test_format_working_context;
format_memories badges → test_format_memories_badges; missing session →
test_missing_session_is_a_typed_error. Sanitising: test_sanitizer.py.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from kg.context import format_for_prompt
from kg.context.context_builder import (
    confidence_badge,
    format_memories,
    format_working_context,
)
from kg.memory import Memory
from kg.memory_service import MemoryService
from kg.shortterm import SessionNotFoundError
from kg.terms import MemoryType, SourceType


def seed(service: MemoryService, project: str = "p") -> None:
    for i, conf in enumerate([0.95, 0.9, 0.85, 0.8, 0.75, 0.72, 0.6, 0.5, 0.4, 0.3, 0.2, 0.65]):
        service.remember(project, f"deployment note {i}: the deploy pipeline uses stage {i}",
                         confidence=conf)


def test_build_assembles_all_components(service: MemoryService) -> None:
    s = service.start_session("s", project="p")
    seed(service)
    service.add_message(s.id, "user", "what does the deploy pipeline use?")
    service.put_context_item(s.id, "framework", "Flask", source="tool", confidence=1.0)  # type: ignore[arg-type]
    ctx = service.builder.build(s.id, query_hint="deploy pipeline")
    assert [m.content for m in ctx.conversation] == ["what does the deploy pipeline use?"]
    assert ctx.working_context == {"framework": "Flask"}
    assert ctx.long_term_memories and all("deploy" in m.content for m in ctx.long_term_memories)
    assert ctx.project == "p" and ctx.session_id == "s"


def test_build_respects_total_budget(service: MemoryService) -> None:
    s = service.start_session("s", project="p")
    seed(service)
    for i in range(200):
        service.add_message(s.id, "assistant", f"reply {i} " + "lorem ipsum " * 20)
    ctx = service.builder.build(s.id, token_budget=2_000, query_hint="deploy")
    assert ctx.token_counts.total <= 2_000
    assert ctx.conversation[-1].content.startswith("reply 199")


def test_query_hint_retrieves_more(service: MemoryService) -> None:
    s = service.start_session("s", project="p")
    seed(service)
    with_hint = service.builder.build(s.id, query_hint="deployment pipeline stage")
    without = service.builder.build(s.id)
    assert len(with_hint.long_term_memories) == 10
    assert len(without.long_term_memories) == 5


def test_no_hint_filters_high_confidence(service: MemoryService) -> None:
    s = service.start_session("s", project="p")
    seed(service)
    ctx = service.builder.build(s.id)
    assert [m.confidence for m in ctx.long_term_memories] == [0.95, 0.9, 0.85, 0.8, 0.75]
    assert all(m.confidence >= 0.7 for m in ctx.long_term_memories)


def test_include_memories_false(service: MemoryService) -> None:
    s = service.start_session("s", project="p")
    seed(service)
    ctx = service.builder.build(s.id, query_hint="deploy", include_memories=False)
    assert ctx.long_term_memories == [] and ctx.token_counts.long_term == 0


def test_get_conversation_truncates(service: MemoryService) -> None:
    s = service.start_session("s", project="p")
    for i in range(50):
        service.add_message(s.id, "user", f"m{i:02d} " + "x" * 36)  # 10 + 4 tokens
    kept = service.builder.get_conversation(service.list_messages(s.id)[0], 140)
    assert len(kept) == 10


def test_get_conversation_keeps_recent(service: MemoryService) -> None:
    s = service.start_session("s", project="p")
    for i in range(50):
        service.add_message(s.id, "user", f"m{i:02d}")
    kept = service.builder.get_conversation(service.list_messages(s.id)[0], 20)  # 4 each
    assert [m.content for m in kept] == ["m45", "m46", "m47", "m48", "m49"]


def test_get_working_context_map(service: MemoryService) -> None:
    s = service.start_session("s", project="p")
    service.put_context_item(s.id, "active_file", "app.py", source="explicit", confidence=1.0)  # type: ignore[arg-type]
    service.put_context_item(s.id, "active_errors", ["E1", "E2"], source="tool", confidence=0.9)  # type: ignore[arg-type]
    assert service.builder.get_working_context(s.id) == {
        "active_file": "app.py", "active_errors": ["E1", "E2"]}


def test_get_relevant_memories_filters(service: MemoryService) -> None:
    seed(service)
    seed(service, "other")
    hinted = service.builder.get_relevant_memories("p", "deploy pipeline")
    plain = service.builder.get_relevant_memories("p", None)
    assert len(hinted) == 10 and {m.project for m in hinted} == {"p"}
    assert len(plain) == 5 and min(m.confidence for m in plain) >= 0.7
    assert service.builder.get_relevant_memories("nobody", "deploy") == []


def test_assemble_counts_tokens(service: MemoryService) -> None:
    s = service.start_session("s", project="p")
    seed(service)
    service.add_message(s.id, "user", "a" * 40)
    service.put_context_item(s.id, "framework", "Flask", source="tool", confidence=1.0)  # type: ignore[arg-type]
    ctx = service.builder.build(s.id, query_hint="deploy", system_context="s" * 80)
    c = ctx.token_counts
    assert c.conversation == 10 + 4
    assert c.working == 1 + 10
    assert c.long_term == sum(len(m.content) // 4 + 10 for m in ctx.long_term_memories)
    assert c.system == 20
    assert c.total == c.system + c.conversation + c.working + c.long_term


def test_format_for_prompt_markdown(service: MemoryService) -> None:
    s = service.start_session("s", project="p")
    seed(service)
    service.put_context_item(s.id, "current_task", "fix deploys", source="explicit", confidence=1.0)  # type: ignore[arg-type]
    text = format_for_prompt(service.builder.build(s.id))
    sections = re.findall(r"^## .+$", text, flags=re.M)
    assert sections == ["## Session Context", "## Remembered Information"]
    assert "- **Current task**: fix deploys" in text
    line = re.compile(r"^- \[fact\] \((high|medium|low) confidence\) .+ _\(\d{4}-\d\d-\d\d\)_$")
    memory_lines = text.split("## Remembered Information\n")[1].splitlines()
    assert len(memory_lines) == 5 and all(line.match(x) for x in memory_lines)


def test_format_for_prompt_empty(service: MemoryService) -> None:
    s = service.start_session("s", project="p")
    assert format_for_prompt(service.builder.build(s.id)) == ""


def test_format_working_context() -> None:
    text = format_working_context({"active_file": "lib/a.ex", "discovered_patterns": ["x", "y"],
                                   "file_relationships": {"a": "b"}})
    assert text.splitlines() == ["- **Active file**: lib/a.ex",
                                 "- **Discovered patterns**: x, y",
                                 '- **File relationships**: {"a": "b"}']


def test_format_memories_badges() -> None:
    when = datetime(2024, 5, 6, 7, 8, tzinfo=UTC)

    def mem(t: MemoryType, c: float) -> Memory:
        return Memory(id="x", project="p", session="s", type=t, content="content", confidence=c,
                      source_type=SourceType.AGENT, timestamp=when, recorded_at=when)

    lines = format_memories([mem(MemoryType.FACT, 0.8), mem(MemoryType.RISK, 0.5),
                             mem(MemoryType.LESSON_LEARNED, 0.49)]).splitlines()
    assert lines == ["- [fact] (high confidence) content _(2024-05-06)_",
                     "- [risk] (medium confidence) content _(2024-05-06)_",
                     "- [lesson_learned] (low confidence) content _(2024-05-06)_"]
    assert confidence_badge(1.0) == "(high confidence)"


def test_missing_session_is_a_typed_error(service: MemoryService) -> None:
    with pytest.raises(SessionNotFoundError):
        service.builder.build("nope")
    # The agent-facing hook degrades to the base prompt instead (see test_agent.py).
    assert service.hooks.before_turn("nope", "hi", base_prompt="base").system_prompt == "base"
