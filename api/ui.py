"""The query page at `/`: YASGUI (npm @zazuko/yasgui, installed at set-up) on this endpoint."""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, Response, render_template, url_for

from api.auth import require
from kg.namespaces import DATA, GRAPH, JIDO, OWL, PROV, RDF, RDFS, XSD

__all__ = ["STATIC_DIR", "YASGUI_FILES", "blueprint"]

STATIC_DIR = Path(__file__).resolve().parent / "static"
# Copied from tools/node/node_modules/@zazuko/yasgui/build by `make node-deps` (git-ignored).
YASGUI_FILES = ("yasgui/yasgui.min.js", "yasgui/yasgui.min.css")

blueprint = Blueprint("ui", __name__)

PREFIXES = {
    "jido": str(JIDO), "data": str(DATA), "graph": str(GRAPH), "rdf": str(RDF),
    "rdfs": str(RDFS), "owl": str(OWL), "xsd": str(XSD), "prov": str(PROV),
}
EXAMPLE_QUERY = """SELECT ?memory ?type ?content WHERE {
  GRAPH ?g {
    ?memory a ?type ;
            jido:content ?content .
  }
} LIMIT 25"""
# More example tabs (docs/sparql.md): recall inside SPARQL, and a class-aware query that needs
# the page's "RDFS entailment" switch (entailment=rdfs) to find subclass members.
EXAMPLES = {
    "Recall in SPARQL": """PREFIX recall: <https://jido.ai/recall#>
SELECT ?memory ?score ?content WHERE {
  SERVICE <https://jido.ai/recall> {
    [] recall:query "where are orders stored" ; recall:project "shop" ; recall:limit 5 ;
       recall:hit ?memory ; recall:score ?score
  }
  GRAPH ?g { ?memory jido:content ?content }
} ORDER BY DESC(?score)""",
    "Decisions (tick RDFS entailment)": """SELECT ?decision ?type ?content WHERE {
  GRAPH ?g {
    ?decision a jido:Decision ; a ?type ; jido:content ?content .
  }
} LIMIT 25""",
}


@blueprint.get("/")
def index() -> Response:
    """Serve the query page, pointed at this server's /sparql endpoint."""
    require("read")
    missing = [f for f in YASGUI_FILES if not (STATIC_DIR / f).is_file()]
    page = render_template(
        "query.html",
        endpoint=url_for("sparql.sparql"),
        prefixes=PREFIXES,
        example="".join(f"PREFIX {p}: <{iri}>\n" for p, iri in PREFIXES.items())
        + "\n" + EXAMPLE_QUERY,
        examples={name: "".join(f"PREFIX {p}: <{iri}>\n" for p, iri in PREFIXES.items())
                  + "\n" + text for name, text in EXAMPLES.items()},
        missing=missing,
    )
    return Response(page, status=200 if not missing else 503, mimetype="text/html")
