"""The `jido-kg` command: serve, load, dump, backup, restore, check-ontology."""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import click
import pyoxigraph
from pyoxigraph import DefaultGraph, NamedNode, Quad, RdfFormat
from tqdm import tqdm

from api.startup import StartupError, check_path, load_settings, unknown_variables
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
# Options whose name is not the setting's own (`--port` is `port`, `--query-url` is not).
_OPTION_NAMES = {"remote_query_url": "--query-url", "remote_update_url": "--update-url",
                 "remote_graph_store_url": "--graph-store-url", "remote_dialect": "--dialect"}


def _settings(*, must_exist: bool = False, index: bool = False, **overrides: Any) -> Settings:
    """Settings from the options over KG_* variables, with a usable store path; else exit 2.

    `must_exist` refuses a store directory that is not there (dump, backup); `index` also
    checks where the recall index goes (commands that open the memory service).
    """
    # Command-line options win over KG_* variables, which win over the defaults.
    settings = load_settings(overrides, option_names=_OPTION_NAMES)
    path = settings.store_path
    if settings.backend == "embedded" and path is not None:
        check_path(path, what="store path", must_exist=must_exist)
    if index:
        from kg.recall.engine import index_location

        location = index_location(settings)
        if location is not None:
            check_path(location, what="recall index path (KG_INDEX)", kind="file")
    return settings


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="jido-kg")
def cli() -> None:
    """jido-kg: knowledge-graph memory for LLM agents, with a SPARQL 1.1 endpoint.

    Every option can also be set by a KG_* environment variable (KG_STORE, KG_HOST, KG_PORT,
    KG_THREADS ...); options on the command line win.
    """
    # A misspelt variable would otherwise be ignored without a word.
    for warning in unknown_variables(os.environ):
        click.echo(f"jido-kg: warning: {warning}", err=True)


@cli.command()
@click.option("--host", help="Address to bind [env KG_HOST; default 127.0.0.1].")
@click.option("--port", type=int, help="TCP port [env KG_PORT; default 7879].")
@click.option("--store", "store", help=_STORE_HELP)
@click.option("--threads", type=int,
              help="Requests in the app at once, and query workers [env KG_THREADS; default 8].")
@click.option("--allow-anonymous-read", is_flag=True, default=False,
              help="Serve reads without a token even on an address beyond loopback "
                   "[env KG_ANONYMOUS_READ=true].")
def serve(host: str | None, port: int | None, store: str | None, threads: int | None,
          allow_anonymous_read: bool) -> None:
    """Run the HTTP service (SPARQL endpoint, memory API, ontology) until interrupted.

    A supervisor process holds the port and runs the service in a worker process, which it
    replaces when a query cannot be stopped otherwise (docs/sparql.md).
    """
    from api.exposure import check_exposure
    from api.server import bind
    from api.supervisor import supervise

    settings = _settings(host=host, port=port, store=store, threads=threads, index=True,
                         anonymous_read=True if allow_anonymous_read else None)
    check_exposure(settings, environ=os.environ, allowed=allow_anonymous_read,
                   host_option=host is not None)
    # Bound before anything is created: a port in use leaves no store directory behind.
    address = f"[{settings.host}]:{settings.port}" if ":" in settings.host else \
        f"{settings.host}:{settings.port}"
    try:
        listener = bind(settings.host, settings.port)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise StartupError(f"{address} is already in use; choose another port with "
                               "--port or KG_PORT") from None
        raise StartupError(f"cannot listen on {address}: {exc.strerror or exc}") from None
    status = supervise(settings, listener)
    if status:
        raise SystemExit(status)


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
    settings = _settings(store=store)
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
    kg_store = open_store(settings)
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
    kg_store = open_store(_settings(store=store, must_exist=True))
    try:
        kg_store.dump(output, format=rdf_format, from_graph=NamedNode(graph) if graph else None)
    finally:
        kg_store.close()


