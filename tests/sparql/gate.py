"""A SPARQL endpoint on loopback whose answer the test holds back: the target of SERVICE calls.

It answers any request with SPARQL JSON results, streamed: its first rows at once, then it
waits for `release` before it sends the last row and ends the document, or (`drop=True`) it
closes the connection there instead, mid-document. A test thereby knows that the server it
calls cannot have produced the last row of a result before the test let it.
"""

from __future__ import annotations

import http.server
import json
import threading
from types import TracebackType

__all__ = ["LAST_ROW", "Gate"]

# The subject of the row the gate sends last.
LAST_ROW = "http://example.org/gate/last"


def _row(subject: str, value: str) -> bytes:
    return json.dumps({"s": {"type": "uri", "value": subject},
                       "p": {"type": "uri", "value": "http://example.org/gate/p"},
                       "o": {"type": "literal", "value": value}}).encode()


class Gate:
    """The endpoint; use it as a context manager (it is released and stopped on exit)."""

    def __init__(self, *, rows: int = 10, drop: bool = False, wait: float = 60.0) -> None:
        self.release = threading.Event()
        self.requested = threading.Event()
        self.released_in_time: bool | None = None  # whether `release` came within `wait`
        gate = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                self._answer()

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self._answer()

            def _answer(self) -> None:
                gate.requested.set()
                self.send_response(200)
                self.send_header("Content-Type", "application/sparql-results+json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                first = b",".join(_row(f"http://example.org/gate/s{i}", f"g{i}")
                                  for i in range(rows))
                self._chunk(b'{"head":{"vars":["s","p","o"]},"results":{"bindings":[' + first)
                gate.released_in_time = gate.release.wait(wait)
                if drop:
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                self._chunk(b"," + _row(LAST_ROW, "last") + b"]}}")
                self._chunk(b"")

            def _chunk(self, data: bytes) -> None:
                self.wfile.write(b"%X\r\n%b\r\n" % (len(data), data))
                self.wfile.flush()

            def log_message(self, *args: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The endpoint's URL."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/sparql"

    def __enter__(self) -> Gate:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()
