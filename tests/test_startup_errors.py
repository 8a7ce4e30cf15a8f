"""Start-up errors of the real `jido-kg` command: one line, exit 2, nothing created on disk.

The non-writable parent is checked two ways, because these tests run as root in CI and root
may write any ordinary directory: `/proc/sys` (the kernel refuses writes to the root of the
sysctl tree to everyone, capabilities or not, and `access(2)` says so even to root), and an
ordinary read-only directory entered as the unprivileged user `nobody` through `setpriv`
(directly when the tests do not run as root). Both are only looked at, never written.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT, RunningServer, free_port, jido_kg_command

# Every command that takes --store, with the arguments it needs besides it.
STORE_COMMANDS: dict[str, list[str]] = {
    "serve": ["serve", "--port", "0"],
    "load": ["load", "{data}"],
    "dump": ["dump"],
    "backup": ["backup", "{tmp}/backup-copy"],
    "restore": ["restore", "{tmp}/a-backup"],
    "mcp": ["mcp"],
    "migrate to-remote": ["migrate", "to-remote", "--query-url", "http://127.0.0.1:9/q"],
    "migrate from-remote": ["migrate", "from-remote", "--query-url", "http://127.0.0.1:9/q"],
}
# The ones that may create a store (the others refuse a store that is not there).
CREATING = ["serve", "load", "restore", "mcp", "migrate from-remote"]


def clean_env(**variables: str) -> dict[str, str]:
    """The environment without any KG_* variable of the caller, plus `variables`."""
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("KG_")}
    return {**env, **variables}


def run(args: list[str], *, env: dict[str, str] | None = None,
        prefix: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real command (stdin closed: `mcp` would wait on it) and capture its output."""
    return subprocess.run([*(prefix or []), *jido_kg_command(), *args], cwd=ROOT,
                          env=env if env is not None else clean_env(), capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)


def errors(result: subprocess.CompletedProcess[str]) -> list[str]:
    """The stderr lines other than warnings."""
    return [line for line in result.stderr.splitlines()
            if not line.startswith("jido-kg: warning:")]


