"""The suite reads nothing outside the repository: a fresh clone alone passes `make test`."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_SHARED = "sha" + "red"  # split so this file does not match its own patterns
# Paths outside the checkout that a test, the Makefile or CI could come to depend on: the
# developers' side folder beside the clone, home and work directories, or the checkout's parent.
_OUTSIDE = re.compile(
    r"\.\./" + _SHARED + r"\b"
    r"|[\"'/]" + _SHARED + r"/(?:conformance|data|seeds)\b"
    r"|(?<![\w.])/(?:work|home|root|Users|mnt|srv)/"
    r"|\b(?:ROOT|REPO|HERE)\.parent\b"
    r"|parents\[\d+\]\s*/\s*[\"']" + _SHARED
)


def _suite_files() -> list[Path]:
    """Every tracked file that `make test` runs or reads: tests, Makefile, CI, tools, bench."""
    listed = subprocess.run(["git", "ls-files", "tests", "bench", "tools", "Makefile", ".ci",
                             "pyproject.toml"], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.split()
    # tests/data holds copied third-party data (W3C manifests) whose text is not code.
    return [ROOT / name for name in listed
            if not name.startswith("tests/data/") and (ROOT / name).is_file()
            and Path(name).suffix not in {".png", ".jar", ".json"}]


def test_the_pattern_catches_what_it_is_for() -> None:
    for line in ["open('../" + _SHARED + "/conformance/w3c')", "ROOT.parent / 'x'",
                 "Path('/work/" + _SHARED + "/data')", "cd /home/me/data",
                 "parents[2] / '" + _SHARED + "'"]:
        assert _OUTSIDE.search(line), line
    for line in ["ROOT / 'tests' / 'data' / 'w3c'", "'/usr/bin/chromium'", "'x/../y'"]:
        assert not _OUTSIDE.search(line), line


def test_no_file_of_the_suite_reaches_outside_the_repository() -> None:
    files = _suite_files()
    assert any(path.name == "Makefile" for path in files) and len(files) > 50
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
             for path in files if path != Path(__file__).resolve()
             for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
             if _OUTSIDE.search(line)]
    assert found == []


def test_the_w3c_manifests_and_their_licence_are_in_the_repository() -> None:
    w3c = ROOT / "tests" / "data" / "w3c"
    for name in ["LICENSE.md", "SOURCE.txt", "protocol/manifest.ttl",
                 "graph-store-protocol/manifest.ttl", "service-description/manifest.ttl"]:
        assert (w3c / name).is_file(), name
