"""The explorer in a real headless Chromium against a real server with seeded memories.

One server and one browser for the module. The pages' screenshots are saved into
docs/img/explore/ by this run, so the user documentation shows the pages as they are.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from tests.browser import chromium
from tests.conftest import ROOT, RunningServer, start_server
from tests.explore.conftest import READ, TOKENS, WRITE

SHOTS = ROOT / "docs" / "img" / "explore"
RETIRED_ASK = ("PREFIX jido: <https://jido.ai/ontology#>\n"
               "ASK { GRAPH ?g { <https://jido.ai/data/memory/%s> jido:retiredAt ?when } }")


@dataclass(frozen=True)
class Site:
    """The running server and the ids of its seeded memories."""

    server: RunningServer
    ids: dict[str, str]

    def url(self, path: str) -> str:
        return self.server.url + path


def _remember(server: RunningServer, project: str, content: str, **extra: Any) -> str:
    reply = httpx.post(f"{server.url}/v1/projects/{project}/memories",
                          json={"content": content, **extra},
                          headers={"Authorization": f"Bearer {WRITE}"}, timeout=30)
    reply.raise_for_status()
    return str(reply.json()["id"])


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """A real server (tokens set, anonymous reads on) with a small seeded project."""
    server = start_server(tmp_path_factory.mktemp("explore-store"),
                          extra_env={"KG_TOKENS": json.dumps(TOKENS),
                                     "KG_ANONYMOUS_READ": "true"})
    try:
        ids = {
            "sqlite": _remember(server, "shop", "The main database is SQLite in one file",
                                type="architectural_decision", confidence=0.6,
                                session_id="s-design", agent="planner"),
            "postgres": _remember(server, "shop", "The main database is PostgreSQL 16",
                                  type="architectural_decision", confidence=0.92,
                                  session_id="s-design", agent="planner",
                                  rationale="several services write concurrently"),
            "deploy": _remember(server, "shop", "Deployments go through a blue-green switch",
                                type="convention", confidence=0.7),
            "style": _remember(server, "shop", "Python code is formatted by ruff",
                               type="coding_standard", confidence=0.4),
        }
        reply = httpx.post(
            f"{server.url}/v1/projects/shop/memories/{ids['sqlite']}/forget",
            json={"reason": "several services need a server database",
                  "replacement_id": ids["postgres"]},
            headers={"Authorization": f"Bearer {WRITE}"}, timeout=30)
        reply.raise_for_status()
        yield Site(server, ids)
    finally:
        server.stop()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[webdriver.Chrome]:
    """One headless Chromium for the module, logging every network request."""
    chrome = chromium(tmp_path_factory.mktemp("chromium-profile"), log_network=True)
    yield chrome
    chrome.quit()


def requested_urls(browser: webdriver.Chrome) -> list[str]:
    """Every URL the browser asked for since the last call (Chrome's performance log)."""
    urls = []
    for entry in browser.get_log("performance"):  # type: ignore[no-untyped-call]
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def shot(browser: webdriver.Chrome, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1280, min(max(int(height), 700), 1800))
    browser.save_screenshot(str(SHOTS / f"{name}.png"))
    browser.set_window_size(1280, 1000)


def use_token(browser: webdriver.Chrome, site: Site, token: str) -> None:
    """Type the token into the explorer's token form, as a person would."""
    browser.get(site.url("/explore/token?next=/explore/shop"))
    browser.find_element(By.ID, "token").send_keys(token)
    browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    # The token page's own URL names /explore/shop too (?next=): wait until it is left.
    WebDriverWait(browser, 20).until(lambda b: "/explore/token" not in b.current_url)


def rows(browser: webdriver.Chrome) -> list[Any]:
    return browser.find_elements(By.CSS_SELECTOR, "table.memories tbody tr")


def test_list_shows_current_memories_with_type_and_confidence(
    browser: webdriver.Chrome, site: Site
) -> None:
    browser.get(site.url("/explore"))
    browser.find_element(By.LINK_TEXT, "shop").click()
    found = {r.get_attribute("data-memory-id"): r.text for r in rows(browser)}
    assert list(found) == [site.ids[k] for k in ("style", "deploy", "postgres")]
    assert "architectural_decision" in found[site.ids["postgres"]]
    assert "HIGH 0.92" in found[site.ids["postgres"]].upper()
    assert "LOW 0.40" in found[site.ids["style"]].upper()
    shot(browser, "list")


def test_search_ranks_the_right_memory_first(browser: webdriver.Chrome, site: Site) -> None:
    browser.get(site.url("/explore/shop"))
    box = browser.find_element(By.ID, "q")
    box.send_keys("which database do the services write to")
    box.submit()
    WebDriverWait(browser, 20).until(expected_conditions.url_contains("q="))
    first = rows(browser)[0]
    assert first.get_attribute("data-memory-id") == site.ids["postgres"]
    assert first.find_element(By.CSS_SELECTOR, ".score").text


def test_retired_memory_page_shows_reason_and_replacement(
    browser: webdriver.Chrome, site: Site
) -> None:
    browser.get(site.url(f"/explore/shop/memories/{site.ids['sqlite']}"))
    reason = browser.find_element(By.ID, "retirement-reason").text
    assert reason == "several services need a server database"
    browser.find_element(By.LINK_TEXT, "The main database is PostgreSQL 16").click()
    WebDriverWait(browser, 20).until(expected_conditions.url_contains(site.ids["postgres"]))
    assert "SQLite" in browser.find_element(By.ID, "replaces").text
    shot(browser, "memory")


def test_read_only_token_gets_no_forget_button_and_403(
    browser: webdriver.Chrome, site: Site
) -> None:
    use_token(browser, site, READ)
    browser.get(site.url(f"/explore/shop/memories/{site.ids['deploy']}"))
    assert browser.find_elements(By.ID, "forget-button") == []
    status = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch(arguments[0], {method: 'POST', body: new URLSearchParams({reason: 'try'})})"
        ".then(r => done(r.status));",
        site.url(f"/explore/shop/memories/{site.ids['deploy']}/forget"))
    assert status == 403


