"""The store contract, run on every backend: embedded pyoxigraph and a real remote server."""

from __future__ import annotations

import io

import pytest
from pyoxigraph import (
    DefaultGraph,
    Literal,
    NamedNode,
    Quad,
    QueryBoolean,
    QuerySolutions,
    QueryTriples,
    RdfFormat,
    Triple,
)

from kg.errors import QuerySyntaxError, ValidationError
from kg.store import Store
from kg.store.guard import NestingTooDeepError

EX = "https://example.org/"
G1, G2 = NamedNode(EX + "g1"), NamedNode(EX + "g2")
P, Q = NamedNode(EX + "p"), NamedNode(EX + "q")
HOSTILE = [
    'quote " and \' apostrophe',
    "new\nline\r\ttab",
    "close } brace { and ) paren",
    '""" triple quotes \'\'\' ',
    "back\\slash \\\" escaped",
    "# not a comment <not-an-iri> ?notavar $nor",
    "} } ; DROP ALL ; INSERT DATA { <a:b> <a:b> <a:b> }",
    "unicode: é ß 東京 😀 \u200b zero-width",
    "",
]


def s(i: int | str) -> NamedNode:
    return NamedNode(f"{EX}s{i}")


def rows(result: object) -> list[dict[str, object]]:
    assert isinstance(result, QuerySolutions)
    names = [v.value for v in result.variables]
    return [{n: row[n] for n in names if row[n] is not None} for row in result]


def test_add_then_query_with_substitutions(any_store: Store) -> None:
    any_store.add([Quad(s(1), P, Literal(1), G1), Quad(s(2), P, Literal(2), G1)])
    result = any_store.query("SELECT ?s ?o WHERE { GRAPH ?g { ?s ?p ?o } }",
                             substitutions={"s": s(2)})
    assert rows(result) == [{"s": s(2), "o": Literal(2)}]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_strings_round_trip_and_bind_exactly(any_store: Store, text: str) -> None:
    hostile = Literal(text)
    tagged = Literal(text, language="en")
    any_store.add([Quad(s("h"), P, hostile, G1), Quad(s("t"), P, tagged, G1),
                   Quad(s("x"), P, Literal("decoy"), G1)])
    found = any_store.query("SELECT ?s ?o WHERE { GRAPH ?g { ?s ?p ?o } }",
                            substitutions={"o": hostile})
    assert rows(found) == [{"s": s("h"), "o": hostile}]
    assert bool(any_store.query("ASK { GRAPH ?g { ?s ?p ?o } }", substitutions={"o": tagged}))
    assert {q.object for q in any_store.quads(graph=G1)} == {hostile, tagged, Literal("decoy")}
    # Nothing was executed from the string: the three quads are all there is.
    assert len(list(any_store.quads())) == 3


def test_substitution_of_typed_literals_and_iris(any_store: Store) -> None:
    values = [Literal(2.5), Literal(True), Literal("2024-01-01T00:00:00Z",
              datatype=NamedNode("http://www.w3.org/2001/XMLSchema#dateTime")),
              NamedNode(EX + "o?x=1&y=%7D#frag")]
    any_store.add([Quad(s(i), P, v, G1) for i, v in enumerate(values)])
    for i, v in enumerate(values):
        found = any_store.query("SELECT ?s ?o WHERE { GRAPH ?g { ?s ?p ?o } }",
                                substitutions={"o": v})
        assert rows(found) == [{"s": s(i), "o": v}]


def test_substitution_seeds_aggregates_and_must_be_projected(any_store: Store) -> None:
    any_store.add([Quad(s(1), P, Literal(i), G1) for i in range(3)]
                  + [Quad(s(2), P, Literal(9), G1)])
    counted = any_store.query(
        "SELECT ?s (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?s",
        substitutions={"s": s(1)})
    assert rows(counted) == [{"s": s(1), "n": Literal(3)}]
    with pytest.raises((ValidationError, RuntimeError)):
        any_store.query("SELECT ?o WHERE { GRAPH ?g { ?s ?p ?o } }", substitutions={"s": s(1)})


def test_dataset_restriction(any_store: Store) -> None:
    any_store.add([Quad(s(1), P, Literal(1), G1), Quad(s(2), P, Literal(2), G2),
                   Quad(s(0), P, Literal(0))])
    text = "SELECT ?s WHERE { ?s ?p ?o }"
    assert rows(any_store.query(text)) == [{"s": s(0)}]
    assert rows(any_store.query(text, default_graph=[G1])) == [{"s": s(1)}]
    assert {r["s"] for r in rows(any_store.query(text, default_graph=[G1, G2]))} == {s(1), s(2)}
    union = {r["s"] for r in rows(any_store.query(text, use_default_graph_as_union=True))}
    assert union == {s(0), s(1), s(2)}
    named = "SELECT ?g WHERE { GRAPH ?g { ?s ?p ?o } }"
    assert rows(any_store.query(named, default_graph=[G1], named_graphs=[G2])) == [{"g": G2}]
    # FROM alone keeps every named graph visible, as pyoxigraph does.
    assert {r["g"] for r in rows(any_store.query(named, default_graph=[G1]))} == {G1, G2}


def test_add_and_remove_are_exact_and_atomic(any_store: Store) -> None:
    any_store.add(Quad(s(i), P, Literal(i), G1) for i in range(5))
    any_store.remove([Quad(s(1), P, Literal(1), G1), Quad(s(3), P, Literal(3), G1)])
    assert sorted(int(q.object.value) for q in any_store.quads(graph=G1)) == [0, 2, 4]
    with pytest.raises(QuerySyntaxError):
        any_store.update("INSERT DATA { GRAPH <https://example.org/g1> { <a:x> <a:y> 1 } } ; "
                         "INSERT DATA { this is not sparql }")
    assert len(list(any_store.quads(graph=G1))) == 3


