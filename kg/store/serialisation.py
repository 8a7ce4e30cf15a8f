"""Serialising a query result: whole when small, streamed when large, and cut detectably.

pyoxigraph serialises (in Rust) into a `Sink`. Up to `SPILL_BYTES` the sink keeps what it gets,
so a small result is answered whole and its status is decided after its last byte. A larger one
*spills*: the sink hands its bytes to the caller's `Spill` (which sends a 200 head) and passes
on every `FLUSH_BYTES` as they come, so memory stays bounded whatever the size of the result.
An error after the spill (row cap, deadline, a failed SERVICE fetch) cannot change the status
any more: whoever ends the body writes `cut_marker` and leaves the body unfinished
(docs/sparql.md, "Large results").
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import chain, islice
from typing import Any, Literal, Protocol

import pyoxigraph
from pyoxigraph import QueryBoolean, QueryResultsFormat, QuerySolutions, RdfFormat

from kg.errors import KgError, StoreError, UpstreamError, ValidationError
from kg.store.lexer import mentions_keyword

__all__ = [
    "FLUSH_BYTES",
    "SPILL_BYTES",
    "Cancelled",
    "Chunks",
    "QueryOutput",
    "ResultFormats",
    "ResultTooLargeError",
    "Sink",
    "Spill",
    "Watched",
    "cut_marker",
    "serialise",
    "upstream_failure",
]

# A result up to this size is answered whole (Content-Length, gzip when asked); a larger one
# streams. 64 KiB takes pyoxigraph well under a millisecond, so the first byte is not delayed.
SPILL_BYTES = 64 * 1024
# Once streaming, bytes go out in pieces of about this size (pyoxigraph writes 8 KiB at a time:
# one send per 8 KiB would cost a system call and a GIL hand-over each).
FLUSH_BYTES = 64 * 1024

# How each SPARQL results format marks a row, to count rows without a Python loop per row.
# JSON: the '},{' between two solutions (a literal that contains '},{' over-counts, which can
# only refuse early); XML: '<result>' ('<' is escaped in text); CSV/TSV: one line per row.
_ROW_MARKERS: dict[QueryResultsFormat, tuple[bytes, int]] = {
    QueryResultsFormat.JSON: (b"},{", 1),
    QueryResultsFormat.XML: (b"<result>", 0),
    QueryResultsFormat.CSV: (b"\n", -1),
    QueryResultsFormat.TSV: (b"\n", -1),
}
# Characters that could close or continue a document's structure are left out of the marker.
_UNSAFE = re.compile(r"[\"'<>{}\[\]\\&#\r\n]+")


class ResultTooLargeError(ValidationError):
    """A result with more rows than the server serves (add LIMIT, or page with OFFSET)."""

    code = "result_too_large"


class Cancelled(Exception):
    """Raised inside the sink to stop a serialisation: its deadline passed, or nobody reads it."""


class Chunks(Iterator[bytes], Protocol):
    """A streamed body's chunks; closing them stops the work that produces them."""

    def close(self) -> None:
        """Stop reading (a no-op once they ended)."""


class Watched(Protocol):
    """What a sink reads of the work it serves: whether it was cancelled, and its deadline."""

    cancelled: bool
    deadline: float


@dataclass(frozen=True, slots=True)
class ResultFormats:
    """The negotiated output formats: one for SELECT/ASK results, one for graphs (None = 406)."""

    solutions: QueryResultsFormat | None
    graph: RdfFormat | None


@dataclass(slots=True)  # not frozen: one per query, and a frozen one takes 600 ns to make, not 150
class QueryOutput:
    """A serialised query result.

    `body` is all of it unless `streamed`: then the body went to the caller's `Spill` (in the
    thread that ran the query), or `chunks` yields it (from the worker that runs the query).
    """

    kind: Literal["boolean", "solutions", "graph"]
    format: QueryResultsFormat | RdfFormat
    body: bytes
    streamed: bool = False
    chunks: Chunks | None = None


# Called once, when a result outgrows SPILL_BYTES, with its kind, format and first bytes (the
# head goes out then); returns where the rest of the body goes.
Spill = Callable[[QueryOutput], Callable[[bytes], object]]


class Sink:
    """Where pyoxigraph writes: counts rows, stops at cancel or deadline, holds or passes on.

    A plain object with `write` and `flush`, which is all pyoxigraph calls: an io.RawIOBase
    subclass costs a finaliser and a copy per result, 9 µs of a 28 µs point query (measured,
    docs/benchmarks/sparql.md).
    """

    __slots__ = (
        "_cap",
        "_format",
        "_held",
        "_kind",
        "_marker",
        "_send",
        "_size",
        "_spill",
        "_tail",
        "_watched",
        "rows",
    )

    def __init__(self, watched: Watched, kind: Literal["boolean", "solutions", "graph"],
                 format: QueryResultsFormat | RdfFormat, *, cap: int,
                 rows: tuple[bytes, int] | None = None, spill: Spill | None = None) -> None:
        self._watched, self._kind, self._format = watched, kind, format
        self._marker: bytes | None = rows[0] if rows is not None else None
        self.rows = rows[1] if rows is not None else 0
        self._cap, self._spill = cap, spill
        self._tail = b""
        self._held: list[bytes] = []  # pyoxigraph hands over bytes objects: kept, not copied
        self._size = 0
        self._send: Callable[[bytes], object] | None = None

    def write(self, data: bytes) -> int:
        """Take one piece of the serialisation (pyoxigraph writes up to 8 KiB at a time)."""
        watched = self._watched
        if watched.cancelled or time.monotonic() > watched.deadline:
            raise Cancelled
        marker = self._marker
        if marker is not None:
            self.rows += data.count(marker)
            if self._tail:  # a marker split across two writes
                self.rows += (self._tail + data[:len(marker) - 1]).count(marker)
            self._tail = data[1 - len(marker):] if len(marker) > 1 else b""
            if self.rows > self._cap:
                raise _too_large(self._cap, "rows")
        self._held.append(data)
        self._size += len(data)
        if self._spill is not None and self._size >= (
                FLUSH_BYTES if self._send is not None else SPILL_BYTES):
            self._pass_on()
        return len(data)

    def flush(self) -> None:
        """Nothing to do: what is held goes on at `SPILL_BYTES`/`FLUSH_BYTES` or at `finish`."""

    def finish(self) -> QueryOutput:
        """The output once pyoxigraph is done: the whole body, or (streamed) its last bytes sent."""
        if self._send is None:
            return QueryOutput(self._kind, self._format, b"".join(self._held))
        if self._held:
            self._pass_on()
        return QueryOutput(self._kind, self._format, b"", streamed=True)

    def _pass_on(self) -> None:
        data = b"".join(self._held)
        self._held.clear()
        self._size = 0
        try:
            if self._send is None:
                assert self._spill is not None
                self._send = self._spill(QueryOutput(self._kind, self._format, data))
            else:
                self._send(data)
        except Cancelled:
            raise
        except Exception:  # the receiver is gone (the client closed): nobody reads on
            raise Cancelled from None


