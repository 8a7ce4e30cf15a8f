"""The HTTP skeleton: health, the ontology with content negotiation, the one error shape."""

from __future__ import annotations

import json

import pytest
import rdflib
from flask.testing import FlaskClient

RDF_TYPES = {
    "text/turtle": "turtle",
    "application/rdf+xml": "xml",
    "application/ld+json": "json-ld",
    "application/n-triples": "nt",
}


def assert_error_shape(response: object, status: int) -> dict[str, object]:
    """Check the one JSON error shape and return its inner object."""
    assert response.status_code == status  # type: ignore[attr-defined]
    assert response.mimetype == "application/json"  # type: ignore[attr-defined]
    body = json.loads(response.data)  # type: ignore[attr-defined]
    assert set(body) == {"error"}
    error = body["error"]
    assert set(error) == {"status", "code", "message", "details"}
    assert error["status"] == status and error["message"] and isinstance(error["code"], str)
    return dict(error)


def test_health(client: FlaskClient) -> None:
    r = client.get("/health")
    assert r.status_code == 200
    assert r.json is not None and r.json["status"] == "ok"
    assert r.json["ontology_version"] == "1.0.0"


@pytest.mark.parametrize("media_type", sorted(RDF_TYPES))
def test_ontology_in_every_rdf_format(client: FlaskClient, media_type: str) -> None:
    r = client.get("/ontology", headers={"Accept": media_type})
    assert r.status_code == 200 and r.mimetype == media_type
    graph = rdflib.Graph().parse(data=r.data, format=RDF_TYPES[media_type])
    onto = rdflib.URIRef("https://jido.ai/ontology")
    assert (onto, rdflib.RDF.type, rdflib.OWL.Ontology) in graph
    assert len(graph) > 500


def test_ontology_prefers_by_q_value(client: FlaskClient) -> None:
    r = client.get("/ontology", headers={
        "Accept": "text/turtle;q=0.5, application/rdf+xml;q=0.9, */*;q=0.1"})
    assert r.mimetype == "application/rdf+xml"
    assert client.get("/ontology", headers={"Accept": "*/*"}).mimetype == "text/turtle"
    assert client.get("/ontology").mimetype == "text/turtle"


def test_ontology_html_page_for_browsers(client: FlaskClient) -> None:
    r = client.get("/ontology", headers={"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"})
    assert r.status_code == 200 and r.mimetype == "text/html"
    page = r.data.decode()
    assert "jido:ArchitecturalDecision" in page and "jido:LessonLearned" in page


def test_unknown_accept_gets_406_in_the_error_shape(client: FlaskClient) -> None:
    error = assert_error_shape(client.get("/ontology", headers={"Accept": "image/png"}), 406)
    assert error["code"] == "not_acceptable"
    assert "text/turtle" in error["details"]["available"]  # type: ignore[index]


def test_unknown_route_and_method_use_the_error_shape(client: FlaskClient) -> None:
    assert_error_shape(client.get("/no-such-route"), 404)
    r = client.post("/ontology")
    assert_error_shape(r, 405)
    assert "GET" in r.headers["Allow"]
