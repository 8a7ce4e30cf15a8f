"""Hybrid recall through the service after a restart: embeddings come from the project files."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from kg.longterm import LongTermMemory
from kg.memory_service import MemoryService
from kg.recall import KeywordIndex, RecallEngine, wordllama_embedder
from kg.store import EmbeddedStore

CAT = "a cat is napping"  # no word in common with the kitten memory: found by embedding only


def _open(folder: Path, *, check: bool) -> MemoryService:
    """A service over an on-disk store and an index with the offline embedder."""
    store = EmbeddedStore(folder / "store")
    index = KeywordIndex(folder / "store.recall.sqlite", embedder=wordllama_embedder())
    long_term = LongTermMemory(store, listeners=[index])
    engine = RecallEngine(store, long_term, index=index)
    if check:
        engine.ensure_index(progress=False)
    return MemoryService(store, long_term=long_term, recall_engine=engine, owns_store=True)


def _found(service: MemoryService, query: str, **options: object) -> list[str]:
    hits = service.recall("p", query, mode="hybrid", **options)  # type: ignore[arg-type]
    return [hit.memory.content for hit in hits]


def test_first_hybrid_recall_after_a_restart_uses_embeddings(tmp_path: Path) -> None:
    service = _open(tmp_path, check=True)
    kitten = service.remember("p", "The kitten sleeps on the sofa")
    service.remember("p", "Quarterly revenue grew by ten percent")
    service.remember("p", "Deploys run through GitHub Actions")
    service.close()

    # Serving starts before any index check (KG_INDEX_CHECK=background): the very first
    # recall of the project must already see its embeddings, read from the project's file.
    service = _open(tmp_path, check=False)
    try:
        assert _found(service, CAT)[:1] == ["The kitten sleeps on the sofa"]
        before = datetime.now(UTC)
        service.forget("p", kitten.id, reason="the kitten moved out")
        assert "The kitten sleeps on the sofa" not in _found(service, CAT)
        assert _found(service, CAT, as_of=before)[:1] == ["The kitten sleeps on the sofa"]
        service.long_term.purge_memory(kitten.id, project="p")
        service.remember("p", "The puppy naps in its basket")
    finally:
        service.close()

    service = _open(tmp_path, check=False)
    try:
        found = _found(service, "a dog is sleeping")
        assert found[:1] == ["The puppy naps in its basket"]
        assert "The kitten sleeps on the sofa" not in _found(
            service, CAT, as_of=datetime.now(UTC) - timedelta(hours=1))
    finally:
        service.close()
