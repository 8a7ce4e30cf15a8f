"""A writer killed with SIGKILL mid-stream loses none of the remembers that had returned."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from kg.longterm import LongTermMemory
from kg.store import EmbeddedStore

ROOT = Path(__file__).resolve().parents[2]

WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from kg.longterm import LongTermMemory
    from kg.store import EmbeddedStore

    store = EmbeddedStore(Path(sys.argv[1]))
    ltm = LongTermMemory(store)
    cycle = sys.argv[2]
    i = 0
    while True:
        out = ltm.remember(f"cycle {cycle} memory {i}", project="crash", session="w" + cycle,
                           agent="writer", rationale="crash test")
        sys.stdout.write(out.memory.id + "\\n")
        sys.stdout.flush()
        i += 1
    """
)


def test_sigkill_loses_no_returned_remember(tmp_path: Path) -> None:
    path = tmp_path / "store"
    path.mkdir()
    acknowledged: list[str] = []
    for cycle in range(5):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), str(cycle)],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert proc.stdout is not None
        target = 50 + 37 * cycle  # kill at a different point each cycle
        seen: list[str] = []
        deadline = time.monotonic() + 60
        while len(seen) < target and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            seen.append(line.decode().strip())
        proc.send_signal(signal.SIGKILL)
        # lines already written to the pipe before the kill were acknowledged too
        rest, err = proc.communicate(timeout=30)
        seen += [x for x in rest.decode().split("\n") if len(x) == 32]
        assert proc.returncode == -signal.SIGKILL
        assert len(seen) >= target, err.decode()[-2000:]
        acknowledged += seen

        store = EmbeddedStore(path)  # opens cleanly: no lock left, no corruption
        ltm = LongTermMemory(store)
        stored = {m.id for m in ltm.iter_memories("crash")}
        missing = [m for m in acknowledged if m not in stored]
        assert missing == [], f"cycle {cycle}: {len(missing)} acknowledged memories lost"
        for memory_id in acknowledged[-3:]:
            assert ltm.get(memory_id, project="crash").rationale == "crash test"
        store.close()
        del ltm, store
