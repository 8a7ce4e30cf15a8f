"""The worker process of `jido-kg serve`: it opens the store and serves the supervisor's socket.

Only this process holds the store (one process may open it), and it accepts connections from
the socket it inherited: a request costs nothing for being in a worker. It ends by draining —
stop accepting, close idle connections, let requests in flight finish within a bound, snapshot
the sessions, flush, exit with os._exit (a thread running an uncancellable query cannot be
joined) — when:

- a query is still running `KG_RUNAWAY_GRACE` s past its time limit (its caller has had the
  504): only the end of the process stops it; bound `KG_DRAIN_TIMEOUT`, and the supervisor
  starts a new worker once this one is gone;
- SIGTERM or SIGINT (the supervisor passes on its own): bound `KG_SHUTDOWN_TIMEOUT` less 2 s;
- the supervisor is gone (on Linux the kernel kills the worker with it at once).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import logging
import math
import os
import signal
import socket
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from types import FrameType
from typing import NoReturn

from api.app import create_app
from api.budget import BudgetGate, RunawayLedger
from api.housekeeping import Housekeeper, limit_process_memory
from api.server import WORKER_STACK_BYTES, HttpServer
from api.services import close_app
from api.snapshots import SessionSnapshots
from kg.errors import KgError, StoreLockedError
from kg.settings import Settings
from kg.store import Store, open_store

__all__ = ["BOOT_FAILED", "DRAINING", "READY", "SLACK_SECONDS", "Worker", "state_files"]

log = logging.getLogger("jido_kg.worker")

# What a worker tells its supervisor through its pipe, one byte each.
READY, DRAINING = b"R", b"D"
# Exit status of a worker that could not start (its one-line error is printed): as the CLI's.
BOOT_FAILED = 2
# Beyond a drain's bound: time to snapshot the sessions and flush before the supervisor kills.
SLACK_SECONDS = 2.0
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_LOCK_WAIT_SECONDS = 3.0


def state_files(settings: Settings, directory: Path | None) -> tuple[Path, Path] | None:
    """Where the session snapshots and the runaway ledger live: beside an on-disk store (they
    outlive the service too), else in `directory` (the supervisor's own, for its life); None
    if that is needed and not given."""
    store = settings.store_path if settings.backend == "embedded" else None
    if store is not None:
        return (store.with_name(store.name + ".sessions.json"),
                store.with_name(store.name + ".runaways.json"))
    if directory is None:
        return None
    return directory / "sessions.json", directory / "runaways.json"


class Worker:
    """One worker's life: boot (store, app, sessions), serve, drain."""

    def __init__(self, settings: Settings, listener: socket.socket, *,
                 state_dir: Path | None = None, channel: int | None = None,
                 parent: int | None = None) -> None:
        self.settings, self.listener = settings, listener
        self.channel, self.parent = channel, parent
        self.state_dir = state_dir
        self._own_state: Path | None = None  # a directory made here, removed by run_here
        self.reason: str | None = None  # why it drains
        self.bound = math.inf  # how long requests in flight may take once it drains
        self.store: Store | None = None
        self.server: HttpServer | None = None
        self.replaceable = channel is not None  # a supervisor starts a new worker after this

    # -- start ----------------------------------------------------------------------------------

    def boot(self) -> None:
        """Open the store, build the app, restore the sessions; raise on a start-up error."""
        settings = self.settings
        threading.stack_size(WORKER_STACK_BYTES)
        # Before the store's and the server's threads exist (docs/benchmarks/reliability.md).
        limit_process_memory(malloc_arenas=settings.malloc_arena_max,
                             sqlite_heap_mb=settings.sqlite_heap_limit_mb,
                             mmap_threshold_kb=settings.malloc_mmap_threshold_kb)
        self.store = _open(settings)
        self.app = app = create_app(settings, store=self.store)
        paths = state_files(settings, self.state_dir)
        if paths is None:
            self._own_state = Path(tempfile.mkdtemp(prefix="jido-kg-"))
            paths = state_files(settings, self._own_state)
            assert paths is not None
        sessions_path, ledger_path = paths
        self.ledger = RunawayLedger(ledger_path, budget=settings.runaway_budget,
                                    window=settings.runaway_budget_window)
        self.server = HttpServer(settings, self.listener, app=app, gate=BudgetGate(self.ledger))
        from api.memory import memory_service
        from api.sparql import executor

        with app.app_context():
            self.executor, service = executor(), memory_service()
        self.executor.runaway_grace = settings.runaway_grace
        self.executor.on_stuck = self._stuck
        self.snapshots = SessionSnapshots(service, sessions_path,
                                          interval=settings.session_snapshot_interval)
        restored = self.snapshots.restore()
        if restored:
            log.info("%d session(s) restored from %s", restored, sessions_path)
        self.snapshots.start()
        # Bounds resident memory under writes (docs/benchmarks/reliability.md, memory under soak).
        self.housekeeper = Housekeeper(self.store, interval=settings.store_flush_interval,
                                       flush_bytes=settings.store_flush_mb * 1024 * 1024).start()

    def _announce(self) -> None:
        assert self.server is not None
        host, port = self.server.address
        settings = self.settings
        where = settings.store if settings.in_memory else str(settings.store_path)
        print(f"jido-kg serving http://{host}:{port}/ (store: {where})", file=sys.stderr)
        sys.stderr.flush()

    # -- drain ----------------------------------------------------------------------------------

    def drain(self, reason: str, *, bound: float) -> None:
        """Stop accepting; requests in flight get `bound` s (the shortest bound asked wins)."""
        self.bound = min(self.bound, bound)
        if self.reason is None:
            self.reason = reason
            print(f"jido-kg: worker {os.getpid()} draining: {reason}", file=sys.stderr)
            sys.stderr.flush()
            if self.replaceable and reason != _SHUTDOWN:
                self._tell(DRAINING)
        if self.server is not None:
            self.server.stop()

    def _stuck(self, caller: str | None) -> None:
        """A runaway outlived its grace (watchdog thread): charge its caller, drain."""
        if caller is not None:
            self.ledger.charge(caller)
        if self.replaceable:
            self.drain(f"a query is still running {self.settings.runaway_grace:g} s past its "
                       "time limit; a new worker takes over", bound=self.settings.drain_timeout)

    def _tick(self) -> None:
        if self.parent is not None and os.getppid() != self.parent:
            self.drain("the supervisor is gone", bound=0.5)

    def finish(self) -> None:
        """After serving: wait for requests in flight, snapshot sessions, close and flush."""
        assert self.server is not None
        bound = 0.0 if math.isinf(self.bound) else self.bound
        busy = self.server.drain(bound, skip=self.executor.runaway_threads)
        if busy:
            log.warning("%d request(s) still running after %g s are cut", busy, bound)
        self.snapshots.stop()
        self.housekeeper.stop()

        def close() -> None:
            with contextlib.suppress(Exception):
                self.snapshots.save(wait=0.5)
            close_app(self.app)
            if self.store is not None:
                self.store.flush()

        # A closer stuck behind a runaway must not hold the exit past the supervisor's bound.
        closing = threading.Thread(target=close, name="kg-close", daemon=True)
        closing.start()
        closing.join(SLACK_SECONDS - 0.5)

    # -- the two ways to run --------------------------------------------------------------------

    def run_child(self) -> NoReturn:
        """In a process forked by the supervisor: boot, serve, drain, and end the process."""
        status = 0
        try:
            _die_with(self.parent)
            self._signals()
            try:
                self.boot()
            except (KgError, OSError) as exc:
                if isinstance(exc, OSError) and exc.filename is None:
                    raise
                print(f"jido-kg: error: {_one_line(exc)}", file=sys.stderr)
                _exit(BOOT_FAILED)
            self._tell(READY)
            self._announce()
            assert self.server is not None
            self.server.serve_forever(tick=self._tick)
            self.finish()
        except BaseException:  # a fault of ours: say where, then end (the supervisor decides)
            traceback.print_exc()
            status = 70
        _exit(status)

    def run_here(self, *, ready: threading.Event | None = None) -> None:
        """In the calling process (no supervisor): serve until SIGINT/SIGTERM."""
        self.boot()
        assert self.server is not None and self.store is not None
        if threading.current_thread() is threading.main_thread():
            self._signals()
        self._announce()
        if ready is not None:
            ready.set()
        try:
            self.server.serve_forever(tick=self._tick)
            self.finish()
        finally:
            self.store.close()
            if self._own_state is not None:
                import shutil

                shutil.rmtree(self._own_state, ignore_errors=True)

    def _signals(self) -> None:
        def stop(signum: int, frame: FrameType | None) -> None:
            self.drain(_SHUTDOWN, bound=max(self.settings.shutdown_timeout - SLACK_SECONDS,
                                              0.5))

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)

    def _tell(self, message: bytes) -> None:
        if self.channel is not None:
            with contextlib.suppress(OSError):
                os.write(self.channel, message)


_SHUTDOWN = "asked to stop"


def _open(settings: Settings) -> Store:
    """Open the store; a lock still held by a process that is ending gets a few seconds."""
    deadline = time.monotonic() + _LOCK_WAIT_SECONDS
    while True:
        try:
            return open_store(settings)
        except StoreLockedError:
            # A killed predecessor's threads end (and its lock goes) shortly after it is gone;
            # another live server keeps it, and is reported after the wait.
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, KgError):
        message = exc.message
    else:
        assert isinstance(exc, OSError)
        message = f"{exc.filename}: {exc.strerror or exc}"
    return " ".join(message.splitlines())


def _exit(status: int) -> NoReturn:
    """End the process now: threads running runaway queries cannot be joined."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(status)


def _die_with(parent: int | None) -> None:
    """Have the kernel kill this process when its supervisor dies (Linux; elsewhere `_tick`)."""
    if parent is None or not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # it died before the request took effect
        _exit(0)

