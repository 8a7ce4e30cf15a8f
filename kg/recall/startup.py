"""The recall side of a service's start-up: the index opened, checked against the store, kept up.

`open_recall` opens the recall index beside the store, long-term memory writing into it and the
recall engine over both, then makes the index fit to serve: rebuilt before serving when it was
made by other code or another embedder, built when new, otherwise repaired and checked against
the store in the background. On a remote store shared by several instances, a catch-up thread
learns of the others' writes.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from kg.longterm import LongTermMemory
from kg.recall.catch_up import IndexCatchUp
from kg.recall.embedding import embedder_of
from kg.recall.engine import RecallEngine, index_location
from kg.recall.keyword_index import KeywordIndex
from kg.settings import Settings
from kg.store import Store

__all__ = ["RECALL_FLUSH_EVERY", "RecallParts", "open_recall"]

log = logging.getLogger(__name__)

# Recall counts are written by the tracker's 5-second timer thread, not by the request that
# fills a batch: a synchronous flush (a store write plus re-indexing) in the middle of context
# assembly was the whole p95 (measured: 41 ms vs a 2.4 ms median).
RECALL_FLUSH_EVERY = 50_000


@dataclass(frozen=True, slots=True)
class RecallParts:
    """What `open_recall` opened: close `catch_up` (if any), `long_term`, then `index`."""

    index: KeywordIndex
    long_term: LongTermMemory
    engine: RecallEngine
    catch_up: IndexCatchUp | None


def open_recall(settings: Settings, store: Store) -> RecallParts:
    """Open the recall index, long-term memory and the engine, the index ready to serve."""
    location = index_location(settings)
    index = KeywordIndex(location, embedder=embedder_of(settings))
    long_term = LongTermMemory(store, listeners=[index], flush_every=RECALL_FLUSH_EVERY)
    engine = RecallEngine(store, long_term, index=index)
    if not index.is_compatible():
        # A whole rebuild (every memory embedded again: minutes for a large store) before
        # serving: say why, as a server starting up would otherwise look hung.
        # The old index's count, not the store's: counting those is a scan (~26 s at 1M).
        log.warning("%s; rebuilding it from the store (%d memories) before serving",
                    _incompatibility(index, location, settings), index.fingerprint().count)
        started = time.monotonic()
        engine.ensure_index(progress=False)
        log.info("recall index rebuilt in %.1f s", time.monotonic() - started)
    elif settings.index_check == "startup" or index.created:
        # A missing index must exist before serving: built in the background, it would hold
        # the index's lock (every recall and write waiting) for minutes at 1M.
        if index.created:
            log.info("recall index %s is new; building it from the store before serving",
                     location or "(in memory)")
        engine.ensure_index(progress=False)
    else:
        # Words left behind (a crash, or an index from before a change of the word fields)
        # are re-indexed from the index's own rows before serving: meanwhile keyword recall
        # would find nothing.
        if engine.repair_text(progress=False):
            log.info("recall index: the words were re-indexed before serving")
        _verify_in_background(engine)
    catch_up = None
    if settings.backend == "remote" and settings.index_catch_up_interval > 0:
        # Other instances write to the same server: learn of their writes while running.
        catch_up = IndexCatchUp(store, long_term, index,
                                interval=settings.index_catch_up_interval)
        catch_up.start()
    return RecallParts(index, long_term, engine, catch_up)


def _verify_in_background(engine: RecallEngine) -> None:
    """Compare an existing index with the store off the start-up path; rebuild if stale."""

    def verify() -> None:
        # Not under the index's lock: the store scan takes ~26 s at 1M memories, and recalls
        # and writes waited for it (the first recall after start-up took 31 s). ensure_index
        # takes the lock itself when the fingerprints differ, to check again and repair.
        try:
            engine.ensure_index(progress=False)
        except Exception:  # a failed check must not take the service down; recall still works
            log.exception("checking the recall index against the store failed")

    threading.Thread(target=verify, name="recall-index-check", daemon=True).start()


def _incompatibility(index: KeywordIndex, location: Path | None, settings: Settings) -> str:
    """Why an existing recall index cannot be used as it is (for the start-up log)."""
    where = f"recall index {location or '(in memory)'}"
    schema, embedder = index.built_with()
    if embedder != index.embedder_name:
        return (f"{where} was built with embedder {embedder or ''!r} but settings "
                f"want {index.embedder_name!r} (KG_EMBEDDER={settings.embedder})")
    return f"{where} has schema {schema!r}, not this code's"
