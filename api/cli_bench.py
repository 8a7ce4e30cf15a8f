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
@click.argument("data_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("audit_file", required=False,
                type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--mode", type=click.Choice(["text", "semantic", "hybrid"]), default="hybrid",
              show_default=True, help="Recall mode.")
@click.option("--embeddings/--no-embeddings", default=True, show_default=True,
              help="Use the bundled WordLlama embedder (offline).")
def locomo(data_file: Path, audit_file: Path | None, mode: str, embeddings: bool) -> None:
    """Score recall@5/10/25/50 on a LoCoMo-format DATA_FILE (AUDIT_FILE corrects evidence)."""
    from kg.recall.embedding import wordllama_embedder
    from kg.recall.locomo import run_locomo

    result = run_locomo(
        data_file, audit_file, embedder=wordllama_embedder() if embeddings else None, mode=mode,
        progress=lambda line: click.echo(line, err=True),
    )
    click.echo(f"{result.memories} memories, {result.questions} questions with evidence",
               err=True)
    click.echo(result.table())
    click.echo(f"recall@10 {result.mean(10):.4f}")
    sys.stdout.flush()