def test_forget_from_the_page_retires_the_memory(browser: webdriver.Chrome, site: Site) -> None:
    use_token(browser, site, WRITE)
    browser.get(site.url(f"/explore/shop/memories/{site.ids['deploy']}"))
    browser.find_element(By.ID, "reason").send_keys("we deploy with canaries now")
    browser.find_element(By.ID, "forget-button").click()
    WebDriverWait(browser, 20).until(expected_conditions.alert_is_present()).accept()
    notice = WebDriverWait(browser, 20).until(
        expected_conditions.presence_of_element_located((By.ID, "forgotten-notice")))
    assert "forgotten" in notice.text
    reply = httpx.post(site.url("/sparql"), data={"query": RETIRED_ASK % site.ids["deploy"]},
                          headers={"Accept": "application/sparql-results+json",
                                   "Authorization": f"Bearer {READ}"}, timeout=30)
    assert reply.json()["boolean"] is True


def test_timeline_and_graph(browser: webdriver.Chrome, site: Site) -> None:
    browser.get(site.url("/explore/shop/timeline"))
    retired = {li.get_attribute("data-memory-id")
               for li in browser.find_elements(By.CSS_SELECTOR, "ol.timeline li.retired")}
    # "deploy" is retired too once the forget test has run (the tests may run in any order).
    assert site.ids["sqlite"] in retired and retired <= {site.ids["sqlite"], site.ids["deploy"]}
    assert len(browser.find_elements(By.CSS_SELECTOR, "ol.timeline li")) == len(site.ids)
    shot(browser, "timeline")
    browser.get(site.url(f"/explore/shop/memories/{site.ids['postgres']}/graph"))
    kinds = {(e.get_attribute("class") or "").split()[1]
             for e in browser.find_elements(By.CSS_SELECTOR, "svg.graph g.node")}
    assert {"memory", "session", "agent"} <= kinds
    shot(browser, "graph")


def test_no_request_leaves_the_origin(browser: webdriver.Chrome, site: Site) -> None:
    requested_urls(browser)  # drop what came before: the pages are visited again here
    pages = ["/explore", "/explore/shop", "/explore/shop?q=database", "/explore/shop/timeline",
             f"/explore/shop/memories/{site.ids['postgres']}",
             f"/explore/shop/memories/{site.ids['postgres']}/graph", "/explore/token"]
    for path in pages:
        browser.get(site.url(path))
    urls = requested_urls(browser)
    origin = urlsplit(site.server.url)
    assert any(u.endswith("/static/explore/explore.css") for u in urls)
    assert any(u.endswith("/static/explore/explore.js") for u in urls)
    foreign = [u for u in urls if not u.startswith("data:")
               and (urlsplit(u).scheme, urlsplit(u).netloc) != (origin.scheme, origin.netloc)]
    assert foreign == []
    resources = browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)")
    assert all(str(r).startswith(site.server.url) for r in resources)


def test_screenshots_were_written() -> None:
    for name in ("list", "memory", "timeline", "graph"):
        path = Path(SHOTS / f"{name}.png")
        assert path.is_file() and path.stat().st_size > 5_000
