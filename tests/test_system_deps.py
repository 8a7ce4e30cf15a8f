"""Without the Debian packages, a user who is not root gets one line that says what to run."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOBODY = 65534


def _as_a_user(command: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    """Run `command` in the checkout as an unprivileged user (root drops to nobody first)."""
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        assert setpriv, "setpriv (util-linux) is needed to drop root for this test"
        command = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *command]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "MAKEFLAGS": "", "MAKELEVEL": "", **env})


def test_make_test_names_the_missing_packages_and_stops_before_anything_else() -> None:
    result = _as_a_user(["make", "test", "VENV=.cache/never-created-venv"],
                        JAVAC="no-such-javac", CHROMIUM="/nonexistent/chromium")
    assert result.returncode != 0
    assert result.stdout == ""  # no recipe ran: no venv, no pip, no npm
    remedy = [line for line in result.stderr.splitlines() if not line.startswith("make")]
    assert remedy == ["jido-kg needs these Debian packages: default-jdk-headless chromium "
                      "chromium-driver; install them with: sudo make system-deps"]
    assert not (ROOT / ".cache" / "never-created-venv").exists()


def test_make_serve_stops_the_same_way() -> None:
    result = _as_a_user(["make", "serve"], NPM="no-such-npm")
    assert result.returncode != 0 and result.stdout == ""
    assert "nodejs npm; install them with: sudo make system-deps" in result.stderr


def test_nothing_is_missing_here_so_the_check_passes_quietly() -> None:
    result = _as_a_user(["bash", "tools/system_deps.sh"])
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
