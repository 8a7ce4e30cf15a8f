"""JidoStore: a LangGraph `BaseStore` over a running jido-kg service (extra `langgraph`).

Every item is a long-term memory of the store's project, typed (a fact unless told otherwise)
and visible to SPARQL, filed under its namespace (labels joined by ".") and key with its exact
JSON value; its content is `value["content"]` text, else the value's canonical JSON. A put at
an existing (namespace, key) supersedes the memory there (history kept, not deduplicated by
content); a delete forgets it. `search(query=…)` ranks by the service's recall; without a
query, items come newest first. See docs/agent-api.md, "LangGraph".

>>> from kg.client import MemoryClient
>>> store = JidoStore(MemoryClient("http://127.0.0.1:7879", token="s3cret"),
...                   project="shop")  # doctest: +SKIP
>>> store.put(("memories", "user-42"), "tea", {"content": "Likes green tea"})  # doctest: +SKIP
>>> store.search(("memories",), query="what does the user drink")[0].key  # doctest: +SKIP
'tea'
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Generator, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from kg.client import AsyncMemoryClient, MemoryClient
from kg.errors import KgError
from kg.longterm.errors import MemoryNotFoundError, MemoryRetiredError
from kg.longterm.items import MAX_LIST_LIMIT, MemoryEntry
from kg.longterm.items import Item as StoreItem
from kg.memory import Memory
from kg.recall.engine import MAX_LIMIT as RECALL_MAX_LIMIT
from kg.terms import MemoryType, parse_term, validate_identifier

__all__ = ["DELETE_REASON", "JidoStore"]

T = TypeVar("T")
SEPARATOR = "."
DELETE_REASON = "deleted from the LangGraph store"


@dataclass(frozen=True, slots=True)
class _Call:
    """One client method call a handler needs (sent by the sync or the async driver)."""

    method: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


Steps = Generator[_Call, Any, T]


class JidoStore(BaseStore):
    """A LangGraph store whose items are typed memories of one project of a jido-kg service."""

    def __init__(
        self, client: MemoryClient, *, project: str, session_id: str | None = None,
        agent: str | None = None, memory_type: MemoryType | str = MemoryType.FACT,
        recall_mode: str = "hybrid", async_client: AsyncMemoryClient | None = None,
    ) -> None:
        self.client = client
        self.async_client = async_client  # without one, abatch runs batch in a worker thread
        self.project = validate_identifier(project, name="project id")
        self.session_id = session_id
        self.agent = agent
        self.memory_type = parse_term(MemoryType, memory_type)
        self.recall_mode = recall_mode  # search(query=…): "hybrid", "text", "semantic" or "rerank"

    # -- BaseStore ------------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations; reads see the store as it was before the batch's writes."""
        reads, writes = self._plan(ops)
        results = [self._drive(steps) for steps in reads]
        for steps in writes:
            self._drive(steps)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations under asyncio (the async client's, else a worker thread)."""
        if self.async_client is None:
            return await asyncio.to_thread(self.batch, list(ops))
        reads, writes = self._plan(ops)
        results = [await self._adrive(steps) for steps in reads]
        for steps in writes:
            await self._adrive(steps)
        return results

    # -- planning -------------------------------------------------------------------------------

    def _plan(self, ops: Iterable[Op]) -> tuple[list[Steps[Result]], list[Steps[None]]]:
        """One handler per operation (a put's answers None), and the writes to run after them.

        As in InMemoryStore, every read sees the store before the batch's writes, and of
        several puts to one address the last wins."""
        listed = list(ops)
        for op in listed:
            _check(op)
        reads: list[Steps[Result]] = []
        writes: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in listed:
            if isinstance(op, PutOp):
                writes[(tuple(op.namespace), op.key)] = op
                reads.append(_nothing())
            elif isinstance(op, GetOp):
                reads.append(self._get(op))
            elif isinstance(op, SearchOp):
                reads.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                reads.append(self._list_namespaces(op))
            else:
                raise ValueError(f"unknown store operation {op!r}")
        return reads, [self._put(op) for op in writes.values()]

    def _get(self, op: GetOp) -> Steps[Item | None]:
        if not op.namespace:
            return None  # no item is filed under the empty namespace
        page = yield _Call("list_memories", (self.project,), {
            "namespace": _path(op.namespace), "key": op.key, "limit": 1})
        return _item(page.entries[0]) if page.entries else None

    def _search(self, op: SearchOp) -> Steps[list[SearchItem]]:
        if op.limit < 0 or op.offset < 0:
            raise ValueError("search limit and offset must be non-negative")
        prefix = _path(op.namespace_prefix)
        if op.limit == 0:
            return []
        if op.query:
            if op.offset >= RECALL_MAX_LIMIT:
                return []  # recall ranks the project's 50 best memories
            hits = yield _Call("recall_items", (self.project, op.query), {
                "namespace_prefix": prefix, "value_filter": op.filter,
                "limit": min(op.limit, RECALL_MAX_LIMIT), "offset": op.offset,
                "mode": self.recall_mode})
            return [_found(hit.memory, hit.item, hit.score) for hit in hits]
        found: list[SearchItem] = []
        offset = op.offset
        while len(found) < op.limit:
            page = yield _Call("list_memories", (self.project,), {
                "namespace_prefix": prefix, "value_filter": op.filter,
                "limit": min(op.limit - len(found), MAX_LIST_LIMIT), "offset": offset})
            found += [_found(e.memory, e.item, None) for e in page.entries if e.item]
            if page.next_offset is None:
                break
            offset = page.next_offset
        return found

    def _list_namespaces(self, op: ListNamespacesOp) -> Steps[list[tuple[str, ...]]]:
        conditions = op.match_conditions or ()
        literal: list[str] = []  # the server narrows by the prefix's labels before any "*"
        for condition in [c for c in conditions if c.match_type == "prefix"][:1]:
            for label in condition.path:
                if label == "*":
                    break
                literal.append(label)
        paths = yield _Call("item_namespaces", (self.project,), {"prefix": _path(literal)})
        spaces = [tuple(p.split(SEPARATOR)) for p in paths]
        spaces = [s for s in spaces if all(_matches(c, s) for c in conditions)]
        if op.max_depth is not None:
            spaces = list({s[:op.max_depth] for s in spaces})
        spaces.sort()
        return spaces[op.offset:op.offset + op.limit]

    def _put(self, op: PutOp) -> Steps[None]:
        namespace = _path(op.namespace)
        if op.value is None and not op.namespace:
            return None  # nothing to delete: no item is filed under the empty namespace
        if op.value is not None:
            yield _Call("put_item", (self.project, namespace, op.key, dict(op.value)), {
                "memory_type": self.memory_type, "session_id": self.session_id,
                "agent": self.agent})
            return None
        page = yield _Call("list_memories", (self.project,), {
            "namespace": namespace, "key": op.key, "limit": 1})
        for entry in page.entries:
            # Deleted meanwhile is the outcome asked for.
            with contextlib.suppress(MemoryNotFoundError, MemoryRetiredError):
                yield _Call("forget", (self.project, entry.memory.id), {"reason": DELETE_REASON})
        return None

    # -- drivers --------------------------------------------------------------------------------

    def _drive(self, steps: Steps[T]) -> T:
        reply: Any = None
        error: KgError | None = None
        while True:
            try:
                call = steps.send(reply) if error is None else steps.throw(error)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            try:
                reply, error = getattr(self.client, call.method)(*call.args, **call.kwargs), None
            except KgError as e:  # handed to the handler, which may expect it
                reply, error = None, e

    async def _adrive(self, steps: Steps[T]) -> T:
        assert self.async_client is not None
        reply: Any = None
        error: KgError | None = None
        while True:
            try:
                call = steps.send(reply) if error is None else steps.throw(error)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            try:
                method = getattr(self.async_client, call.method)
                reply, error = await method(*call.args, **call.kwargs), None
            except KgError as e:
                reply, error = None, e


def _nothing() -> Steps[None]:
    return None
    yield  # a generator that asks for nothing


def _check(op: Op) -> None:
    """LangGraph's label rules, also for ops handed to batch() directly."""
    if isinstance(op, GetOp | PutOp):
        labels: Iterable[str] = op.namespace
        if isinstance(op, PutOp) and op.value is not None and (
                not op.namespace or op.namespace[0] == "langgraph"):
            raise InvalidNamespaceError(f"cannot put into namespace {op.namespace!r}")
    elif isinstance(op, SearchOp):
        labels = op.namespace_prefix
    elif isinstance(op, ListNamespacesOp):
        labels = [x for c in op.match_conditions or () for x in c.path if x != "*"]
    else:
        return
    for label in labels:
        if not isinstance(label, str) or not label or SEPARATOR in label or "\x00" in label:
            raise InvalidNamespaceError(
                f"namespace label {label!r} must be a non-empty string without '.' or NUL")


def _path(labels: Iterable[str]) -> str:
    return SEPARATOR.join(labels)


def _item(entry: MemoryEntry) -> Item:
    assert entry.item is not None
    return Item(value=entry.item.value, key=entry.item.key,
                namespace=tuple(entry.item.namespace.split(SEPARATOR)),
                created_at=entry.memory.recorded_at, updated_at=entry.memory.recorded_at)


def _found(memory: Memory, item: StoreItem | None, score: float | None) -> SearchItem:
    assert item is not None
    return SearchItem(namespace=tuple(item.namespace.split(SEPARATOR)), key=item.key,
                      value=item.value, created_at=memory.recorded_at,
                      updated_at=memory.recorded_at, score=score)


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    else:
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    return all(want == "*" or have == want for have, want in pairs)
