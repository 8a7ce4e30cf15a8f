"""One SPARQL 1.1 server's query and update endpoints, its dialect and the graphs a query sees."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from pyoxigraph import BlankNode, DefaultGraph, NamedNode, QuerySolutions

from kg.errors import ValidationError
from kg.store.base import GraphName, QueryResult, Term
from kg.store.guard import check_nesting
from kg.store.lexer import query_form
from kg.store.sparql_client import SparqlClient
from kg.store.sparql_results import (
    GRAPH_ACCEPT,
    JSON_TYPES,
    SOLUTIONS_ACCEPT,
    boolean_result,
    parse_solutions,
    parse_triples,
    virtuoso_solutions,
)
from kg.store.sparql_terms import bind_values, graph_text, scope_graphs

__all__ = ["VIRTUOSO_SYSTEM_GRAPHS", "Dialect", "SparqlEndpoint"]

Dialect = Literal["oxigraph", "virtuoso", "generic"]

# Graphs every Virtuoso holds for itself (quad-map metadata, the LDP vocabulary); graphs that
# describe a SPARQL service (`<host>/sparql`) are found on first use.
VIRTUOSO_SYSTEM_GRAPHS = ("http://www.openlinksw.com/schemas/virtrdf#",
                          "http://www.w3.org/ns/ldp#")
_SERVICE_GRAPHS = ("SELECT DISTINCT ?g WHERE { GRAPH ?g "
                   "{ ?g a <http://www.w3.org/ns/sparql-service-description#Service> } }")


class SparqlEndpoint:
    """Queries and updates over the SPARQL 1.1 protocol, the dataset spelled out per dialect."""

    def __init__(
        self,
        query_url: str,
        *,
        update_url: str | None = None,
        dialect: Dialect = "generic",
        default_graph_iri: str | None = None,
        client: SparqlClient | None = None,
        system_graphs: Sequence[str] = (),
    ) -> None:
        self.query_url = query_url
        self.update_url = update_url or query_url
        self.dialect = dialect
        # Servers without a real default graph (Virtuoso) keep "the default graph" in this IRI.
        self.default_graph_iri = NamedNode(default_graph_iri) if default_graph_iri else None
        self.client = client or SparqlClient()
        # Virtuoso: graphs hidden from every query and update (its own, plus `system_graphs`).
        self._extra_system = tuple(system_graphs)
        self._system: tuple[NamedNode, ...] | None = None

    def query(
        self,
        sparql: str,
        *,
        substitutions: Mapping[str, Term] | None = None,
        default_graph: Sequence[GraphName] | None = None,
        named_graphs: Sequence[NamedNode | BlankNode] | None = None,
        use_default_graph_as_union: bool = False,
        base_iri: str | None = None,
    ) -> QueryResult:
        """Run a SPARQL query; values enter only through `substitutions`."""
        check_nesting(sparql)
        text = bind_values(sparql, substitutions) if substitutions else sparql
        if base_iri is not None:
            text = f"BASE {NamedNode(base_iri)}\n{text}"
        form = query_form(sparql) or ""
        if self.dialect == "virtuoso":
            dataset, pragmas = self._virtuoso_dataset(default_graph, named_graphs,
                                                      use_default_graph_as_union)
            text = pragmas + scope_graphs(text, self._hidden_graphs())
        else:
            dataset = self._dataset(default_graph, named_graphs, use_default_graph_as_union)
        graph_form = form in ("CONSTRUCT", "DESCRIBE")
        answer = self.client.send(
            "POST", self.query_url, fields=[("query", text), *dataset], idempotent=True,
            headers={"Accept": GRAPH_ACCEPT if graph_form else SOLUTIONS_ACCEPT},
        )
        if graph_form:
            return parse_triples(answer)
        if self.dialect == "virtuoso" and answer.media_type in JSON_TYPES:
            return virtuoso_solutions(answer.body, form, substitutions or {})
        result = parse_solutions(answer)
        if form == "ASK" and isinstance(result, QuerySolutions):
            # Virtuoso may answer ASK with a one-cell table (1 or 0) instead of a boolean.
            rows = list(result)
            cell = rows[0][0] if rows and len(rows[0]) else None
            return boolean_result(cell is not None and cell.value.lower() in ("1", "true"))
        return result

    def update(self, sparql: str, *, base_iri: str | None = None) -> None:
        """Run a SPARQL update as one transaction (one request, never retried)."""
        check_nesting(sparql)
        text = f"BASE {NamedNode(base_iri)}\n{sparql}" if base_iri is not None else sparql
        field = "update"
        if self.dialect == "virtuoso":
            # Updates go as `query=`; the default graph is the stand-in IRI and `GRAPH ?g`
            # never reaches Virtuoso's own graphs.
            field = "query"
            hidden = self.default_graph_iri
            use = f"DEFINE input:default-graph-uri {hidden}\n" if hidden is not None else ""
            text = use + scope_graphs(text, self._hidden_graphs(), update=True)
        self.client.send("POST", self.update_url, fields=[(field, text)], idempotent=False)

    @property
    def has_default_graph(self) -> bool:
        """False on a server whose default graph is only the union of its named graphs."""
        return self.dialect != "virtuoso" or self.default_graph_iri is not None

    def named_graphs(self) -> list[NamedNode | BlankNode]:
        """List the named graphs (on Virtuoso: not its own system graphs)."""
        pattern = "{ ?s ?p ?o }" if self.dialect == "virtuoso" else "{ }"
        rows = self.query(f"SELECT DISTINCT ?g WHERE {{ GRAPH ?g {pattern} }}")
        assert isinstance(rows, QuerySolutions)
        found = [row["g"] for row in rows]
        hidden = {self.default_graph_iri, *(self._system or ())}
        return [g for g in found if isinstance(g, NamedNode | BlankNode) and g not in hidden]

    def system_graphs(self) -> tuple[NamedNode, ...]:
        """Virtuoso's own graphs, hidden from every query and update (found once, then kept)."""
        if self._system is None:
            answer = self.client.send("POST", self.query_url, fields=[("query", _SERVICE_GRAPHS)],
                                      idempotent=True, headers={"Accept": SOLUTIONS_ACCEPT})
            found = virtuoso_solutions(answer.body, "SELECT", {}) \
                if answer.media_type in JSON_TYPES else parse_solutions(answer)
            assert isinstance(found, QuerySolutions)
            service = [row["g"].value for row in found if isinstance(row["g"], NamedNode)]
            names = (*VIRTUOSO_SYSTEM_GRAPHS, *self._extra_system, *service)
            self._system = tuple(NamedNode(n) for n in dict.fromkeys(names))
        return self._system

    def close(self) -> None:
        """Close the pooled HTTP connections."""
        self.client.close()

    def _hidden_graphs(self) -> list[NamedNode]:
        hidden = self.default_graph_iri
        return [*self.system_graphs(), *([hidden] if hidden is not None else [])]

    def _virtuoso_dataset(self, default_graph: Sequence[GraphName] | None,
                          named_graphs: Sequence[NamedNode | BlankNode] | None,
                          union: bool) -> tuple[list[tuple[str, str]], str]:
        """Protocol fields and DEFINE pragmas that spell the dataset out for Virtuoso.

        Virtuoso's own default graph is the union of every graph, its own included: it is
        always named explicitly. (`GRAPH` patterns are narrowed by `scope_graphs`, because
        Virtuoso ignores the protocol's named-graph set for `GRAPH ?g` and matches nothing
        for `GRAPH <c>` once a default graph is given.)
        """
        hidden = self.default_graph_iri
        fields: list[tuple[str, str]] = []
        pragmas = ""
        if default_graph is None and not union:
            default_graph = [DefaultGraph()]
        if default_graph is None or (hidden is None and DefaultGraph() in default_graph):
            # The union of all graphs but Virtuoso's own.
            pragmas += "".join(f"DEFINE input:default-graph-exclude {g}\n"
                               for g in self.system_graphs())
        else:
            targets = [hidden if isinstance(g, DefaultGraph) else g for g in default_graph]
            fields += [("default-graph-uri", graph_text(g)[1:-1]) for g in targets if g]
        if named_graphs is not None:
            fields += [("named-graph-uri", graph_text(g)[1:-1]) for g in named_graphs]
        return fields, pragmas

    def _dataset(self, default_graph: Sequence[GraphName] | None,
                 named_graphs: Sequence[NamedNode | BlankNode] | None,
                 union: bool) -> list[tuple[str, str]]:
        fields: list[tuple[str, str]] = []
        hidden = self.default_graph_iri
        if union and default_graph is None:
            if self.dialect == "oxigraph":
                return [("union-default-graph", "")]
            default_graph = [DefaultGraph(), *self.named_graphs()]
        if default_graph is not None:
            for g in default_graph:
                if isinstance(g, DefaultGraph):
                    if hidden is not None:
                        fields.append(("default-graph-uri", hidden.value))
                    elif len(default_graph) > 1:
                        raise ValidationError(
                            "this server cannot name its default graph next to other graphs")
                else:
                    fields.append(("default-graph-uri", graph_text(g)[1:-1]))
            if named_graphs is None:
                # pyoxigraph keeps every named graph visible when only FROM is given.
                named_graphs = self.named_graphs()
        elif hidden is not None:
            fields.append(("default-graph-uri", hidden.value))
        if named_graphs is not None:
            fields += [("named-graph-uri", graph_text(g)[1:-1]) for g in named_graphs]
        return fields
