"""Running user queries safely: big-stack workers, a deadline, a row cap and a runaway bound.

pyoxigraph cannot cancel a query and aborts the process if a result is iterated in another
thread, so a query *and its serialisation* run together in one worker thread and the caller
only waits for the finished bytes. That decides the HTTP status before the first byte is sent.
Streaming results are cancelled at the deadline (the output sink raises on its next 8 KiB
chunk); evaluation that never yields (ORDER BY, aggregates, updates) keeps its worker until it
ends by itself, and counts as a *runaway* meanwhile: beyond `max_runaway` of them new work is
refused at once with StoreUnavailableError (503), so the server keeps answering.
"""

from __future__ import annotations

import io
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, Generic, Literal, TypeVar

import pyoxigraph
from pyoxigraph import (
    BlankNode,
    NamedNode,
    QueryBoolean,
    QueryResultsFormat,
    QuerySolutions,
    RdfFormat,
)

from kg.errors import QueryTimeoutError, StoreUnavailableError, ValidationError
from kg.store.base import GraphName, Store
from kg.store.watchdog import Watchdog

__all__ = [
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

# How each SPARQL results format marks a row, to count rows without a Python loop per row.
# JSON: the '},{' between two solutions (a literal that contains '},{' over-counts, which can
# only refuse early); XML: '<result>' ('<' is escaped in text); CSV/TSV: one line per row.
_ROW_MARKERS: dict[QueryResultsFormat, tuple[bytes, int]] = {
    QueryResultsFormat.JSON: (b"},{", 1),
    QueryResultsFormat.XML: (b"<result>", 0),
    QueryResultsFormat.CSV: (b"\n", -1),
    QueryResultsFormat.TSV: (b"\n", -1),
}


class ResultTooLargeError(ValidationError):
    """A result with more rows than the server serves (add LIMIT, or page with OFFSET)."""

    code = "result_too_large"


class _Cancelled(Exception):
    """Raised inside the output sink to stop a serialisation whose caller gave up."""


@dataclass(frozen=True, slots=True)
class ResultFormats:
    """The negotiated output formats: one for SELECT/ASK results, one for graphs (None = 406)."""

    solutions: QueryResultsFormat | None
    graph: RdfFormat | None


@dataclass(frozen=True, slots=True)
class QueryOutput:
    """A fully serialised query result."""

    kind: Literal["boolean", "solutions", "graph"]
    format: QueryResultsFormat | RdfFormat
    body: bytes


@dataclass(eq=False)
class _Task(Generic[T]):
    fn: Callable[[_Task[T]], T]
    deadline: float
    # A bare lock, held until the task ends: cheaper to wait on than an Event (no Condition).
    finished: threading.Lock = field(default_factory=threading.Lock)
    is_done: bool = False

    def __post_init__(self) -> None:
        self.finished.acquire()
    started: bool = False
    cancelled: bool = False
    runaway: bool = False
    result: T | None = None
    error: BaseException | None = None


class _Sink(io.RawIOBase):
    """A write-only buffer that counts rows and stops serialisation on cancel or deadline."""

    def __init__(self, task: _Task[Any], *, marker: bytes | None, offset: int, cap: int) -> None:
        super().__init__()
        self._task, self._marker, self._cap = task, marker, cap
        self.rows = offset
        self._tail = b""
        self.buffer = io.BytesIO()

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        if self._task.cancelled or time.monotonic() > self._task.deadline:
            raise _Cancelled
        if self._marker is not None:
            self.rows += (self._tail + chunk).count(self._marker)
            self._tail = chunk[-(len(self._marker) - 1) :] if len(self._marker) > 1 else b""
            if self.rows > self._cap:
                raise ResultTooLargeError(
                    f"the result has more than {self._cap} rows; add LIMIT (and page with OFFSET)",
                    details={"max_rows": self._cap},
                )
        self.buffer.write(chunk)
        return len(chunk)


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

    @property
    def runaways(self) -> int:
        """How many timed-out tasks are still running."""
        return self._runaways

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
        """Run a query and serialise its result in one worker; raise on timeout or too many rows."""
        work = self._query_work(sparql, formats, max_rows, default_graph, named_graphs, base_iri)
        return self._run(work, timeout=timeout)

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
    ) -> QueryOutput | None:
        """`query` in the calling thread, with no hand-off to a worker.

        If the query is still running at its deadline, the watchdog counts it as a runaway and
        calls `on_overrun` (from its own thread) to answer for it; the call then returns None
        once the query ends by itself, and its result must be dropped.
        """
        self._check_runaways()
        work = self._query_work(sparql, formats, max_rows, default_graph, named_graphs, base_iri)
        task: _Task[QueryOutput] = _Task(work, time.monotonic() + timeout)
        task.started = True
        late = _late(timeout)

        def overrun() -> None:
            with self._lock:
                if task.is_done:
                    return
                task.cancelled = task.runaway = True
                self._runaways += 1
            on_overrun(late)

        ticket = self._watchdog.watch(task.deadline, overrun)
        try:
            task.result = work(task)
        except _Cancelled:
            task.error = late
        finally:
            self._watchdog.release(ticket)
            with self._lock:
                task.is_done = True
                if task.runaway:
                    self._runaways -= 1
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
    ) -> Callable[[_Task[QueryOutput]], QueryOutput]:
        def work(task: _Task[QueryOutput]) -> QueryOutput:
            result = self.store.query(sparql, default_graph=default_graph,
                                      named_graphs=named_graphs, base_iri=base_iri)
            return _serialise(result, formats, task, max_rows)

        return work

    def dump(self, graph: GraphName | None, *, format: RdfFormat, timeout: float) -> bytes:
        """Serialise one graph (None: the whole dataset) in a worker, cancelled at the deadline."""

        def work(task: _Task[bytes]) -> bytes:
            sink = _Sink(task, marker=None, offset=0, cap=0)
            self.store.dump(sink, format=format, from_graph=graph)  # type: ignore[arg-type]
            return sink.buffer.getvalue()

        return self._run(work, timeout=timeout)

    def update(self, sparql: str, *, timeout: float, base_iri: str | None = None) -> None:
        """Run an update in a worker (it cannot be cancelled: a 504 does not undo it)."""
        self.call(lambda: self.store.update(sparql, base_iri=base_iri), timeout=timeout)

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
        task: _Task[T] = _Task(fn, time.monotonic() + timeout)
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


