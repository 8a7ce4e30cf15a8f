"""data/langgraph_agent.py runs as documented: one run stores a memory through LangMem's
manage-memory tool, a second process recalls it through the search tool, both against a real
`jido-kg serve`, and the memory is a typed fact the service itself can list."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from kg.client import MemoryClient
from tests.conftest import RunningServer
from tests.integrations.conftest import TOKEN

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "data" / "langgraph_agent.py"


def run(server: RunningServer, *args: str) -> str:
    env = {**os.environ, "KG_URL": server.url, "KG_TOKEN": TOKEN}
    done = subprocess.run([sys.executable, str(SCRIPT), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_second_run_recalls_what_the_first_stored(service_server: RunningServer,
                                                    memory: MemoryClient) -> None:
    first = run(service_server, "remember", "I prefer green tea in the morning",
                "--project", "example", "--user", "alice")
    assert "[manage_memory] created memory" in first
    second = run(service_server, "recall", "which tea does the user prefer?",
                 "--project", "example", "--user", "alice")
    assert "[search_memory]" in second and "I prefer green tea in the morning" in second
    other_user = run(service_server, "recall", "which tea does the user prefer?",
                     "--project", "example", "--user", "bob")
    assert "green tea" not in other_user  # another namespace: ("memories", "bob")
    page = memory.list_memories("example", namespace_prefix="memories.alice")
    assert [(e.memory.type.value, e.memory.content, e.memory.agent) for e in page.entries] == [
        ("fact", "I prefer green tea in the morning", "langgraph-example")]
