"""Adapters that put the memory service under agent frameworks' own interfaces.

Each module needs its framework, installed with an extra of its own, and is imported by name
(nothing here imports a framework):

- `kg.integrations.langgraph.JidoStore` — a LangGraph `BaseStore` (`pip install
  'jido-kg[langgraph]'`), so LangMem's memory tools keep their memories in the service.
- `kg.integrations.openai_agents.JidoSession` — an OpenAI Agents SDK `Session` (`pip install
  'jido-kg[agents]'`), so a conversation lives in a service session.
"""

from __future__ import annotations

__all__: list[str] = []
