"""Debian's Chromium driven by Debian's chromedriver (installed by `make setup`), headless."""

from __future__ import annotations

import shutil
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service

__all__ = ["FLAGS", "chromium"]

# No background networking: this machine's closed network refuses Chromium's own connections.
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--disable-dev-shm-usage"]


def chromium(profile: Path, *, size: tuple[int, int] = (1280, 1000),
             log_network: bool = False) -> webdriver.Chrome:
    """A new headless browser with its own profile directory (and, if asked, a network log)."""
    binary, driver = shutil.which("chromium"), shutil.which("chromedriver")
    assert binary and driver, "chromium/chromium-driver missing: run `make setup`"
    options = Options()
    options.binary_location = binary
    for flag in [*FLAGS, f"--window-size={size[0]},{size[1]}", f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    if log_network:
        options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    # The driver is named: Selenium Manager would otherwise try to download one.
    return webdriver.Chrome(options=options, service=Service(executable_path=driver))
