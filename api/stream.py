"""Query results that stream over HTTP: their headers, gzip on the way, and a cut at an error.

A streamed result has no Content-Length and is gzipped piece by piece when the client takes
gzip (api.transport's after-request hook only compresses whole bodies). Each piece is flushed
so the client can decode what it has; the cut marker of a failed result (kg.store
.serialisation.cut_marker) goes through the same compressor.
"""

from __future__ import annotations

import contextlib
import threading
import zlib
from collections.abc import Callable, Iterator

from flask import Response

from api.bridge import Begin, StreamWriter
from kg.store.serialisation import QueryOutput, cut_marker

__all__ = [
    "FastStream",
    "accepts_gzip",
    "gzip_chunks",
    "result_response",
    "stream_headers",
]

# Level 1, as for whole bodies (api.transport): most of the gain for a fraction of the CPU.
_GZIP_LEVEL = 1
# A streaming thread writes every few milliseconds; one silent this long past the deadline is
# stuck (in evaluation, or on a client that does not read) and its body is cut for it.
_CUT_GRACE_SECONDS = 0.25


def accepts_gzip(accept_encoding: str) -> bool:
    """Whether the client takes gzip (the same test as api.transport's hook)."""
    return "gzip" in accept_encoding.lower()


def stream_headers(media_type: str, *, gzip: bool) -> list[tuple[str, str]]:
    """The headers of a streamed result (no length: it is not known yet)."""
    headers = [("Content-Type", f"{media_type}; charset=utf-8"),
               ("Vary", "Accept, Accept-Encoding")]
    if gzip:
        headers.append(("Content-Encoding", "gzip"))
    return headers


class _Gzip:
    def __init__(self) -> None:
        self._compressor = zlib.compressobj(_GZIP_LEVEL, zlib.DEFLATED, 16 + zlib.MAX_WBITS)

    def piece(self, data: bytes) -> bytes:
        return self._compressor.compress(data) + self._compressor.flush(zlib.Z_SYNC_FLUSH)

    def end(self) -> bytes:
        return self._compressor.flush()


def gzip_chunks(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """The chunks gzipped as they come; closing the result closes `chunks`."""
    gzip = _Gzip()
    try:
        for chunk in chunks:
            yield gzip.piece(chunk)
        yield gzip.end()
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()


class FastStream:
    """A result streamed from the connection's own thread (the fast path) through `Begin`.

    `spill` is the executor's spill: it sends the head. At the deadline the watchdog calls
    `overrun`. Before the head, the caller answers 504 as usual. After it, the streaming thread
    ends the body itself at its next write (`fail`: the cut marker, then the caller closes);
    should it not have within `_CUT_GRACE_SECONDS` (evaluation stuck, or a client that does
    not read), a timer cuts the body (with the marker unless gzipped: the compressor is the
    streaming thread's alone).
    """

    def __init__(self, begin: Begin, media_type: Callable[[QueryOutput], str], *,
                 gzip: bool) -> None:
        self._begin, self._media_type, self._gzips = begin, media_type, gzip
        self._gzip: _Gzip | None = None  # made at the spill: most results never spill
        self._lock = threading.Lock()
        self._writer: StreamWriter | None = None
        self._late = False  # the deadline passed before the head: a 504 goes out instead
        self._ended = False  # the body was cut

    @property
    def started(self) -> bool:
        """Whether the head went out."""
        return self._writer is not None

    def spill(self, head: QueryOutput) -> Callable[[bytes], object]:
        """Send the head and the first bytes; return where the rest goes."""
        with self._lock:
            if self._late:
                raise BrokenPipeError("the request was answered at its deadline")
            headers = stream_headers(self._media_type(head), gzip=self._gzips)
            self._gzip = _Gzip() if self._gzips else None
            self._writer = self._begin(200, headers)
        self.write(head.body)
        return self.write

    def write(self, data: bytes) -> None:
        """Send the next bytes of the body."""
        assert self._writer is not None
        self._writer.write(self._gzip.piece(data) if self._gzip is not None else data)

    def finish(self) -> None:
        """The body is complete (the caller ends it)."""
        if self._gzip is not None:
            assert self._writer is not None
            self._writer.write(self._gzip.end())

    def fail(self, error: BaseException) -> None:
        """In the streaming thread: end the body with the cut marker (best effort)."""
        with self._lock:
            if self._ended:
                return
            self._ended = True
        with contextlib.suppress(Exception):
            self.write(cut_marker(error))

    def overrun(self, error: BaseException) -> bool:
        """From the watchdog: False before the head (answer 504); else see the class docstring."""
        with self._lock:
            if self._writer is None:
                self._late = True
                return False
        timer = threading.Timer(_CUT_GRACE_SECONDS, self._cut, args=(error,))
        timer.daemon = True
        timer.start()
        return True

    def _cut(self, error: BaseException) -> None:
        with self._lock:
            if self._ended:
                return
            self._ended = True
            writer = self._writer
        assert writer is not None
        writer.cut(b"" if self._gzips else cut_marker(error))


def result_response(output: QueryOutput, media_type: str, *, accept_encoding: str) -> Response:
    """The Flask response of a query result: whole, or streamed (and then gzipped here)."""
    if output.chunks is None:
        response = Response(output.body, content_type=f"{media_type}; charset=utf-8")
        response.headers["Vary"] = "Accept"
        return response
    gzip = accepts_gzip(accept_encoding)
    chunks: Iterator[bytes] = gzip_chunks(output.chunks) if gzip else output.chunks
    # direct_passthrough: the after-request hooks must not read (gzip) the whole stream.
    response = Response(chunks, direct_passthrough=True)
    for name, value in stream_headers(media_type, gzip=gzip):
        response.headers[name] = value
    return response
