"""The adapters stay in their room: the library below the service does not know the service,
and nothing but kg.integrations loads a framework."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kg.context.agent import MemoryAgent, Reply, ToolCall
from kg.memory_service import MemoryService

ROOT = Path(__file__).resolve().parents[2]
BELOW_THE_SERVICE = ["kg/context", "kg/shortterm", "kg/longterm", "kg/recall", "kg/store"]
FRAMEWORKS = {"langgraph", "langmem", "langchain", "langchain_core", "agents", "openai"}


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, also under `if TYPE_CHECKING:` and inside functions."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_nothing_below_the_service_imports_it() -> None:
    offenders = [str(path.relative_to(ROOT)) for folder in BELOW_THE_SERVICE
                 for path in sorted((ROOT / folder).rglob("*.py"))
                 if "kg.memory_service" in imported_modules(path)]
    assert offenders == []


class OnlyTheProtocol:
    """A memory system with exactly the AgentMemory protocol's four members (no service)."""

    def __init__(self, service: MemoryService) -> None:
        self.hooks = service.hooks
        self._service = service
        self.calls: list[str] = []

    def tool_definitions(self) -> list[dict[str, Any]]:
        return self._service.tool_definitions()

    def session_project(self, session_id: str) -> str | None:
        return self._service.session_project(session_id)

    def execute_tool(self, name: str, arguments: Mapping[str, Any] | str | None, *,
                     project: str, session_id: str | None = None,
                     agent: str | None = None) -> dict[str, Any]:
        self.calls.append(name)
        return self._service.execute_tool(name, arguments, project=project,
                                          session_id=session_id, agent=agent)


def test_the_agent_loop_runs_on_any_memory_with_the_protocols_members(
    service: MemoryService,
) -> None:
    memory = OnlyTheProtocol(service)
    session = service.start_session(project="layers")
    replies = iter([Reply(tool_calls=[ToolCall("remember", {"content": "Deploys on Fridays"})]),
                    Reply("Noted."), Reply("You deploy on Fridays.")])
    prompts: list[str] = []

    def llm(prompt: str, messages: list[dict[str, str]], tools: list[dict[str, Any]]) -> Reply:
        prompts.append(prompt)
        return next(replies)

    agent = MemoryAgent(llm, memory, session_id=session.id, token_budget=2_000)
    assert agent.chat("Remember: we deploy on Fridays") == "Noted."
    assert memory.calls == ["remember"]
    assert agent.chat("When do we deploy?") == "You deploy on Fridays."
    assert "Deploys on Fridays" in prompts[-1]
    assert service.hooks.token_budget != 2_000  # the agent's budget is its own


def test_the_library_loads_no_framework_until_an_adapter_is_imported() -> None:
    script = ("import json, sys\nimport kg.client, kg.memory_service, kg.integrations\n"
              "import api\nprint(json.dumps(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, check=True)
    loaded = {name.split(".")[0] for name in json.loads(done.stdout.splitlines()[-1])}
    assert loaded & FRAMEWORKS == set()
    outside = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "kg").rglob("*.py"))
               if "integrations" not in p.parts
               and {m.split(".")[0] for m in imported_modules(p)} & FRAMEWORKS]
    assert outside == []
