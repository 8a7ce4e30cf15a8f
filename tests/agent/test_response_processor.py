"""ResponseProcessor (seed 004 §5.3.3). Mapping:

active_file from "working on file.ex" → test_active_file_working_on; from "editing `config.exs`"
→ test_active_file_editing_backticks; framework "using Phoenix 1.7" → test_framework;
current_task "implementing user auth" → test_current_task; primary_language "this is an Elixir
project" → test_primary_language; no patterns → test_no_patterns; multiple items →
test_multiple_items; process_response updates working context → test_process_updates_context;
inferred source → test_process_assigns_inferred; confidence 0.6 → test_process_confidence;
empty response → test_empty_response; malformed input gracefully → test_malformed_input.
"""

from __future__ import annotations

import pytest

from kg.context import extract_context
from kg.memory_service import MemoryService
from kg.terms import ContextSource


def test_active_file_working_on() -> None:
    assert extract_context("I'm working on file.ex now")["active_file"] == "file.ex"


def test_active_file_editing_backticks() -> None:
    assert extract_context("Now editing `config.exs` for you")["active_file"] == "config.exs"


def test_framework() -> None:
    assert extract_context("The app is using Phoenix 1.7 heavily")["framework"] == "Phoenix 1.7"


def test_current_task() -> None:
    assert extract_context("I am implementing user auth. Next...")["current_task"] == "user auth"


def test_primary_language() -> None:
    assert extract_context("this is an Elixir project")["primary_language"] == "Elixir"


def test_no_patterns() -> None:
    assert extract_context("Sure, here you go!") == {}


def test_multiple_items() -> None:
    found = extract_context(
        "This is a Python codebase built with Flask 3.0. I'm editing app.py and "
        "refactoring the login view.\nDone."
    )
    assert found == {"primary_language": "Python", "framework": "Flask 3.0",
                     "active_file": "app.py", "current_task": "the login view"}


def test_process_updates_context(service: MemoryService) -> None:
    s = service.start_session("s", project="p")
    found = service.processor.process_response("Looking at `lib/a.ex` now.", s.id)
    assert found == {"active_file": "lib/a.ex"}
    assert service.builder.get_working_context(s.id) == {"active_file": "lib/a.ex"}


def test_process_assigns_inferred(service: MemoryService) -> None:
    s = service.start_session("s", project="p")
    service.processor.process_response("this is a Rust project", s.id)
    item = service.get_context_item(s.id, "primary_language")  # type: ignore[arg-type]
    assert item.source is ContextSource.INFERRED


def test_process_confidence(service: MemoryService) -> None:
    s = service.start_session("s", project="p")
    service.processor.process_response("fixing the flaky test.", s.id)
    assert service.get_context_item(s.id, "current_task").confidence == 0.6  # type: ignore[arg-type]


def test_inferred_never_overwrites_explicit(service: MemoryService) -> None:
    s = service.start_session("s", project="p")
    service.put_context_item(s.id, "framework", "Django", source="explicit", confidence=1.0)  # type: ignore[arg-type]
    service.processor.process_response("built with Flask", s.id)
    assert service.builder.get_working_context(s.id)["framework"] == "Django"


def test_empty_response(service: MemoryService) -> None:
    s = service.start_session("s", project="p")
    assert service.processor.process_response("", s.id) == {}
    assert service.builder.get_working_context(s.id) == {}


@pytest.mark.parametrize("text", [None, 42, b"working on x.py", "(((((" * 5000,
                                  "working on \x00\ud800.py", "file: `" * 10_000, "é" * 300_000])
def test_malformed_input(service: MemoryService, text: object) -> None:
    s = service.start_session("s", project="p")
    found = service.processor.process_response(text, s.id)
    assert isinstance(found, dict) and all(len(v) <= 200 for v in found.values())


def test_async_processing_does_not_block(service: MemoryService) -> None:
    s = service.start_session("s", project="p")
    future = service.processor.process_response_async("editing main.go", s.id)
    assert future.result(timeout=5) == {"active_file": "main.go"}
    service.close_session(s.id)
    late = service.processor.process_response_async("editing other.go", s.id)
    assert late.result(timeout=5) == {}  # the session closed: logged, never raised
