"""Recall speed at scale: hybrid recall vs a CONTAINS scan, and the query helpers.

`python -m bench.recall [N] [--shape p100|p10] [--cache DIR] [--per-pass] [--embedder NAME]
[--modes hybrid,text,rerank]` generates N memories (default 1,000,000) over 100 projects as
N-Quads, bulk-loads them into an on-disk store, builds the recall index from the store (with
the default embedder, KG_EMBEDDER's, unless --embedder names one; one index file per embedder),
then times each scenario and prints one row per metric (median and p95 over `repeats` passes;
with --per-pass, recall's of each pass too).
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyoxigraph
from pyoxigraph import Literal, NamedNode, Quad, RdfFormat

from kg.graphs import long_term
from kg.longterm import LongTermMemory
from kg.longterm.triples import content_key, memory_quads
from kg.memory import Memory, memory_iri
from kg.namespaces import JIDO
from kg.recall import KeywordIndex, QueryHelpers, RecallEngine
from kg.recall.embedding import named_embedder
from kg.resources import query_text
from kg.settings import Settings
from kg.store import EmbeddedStore
from kg.terms import MemoryType, SourceType

__all__ = ["generate", "run"]

PROJECTS = 100
SESSION_SIZE = 50
QUERIES = 100
_TYPES = list(MemoryType)
_START = datetime(2024, 1, 1, tzinfo=UTC)


def _vocabulary(rng: random.Random, size: int = 20_000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = {"".join(rng.choice(letters) for _ in range(rng.randint(3, 10))) for _ in range(size)}
    return sorted(words)


_SKIP = 50  # content words only: the top ranks of natural text are stop words, dropped anyway


def _zipf(rng: random.Random, words: list[str], count: int) -> list[str]:
    # Zipf (s = 1) over ranks _SKIP..len: P(rank r) ∝ 1/r, sampled as r = _SKIP·(len/_SKIP)^u.
    top = len(words) / _SKIP
    return [words[min(int(_SKIP * top ** rng.random()) - _SKIP, len(words) - 1)]
            for _ in range(count)]


def generate(path: Path, n: int, *, seed: int = 7) -> list[str]:
    """Write n memories (with decision/error/lesson links) as N-Quads; return the vocabulary."""
    rng = random.Random(seed)
    words = _vocabulary(rng)
    rng.shuffle(words)
    with open(path, "wb") as out:
        batch: list[Quad] = []
        for i in range(n):
            project = f"proj{i % PROJECTS}"
            local = i // PROJECTS
            graph = long_term(project)
            kind = _TYPES[rng.randrange(len(_TYPES))]
            at = _START + timedelta(minutes=local)
            memory = Memory(
                id=f"m{i}", project=project, session=f"{project}-s{local // SESSION_SIZE}",
                type=kind, content=" ".join(_zipf(rng, words, rng.randint(8, 16))),
                confidence=round(rng.uniform(0.3, 1.0), 2), source_type=SourceType.AGENT,
                timestamp=at, recorded_at=at,
            )
            batch += memory_quads(memory, key=content_key(memory.content, kind), graph=graph)
            batch += _links(rng, memory, i, graph)
            if len(batch) > 200_000:
                pyoxigraph.serialize(batch, out, RdfFormat.N_QUADS)
                batch = []
        pyoxigraph.serialize(batch, out, RdfFormat.N_QUADS)
    return words


def _links(rng: random.Random, memory: Memory, i: int, graph: NamedNode) -> list[Quad]:
    s, earlier = memory.iri, memory_iri(f"m{max(i - PROJECTS * rng.randint(1, 20), i % PROJECTS)}")
    links = []
    if memory.type in (MemoryType.DECISION, MemoryType.ARCHITECTURAL_DECISION):
        links.append(Quad(s, JIDO["hasAlternative"], earlier, graph))
        links.append(Quad(s, JIDO["selectedAlternative"], earlier, graph))
    if memory.type in (MemoryType.ERROR, MemoryType.BUG):
        module = NamedNode(f"https://jido.ai/data/module/{memory.project}-mod{i % 50}")
        links += [Quad(s, JIDO["affectsModule"], module, graph),
                  Quad(module, JIDO["moduleName"], Literal(f"mod{i % 50}"), graph)]
        links.append(Quad(s, JIDO["producedLesson"], earlier, graph))
    if rng.random() < 0.2 and earlier != s:
        links.append(Quad(s, JIDO["relatedTo"], earlier, graph))
    return links


def _timed(calls: Iterator[Callable[[], object]], repeats: int, *,
           passes: list[tuple[float, float]] | None = None) -> tuple[float, float]:
    """(median, p95) in ms over `repeats` passes of the calls; `passes` gets each pass's."""
    jobs = list(calls)
    samples: list[float] = []
    for _ in range(repeats):
        this: list[float] = []
        for job in jobs:
            start = time.perf_counter()
            job()
            this.append((time.perf_counter() - start) * 1000)
        samples += this
        if passes is not None:
            passes.append(_percentiles(this))
    return _percentiles(samples)


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[max(int(len(ordered) * 0.95) - 1, 0)]