def serialise(result: Any, formats: ResultFormats, watched: Watched, *, cap: int,
              sparql: str = "", spill: Spill | None = None) -> QueryOutput:
    """Serialise a pyoxigraph query result into a sink (see the module docstring)."""
    try:
        if isinstance(result, QuerySolutions):
            solutions_format = _solutions_format(formats)
            sink = Sink(watched, "solutions", solutions_format, cap=cap, spill=spill,
                        rows=_ROW_MARKERS[solutions_format])
            result.serialize(sink, format=solutions_format)  # type: ignore[arg-type]
        elif isinstance(result, QueryBoolean):
            solutions_format = _solutions_format(formats)
            sink = Sink(watched, "boolean", solutions_format, cap=cap)
            result.serialize(sink, format=solutions_format)  # type: ignore[arg-type]
        else:
            if formats.graph is None:
                raise _not_acceptable("an RDF graph (Turtle, N-Triples, RDF/XML, JSON-LD ...)")
            sink = Sink(watched, "graph", formats.graph, cap=cap, spill=spill)
            # The overflow check is entered once, after `cap` triples, and raises inside
            # pyoxigraph's serialiser: a streamed document is then cut before its end, never
            # closed as if complete.
            triples = chain(islice(result, cap), _overflow(result, cap))
            pyoxigraph.serialize(triples, sink, format=formats.graph)  # type: ignore[arg-type]
    except (OSError, RuntimeError, SyntaxError) as exc:  # evaluation's: the sink raises none
        failure = upstream_failure(exc, sparql)
        if failure is not None:
            raise failure from None
        if isinstance(exc, OSError):
            raise StoreError(f"the store failed while reading the result: {exc}") from None
        raise
    return sink.finish()


def _solutions_format(formats: ResultFormats) -> QueryResultsFormat:
    if formats.solutions is None:
        raise _not_acceptable("SPARQL results (JSON, XML, CSV or TSV)")
    return formats.solutions


def _overflow(result: Iterator[Any], cap: int) -> Iterator[Any]:
    if next(result, None) is not None:
        raise _too_large(cap, "triples")
    yield from ()


def upstream_failure(error: BaseException, sparql: str) -> UpstreamError | None:
    """The 502 for a failure of text that fetches (SERVICE, LOAD), else None.

    pyoxigraph raises OSError both for a failed fetch and for its own storage, and while a
    result is read, RuntimeError or SyntaxError for a remote answer cut short or malformed:
    only text that can fetch at all turns them into an upstream error. A StoreError raised
    from an OSError (kg.store.embedded) counts as that OSError.
    """
    cause = error if isinstance(error, OSError | RuntimeError | SyntaxError) else None
    if type(error) is StoreError and isinstance(error.__context__, OSError):
        cause = error.__context__
    if cause is None or not mentions_keyword(sparql, "SERVICE", "LOAD"):
        return None
    return UpstreamError(f"fetching from a remote (SERVICE or LOAD) failed: {cause}",
                         details={"reason": str(cause)})


def cut_marker(error: BaseException) -> bytes:
    """The last bytes of a body cut short: lines no result format takes (CSV aside), saying why.

    The document is unfinished before them (no closing bracket or tag). The first line holds no
    character that could close or quote anything and is a syntax error in JSON, Turtle, TriG,
    N-Triples, N-Quads and TSV; the second, an end tag that matches no element, in XML (SPARQL
    XML results, RDF/XML), even inside the text of an element.
    """
    if isinstance(error, KgError):
        reason = f"{error.code}: {error.message}"
    elif isinstance(error, Cancelled):
        reason = "query_timeout: the query ran past its time limit"
    else:
        reason = "internal_error: the result could not be completed"
    reason = _UNSAFE.sub(" ", reason)[:300]
    return (f"\n\n!!! jido-kg: this result is cut short and incomplete ({reason}) !!!\n"
            "</jido-kg-result-cut-short>\n").encode()


def _too_large(cap: int, what: str) -> ResultTooLargeError:
    return ResultTooLargeError(
        f"the result has more than {cap} {what}; add LIMIT (and page with OFFSET)",
        details={"max_rows": cap},
    )


def _not_acceptable(what: str) -> ValidationError:
    # Callers negotiate from the query form before running, so this is a mismatch of theirs.
    return ValidationError(f"this query returns {what}, and no such format was negotiated")
