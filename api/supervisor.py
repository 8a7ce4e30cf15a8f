"""The supervisor process of `jido-kg serve`: it holds the listening socket and one worker.

pyoxigraph cannot cancel a query, so a runaway can only be stopped by ending the process that
runs it — and only one process may open the store. So the store lives in a worker process
(api/worker.py), forked from this one, which accepts on the socket it inherits; this process
never opens the store. It starts a new worker whenever the old one is gone, and only then (the
new one must take the store's lock): after a planned drain (a runaway, api/worker.py) at once,
after a crash after a pause that grows while crashes repeat. A worker that announced a drain
and is still there `KG_DRAIN_TIMEOUT` + 2 s later is killed. While no worker accepts,
connections wait in the socket's backlog: the documented pause of a replacement.

SIGTERM or SIGINT: close the socket (stop accepting), pass the signal on, wait up to
`KG_SHUTDOWN_TIMEOUT` for the worker to drain, kill it if it has not, exit 0. A second signal
kills at once. If this process is killed, the kernel kills the worker with it (Linux; elsewhere
the worker notices within half a second).

Why not gunicorn's arbiter (read for this, 27.0): it assumes interchangeable workers that may
overlap — SIGHUP, SIGUSR2 and SIGTTIN start a new worker before the old one stops, which
cannot take the store's lock, and a worker that fails to boot halts the whole server (exit 3,
with its own log lines); its only kill bound is a heartbeat-file timeout, which would also kill
a worker still building its recall index at start-up. Overriding all that left little of it.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import socket
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from api.server import BACKLOG
from api.worker import BOOT_FAILED, DRAINING, READY, SLACK_SECONDS, Worker, state_files
from kg.settings import Settings

__all__ = ["Supervisor", "supervise"]

# Crash pauses: none for the first, then 0.5 s doubling up to 30 s while workers keep dying
# within `_STABLE_SECONDS` of starting; a worker that serves that long resets the count.
_FIRST_PAUSE, _MAX_PAUSE, _STABLE_SECONDS = 0.5, 30.0, 60.0
# A new worker that cannot start this many times in a row: give up (exit 1).
_MAX_BOOT_FAILURES = 5
_IDLE_SECONDS = 1.0  # the longest the loop sleeps without a signal or a message


@dataclass
class _Child:
    pid: int
    channel: int  # read end of its pipe
    started: float
    ready: bool = False
    draining: bool = False


class Supervisor:
    """Keeps one worker serving `listener` until SIGTERM/SIGINT; `run` returns the exit status."""

    def __init__(self, settings: Settings, listener: socket.socket) -> None:
        self.settings, self.listener = settings, listener
        self.worker: _Child | None = None
        self.workers_started = 0
        self._stopping = 0  # signals received
        self._shutdown_at: float | None = None  # when shutdown began
        self._kill_at: float | None = None  # when to kill a worker that overstays its drain
        self._spawn_at: float | None = None
        self._crashes = 0
        self._boot_failures = 0
        self._wake_r, self._wake_w = os.pipe()
        # The sessions' and the runaway ledger's files, for a store without a directory.
        self._state_dir = None if state_files(settings, None) else \
            Path(tempfile.mkdtemp(prefix="jido-kg-"))

    def run(self) -> int:
        """Serve until stopped; the exit status (0, or a worker's start-up failure)."""
        self.listener.listen(BACKLOG)
        os.set_blocking(self._wake_w, False)
        os.set_blocking(self._wake_r, False)
        previous = {sig: signal.signal(sig, self._on_signal)
                    for sig in (signal.SIGTERM, signal.SIGINT)}
        previous[signal.SIGCHLD] = signal.signal(signal.SIGCHLD, _wake_only)
        old_wakeup = signal.set_wakeup_fd(self._wake_w)
        try:
            self._spawn()
            while True:
                status = self._step()
                if status is not None:
                    return status
        finally:
            signal.set_wakeup_fd(old_wakeup)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self._kill_now()
            for fd in (self._wake_r, self._wake_w):
                os.close(fd)
            if self._state_dir is not None:
                shutil.rmtree(self._state_dir, ignore_errors=True)

    # -- the loop -------------------------------------------------------------------------------

    def _step(self) -> int | None:
        waiting = [self._wake_r] + ([self.worker.channel] if self.worker else [])
        readable, _, _ = select.select(waiting, [], [], self._sleep())
        if self._wake_r in readable:
            with contextlib.suppress(OSError):
                os.read(self._wake_r, 4096)
        if self.worker is not None and self.worker.channel in readable:
            self._read(self.worker)
        if self._stopping and self._shutdown_at is None:
            self._begin_shutdown()
        elif self._stopping > 1 and self.worker is not None:
            _kill(self.worker.pid, signal.SIGKILL)  # a second signal: no more waiting
        status = self._reap()
        if status is not None:
            return status
        now = time.monotonic()
        if self.worker is not None and self._kill_at is not None and now >= self._kill_at:
            print(f"jido-kg: worker {self.worker.pid} did not end in time; killing it",
                  file=sys.stderr, flush=True)
            _kill(self.worker.pid, signal.SIGKILL)
            self._kill_at = None
        if self._shutdown_at is not None:
            return 0 if self.worker is None else None
        if self.worker is None and self._spawn_at is not None and now >= self._spawn_at:
            self._spawn()
        return None

    def _sleep(self) -> float:
        deadlines = [t for t in (self._kill_at, self._spawn_at) if t is not None]
        if not deadlines:
            return _IDLE_SECONDS
        return min(max(min(deadlines) - time.monotonic(), 0.0), _IDLE_SECONDS)

    def _read(self, worker: _Child) -> None:
        try:
            data = os.read(worker.channel, 64)
        except OSError:
            data = b""
        if READY in data:
            worker.ready = True
            self._boot_failures = 0
        if DRAINING in data and not worker.draining:
            worker.draining = True
            if self._shutdown_at is None:
                self._kill_at = time.monotonic() + self.settings.drain_timeout + SLACK_SECONDS

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self._stopping += 1

    def _begin_shutdown(self) -> None:
        self._shutdown_at = time.monotonic()
        self._spawn_at = None
        # New connections are refused from now on; those in the backlog go with the worker's.
        with contextlib.suppress(OSError):
            self.listener.close()
        if self.worker is not None:
            _kill(self.worker.pid, signal.SIGTERM)
            self._kill_at = self._shutdown_at + self.settings.shutdown_timeout

    # -- workers --------------------------------------------------------------------------------

    def _spawn(self) -> None:
        self._spawn_at = None
        read, write = os.pipe()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the worker: never returns into this code
            try:
                os.close(read)
                signal.set_wakeup_fd(-1)
                os.close(self._wake_r)
                os.close(self._wake_w)
                for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT):
                    signal.signal(sig, signal.SIG_DFL)
                Worker(self.settings, self.listener, state_dir=self._state_dir, channel=write,
                       parent=parent).run_child()
            finally:
                os._exit(70)
        os.close(write)
        self.workers_started += 1
        self.worker = _Child(pid, read, time.monotonic())

    def _reap(self) -> int | None:
        """Collect an ended worker; an exit status if the supervisor must end too."""
        worker = self.worker
        if worker is None:
            return None
        try:
            pid, status = os.waitpid(worker.pid, os.WNOHANG)
        except ChildProcessError:
            pid, status = worker.pid, 0
        if pid == 0:
            return None
        self._read(worker)  # a READY or DRAINING still in the pipe
        os.close(worker.channel)
        self.worker, self._kill_at = None, None
        if self._shutdown_at is not None:
            return None
        code = os.waitstatus_to_exitcode(status)
        how = f"exited with status {code}" if code >= 0 else \
            f"was killed by {signal.Signals(-code).name}"
        if not worker.ready:
            return self._failed_boot(worker, code, how)
        if worker.draining:  # replaced as planned (or killed for overstaying its drain)
            pause = 0.0
            if code != 0:
                print(f"jido-kg: worker {worker.pid} {how} while draining; starting a new one",
                      file=sys.stderr, flush=True)
        else:
            lived = time.monotonic() - worker.started
            self._crashes = self._crashes + 1 if lived < _STABLE_SECONDS else 1
            pause = 0.0 if self._crashes == 1 else \
                min(_FIRST_PAUSE * 2 ** (self._crashes - 2), _MAX_PAUSE)
            print(f"jido-kg: worker {worker.pid} {how}; starting a new one"
                  + (f" in {pause:g} s" if pause else ""), file=sys.stderr, flush=True)
        self._spawn_at = time.monotonic() + pause
        return None

    def _failed_boot(self, worker: _Child, code: int, how: str) -> int | None:
        if self.workers_started == 1:
            # The first start: the worker printed why (a start-up error is exit status 2).
            if code != BOOT_FAILED:
                print(f"jido-kg: error: the worker process {how} before serving",
                      file=sys.stderr, flush=True)
            return code if code > 0 else 1
        self._boot_failures += 1
        if self._boot_failures >= _MAX_BOOT_FAILURES:
            print(f"jido-kg: error: {self._boot_failures} new workers in a row could not "
                  "start; stopping", file=sys.stderr, flush=True)
            return 1
        pause = min(_FIRST_PAUSE * 2 ** self._boot_failures, _MAX_PAUSE)
        print(f"jido-kg: worker {worker.pid} {how} before serving; trying again in {pause:g} s",
              file=sys.stderr, flush=True)
        self._spawn_at = time.monotonic() + pause
        return None

    def _kill_now(self) -> None:
        """On the way out: no worker may outlive the supervisor."""
        if self.worker is not None:
            _kill(self.worker.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.worker.pid, 0)
            with contextlib.suppress(OSError):
                os.close(self.worker.channel)
            self.worker = None


def supervise(settings: Settings, listener: socket.socket) -> int:
    """Run `jido-kg serve`'s supervisor on a bound socket; returns the exit status."""
    try:
        return Supervisor(settings, listener).run()
    finally:
        listener.close()


def _kill(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _wake_only(signum: int, frame: FrameType | None) -> None:
    """SIGCHLD's handler: the wake-up file descriptor is what matters."""
