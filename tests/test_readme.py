"""The README stays true: its commands and Python run; every setting, command, route is in it."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from flask import Flask

from api.cli import cli
from kg.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
FIRST_LOOK = "A first look"
PORT = 7879  # the README's first look talks to this port: it cannot move to a free one
# Every fenced block names its language; ```sh blocks are commands that run as printed (synopses
# are ```text), so a reader can paste any of them at the repository root.
FENCE_LANGUAGES = {"sh", "text", "python", "json", "sparql", "yaml"}
# The only ```sh commands not run here, because they run for minutes or hours (or forever, like
# `make serve` in the foreground): each is checked by what stands beside it instead.
NOT_RUN = {
    "make serve": ["make", "-n", "serve"],
    "make test": ["make", "-n", "test"],
    "make bench": ["make", "-n", "bench"],
    "make reliability": ["make", "-n", "reliability"],
    ".venv/bin/python -m bench --quick": [".venv/bin/python", "-m", "bench", "--quick", "--help"],
    ".venv/bin/python -m bench --only recall": [".venv/bin/python", "-m", "bench", "--only",
                                                "recall", "--help"],
}


def _sh_blocks() -> list[tuple[str, list[str]]]:
    """The README's ```sh blocks as commands, each with the heading of its section."""
    parts = re.split(r"^##+ (.*)$", README, flags=re.M)  # text, heading, text, heading ...
    headed = zip(["", *parts[1::2]], parts[::2], strict=True)
    return [(heading, _commands(block)) for heading, text in headed
            for block in re.findall(r"^```sh\n(.*?)^```", text, flags=re.S | re.M)]


def _first_look() -> list[str]:
    """The commands of the first ```sh block under "A first look"."""
    return next(commands for heading, commands in _sh_blocks() if heading == FIRST_LOOK)


def _commands(block: str) -> list[str]:
    """Split a block into its commands as printed: continued lines and open quotes join."""
    commands: list[str] = []
    pending = ""
    for line in block.splitlines(keepends=True):
        pending += line
        if not pending.strip():
            pending = ""
            continue
        if pending.rstrip().endswith("\\"):
            continue
        try:
            shlex.split(pending, comments=True)
        except ValueError:  # a quote still open: the command goes on on the next line
            continue
        commands.append(pending.rstrip("\n"))
        pending = ""
    assert not pending.strip(), f"unterminated command in the README: {pending!r}"
    return [c for c in commands if not c.lstrip().startswith("#")]


def _bare(command: str) -> str:
    """A one-line command without its trailing comment."""
    return command.split("#")[0].strip()


def _environment(tmp_path: Path) -> dict[str, str]:
    """A fresh shell's environment: no KG_* settings, no enclosing make, a store in tmp_path."""
    # Inside `make test`, MAKEFLAGS/MAKELEVEL would carry the outer make's options (-B would
    # rebuild .venv) into the README's `make serve`; a reader's shell has none of them.
    dropped = ("KG_", "MAKE", "MFLAGS", "GNUMAKEFLAGS", "BASH_ENV")
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    env["KG_STORE"] = str(tmp_path / "store")  # the checkout's data/store stays untouched
    return env


def _listening(port: int) -> bool:
    """Whether something accepts connections on the loopback port."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except OSError:
        return False
    return True


@dataclass
class Run:
    """One command as printed and what it wrote."""

    command: str
    stdout: str
    stderr: str


def _run_as_printed(commands: list[str], tmp_path: Path) -> tuple[int, str, list[Run]]:
    """Run the commands in one bash, each as printed: bash's status and output, and the runs."""
    out = tmp_path / "out"
    out.mkdir()
    # Each command goes verbatim into a `{ ... }` group (the current shell, so `&` and `%1`
    # mean what they mean to a reader) whose output lands in files of its own.
    script = ["set -e -o pipefail"]
    for i, command in enumerate(commands):
        target = shlex.quote(str(out / str(i)))
        script.append(f"{{ {command}\n}} >{target}.out 2>{target}.err")
    script.append("wait")  # for the service the last command stopped
    (tmp_path / "first_look.sh").write_text("\n".join(script) + "\n", encoding="utf-8")
    process = subprocess.Popen(["bash", str(tmp_path / "first_look.sh")], cwd=ROOT,
                               env=_environment(tmp_path), stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               start_new_session=True)
    try:
        shell, _ = process.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        shell = b"(bash did not finish in 240 s: a command hangs, or a job never ends)"
    finally:
        # The session's process group (bash, make, the service) goes, whatever happened.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    runs = [Run(command, (out / f"{i}.out").read_text(errors="replace"),
                (out / f"{i}.err").read_text(errors="replace"))
            for i, command in enumerate(commands) if (out / f"{i}.out").exists()]
    return process.returncode, shell.decode(errors="replace"), runs