def _row(scenario: str, metric: str, median: float, p95: float, unit: str,
         target: str, ok: bool | None) -> dict[str, Any]:
    return {"scenario": scenario, "metric": metric, "median": round(median, 3),
            "p95": round(p95, 3), "unit": unit, "target": target, "ok": ok}


@dataclass(frozen=True, slots=True)
class Shape:
    """How the benchmark data is laid out and how its ids, queries and helper calls look."""

    name: str
    projects: int
    project: Callable[[int], str]  # project index -> id
    memory: Callable[[int], str]  # memory number -> id
    session: Callable[[str], str]  # project id -> one of its sessions
    query: Callable[[random.Random], str]


def _shape(name: str, n: int) -> Shape:
    if name == "p100":
        rng = random.Random(7)  # the vocabulary `generate` draws (same seed, same order)
        words = _vocabulary(rng)
        rng.shuffle(words)
        return Shape("p100", PROJECTS, lambda p: f"proj{p}", lambda i: f"m{i}",
                     lambda p: f"{p}-s3",
                     lambda r: " ".join(_zipf(r, words, r.randint(2, 5))))
    from bench.generator import _FILLER, TOPICS, project_id

    def query(r: random.Random) -> str:
        count = r.randint(2, 5)
        return " ".join([r.choice(TOPICS)] + [r.choice(_FILLER) for _ in range(count - 1)])

    return Shape("p10", 10, project_id, lambda i: f"m0-{i:07d}",
                 lambda p: "sess-" + p.removeprefix("proj-") + "-00003", query)


def _prepare(shape: str, n: int, folder: Path) -> tuple[Path, list[dict[str, Any]]]:
    """The store directory for a shape (built or copied under `folder` once), and setup rows."""
    store_dir, rows = folder / "store", list[dict[str, Any]]()
    if (folder / ".complete").exists():
        return store_dir, rows
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    if shape == "p100":
        generate(folder / "memories.nq", n)
        generated = time.perf_counter() - started
        store = EmbeddedStore(store_dir)
        started = time.perf_counter()
        store.bulk_load(path=folder / "memories.nq", format=RdfFormat.N_QUADS)
        store.close()
        loaded = time.perf_counter() - started
        (folder / "memories.nq").unlink()
        rows += [_row("setup", f"generate {n:,} memories", generated, generated, "s", "", None),
                 _row("setup", "bulk load", loaded, loaded, "s", "", None)]
    else:  # the harness's cached 10-project store, copied so access counts never touch it
        from bench.generator import cached_store

        shutil.copytree(cached_store(n), store_dir)
    (folder / ".complete").write_text(f"{n}\n")
    return store_dir, rows


def run(repeats: int = 5, n: int = 1_000_000, *, shape: str = "p100",
        cache: Path | None = None, per_pass: bool = False,
        embedder: str | None = None,
        modes: tuple[str, ...] = ("hybrid", "text")) -> list[dict[str, Any]]:
    """Build (or reuse under `cache`) an n-memory store and its index, then time recall.

    `embedder` names the index's embedder (default: the setting's default, KG_EMBEDDER's)."""
    name = embedder or str(Settings(store=":memory:").embedder)
    with tempfile.TemporaryDirectory(prefix="bench-recall-") as tmp:
        folder = cache / f"recall-n{n}-{shape}" if cache is not None else Path(tmp)
        return _run(folder, repeats, n, _shape(shape, n), per_pass=per_pass, embedder=name,
                    modes=modes)


def _run(folder: Path, repeats: int, n: int, shape: Shape, *,
         per_pass: bool = False, embedder: str,
         modes: tuple[str, ...] = ("hybrid", "text")) -> list[dict[str, Any]]:
    store_dir, rows = _prepare(shape.name, n, folder)
    store = EmbeddedStore(store_dir)
    # One index file per embedder, so switching it never rebuilds another's.
    suffix = "" if embedder == "wordllama" else f"-{embedder}"
    index = KeywordIndex(folder / f"store{suffix}.recall.sqlite",
                         embedder=named_embedder(embedder))
    memory = LongTermMemory(store, listeners=[index])
    engine = RecallEngine(store, memory, index=index)
    started = time.perf_counter()
    rebuilt = engine.ensure_index(progress=True)
    indexed = time.perf_counter() - started
    if rebuilt:
        rows.append(_row("setup", "build recall index from store", indexed, indexed, "s", "",
                         None))
    rng = random.Random(11)
    queries = [(shape.project(rng.randrange(shape.projects)), shape.query(rng))
               for _ in range(QUERIES)]
    helpers = QueryHelpers(engine)
    for mode in modes:  # "rerank": pass 1 meets every candidate cold (one forward pass each)
        passes: list[tuple[float, float]] = []
        med, p95 = _timed((lambda p=p, q=q, m=mode: engine.recall(p, q, mode=m, limit=10)
                           for p, q in queries), repeats, passes=passes)
        ok = med <= 5 and p95 <= 20 if mode == "hybrid" else None
        rows.append(_row(f"recall {mode} limit 10", "latency", med, p95, "ms",
                         "p50 ≤ 5, p95 ≤ 20" if mode == "hybrid" else "", ok))
        if per_pass:  # the first pass is the cold one: every project's first recall
            rows += [_row(f"recall {mode} limit 10", f"latency, pass {i}", *times, "ms", "",
                          None) for i, times in enumerate(passes, 1)]
    scan = query_text("contains_scan")
    def scan_one(project: str, text: str) -> object:
        return list(store.query(  # type: ignore[arg-type]
            scan, substitutions={"needle": Literal(text.split()[0])},
            default_graph=[long_term(project)]))

    med_scan, p95_scan = _timed((lambda p=p, q=q: scan_one(p, q)  # type: ignore[misc]
                                 for p, q in queries[:20]), 1)
    rows.append(_row("CONTAINS scan (one project)", "latency", med_scan, p95_scan, "ms", "",
                     None))
    hybrid = next((r for r in rows if r["scenario"] == "recall hybrid limit 10"), rows[-1])
    rows.append(_row("CONTAINS scan / hybrid recall", "ratio",
                     med_scan / max(hybrid["median"], 1e-9),
                     p95_scan / max(hybrid["p95"], 1e-9), "x", "", None))
    rows += _helper_rows(helpers, queries, n, repeats, shape)
    memory.close()
    index.close()
    store.close()
    return rows


