"""Session hooks (seed 002, the Python way): what an agent loop calls around each turn.

- before_turn: the episodic capture of the user's message, then context injection — the
  short-term tier (working context, conversation, episodes of this session recalled by
  activation) and the long-term tier (memories relevant to the message) — into a system prompt.
- capture_message / capture_tool_result: episodic capture into the conversation buffer and
  the session's working memory (the L1 store of seed 002).
- after_response: capture the reply and infer working context from it (ResponseProcessor).
- end_session: close the session; the SessionManager's on_close hook (installed by
  MemoryService) stages activated episodes with stage_episodes() and runs promotion.

Failures of memory never break the agent: before_turn falls back to the base prompt.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from kg.context.context_builder import ContextBuilder, MemoryContext, format_for_prompt
from kg.context.embedding import hashing_embedding
from kg.context.response_processor import ResponseProcessor
from kg.context.sanitizer import sanitize
from kg.context.token_budget import DEFAULT_TOTAL
from kg.errors import KgError
from kg.shortterm import Role, Session, SessionManager
from kg.terms import MemoryType, SourceType

__all__ = [
    "EPISODE_CONFIDENCE",
    "EPISODE_MIN_ACCESSES",
    "SessionHooks",
    "TurnContext",
    "stage_episodes",
]

log = logging.getLogger(__name__)

Embed = Callable[[str], "Sequence[float] | npt.NDArray[np.float64]"]
# An episode is staged for promotion only once it has been recalled into a later turn
# (access_count ≥ 2: created + retrieved): raw chit-chat is never promoted for merely existing.
EPISODE_MIN_ACCESSES = 2
EPISODE_CONFIDENCE = 0.6
EPISODES_PER_TURN = 5
DEFAULT_USER = "user"
DEFAULT_AGENT = "agent"


@dataclass(frozen=True, slots=True)
class TurnContext:
    """What before_turn hands the agent: the system prompt and what it was built from."""

    system_prompt: str
    context: MemoryContext | None
    episodes: list[str] = field(default_factory=list)


class SessionHooks:
    """Turn-level memory integration for one SessionManager."""

    def __init__(
        self,
        sessions: SessionManager,
        builder: ContextBuilder,
        *,
        processor: ResponseProcessor | None = None,
        embed: Embed = hashing_embedding,
        token_budget: int = DEFAULT_TOTAL,
        memory_enabled: bool = True,
    ) -> None:
        self.sessions = sessions
        self.builder = builder
        self.processor = processor if processor is not None else ResponseProcessor(sessions)
        self.embed = embed
        self.token_budget = token_budget
        self.memory_enabled = memory_enabled

    def before_turn(
        self, session_id: str, user_message: str, *, base_prompt: str = ""
    ) -> TurnContext:
        """Capture the user's message, then build the system prompt with memory injected."""
        if not self.memory_enabled:
            return TurnContext(base_prompt, None)
        try:
            self.capture_message(session_id, Role.USER, user_message)
            episodes = self._recall_episodes(session_id, user_message)
            context = self.builder.build(
                session_id, token_budget=self.token_budget, query_hint=user_message
            )
        except KgError as e:
            log.warning("memory context unavailable for %r: %s", session_id, e.message)
            return TurnContext(base_prompt, None)
        sent = {m.content for m in context.conversation}
        episodes = [text for text in episodes if text not in sent]
        sections = [base_prompt.strip(), format_for_prompt(context)]
        if episodes:
            lines = "\n".join(f"- {sanitize(text)}" for text in episodes)
            sections.append("## Earlier in This Session\n" + lines)
        prompt = "\n\n".join(part for part in sections if part)
        return TurnContext(prompt, context, episodes)

    def capture_message(self, session_id: str, role: Role | str, content: str) -> None:
        """Append a message to the conversation buffer and store it as an episode."""
        source = SourceType.USER if str(role) == Role.USER else SourceType.AGENT
        if str(role) == Role.TOOL:
            source = SourceType.TOOL
        with self.sessions.use(session_id) as session:
            session.conversation.append(role, content)
            if content.strip():
                session.working_memory.add(
                    content,
                    self.embed(content),
                    agent_id=session.agent or DEFAULT_AGENT,
                    user_id=DEFAULT_USER,
                    source=source,
                )

    def capture_tool_result(self, session_id: str, tool: str, result: str) -> None:
        """Record a tool call's result as a tool message and an episode."""
        self.capture_message(session_id, Role.TOOL, f"{tool}: {result}")

    def after_response(
        self, session_id: str, response: str, *, background: bool = False
    ) -> dict[str, str] | Future[dict[str, str]]:
        """Capture the assistant's reply and infer working context from it."""
        self.capture_message(session_id, Role.ASSISTANT, response)
        if background:
            return self.processor.process_response_async(response, session_id)
        return self.processor.process_response(response, session_id)

    def end_session(self, session_id: str) -> Session:
        """Close the session (promotion runs in the manager's on_close hook)."""
        return self.sessions.close(session_id)

    def close(self) -> None:
        """Finish background response processing."""
        self.processor.close()

    def _recall_episodes(self, session_id: str, text: str) -> list[str]:
        if not text.strip():
            return []
        vector = self.embed(text)
        with self.sessions.use(session_id) as session:
            # The message just captured is the best match for itself; skip it.
            items = session.working_memory.query(vector, top_k=EPISODES_PER_TURN + 1)
        return [item.content for item in items if item.content != text][:EPISODES_PER_TURN]


def stage_episodes(session: Session, *, threshold: float | None = None) -> int:
    """Stage this session's activated, re-used episodes as pending memories; return how many."""
    staged = 0
    for item in session.working_memory.top_activated(threshold):
        if item.access_count < EPISODE_MIN_ACCESSES:
            continue
        # More retrievals → more important; 2 accesses give 0.6, the default promotion threshold.
        importance = min(1.0, 0.4 + 0.1 * item.access_count)
        session.pending_memories.add_implicit(
            item.content,
            importance_score=importance,
            memory_type=MemoryType.DISCOVERY,
            confidence=EPISODE_CONFIDENCE,
            source_type=item.source,
            rationale="episode recalled during the session",
        )
        staged += 1
    return staged
