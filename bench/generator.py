"""Seeded synthetic long-term memories: N memories over P projects and S sessions, as N-Quads.

The quads are the ones `kg.longterm` writes for a remembered memory (built by its own
`kg.longterm.triples` functions, so the benchmark data cannot drift from the writer), plus the
session, agent and project records. Generation streams: 1,000,000 memories never sit in
memory at once.

    python -m bench.generator --n 100000 --out /tmp/mem.nq          # just the file
    python -m bench.generator --n 100000 --store /tmp/store         # file + bulk-loaded store
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyoxigraph
from pyoxigraph import Literal, Quad, RdfFormat
from tqdm import tqdm

from kg import graphs
from kg.longterm.session_records import SessionRecords, identity_quads
from kg.longterm.triples import content_key, datetime_literal, evidence_quads
from kg.longterm.triples import memory_quads as memory_quads_of
from kg.memory import Evidence, Memory
from kg.terms import MemoryType, SessionStatus, SourceType

__all__ = [
    "TOPICS",
    "GeneratedData",
    "build_store",
    "cached_store",
    "copy_cached_store",
    "generate",
    "memories",
    "memory_quads",
]

# Topic words recur across memories so keyword recall and helper queries have real hits; the
# filler words make each content distinct (dedup by content key must not merge them).
TOPICS = (
    "postgres", "redis", "kafka", "phoenix", "ecto", "genserver", "supervisor", "liveview",
    "oauth", "jwt", "graphql", "rest", "docker", "kubernetes", "terraform", "nginx", "tls",
    "cache", "queue", "migration", "schema", "index", "transaction", "deadlock", "timeout",
    "retry", "backoff", "logging", "metrics", "tracing", "pagination", "websocket", "cron",
    "s3", "embedding", "tokenizer", "prompt", "sparql", "ontology", "rdf",
)
_VERBS = ("uses", "requires", "avoids", "replaces", "wraps", "configures", "breaks", "speeds up",
          "depends on", "validates", "caches", "retries", "logs", "rejects", "streams")
_FILLER = tuple(f"{a}{b}" for a in ("al", "be", "co", "da", "ek", "fo", "gu", "hi", "io", "ju")
                for b in ("ra", "mo", "ten", "vix", "lor", "pan", "sel", "tum", "quo", "nid"))
_ROOT = Path(__file__).resolve().parents[1]
# Bump when the generated data changes, so cached stores are rebuilt.
_VERSION = 2
_EPOCH = datetime(2025, 1, 1, tzinfo=UTC)
_TYPES = tuple(MemoryType)
_SOURCES = tuple(SourceType)


@dataclass(frozen=True, slots=True)
class GeneratedData:
    """What `generate` wrote."""

    path: Path
    memories: int
    quads: int
    projects: int
    sessions: int
    seconds: float


def project_id(index: int) -> str:
    """The id of the index-th generated project."""
    return f"proj-{index:04d}"


def session_id(project: int, index: int) -> str:
    """The id of a generated session (session ids are unique across projects)."""
    return f"sess-{project:04d}-{index:05d}"


def memories(n: int, *, projects: int = 10, sessions: int = 100, seed: int = 0,
             start: int = 0) -> Iterator[Memory]:
    """Yield `n` seeded memories spread round-robin over projects and their sessions."""
    rng = random.Random(seed)
    per_project = max(1, sessions // max(1, projects))
    for i in range(start, start + n):
        p = i % projects
        s = (i // projects) % per_project
        topic = rng.choice(TOPICS)
        other = rng.choice(TOPICS)
        words = " ".join(rng.choice(_FILLER) for _ in range(rng.randint(4, 12)))
        content = f"The {topic} layer {rng.choice(_VERBS)} {other}: {words} (note {i})."
        confidence = round(rng.uniform(0.3, 1.0), 3)
        when = _EPOCH + timedelta(seconds=i * 7 + rng.randint(0, 6))
        yield Memory(
            id=f"m{seed}-{i:07d}",
            project=project_id(p),
            session=session_id(p, s),
            type=rng.choice(_TYPES),
            content=content,
            confidence=confidence,
            source_type=rng.choice(_SOURCES),
            timestamp=when,
            recorded_at=when,
            agent=f"agent-{p % 4}",
            rationale=f"seen while working on {topic}" if rng.random() < 0.3 else None,
            # Promoted memories carry provenance; about one in five has an evidence node.
            evidence=(Evidence(id=f"e{seed}-{i:07d}", text=f"message about {topic}",
                               recorded_at=when),) if rng.random() < 0.2 else (),
        )


def _dt(value: datetime) -> Literal:
    return datetime_literal(value)


def memory_quads(memory: Memory) -> list[Quad]:
    """The quads the long-term writer stores for `memory` (its own builders, not a copy)."""
    graph = graphs.long_term(memory.project)
    quads = memory_quads_of(memory, key=content_key(memory.content, memory.type), graph=graph)
    for evidence in memory.evidence:
        quads += evidence_quads(evidence, memory=memory.iri, session=memory.session, graph=graph)
    return quads


def _context_quads(projects: int, sessions: int) -> Iterator[Quad]:
    """Project, agent and session records, as `kg.longterm.session_records` writes them."""
    per_project = max(1, sessions // max(1, projects))
    for p in range(projects):
        pid = project_id(p)
        agent = f"agent-{p % 4}"
        yield from identity_quads(pid, agent)
        for s in range(per_project):
            # The writer's own session-node builder (a static method), so the shapes match.
            yield from SessionRecords._session_node(
                session_id(p, s), pid, agent, SessionStatus.CLOSED, _EPOCH)


def generate(path: Path, n: int, *, projects: int = 10, sessions: int = 100, seed: int = 0,
             progress: bool = True) -> GeneratedData:
    """Stream `n` memories (and their context records) to `path` as N-Quads."""
    started = time.perf_counter()
    count = 0

    def stream() -> Iterator[Quad]:
        nonlocal count
        for quad in _context_quads(projects, sessions):
            count += 1
            yield quad
        bar = tqdm(total=n, desc=f"generate {n:,}", unit="mem", unit_scale=True,
                   disable=not progress or None, file=sys.stderr, leave=False)
        with bar:
            for i, memory in enumerate(memories(n, projects=projects, sessions=sessions,
                                                seed=seed)):
                for quad in memory_quads(memory):
                    count += 1
                    yield quad
                if i % 1000 == 999:
                    bar.update(1000)
            bar.update(n % 1000)

    path.parent.mkdir(parents=True, exist_ok=True)
    pyoxigraph.serialize(stream(), str(path), format=RdfFormat.N_QUADS)
    return GeneratedData(path, n, count, projects, sessions, time.perf_counter() - started)


def build_store(directory: Path, n: int, seed: int = 0, *, projects: int = 10,
                sessions: int = 100, progress: bool = True,
                nquads: Path | None = None) -> GeneratedData:
    """Generate `n` memories and bulk-load them (with the ontology) into a new store directory."""
    from kg.store import EmbeddedStore
    from kg.system_knowledge import ensure_ontology

    source = nquads or directory.with_name(directory.name + ".nq")
    data = generate(source, n, projects=projects, sessions=sessions, seed=seed,
                    progress=progress)
    directory.mkdir(parents=True, exist_ok=True)
    store = EmbeddedStore(directory)
    try:
        ensure_ontology(store)
        if progress:
            print(f"bulk-loading {data.quads:,} quads into {directory}", file=sys.stderr)
        store.bulk_load(path=source, format=RdfFormat.N_QUADS)
        store.flush()
    finally:
        store.close()
    if nquads is None:
        source.unlink()
    return data


def cached_store(n: int, *, seed: int = 0, projects: int = 10, sessions: int = 100,
                 root: Path | None = None) -> Path:
    """A store of `n` generated memories, built once and reused (open it read-only or copy it).

    Kept under `$BENCH_CACHE` (default `.cache/bench/` in the checkout); the directory name holds
    every parameter and the generator's version, so a changed generator never reuses old data.
    """
    base = root or Path(os.environ.get("BENCH_CACHE", _ROOT / ".cache" / "bench"))
    target = base / f"store-n{n}-s{seed}-p{projects}-x{sessions}-v{_VERSION}"
    if (target / ".complete").exists():
        return target
    building = target.with_name(target.name + f".building-{os.getpid()}")
    shutil.rmtree(building, ignore_errors=True)
    build_store(building, n, seed, projects=projects, sessions=sessions)
    (building / ".complete").write_text(f"{n}\n")
    try:
        building.rename(target)
    except OSError:  # another process finished the same store first
        shutil.rmtree(building, ignore_errors=True)
    return target


def copy_cached_store(n: int, target: Path) -> Path:
    """A private copy of `cached_store(n)` (a server writes to it) with its recall index.

    The index comes along (building one for 1M memories takes minutes): the SQLite file and the
    folders beside it (words, embedding matrices); without its words, a server would re-index
    them under the index's lock and its first recall would wait minutes."""
    source = cached_store(n)
    shutil.copytree(source, target)
    for part in (".recall.sqlite", ".recall.text", ".recall.vectors"):
        cached = source.with_name(source.name + part)
        if cached.is_dir():
            shutil.copytree(cached, target.with_name(target.name + part))
        elif cached.is_file():
            shutil.copyfile(cached, target.with_name(target.name + part))
    return target


def main(argv: list[str] | None = None) -> None:
    """Command line: write the N-Quads file and optionally bulk-load a store."""
    parser = argparse.ArgumentParser(prog="python -m bench.generator", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10_000, help="number of memories")
    parser.add_argument("--projects", type=int, default=10)
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="N-Quads file to write")
    parser.add_argument("--store", type=Path, help="store directory to build (bulk load)")
    args = parser.parse_args(argv)
    if args.store is None and args.out is None:
        parser.error("give --out FILE and/or --store DIR")
    t0 = time.perf_counter()
    if args.store is not None:
        data = build_store(args.store, args.n, args.seed, projects=args.projects,
                           sessions=args.sessions, nquads=args.out)
    else:
        data = generate(args.out, args.n, projects=args.projects, sessions=args.sessions,
                        seed=args.seed)
    print(f"{data.memories:,} memories, {data.quads:,} quads in "
          f"{time.perf_counter() - t0:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