def _helper_rows(helpers: QueryHelpers, queries: list[tuple[str, str]], n: int,
                 repeats: int, shape: Shape) -> list[dict[str, Any]]:
    rng = random.Random(5)
    numbers = [rng.randrange(n) for _ in range(20)]
    some = [(shape.project(i % shape.projects), shape.memory(i)) for i in numbers]
    cases: dict[str, list[Callable[[], object]]] = {
        "facts_about": [lambda p=p, q=q: helpers.facts_about(p, q.split()[0])
                        for p, q in queries[:20]],
        "decisions_in_order": [lambda p=p: helpers.decisions_in_order(p, limit=20)
                               for p, _ in queries[:20]],
        "related_memories": [lambda p=p, m=m: helpers.related_memories(
            p, m, depth=2, limit=20) for p, m in some],
        "project_conventions": [lambda p=p: helpers.project_conventions(p, limit=20)
                                for p, _ in queries[:20]],
        "errors_for_module": [lambda p=p, i=i: helpers.errors_for_module(p, f"mod{i % 50}")
                              for i, (p, _) in enumerate(queries[:20])],
        "decisions_with_alternatives": [lambda p=p: helpers.decisions_with_alternatives(
            p, limit=20) for p, _ in queries[:20]],
        "lessons_for_error": [lambda p=p, m=m: helpers.lessons_for_error(p, m)
                              for p, m in some],
        "session_memories": [lambda p=p: helpers.session_memories(p, shape.session(p))
                             for p, _ in queries[:20]],
        "recent_memories": [lambda p=p: helpers.recent_memories(p, limit=20)
                            for p, _ in queries[:20]],
    }
    rows = []
    for name, calls in cases.items():
        med, p95 = _timed(iter(calls), repeats)
        rows.append(_row(f"helper {name}", "latency", med, p95, "ms", "p95 ≤ 10", p95 <= 10))
    return rows


def main(argv: list[str] | None = None) -> None:
    """Command line: N (default 1,000,000), --shape p100|p10, --cache DIR, --repeats, --per-pass."""
    parser = argparse.ArgumentParser(prog="python -m bench.recall", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("n", type=int, nargs="?", default=1_000_000)
    parser.add_argument("--shape", choices=("p100", "p10"), default="p100",
                        help="p100: 100 projects (bench.recall data); p10: 10 projects "
                        "(bench.generator's cached store, copied)")
    parser.add_argument("--cache", type=Path, help="keep the store and index here for reuse")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--per-pass", action="store_true",
                        help="also print the median and p95 of each pass of recall")
    parser.add_argument("--modes", default="hybrid,text",
                        help="recall modes timed, comma-separated (hybrid,text,semantic,rerank)")
    parser.add_argument("--embedder", choices=("wordllama", "minilm", "none"),
                        help="the index's embedder [default: KG_EMBEDDER, else none]")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    rows = run(repeats=args.repeats, n=args.n, shape=args.shape, cache=args.cache,
               per_pass=args.per_pass, embedder=args.embedder,
               modes=tuple(args.modes.split(",")))
    print(f"n={args.n:,} shape={args.shape} embedder={args.embedder or 'default'}  "
          f"total {time.perf_counter() - started:.0f} s  {datetime.now(UTC):%Y-%m-%d}")
    print(f"{'scenario':<38}{'metric':<32}{'median':>10}{'p95':>10} unit  target  ok")
    for r in rows:
        print(f"{r['scenario']:<38}{r['metric']:<32}{r['median']:>10}{r['p95']:>10} "
              f"{r['unit']:<5} {r['target']}  {'' if r['ok'] is None else r['ok']}")


if __name__ == "__main__":
    main()
