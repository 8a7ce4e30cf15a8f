"""Backup and restore under load: a backup taken while writes continue restores consistently."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

from bench.reliability.client import TOKENS, Client, server_env
from bench.reliability.dataset import inspect_store, seed_store
from bench.reliability.result import CheckResult
from bench.server import ROOT, start_server

__all__ = ["restore", "run"]

PROJECT = "proj-0001"


def restore(backup: Path, store: Path, *, force: bool = False) -> subprocess.CompletedProcess[str]:
    """Run `jido-kg restore BACKUP --store DIR [--force]`."""
    argv = [sys.executable, "-m", "api", "restore", str(backup), "--store", str(store)]
    return subprocess.run(argv + (["--force"] if force else []), cwd=ROOT, capture_output=True,
                          text=True, timeout=600, check=False)


def run(rounds: int = 3, *, workdir: Path, memories: int = 2_000,
        writers: int = 4) -> CheckResult:
    """Take `rounds` backups over HTTP while writers run; restore each and check it."""
    result = CheckResult("backup + restore under load")
    started = time.perf_counter()
    store = workdir / "backup-store"
    seed_store(store, memories)
    server = start_server(store, env=server_env())
    client = Client(server.url, timeout=120)
    acked: dict[str, float] = {}  # memory id -> when its 201 arrived
    lock = threading.Lock()
    stop = threading.Event()
    failures: list[str] = []

    def writer(index: int) -> None:
        while not stop.is_set():
            reply = client.remember(PROJECT, f"backup probe {index} {uuid.uuid4().hex}",
                                    token=TOKENS["write"], session=f"bk-{index}")
            with lock:
                result.requests += 1
                if reply.status == 201:
                    acked[reply.json()["id"]] = time.monotonic()
                else:
                    failures.append(f"remember {reply.status}: {reply.text[:120]}")
        client.close()

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(writers)]
    for thread in threads:
        thread.start()
    backups: list[tuple[Path, float]] = []
    try:
        for r in range(rounds):
            time.sleep(1.0)
            asked = time.monotonic()
            reply = client.request("POST", "/admin/backup", token=TOKENS["admin"],
                                   json_body={"name": f"round-{r}-{uuid.uuid4().hex[:6]}"})
            result.requests += 1
            if reply.status != 201:
                result.errors += 1
                result.fail(f"POST /admin/backup -> {reply.status}: {reply.text[:200]}")
                continue
            backups.append((Path(reply.json()["path"]), asked))
        time.sleep(0.5)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=120)
        server.stop()
    result.errors += len(failures)
    for failure in failures[:5]:
        result.fail(failure)
    for r, (backup, asked) in enumerate(backups):
        result.cycles += 1
        target = workdir / f"restored-{r}"
        done = restore(backup, target)
        if done.returncode != 0:
            result.fail(f"restore of {backup.name} failed: {done.stderr.strip()[-300:]}")
            continue
        again = restore(backup, target)
        if again.returncode == 0:
            result.fail("restore overwrote a non-empty store without --force")
        found = inspect_store(target)
        if not found.opened:
            result.fail(f"the restored store {target} does not open: {found.error}")
            continue
        for mid, gaps in list(found.incomplete.items())[:5]:
            result.fail(f"restored memory {mid} is incomplete: lacks {', '.join(gaps)}")
        # Consistency: everything acknowledged before the backup was asked for is in it.
        with lock:
            before = [m for m, when in acked.items() if when < asked]
        missing = [m for m in before if m not in found.memories]
        result.losses += len(missing)
        if missing:
            result.fail(f"backup {r} lacks {len(missing)} memories acknowledged before it")
        if len(found.memories) < memories:
            result.fail(f"backup {r} holds {len(found.memories)} memories, seeded {memories}")
        try:
            start_server(target, env=server_env()).stop()
        except RuntimeError as exc:
            result.fail(f"the service does not start on restored store {r}: {exc}")
    forced = restore(backups[0][0], workdir / "restored-0", force=True) if backups else None
    if forced is not None and forced.returncode != 0:
        result.fail(f"restore --force failed: {forced.stderr.strip()[-300:]}")
    result.figures = {"backups": len(backups), "writes acknowledged": len(acked)}
    if len(backups) < rounds:
        result.fail(f"only {len(backups)} of {rounds} backups were taken")
    result.seconds = time.perf_counter() - started
    return result
