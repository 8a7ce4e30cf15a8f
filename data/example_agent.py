"""A runnable agent loop with jido-kg memory and a scripted model (no LLM needed).

Session 1: the user states a fact; working context is inferred from the model's reply and the
model stages a decision; closing the session promotes both into long-term memory on disk.
Session 2 (a new process-worth of state: the service is reopened on the same store): the user
asks a question and the system prompt printed below already holds what session 1 learned.

    .venv/bin/python data/example_agent.py [STORE_DIR]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from kg.context.agent import MemoryAgent, Reply, ToolCall
from kg.memory_service import MemoryService
from kg.settings import Settings

PROJECT = "shop"


class ScriptedModel:
    """Stands in for an LLM: replays canned replies and shows what it was given."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.prompts: list[str] = []

    def __call__(self, prompt: str, messages: list[dict[str, str]],
                 tools: list[dict[str, Any]]) -> Reply:
        self.prompts.append(prompt)
        return self.replies.pop(0) if self.replies else Reply("(no more script)")


def session_one(store: str) -> None:
    service = MemoryService.open(Settings(store=store))
    try:
        session = service.start_session(project=PROJECT, agent="example-agent")
        model = ScriptedModel(
            Reply(tool_calls=[ToolCall("remember", {
                "content": "Orders are stored in PostgreSQL 16; the orders table is partitioned "
                           "by month", "type": "architectural_decision", "confidence": 0.95,
                "rationale": "stated by the user in session 1"})]),
            Reply("Got it. This is a Python project built with Django; I'm editing "
                  "`orders/models.py` and implementing monthly partitions."),
        )
        agent = MemoryAgent(model, service, session_id=session.id,
                            base_prompt="You are the shop's coding assistant.")
        print("session 1 — user: our orders live in PostgreSQL 16, partitioned by month")
        print("session 1 — agent:", agent.chat(
            "our orders live in PostgreSQL 16, partitioned by month"))
        print("session 1 — working context inferred:",
              service.builder.get_working_context(session.id))
        # The agent also stages a decision for promotion instead of writing it at once.
        service.add_pending(session.id, "Schema migrations on orders run only at night",
                            memory_type="process_convention", confidence=0.9,  # type: ignore[arg-type]
                            source_type="agent", rationale="agreed with the user",  # type: ignore[arg-type]
                            importance_score=None)
        _, report = service.close_session(session.id)
        print(f"session 1 closed — promotion wrote {len(report.promoted)} memories:")
        for memory_id in report.promoted:
            print("   ", service.get_memory(PROJECT, memory_id).content)
        print()
    finally:
        service.close()


def session_two(store: str) -> None:
    service = MemoryService.open(Settings(store=store))
    try:
        session = service.start_session(project=PROJECT, agent="example-agent")
        model = ScriptedModel(Reply("PostgreSQL 16, partitioned by month; migrate at night."))
        agent = MemoryAgent(model, service, session_id=session.id,
                            base_prompt="You are the shop's coding assistant.")
        answer = agent.chat("Which database holds the orders, and when may we migrate it?")
        print("session 2 — system prompt given to the model:")
        print("-" * 72)
        print(model.prompts[0])
        print("-" * 72)
        print("session 2 — agent:", answer)
        service.close_session(session.id)
    finally:
        service.close()


def main() -> None:
    """Run both sessions against STORE_DIR (default: a fresh temporary directory)."""
    with tempfile.TemporaryDirectory(prefix="jido-kg-example-") as tmp:
        store = sys.argv[1] if len(sys.argv) > 1 else str(Path(tmp) / "store")
        session_one(store)
        session_two(store)


if __name__ == "__main__":
    main()
