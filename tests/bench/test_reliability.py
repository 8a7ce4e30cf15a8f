"""The fast subset of the reliability suite against real `jido-kg serve` processes.

Durability 3 kill -9 cycles (of the worker and of the supervisor), 2 rounds of runaways, a 5 s
soak with 16 clients, a few hundred fuzzed requests, every security check, and one backup
taken under load and restored. The full suite is
`python -m bench.reliability` (`make reliability`); its report is docs/benchmarks/reliability.md.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.reliability import backup, durability, fuzz, runaway, security, soak
from bench.reliability.result import CheckResult

pytestmark = pytest.mark.slow


def _clean(result: CheckResult) -> None:
    assert result.ok, "\n".join(result.notes)
    assert result.errors == 0 and result.losses == 0


def test_durability_three_kill_cycles_lose_no_acknowledged_write(tmp_path: Path) -> None:
    result = durability.run(3, workdir=tmp_path)
    _clean(result)
    assert result.cycles == 3 and result.requests > 0
    assert result.figures["worker kills"] == 1 and result.figures["supervisor kills"] == 3


def test_runaways_two_rounds_end_cost_no_cpu_and_lose_nothing(tmp_path: Path) -> None:
    result = runaway.run(2, workdir=tmp_path, settle=10.0)
    _clean(result)
    assert result.figures["replacements"] == 1 and result.figures["acknowledged"] > 0


def test_soak_five_seconds_sixteen_clients(tmp_path: Path) -> None:
    result = soak.run(5, workdir=tmp_path, memories=2_000)
    _clean(result)
    assert result.requests > 16 and "p99 ms" in result.figures


def test_fuzz_a_few_hundred_requests(tmp_path: Path) -> None:
    result = fuzz.run(300, workdir=tmp_path)
    _clean(result)
    assert result.requests == 300


def test_security_checks(tmp_path: Path) -> None:
    result = security.run(workdir=tmp_path)
    _clean(result)
    assert result.requests > 100


def test_backup_under_load_restores_consistently(tmp_path: Path) -> None:
    result = backup.run(1, workdir=tmp_path, memories=500)
    _clean(result)
    assert result.cycles == 1