def assert_one_line_error(result: subprocess.CompletedProcess[str], *needles: str) -> str:
    """Exit 2, no traceback, exactly one error line that holds every needle; return it."""
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = errors(result)
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("jido-kg: error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def command(name: str, store: str, tmp: Path) -> list[str]:
    """The arguments of one STORE_COMMANDS entry with --store `store`."""
    data = tmp / "data.ttl"
    data.write_text("<https://example.org/a> <https://example.org/p> \"x\" .\n")
    (tmp / "a-backup").mkdir(exist_ok=True)
    args = [a.format(data=data, tmp=tmp) for a in STORE_COMMANDS[name]]
    return [*args, "--store", store]


def snapshot(directory: Path) -> set[str]:
    """Every path under `directory`."""
    return {str(p.relative_to(directory)) for p in directory.rglob("*")}


@pytest.mark.parametrize(("variables", "needles", "secret"), [
    ({"KG_PORT": "abc"}, ["KG_PORT='abc' is not a valid integer"], None),
    ({"KG_TOKENS": "s3cret:write"}, ["KG_TOKENS", "not valid JSON", "KG_TOKENS='{"], "s3cret"),
    ({"KG_TOKENS": '{"s3cret": "writer"}'}, ["KG_TOKENS", "'writer'", "read, write or admin"],
     "s3cret"),
    ({"KG_EMBEDDER": "bogus"}, ["KG_EMBEDDER='bogus'", "'wordllama'"], None),
    ({"KG_ANONYMOUS_READ": "maybe"}, ["KG_ANONYMOUS_READ='maybe'", "boolean"], None),
    ({"KG_CORS_ORIGINS": "https://a.example"}, ["KG_CORS_ORIGINS", "not valid JSON"], None),
    ({"KG_STORE": ""}, ["KG_STORE=''"], None),
    ({"KG_THREADS": "0", "KG_QUERY_TIMEOUT": "-1"}, ["KG_THREADS='0'", "KG_QUERY_TIMEOUT='-1'"],
     None),
])
def test_a_bad_variable_is_one_line_naming_it_and_nothing_is_created(
    tmp_path: Path, variables: dict[str, str], needles: list[str], secret: str | None
) -> None:
    before = snapshot(tmp_path)
    # Through the environment only: an option on the command line would win over it.
    env = clean_env(**{"KG_STORE": str(tmp_path / "store"), "KG_PORT": str(free_port()),
                       **variables})
    result = run(["serve"], env=env)
    line = assert_one_line_error(result, *needles)
    if secret is not None:
        assert secret not in result.stderr, "a token must never be echoed"
    assert snapshot(tmp_path) == before and "jido-kg serving" not in line


@pytest.mark.parametrize(("options", "needles"), [
    (["--port", "abc"], ["'--port'", "'abc' is not a valid integer"]),
    (["--port", "99999"], ["--port 99999", "65535"]),
    (["--threads", "0"], ["--threads 0", "greater than or equal to 1"]),
])
def test_a_bad_option_is_one_line_naming_it(
    tmp_path: Path, options: list[str], needles: list[str]
) -> None:
    result = run(["serve", "--store", str(tmp_path / "store"), *options])
    assert_one_line_error(result, *needles)
    assert snapshot(tmp_path) == set()


def test_a_misspelt_variable_warns_with_the_nearest_setting() -> None:
    env = clean_env(KG_THREDS="4", KG_TOKENZ="x", KG_NOTHING_LIKE_IT="1",
                    KG_TEST_BACKEND="embedded", KG_TOKEN="t", KG_OWL_JARS="/nowhere")
    result = run(["dump", "--store", ":memory:"], env=env)
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if "warning" in line]
    assert "jido-kg: warning: KG_THREDS is not a setting; did you mean KG_THREADS?" in warnings
    assert "jido-kg: warning: KG_TOKENZ is not a setting; did you mean KG_TOKENS?" in warnings
    assert any(w.startswith("jido-kg: warning: KG_NOTHING_LIKE_IT is not a setting")
               for w in warnings)
    # Known KG_* names read outside Settings (tests, the ontology check, the MCP bridge).
    assert len(warnings) == 3, warnings


@pytest.mark.parametrize("name", sorted(STORE_COMMANDS))
def test_every_command_warns_and_refuses_a_store_under_a_file(tmp_path: Path, name: str) -> None:
    (tmp_path / "file").write_text("not a directory")
    store = tmp_path / "file" / "store"
    args = command(name, str(store), tmp_path)
    before = snapshot(tmp_path)
    result = run(args, env=clean_env(KG_THREDS="4"))
    assert_one_line_error(result, f"store path {store}: {tmp_path / 'file'} is not a directory")
    assert "jido-kg: warning: KG_THREDS is not a setting; did you mean KG_THREADS?" in (
        result.stderr.splitlines())
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("name", sorted(STORE_COMMANDS))
def test_every_command_refuses_a_store_that_is_a_file(tmp_path: Path, name: str) -> None:
    (tmp_path / "store").write_text("not a directory")
    args = command(name, str(tmp_path / "store"), tmp_path)
    before = snapshot(tmp_path)
    result = run(args)
    assert_one_line_error(result, f"store path {tmp_path / 'store'}", "is not a directory")
    assert (tmp_path / "store").read_text() == "not a directory"
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("name", CREATING)
def test_a_store_root_cannot_create_is_refused(tmp_path: Path, name: str) -> None:
    store = "/proc/sys/jido-kg-test/store"
    args = command(name, store, tmp_path)
    before = snapshot(tmp_path)
    result = run(args)
    assert snapshot(tmp_path) == before
    assert_one_line_error(result, f"store path {store}: /proc/sys is not writable")


