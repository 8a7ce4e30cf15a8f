"""KG_EMBEDDER: the service's recall index is keyword-only by default (`none`); WordLlama (or
MiniLM) embeddings are an opt-in.

A query that shares no word with a memory (after stemming and stop words) can only be
answered by embeddings: a WordLlama service finds it, the default keyword-only one does not
(its `hybrid` is the keyword ranking, its `semantic` a 400). Changing the setting rebuilds an
existing index from the store at start-up.
"""

from __future__ import annotations

import logging
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pydantic
import pytest
from flask.testing import FlaskClient

from api import create_app
from api.services import close_app
from kg.errors import ValidationError
from kg.memory_service import MemoryService
from kg.recall import embedder_of, index_location
from kg.settings import MEMORY_STORE, Settings
from kg.store import EmbeddedStore
from tests.agent.conftest import READ, TOKENS, WRITE
from tests.conftest import ROOT

KITTEN = "The kitten sleeps on the sofa"
CAT = "a cat is napping"  # no stem in common with any memory below
REVENUE = "Quarterly revenue grew by ten percent"
SALES = "sales went up"  # no stem in common with any memory below
OTHERS = [
    "Deploys run through GitHub Actions",
    "The frontend is written in TypeScript with React",
    "Logs are shipped to Elasticsearch",
    "Invoices are sent on the first day of the month",
]


def _fill(service: MemoryService) -> None:
    for content in (*OTHERS, KITTEN, REVENUE):
        service.remember("p", content)


def _found(service: MemoryService, query: str, *, mode: str = "hybrid") -> list[str]:
    return [hit.memory.content for hit in service.recall("p", query, mode=mode)]


def test_the_default_service_ranks_by_keywords(tmp_path: Path) -> None:
    settings = Settings(store=str(tmp_path / "store"))
    assert settings.embedder == "none" and embedder_of(settings) is None
    with _service(settings) as service:
        _fill(service)
        assert _found(service, "kitten")[:1] == [KITTEN]  # hybrid: the keyword ranking
        assert _found(service, "kitten") == _found(service, "kitten", mode="text")
        assert _found(service, CAT) == []
        with pytest.raises(ValidationError, match="semantic recall needs an embedder"):
            service.recall("p", CAT, mode="semantic")


def test_a_wordllama_service_recalls_by_meaning(tmp_path: Path) -> None:
    # On disk: each write appends to the project's matrix file, so the recall right after it
    # already scans every embedding.
    settings = Settings(store=str(tmp_path / "store"), embedder="wordllama")
    with _service(settings) as service:
        _fill(service)
        assert _found(service, CAT)[:1] == [KITTEN]
        assert _found(service, SALES)[:1] == [REVENUE]
        assert _found(service, "kitten")[:1] == [KITTEN]  # keywords still rank first
        assert _found(service, CAT, mode="text") == []


def test_an_in_memory_service_recalls_by_meaning_right_after_a_write(
        store: EmbeddedStore) -> None:
    """No matrix file to wait for: the recall after a write scans the new embedding too."""
    with _service(Settings(store=MEMORY_STORE, embedder="wordllama"), store=store) as service:
        service.remember("p", OTHERS[0])
        assert _found(service, CAT) == []
        service.remember("p", KITTEN)
        assert _found(service, CAT)[:1] == [KITTEN]


def test_an_unrelated_query_recalls_nothing(tmp_path: Path) -> None:
    """Memories found by meaning alone must be near the query (MIN_HYBRID_COSINE)."""
    with _service(Settings(store=str(tmp_path / "store"), embedder="wordllama")) as service:
        _fill(service)
        assert _found(service, "what is the weather tomorrow") == []
        assert _found(service, "banana smoothie recipe") == []
        assert _found(service, "banana smoothie recipe", mode="semantic") != []  # nearest, any


def test_a_keyword_only_service_cannot(store: EmbeddedStore) -> None:
    with _service(Settings(store=MEMORY_STORE, embedder="none"), store=store) as service:
        _fill(service)
        assert _found(service, CAT) == []
        assert _found(service, SALES) == []
        assert _found(service, "kitten")[:1] == [KITTEN]


def test_semantic_mode_needs_the_embedder(store: EmbeddedStore) -> None:
    with _service(Settings(store=MEMORY_STORE, embedder="none"), store=store) as service:
        _fill(service)
        with pytest.raises(ValidationError, match="semantic recall needs an embedder"):
            service.recall("p", CAT, mode="semantic")
        result = service.execute_tool("recall", {"query": CAT, "mode": "semantic"}, project="p")
        assert result["ok"] is False
        assert "semantic recall needs an embedder" in result["error"]["message"]
    with _service(Settings(store=MEMORY_STORE, embedder="wordllama"), store=store) as service:
        assert _found(service, CAT, mode="semantic")[:1] == [KITTEN]
        result = service.execute_tool("recall", {"query": CAT, "mode": "semantic"}, project="p")
        assert result["ok"] is True
        assert result["result"]["memories"][0]["content"] == KITTEN


def _meta_embedder(settings: Settings) -> str:
    location = index_location(settings)
    assert location is not None
    with sqlite3.connect(location) as db:
        (name,) = db.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
    return str(name)


