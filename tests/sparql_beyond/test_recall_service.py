"""The recall SERVICE over HTTP: ranking, time, scope, GET and POST, malformed blocks."""

from __future__ import annotations

import json

import pytest

from kg.memory import memory_iri
from tests.sparql_beyond.conftest import ADMIN, READER, SCOPED, Service

ORDERS = "Orders are stored in the PostgreSQL table orders, one row per order"
OTHERS = ["The checkout page is written in React with a small Redux store",
          "Payments go through Stripe; refunds are stored as negative payments",
          "Shipping labels come from the carrier API every night"]
BLOCK = """SELECT ?m ?score ?rank ?content WHERE {
  SERVICE <https://jido.ai/recall> { [] recall:query "where are orders stored" ;
      recall:project "shop" ; recall:limit 5 ; recall:hit ?m ; recall:score ?score ;
      recall:rank ?rank }
  GRAPH ?g { ?m jido:content ?content }
} ORDER BY ?rank"""


@pytest.fixture(scope="module")
def shop(service: Service) -> Service:
    """Project shop with one memory about orders among others; project acme with one."""
    service.remember("shop", ORDERS)
    for text in OTHERS:
        service.remember("shop", text)
    service.remember("acme", "Orders in acme are stored in DynamoDB")
    return service


@pytest.mark.parametrize("method", ["GET", "FORM", "DIRECT"])
def test_service_ranks_the_right_memory_first(shop: Service, method: str) -> None:
    rows = shop.rows(BLOCK, method=method)
    assert rows[0]["content"] == ORDERS
    assert rows[0]["m"] == memory_iri(shop.written["shop"][0]["id"]).value
    scores = [float(r["score"]) for r in rows]
    assert scores == sorted(scores, reverse=True) and scores[0] > scores[-1]
    assert [int(r["rank"]) for r in rows] == list(range(1, len(rows) + 1))
    # The hits are the memory service's own recall: same memories, same order, same scores.
    answer = shop.post("/v1/projects/shop/recall", json.dumps(
        {"query": "where are orders stored", "limit": 5}).encode(), "application/json")
    hits = answer.json()["hits"]
    assert [r["m"] for r in rows] == [memory_iri(h["memory"]["id"]).value for h in hits]
    assert scores == pytest.approx([h["score"] for h in hits])


def test_full_iri_prefixes_and_base_name_the_same_service(shop: Service) -> None:
    body = ('{ _:r <https://jido.ai/recall#query> "orders stored" . '
            '_:r <https://jido.ai/recall#project> "shop" ; <https://jido.ai/recall#hit> ?m }')
    first = ORDERS
    for query in [f"SELECT ?c WHERE {{ SERVICE <https://jido.ai/recall> {body} "
                  "GRAPH ?g { ?m jido:content ?c } } LIMIT 1",
                  f"PREFIX j: <https://jido.ai/> SELECT ?c WHERE {{ SERVICE j:recall {body} "
                  "GRAPH ?g { ?m jido:content ?c } } LIMIT 1",
                  f"BASE <https://jido.ai/> SELECT ?c WHERE {{ SERVICE <recall> {body} "
                  "GRAPH ?g { ?m jido:content ?c } } LIMIT 1"]:
        assert shop.rows(query) == [{"c": first}]


def test_forgotten_memory_is_omitted_unless_as_of_before_the_forget(shop: Service) -> None:
    memory = shop.remember("shop", "Invoices are archived to cold storage after a year")
    answer = shop.post(f"/v1/projects/shop/memories/{memory['id']}/forget", b"{}",
                       "application/json", ADMIN)
    assert answer.status == 200, answer.body
    iri = memory_iri(memory["id"]).value
    query = """SELECT ?m WHERE { SERVICE <https://jido.ai/recall> {
        [] recall:query "invoices archived cold storage" ; recall:project "shop" ;
           recall:hit ?m %s } }"""
    assert iri not in {r["m"] for r in shop.rows(query % "")}
    as_of = f'; recall:asOf "{memory["recorded_at"]}"^^<http://www.w3.org/2001/XMLSchema#dateTime>'
    assert shop.rows(query % as_of)[0]["m"] == iri


def test_scoped_token_gets_no_hits_from_another_project(shop: Service) -> None:
    answer = shop.query(BLOCK, token=SCOPED)
    assert (answer.status, answer.error_code) == (403, "forbidden")
    assert "shop" in answer.json()["error"]["message"]
    own = BLOCK.replace('"shop"', '"acme"')
    assert [r["content"] for r in shop.rows(own, token=SCOPED)] == [
        "Orders in acme are stored in DynamoDB"]


def test_other_service_iris_keep_the_allow_list(shop: Service) -> None:
    answer = shop.query("SELECT * WHERE { SERVICE <https://jido.ai/recall/other> { ?s ?p ?o } }")
    assert (answer.status, answer.error_code) == (403, "remote_access_denied")


@pytest.mark.parametrize(("block", "needle"), [
    ('recall:project "shop" ; recall:hit ?m', "recall:query"),
    ('recall:query "x" ; recall:project "shop", "acme" ; recall:hit ?m', "two projects"),
    ('recall:query ?q ; recall:project "shop" ; recall:hit ?m', "needs a literal"),
    ('recall:query "x" ; recall:project "shop" ; recall:hit "m"', "binds a variable"),
    ('recall:query "x" ; recall:project "shop" ; recall:hit ?m ; recall:colour "red"',
     "unknown recall term"),
    ('recall:query "x" ; recall:project "shop" ; recall:hit ?m ; recall:limit "five"',
     "integer"),
])
@pytest.mark.parametrize("method", ["GET", "FORM"])
def test_malformed_block_is_a_400_naming_the_problem(shop: Service, block: str, needle: str,
                                                     method: str) -> None:
    query = f"SELECT ?m WHERE {{ SERVICE <https://jido.ai/recall> {{ [] {block} }} }}"
    answer = shop.query(query, method=method)
    assert (answer.status, answer.error_code) == (400, "invalid_recall_service"), answer.body
    assert needle in answer.json()["error"]["message"]


def test_reader_needs_no_admin_for_recall(shop: Service) -> None:
    assert shop.rows(BLOCK, token=READER)


def test_an_update_can_use_recall_too(shop: Service) -> None:
    update = ('PREFIX recall: <https://jido.ai/recall#> INSERT { GRAPH <https://example.org/tags> '
              '{ ?m <https://example.org/about> "orders" } } WHERE { SERVICE <https://jido.ai/recall>'
              ' { [] recall:query "orders stored" ; recall:project "shop" ; recall:limit 1 ; '
              'recall:hit ?m } }')
    answer = shop.post("/update", update.encode(), "application/sparql-update", ADMIN)
    assert answer.status == 204, answer.body
    rows = shop.rows("SELECT ?m WHERE { GRAPH <https://example.org/tags> { ?m ?p ?o } }")
    assert rows == [{"m": memory_iri(shop.written["shop"][0]["id"]).value}]
