"""The nesting guard against pyoxigraph: it counts what pyoxigraph recurses into, nothing else.

Generated queries have a nesting known by construction; pyoxigraph (in a child process, so a
crash cannot take this one down) proves they are real SPARQL, the guard must measure exactly
that nesting, and nothing the guard accepts may crash pyoxigraph.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyoxigraph
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kg.store.guard import (
    DEFAULT_MAX_CHAIN,
    DEFAULT_MAX_NESTING,
    NestingTooDeepError,
    check_nesting,
    check_rdf_nesting,
    measure,
)
from tests.store.parser_process import ParserProcess
from tests.store.sparql_gen import PREFIXES, Piece, iris, queries, strings

CAP = DEFAULT_MAX_NESTING
# Around the cap, and anywhere below it.
DEPTHS = st.one_of(st.integers(0, 12), st.integers(CAP - 6, CAP + 6), st.integers(0, CAP + 40))
SLOW = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.fixture(scope="module")
def oxigraph() -> Iterator[ParserProcess]:
    process = ParserProcess()
    yield process
    process.close()


def refused(text: str, **limits: int) -> bool:
    try:
        check_nesting(text, **limits)
    except NestingTooDeepError:
        return True
    return False


@SLOW
@given(queries(depths=DEPTHS))
def test_the_guard_measures_the_nesting_that_was_built(query: Piece) -> None:
    assert measure(query.text).depth == query.depth
    assert refused(query.text, max_chain=10**9) == (query.depth > CAP)


@SLOW
@given(queries(depths=DEPTHS))
def test_generated_queries_are_sparql_and_never_crash_pyoxigraph(
        oxigraph: ParserProcess, query: Piece) -> None:
    verdict = oxigraph.run(query.text)
    assert verdict in ("ok", "slow") or verdict.startswith("error "), (verdict, query.text)


# Payloads that nest far deeper than pyoxigraph survives on an 8 MiB stack, hidden from a
# scanner that takes the longest token for granted, next to ones that only look deep.
DEEP = 20_000
HIDDEN = {
    "less-than, then |": ("ASK{FILTER(1<", "(", "1", ")", "||2>1)}"),
    "less-than, IRIREF-like up to &&2>": ("ASK{FILTER(1<", "(", "1", ")", "&&2>1)}"),
    "less-than, then a quote": ("ASK{FILTER(1<1&&'x>'=", "(", "1", ")", ")}"),
    "less-than, then #": ("ASK{FILTER(1<2#> c\n+", "(", "1", ")", ")}"),
    "less-than, then # and '''": ("ASK{FILTER(1<2#> '''\n+", "(", "1", ")", "\n''')}"),
    "function call after FILTER": ("ASK{FILTER ex:f(1<1&&'x>'=", "(", "1", ")", ")}"),
    "behind a comment": ("ASK{ # '''\n", "{", "", "}", "}"),
    "blank nodes": ("ASK{?s ?p ", "[?p ", "1", "]", "}"),
    "collections": ("ASK{?s ?p ", "(", "1", ")", "}"),
    "triple terms": ("ASK{?s ?p ", "<<( ?s ?p ", "1", " )>>", "}"),
    "EXISTS": ("ASK{", "FILTER EXISTS{", "", "}", "}"),
    "unary not": ("ASK{FILTER(", "!", "true", "", ")}"),
    "sums": ("ASK{FILTER(", "1+", "1", "", ")}"),
    "disjunctions": ("ASK{FILTER(", "true||", "true", "", ")}"),
    "FILTERs": ("ASK{", "FILTER(true)", "", "", "}"),
    "OPTIONALs": ("ASK{?a ?b ?c ", "OPTIONAL{?a ?b ?c}", "", "", "}"),
    "UNIONs": ("ASK{", "{?a ?b ?c} UNION ", "{}", "", "}"),
    "path triples": ("ASK{", "?s ex:p/ex:q ?o .", "", "", "}"),
}
LOOKS_DEEP = {
    "in a string": ("ASK{FILTER('", "(", "", "", "' != '')}"),
    "in a long string": ("ASK{FILTER('''", "{[(", "", "\n", "''' != '')}"),
    "in an IRI": ("ASK{?s ?p <http://x/", "(", "", ")", ">}"),
    "in a comment": ("ASK{ #", "{{{", "", "", "\n}"),
    "in escaped names": ("ASK{?s ?p ex:a", "\\(", "", "", "}"),
}


# pyoxigraph plans these in time growing with a power of their count (100 path triples sharing
# variables: 12 s; 250 nested blank nodes: 47 s), far below any stack limit: keep them small.
COSTLY = {"blank nodes": 60, "collections": 40, "OPTIONALs": 150, "path triples": 25}


def payload(parts: tuple[str, str, str, str, str], times: int) -> str:
    head, opening, core, closing, tail = parts
    return f"{PREFIXES}{head}{opening * times}{core}{closing * times}{tail}"


@pytest.mark.parametrize("name", HIDDEN)
def test_hidden_nesting_and_chains_are_refused(oxigraph: ParserProcess, name: str) -> None:
    text = payload(HIDDEN[name], DEEP)
    assert refused(text)
    assert oxigraph.run(text).startswith("crash"), "not deep enough to show the guard matters"


@pytest.mark.parametrize("name", LOOKS_DEEP)
def test_brackets_in_strings_iris_comments_and_names_do_not_count(
        oxigraph: ParserProcess, name: str) -> None:
    text = payload(LOOKS_DEEP[name], DEEP)
    assert not refused(text)
    assert oxigraph.run(text) == "ok"


@SLOW
@given(st.sampled_from(sorted(HIDDEN)), st.integers(0, 3 * CAP),
       st.sampled_from(sorted(LOOKS_DEEP)), st.integers(0, DEEP))
def test_what_the_guard_accepts_never_crashes_pyoxigraph(
        oxigraph: ParserProcess, hidden: str, times: int, noise: str, noise_times: int) -> None:
    # A real nesting somewhere around the limits, next to lots of brackets that do not nest.
    times = min(times, COSTLY.get(hidden, times))
    real, looks = payload(HIDDEN[hidden], times), payload(LOOKS_DEEP[noise], noise_times)
    text = real.replace("ASK{", "ASK{ {" + looks[len(PREFIXES) + 4:-1] + "} ", 1)
    if not refused(text):
        verdict = oxigraph.run(text)
        assert not verdict.startswith("crash"), (hidden, times, noise, noise_times)


@given(st.lists(st.one_of(strings(), iris()), min_size=1, max_size=20),
       st.integers(0, 2 * CAP))
def test_rdf_documents_count_only_real_brackets(terms: list[str], depth: int) -> None:
    turtle = ("<http://s> <http://p> " + "[ <http://p> " * depth + ", ".join(terms)
              + " ]" * depth + " .")
    assert len(list(pyoxigraph.parse(turtle, format=pyoxigraph.RdfFormat.TURTLE))) > 0
    try:
        check_rdf_nesting(turtle)
    except NestingTooDeepError:
        assert depth > CAP
    else:
        assert depth <= CAP


@pytest.mark.parametrize("count", [DEFAULT_MAX_CHAIN // 2, DEFAULT_MAX_CHAIN * 2])
def test_values_blocks_and_data_do_not_chain(count: int) -> None:
    rows = "".join(f'(<http://x/{i}> "a-b" -{i}) ' for i in range(count * 10))
    assert not refused(f"SELECT * {{ VALUES (?a ?b ?c) {{ {rows} }} }}")
    triples = "".join(f"<http://s> <http://p> -{i}, [ <http://q> ( 1 2 ) ] ." for i in
                      range(count * 10))
    assert not refused(f"INSERT DATA {{ GRAPH <http://g> {{ {triples} }} }}")
    assert refused("ASK{" + "FILTER(true)" * count + "}") == (count > DEFAULT_MAX_CHAIN)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="(){}[]<>!|&+-*/ ?xFILTERBINDab12'\"#\n", max_size=40),
       st.integers(1, 40), st.integers(1, 40))
def test_a_text_no_longer_than_the_limits_cannot_pass_them(text: str, limit: int,
                                                           chain: int) -> None:
    # check_nesting skips measuring such a text: every level and link takes a character.
    shape = measure(text)
    if len(text) <= min(limit, chain):
        assert shape.depth <= limit and shape.chain <= chain
        assert not refused(text, limit=limit, max_chain=chain)
    else:
        assert refused(text, limit=limit, max_chain=chain) == (
            shape.depth > limit or shape.chain > chain)
