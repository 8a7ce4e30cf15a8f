"""Key-value items: memories filed under a namespace path and a key, with an exact JSON value.

A LangGraph store item (kg.integrations.langgraph) is a memory like any other — typed,
recalled, visible to SPARQL — that also carries jido:itemNamespace, jido:itemKey and
jido:itemValue. Its content is the value's `content` text, or else the value's canonical JSON.
Putting an address again supersedes the memory there (history kept); two items with the same
content at different addresses are two memories (no content deduplication).

>>> item_content({"content": "Likes green tea", "tags": ["drinks"]})
'Likes green tea'
>>> item_content({"b": 1, "a": [True, None]})
'{"a":[true,null],"b":1}'
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from pyoxigraph import Literal, NamedNode, Quad

from kg.graphs import long_term
from kg.longterm.errors import InvalidMemoryError, MemoryNotFoundError
from kg.longterm.item_filter import check_filter, matches
from kg.longterm.triples import datetime_literal, normalise_content
from kg.memory import Memory, memory_iri
from kg.namespaces import JIDO
from kg.resources import query_text
from kg.store.base import Store
from kg.terms import MemoryType, validate_identifier

if TYPE_CHECKING:  # only for annotations: memories.py imports this module
    from kg.longterm.memories import LongTermMemory

__all__ = [
    "MAX_KEY_CHARS",
    "MAX_LIST_LIMIT",
    "MAX_NAMESPACE_CHARS",
    "MAX_VALUE_BYTES",
    "Item",
    "ItemHit",
    "MemoryEntry",
    "MemoryPage",
    "check_key",
    "check_namespace",
    "find_item",
    "in_namespace",
    "item_content",
    "item_content_key",
    "item_of",
    "item_quads",
    "list_memories",
    "make_item",
    "namespaces",
    "recalled_items",
    "value_text",
]

SEPARATOR = "."
MAX_NAMESPACE_CHARS = 1_000
MAX_KEY_CHARS = 1_000
MAX_VALUE_BYTES = 65_536
MAX_LIST_LIMIT = 1_000
_CONTENT_BYTES = 2_000  # kg.longterm.memories.MAX_CONTENT_BYTES (that module imports this one)
_NS, _KEY, _VALUE = JIDO["itemNamespace"], JIDO["itemKey"], JIDO["itemValue"]


@dataclass(frozen=True, slots=True)
class Item:
    """Where a memory is filed as a key-value item: namespace path, key and exact JSON value."""

    namespace: str  # labels joined by "."
    key: str
    value: dict[str, Any]


class MemoryEntry(NamedTuple):
    """A memory, and its item when it is filed under a namespace and key."""

    memory: Memory
    item: Item | None


class MemoryPage(NamedTuple):
    """One page of a memory listing, newest first; `next_offset` is None on the last page."""

    entries: list[MemoryEntry]
    next_offset: int | None


@dataclass(frozen=True, slots=True)
class ItemHit:
    """A recalled key-value item: its memory, its item and the recall score (a Hit)."""

    memory: Memory
    item: Item
    score: float


def check_namespace(namespace: object, *, field: str = "namespace",
                    allow_empty: bool = False) -> str:
    """Return a namespace path of non-empty labels that fits, else raise naming `field`."""
    if not isinstance(namespace, str):
        raise InvalidMemoryError(f"{field} must be a string", details={"field": field})
    if allow_empty and namespace == "":
        return namespace
    if len(namespace) > MAX_NAMESPACE_CHARS:
        raise InvalidMemoryError(f"{field} is longer than {MAX_NAMESPACE_CHARS} characters",
                                 details={"field": field})
    if "\x00" in namespace or "" in namespace.split(SEPARATOR):
        raise InvalidMemoryError(
            f"{field} {namespace[:100]!r} must be non-empty labels joined by '.' (no NUL)",
            details={"field": field},
        )
    return namespace


def check_key(key: object) -> str:
    """Return an item key if it is a string of at most MAX_KEY_CHARS characters, else raise."""
    if not isinstance(key, str) or len(key) > MAX_KEY_CHARS:
        raise InvalidMemoryError(f"key must be a string of at most {MAX_KEY_CHARS} characters",
                                 details={"field": "key"})
    return key


def value_text(value: object) -> str:
    """The JSON text an item value is kept as (key order kept), or InvalidMemoryError."""
    if not isinstance(value, dict):
        raise InvalidMemoryError("value must be a JSON object", details={"field": "value"})
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as e:
        raise InvalidMemoryError(f"value is not JSON: {e}", details={"field": "value"}) from e
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_VALUE_BYTES:
        raise InvalidMemoryError(f"value is {size:,} bytes of JSON; the limit is "
                                 f"{MAX_VALUE_BYTES:,}", details={"field": "value"})
    return text


def make_item(namespace: object, key: object, value: object) -> Item:
    """An Item from checked parts (InvalidMemoryError naming the part that breaks a rule)."""
    value_text(value)
    assert isinstance(value, dict)
    return Item(check_namespace(namespace), check_key(key), value)


def item_content(value: Mapping[str, Any]) -> str:
    """The content of an item's memory: `value["content"]` text, else canonical JSON (cut)."""
    text = value.get("content")
    if isinstance(text, str) and text.strip():
        return text  # remember checks its length like any content
    canonical = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    # The exact value is kept in jido:itemValue; the content is what recall reads, so a long
    # value is cut (at a character boundary) rather than refused.
    return canonical.encode("utf-8")[:_CONTENT_BYTES].decode("utf-8", "ignore")


