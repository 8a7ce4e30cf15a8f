"""jido-kg: knowledge-graph memory for LLM agents (the library; it never imports Flask)."""

from __future__ import annotations

from kg.errors import KgError
from kg.settings import Settings

__all__ = ["KgError", "Settings", "__version__"]

__version__ = "0.1.0"
