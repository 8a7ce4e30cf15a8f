"""GET /ontology: the Jido ontology in the representation the client asks for."""

from __future__ import annotations

from flask import Blueprint, Response, render_template

from api.negotiation import negotiate
from api.services import services
from kg.system_knowledge import ONTOLOGY_MEDIA_TYPES

__all__ = ["blueprint"]

blueprint = Blueprint("ontology", __name__)

# Turtle first: a client that accepts anything gets the ontology's own format.
_OFFERS = ["text/turtle", *[m for m in ONTOLOGY_MEDIA_TYPES if m != "text/turtle"], "text/html"]


@blueprint.route("/ontology", methods=["GET", "HEAD"])
def ontology() -> Response | str:
    """Serve the ontology as Turtle, RDF/XML, JSON-LD, N-Triples or an HTML page."""
    media_type = negotiate(_OFFERS)
    document = services().ontology
    if media_type == "text/html":
        header = document.header()
        response = Response(
            render_template("ontology.html", header=header, terms=document.terms()),
            mimetype="text/html",
        )
    else:
        response = Response(document.serialize(media_type), mimetype=media_type)
    response.headers["Vary"] = "Accept"
    return response