def item_content_key(item: Item, content: str, memory_type: MemoryType) -> str:
    """The jido:contentKey of an item: unlike a plain memory's, it includes the address."""
    # The \x1f separators cannot occur in normalised content, so no plain memory's key (which
    # remember's deduplication looks up) can equal an item's.
    text = "\x1f".join(("item", memory_type.value, item.namespace, item.key,
                        normalise_content(content)))
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def item_quads(memory: NamedNode, item: Item, graph: NamedNode) -> list[Quad]:
    """The three quads that file a memory as an item."""
    return [Quad(memory, _NS, Literal(item.namespace), graph),
            Quad(memory, _KEY, Literal(item.key), graph),
            Quad(memory, _VALUE, Literal(value_text(item.value)), graph)]


def find_item(store: Store, graph: NamedNode, namespace: str, key: str) -> tuple[str, Item] | None:
    """The id and item of the current memory at (namespace, key), if any."""
    rows = store.query(query_text("item_by_key"), substitutions={
        "g": graph, "namespace": Literal(namespace), "key": Literal(key)})
    for row in rows:  # type: ignore[union-attr]
        memory_id = str(row["memory"].value).rsplit("/", 1)[-1]
        return memory_id, Item(namespace, key, json.loads(row["value"].value))
    return None


def item_of(store: Store, graph: NamedNode, memory_id: str) -> Item | None:
    """The item a memory is filed as, or None for a plain memory."""
    s = memory_iri(memory_id)
    found = {}
    for predicate in (_NS, _KEY, _VALUE):
        for quad in store.quads(s, predicate, None, graph):
            if isinstance(quad.object, Literal):
                found[predicate] = quad.object.value
    if len(found) < 3:
        return None
    return Item(found[_NS], found[_KEY], json.loads(found[_VALUE]))


def namespaces(store: Store, project: str, *, prefix: str = "") -> list[str]:
    """The namespace paths of a project's current items in or below `prefix` ("" for all)."""
    validate_identifier(project, name="project id")
    check_namespace(prefix, field="prefix", allow_empty=True)
    rows = store.query(query_text("item_namespaces"), substitutions={
        "g": long_term(project), "prefix": Literal(prefix)})
    return [str(row["namespace"].value) for row in rows]  # type: ignore[union-attr]


