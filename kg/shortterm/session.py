"""A short-term session: one agent's working memory structures, isolated from every other.

A Session owns its WorkingContext, PendingMemories, AccessLog, ConversationBuffer and
WorkingMemory, and an RLock that SessionManager holds around every operation on it (re-entrant,
so an on_pause/on_close hook may call back into the manager for the same session).
snapshot()/restore() move the whole short-term state between processes as JSON-able data.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

from kg.errors import ValidationError
from kg.shortterm.access_log import DEFAULT_MAX_ENTRIES, AccessLog
from kg.shortterm.activation import DECAY, NOISE_SIGMA, RETRIEVAL_THRESHOLD
from kg.shortterm.conversation_buffer import DEFAULT_MAX_MESSAGES, ConversationBuffer
from kg.shortterm.conversation_buffer import DEFAULT_MAX_TOKENS as BUFFER_MAX_TOKENS
from kg.shortterm.errors import InvalidSnapshotError
from kg.shortterm.pending_memories import (
    DEFAULT_MAX_AGENT_DECISIONS,
    DEFAULT_MAX_ITEMS,
    PendingMemories,
)
from kg.shortterm.working_context import DEFAULT_MAX_TOKENS as CONTEXT_MAX_TOKENS
from kg.shortterm.working_context import WorkingContext
from kg.shortterm.working_memory import WorkingMemory
from kg.terms import SessionStatus, parse_term, validate_identifier, validate_session_id

__all__ = ["SNAPSHOT_VERSION", "Session", "SessionConfig"]

SNAPSHOT_VERSION = 1


@dataclass(frozen=True, slots=True)
class SessionConfig:
    """Limits and activation parameters of every session a manager starts (the originals')."""

    context_max_tokens: int = CONTEXT_MAX_TOKENS
    max_pending: int = DEFAULT_MAX_ITEMS
    max_agent_decisions: int = DEFAULT_MAX_AGENT_DECISIONS
    max_log_entries: int = DEFAULT_MAX_ENTRIES
    max_messages: int = DEFAULT_MAX_MESSAGES
    buffer_max_tokens: int = BUFFER_MAX_TOKENS
    decay: float = DECAY
    noise_sigma: float = NOISE_SIGMA
    retrieval_threshold: float = RETRIEVAL_THRESHOLD


class Session:
    """One session's identity, status and short-term memory structures."""

    __slots__ = (
        "access_log",
        "agent",
        "config",
        "conversation",
        "created_at",
        "id",
        "lock",
        "pending_memories",
        "project",
        "status",
        "working_context",
        "working_memory",
    )

    def __init__(
        self,
        session_id: str,
        *,
        project: str | None = None,
        agent: str | None = None,
        config: SessionConfig | None = None,
        now: Callable[[], float] = time.time,
        rng: np.random.Generator | None = None,
    ) -> None:
        self.id = validate_session_id(session_id)
        self.project = None if project is None else validate_identifier(project, name="project")
        self.agent = None if agent is None else validate_identifier(agent, name="agent")
        self.config = cfg = config if config is not None else SessionConfig()
        self.status = SessionStatus.ACTIVE
        self.created_at = now()
        self.lock = threading.RLock()
        self.working_context = WorkingContext(cfg.context_max_tokens, now=now)
        self.pending_memories = PendingMemories(
            cfg.max_pending, max_agent_decisions=cfg.max_agent_decisions, now=now
        )
        self.access_log = AccessLog(cfg.max_log_entries, now=now)
        self.conversation = ConversationBuffer(
            cfg.buffer_max_tokens, max_messages=cfg.max_messages, now=now
        )
        self.working_memory = WorkingMemory(
            decay=cfg.decay,
            noise_sigma=cfg.noise_sigma,
            retrieval_threshold=cfg.retrieval_threshold,
            now=now,
            rng=rng,
        )

    def snapshot(self) -> dict[str, Any]:
        """The whole short-term state as JSON-able data (take it under `lock`)."""
        return {
            "version": SNAPSHOT_VERSION,
            "id": self.id,
            "project": self.project,
            "agent": self.agent,
            "status": self.status.value,
            "created_at": self.created_at,
            "config": asdict(self.config),
            "working_context": self.working_context.snapshot(),
            "pending_memories": self.pending_memories.snapshot(),
            "access_log": self.access_log.snapshot(),
            "conversation": self.conversation.snapshot(),
            "working_memory": self.working_memory.snapshot(),
        }

    @classmethod
    def restore(
        cls,
        data: Mapping[str, Any],
        *,
        now: Callable[[], float] = time.time,
        rng: np.random.Generator | None = None,
    ) -> Session:
        """Build a session from snapshot() data, validating every part."""
        try:
            if data["version"] != SNAPSHOT_VERSION:
                raise ValueError(f"unsupported snapshot version {data['version']!r}")
            raw_config = data["config"]
            known = {f.name for f in fields(SessionConfig)}
            if not isinstance(raw_config, Mapping) or set(raw_config) - known:
                raise ValueError(f"bad config {raw_config!r}")
            session = cls(
                data["id"],
                project=data["project"],
                agent=data["agent"],
                config=SessionConfig(**raw_config),
                now=now,
                rng=rng,
            )
            session.status = parse_term(SessionStatus, data["status"])
            session.created_at = float(data["created_at"])
            session.working_context.restore(data["working_context"])
            session.pending_memories.restore(data["pending_memories"])
            session.access_log.restore(data["access_log"])
            session.conversation.restore(data["conversation"])
            session.working_memory.restore(data["working_memory"])
        except InvalidSnapshotError:
            raise
        except (KeyError, TypeError, ValueError, ValidationError) as e:
            raise InvalidSnapshotError(f"invalid session snapshot: {e}") from e
        return session
