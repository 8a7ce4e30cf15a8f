"""The tantivy keyword index: project isolation, replacement, deletes, types, crash marks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kg.recall.analyzer import stems
from kg.recall.keyword_index import KeywordIndex
from kg.recall.text_index import TextDocument, TextIndex


def doc(seq: int, text: str, *, project: str = "p1", type: str = "fact",
        context: str = "") -> TextDocument:
    return TextDocument(seq, project, type, stems(text), stems(context))


def seqs(index: TextIndex, project: str, text: str, **options: object) -> list[int]:
    return [s for s, _ in index.search(project, stems(text), limit=10, **options)]  # type: ignore[arg-type]


def test_projects_never_see_each_others_words() -> None:
    index = TextIndex(None)
    index.put([doc(1, "postgres backups"), doc(2, "postgres backups", project="p2")])
    index.commit()
    assert seqs(index, "p1", "postgres") == [1]
    assert seqs(index, "p2", "postgres") == [2]
    assert seqs(index, "p3", "postgres") == []


def test_put_replaces_and_delete_removes() -> None:
    index = TextIndex(None)
    index.put([doc(1, "redis cache")])
    index.put([doc(1, "memcached cache")])
    index.commit()
    assert seqs(index, "p1", "redis") == [] and seqs(index, "p1", "memcached") == [1]
    index.delete([1])
    index.commit()
    assert seqs(index, "p1", "cache") == [] and index.count() == 0


def test_clear_after_a_pending_delete_keeps_what_is_added_next() -> None:
    index = TextIndex(None)
    index.put([doc(1, "kept in step")])
    index.delete([1])  # pending, never committed
    index.clear()
    index.put([doc(1, "kept in step")], replace=False)
    index.commit()
    assert seqs(index, "p1", "step") == [1]


def test_own_words_outrank_context_and_stemming_matches() -> None:
    index = TextIndex(None)
    index.put([doc(1, "unrelated", context="deployments failed"),
               doc(2, "the deployment failed")])
    index.commit()
    assert seqs(index, "p1", "deploying failed") == [2, 1]


def test_every_word_and_type_filter() -> None:
    index = TextIndex(None)
    index.put([doc(1, "postgres is the database"), doc(2, "postgres might be slow",
                                                        type="hypothesis"),
               doc(3, "the database is fast", context="postgres")])
    index.commit()
    assert sorted(seqs(index, "p1", "postgres database", all_words=True)) == [1]
    assert seqs(index, "p1", "postgres", all_words=True, types=["hypothesis"]) == [2]
    assert sorted(seqs(index, "p1", "postgres", all_words=True,
                       types=["fact", "hypothesis"])) == [1, 2]


def test_uncommitted_words_after_a_crash_are_reindexed(tmp_path: Path) -> None:
    path = tmp_path / "x.recall.sqlite"
    crash = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from kg.store import EmbeddedStore\n"
        "from kg.longterm.memories import LongTermMemory\n"
        "from kg.recall import keyword_index\n"
        "keyword_index.TEXT_COMMIT_INTERVAL = 3600.0  # no timed commit before the kill\n"
        "index = keyword_index.KeywordIndex(Path(sys.argv[1]))\n"
        "memory = LongTermMemory(EmbeddedStore(None), listeners=[index])\n"
        "memory.remember('Blue green deploys', project='p1', session='s1')\n"
        "index.drain()  # the queued write reaches SQLite and the (uncommitted) words\n"
        "os._exit(9)  # killed before the text commit\n"
    )
    ended = subprocess.run([sys.executable, "-c", crash, str(path)], check=False)
    assert ended.returncode == 9
    reopened = KeywordIndex(path)
    assert reopened.text_stale
    assert reopened.rebuild_text() == 1
    assert [s for s, _ in reopened.search_text("p1", ["deploys"], limit=5)]
    reopened.close()
    again = KeywordIndex(path)
    assert not again.text_stale
    again.close()


def test_weighted_keys_rank_among_the_word_matches_within_the_project() -> None:
    index = TextIndex(None)
    index.put([
        TextDocument(1, "p1", "fact", stems("billing deploy"), [], ["d20230707", "ctime"]),
        TextDocument(2, "p1", "fact", stems("billing deploy"), [], ["d20230801"]),
        TextDocument(3, "p2", "fact", stems("billing deploy"), [], ["d20230801"]),
    ])
    index.commit()
    plain = index.search("p1", stems("billing"), limit=10)
    assert [s for s, _ in plain] == [1, 2] and plain[0][1] == plain[1][1]  # a tie on words
    assert [s for s, _ in index.search("p1", stems("billing"), limit=10,
                                       keys=[("d20230801", 2.0)])] == [2, 1]
    assert [s for s, _ in index.search("p1", stems("billing"), limit=10,
                                       keys=[("ctime", 0.3)])] == [1, 2]
    # Keys only rank word matches of the project's own memories, and not in "every word" mode.
    assert [s for s, _ in index.search("p2", stems("billing"), limit=10,
                                       keys=[("d20230707", 2.0)])] == [3]
    assert [s for s, _ in index.search("p1", stems("billing deploy"), limit=10,
                                       all_words=True, keys=[("d20230801", 2.0)])] == [1, 2]
