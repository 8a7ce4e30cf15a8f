"""The integration suite on a real Oxigraph server: the same test files, the other backend.

The files in `SUITE` run on the embedded store in every test run (they are ordinary tests).
`test_the_integration_suite_passes_on_oxigraph` runs them once more in a child pytest with
`KG_TEST_BACKEND=oxigraph` (tests/conftest.py): the `store`, `app` and `client` fixtures then sit
on a RemoteStore over an Oxigraph server on loopback, and every `jido-kg serve` the tests start
(the W3C runner's included) runs with `KG_BACKEND=remote` against its own Oxigraph server.

Left out on purpose (each runs on the embedded store only): tests/agent/test_http_properties.py
(400 random bodies each reading the whole store twice: 30-50 s on Oxigraph, and it checks request
validation, which never reaches the store), tests/agent/test_mcp.py and tests/longterm/test_bench.py
(they open an embedded store directory themselves), tests/longterm/test_crash.py (kill -9 of the
embedded store), tests/sparql/test_bad_input.py, test_runaway.py, test_clients.py and
test_query_page.py (input limits, worker-pool limits and client tools in front of the store).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.request

import pytest
from flask.testing import FlaskClient

from kg.store import EmbeddedStore, Store
from kg.store.remote import RemoteStore
from tests.conftest import ROOT, TEST_BACKEND, RunningServer

SUITE = [
    # memory HTTP API (/v1), context assembly and the agent loop
    "tests/agent/test_http_api.py",
    "tests/agent/test_context_builder.py",
    "tests/agent/test_agent.py",
    # long-term memory, promotion, memory tools, data conformance
    "tests/longterm/test_memories.py",
    "tests/longterm/test_promotion.py",
    "tests/longterm/test_tools.py",
    "tests/longterm/test_conformance.py",
    # recall: ranked recall, the keyword index, the query helpers, LoCoMo
    "tests/recall",
    # SPARQL endpoint pass-through: W3C Protocol, Graph Store Protocol and Service Description
    # through jido-kg's own endpoint, and token-scoped datasets
    "tests/sparql/test_w3c.py",
    "tests/sparql/test_auth.py",
]
PROBE = "tests/remote/test_integration_suite.py::test_the_backend_is_the_one_asked_for"
W3C_SCORES = {"Protocol": 34, "Graph Store Protocol": 13, "Service Description": 3}


def test_the_backend_is_the_one_asked_for(store: Store, client: FlaskClient,
                                          live_server: RunningServer) -> None:
    expected = RemoteStore if TEST_BACKEND == "oxigraph" else EmbeddedStore
    assert isinstance(store, expected)
    assert client.get("/health").get_json()["store"] == repr(store)
    with urllib.request.urlopen(f"{live_server.url}/health", timeout=10) as answer:
        body = answer.read().decode()
    assert (expected.__name__ + "(") in body


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_integration_suite_passes_on_oxigraph() -> None:
    env = {**os.environ, "KG_TEST_BACKEND": "oxigraph"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--timeout", "300",
         "-o", "addopts=-ra --strict-markers", PROBE, *SUITE],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=880, check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-20_000:]
    assert re.search(r"\d+ passed", output.splitlines()[-1]), output[-5_000:]
    for name, total in W3C_SCORES.items():
        assert f"W3C SPARQL 1.1 {name}: {total}/{total} passed" in output, output[-5_000:]
    print(f"\non Oxigraph: {output.strip().splitlines()[-1]}")
