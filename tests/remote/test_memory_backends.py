"""Long-term memory and recall on both backends, and two service instances on one server.

The two instances are two separate processes at the kg level (this test process is instance A;
instance B is a child `python -c` process with its own RemoteStore, LongTermMemory, RecallEngine
and SessionManager), because the memory HTTP API is not wired into the app yet.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kg.longterm import LongTermMemory
from kg.recall.engine import RecallEngine
from kg.recall.keyword_index import KeywordIndex
from kg.shortterm.session_manager import SessionManager
from kg.store import Store
from tests.remote.conftest import OxigraphServer

ROOT = Path(__file__).resolve().parents[2]


def memory_stack(store: Store) -> tuple[LongTermMemory, RecallEngine]:
    """One instance's kg objects over a store: long-term memory feeding its own recall index."""
    index = KeywordIndex(None)
    memories = LongTermMemory(store, listeners=[index])
    return memories, RecallEngine(store, memories, index=index, record_access=False)


def test_remember_recall_forget(any_store: Store) -> None:
    memories, recall = memory_stack(any_store)
    kept = memories.remember('The build uses "uv" {fast} — not pip', project="acme",
                             session="s-1", type="convention")
    memories.remember("Deploys happen on Tuesdays", project="acme", session="s-1")
    hits = recall.recall("acme", "build uv pip", mode="text")
    assert [h.memory.id for h in hits][:1] == [kept.memory.id]
    assert hits[0].memory.content == 'The build uses "uv" {fast} — not pip'
    again = memories.remember('the build uses "UV" {fast} — not pip', project="acme",
                              session="s-2", type="convention")
    assert not again.created and again.memory.id == kept.memory.id
    memories.forget(kept.memory.id, project="acme", reason="we moved to pixi")
    retired = memories.get(kept.memory.id, project="acme", include_retired=True)
    assert retired.retired_at is not None
    assert [m.content for m in memories.memories("acme")] == ["Deploys happen on Tuesdays"]
    memories.close()


_INSTANCE_B = r"""
import json, sys
from kg.longterm import LongTermMemory
from kg.recall.engine import RecallEngine
from kg.recall.keyword_index import KeywordIndex
from kg.shortterm.session_manager import SessionManager
from kg.store.remote import RemoteStore

url, snapshot = sys.argv[1], json.loads(sys.stdin.read())
store = RemoteStore(url + "/query", update_url=url + "/update",
                    graph_store_url=url + "/store", dialect="oxigraph")
index = KeywordIndex(None)
memories = LongTermMemory(store, listeners=[index])
recall = RecallEngine(store, memories, index=index, record_access=False)
rebuilt = recall.ensure_index(progress=False)  # B's own index catches up with the server
hits = [h.memory.content for h in recall.recall("acme", "postgres port", mode="text")]
sessions = SessionManager()
session = sessions.restore(snapshot)
sessions.update_context(session.id, "active_file", "db.py")
later = memories.remember("Staging uses port 6543", project="acme", session=session.id)
print(json.dumps({"rebuilt": rebuilt, "hits": hits, "session": session.id,
                  "context": {k.value: v for k, v in sessions.get_all_context(session.id).items()},
                  "remembered": later.memory.id}))
"""


def test_two_instances_share_long_term_memory_and_hand_off_a_session(
    oxigraph: OxigraphServer,
) -> None:
    store_a = oxigraph.store()
    store_a.update("DROP ALL")
    memories_a, recall_a = memory_stack(store_a)
    sessions_a = SessionManager()
    session = sessions_a.start(project="acme", agent="coder")
    sessions_a.update_context(session.id, "current_task", "migrate the database")
    memories_a.remember("The database is Postgres on port 5433", project="acme",
                        session=session.id, type="fact")
    snapshot = sessions_a.snapshot(session.id)

    done = subprocess.run(
        [sys.executable, "-c", _INSTANCE_B, oxigraph.url], input=json.dumps(snapshot),
        capture_output=True, text=True, cwd=ROOT, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["hits"] == ["The database is Postgres on port 5433"]
    assert answer["session"] == session.id
    assert answer["context"]["current_task"] == "migrate the database"
    assert answer["context"]["active_file"] == "db.py"
    # What B remembered is visible to A through the server once A's index catches up (from
    # the store's changes since the index's latest: no rebuild).
    assert recall_a.ensure_index(progress=False) is False
    hits = recall_a.recall("acme", "staging port", mode="text")
    assert [h.memory.id for h in hits][:1] == [answer["remembered"]]
    memories_a.close()
