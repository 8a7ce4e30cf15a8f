"""What the `virtuoso` dialect changes, checked without a Virtuoso: the GRAPH rewrite keeps every
solution but the hidden graphs' (run on pyoxigraph), and Virtuoso's answers read back exactly."""

from __future__ import annotations

import pytest
from pyoxigraph import (
    BlankNode,
    DefaultGraph,
    Literal,
    NamedNode,
    Quad,
    QueryBoolean,
    QuerySolutions,
    Store,
)

from kg.store.sparql_results import virtuoso_solutions
from kg.store.sparql_terms import scope_graphs

EX = "https://example.org/"
G1, G2, SYS = NamedNode(EX + "g1"), NamedNode(EX + "g2"), NamedNode(EX + "system")
P = NamedNode(EX + "p")


@pytest.fixture
def store() -> Store:
    store = Store()
    store.extend([Quad(NamedNode(EX + "a"), P, Literal("GRAPH <x> { }"), G1),
                  Quad(NamedNode(EX + "b"), P, Literal(2), G2),
                  Quad(NamedNode(EX + "z"), P, Literal(9), SYS),
                  Quad(NamedNode(EX + "d"), P, Literal(0))])
    return store


def solutions(store: Store, text: str) -> set[tuple[object, ...]]:
    result = store.query(text)
    assert isinstance(result, QuerySolutions)
    names = [v.value for v in result.variables]
    return {tuple(row[n] for n in names) for row in result}


@pytest.mark.parametrize("text", [
    "SELECT ?g ?s ?o WHERE { GRAPH ?g { ?s ?p ?o } }",
    "SELECT ?s WHERE { GRAPH <https://example.org/g1> { ?s ?p ?o } }",
    "PREFIX ex: <https://example.org/> SELECT ?s ?o WHERE { GRAPH ex:g2 { ?s ex:p ?o } }",
    "SELECT ?s ?g WHERE { ?s ?p ?o OPTIONAL { GRAPH ?g { ?s ?p ?o } } }",
    "SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o # GRAPH ?x {\n } } GROUP BY ?g",
    "SELECT ?s WHERE { GRAPH ?g { ?s ?p ?o FILTER NOT EXISTS { GRAPH <https://example.org/g2>"
    " { ?s ?p ?o } } } }",
])
def test_graph_rewrite_keeps_solutions_but_the_hidden_graphs(store: Store, text: str) -> None:
    expected = {row for row in solutions(store, text) if SYS not in row and
                NamedNode(EX + "z") not in row}
    assert solutions(store, scope_graphs(text, [SYS])) == expected


def test_graph_rewrite_of_updates_touches_where_patterns_only(store: Store) -> None:
    store.update(scope_graphs("DELETE WHERE { GRAPH ?g { ?s ?p ?o } }", [SYS], update=True))
    assert {q.graph_name for q in store} == {SYS, DefaultGraph()}
    text = scope_graphs("INSERT DATA { GRAPH <https://example.org/g1> { <a:b> <a:c> 1 } } ; "
                        "DELETE WHERE { GRAPH <https://example.org/g1> { ?s ?p ?o } }",
                        [SYS], update=True)
    assert text.startswith("INSERT DATA { GRAPH <https://example.org/g1>")
    store.update(text)
    assert not list(store.quads_for_pattern(None, None, None, G1))


def test_virtuoso_answers_read_back_exactly() -> None:
    ask = b'{"head":{"vars":["__ASK_RETVAL"]},"results":{"bindings":[{"__ASK_RETVAL":' \
          b'{"type":"typed-literal","datatype":"http://www.w3.org/2001/XMLSchema#integer",' \
          b'"value":"1"}}]}}'
    assert isinstance(yes := virtuoso_solutions(ask, "ASK", {}), QueryBoolean) and bool(yes)
    empty = b'{"head":{"vars":["__ASK_RETVAL"]},"results":{"bindings":[]}}'
    assert not bool(virtuoso_solutions(empty, "ASK", {}))
    boolean = '{"type":"typed-literal","datatype":"http://www.w3.org/2001/XMLSchema#boolean",' \
              '"value":"1"}'
    body = ('{"head":{"vars":["s","o","b","__kg_g1"]},"results":{"bindings":[{"s":{"type":'
            '"bnode","value":"nodeID://b10000"},"o":{"type":"typed-literal","datatype":'
            '"http://www.w3.org/2001/XMLSchema#integer","value":"1"},"b":' + boolean + ','
            '"__kg_g1":{"type":"uri","value":"https://example.org/g1"}}]}}').encode()
    result = virtuoso_solutions(body, "SELECT", {"o": Literal(True)})
    assert isinstance(result, QuerySolutions)
    assert [v.value for v in result.variables] == ["s", "o", "b"]
    row = next(iter(result))
    assert isinstance(row["s"], BlankNode)
    assert row["o"] == Literal(True) and row["b"] == Literal(True)
