"""Agent integration: token budgets, context assembly, response processing and session hooks."""

from __future__ import annotations

from kg.context.context_builder import (
    ContextBuilder,
    MemoryContext,
    MemorySource,
    TokenCounts,
    format_for_prompt,
)
from kg.context.response_processor import ResponseProcessor, extract_context
from kg.context.sanitizer import sanitize
from kg.context.session_hooks import SessionHooks, TurnContext, stage_episodes
from kg.context.token_budget import DEFAULT_BUDGET, Budget, allocate_budget

__all__ = [
    "DEFAULT_BUDGET",
    "Budget",
    "ContextBuilder",
    "MemoryContext",
    "MemorySource",
    "ResponseProcessor",
    "SessionHooks",
    "TokenCounts",
    "TurnContext",
    "allocate_budget",
    "extract_context",
    "format_for_prompt",
    "sanitize",
    "stage_episodes",
]