def _late(timeout: float) -> QueryTimeoutError:
    """The error of work that ran past its time limit."""
    return QueryTimeoutError(
        f"the query ran longer than its {timeout:g} s time limit",
        details={"timeout_seconds": timeout},
    )


def _serialise(result: Any, formats: ResultFormats, task: _Task[Any], cap: int) -> QueryOutput:
    if isinstance(result, QueryBoolean | QuerySolutions):
        if formats.solutions is None:
            raise _not_acceptable("SPARQL results (JSON, XML, CSV or TSV)")
        solutions_format = formats.solutions
        marker, offset = _ROW_MARKERS[solutions_format]
        sink = _Sink(task, marker=None if isinstance(result, QueryBoolean) else marker,
                     offset=offset, cap=cap)
        result.serialize(sink, format=solutions_format)  # type: ignore[arg-type]
        kind: Literal["boolean", "solutions"] = (
            "boolean" if isinstance(result, QueryBoolean) else "solutions"
        )
        return QueryOutput(kind, solutions_format, sink.buffer.getvalue())
    if formats.graph is None:
        raise _not_acceptable("an RDF graph (Turtle, N-Triples, RDF/XML, JSON-LD ...)")
    sink = _Sink(task, marker=None, offset=0, cap=cap)
    pyoxigraph.serialize(islice(result, cap), sink, format=formats.graph)  # type: ignore[arg-type]
    if next(result, None) is not None:
        raise ResultTooLargeError(
            f"the result has more than {cap} triples; add LIMIT",
            details={"max_rows": cap},
        )
    return QueryOutput("graph", formats.graph, sink.buffer.getvalue())


def _not_acceptable(what: str) -> ValidationError:
    # Callers negotiate from the query form before running, so this is a mismatch of theirs.
    return ValidationError(f"this query returns {what}, and no such format was negotiated")
