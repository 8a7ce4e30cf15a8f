"""The recall: vocabulary: every term the SERVICE accepts is declared, and served at /recall."""

from __future__ import annotations

import pyoxigraph
import pytest
from pyoxigraph import NamedNode, Variable

from kg.resources import ontology_path
from kg.sparql.recall_service import (
    INPUTS,
    NAMESPACE,
    OUTPUTS,
    SERVICE_IRI,
    RecallServiceError,
    expand,
    recall_blocks,
)
from kg.terms import MemoryType
from tests.sparql.http import call
from tests.sparql_beyond.conftest import Service

RDF_TYPE = NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")


def _declared() -> set[str]:
    return {str(q.subject.value)[len(NAMESPACE):]
            for q in pyoxigraph.parse(path=str(ontology_path("recall.ttl")))
            if q.predicate == RDF_TYPE and isinstance(q.subject, NamedNode)
            and q.subject.value.startswith(NAMESPACE) and q.subject.value[len(NAMESPACE):][0]
            .islower()}


def test_every_accepted_term_is_declared_and_every_declared_term_accepted() -> None:
    assert _declared() == {*INPUTS, *OUTPUTS}


def test_the_vocabulary_is_served_at_recall(service: Service) -> None:
    answer = call(f"{service.server.url}/recall")
    assert answer.status == 200 and answer.headers["content-type"].startswith("text/turtle")
    served = {str(q.subject.value) for q in pyoxigraph.parse(answer.body,
                                                             format=pyoxigraph.RdfFormat.TURTLE)}
    assert {NAMESPACE + t for t in (*INPUTS, *OUTPUTS)} <= served and SERVICE_IRI in served


def test_a_block_reads_every_input_and_output() -> None:
    text = """PREFIX r: <https://jido.ai/recall#> PREFIX jido: <https://jido.ai/ontology#>
    PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>
    SELECT * { SERVICE SILENT <https://jido.ai/recall> { ?req r:query '''it\\'s "orders"''' ;
      r:project "shop"@en ; r:limit 3 ; r:mode "text" ; r:type "bug", jido:Decision ;
      r:minConfidence 0.5 ; r:asOf "2024-05-01T10:00:00Z"^^xsd:dateTime ;
      r:hit ?m ; r:score $s ; r:rank ?k . } }"""
    (block,) = recall_blocks(text)
    request = block.request
    assert (request.query, request.project, request.limit, request.mode) == (
        'it\'s "orders"', "shop", 3, "text")
    assert request.types == (MemoryType.BUG, MemoryType.DECISION)
    assert request.min_confidence == 0.5 and request.as_of is not None
    assert (request.hit, request.score, request.rank) == (Variable("m"), Variable("s"),
                                                          Variable("k"))
    out = expand(text, [block], lambda r: [(NamedNode("https://jido.ai/data/memory/a"), 0.75)])
    assert out.endswith('SELECT * { VALUES (?m ?s ?k) { (<https://jido.ai/data/memory/a> '
                        '"0.75"^^<http://www.w3.org/2001/XMLSchema#double> '
                        '"1"^^<http://www.w3.org/2001/XMLSchema#integer>) } }')


@pytest.mark.parametrize("block", [
    '[] recall:query "x" ; recall:project "p" ; recall:hit ?m . _:other recall:limit 2',
    '[] recall:query "x" ; recall:project "p" ; recall:hit ?m ; a recall:Request',
    '[] recall:query "x" ; recall:project "p" ; recall:hit ?m ; recall:score ?m',
    '[] recall:query "x" ; recall:project "p" ; recall:hit ?m ; recall:type "nonsense"',
    '[] recall:query "x" ; recall:project "p" ; recall:hit ?m ; recall:asOf "yesterday"',
    '[] recall:query "x" ; recall:project "p" ; recall:hit ?m { }',
    '"s" recall:query "x"',
])
def test_malformed_blocks_are_refused(block: str) -> None:
    text = (f"PREFIX recall: <https://jido.ai/recall#> "
            f"SELECT * {{ SERVICE <{SERVICE_IRI}> {{ {block} }} }}")
    with pytest.raises(RecallServiceError):
        recall_blocks(text)


def test_recall_in_strings_comments_and_other_services_is_not_a_block() -> None:
    text = ('SELECT * { # SERVICE <https://jido.ai/recall> { }\n'
            '?s ?p "SERVICE <https://jido.ai/recall> { }" '
            'SERVICE <https://jido.ai/recall2> { ?s ?p ?o } }')
    assert recall_blocks(text) == []
