"""A streamed result's way from the worker thread that serialises it to the thread that sends it.

pyoxigraph results must be iterated in the thread that ran the query, so a query run by a
worker streams through a short queue: the worker puts chunks (and waits while the queue is
full, which bounds memory to a few chunks), the request thread takes them. Both sides keep to
the query's deadline; closing the receiving end cancels the worker at its next chunk.
"""

from __future__ import annotations

import contextlib
import queue
import time
from collections.abc import Callable
from typing import Final

from kg.store.serialisation import Cancelled, Chunks, QueryOutput, Spill, Watched, cut_marker

__all__ = ["Channel"]

# Chunks (of about 64 KiB) waiting between the two threads at most.
_DEPTH = 4
# How often a worker waiting for room looks whether it should give up.
_POLL_SECONDS = 0.05
_END: Final = object()

# Give up on the work (cancel it): its error, or None if it had ended just now.
Abandon = Callable[[], BaseException | None]
# Wait for the ended work: its error, or None if it succeeded.
Outcome = Callable[[], BaseException | None]


class Channel:
    """A bounded queue of chunks from one worker to one reader."""

    def __init__(self) -> None:
        self._queue: queue.Queue[object] = queue.Queue(_DEPTH)

    # -- the worker's side ----------------------------------------------------------------------

    def spill(self, watched: Watched) -> Spill:
        """The sink's spill: the head goes first, the chunks after it."""

        def begin(head: QueryOutput) -> Callable[[bytes], object]:
            self._put(head, watched)
            return lambda data: self._put(data, watched)

        return begin

    def end(self, watched: Watched) -> None:
        """Say that the work ended (its outcome is the task's); never raises."""
        with contextlib.suppress(Cancelled):  # nobody reads any more
            self._put(_END, watched)

    def _put(self, item: object, watched: Watched) -> None:
        while True:
            try:
                self._queue.put(item, timeout=_POLL_SECONDS)
                return
            except queue.Full:
                if watched.cancelled or time.monotonic() > watched.deadline:
                    raise Cancelled from None

    # -- the reader's side ----------------------------------------------------------------------

    def first(self, deadline: float, *, abandon: Abandon) -> QueryOutput | None:
        """The head of a streamed result; None once the work ended without streaming."""
        item = _take(self._queue, deadline, abandon)
        if isinstance(item, BaseException):
            raise item
        if item is _END or item is None:
            return None
        assert isinstance(item, QueryOutput)
        return item

    def chunks(self, head: QueryOutput, deadline: float, *, abandon: Abandon,
               outcome: Outcome) -> Chunks:
        """The whole body of a streamed result, from its head on (close it to stop the work)."""
        return _Chunks(self._queue, head.body, deadline, abandon, outcome)


class _Chunks:
    """An iterator over the body's chunks: an error ends it with `cut_marker`, then raises."""

    def __init__(self, source: queue.Queue[object], first: bytes, deadline: float,
                 abandon: Abandon, outcome: Outcome) -> None:
        self._source, self._deadline = source, deadline
        self._abandon, self._outcome = abandon, outcome
        self._next: bytes | None = first
        self._error: BaseException | None = None
        self._done = False

    def __iter__(self) -> _Chunks:
        return self

    def __next__(self) -> bytes:
        if self._next is not None:
            data, self._next = self._next, None
            return data
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        if self._done:
            raise StopIteration
        item = _take(self._source, self._deadline, self._abandon)
        if isinstance(item, bytes):
            return item
        if isinstance(item, BaseException):
            return self._cut(item)
        failure = self._outcome()  # the work ended (its end, or nothing left behind it)
        if failure is not None:
            return self._cut(failure)
        self._done = True
        raise StopIteration

    def _cut(self, error: BaseException) -> bytes:
        self._done = True
        self._error = error
        return cut_marker(error)

    def close(self) -> None:
        """Stop reading: the worker is cancelled at its next chunk (a no-op once ended)."""
        if not self._done:
            self._done = True
            self._abandon()


def _take(source: queue.Queue[object], deadline: float, abandon: Abandon) -> object:
    """The next item; at the deadline the work is abandoned: its error, or None once ended."""
    try:
        return source.get(timeout=max(0.0, deadline - time.monotonic()))
    except queue.Empty:  # nothing came before the deadline: evaluation is stuck
        pass
    error = abandon()
    if error is not None:
        return error
    try:  # it ended just now: whatever it left is already queued
        return source.get_nowait()
    except queue.Empty:
        return None
