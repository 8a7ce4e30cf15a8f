"""PromotionScheduler: runs promotion on its triggers and keeps session records in step.

Triggers (MISSION §3): periodic (every 30 s, a daemon thread), session pause, session close
(a final run that drains every eligible item), pending limit reached, agent decision
(immediate). Wire it into a SessionManager through its hooks:

    scheduler = PromotionScheduler(PromotionEngine(memory))
    manager = SessionManager(on_pause=scheduler.on_pause, on_close=scheduler.on_close)
    scheduler.bind(manager)
    scheduler.start_session("s1", project="demo", agent="coder")   # manager.start + record
    scheduler.start()                                              # the periodic thread
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from kg.longterm.promotion import PromotionEngine, PromotionResult, PromotionTrigger
from kg.shortterm.errors import SessionNotFoundError, SessionStateError
from kg.shortterm.session import Session
from kg.shortterm.session_manager import SessionManager
from kg.terms import SessionStatus

__all__ = ["DEFAULT_INTERVAL", "PromotionScheduler"]

DEFAULT_INTERVAL = 30.0
_log = logging.getLogger(__name__)


class PromotionScheduler:
    """Calls the promotion engine on every trigger; one instance per SessionManager."""

    def __init__(
        self,
        engine: PromotionEngine,
        *,
        on_result: Callable[[PromotionResult], None] | None = None,
    ) -> None:
        self.engine = engine
        self.records = engine.memory.records
        self._on_result = on_result
        self._manager: SessionManager | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def bind(self, manager: SessionManager) -> None:
        """Attach the manager whose sessions the periodic run and the wrappers use."""
        self._manager = manager

    @property
    def manager(self) -> SessionManager:
        """The bound SessionManager."""
        if self._manager is None:
            raise RuntimeError("PromotionScheduler.bind(manager) has not been called")
        return self._manager

    # -- session life cycle -------------------------------------------------------------------

    def start_session(
        self, session_id: str | None = None, *, project: str | None = None,
        agent: str | None = None,
    ) -> Session:
        """Start a session in the manager and write its record (the manager has no start hook)."""
        session = self.manager.start(session_id, project=project, agent=agent)
        self.records.started(session.id, project=self._project(session), agent=session.agent)
        return session

    def resume_session(self, session_id: str) -> Session:
        """Resume a paused session and mark its record active."""
        session = self.manager.resume(session_id)
        self.records.resumed(session.id, project=self._project(session), agent=session.agent)
        return session

    def on_pause(self, session: Session) -> None:
        """SessionManager on_pause hook: promote, then mark the record paused."""
        self._run(session, PromotionTrigger.SESSION_PAUSE)
        self.records.paused(session.id, project=self._project(session), agent=session.agent)

    def on_close(self, session: Session) -> None:
        """SessionManager on_close hook: the final, draining run, then mark the record closed."""
        self._run(session, PromotionTrigger.SESSION_CLOSE, drain=True)
        self.records.closed(session.id, project=self._project(session), agent=session.agent)

    # -- staging wrappers (the manager has no hook for these triggers) -------------------------

    def add_pending(self, session_id: str, content: str, **opts: Any) -> str:
        """Stage an implicit item; run promotion when the pending store is full."""
        with self.manager.use(session_id) as session:
            item_id = session.pending_memories.add_implicit(content, **opts)
            pending = session.pending_memories
            if pending.size() >= pending.max_items:
                self._run(session, PromotionTrigger.PENDING_LIMIT)
            return item_id

    def add_agent_decision(self, session_id: str, content: str, **opts: Any) -> PromotionResult:
        """Stage an explicit agent decision and promote it at once."""
        with self.manager.use(session_id) as session:
            session.pending_memories.add_agent_decision(content, **opts)
            return self._run(session, PromotionTrigger.AGENT_DECISION)

    # -- periodic -----------------------------------------------------------------------------

    def run_periodic(self) -> list[PromotionResult]:
        """One periodic pass over every active session."""
        results = []
        for session_id in self.manager.list(status=SessionStatus.ACTIVE):
            try:
                with self.manager.use(session_id) as session:
                    results.append(self._run(session, PromotionTrigger.PERIODIC))
            except (SessionNotFoundError, SessionStateError):
                continue  # closed or paused since list(); its own hook promoted it
        return results

    def start(self, *, interval: float = DEFAULT_INTERVAL) -> None:
        """Start the periodic daemon thread (every `interval` seconds until stop())."""
        if interval <= 0:
            raise ValueError(f"interval must be > 0, got {interval!r}")
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._loop, args=(interval,), name="promotion", daemon=True
        )
        self._thread.start()

    def stop(self, *, timeout: float = 10.0) -> None:
        """Stop the periodic thread and wait for it."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _loop(self, interval: float) -> None:
        while not self._stop.wait(interval):
            try:
                self.run_periodic()
            except Exception:  # keep the thread alive; the next tick retries
                _log.exception("periodic promotion failed")

    def _run(self, session: Session, trigger: PromotionTrigger, *,
             drain: bool = False) -> PromotionResult:
        result = self.engine.promote(session, trigger=trigger, drain=drain)
        if self._on_result is not None:
            self._on_result(result)
        return result

    def _project(self, session: Session) -> str:
        return session.project or self.engine.default_project
