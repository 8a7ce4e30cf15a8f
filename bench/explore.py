"""Memory explorer benchmark: the server time of a project's list page at 100,000 memories.

The store holds one project of `n` generated memories (bench.generator, one project); the app
is built on a copy of it and the pages are fetched through Flask's test client, each answer's
`Server-Timing: app;dur=…` header (the view's own time, rendering included) being the figure.
Target (issue 21): the first page of the list in ≤ 300 ms at 100,000 memories.

    python -m bench --only explore
"""

from __future__ import annotations

import re
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.generator import cached_store, project_id

__all__ = ["MAX_FIRST_PAGE_MS", "run"]

MAX_FIRST_PAGE_MS = 300.0
MEMORIES = 100_000
_TIMING = re.compile(r"app;dur=([0-9.]+)")
_NEXT = re.compile(r'<a rel="next" href="([^"]+)"')


def _p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def _row(metric: str, samples: list[float], n: int, target: float | None,
         **extra: Any) -> dict[str, Any]:
    median = statistics.median(samples)
    return {"scenario": "explore", "metric": metric, "n": n, "median": round(median, 2),
            "p95": round(_p95(samples), 2), "unit": "ms",
            "target": f"≤ {target:g} ms" if target is not None else "informational",
            "ok": (median <= target) if target is not None else None, **extra}


def _server_ms(client: Any, url: str) -> tuple[float, str]:
    reply = client.get(url)
    if reply.status_code != 200:
        raise RuntimeError(f"GET {url} answered {reply.status_code}")
    found = _TIMING.search(reply.headers.get("Server-Timing", ""))
    if found is None:
        raise RuntimeError(f"GET {url} has no Server-Timing header")
    return float(found.group(1)), reply.get_data(as_text=True)


def run(repeats: int = 5, quick: bool = False) -> list[dict[str, Any]]:
    """Time the explorer's pages on a one-project store of 100,000 memories (1,000 quick)."""
    from api import create_app
    from kg.settings import MEMORY_STORE, Settings

    n = 1_000 if quick else MEMORIES
    source = cached_store(n, projects=1, sessions=100)
    project = project_id(0)
    samples: dict[str, list[float]] = {k: [] for k in (
        "first_page", "first_page_wall", "second_page", "type_filter", "timeline", "projects")}
    with tempfile.TemporaryDirectory(prefix="bench-explore-") as tmp:
        store = Path(tmp) / "store"
        shutil.copytree(source, store)
        # Keyword-only recall index in memory: the list does not use it; building it is quick.
        settings = Settings(store=str(store), index=MEMORY_STORE, embedder="none")
        app = create_app(settings)
        client = app.test_client()
        try:
            base = f"/explore/{project}"
            _server_ms(client, base)  # warm-up: first query plans, template compilation
            for _ in range(max(3, repeats * 4)):
                started = time.perf_counter()
                ms, html = _server_ms(client, base)
                samples["first_page_wall"].append((time.perf_counter() - started) * 1000)
                samples["first_page"].append(ms)
                link = _NEXT.search(html)
                if link is None:
                    raise RuntimeError("the first page has no next-page link")
                samples["second_page"].append(
                    _server_ms(client, link.group(1).replace("&amp;", "&"))[0])
                samples["type_filter"].append(_server_ms(client, base + "?type=fact")[0])
                samples["timeline"].append(_server_ms(client, base + "/timeline")[0])
                samples["projects"].append(_server_ms(client, "/explore")[0])
        finally:
            from api.services import close_app

            close_app(app)
    return [
        _row("first_page", samples["first_page"], n, MAX_FIRST_PAGE_MS,
             note="GET /explore/<project>, 50 memories, Server-Timing"),
        _row("first_page_wall", samples["first_page_wall"], n, None,
             note="the same through the test client, wall clock"),
        _row("second_page", samples["second_page"], n, None, note="keyset cursor"),
        _row("type_filter", samples["type_filter"], n, None, note="?type=fact (1 type in 22)"),
        _row("timeline", samples["timeline"], n, None),
        _row("projects", samples["projects"], n, None, note="GET /explore (counts)"),
    ]


if __name__ == "__main__":
    for line in run(quick=False):
        print(line)
