"""Every package the code imports is declared, and every declared floor is one that really works."""

from __future__ import annotations

import ast
import sys
import tomllib
from functools import cache
from importlib.metadata import PackageNotFoundError, distribution, packages_distributions
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
_LOCAL = {"kg", "api", "tests", "bench"}
# Imported only for type checking (`if TYPE_CHECKING:`), never at run time.
_TYPING_ONLY = {"_typeshed"}


def _requirements(group: str | None) -> list[Requirement]:
    texts = (PYPROJECT["dependencies"] if group is None
             else PYPROJECT["optional-dependencies"][group])
    return [Requirement(text) for text in texts]


def _declared(*groups: str | None) -> set[str]:
    return {canonicalize_name(r.name) for group in groups for r in _requirements(group)}


def _imports(folder: str) -> dict[str, set[str]]:
    """Top-level modules imported by the Python files under `folder`, each with one file."""
    found: dict[str, set[str]] = {}
    for path in (ROOT / folder).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0
                     and node.module else [])
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in _LOCAL | _TYPING_ONLY:
                    found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


@cache
def _distributions_of(module: str) -> set[str]:
    return {canonicalize_name(name) for name in packages_distributions().get(module, [])}


def _undeclared(folder: str, allowed: set[str]) -> list[str]:
    return sorted(f"{module} ({sorted(files)[0]})" for module, files in _imports(folder).items()
                  if not _distributions_of(module) & allowed)


def test_the_library_and_service_import_only_declared_dependencies() -> None:
    extras = set(PYPROJECT["optional-dependencies"]) - {"dev"}
    core = _declared(None)
    # kg.integrations.<framework> may use its framework's extra; nothing else in kg or api may.
    assert _undeclared("kg", core | _declared(*extras)) == []
    outside_integrations = {
        module: files for module, files in _imports("kg").items()
        if any(not file.startswith("kg/integrations/") for file in files)}
    assert sorted(m for m in outside_integrations if not _distributions_of(m) & core) == []
    assert _undeclared("api", core) == []


def test_tests_and_benchmarks_import_only_declared_dependencies() -> None:
    everything = _declared(None, *PYPROJECT["optional-dependencies"])
    assert _undeclared("tests", everything) == []
    assert _undeclared("bench", everything) == []


def test_the_import_scan_sees_real_imports() -> None:
    assert {"pyoxigraph", "pydantic"} <= set(_imports("kg"))
    assert "flask" in _imports("api") and "flask" not in _imports("kg")
    assert _distributions_of("yaml") != {canonicalize_name("jido-kg")}


def _floor(specifier: SpecifierSet) -> Version | None:
    floors = [Version(spec.version) for spec in specifier
              if spec.operator in (">=", "==", "~=", "===")]
    return max(floors) if floors else None


def test_every_floor_satisfies_what_the_other_dependencies_require() -> None:
    """A declared `numpy>=1.26` is wrong when a declared package needs numpy>=2."""
    declared = {canonicalize_name(r.name): r
                for group in [None, *PYPROJECT["optional-dependencies"]]
                for r in _requirements(group)}
    too_low = []
    for name, ours in declared.items():
        floor = _floor(ours.specifier)
        if floor is None:
            continue
        for other in declared:
            try:
                needs = distribution(other).requires or []
            except PackageNotFoundError:
                continue
            for text in needs:
                theirs = Requirement(text)
                # An exact pin (pydantic -> pydantic-core==X) moves with the pinning package's
                # own version, so it says nothing about our floor.
                pinned = any(spec.operator == "==" for spec in theirs.specifier)
                if (canonicalize_name(theirs.name) == name and not pinned and
                        (theirs.marker is None or theirs.marker.evaluate({"extra": ""}))
                        and not theirs.specifier.contains(floor, prereleases=True)):
                    too_low.append(f"{name}>={floor} but {other} needs {theirs.specifier}")
    assert too_low == []


def test_every_declared_dependency_has_a_floor() -> None:
    unbounded = [r.name for group in [None, *PYPROJECT["optional-dependencies"]]
                 for r in _requirements(group) if _floor(r.specifier) is None]
    assert unbounded == []


def test_the_lock_pins_every_declared_dependency_within_its_range() -> None:
    pins = {canonicalize_name(name): Version(version) for name, version in
            (line.split("==") for line in (ROOT / "constraints.txt").read_text().splitlines()
             if line and not line.startswith("#"))}
    problems = []
    for group in [None, *PYPROJECT["optional-dependencies"]]:
        for requirement in _requirements(group):
            pinned = pins.get(canonicalize_name(requirement.name))
            if pinned is None or not requirement.specifier.contains(pinned, prereleases=True):
                problems.append(f"{requirement} locked at {pinned}")
    assert problems == []
    assert {"pip", "ruff", "mypy", "hatchling"} <= set(pins)
