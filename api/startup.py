"""Start-up of the `jido-kg` command: settings from `KG_*` variables and usable paths, or one line.

Everything here only reads: a bad value or an unusable path is reported before anything is
created on disk, as one line naming the variable (or option) at fault, never a traceback.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import pydantic
from pydantic_settings import SettingsError

from kg.errors import ValidationError
from kg.settings import Settings

__all__ = [
    "NON_SETTING_VARIABLES", "StartupError", "check_path", "load_settings", "unknown_variables",
]

PREFIX = "KG_"

# KG_* names read by something other than Settings: known, so they are not warned about.
NON_SETTING_VARIABLES: dict[str, str] = {
    "KG_TOKEN": "bearer token the `jido-kg mcp --url` bridge sends (client side, reserved)",
    "KG_OWL_JARS": "folder of the OWL API and HermiT jars of `jido-kg check-ontology`",
    "KG_TEST_BACKEND": "tests: shared fixtures on 'embedded' or 'oxigraph' (tests/conftest.py)",
    "KG_TEST_REMOTE": "tests: kind of remote server of tests/remote ('virtuoso')",
    "KG_TEST_VIRTUOSO_URL": "tests: the Virtuoso server used with KG_TEST_REMOTE=virtuoso",
}
# Values never echoed in a message (a token or password would end up in logs).
_SECRETS = frozenset({"tokens", "remote_password", "remote_token"})
# Example values of the JSON settings, shown when one does not parse.
_JSON_EXAMPLES = {
    "tokens": "'{\"<token>\": \"write\"}'",
    "cors_origins": "'[\"https://app.example.org\"]'",
    "fetch_allowlist": "'[\"https://dbpedia.org/\"]'",
}
# Pydantic error types whose own wording is longer than it is helpful.
_WORDING = {
    "int_parsing": "is not a valid integer",
    "int_from_float": "is not a valid integer",
    "float_parsing": "is not a valid number",
    "bool_parsing": "is not a valid boolean (use true or false)",
    "json_invalid": "is not valid JSON",
}
_SHOULD = re.compile(r"^(?:Input|String|Value|List|Dictionary) should ")
_FIELD = re.compile(r'field "(\w+)"')


class StartupError(ValidationError):
    """A setting, option or path the command cannot start with (exit status 2)."""

    code = "invalid_setting"


def unknown_variables(environ: Mapping[str, str]) -> list[str]:
    """Return one warning per `KG_*` variable that is neither a setting nor a known other one."""
    settings = [PREFIX + name.upper() for name in Settings.model_fields]
    known = [*settings, *NON_SETTING_VARIABLES]
    # Compared without the shared prefix, which would make every name look alike.
    stems = {name.removeprefix(PREFIX): name for name in known}
    warnings = []
    for name in sorted(environ):
        # pydantic-settings matches names case-insensitively, so `kg_port` is a setting too.
        upper = name.upper()
        if not upper.startswith(PREFIX) or upper in known:
            continue
        nearest = _nearest(upper.removeprefix(PREFIX), stems, settings=settings)
        hint = (f"did you mean {nearest}?" if nearest
                else "the settings are listed by `jido-kg --help` and in the README")
        warnings.append(f"{name} is not a setting; {hint}")
    return warnings


def _nearest(stem: str, stems: Mapping[str, str], *, settings: list[str]) -> str | None:
    """The known name most like `stem`; a setting wins over a slightly closer other name."""
    close = difflib.get_close_matches(stem, stems, n=3)
    if not close:
        return None
    best = difflib.SequenceMatcher(None, stem, close[0]).ratio()
    for candidate in close:
        # KG_TOKENZ means KG_TOKENS (a setting) rather than KG_TOKEN (the bridge's token).
        if stems[candidate] in settings and \
                difflib.SequenceMatcher(None, stem, candidate).ratio() >= best - 0.1:
            return stems[candidate]
    return stems[close[0]]


def load_settings(options: Mapping[str, Any], *,
                  option_names: Mapping[str, str] | None = None) -> Settings:
    """Build Settings from command-line `options` (None = unset) over `KG_*` variables."""
    given = {field: value for field, value in options.items() if value is not None}
    try:
        return Settings(**given)
    except SettingsError as exc:
        raise StartupError(_unparsable(exc)) from None
    except pydantic.ValidationError as exc:
        names = {field: (option_names or {}).get(field, "--" + field.replace("_", "-"))
                 for field in given}
        problems = [_problem(error, names) for error in exc.errors()]
        raise StartupError("; ".join(problems), details={"problems": problems}) from None


def check_path(path: Path, *, what: str, kind: Literal["directory", "file"] = "directory",
               must_exist: bool = False) -> None:
    """Raise StartupError unless `path` is (or could be created as) a usable `kind`."""
    def fail(reason: str) -> StartupError:
        return StartupError(f"{what} {path}: {reason}", details={"path": str(path)})

    # os.path rather than Path: its tests say False where Path.exists raises (EACCES).
    if os.path.islink(path) and not os.path.exists(path):
        raise fail(f"{path} is a symbolic link to nothing")
    if os.path.exists(path):
        is_dir = os.path.isdir(path)
        if kind == "directory" and not is_dir:
            raise fail(f"{path} exists and is not a directory")
        if kind == "file" and is_dir:
            raise fail(f"{path} is a directory")
        if not os.access(path, os.R_OK):
            raise fail(f"{path} is not readable")
        if not os.access(path, os.W_OK | (os.X_OK if is_dir else 0)):
            raise fail(f"{path} is not writable")
        return
    # The nearest existing ancestor is where the first new directory would be made.
    ancestor = next((parent for parent in path.parents if os.path.lexists(parent)), Path("."))
    if not os.path.isdir(ancestor):
        raise fail(f"{ancestor} is not a directory")
    if must_exist:
        raise StartupError(f"{what} {path} does not exist", details={"path": str(path)})
    # As root this holds except on read-only file systems and kernel trees such as /proc/sys.
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise fail(f"{ancestor} is not writable")


def _unparsable(exc: SettingsError) -> str:
    """The one line for a `KG_*` JSON value that does not parse."""
    match = _FIELD.search(str(exc))
    if match is None:
        return str(exc)
    field = match.group(1)
    name = PREFIX + field.upper()
    example = _JSON_EXAMPLES.get(field)
    shown = name if field in _SECRETS else f"{name}={_environ_value(name)!r}"
    line = f"{shown} is not valid JSON ({exc.__cause__})" if exc.__cause__ else \
        f"{shown} is not valid JSON"
    return f"{line}; e.g. {name}={example}" if example else line


def _problem(error: Mapping[str, Any], names: Mapping[str, str]) -> str:
    """One bad value as `NAME='value' what is wrong` (no value for secrets)."""
    loc = error.get("loc") or ("?",)
    field = str(loc[0])
    kind = str(error.get("type", ""))
    message = str(error.get("msg", "is not valid"))
    if kind in _WORDING:
        wrong = _WORDING[kind]
    elif message.startswith("Value error, "):
        wrong = message.removeprefix("Value error, ")
    else:
        wrong = _SHOULD.sub("should ", message)
    if field in _SECRETS:
        return f"{names.get(field, PREFIX + field.upper())}: {wrong}"
    where = f" (item {'.'.join(map(str, loc[1:]))})" if len(loc) > 1 else ""
    if field in names:
        return f"{names[field]} {error.get('input')!r}{where} {wrong}"
    name = PREFIX + field.upper()
    value = _environ_value(name)
    shown = f"{name}={value!r}" if value is not None else name
    return f"{shown}{where} {wrong}"


def _environ_value(name: str) -> str | None:
    """The raw value of a variable, matched without regard to case like pydantic-settings."""
    for key, value in os.environ.items():
        if key.upper() == name:
            return value
    return None
