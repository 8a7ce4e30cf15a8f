"""The runaway ledger and who a request is charged to (api/budget.py), and loopback addresses."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from api.budget import RunawayLedger, caller_of
from api.exposure import is_loopback
from kg.shortterm.session_manager import SessionManager


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_a_caller_is_refused_from_its_budget_th_charge_until_the_oldest_ages_out(
        tmp_path: Path) -> None:
    clock = Clock()
    ledger = RunawayLedger(tmp_path / "ledger.json", budget=2, window=600, clock=clock)
    ledger.charge("address:10.0.0.1")
    assert ledger.retry_after("address:10.0.0.1") is None
    clock.now += 100
    ledger.charge("address:10.0.0.1")
    assert ledger.retry_after("address:10.0.0.1") == 500  # the first charge ages out then
    assert ledger.retry_after("address:10.0.0.2") is None  # only that caller
    clock.now += 500.5
    assert ledger.retry_after("address:10.0.0.1") is None
    assert ledger.charges("address:10.0.0.1") == 1


def test_the_ledger_outlives_its_process_in_its_file(tmp_path: Path) -> None:
    clock = Clock()
    path = tmp_path / "ledger.json"
    RunawayLedger(path, budget=1, window=60, clock=clock).charge("token:abc")
    again = RunawayLedger(path, budget=1, window=60, clock=clock)
    assert again.retry_after("token:abc") == 60
    clock.now += 61
    assert RunawayLedger(path, budget=1, window=60, clock=clock).charges("token:abc") == 0


def test_a_damaged_ledger_file_starts_an_empty_ledger(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    path.write_text("{not json")
    ledger = RunawayLedger(path, budget=1, window=60)
    assert ledger.retry_after("address:1.2.3.4") is None
    ledger.charge("address:1.2.3.4")
    assert json.loads(path.read_text())["charges"]["address:1.2.3.4"]


def test_callers_are_tokens_by_hash_else_addresses_ipv6_by_network() -> None:
    token = caller_of({"HTTP_AUTHORIZATION": "Bearer s3cret", "REMOTE_ADDR": "10.0.0.1"})
    assert token.startswith("token:") and "s3cret" not in token
    assert caller_of({"HTTP_AUTHORIZATION": "bearer s3cret"}) == token
    assert caller_of({"REMOTE_ADDR": "10.0.0.1"}) == "address:10.0.0.1"
    assert caller_of({"REMOTE_ADDR": "::ffff:10.0.0.1"}) == "address:10.0.0.1"
    one = caller_of({"REMOTE_ADDR": "2001:db8:1:2:aaaa::1"})
    assert one == caller_of({"REMOTE_ADDR": "2001:db8:1:2:bbbb::9"}) == "address:2001:db8:1:2::/64"
    assert one != caller_of({"REMOTE_ADDR": "2001:db8:1:3::1"})


def test_loopback_is_only_loopback() -> None:
    assert all(map(is_loopback, ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "192.168.1.5", "example.org", ""]))


def test_snapshot_all_skips_a_session_busy_beyond_the_wait() -> None:
    manager = SessionManager()
    manager.start("free", project="p")
    busy = manager.start("busy", project="p")
    taken, release = threading.Event(), threading.Event()

    def hold() -> None:
        with busy.lock:
            taken.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    taken.wait(10)
    try:
        found = manager.snapshot_all(timeout=0.05)
    finally:
        release.set()
        holder.join()
    assert found["busy"] is None and found["free"] is not None and found["free"]["id"] == "free"
    manager.close("free")
    assert set(manager.snapshot_all()) == {"busy"}
