"""The README stays true: its Python runs, and every setting, command and route is in it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from flask import Flask

from api.cli import cli
from kg.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_opens_with_the_two_commands_and_ci_runs_the_test_one() -> None:
    first_block = README.split("```sh", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in first_block.strip().splitlines()]
    assert commands == ["make serve", "make test"]
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


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
