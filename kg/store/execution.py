"""Running user queries safely: big-stack workers, a deadline, a row cap and a runaway bound.

pyoxigraph cannot cancel a query and aborts the process if a result is iterated in another
thread, so a query *and its serialisation* run together in one thread: the caller's own
(`query_here`) or a worker (`query`). A small result comes back whole, so its status is known
before the first byte; a large one streams as it is serialised (kg.store.serialisation), from a
worker through a short queue (kg.store.channel). Streaming results are cancelled at the
deadline (the output sink raises on its next 8 KiB chunk); evaluation that never yields (ORDER
BY, aggregates, updates) keeps its worker until it ends by itself, and counts as a *runaway*
meanwhile: beyond `max_runaway` of them new work is refused at once with
StoreUnavailableError (503), so the server keeps answering. A runaway still running
`runaway_grace` seconds past its deadline is reported to `on_stuck` with its caller (the
`CALLER` context variable when it was submitted): only ending the process stops it, and the
server replaces its worker process then (api/worker.py).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from functools import partial
from typing import Any, Generic, TypeVar

from pyoxigraph import BlankNode, NamedNode, RdfFormat

from kg.errors import KgError, QueryTimeoutError, StoreError, StoreUnavailableError
from kg.store.base import GraphName, Store
from kg.store.channel import Channel
from kg.store.serialisation import Cancelled as _Cancelled
from kg.store.serialisation import (
    QueryOutput,
    ResultFormats,
    ResultTooLargeError,
    Sink,
    Spill,
    serialise,
    upstream_failure,
)
from kg.store.watchdog import Watchdog

__all__ = [
    "CALLER",
    "WORKER_STACK_BYTES",
    "QueryExecutor",
    "QueryOutput",
    "ResultFormats",
    "ResultTooLargeError",
]

T = TypeVar("T")

# pyoxigraph parses and evaluates recursively on the calling thread's stack (virtual memory,
# reserved not resident); 256 MiB lets legal deep queries through where 8 MiB would segfault.
WORKER_STACK_BYTES = 256 * 1024 * 1024

# Who the work submitted in this context is charged to if it runs away (set per request by the
# server's runaway budget, api/budget.py); None: nobody (internal work).
CALLER: ContextVar[str | None] = ContextVar("kg_runaway_caller", default=None)

class _Task(Generic[T]):
    """One piece of store work: what runs, its deadline, and how it ended."""

    __slots__ = ("caller", "cancelled", "deadline", "error", "finished", "fn", "is_done",
                 "result", "runaway", "started")

    def __init__(self, fn: Callable[[_Task[T]], T], deadline: float, *,
                 caller: str | None, started: bool = False) -> None:
        self.fn, self.deadline = fn, deadline
        self.caller = caller  # CALLER when submitted
        # A bare lock, held until the task ends: cheaper to wait on than an Event (no Condition).
        self.finished = threading.Lock()
        self.finished.acquire()
        self.is_done = False
        self.started = started
        self.cancelled = False
        self.runaway = False
        self.result: T | None = None
        self.error: BaseException | None = None


class QueryExecutor:
    """A bounded pool of big-stack worker threads that run store work under a deadline."""

    def __init__(self, store: Store, *, workers: int, max_runaway: int,
                 stack_bytes: int = WORKER_STACK_BYTES) -> None:
        self.store = store
        self.max_runaway = max_runaway
        self._size = workers + max_runaway
        self._stack_bytes = stack_bytes
        self._queue: queue.SimpleQueue[_Task[Any] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._runaways = 0
        self._watchdog = Watchdog()
        # Set by the server: told (caller) of a runaway still running this long past deadline.
        self.runaway_grace: float | None = None
        self.on_stuck: Callable[[str | None], object] | None = None
        self._runaway_threads: set[int] = set()

    @property
    def runaways(self) -> int:
        """How many timed-out tasks are still running."""
        return self._runaways

    @property
    def runaway_threads(self) -> frozenset[int]:
        """Idents of callers' threads running a runaway themselves (`query_here`)."""
        return frozenset(self._runaway_threads)

    def _watch_stuck(self, task: _Task[Any]) -> None:
        """After a task became a runaway: tell `on_stuck` if it still runs after the grace."""
        grace, report = self.runaway_grace, self.on_stuck
        if grace is None or report is None:
            return

        def stuck() -> None:
            with self._lock:
                if task.is_done:
                    return
            report(task.caller)

        self._watchdog.watch(task.deadline + grace, stuck)

    def query(
        self,
        sparql: str,
        *,
        formats: ResultFormats,
        timeout: float,
        max_rows: int,
        default_graph: Sequence[GraphName] | None = None,
        named_graphs: Sequence[NamedNode | BlankNode] | None = None,
        base_iri: str | None = None,
    ) -> QueryOutput:
        """Run a query and serialise its result in one worker; raise on timeout or too many rows.

        A result larger than SPILL_BYTES comes back `streamed`, its body in `chunks` as the
        worker serialises it: an error past that point ends the chunks with a cut marker and
        raises from them (close them to stop the worker).
        """
        channel = Channel()
        work = self._query_work(sparql, formats, max_rows, default_graph, named_graphs, base_iri,
                                channel=channel)
        return self._streamed(work, channel, timeout)

    def _streamed(self, work: Callable[[_Task[QueryOutput]], QueryOutput], channel: Channel,
                  timeout: float) -> QueryOutput:
        """Run `work` in a worker; its output whole, or streamed once it outgrows SPILL_BYTES."""
        task = self._submit(work, timeout)

        def abandon() -> BaseException | None:
            try:
                self._give_up(task, timeout)
            except KgError as exc:
                return exc
            return None

        def outcome() -> BaseException | None:
            task.finished.acquire()  # released at once: the work has ended
            try:
                self._outcome(task, timeout)
            except BaseException as exc:  # handed to the reader, which raises it
                return exc
            return None

        head = channel.first(task.deadline, abandon=abandon)
        if head is None:
            task.finished.acquire()
            return self._outcome(task, timeout)
        chunks = channel.chunks(head, task.deadline, abandon=abandon, outcome=outcome)
        return QueryOutput(head.kind, head.format, b"", streamed=True, chunks=chunks)

    def query_here(
        self,
        sparql: str,
        *,
        formats: ResultFormats,
        timeout: float,
        max_rows: int,
        on_overrun: Callable[[QueryTimeoutError], object],
        default_graph: Sequence[GraphName] | None = None,
        named_graphs: Sequence[NamedNode | BlankNode] | None = None,
        base_iri: str | None = None,
        spill: Spill | None = None,
    ) -> QueryOutput | None:
        """`query` in the calling thread, with no hand-off to a worker.

        If the query is still running at its deadline, the watchdog counts it as a runaway and
        calls `on_overrun` (from its own thread) to answer for it; the call then returns None
        once the query ends by itself, and its result must be dropped. With `spill`, a result
        larger than SPILL_BYTES goes there as it is serialised and comes back `streamed`.
        """
        self._check_runaways()
        task: _Task[QueryOutput] = _Task(_unused, time.monotonic() + timeout,
                                         caller=CALLER.get(), started=True)
        thread = threading.get_ident()

        def overrun() -> None:
            with self._lock:
                if task.is_done:
                    return
                task.cancelled = task.runaway = True
                self._runaways += 1
                self._runaway_threads.add(thread)
            self._watch_stuck(task)
            on_overrun(_late(timeout))

        ticket = self._watchdog.watch(task.deadline, overrun)
        try:
            task.result = self._evaluate(task, sparql, formats, max_rows, default_graph,
                                         named_graphs, base_iri, spill)
        except _Cancelled:
            task.error = _late(timeout)  # made here: an error per query costs ~5 % of a small one
        finally:
            self._watchdog.release(ticket)
            with self._lock:
                task.is_done = True
                if task.runaway:
                    self._runaways -= 1
                    self._runaway_threads.discard(thread)
        if task.runaway:
            return None
        if task.error is not None:
            raise task.error
        return task.result

    def _query_work(
        self,
        sparql: str,
        formats: ResultFormats,
        max_rows: int,
        default_graph: Sequence[GraphName] | None,
        named_graphs: Sequence[NamedNode | BlankNode] | None,
        base_iri: str | None,
        *,
        channel: Channel,
    ) -> Callable[[_Task[QueryOutput]], QueryOutput]:
        def work(task: _Task[QueryOutput]) -> QueryOutput:
            try:
                return self._evaluate(task, sparql, formats, max_rows, default_graph,
                                      named_graphs, base_iri, channel.spill(task))
            finally:
                channel.end(task)

        return work

    def _evaluate(self, task: _Task[QueryOutput], sparql: str, formats: ResultFormats,
                  max_rows: int, default_graph: Sequence[GraphName] | None,
                  named_graphs: Sequence[NamedNode | BlankNode] | None, base_iri: str | None,
                  spill: Spill | None) -> QueryOutput:
        """Run a query and serialise its result, in the calling thread."""
        try:
            result = self.store.query(sparql, default_graph=default_graph,
                                      named_graphs=named_graphs, base_iri=base_iri)
        except StoreError as exc:  # ASK evaluates in query(): SERVICE fails here
            raise (upstream_failure(exc, sparql) or exc) from None
        return serialise(result, formats, task, cap=max_rows, sparql=sparql, spill=spill)

    def dump(self, graph: GraphName | None, *, format: RdfFormat,
             timeout: float) -> QueryOutput:
        """Serialise one graph (None: the whole dataset) in a worker, cancelled at the deadline;
        streamed like a query's result once it outgrows SPILL_BYTES."""
        channel = Channel()

        def work(task: _Task[QueryOutput]) -> QueryOutput:
            try:
                sink = Sink(task, "graph", format, cap=0, spill=channel.spill(task))
                self.store.dump(sink, format=format, from_graph=graph)  # type: ignore[arg-type]
                return sink.finish()
            finally:
                channel.end(task)

        return self._streamed(work, channel, timeout)

    def update(self, sparql: str, *, timeout: float, base_iri: str | None = None) -> None:
        """Run an update in a worker (it cannot be cancelled: a 504 does not undo it)."""
        self.call(partial(_update, self.store, sparql, base_iri), timeout=timeout)

    def call(self, fn: Callable[[], T], *, timeout: float) -> T:
        """Run `fn()` in a worker (big stack, deadline, runaway bound) and return its result."""
        return self._run(lambda task: fn(), timeout=timeout)

    def _run(self, fn: Callable[[_Task[T]], T], *, timeout: float) -> T:
        task = self._submit(fn, timeout)
        if not task.finished.acquire(timeout=timeout):
            self._give_up(task, timeout)
        return self._outcome(task, timeout)

    def _check_runaways(self) -> None:
        """Refuse new work (503) while too many runaways still hold threads."""
        if self._runaways >= self.max_runaway:
            raise StoreUnavailableError(
                f"{self._runaways} earlier queries ran past their time limit and are still "
                "running; retry later",
                details={"runaway_queries": self._runaways, "retry_after": 5},
            )

    def _submit(self, fn: Callable[[_Task[T]], T], timeout: float) -> _Task[T]:
        """Queue `fn` for a worker, unless too many runaways still hold workers (503)."""
        self._check_runaways()
        task: _Task[T] = _Task(fn, time.monotonic() + timeout, caller=CALLER.get())
        self._ensure_workers()
        self._queue.put(task)
        return task

    def _give_up(self, task: _Task[Any], timeout: float) -> None:
        """The deadline passed: cancel the task, count it as a runaway if it runs; raise."""
        with self._lock:
            if task.is_done:  # it ended just now: its outcome stands
                return
            task.cancelled = True
            if task.started:
                task.runaway = True
                self._runaways += 1
        if task.started:
            self._watch_stuck(task)
        if not task.started:
            raise StoreUnavailableError(
                "every query worker is busy; retry later", details={"retry_after": 1}
            )
        raise _late(timeout)

    @staticmethod
    def _outcome(task: _Task[T], timeout: float) -> T:
        """The finished task's result, or its error (a cancelled serialisation is a timeout)."""
        if task.error is not None:
            if isinstance(task.error, _Cancelled):
                raise _late(timeout)
            raise task.error
        return task.result  # type: ignore[return-value]

    def close(self) -> None:
        """Stop idle workers (a worker busy with a runaway ends when its query does)."""
        for _ in self._threads:
            self._queue.put(None)

    def _ensure_workers(self) -> None:
        if len(self._threads) >= self._size:
            return
        with self._lock:
            previous = threading.stack_size(self._stack_bytes)
            try:
                while len(self._threads) < self._size:
                    worker = threading.Thread(target=self._work, name="kg-query", daemon=True)
                    worker.start()
                    self._threads.append(worker)
            finally:
                threading.stack_size(previous)

    def _work(self) -> None:
        while True:
            task = self._queue.get()
            if task is None:
                return
            with self._lock:
                if task.cancelled:
                    continue
                task.started = True
            try:
                task.result = task.fn(task)
            except BaseException as exc:  # handed to the waiting request thread
                # The traceback's frames hold the pyoxigraph result, which must be dropped in
                # this thread (pyo3 refuses to drop it elsewhere): keep the exception only.
                exc.__context__ = exc.__cause__ = None
                task.error = exc.with_traceback(None)
                del exc
            with self._lock:
                task.is_done = True
                task.finished.release()
                if task.runaway:
                    self._runaways -= 1


def _unused(task: _Task[Any]) -> Any:
    """The `fn` of a task run by its caller (`query_here`): never called."""
    raise AssertionError("query_here runs its work itself")


def _late(timeout: float) -> QueryTimeoutError:
    """The error of work that ran past its time limit."""
    return QueryTimeoutError(
        f"the query ran longer than its {timeout:g} s time limit",
        details={"timeout_seconds": timeout},
    )


def _update(store: Store, sparql: str, base_iri: str | None) -> None:
    try:
        store.update(sparql, base_iri=base_iri)
    except StoreError as exc:  # a LOAD that could not fetch is the remote's failure (502)
        raise (upstream_failure(exc, sparql) or exc) from None
