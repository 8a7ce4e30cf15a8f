"""The `jido-kg` command: serve, load, dump, backup, check-ontology."""

from __future__ import annotations

import errno
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import click
import pyoxigraph
from pyoxigraph import DefaultGraph, NamedNode, Quad, RdfFormat
from tqdm import tqdm

from kg.errors import KgError, QuerySyntaxError, ValidationError
from kg.resources import ontology_path
from kg.settings import Settings
from kg.store import open_store

__all__ = ["cli", "main"]

_FORMATS = {
    "nq": RdfFormat.N_QUADS,
    "nt": RdfFormat.N_TRIPLES,
    "ttl": RdfFormat.TURTLE,
    "trig": RdfFormat.TRIG,
    "rdf": RdfFormat.RDF_XML,
    "jsonld": RdfFormat.JSON_LD,
}
_EXTENSIONS = {
    **_FORMATS, "nquads": RdfFormat.N_QUADS, "ntriples": RdfFormat.N_TRIPLES,
    "turtle": RdfFormat.TURTLE, "owl": RdfFormat.RDF_XML, "xml": RdfFormat.RDF_XML,
    "json": RdfFormat.JSON_LD, "n3": RdfFormat.N3,
}
_STORE_HELP = "Store directory, or ':memory:' [env KG_STORE; default data/store]."


def _settings(**overrides: Any) -> Settings:
    # Command-line options win over KG_* variables, which win over the defaults.
    return Settings(**{k: v for k, v in overrides.items() if v is not None})


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="jido-kg")
def cli() -> None:
    """jido-kg: knowledge-graph memory for LLM agents, with a SPARQL 1.1 endpoint.

    Every option can also be set by a KG_* environment variable (KG_STORE, KG_HOST, KG_PORT,
    KG_THREADS ...); options on the command line win.
    """


@cli.command()
@click.option("--host", help="Address to bind [env KG_HOST; default 127.0.0.1].")
@click.option("--port", type=int, help="TCP port [env KG_PORT; default 7879].")
@click.option("--store", "store", help=_STORE_HELP)
@click.option("--threads", type=int, help="Worker threads [env KG_THREADS; default 8].")
def serve(host: str | None, port: int | None, store: str | None, threads: int | None) -> None:
    """Run the HTTP service (SPARQL endpoint, memory API, ontology) until interrupted."""
    from api.server import serve as run

    settings = _settings(host=host, port=port, store=store, threads=threads)
    try:
        run(settings)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise click.ClickException(
                f"port {settings.port} on {settings.host} is already in use; "
                "choose another with --port or KG_PORT"
            ) from None
        raise


def _read_quads(path: Path, fmt: RdfFormat, graph: NamedNode | None) -> Iterator[Quad]:
    size = path.stat().st_size
    with (
        open(path, "rb") as raw,
        tqdm.wrapattr(raw, "read", total=size, desc=path.name, unit="B", unit_scale=True,
                      leave=False, disable=None, file=sys.stderr) as stream,
    ):
        for quad in pyoxigraph.parse(stream, format=fmt, path=None):
            if graph is not None and isinstance(quad.graph_name, DefaultGraph):
                yield Quad(quad.subject, quad.predicate, quad.object, graph)
            else:
                yield quad


def _format_of(path: Path, name: str | None) -> RdfFormat:
    if name:
        return _FORMATS[name]
    fmt = _EXTENSIONS.get(path.suffix.lower().lstrip("."))
    if fmt is None:
        raise ValidationError(
            f"{path}: cannot tell the RDF format from the extension {path.suffix!r}; "
            f"pass --format ({', '.join(_FORMATS)})"
        )
    return fmt


@cli.command()
@click.argument("files", nargs=-1, required=True,
                type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--store", "store", help=_STORE_HELP)
@click.option("--graph", help="Named graph IRI for triples without one (default: default graph).")
@click.option("--format", "fmt", type=click.Choice(sorted(_FORMATS)),
              help="RDF format of every file (default: from each file's extension).")
def load(files: tuple[Path, ...], store: str | None, graph: str | None, fmt: str | None) -> None:
    """Load RDF files atomically: every file parses, or nothing is loaded."""
    target = NamedNode(graph) if graph else None
    quads: list[Quad] = []
    for path in tqdm(files, desc="parsing", unit="file", disable=None, file=sys.stderr):
        try:
            quads.extend(_read_quads(path, _format_of(path, fmt), target))
        except SyntaxError as exc:
            raise QuerySyntaxError(
                f"{path}: line {exc.lineno}: {exc.msg}; nothing was loaded",
                details={"file": str(path), "line": exc.lineno},
            ) from None
    kg_store = open_store(_settings(store=store))
    try:
        kg_store.add(quads)
    finally:
        kg_store.close()
    click.echo(f"loaded {len(quads)} quads from {len(files)} file(s)", err=True)


@cli.command()
@click.option("--store", "store", help=_STORE_HELP)
@click.option("--graph", help="Dump only this named graph (as triples).")
@click.option("--format", "fmt", type=click.Choice(sorted(_FORMATS)), default=None,
              help="Output format [default: nq for the dataset, ttl for one graph].")
@click.option("-o", "--output", type=click.File("wb"), default="-", help="Output file [stdout].")
def dump(store: str | None, graph: str | None, fmt: str | None, output: IO[bytes]) -> None:
    """Write the store (or one graph) as RDF."""
    rdf_format = _FORMATS[fmt or ("ttl" if graph else "nq")]
    if graph is None and not rdf_format.supports_datasets:
        raise ValidationError(f"{fmt} holds one graph: add --graph or use nq/trig")
    kg_store = open_store(_settings(store=store))
    try:
        kg_store.dump(output, format=rdf_format, from_graph=NamedNode(graph) if graph else None)
    finally:
        kg_store.close()


@cli.command()
@click.argument("target", type=click.Path(file_okay=False, path_type=Path))
@click.option("--store", "store", help=_STORE_HELP)
def backup(target: Path, store: str | None) -> None:
    """Write a consistent copy of the store into a new directory TARGET."""
    if target.exists():
        raise ValidationError(f"{target} already exists; backups go to a new directory")
    kg_store = open_store(_settings(store=store))
    try:
        kg_store.backup(target)
    finally:
        kg_store.close()
    click.echo(f"backup written to {target}", err=True)


@cli.command("check-ontology")
@click.argument("extra", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
def check_ontology(extra: tuple[Path, ...]) -> None:
    """Check the ontology (plus EXTRA data files) with the OWL API and HermiT."""
    from kg.owl_check import check_ontology as run_check

    report = run_check([ontology_path(), *extra])
    click.echo(report.summary())
    if not report.ok:
        raise SystemExit(1)


def main() -> None:
    """Entry point: run the CLI, turning kg errors into one clear line and exit status 2."""
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        raise SystemExit(130) from None
    except click.ClickException as exc:
        exc.show()
        raise SystemExit(exc.exit_code) from None
    except KgError as exc:
        click.echo(f"error: {exc.message}", err=True)
        raise SystemExit(2) from None