@pytest.mark.parametrize("name", ["dump", "backup", "migrate to-remote"])
def test_commands_that_read_a_store_refuse_one_that_is_not_there(
    tmp_path: Path, name: str
) -> None:
    args = command(name, str(tmp_path / "missing"), tmp_path)
    before = snapshot(tmp_path)
    result = run(args)
    assert_one_line_error(result, f"store path {tmp_path / 'missing'} does not exist")
    assert snapshot(tmp_path) == before


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A loopback port another socket is listening on."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield int(holder.getsockname()[1])


def test_port_in_use_fails_before_the_store_exists(tmp_path: Path, taken_port: int) -> None:
    store = tmp_path / "store"
    result = run(["serve", "--store", str(store), "--port", str(taken_port)])
    assert_one_line_error(result, f"127.0.0.1:{taken_port} is already in use", "KG_PORT")
    assert not store.exists()
    assert snapshot(tmp_path) == set(), "no store, no recall index, nothing"


# --- writes without any token configured: the 401 names KG_TOKENS ---------------------------

def call(server: RunningServer, method: str, path: str, body: bytes, content_type: str,
         *, token: str | None = None) -> tuple[int, dict[str, object]]:
    """Send one request and return its status and JSON error body."""
    headers = {"Content-Type": content_type}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(f"{server.url}{path}", data=body, method=method,
                                     headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


WRITES = [
    ("POST", "/v1/projects/acme/memories", json.dumps({"content": "x"}).encode(),
     "application/json"),
    ("POST", "/v1/sessions", json.dumps({"project": "acme"}).encode(), "application/json"),
    ("POST", "/update", b"INSERT DATA { <urn:a> <urn:b> <urn:c> }", "application/sparql-update"),
    ("PUT", "/store?default", b"<urn:a> <urn:b> <urn:c> .", "text/turtle"),
    ("POST", "/store?graph=urn:g", b"<urn:a> <urn:b> <urn:c> .", "text/turtle"),
]


@pytest.fixture
def tokenless_server(server_factory: Callable[..., RunningServer],
                     tmp_path: Path) -> RunningServer:
    """A real server started with no KG_TOKENS at all."""
    return server_factory(tmp_path / "store", extra_env={"KG_TOKENS": "{}",
                                                         "KG_EMBEDDER": "none"})


def test_a_write_without_configured_tokens_says_so_on_every_write_route(
    tokenless_server: RunningServer,
) -> None:
    for method, path, body, content_type in WRITES:
        status, answer = call(tokenless_server, method, path, body, content_type)
        error = answer["error"]
        assert isinstance(error, dict)
        assert status == 401 and error["status"] == 401, (path, answer)
        assert "none is configured" in error["message"], (path, error)
        assert "KG_TOKENS='{\"<token>\": \"write\"}'" in error["message"], (path, error)
        # With a token the server cannot know, the answer names the cause, not a typo.
        status, answer = call(tokenless_server, method, path, body, content_type,
                              token="s3cret")
        error = answer["error"]
        assert isinstance(error, dict)
        assert status == 401 and "no tokens are configured" in error["message"], (path, error)
        assert "KG_TOKENS" in error["message"]
    status, answer = call(tokenless_server, "POST", "/admin/backup", b"{}", "application/json")
    error = answer["error"]
    assert isinstance(error, dict)
    assert status == 401 and "KG_TOKENS='{\"<token>\": \"admin\"}'" in error["message"]


def test_with_tokens_configured_an_unknown_token_is_still_just_not_valid(
    server_factory: Callable[..., RunningServer], tmp_path: Path
) -> None:
    server = server_factory(tmp_path / "store", extra_env={"KG_TOKENS": '{"right": "write"}',
                                                           "KG_EMBEDDER": "none"})
    method, path, body, content_type = WRITES[2]
    status, answer = call(server, method, path, body, content_type, token="wrong")
    error = answer["error"]
    assert isinstance(error, dict)
    assert status == 401 and "not valid" in error["message"]
    assert "KG_TOKENS" not in error["message"]
    status, _ = call(server, method, path, body, content_type, token="right")
    assert status in (200, 204)