def list_memories(
    memories: LongTermMemory, project: str, *, at: datetime,
    memory_type: MemoryType | None = None, namespace_prefix: str | None = None,
    namespace: str | None = None, key: str | None = None,
    value_filter: Mapping[str, Any] | None = None, limit: int = 20, offset: int = 0,
) -> MemoryPage:
    """A project's current memories, newest first, by type, namespace, address and value."""
    validate_identifier(project, name="project id")
    if type(limit) is not int or not 1 <= limit <= MAX_LIST_LIMIT:
        raise InvalidMemoryError(f"limit must be an integer from 1 to {MAX_LIST_LIMIT}",
                                 details={"field": "limit"})
    if type(offset) is not int or offset < 0:
        raise InvalidMemoryError("offset must be a non-negative integer",
                                 details={"field": "offset"})
    wanted = check_filter(value_filter) if value_filter is not None else None
    if (namespace is None) != (key is None):
        raise InvalidMemoryError("namespace and key go together (the address of one item)",
                                 details={"field": "key" if key is None else "namespace"})
    graph = long_term(project)
    rows: Iterable[tuple[str, Item | None]]
    if namespace is not None and key is not None:
        found = find_item(memories.store, graph, check_namespace(namespace), check_key(key))
        rows = [] if found is None else [found]
    else:
        if namespace_prefix is not None:
            check_namespace(namespace_prefix, field="namespace_prefix", allow_empty=True)
        rows = _listed(memories.store, graph, at=at, memory_type=memory_type,
                       prefix=namespace_prefix)
    entries: list[MemoryEntry] = []
    skipped = 0
    for memory_id, item in rows:
        if wanted is not None and (item is None or not matches(item.value, wanted)):
            continue
        if skipped < offset:
            skipped += 1
            continue
        if len(entries) == limit:
            return MemoryPage(entries, offset + limit)
        try:
            memory = memories.get(memory_id, project=project, include_retired=True)
        except MemoryNotFoundError:
            continue  # purged since the query ran
        if memory_type is None or memory.type is memory_type:  # the queries filter by class
            entries.append(MemoryEntry(memory, item))
    return MemoryPage(entries, None)


def recalled_items(
    store: Store, project: str, hits: Iterable[tuple[Memory, float]], *, prefix: str,
    value_filter: Mapping[str, Any] | None = None, limit: int = 10, offset: int = 0,
) -> list[ItemHit]:
    """The recall hits that are items in or below `prefix` ("" for all) passing the filter."""
    check_namespace(prefix, field="namespace_prefix", allow_empty=True)
    wanted = check_filter(value_filter) if value_filter is not None else None
    graph = long_term(project)
    found: list[ItemHit] = []
    for memory, score in hits:
        item = item_of(store, graph, memory.id)
        if item is None or not in_namespace(item.namespace, prefix):
            continue
        if wanted is None or matches(item.value, wanted):
            found.append(ItemHit(memory, item, score))
    return found[offset:offset + limit]


def in_namespace(namespace: str, prefix: str) -> bool:
    """True if `namespace` is `prefix` or below it ("" holds every namespace)."""
    return not prefix or namespace == prefix or namespace.startswith(prefix + SEPARATOR)


def _listed(store: Store, graph: NamedNode, *, at: datetime, memory_type: MemoryType | None,
            prefix: str | None) -> Iterator[tuple[str, Item | None]]:
    substitutions: dict[str, Any] = {
        "g": graph, "at": datetime_literal(at), "anyClass": Literal(memory_type is None),
        "class": (memory_type or MemoryType.FACT).iri,
    }
    if prefix is not None:
        substitutions["prefix"] = Literal(prefix)
    name = "current_memories" if prefix is None else "current_items"
    # A generator in the caller's thread (pyoxigraph results must stay in it): a page stops
    # reading rows, and parsing values, once it is full.
    for row in store.query(query_text(name), substitutions=substitutions):  # type: ignore[union-attr]
        memory_id = str(row["memory"].value).rsplit("/", 1)[-1]
        value = row["value"]
        item = None if value is None else Item(str(row["namespace"].value),
                                               str(row["key"].value), json.loads(value.value))
        yield memory_id, item