def _report(shell: str, runs: list[Run]) -> str:
    """Every command run and the end of its output, for a failure message."""
    return shell + "".join(f"\n$ {run.command}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
                           for run in runs)


def test_readme_opens_with_the_two_commands_and_ci_runs_the_test_one() -> None:
    first_block = README.split("```sh", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in first_block.strip().splitlines()]
    assert commands == ["make serve", "make test"]
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_every_fence_names_its_language() -> None:
    fences = re.findall(r"^```(\S*)$", README, flags=re.M)[::2]  # opening fences only
    assert fences and set(fences) <= FENCE_LANGUAGES, fences


def test_first_look_runs_as_printed_against_a_real_server(tmp_path: Path) -> None:
    commands = _first_look()
    # It must stop what it started (the harness waits for that job to end).
    assert _bare(commands[-1]) == "kill %1", commands[-1]
    env = _environment(tmp_path)
    dry_run = subprocess.run(["make", "-n", "serve"], cwd=ROOT, env=env, capture_output=True,
                             text=True, timeout=60)
    assert dry_run.returncode == 0, dry_run.stderr
    assert "pip install" not in dry_run.stdout and "npm ci" not in dry_run.stdout, (
        "`make serve` would set up .venv or node_modules again (pyproject.toml, constraints.txt "
        f"or the npm lockfile changed): run `make setup` first\n{dry_run.stdout}")
    if _listening(PORT):
        pytest.fail(f"something already listens on 127.0.0.1:{PORT}, the port the README's "
                    "first look uses (a `make serve` still running?): stop it and run again")
    status, shell, runs = _run_as_printed(commands, tmp_path)
    report = _report(shell, runs)
    assert status == 0 and len(runs) == len(commands), report
    by_route = {route: [run.stdout for run in runs if f":{PORT}/v1/projects/shop{route}" in
                        run.command or f":{PORT}{route}" in run.command]
                for route in ("/memories", "/recall", "/sparql", "/ontology")}
    assert all(len(outputs) == 1 for outputs in by_route.values()), report
    remembered = json.loads(by_route["/memories"][0])  # curl exits 0 on a 400 too
    assert remembered.get("type") == "decision", report
    assert "Postgres" in by_route["/recall"][0], report
    assert "We use Postgres 16" in by_route["/sparql"][0], report
    assert re.search(r"^HTTP/1\.1 200 .*^Content-Type: application/rdf\+xml",
                     by_route["/ontology"][0], flags=re.S | re.M), report
    assert not _listening(PORT), "the first look's last command left the service running"


def test_every_other_sh_command_runs_from_the_repository_root(tmp_path: Path) -> None:
    others = [c for _, commands in _sh_blocks() if commands != _first_look() for c in commands]
    assert {_bare(c) for c in others} >= set(NOT_RUN), "NOT_RUN names a command gone from README"
    env = _environment(tmp_path)
    for command in others:
        check = NOT_RUN.get(_bare(command))
        argv = check if check is not None else ["bash", "-c", f"set -e -o pipefail\n{command}"]
        result = subprocess.run(argv, cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                                capture_output=True, text=True, timeout=240)
        assert result.returncode == 0, f"$ {command}\n{result.stdout[-3000:]}{result.stderr}"
        if "example_agent.py" in command:
            second = result.stdout.split("session 2", 1)[-1]
            assert "Orders are stored in PostgreSQL 16" in second, result.stdout


def test_readme_python_example_runs() -> None:
    (block,) = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    result = subprocess.run([sys.executable, "-c", block], cwd=ROOT, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "Postgres" in result.stdout


def test_every_setting_is_documented() -> None:
    missing = [f"KG_{name.upper()}" for name in Settings.model_fields
               if f"`KG_{name.upper()}`" not in README]
    assert missing == []


def test_every_command_is_documented() -> None:
    missing = [name for name in cli.commands if f"jido-kg {name}" not in README]
    assert missing == []


def test_every_route_area_is_documented(app: Flask) -> None:
    areas = {"/" + rule.rule.strip("/").split("/")[0] for rule in app.url_map.iter_rules()
             if rule.endpoint != "static"}
    missing = sorted(a for a in areas if not re.search(re.escape(a) + r"[/`, ]", README))
    assert missing == []
