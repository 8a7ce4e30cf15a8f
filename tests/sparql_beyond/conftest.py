"""One real server for the recall-SERVICE and entailment tests, with memories written over HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import pytest

from tests.conftest import RunningServer, start_server
from tests.sparql.http import Answer, call

ADMIN, WRITER, READER, SCOPED = "admin-token", "writer-token", "reader-token", "acme-token"
TOKENS = {ADMIN: "admin", WRITER: "write", READER: "read", SCOPED: "read@acme"}
PREFIXES = ("PREFIX jido: <https://jido.ai/ontology#>\n"
            "PREFIX recall: <https://jido.ai/recall#>\n")


@dataclass
class Service:
    """The running server and helpers to write memories and query it."""

    server: RunningServer
    written: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def remember(self, project: str, content: str, *, kind: str = "fact") -> dict[str, Any]:
        """Write one memory over the memory API and return it."""
        answer = self.post(f"/v1/projects/{project}/memories",
                           json.dumps({"content": content, "type": kind}).encode(),
                           "application/json", WRITER)
        assert answer.status in (200, 201), answer.body
        memory: dict[str, Any] = answer.json()
        self.written.setdefault(project, []).append(memory)
        return memory

    def post(self, path: str, body: bytes, content_type: str, token: str | None = READER,
             ) -> Answer:
        """POST a body (with a bearer token)."""
        headers = {"Content-Type": content_type}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return call(f"{self.server.url}{path}", method="POST", body=body, headers=headers)

    def query(self, text: str, *, method: str = "GET", token: str | None = READER,
              extra: str = "", accept: str = "application/sparql-results+json") -> Answer:
        """Run a query by GET, form POST or direct POST; `extra` is more URL parameters."""
        headers = {"Accept": accept}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if method == "GET":
            return call(f"{self.server.url}/sparql?query={quote(PREFIXES + text)}{extra}",
                        headers=headers)
        if method == "FORM":
            body = f"query={quote(PREFIXES + text)}{extra}".encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            return call(f"{self.server.url}/sparql", method="POST", body=body, headers=headers)
        headers["Content-Type"] = "application/sparql-query"
        return call(f"{self.server.url}/sparql?{extra.lstrip('&')}", method="POST",
                    body=(PREFIXES + text).encode(), headers=headers)

    def rows(self, text: str, **kwargs: Any) -> list[dict[str, str]]:
        """The bindings of a SELECT as {variable: value}, after asserting a 200."""
        answer = self.query(text, **kwargs)
        assert answer.status == 200, answer.body
        return [{k: v["value"] for k, v in b.items()}
                for b in answer.json()["results"]["bindings"]]


@pytest.fixture(scope="package")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """A server (no embedder: recall is keyword ranking) shared by this folder's tests."""
    env = {"KG_TOKENS": json.dumps(TOKENS), "KG_EMBEDDER": "none"}
    server = start_server(tmp_path_factory.mktemp("beyond"), extra_env=env)
    yield Service(server)
    server.stop()