def _reopen(folder: Path, embedder: Any, caplog: pytest.LogCaptureFixture,
            ) -> tuple[MemoryService, list[str]]:
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="kg.recall.startup"):
        service = MemoryService.open(Settings(store=str(folder / "store"), embedder=embedder))
    return service, [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_changing_the_embedder_rebuilds_the_index(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    service, warnings = _reopen(tmp_path, "none", caplog)
    try:
        assert warnings == []  # a new index: nothing to rebuild
        _fill(service)
    finally:
        service.close()
    settings = Settings(store=str(tmp_path / "store"), embedder="none")
    assert _meta_embedder(settings) == ""

    service, warnings = _reopen(tmp_path, "wordllama", caplog)
    try:
        assert len(warnings) == 1
        assert "was built with embedder '' but settings want 'WordLlamaEmbedder'" in warnings[0]
        assert "rebuilding it from the store (6 memories)" in warnings[0]
        assert service.recall_engine is not None and service.recall_engine.index.is_compatible()
        for content in (*OTHERS, KITTEN, REVENUE):
            assert _found(service, content, mode="text")[:1] == [content]
        assert _found(service, CAT)[:1] == [KITTEN]
        assert _found(service, CAT, mode="semantic")[:1] == [KITTEN]
        service.remember("p", "The puppy rests in its basket")
    finally:
        service.close()
    assert _meta_embedder(settings) == "WordLlamaEmbedder"

    service, warnings = _reopen(tmp_path, "wordllama", caplog)
    try:
        assert warnings == []  # same embedder: served at once, checked in the background
        assert _found(service, "my dog is dozing")[:1] == ["The puppy rests in its basket"]
    finally:
        service.close()

    service, warnings = _reopen(tmp_path, "none", caplog)
    try:
        assert len(warnings) == 1
        assert "was built with embedder 'WordLlamaEmbedder' but settings want ''" in warnings[0]
        for content in (*OTHERS, KITTEN, REVENUE, "The puppy rests in its basket"):
            assert _found(service, content, mode="text")[:1] == [content]
        assert _found(service, CAT) == []
        with pytest.raises(ValidationError, match="semantic recall needs an embedder"):
            service.recall("p", CAT, mode="semantic")
    finally:
        service.close()
    assert _meta_embedder(settings) == ""


def test_a_bad_embedder_setting_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    choices = "Input should be 'wordllama', 'minilm' or 'none'"
    with pytest.raises(pydantic.ValidationError, match=choices):
        Settings(embedder="bogus")  # type: ignore[arg-type]
    monkeypatch.setenv("KG_EMBEDDER", "bogus")
    with pytest.raises(pydantic.ValidationError) as refused:
        Settings()
    assert "embedder\n  Input should be 'wordllama', 'minilm' or 'none'" in str(refused.value)
    assert "input_value='bogus'" in str(refused.value)
    monkeypatch.setenv("KG_EMBEDDER", "none")
    assert embedder_of(Settings()) is None


def test_loading_the_embedder_leaves_logging_alone() -> None:
    # wordllama's import calls logging.basicConfig(level=INFO); in a fresh process, as in a
    # server, the root logger must stay unconfigured (WARNING, no handler) all the same.
    script = ("import logging\n"
              "from kg.memory_service import MemoryService\n"
              "from kg.settings import Settings\n"
              "MemoryService.open(Settings(store=':memory:', embedder='wordllama')).close()\n"
              "import wordllama\n"
              "root = logging.getLogger()\n"
              "print(len(root.handlers), logging.getLevelName(root.level))\n")
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                            text=True, timeout=120, check=True)
    assert result.stdout.split() == ["0", "WARNING"]
    assert result.stderr == ""


@contextmanager
def _service(settings: Settings, **kwargs: Any) -> Iterator[MemoryService]:
    service = MemoryService.open(settings, **kwargs)
    try:
        yield service
    finally:
        service.close()


@contextmanager
def _client(store: str, **settings: Any) -> Iterator[FlaskClient]:
    app = create_app(Settings(store=store, tokens=TOKENS, **settings))
    app.config["TESTING"] = True
    try:
        yield app.test_client()
    finally:
        close_app(app)


def _recall(api: FlaskClient, body: dict[str, Any]) -> Any:
    return api.post("/v1/projects/p/recall", json=body, headers=READ)


def _remember_all(api: FlaskClient) -> None:
    for content in (*OTHERS, KITTEN, REVENUE):
        assert api.post("/v1/projects/p/memories", json={"content": content},
                        headers=WRITE).status_code == 201


def test_http_recall_by_meaning(tmp_path: Path) -> None:
    with _client(str(tmp_path / "store"), embedder="wordllama") as api:
        _remember_all(api)
        hits = _recall(api, {"query": SALES}).get_json()["hits"]
        assert hits[0]["memory"]["content"] == REVENUE
        semantic = _recall(api, {"query": CAT, "mode": "semantic"}).get_json()["hits"]
        assert semantic[0]["memory"]["content"] == KITTEN


def test_http_keyword_only_by_default(tmp_path: Path) -> None:
    with _client(str(tmp_path / "store")) as api:
        _remember_all(api)
        assert _recall(api, {"query": SALES}).get_json()["hits"] == []
        response = _recall(api, {"query": CAT, "mode": "semantic"})
    assert response.status_code == 400
    body = response.get_json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"status", "code", "message", "details"}
    assert body["error"]["code"] == "invalid_input"
    assert "semantic recall needs an embedder" in body["error"]["message"]


def test_a_lost_index_is_built_before_the_service_serves(tmp_path: Path) -> None:
    """Deleting the index: the next open builds it before returning (not on a thread that
    holds the index's lock while recalls and writes wait)."""
    settings = Settings(store=str(tmp_path / "store"), embedder="wordllama")
    service = MemoryService.open(settings)
    _fill(service)
    service.close()
    location = index_location(settings)
    assert location is not None
    for path in location.parent.glob(location.name + "*"):
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()
    with _service(settings) as service:
        # Read the file beside the service (its lock would wait for a background build).
        with sqlite3.connect(location) as db:
            assert db.execute("SELECT COUNT(*) FROM memory").fetchone() == (len(OTHERS) + 2,)
        assert _found(service, CAT)[:1] == [KITTEN]
        assert _found(service, "kitten")[:1] == [KITTEN]