@cli.command()
@click.argument("target", type=click.Path(file_okay=False, path_type=Path))
@click.option("--store", "store", help=_STORE_HELP)
def backup(target: Path, store: str | None) -> None:
    """Write a consistent copy of the store into a new directory TARGET."""
    settings = _settings(store=store, must_exist=True)
    if target.exists():
        raise ValidationError(f"{target} already exists; backups go to a new directory")
    check_path(target, what="backup target")
    kg_store = open_store(settings)
    try:
        kg_store.backup(target)
    finally:
        kg_store.close()
    click.echo(f"backup written to {target}", err=True)


@cli.command()
@click.argument("backup_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--store", "store", required=True, type=click.Path(path_type=Path),
              help="Store directory to restore into.")
@click.option("--force", is_flag=True, help="Replace a store that already holds data.")
def restore(backup_dir: Path, store: Path, force: bool) -> None:
    """Restore the backup BACKUP_DIR into the store directory --store.

    The copy is made beside the target, opened to prove it is a store, and only then renamed
    into place, so an interrupted restore never leaves a half-copied store behind.
    """
    import shutil
    import tempfile

    from kg.store import EmbeddedStore

    check_path(store, what="store path")
    occupied = store.exists() and any(store.iterdir())
    if occupied and not force:
        raise ValidationError(f"{store} already holds a store; pass --force to replace it")
    if occupied:
        EmbeddedStore(store).close()  # raises StoreLockedError while a server holds it
    store.parent.mkdir(parents=True, exist_ok=True)
    # Same parent directory: the final rename stays on one filesystem and is atomic.
    staging = Path(tempfile.mkdtemp(prefix=f".{store.name}.restore-", dir=store.parent))
    try:
        copy = staging / "store"
        shutil.copytree(backup_dir, copy)
        restored = EmbeddedStore(copy)
        quads = len(restored)
        restored.close()
        old = staging / "old"
        if store.exists():
            store.rename(old)
        copy.rename(store)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    click.echo(f"restored {quads} quads from {backup_dir} into {store}", err=True)


@cli.command()
@click.option("--store", "store", help=_STORE_HELP + " Not with --url.")
@click.option("--url", default=None,
              help="Base URL of a running `jido-kg serve` (http://HOST:PORT): forward to its "
                   "/mcp/PROJECT instead of opening a store.")
