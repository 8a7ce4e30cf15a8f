"""The Protégé-grade ontology check: OWL API Turtle-only parse, OWL 2 DL profile and HermiT.

The work is done by `tools/owlcheck/OwlCheck.java` on the OWL API 5.1.9 and HermiT jars that
`make owl-jars` (tools/fetch_owl_jars.sh) puts in `.cache/owlapi/jars`; this module compiles it
on first use, runs it and turns its one-line JSON report into an `OwlCheckReport`.

    >>> from kg.resources import ontology_path
    >>> check_ontology([ontology_path()]).ok  # doctest: +SKIP
    True
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kg.errors import OntologyCheckError

__all__ = [
    "JARS_ENV",
    "MARKER_JAR",
    "OwlCheckReport",
    "check_ontology",
    "default_jar_dir",
    "main",
]

JARS_ENV = "KG_OWL_JARS"
MARKER_JAR = "owlapi-distribution-5.1.9.jar"
_REPO = Path(__file__).resolve().parents[1]
_SOURCE = _REPO / "tools" / "owlcheck" / "OwlCheck.java"
_MAIN_CLASS = "OwlCheck"
_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class OwlCheckReport:
    """What the OWL API and HermiT said about an ontology (plus any data files merged into it)."""

    parse_issues: tuple[str, ...]
    dl_violations: tuple[str, ...]
    consistent: bool | None
    unsatisfiable: tuple[str, ...]
    reasoner_errors: tuple[str, ...]
    axioms: int
    logical_axioms: int
    classes: int
    object_properties: int
    data_properties: int
    annotation_properties: int
    individuals: int

    @property
    def ok(self) -> bool:
        """True when parsed cleanly, in OWL 2 DL, consistent, with no unsatisfiable class."""
        return (
            not self.parse_issues
            and not self.dl_violations
            and not self.reasoner_errors
            and self.consistent is True
            and not self.unsatisfiable
        )

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> OwlCheckReport:
        """Build a report from the JSON object OwlCheck.java prints."""
        consistent = data.get("consistent")
        return cls(
            parse_issues=tuple(str(x) for x in data.get("parse_issues", [])),
            dl_violations=tuple(str(x) for x in data.get("dl_violations", [])),
            consistent=consistent if isinstance(consistent, bool) else None,
            unsatisfiable=tuple(str(x) for x in data.get("unsatisfiable", [])),
            reasoner_errors=tuple(str(x) for x in data.get("reasoner_errors", [])),
            axioms=int(data.get("axioms", 0)),
            logical_axioms=int(data.get("logical_axioms", 0)),
            classes=int(data.get("classes", 0)),
            object_properties=int(data.get("object_properties", 0)),
            data_properties=int(data.get("data_properties", 0)),
            annotation_properties=int(data.get("annotation_properties", 0)),
            individuals=int(data.get("individuals", 0)),
        )

    def summary(self) -> str:
        """Return a short human-readable account of the findings."""
        if self.ok:
            return (
                f"ok: {self.axioms} axioms, {self.classes} classes, "
                f"{self.object_properties + self.data_properties} properties, "
                f"{self.individuals} individuals; consistent, no unsatisfiable class"
            )
        lines = [f"parse issue: {x}" for x in self.parse_issues]
        lines += [f"OWL 2 DL violation: {x}" for x in self.dl_violations]
        lines += [f"reasoner error: {x}" for x in self.reasoner_errors]
        if self.consistent is False:
            lines.append("inconsistent under HermiT")
        lines += [f"unsatisfiable class: {x}" for x in self.unsatisfiable]
        return "\n".join(lines) or "not checked"


def default_jar_dir() -> Path:
    """Return the jar folder: $KG_OWL_JARS, else `<repo>/.cache/owlapi/jars`."""
    env = os.environ.get(JARS_ENV)
    return Path(env) if env else _REPO / ".cache" / "owlapi" / "jars"


def check_ontology(
    paths: Sequence[Path], *, jar_dir: Path | None = None, java: str = "java"
) -> OwlCheckReport:
    """Check Turtle files (ontology first, then data) with the OWL API and HermiT."""
    if not paths:
        raise OntologyCheckError("check_ontology needs at least one Turtle file")
    files = [Path(p).resolve() for p in paths]
    missing = [str(p) for p in files if not p.is_file()]
    if missing:
        raise OntologyCheckError(
            f"no such file: {', '.join(missing)}", details={"missing": missing}
        )
    jars = (jar_dir or default_jar_dir()).resolve()
    java_bin = _require_tool(java, "java")
    classes = _compiled_classes(jars, java_bin)
    classpath = os.pathsep.join([str(classes), str(jars / "*")])
    try:
        done = subprocess.run(
            [java_bin, "-cp", classpath, _MAIN_CLASS, *map(str, files)],
            capture_output=True,
            text=True,
            timeout=_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise OntologyCheckError(f"the ontology check took longer than {_TIMEOUT_S:.0f} s") from exc
    if done.returncode not in (0, 1):
        raise OntologyCheckError(
            f"OwlCheck failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}",
            details={"returncode": done.returncode},
        )
    try:
        data = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError) as exc:
        raise OntologyCheckError(
            f"OwlCheck printed no JSON report; stderr: {done.stderr.strip()[-2000:]}"
        ) from exc
    return OwlCheckReport.from_json(data)


def _require_tool(name: str, what: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise OntologyCheckError(
            f"{what} ({name!r}) not found: the ontology check needs a Java 11+ JDK on PATH "
            "(`make system-deps` installs one)"
        )
    return found


def _javac_for(java_bin: str) -> str:
    # Prefer the javac beside the chosen java so both come from the same JDK.
    sibling = Path(java_bin).resolve().parent / "javac"
    return str(sibling) if sibling.is_file() else _require_tool("javac", "javac")


def _compiled_classes(jars: Path, java_bin: str) -> Path:
    """Return the folder holding OwlCheck.class, compiling it when missing or stale."""
    if not (jars / MARKER_JAR).is_file():
        raise OntologyCheckError(
            f"the OWL API jars are missing from {jars} (no {MARKER_JAR}): run `make owl-jars` "
            f"(tools/fetch_owl_jars.sh), or point {JARS_ENV} at a folder holding them"
        )
    if not _SOURCE.is_file():
        raise OntologyCheckError(
            f"{_SOURCE} not found: the ontology check runs from a jido-kg source checkout"
        )
    out = jars.parent / "classes"
    target = out / f"{_MAIN_CLASS}.class"
    if target.is_file() and target.stat().st_mtime >= _SOURCE.stat().st_mtime:
        return out
    out.mkdir(parents=True, exist_ok=True)
    # Compile privately, then move the result in: concurrent runs never see half a class file.
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        done = subprocess.run(
            [_javac_for(java_bin), "-nowarn", "-cp", str(jars / "*"), "-d", tmp, str(_SOURCE)],
            capture_output=True,
            text=True,
            timeout=_TIMEOUT_S,
            check=False,
        )
        if done.returncode != 0:
            raise OntologyCheckError(
                f"compiling {_SOURCE.name} failed: {done.stderr.strip()[-2000:]}",
                details={"returncode": done.returncode},
            )
        for built in Path(tmp).glob("*.class"):
            os.replace(built, out / built.name)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run the check from the command line: `python -m kg.owl_check [FILE.ttl ...]`."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args:
        paths = [Path(a) for a in args]
    else:
        from kg.resources import ontology_path

        paths = [ontology_path()]
    try:
        report = check_ontology(paths)
    except OntologyCheckError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 2
    print(report.summary())
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
