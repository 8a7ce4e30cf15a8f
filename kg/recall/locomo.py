"""The LoCoMo retrieval benchmark via the public API: remember every turn, recall per question."""

from __future__ import annotations

import json
import re
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kg.errors import ValidationError
from kg.longterm import LongTermMemory
from kg.recall.embedding import Embedder, FloatMatrix
from kg.recall.engine import RecallEngine
from kg.recall.fusion import FusionWeights
from kg.recall.keyword_index import KeywordIndex
from kg.store import EmbeddedStore
from kg.terms import SourceType

__all__ = ["CATEGORIES", "KS", "LocomoResult", "LocomoSet", "locomo_files", "run_locomo"]

KS = (5, 10, 20, 25, 50)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_EVIDENCE_SPLIT = re.compile(r"[;,\s]+")
_SAFE = re.compile(r"[^A-Za-z0-9_-]")
_AUDIT_ID = re.compile(r"locomo_(\d+)_qa(\d+)")


@dataclass(frozen=True, slots=True)
class Scored:
    """One question's outcome: its conversation, category, recall@k and reciprocal rank."""

    conversation: str
    category: int
    recall: dict[int, float]
    reciprocal_rank: float


@dataclass
class LocomoResult:
    """Per-question outcomes, with means by category and overall, and recall latencies."""

    questions: list[Scored] = field(default_factory=list)
    memories: int = 0
    latencies: list[float] = field(default_factory=list)  # seconds per recall call

    def of(self, category: int | None = None,
           conversations: Sequence[str] | None = None) -> list[Scored]:
        """The outcomes of one category (or all) and of some conversations (or all)."""
        return [q for q in self.questions if category in (None, q.category)
                and (conversations is None or q.conversation in conversations)]

    def mean(self, k: int, category: int | None = None) -> float:
        """Mean recall@k over one category, or over all questions."""
        values = [q.recall[k] for q in self.of(category)]
        return statistics.fmean(values) if values else 0.0

    def mrr(self, category: int | None = None) -> float:
        """Mean reciprocal rank of the first evidence turn (0 if none in the top 50)."""
        values = [q.reciprocal_rank for q in self.of(category)]
        return statistics.fmean(values) if values else 0.0

    def table(self) -> str:
        """A plain-text table: one row per category, then the overall row."""
        lines = [f"{'category':<16}{'n':>5}" + "".join(f"{'@' + str(k):>8}" for k in KS)
                 + f"{'MRR':>8}"]
        for c in [*sorted({q.category for q in self.questions}), None]:
            name = "all" if c is None else f"{c} {CATEGORIES.get(c, '?')}"
            lines.append(f"{name:<16}{len(self.of(c)):>5}"
                         + "".join(f"{self.mean(k, c):>8.3f}" for k in KS) + f"{self.mrr(c):>8.3f}")
        return "\n".join(lines)

    def latency(self) -> str:
        """Median and p95 of the recall calls, in ms."""
        if not self.latencies:
            return "no recalls"
        ms = sorted(1000 * s for s in self.latencies)
        p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
        return f"recall p50 {statistics.median(ms):.1f} ms, p95 {p95:.1f} ms ({len(ms)} calls)"


def locomo_files(path: Path) -> tuple[Path, Path | None]:
    """(data file, audit file or None) of a LoCoMo folder (`locomo*.json`, `audit*.json`), or of
    a data file given directly."""
    if not path.is_dir():
        return path, None
    data = sorted(p for p in path.glob("*.json") if not p.name.startswith("audit"))
    audit = sorted(path.glob("audit*.json"))
    if len(data) != 1:
        raise ValidationError(f"{path} must hold exactly one LoCoMo data file (*.json), "
                              f"found {len(data)}")
    return data[0], audit[0] if audit else None


