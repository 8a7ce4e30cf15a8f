"""Runs the app under waitress: one process (the store has one writer), many threads."""

from __future__ import annotations

import logging
import signal
import sys
import threading
from types import FrameType

from waitress.server import create_server

from api.app import create_app
from api.housekeeping import Housekeeper, limit_process_memory
from api.services import close_app
from kg.settings import Settings
from kg.store import Store, open_store

__all__ = ["WORKER_STACK_BYTES", "serve"]

log = logging.getLogger("jido_kg.server")

# pyoxigraph parses recursively on the calling thread's stack; a large reserved stack (virtual
# memory, not resident) keeps deep but legal queries from overflowing it. The nesting guard in
# kg.store.guard rejects the pathological ones before they reach the parser.
WORKER_STACK_BYTES = 256 * 1024 * 1024
HARD_BODY_MARGIN = 1024 * 1024 * 1024


class _Shutdown(KeyboardInterrupt):
    """Raised by the SIGTERM handler; a KeyboardInterrupt so waitress handlers never swallow it."""


def serve(settings: Settings, *, ready: threading.Event | None = None) -> None:
    """Open the store, build the app and serve until SIGINT/SIGTERM, then flush and close."""
    threading.stack_size(WORKER_STACK_BYTES)
    # Before the store's and the server's threads exist (docs/benchmarks/reliability.md).
    limit_process_memory(malloc_arenas=settings.malloc_arena_max,
                         sqlite_heap_mb=settings.sqlite_heap_limit_mb)
    store: Store = open_store(settings)
    try:
        app = create_app(settings, store=store)
        server = create_server(
            app,
            host=settings.host,
            port=settings.port,
            threads=settings.threads,
            ident="jido-kg",
            clear_untrusted_proxy_headers=True,
            # waitress spools a body to a temp file before the app sees it, so the app's own
            # cap (KG_MAX_BODY_BYTES, a JSON 413) decides; this hard cap only bounds the spool.
            # A cap equal to the app's makes waitress cut the connection with a plain-text 413.
            max_request_body_size=settings.max_body_bytes + HARD_BODY_MARGIN,
            # A long GET query must reach the app (for a JSON 400/414), not die in waitress
            # with a plain-text 431; 2 MiB still bounds what one request can hold.
            max_request_header_size=2 * 1024 * 1024,
        )

        def _stop(signum: int, frame: FrameType | None) -> None:
            # Closing sockets under waitress's select() breaks the loop with EBADF; unwinding it
            # with an exception lets the finally-blocks close the server and flush the store.
            raise _Shutdown

        signal.signal(signal.SIGTERM, _stop)
        where = settings.store if settings.in_memory else str(settings.store_path)
        host, port = server.effective_host, server.effective_port  # type: ignore[union-attr]
        print(f"jido-kg serving http://{host}:{port}/ (store: {where})", file=sys.stderr)
        sys.stderr.flush()
        if ready is not None:
            ready.set()
        # Bounds resident memory under writes (docs/benchmarks/reliability.md, memory under soak).
        housekeeper = Housekeeper(store, interval=settings.store_flush_interval).start()
        try:
            server.run()
        except KeyboardInterrupt:
            pass
        finally:
            housekeeper.stop()
            server.close()
            close_app(app)
    finally:
        store.close()
