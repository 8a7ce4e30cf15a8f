"""Finds the files that ship with jido-kg (ontology, shapes, queries) in a wheel or a checkout."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from kg.errors import NotFoundError

__all__ = [
    "ontology_dir",
    "ontology_path",
    "queries_dir",
    "query_path",
    "query_text",
    "shapes_path",
]

_PACKAGE = Path(__file__).resolve().parent


def _data_dir(name: str) -> Path:
    # A wheel carries the folder inside the package (force-include); a checkout has it at the top.
    for candidate in (_PACKAGE / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise NotFoundError(
        f"the {name}/ folder is neither inside the kg package nor beside it in a checkout",
        details={"looked_in": [str(_PACKAGE / name), str(_PACKAGE.parent / name)]},
    )


def ontology_dir() -> Path:
    """Return the folder holding the ontology and SHACL shapes."""
    return _data_dir("ontology")


def queries_dir() -> Path:
    """Return the folder holding the named SPARQL files."""
    return _data_dir("queries")


def ontology_path(name: str = "jido.ttl") -> Path:
    """Return the path of an ontology file (the Jido ontology by default)."""
    path = ontology_dir() / name
    if not path.is_file():
        raise NotFoundError(f"ontology file {name!r} not found in {ontology_dir()}")
    return path


def shapes_path() -> Path:
    """Return the path of the SHACL shapes file."""
    return ontology_path("shapes.ttl")


def query_path(name: str) -> Path:
    """Return the path of the query file `queries/<name>.rq`."""
    path = queries_dir() / f"{name}.rq"
    if not path.is_file():
        raise NotFoundError(f"no query file named {name!r} in {queries_dir()}")
    return path


@cache
def query_text(name: str) -> str:
    """Return the text of `queries/<name>.rq`, read once per process."""
    return query_path(name).read_text(encoding="utf-8")
