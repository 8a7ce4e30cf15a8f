"""JidoStore against a real `jido-kg serve`, compared with langgraph's own InMemoryStore.

The conformance test runs the same long random sequence of put / get / delete / search (filter,
limit, offset) / list_namespaces / batch on both stores and compares every answer. What
InMemoryStore leaves undefined is compared as JidoStore defines it: search without a query
returns items newest first (InMemoryStore: in insertion order), so the reference's matches are
put in that order before the page is cut; and a namespace whose last item was deleted is not
listed (InMemoryStore keeps listing it, and one that was only read from), so the reference's
empty namespaces are dropped before its listing is compared.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test
from langgraph.store.base import GetOp, InvalidNamespaceError, ListNamespacesOp, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from kg.client import AsyncMemoryClient, MemoryClient
from kg.errors import ValidationError
from kg.graphs import long_term
from kg.integrations.langgraph import JidoStore
from tests.conftest import RunningServer
from tests.integrations.conftest import NO_SHRINKING, TOKEN, fresh_project

LABELS = st.sampled_from(["users", "prefs", "ü-ß", "日本", "a_b", "x y"])
NAMESPACES = st.lists(LABELS, min_size=1, max_size=3).map(tuple)
PREFIXES = st.lists(LABELS, max_size=2).map(tuple)
KEYS = st.one_of(st.sampled_from(["k1", "k2", "émoji-🙂", "a/b?c=d", ""]),
                 st.text(st.characters(exclude_categories=("Cs", "Cc")), max_size=8))
TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
VALUES = st.fixed_dictionaries(
    {"n": st.one_of(st.integers(0, 5), st.floats(0, 5, allow_nan=False))},
    optional={"content": TEXT, "tag": st.sampled_from(["a", "b"]),
              "nested": st.fixed_dictionaries({"x": st.booleans()}),
              "list": st.lists(st.integers(0, 3), max_size=3), "ü": TEXT,
              "deep": st.recursive(st.none() | st.booleans() | TEXT | st.integers(-9, 9),
                                   lambda inner: st.lists(inner, max_size=2)
                                   | st.dictionaries(TEXT, inner, max_size=2), max_leaves=4)},
)
FILTERS = st.sampled_from([
    None, {"tag": "a"}, {"n": {"$gt": 2}}, {"n": {"$gte": 1, "$lt": 4}}, {"n": {"$ne": 3}},
    {"nested": {"x": True}}, {"list": [1, 2]}, {"n": 2}, {"tag": {"$eq": "b"}},
    {"missing": None}, {"tag": "a", "n": {"$lte": 2}},
])
PATTERNS = st.lists(st.one_of(LABELS, st.just("*")), min_size=1, max_size=3).map(tuple)


def triple(item: Any) -> tuple[tuple[str, ...], str, dict[str, Any]]:
    """What is compared of an item: namespace, key and value."""
    return tuple(item.namespace), item.key, item.value


class StoreComparison(RuleBasedStateMachine):
    """The same operations on JidoStore (a fresh project) and on InMemoryStore."""

    client: MemoryClient

    def __init__(self) -> None:
        super().__init__()
        self.jido = JidoStore(self.client, project=fresh_project())
        self.reference = InMemoryStore()
        self.clock = itertools.count()
        self.put_at: dict[tuple[tuple[str, ...], str], int] = {}  # newest put of each address

    # -- helpers ------------------------------------------------------------------------------

    def newest_first(self, items: list[Any]) -> list[Any]:
        return sorted(items, key=lambda i: -self.put_at[(tuple(i.namespace), i.key)])

    def expected_search(self, prefix: tuple[str, ...], value_filter: dict[str, Any] | None,
                        limit: int, offset: int) -> list[Any]:
        matches = self.reference.search(prefix, filter=value_filter, limit=10_000)
        page = self.newest_first(matches)[offset:offset + limit]
        # The reference's own page has as many items (its order is another one).
        mine = self.reference.search(prefix, filter=value_filter, limit=limit, offset=offset)
        assert len(mine) == len(page)
        return page

    def record_puts(self, ops: list[PutOp]) -> None:
        writes: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            writes[(op.namespace, op.key)] = op  # as both stores: the last put of one address
        for address, op in writes.items():
            if op.value is None:
                self.put_at.pop(address, None)
            else:
                self.put_at[address] = next(self.clock)

    # -- rules --------------------------------------------------------------------------------

    @rule(namespace=NAMESPACES, key=KEYS, value=VALUES)
    def put(self, namespace: tuple[str, ...], key: str, value: dict[str, Any]) -> None:
        self.jido.put(namespace, key, value)
        self.reference.put(namespace, key, value)
        self.record_puts([PutOp(namespace, key, value)])

    @rule(namespace=NAMESPACES, key=KEYS)
    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        self.jido.delete(namespace, key)
        self.reference.delete(namespace, key)
        self.record_puts([PutOp(namespace, key, None)])

    @rule(data=st.data())
    def get(self, data: st.DataObject) -> None:
        known = sorted(self.put_at, key=repr)
        namespace, key = data.draw(st.sampled_from(known) if known and data.draw(st.booleans())
                                   else st.tuples(NAMESPACES, KEYS))
        got, expected = self.jido.get(namespace, key), self.reference.get(namespace, key)
        assert (got and triple(got)) == (expected and triple(expected))
        if got is not None:
            assert got.created_at == got.updated_at and got.updated_at.tzinfo is not None

    @rule(prefix=PREFIXES, value_filter=FILTERS, limit=st.integers(0, 6),
          offset=st.integers(0, 5))
    def search(self, prefix: tuple[str, ...], value_filter: dict[str, Any] | None, limit: int,
               offset: int) -> None:
        got = self.jido.search(prefix, filter=value_filter, limit=limit, offset=offset)
        expected = self.expected_search(prefix, value_filter, limit, offset)
        assert [triple(i) for i in got] == [triple(i) for i in expected]
        assert all(i.score is None for i in got)

    @rule(prefix=st.none() | PATTERNS, suffix=st.none() | PATTERNS,
          max_depth=st.none() | st.integers(1, 3), limit=st.integers(1, 6),
          offset=st.integers(0, 4))
    def list_namespaces(self, prefix: tuple[str, ...] | None, suffix: tuple[str, ...] | None,
                        max_depth: int | None, limit: int, offset: int) -> None:
        options = {"prefix": prefix, "suffix": suffix, "max_depth": max_depth, "limit": limit,
                   "offset": offset}
        assert self.jido.list_namespaces(**options) == self.reference.list_namespaces(**options)

    @rule(data=st.data())
    def batch(self, data: st.DataObject) -> None:
        ops = data.draw(st.lists(st.one_of(
            st.tuples(NAMESPACES, KEYS, st.none() | VALUES).map(lambda a: PutOp(*a)),
            st.tuples(NAMESPACES, KEYS).map(lambda a: GetOp(*a)),
            st.tuples(PREFIXES, FILTERS, st.integers(0, 4), st.integers(0, 2)).map(
                lambda a: SearchOp(*a)),
            st.integers(1, 2).map(lambda depth: ListNamespacesOp(None, depth)),
        ), min_size=1, max_size=5))
        held = set(self.put_at)
        expected: list[Any] = []
        for op in ops:  # every read sees the store before the batch's writes
            if isinstance(op, SearchOp):
                found = self.expected_search(op.namespace_prefix, op.filter, op.limit, op.offset)
                expected.append([triple(i) for i in found])
        got = self.jido.batch(ops)
        reference = self.reference.batch(ops)
        self.record_puts([op for op in ops if isinstance(op, PutOp)])
        searches = iter(expected)
        for op, mine, theirs in zip(ops, got, reference, strict=True):
            if isinstance(op, SearchOp):
                assert [triple(i) for i in mine] == next(searches)
            elif isinstance(op, GetOp):
                assert (mine and triple(mine)) == (theirs and triple(theirs))
            elif isinstance(op, PutOp):
                assert mine is None and theirs is None
            else:  # what only the reference lists are namespaces a GetOp just touched
                assert set(mine) <= set(theirs)
                depth = op.max_depth or 99
                assert not (set(theirs) - set(mine)) & {ns[:depth] for ns, _ in held}

    @invariant()
    def drop_the_references_empty_namespaces(self) -> None:
        for namespace in [ns for ns, items in self.reference._data.items() if not items]:
            del self.reference._data[namespace]


def test_jido_store_behaves_like_in_memory_store(memory: MemoryClient) -> None:
    machine = type("Machine", (StoreComparison,), {"client": memory})
    run_state_machine_as_test(machine, settings=settings(
        max_examples=25, stateful_step_count=60, deadline=None, phases=NO_SHRINKING,
        suppress_health_check=list(HealthCheck)))


def test_search_finds_an_item_by_meaning_within_its_namespace(memory: MemoryClient) -> None:
    # Semantic recall: the query shares no word with the item it should find but "user".
    store = JidoStore(memory, project=fresh_project(), recall_mode="semantic")
    store.put(("memories", "u1"), "drink", {"content": "The user likes green tea in the morning"})
    store.put(("memories", "u1"), "home", {"content": "The user lives in Leeds near the station"})
    store.put(("memories", "u1"), "pet", {"content": "The user has a cat called Miso"})
    store.put(("memories", "u2"), "drink", {"content": "The user's favourite beverage is tea"})
    hits = store.search(("memories", "u1"), query="Which beverage does the user enjoy?")
    assert hits[0].key == "drink" and hits[0].value["content"].startswith("The user likes")
    assert all(h.namespace == ("memories", "u1") for h in hits)
    assert hits[0].score is not None and hits[0].score > max(h.score or 0 for h in hits[1:])
    assert store.search(("memories", "u1"), query="kitten")[0].key == "pet"
    assert store.search(("memories",), query="kitten", filter={"x": 1}) == []
    assert store.search(("memories", "u1"), query="where is home", offset=5) == []
    # The service's default (hybrid) recall finds what shares words with the query.
    hybrid = JidoStore(memory, project=store.project)
    assert hybrid.search(("memories",), query="green tea")[0].key == "drink"
    assert {h.namespace for h in hybrid.search(("memories",), query="tea")} == {
        ("memories", "u1"), ("memories", "u2")}


def test_a_put_again_supersedes_and_a_delete_forgets_with_history(memory: MemoryClient) -> None:
    project = fresh_project()
    store = JidoStore(memory, project=project, memory_type="convention")
    store.put(("prefs",), "tea", {"content": "Green tea"})
    first = memory.list_memories(project, namespace="prefs", key="tea").entries[0].memory
    store.put(("prefs",), "tea", {"content": "Black tea"})
    second = memory.list_memories(project, namespace="prefs", key="tea").entries[0].memory
    assert second.type.value == "convention" and second.id != first.id
    store.put(("prefs",), "coffee", {"content": "Black tea"})  # same content: a second item
    assert {e.item.key for e in memory.list_memories(project).entries if e.item} == {
        "tea", "coffee"}
    store.delete(("prefs",), "tea")
    store.delete(("prefs",), "never-put")
    assert store.get(("prefs",), "tea") is None
    rows = sparql(memory, project, """
        SELECT ?m ?content ?retired ?by WHERE { GRAPH ?g {
          ?m jido:itemKey "tea" ; jido:content ?content .
          OPTIONAL { ?m jido:retiredAt ?retired } OPTIONAL { ?m jido:supersededBy ?by } } }""")
    by_content = {r["content"]: r for r in rows}
    assert set(by_content) == {"Green tea", "Black tea"}
    assert by_content["Green tea"]["by"].endswith(second.id)
    assert by_content["Black tea"]["retired"] and "by" not in by_content["Black tea"]


def test_items_are_typed_memories_that_sparql_users_see(memory: MemoryClient) -> None:
    project = fresh_project()
    store = JidoStore(memory, project=project)
    store.put(("memories", "user-42"), "k1", {"content": "Likes green tea", "n": 1.5})
    store.put(("memories", "user-42"), "k2", {"b": [True, None], "a": "ü"})
    rows = sparql(memory, project, """
        SELECT ?type ?content ?namespace ?key ?value WHERE { GRAPH ?g {
          ?m a ?type ; jido:content ?content ; jido:itemNamespace ?namespace ;
             jido:itemKey ?key ; jido:itemValue ?value } } ORDER BY ?key""")
    assert [(r["type"], r["content"], r["namespace"], r["key"], r["value"]) for r in rows] == [
        ("https://jido.ai/ontology#Fact", "Likes green tea", "memories.user-42", "k1",
         '{"content":"Likes green tea","n":1.5}'),
        ("https://jido.ai/ontology#Fact", '{"a":"ü","b":[true,null]}', "memories.user-42", "k2",
         '{"b":[true,null],"a":"ü"}'),
    ]
    assert list(store.get(("memories", "user-42"), "k2").value) == ["b", "a"]  # key order kept
    hits = memory.recall(project, "green tea")  # plain recall finds items too
    assert [h.memory.content for h in hits][:1] == ["Likes green tea"]


def test_async_operations_with_and_without_an_async_client(service_server: RunningServer,
                                                           memory: MemoryClient) -> None:
    project = fresh_project()

    async def scenario() -> None:
        async with AsyncMemoryClient(service_server.url, token=TOKEN) as aclient:
            native = JidoStore(memory, project=project, async_client=aclient)
            threaded = JidoStore(memory, project=project)
            await native.aput(("a", "b"), "k", {"content": "Orders ship from Leeds"})
            assert (await threaded.aget(("a", "b"), "k")).value == {
                "content": "Orders ship from Leeds"}
            await threaded.aput(("a", "c"), "k", {"n": 1})
            assert await native.alist_namespaces(prefix=("a",)) == [("a", "b"), ("a", "c")]
            found = await native.asearch(("a",), query="where do orders ship from")
            assert found[0].key == "k" and found[0].namespace == ("a", "b")
            assert [i.namespace for i in await threaded.asearch(("a",), filter={"n": 1})] == [
                ("a", "c")]
            await native.adelete(("a", "b"), "k")
            assert await threaded.aget(("a", "b"), "k") is None

    asyncio.run(scenario())


def test_bad_namespaces_and_values_are_refused_before_anything_is_written(
    memory: MemoryClient,
) -> None:
    project = fresh_project()
    store = JidoStore(memory, project=project)
    for namespace in [(), ("a.b",), ("",), ("langgraph", "x")]:
        with pytest.raises(InvalidNamespaceError):
            store.batch([PutOp(namespace, "k", {"n": 1})])
    assert store.get((), "k") is None and store.batch([PutOp((), "k", None)]) == [None]
    with pytest.raises(ValidationError):
        store.put(("a",), "k", {"content": "x" * 3000})  # content is a memory's: ≤ 2,000 bytes
    with pytest.raises(ValueError):
        store.put(("a",), "k", {"n": float("nan")})  # not JSON
    store.put(("a",), "k", {"big": "x" * 3000})  # a long value: its content is cut, not refused
    assert store.get(("a",), "k").value == {"big": "x" * 3000}
    assert [e.item.key for e in memory.list_memories(project).entries if e.item] == ["k"]


def sparql(memory: MemoryClient, project: str, query: str) -> list[dict[str, str]]:
    """Rows of a SELECT on the project's long-term graph, over the service's SPARQL endpoint."""
    text = "PREFIX jido: <https://jido.ai/ontology#>\n" + query.replace(
        "GRAPH ?g", f"GRAPH <{long_term(project).value}>")
    transport = memory.transport._http  # the client's own connection and token
    answer = transport.get("/sparql", params={"query": text},
                           headers={"Accept": "application/sparql-results+json"})
    answer.raise_for_status()
    return [{name: cell["value"] for name, cell in row.items()}
            for row in answer.json()["results"]["bindings"]]
