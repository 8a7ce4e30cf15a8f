"""The keyword index proper: tantivy (BM25, block-max WAND) over per-project terms."""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import tantivy

from kg.recall.analyzer import scope_prefix
from kg.recall.index_key import COVERAGE, CUES

__all__ = ["TextDocument", "TextIndex"]

WRITER_HEAP = 16_000_000  # bytes the writer buffers before it writes a segment (RSS: kept small)
_VERSION = "5"  # bump when the schema or the analysis changes: the folder is then recreated
# Found documents that `COVERAGE` reorders, best first: the rest keep their order below them
# (LoCoMo dev: recall@10 the same for 50 as for all 400; ~2.5 µs each).
COVERED = 50


@dataclass(frozen=True, slots=True)
class TextDocument:
    """What the index holds for one memory: seq, project, type, own stems, context stems and
    keys (calendar terms and cues, kg/recall/index_key.py)."""

    seq: int
    project: str
    type: str
    body: Sequence[str]
    context: Sequence[str]
    keys: Sequence[str] = ()


class TextIndex:
    """One tantivy index (a folder, or in memory); writes are seen after `commit()`.

    Terms are `<project prefix><stem>` so every project has posting lists of its own. Field
    `words` ranks: the memory's own stems twice and its neighbours' once, so that one BM25
    saturation weighs context at half (as SQLite FTS5's column weights 1.0/0.5 did; two fields
    scored apart lost 0.05 of LoCoMo recall@10), and a recall is a pure disjunction of term
    queries, which tantivy answers top-k with block-max WAND. Field `body` (own stems once)
    serves the every-word test of "facts about". Callers
    serialise writes and commits (the tantivy writer is not shared between threads); searches
    may run concurrently with them on the searcher of the last commit. Field `keys` holds the
    memory's calendar terms: a recall adds the query's to its disjunction as boosted term queries
    (still a pure disjunction), so a query naming a day finds that day's memories. The fast
    field `cues` holds the memory's cues as bits: they only reorder the memories the words and
    times found (a "when" question must not find every memory that names a time). Key
    `COVERAGE` reorders the best COVERED found memories by how many of the query's words their
    own text (field `body`) holds, in a second query over just those memories."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        builder = tantivy.SchemaBuilder()
        builder.add_integer_field("seq", stored=False, indexed=True, fast=True)
        builder.add_text_field("body", stored=False, tokenizer_name="whitespace",
                               index_option="freq")
        builder.add_text_field("words", stored=False, tokenizer_name="whitespace",
                               index_option="freq")
        builder.add_text_field("kind", stored=False, tokenizer_name="raw", index_option="basic")
        builder.add_text_field("keys", stored=False, tokenizer_name="whitespace",
                               index_option="freq")
        builder.add_integer_field("cues", stored=False, indexed=False, fast=True)
        self.schema = builder.build()
        self.index = self._open()
        self.writer = self.index.writer(heap_size=WRITER_HEAP, num_threads=1)
        self.searcher = self.index.searcher()

    def _open(self) -> tantivy.Index:
        if self.path is None:
            return tantivy.Index(self.schema)
        marker = self.path / "jido-version"
        if self.path.exists() and not (marker.exists() and marker.read_text() == _VERSION):
            shutil.rmtree(self.path)  # another version's index: derived data, rebuilt
        if not self.path.exists():
            self.path.mkdir(parents=True)
            marker.write_text(_VERSION)
        return tantivy.Index(self.schema, path=str(self.path), reuse=True)

    def count(self) -> int:
        """Documents visible to searches (those of the last commit)."""
        return int(self.searcher.num_docs)

    def put(self, documents: Iterable[TextDocument], *, replace: bool = True) -> int:
        """Add documents, replacing any with the same seq unless `replace` is False."""
        done = 0
        for doc in documents:
            prefix = scope_prefix(doc.project)
            entry = tantivy.Document()
            entry.add_integer("seq", doc.seq)
            entry.add_text("body", " ".join(prefix + s for s in doc.body))
            entry.add_text("kind", prefix + doc.type)
            own = " ".join(prefix + s for s in doc.body)
            entry.add_text("words", " ".join([own, own, *(prefix + s for s in doc.context)]))
            entry.add_text("keys", " ".join(prefix + k for k in doc.keys if k not in CUES))
            entry.add_integer("cues", sum(bit for cue, bit in CUES.items() if cue in doc.keys))
            if replace:
                self.writer.delete_documents_by_term("seq", doc.seq)
            self.writer.add_document(entry)
            done += 1
        return done

    def delete(self, seqs: Iterable[int]) -> None:
        """Remove the documents of `seqs`."""
        for seq in seqs:
            self.writer.delete_documents_by_term("seq", seq)

    def clear(self) -> None:
        """Remove every document (a rebuild follows)."""
        # delete_all_documents rewinds the writer's operation stamps to the last commit, so a
        # pending delete would then outrank (and remove) documents added after it: commit first.
        self.writer.commit()
        self.writer.delete_all_documents()
        self.writer.commit()

    def commit(self) -> None:
        """Make every write so far durable and visible to searches."""
        self.writer.commit()
        self.index.reload()
        self.searcher = self.index.searcher()

    def search(self, project: str, stems: Sequence[str], *, limit: int, all_words: bool = False,
               types: Sequence[str] | None = None,
               keys: Sequence[tuple[str, float]] = ()) -> list[tuple[int, float]]:
        """(seq, BM25 score) of the best `limit` documents of `project` (of `types`), best first;
        `keys` (key, weight) add their weighted BM25 on field `keys`, a cue key adds its weight
        times the best score to the found documents that have the cue, and `COVERAGE` adds its
        weight times the best score times the share of the query's words a found document's own
        text holds (none with `all_words`).

        Types filter inside tantivy only with `all_words` (an intersection anyway): a recall
        stays a pure disjunction, and SQLite drops other types from its candidates."""
        prefix = scope_prefix(project)
        terms = [prefix + s for s in dict.fromkeys(stems)]
        if not terms:
            return []
        clauses: list[tuple[tantivy.Occur, tantivy.Query]] = []
        for term in terms:
            if all_words:  # "facts about": every word in the memory's own text
                clauses.append((tantivy.Occur.Must,
                                tantivy.Query.term_query(self.schema, "body", term)))
                continue
            clauses.append((tantivy.Occur.Should,
                            tantivy.Query.term_query(self.schema, "words", term)))
        wanted = dict(keys) if not all_words else {}
        cues = {CUES[key]: weight for key, weight in wanted.items() if key in CUES}
        coverage = wanted.pop(COVERAGE, 0.0)
        for key, weight in wanted.items():
            if key not in CUES:
                clauses.append((tantivy.Occur.Should, tantivy.Query.boost_query(
                    tantivy.Query.term_query(self.schema, "keys", prefix + key), weight)))
        if all_words and types:
            clauses.append((tantivy.Occur.Must, tantivy.Query.boolean_query([
                (tantivy.Occur.Should, tantivy.Query.term_query(self.schema, "kind", prefix + t))
                for t in types])))
        searcher = self.searcher
        # count=False matters: counting every match would defeat the top-k pruning.
        hits = searcher.search(tantivy.Query.boolean_query(clauses), limit, count=False).hits
        addresses = [address for _, address in hits]
        seqs = searcher.fast_field_values("seq", addresses)
        found = [(int(seq), float(score)) for (score, _), seq in zip(hits, seqs, strict=True)
                 if seq is not None]
        if not found or not (cues or coverage > 0):
            return found
        best = found[0][1]
        boosted = found
        if cues:  # the cue bits of every hit (a fast field read): only when a cue is asked for
            bits = [int(b or 0) for b, seq in zip(searcher.fast_field_values("cues", addresses),
                                                   seqs, strict=True) if seq is not None]
            boosted = [(seq, score + best * sum(w for bit, w in cues.items() if bit & mask))
                       for (seq, score), mask in zip(found, bits, strict=True)]
        if coverage > 0:  # the best COVERED only: the rest gain nothing
            own = self._own_words(searcher, [seq for seq, _ in found[:COVERED]], terms)
            boosted = [(seq, score + coverage * best * own[seq] / len(terms)) if seq in own
                       else (seq, score) for seq, score in boosted]
        return sorted(boosted, key=lambda hit: -hit[1])  # stable: ties keep tantivy's order

    def _own_words(self, searcher: tantivy.Searcher, seqs: Sequence[int],
                   terms: Sequence[str]) -> dict[int, int]:
        """How many of `terms` the own text (field `body`) of each of `seqs` holds.

        A second query over just these documents (their seqs a required clause scoring 0, each
        term an optional one scoring 1): the first stays a pure disjunction of term queries, the
        one tantivy answers top-k with block-max WAND, which constant-score clauses would end.
        The seqs are a disjunction of term queries, ~2.5 µs each: a term set query on `seq`
        scans the field's values (0.4 ms at 100,000 documents, growing with the index)."""
        documents = tantivy.Query.boolean_query([
            (tantivy.Occur.Should, tantivy.Query.term_query(self.schema, "seq", seq))
            for seq in seqs])
        clauses = [(tantivy.Occur.Must, tantivy.Query.const_score_query(documents, 0.0))]
        clauses += [(tantivy.Occur.Should, tantivy.Query.const_score_query(
            tantivy.Query.term_query(self.schema, "body", term), 1.0)) for term in terms]
        hits = searcher.search(tantivy.Query.boolean_query(clauses), len(seqs), count=False).hits
        found = searcher.fast_field_values("seq", [address for _, address in hits])
        return {int(seq): round(score) for (score, _), seq in zip(hits, found, strict=True)
                if seq is not None}

    def close(self) -> None:
        """Commit what is pending and release the writer's lock on the folder."""
        self.commit()
        self.writer.wait_merging_threads()
