"""Fixtures: long-term memory on a fresh store with the recall index registered as a listener."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from kg.longterm import LongTermMemory
from kg.recall import KeywordIndex, QueryHelpers, RecallEngine
from kg.store import EmbeddedStore


@dataclass
class Clock:
    """A settable clock, so `as_of` tests can name moments before and after a change."""

    now: datetime

    def __call__(self) -> datetime:
        return self.now

    def tick(self, minutes: int = 1) -> datetime:
        self.now += timedelta(minutes=minutes)
        return self.now


@dataclass
class Recall:
    """Everything a recall test needs, wired the way an application wires it."""

    store: EmbeddedStore
    index: KeywordIndex
    memory: LongTermMemory
    engine: RecallEngine
    helpers: QueryHelpers
    clock: Clock


@pytest.fixture
def clock() -> Clock:
    return Clock(datetime(2025, 1, 1, 12, 0, tzinfo=UTC))


@pytest.fixture
def recall(store: EmbeddedStore, clock: Clock) -> Iterator[Recall]:
    index = KeywordIndex(None)
    memory = LongTermMemory(store, listeners=[index], clock=clock, flush_every=1)
    engine = RecallEngine(store, memory, index=index)
    yield Recall(store, index, memory, engine, QueryHelpers(engine), clock)
    memory.close()