def _session_date(text: object) -> datetime | None:
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(str(text), fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def _corrections(audit: Sequence[dict[str, Any]],
                 samples: Sequence[dict[str, Any]]) -> dict[tuple[int, int], list[str]]:
    """(conversation, question position) → corrected evidence.

    The audit's `qa<N>` numbers count from 0 (every entry of the dev audit names, in its
    `question`, the question at that 0-based position), so an entry is placed by its question
    text when it has one, else by N as a 0-based position."""
    found: dict[tuple[int, int], list[str]] = {}
    for entry in audit:
        match = _AUDIT_ID.fullmatch(str(entry.get("question_id", "")))
        if match is None or entry.get("correct_evidence") is None:
            continue
        conversation, number = int(match[1]), int(match[2])
        if conversation >= len(samples):
            continue
        questions = [str(q.get("question", "")).strip() for q in samples[conversation]["qa"]]
        text = str(entry.get("question", "")).strip()
        if text:
            near = sorted((i for i, q in enumerate(questions) if q == text),
                          key=lambda i: abs(i - number))
            if not near:
                continue
            number = near[0]
        found[(conversation, number)] = list(entry["correct_evidence"])
    return found


class _Remembering:
    """An embedder that keeps the vectors of single texts (the questions, asked again for
    every weight setting of a fit); it reports the wrapped model's dimension and weights."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.dim = embedder.dim
        self.semantic_weight = float(getattr(embedder, "semantic_weight", 0.5))
        self.min_cosine = float(getattr(embedder, "min_cosine", 0.25))
        self._seen: dict[str, FloatMatrix] = {}

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Embed `texts`; a single text's vector is computed once."""
        if len(texts) != 1:
            return self.embedder.embed(texts)
        if texts[0] not in self._seen:
            self._seen[texts[0]] = self.embedder.embed(texts)
        return self._seen[texts[0]]


@dataclass
class LocomoSet:
    """The conversations remembered once (one project each), ready to be recalled any number of
    times with other weights or modes."""

    engine: RecallEngine
    memory: LongTermMemory
    projects: list[str]
    turns_of: list[dict[str, set[str]]]  # per conversation: memory id -> dia_ids (merges)
    questions: list[list[tuple[str, int, set[str]]]]  # (question, category, gold evidence)
    memories: int = 0

    @classmethod
    def load(cls, data_file: Path, audit_file: Path | None = None, *,
             embedder: Embedder | None = None,
             progress: Callable[[str], None] | None = None) -> LocomoSet:
        """Read the files and remember each conversation's turns (a session date each)."""
        try:
            samples = json.loads(Path(data_file).read_text(encoding="utf-8"))
            audit = json.loads(Path(audit_file).read_text(encoding="utf-8")) if audit_file else []
            corrections = _corrections(audit, samples)
        except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
            raise ValidationError(f"cannot read the LoCoMo files: {exc}") from None
        store = EmbeddedStore(None)
        index = KeywordIndex(None, embedder=_Remembering(embedder) if embedder else None)
        memory = LongTermMemory(store, listeners=[index])
        # Questions are independent: counting their recalls would let earlier questions raise
        # later ones' frequency signal, and on the tracker's timer thread.
        engine = RecallEngine(store, memory, index=index, record_access=False)
        result = cls(engine, memory, [], [], [])
        for number, sample in enumerate(samples):
            project = "locomo-" + _SAFE.sub("-", str(sample.get("sample_id", number)))[:100]
            result.projects.append(project)
            result.turns_of.append(result._remember(project, sample["conversation"]))
            result.questions.append([
                (str(qa["question"]), int(qa["category"]), _gold(
                    corrections.get((number, q), qa.get("evidence") or [])))
                for q, qa in enumerate(sample["qa"])
            ])
            if progress:
                progress(f"{project}: {len(sample['qa'])} questions")
        return result

    def _remember(self, project: str, conversation: dict[str, Any]) -> dict[str, set[str]]:
        turns_of: dict[str, set[str]] = defaultdict(set)
        for session, date in _sessions(conversation):
            for turn in conversation[f"session_{session}"]:
                outcome = self.memory.remember(
                    f"{turn['speaker']}: {turn['text']}", project=project,
                    session=f"{project}-s{session}", source_type=SourceType.USER,
                    valid_from=date, timestamp=date,
                )
                # Indexed turn by turn, as a service remembering at conversation pace does, so
                # the figures never depend on timing: a burst applied as one batch leaves fewer
                # replaced documents in BM25's statistics (kg/recall/index_writer.py).
                self.engine.index.drain()
                turns_of[outcome.memory.id].add(turn["dia_id"])
                self.memories += outcome.created
        return turns_of

    def evaluate(self, *, mode: str = "hybrid", weights: FusionWeights | None = None,
                 ) -> LocomoResult:
        """Recall every question (limit 50) with these weights; score against the evidence."""
        self.engine.weights = weights or self.engine.default_weights()
        result = LocomoResult(memories=self.memories)
        for project, turns_of, questions in zip(self.projects, self.turns_of, self.questions,
                                                strict=True):
            for question, category, gold in questions:
                if not gold:
                    continue
                started = time.perf_counter()
                hits = self.engine.recall(project, question, limit=max(KS), mode=mode)
                result.latencies.append(time.perf_counter() - started)
                # Scored only after recalling: the gold evidence is never seen by the recall.
                found = [turns_of[h.memory.id] for h in hits]
                result.questions.append(_score(project, category, gold, found))
        return result

    def close(self) -> None:
        """Close the memory (and its index)."""
        self.memory.close()


def _sessions(conversation: dict[str, Any]) -> Iterator[tuple[int, datetime | None]]:
    session = 1
    while f"session_{session}" in conversation:
        yield session, _session_date(conversation.get(f"session_{session}_date_time"))
        session += 1


def _gold(evidence: Sequence[object]) -> set[str]:
    return {part for item in evidence for part in _EVIDENCE_SPLIT.split(str(item)) if part}


def _score(conversation: str, category: int, gold: set[str],
           found: Sequence[set[str]]) -> Scored:
    recall = {k: len(gold & set().union(*found[:k])) / len(gold) for k in KS}
    first = next((rank for rank, turns in enumerate(found, start=1) if gold & turns), None)
    return Scored(conversation, category, recall, 1.0 / first if first else 0.0)


def run_locomo(
    data_file: Path,
    audit_file: Path | None = None,
    *,
    embedder: Embedder | None = None,
    mode: str = "hybrid",
    weights: FusionWeights | None = None,
    progress: Callable[[str], None] | None = None,
) -> LocomoResult:
    """Remember each conversation's turns, then recall each question; score against evidence."""
    dataset = LocomoSet.load(data_file, audit_file, embedder=embedder, progress=progress)
    try:
        return dataset.evaluate(mode=mode, weights=weights)
    finally:
        dataset.close()