@click.option("--token-file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="File holding the bearer token sent with --url [default: env KG_TOKEN].")
@click.option("--project", default="default", show_default=True,
              help="Project the tools read and write.")
@click.option("--agent", default=None, help="Agent id recorded on memories written.")
def mcp(store: str | None, url: str | None, token_file: Path | None, project: str,
        agent: str | None) -> None:
    """Serve the memory tools over MCP on stdin/stdout (for Claude Desktop, IDEs, agents).

    With --store it opens the store itself (no `jido-kg serve` may hold it); with --url it is a
    bridge to the MCP endpoint of a running service, which keeps the store.
    """
    from kg.errors import StoreLockedError
    from kg.mcp_server import run_stdio
    from kg.memory_service import MemoryService

    if url is not None:
        from kg.mcp_bridge import endpoint_url, run_bridge

        if store is not None:
            raise click.UsageError("--url and --store exclude each other: --url uses the store "
                                   "of the service at URL, --store opens one itself")
        token = (token_file.read_text(encoding="utf-8").strip().partition("\n")[0].strip()
                 if token_file is not None else os.environ.get("KG_TOKEN"))
        run_bridge(endpoint_url(url, project=project, agent=agent), token=token or None)
        return
    if token_file is not None:
        raise click.UsageError("--token-file goes with --url")
    try:
        service = MemoryService.open(_settings(store=store, index=True))
    except StoreLockedError as exc:
        raise StoreLockedError(f"{exc.message}; to share the store of a running `jido-kg "
                               "serve`, pass --url http://HOST:PORT instead of --store",
                               details=exc.details) from None
    try:
        run_stdio(service, project=project, agent=agent)
    finally:
        service.close()


@cli.command("check-ontology")
@click.argument("extra", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
def check_ontology(extra: tuple[Path, ...]) -> None:
    """Check the ontology (plus EXTRA data files) with the OWL API and HermiT."""
    from kg.owl_check import check_ontology as run_check

    report = run_check([ontology_path(), *extra])
    click.echo(report.summary())
    if not report.ok:
        raise SystemExit(1)


_REMOTE_OPTIONS = [
    click.option("--query-url", help="SPARQL query URL [env KG_REMOTE_QUERY_URL]."),
    click.option("--update-url", help="SPARQL update URL [env KG_REMOTE_UPDATE_URL]."),
    click.option("--graph-store-url", help="Graph Store URL [env KG_REMOTE_GRAPH_STORE_URL]."),
    click.option("--dialect", type=click.Choice(["oxigraph", "virtuoso", "generic"]),
                 help="Server quirks to absorb [env KG_REMOTE_DIALECT; default generic]."),
    click.option("--batch-size", type=int, default=5_000, show_default=True,
                 help="Quads per write request."),
]


def _with_remote_options(command: Any) -> Any:
    for option in reversed(_REMOTE_OPTIONS):
        command = option(command)
    return command


def _migration_stores(store: str | None, query_url: str | None, update_url: str | None,
                      graph_store_url: str | None, dialect: str | None, *,
                      must_exist: bool) -> tuple[Any, Any]:
    from kg.store.remote import RemoteStore

    settings = _settings(store=store, remote_query_url=query_url, remote_update_url=update_url,
                         remote_graph_store_url=graph_store_url, remote_dialect=dialect,
                         backend="embedded", must_exist=must_exist)
    remote = RemoteStore.from_settings(settings)
    local = open_store(settings)
    return local, remote


@cli.group()
def migrate() -> None:
    """Copy a whole store between the embedded backend and a remote SPARQL 1.1 server."""


@migrate.command("to-remote")
@click.option("--store", "store", help=_STORE_HELP)
@_with_remote_options
def migrate_to_remote(store: str | None, query_url: str | None, update_url: str | None,
                      graph_store_url: str | None, dialect: str | None,
                      batch_size: int) -> None:
    """Copy every graph of the embedded store to the remote server, in batches."""
    from kg.store.migration import copy_store

    local, remote = _migration_stores(store, query_url, update_url, graph_store_url, dialect,
                                      must_exist=True)
    try:
        report = copy_store(local, remote, batch_size=batch_size)
    finally:
        local.close()
        remote.close()
    click.echo(f"copied {report.total} quads in {len(report.quads)} graph(s) to "
               f"{remote.query_url}", err=True)


@migrate.command("from-remote")
@click.option("--store", "store", help=_STORE_HELP)
@_with_remote_options
def migrate_from_remote(store: str | None, query_url: str | None, update_url: str | None,
                        graph_store_url: str | None, dialect: str | None,
                        batch_size: int) -> None:
    """Copy every graph of the remote server into the embedded store, in batches."""
    from kg.store.migration import copy_store

    local, remote = _migration_stores(store, query_url, update_url, graph_store_url, dialect,
                                      must_exist=False)
    try:
        report = copy_store(remote, local, batch_size=batch_size)
    finally:
        local.close()
        remote.close()
    click.echo(f"copied {report.total} quads in {len(report.quads)} graph(s) from "
               f"{remote.query_url}", err=True)


def main() -> None:
    """Entry point: run the CLI, turning errors of use into one line and exit status 2."""
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        raise SystemExit(130) from None
    except click.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx is not None else "jido-kg"
        _fail(f"{exc.format_message()} (see '{where} --help')", exc.exit_code)
    except click.ClickException as exc:
        _fail(exc.format_message(), exc.exit_code)
    except KgError as exc:
        _fail(exc.message, 2)
    except OSError as exc:
        if exc.filename is None:  # not about a file: a fault of ours, keep the traceback
            raise
        _fail(f"{exc.filename}: {exc.strerror or exc}", 2)


def _fail(message: str, status: int) -> None:
    """Print `jido-kg: error: message` as one line on stderr and exit with `status`."""
    click.echo(f"jido-kg: error: {' '.join(message.splitlines())}", err=True)
    raise SystemExit(status)
from api.cli_bench import bench  # noqa: E402, I001
cli.add_command(bench)
