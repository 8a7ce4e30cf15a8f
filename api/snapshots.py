"""Open sessions written to a file now and then, so that the next worker process continues them.

Sessions (short-term memory) live in the worker process. Every `KG_SESSION_SNAPSHOT_INTERVAL`
seconds, and once more when the worker drains (replacement or shutdown), every open session's
snapshot (`SessionManager.snapshot_all`) is written to one JSON file — beside the store, or in
the supervisor's directory for a store without one — whole, then renamed over the old file. A
new worker restores them all before it serves. So a planned replacement or a restart loses no
session state, and a crash (or SIGKILL) loses what changed since the last snapshot: at most the
interval's worth; a session closed in that time comes back open.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

from kg.errors import KgError
from kg.memory_service import MemoryService

__all__ = ["SessionSnapshots"]

log = logging.getLogger("jido_kg.snapshots")

_FORMAT = 1
# How long a periodic snapshot waits for a session busy with a request (its last one is kept).
_LOCK_WAIT_SECONDS = 1.0


class SessionSnapshots:
    """Writes every open session of `service` to `path` every `interval` s (a daemon thread)."""

    def __init__(self, service: MemoryService, path: Path, *, interval: float) -> None:
        self.service, self.path, self.interval = service, path, interval
        self._last: dict[str, dict[str, Any]] = {}
        self._written = ""
        self._lock = threading.Lock()  # one write at a time
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kg-session-snapshots",
                                        daemon=True)

    def restore(self) -> int:
        """Open every session of the file here (before serving); returns how many."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            snapshots = data["sessions"] if data.get("format") == _FORMAT else []
        except FileNotFoundError:
            return 0
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("session snapshots %s unreadable (%s); no session restored",
                        self.path, exc)
            return 0
        restored = 0
        for snapshot in snapshots:
            try:
                session = self.service.restore_session(snapshot)
            except (KgError, ValueError, KeyError, TypeError) as exc:
                log.warning("session %r not restored: %s",
                            snapshot.get("id") if isinstance(snapshot, dict) else None, exc)
                continue
            self._last[session.id] = snapshot
            restored += 1
        return restored

    def start(self) -> SessionSnapshots:
        """Start the periodic snapshots; returns self."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the periodic snapshots (a write in progress ends first)."""
        self._stop.set()

    def save(self, *, wait: float = _LOCK_WAIT_SECONDS) -> int:
        """Write every open session now (if anything changed); returns how many were written.

        A session whose lock stays taken `wait` s (a request working on it) keeps its previous
        snapshot.
        """
        with self._lock:
            found = self.service.sessions.snapshot_all(timeout=wait)
            current = {sid: snap if snap is not None else self._last.get(sid)
                       for sid, snap in found.items()}
            kept = {sid: snap for sid, snap in current.items() if snap is not None}
            text = json.dumps({"format": _FORMAT, "sessions": list(kept.values())})
            if text != self._written:
                _write(self.path, text)
                self._written = text
            self._last = kept
            return len(kept)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.save()
            except Exception:  # a full disk must not end the thread: the next try may pass
                log.exception("writing session snapshots to %s failed", self.path)


def _write(path: Path, text: str) -> None:
    """Write `text` to a new file beside `path`, then rename it over `path` (all or nothing)."""
    temporary = path.with_name(path.name + ".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(temporary, path)
