"""PromotionEngine: moves what matters from a session's short-term memory into long-term memory.

Candidates are the working-context items that have a suggested memory type (scored with the
session's access log by the ImportanceScorer) plus the pending items ready for promotion (agent
decisions always). Empty or untyped candidates are skipped, the rest need a score ≥ threshold
(0.6); at most `max_per_run` (20) are written per run, agent decisions first, then by score.
Each is written with `LongTermMemory.remember`, so an equivalent memory is updated, not copied.
Only pending items that were written are cleared: a failure leaves the item pending for the next
run. The caller holds the session's lock (SessionManager's hooks and `use()` do).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from kg.longterm.importance import ImportanceScorer
from kg.longterm.memories import LongTermMemory
from kg.longterm.triples import content_key, make_evidence
from kg.memory import Evidence
from kg.shortterm.session import Session
from kg.terms import ContextKey, MemoryType, SourceType, SuggestedBy, validate_score

__all__ = [
    "Candidate",
    "PromotionEngine",
    "PromotionFailure",
    "PromotionResult",
    "PromotionTrigger",
    "SkippedCandidate",
]

DEFAULT_THRESHOLD = 0.6
DEFAULT_MAX_PER_RUN = 20


class PromotionTrigger(StrEnum):
    """Why a promotion run happened."""

    PERIODIC = "periodic"
    SESSION_PAUSE = "session_pause"
    SESSION_CLOSE = "session_close"
    PENDING_LIMIT = "pending_limit"
    AGENT_DECISION = "agent_decision"
    MANUAL = "manual"


@dataclass(frozen=True, slots=True)
class Candidate:
    """One item considered for promotion; `id` is `pending:<id>` or `context:<key>`."""

    id: str
    content: str
    memory_type: MemoryType | None
    confidence: float
    source_type: SourceType
    score: float
    agent_decision: bool = False
    rationale: str | None = None
    evidence: tuple[str, ...] = ()
    pending_id: str | None = None
    context_key: ContextKey | None = None


@dataclass(frozen=True, slots=True)
class SkippedCandidate:
    """A candidate not written this run, and why."""

    candidate: str
    reason: str


@dataclass(frozen=True, slots=True)
class PromotionFailure:
    """A candidate whose write failed; it stays pending."""

    candidate: str
    error: str


@dataclass(slots=True)
class PromotionResult:
    """What one promotion run did."""

    trigger: PromotionTrigger
    session_id: str
    project: str
    promoted: list[str] = field(default_factory=list)  # ids of new memories
    merged: list[str] = field(default_factory=list)  # ids of existing memories updated
    skipped: list[SkippedCandidate] = field(default_factory=list)
    failed: list[PromotionFailure] = field(default_factory=list)
    written: dict[str, str] = field(default_factory=dict)  # candidate id → memory id

    @property
    def ok(self) -> bool:
        """True when no write failed."""
        return not self.failed


class PromotionEngine:
    """Selects, scores and writes promotion candidates for one session at a time."""

    def __init__(
        self,
        memory: LongTermMemory,
        *,
        scorer: ImportanceScorer | None = None,
        threshold: float = DEFAULT_THRESHOLD,
        max_per_run: int = DEFAULT_MAX_PER_RUN,
        default_project: str = "default",
        now: Callable[[], float] = time.time,
    ) -> None:
        if max_per_run < 1:
            raise ValueError(f"max_per_run must be ≥ 1, got {max_per_run!r}")
        self.memory = memory
        self.scorer = scorer or ImportanceScorer()
        self.threshold = validate_score(threshold, name="threshold")
        self.max_per_run = max_per_run
        self.default_project = default_project
        self._now = now
        # Context items already written, per session: their content key, so an unchanged item
        # is not merged again (which would inflate its access count) on every periodic run.
        self._context_done: dict[str, dict[ContextKey, str]] = {}

    def candidates(self, session: Session) -> tuple[list[Candidate], list[SkippedCandidate]]:
        """The eligible candidates, best first, and the ones dropped on the way."""
        skipped: list[SkippedCandidate] = []
        chosen: list[Candidate] = []
        for candidate in self._context_candidates(session) + self._pending_candidates(session):
            if not candidate.content.strip():
                skipped.append(SkippedCandidate(candidate.id, "empty content"))
            elif candidate.memory_type is None:
                skipped.append(SkippedCandidate(candidate.id, "no memory type"))
            elif not candidate.agent_decision and candidate.score < self.threshold:
                skipped.append(SkippedCandidate(
                    candidate.id, f"importance {candidate.score:.2f} below {self.threshold}"
                ))
            elif candidate.context_key is not None and self._context_done.get(
                session.id, {}
            ).get(candidate.context_key) == content_key(candidate.content, candidate.memory_type):
                skipped.append(SkippedCandidate(candidate.id, "already promoted"))
            else:
                chosen.append(candidate)
        chosen.sort(key=lambda c: (not c.agent_decision, -c.score))
        return chosen, skipped

    def promote(
        self, session: Session, *, trigger: PromotionTrigger = PromotionTrigger.MANUAL,
        drain: bool = False,
    ) -> PromotionResult:
        """Run promotion once (or, with `drain`, in batches until nothing eligible is left)."""
        project = session.project or self.default_project
        result = PromotionResult(trigger, session.id, project)
        while True:
            chosen, skipped = self.candidates(session)
            batch, rest = chosen[: self.max_per_run], chosen[self.max_per_run:]
            written_before = len(result.written)
            self._write(session, project, batch, result)
            progressed = len(result.written) > written_before
            if not (drain and rest and progressed):
                result.skipped += skipped
                result.skipped += [
                    SkippedCandidate(c.id, f"over the limit of {self.max_per_run} per run")
                    for c in rest
                ]
                break
        if trigger is PromotionTrigger.SESSION_CLOSE:
            self._context_done.pop(session.id, None)
        return result

    def _write(self, session: Session, project: str, batch: list[Candidate],
               result: PromotionResult) -> None:
        cleared: list[str] = []
        for candidate in batch:
            assert candidate.memory_type is not None
            try:
                outcome = self.memory.remember(
                    candidate.content, project=project, session=session.id,
                    type=candidate.memory_type, confidence=candidate.confidence,
                    source_type=candidate.source_type, agent=session.agent,
                    rationale=candidate.rationale, evidence=_evidence(candidate.evidence),
                )
            except Exception as e:  # one bad item must not stop the rest; it stays pending
                result.failed.append(PromotionFailure(candidate.id, f"{type(e).__name__}: {e}"))
                continue
            memory_id = outcome.memory.id
            (result.promoted if outcome.created else result.merged).append(memory_id)
            result.written[candidate.id] = memory_id
            if candidate.pending_id is not None:
                cleared.append(candidate.pending_id)
            if candidate.context_key is not None:
                self._context_done.setdefault(session.id, {})[candidate.context_key] = (
                    content_key(candidate.content, candidate.memory_type)
                )
        if cleared:
            session.pending_memories.clear_promoted(cleared)

    def _context_candidates(self, session: Session) -> list[Candidate]:
        now = self._now()
        found = []
        for item in session.working_context.to_list():
            frequency, recency = session.access_log.get_stats(item.key)
            text = item.value if isinstance(item.value, str) else json.dumps(item.value)
            score = 0.0
            if item.suggested_type is not None:
                score = self.scorer.score(
                    memory_type=item.suggested_type, confidence=item.confidence,
                    access_count=frequency,
                    last_accessed=recency if recency is not None else item.last_accessed,
                    now=now,
                )
            found.append(Candidate(
                id=f"context:{item.key.value}",
                content=f"{item.key.value.replace('_', ' ')}: {text}" if text.strip() else "",
                memory_type=item.suggested_type, confidence=item.confidence,
                source_type=SourceType.TOOL if item.source.value == "tool" else SourceType.AGENT,
                score=score, context_key=item.key,
            ))
        return found

    def _pending_candidates(self, session: Session) -> list[Candidate]:
        return [
            Candidate(
                id=f"pending:{item.id}", content=item.content, memory_type=item.memory_type,
                confidence=item.confidence, source_type=item.source_type,
                score=item.importance_score,
                agent_decision=item.suggested_by is SuggestedBy.AGENT,
                rationale=item.rationale, evidence=item.evidence, pending_id=item.id,
            )
            for item in session.pending_memories.ready_for_promotion(self.threshold)
        ]


def _evidence(items: tuple[str, ...]) -> list[Evidence]:
    """Pending evidence strings: an IRI names the message/tool call, anything else is its text."""
    found = []
    for item in items:
        if "://" in item or item.startswith("urn:"):
            try:
                found.append(make_evidence(source=item))
                continue
            except ValueError:
                pass
        found.append(make_evidence(text=item))
    return found
