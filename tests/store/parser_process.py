"""pyoxigraph in a child process: texts that might crash it never take the test process down.

The child runs queries and updates on an empty in-memory store, on its main thread (an 8 MiB
stack, like the library's callers) and answers one line each: `ok`, `syntax <message>` or
`error <message>`; `slow` when it is still busy after SLOW_SECONDS (parsed, then planning).
When it dies (a segfault is how pyoxigraph overflows its stack) the parent reports
`crash <signal>` and starts a fresh one for the next text.
"""

from __future__ import annotations

import select
import subprocess
import sys
from pathlib import Path
from typing import IO, Literal

__all__ = ["SLOW_SECONDS", "ParserProcess"]

# Longer than any parse takes here, short enough that a planner busy for minutes costs little.
SLOW_SECONDS = 5.0


class ParserProcess:
    """A long-lived child that parses and runs SPARQL texts with pyoxigraph."""

    def __init__(self) -> None:
        self._child: subprocess.Popen[bytes] | None = None

    def run(self, text: str, *, kind: Literal["query", "update"] = "query") -> str:
        """Run `text` in the child; its verdict, or `crash <signal>` if it died."""
        child = self._child
        if child is None or child.poll() is not None:
            child = self._child = subprocess.Popen(
                [sys.executable, str(Path(__file__))], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            )
            assert child.stdout is not None and child.stdout.readline() == b"ready\n"
        assert child.stdin is not None and child.stdout is not None
        data = text.encode()
        try:
            child.stdin.write(f"{kind[0]}{len(data)}\n".encode() + data)
            child.stdin.flush()
            # Parsing is over in milliseconds; some long chains (hundreds of OPTIONALs or path
            # triples) then keep pyoxigraph's planner busy for minutes. Such a text was parsed
            # without a crash, which is all these tests ask: the child is replaced.
            ready, _, _ = select.select([child.stdout], [], [], SLOW_SECONDS)
            if not ready:
                child.kill()
                child.wait()
                return "slow"
            line = child.stdout.readline()
        except BrokenPipeError:
            line = b""
        if not line:
            return f"crash {child.wait()}"
        return line.decode().rstrip("\n")

    def close(self) -> None:
        """Stop the child (it ends when its input closes)."""
        if self._child is not None:
            assert self._child.stdin is not None
            self._child.stdin.close()
            self._child.wait()
            self._child = None


def _serve(requests: IO[bytes], answers: IO[bytes]) -> None:
    import pyoxigraph

    answers.write(b"ready\n")  # imported: from here on only parsing and planning are timed
    answers.flush()
    while header := requests.readline():
        kind, size = header[:1], int(header[1:])
        text = requests.read(size).decode()
        store = pyoxigraph.Store()
        try:
            if kind == b"u":
                store.update(text)
            else:
                result = store.query(text)
                if isinstance(result, pyoxigraph.QuerySolutions | pyoxigraph.QueryTriples):
                    list(result)
            verdict = "ok"
        except SyntaxError as exc:
            verdict = "syntax " + str(exc).replace("\n", " ")
        except Exception as exc:  # evaluation errors are fine: the text parsed
            verdict = "error " + str(exc).replace("\n", " ")
        answers.write(verdict.encode() + b"\n")
        answers.flush()


if __name__ == "__main__":
    _serve(sys.stdin.buffer, sys.stdout.buffer)