def test_update_is_one_transaction(any_store: Store) -> None:
    any_store.update(f"INSERT DATA {{ GRAPH {G1} {{ {s(1)} {P} 1 }} }} ; "
                     f"DELETE DATA {{ GRAPH {G1} {{ {s(1)} {P} 1 }} }} ; "
                     f"INSERT DATA {{ GRAPH {G2} {{ {s(2)} {Q} 'two' }} }}")
    assert list(any_store.quads()) == [Quad(s(2), Q, Literal("two"), G2)]


def test_quads_patterns(any_store: Store) -> None:
    any_store.add([Quad(s(1), P, Literal(1), G1), Quad(s(1), Q, Literal(2), G2),
                   Quad(s(2), P, Literal(3))])
    assert {q.graph_name for q in any_store.quads(subject=s(1))} == {G1, G2}
    assert list(any_store.quads(predicate=P, graph=DefaultGraph())) == \
        [Quad(s(2), P, Literal(3))]
    assert list(any_store.quads(object=Literal(2))) == [Quad(s(1), Q, Literal(2), G2)]


def test_load_is_all_or_nothing(any_store: Store) -> None:
    good = f"{s(1)} {P} \"one\" .\n{s(2)} {P} \"two\" .\n"
    any_store.load(data=good, format=RdfFormat.N_TRIPLES, to_graph=G1)
    assert len(list(any_store.quads(graph=G1))) == 2
    with pytest.raises(QuerySyntaxError):
        any_store.load(data=good.replace("two", "3") + "<bad", format=RdfFormat.N_TRIPLES,
                       to_graph=G2)
    assert not any_store.contains_graph(G2)
    trig = f"{G2} {{ {s(3)} {Q} 3 . }}"
    any_store.load(data=trig.encode(), format=RdfFormat.TRIG)
    assert list(any_store.quads(graph=G2)) == [Quad(s(3), Q, Literal(3), G2)]


def test_dump_round_trips(any_store: Store) -> None:
    quads = [Quad(s(1), P, Literal("a\nb \"c\""), G1), Quad(s(2), Q, Literal(2), G2),
             Quad(s(3), P, Literal(3))]
    any_store.add(quads)
    whole = io.BytesIO()
    any_store.dump(whole, format=RdfFormat.N_QUADS)
    import pyoxigraph

    assert set(pyoxigraph.parse(whole.getvalue(), format=RdfFormat.N_QUADS)) == set(quads)
    one = io.BytesIO()
    any_store.dump(one, format=RdfFormat.TURTLE, from_graph=G1)
    assert [t.object for t in pyoxigraph.parse(one.getvalue(), format=RdfFormat.TURTLE)] == \
        [Literal("a\nb \"c\"")]


def test_named_graphs_contains_drop_and_replace(any_store: Store) -> None:
    any_store.add([Quad(s(1), P, Literal(1), G1), Quad(s(2), P, Literal(2), G2)])
    assert {G1, G2} <= set(any_store.named_graphs())
    assert any_store.contains_graph(G1)
    any_store.drop_graph(G1)
    assert not any_store.contains_graph(G1)
    assert G1 not in any_store.named_graphs()
    assert list(any_store.quads(graph=G2)) == [Quad(s(2), P, Literal(2), G2)]
    any_store.replace_graph(G2, [Quad(s(9), Q, Literal(9))])
    assert list(any_store.quads(graph=G2)) == [Quad(s(9), Q, Literal(9), G2)]


def test_ask_and_construct_return_pyoxigraph_results(any_store: Store) -> None:
    any_store.add([Quad(s(1), P, Literal(1), G1), Quad(s(2), P, Literal("x}"), G1)])
    yes = any_store.query("ASK { GRAPH ?g { ?s ?p 1 } }")
    no = any_store.query("ASK { GRAPH ?g { ?s ?p 2 } }")
    assert isinstance(yes, QueryBoolean) and bool(yes) is True
    assert isinstance(no, QueryBoolean) and bool(no) is False
    built = any_store.query("CONSTRUCT { ?s ?q ?o } WHERE { GRAPH ?g { ?s ?p ?o } }",
                            substitutions={"q": Q})
    assert isinstance(built, QueryTriples)
    assert set(built) == {Triple(s(1), Q, Literal(1)), Triple(s(2), Q, Literal("x}"))}
    short = any_store.query("CONSTRUCT WHERE { ?s ?p ?o }", default_graph=[G1],
                            substitutions={"s": s(2)})
    assert list(short) == [Triple(s(2), P, Literal("x}"))]  # type: ignore[arg-type]


def test_errors_are_kg_errors(any_store: Store) -> None:
    with pytest.raises(QuerySyntaxError):
        any_store.query("SELECT WHERE {")
    with pytest.raises(QuerySyntaxError):
        any_store.update("INSERT DATA { <a:b> <a:b> }")
    with pytest.raises(NestingTooDeepError):
        any_store.query("SELECT * WHERE " + "{" * 5000 + "}" * 5000)


def test_blank_nodes_survive_a_round_trip(any_store: Store) -> None:
    from pyoxigraph import BlankNode

    node = BlankNode()
    any_store.add([Quad(node, P, Literal(1)), Quad(s(1), P, node),
                   Quad(s(2), Q, node, G1), Quad(node, Q, Literal(2), G1)])
    found = list(any_store.quads())
    assert len(found) == 4
    default = [q for q in found if q.graph_name == DefaultGraph()]
    by_subject = {q.subject for q in default} - {s(1)}
    assert len(by_subject) == 1 and Quad(s(1), P, next(iter(by_subject))) in default
