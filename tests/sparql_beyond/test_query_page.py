"""The query page's RDFS entailment switch and example tabs, in a real headless Chromium."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from api.ui import EXAMPLES
from kg.graphs import long_term
from tests.sparql.test_query_page import browser
from tests.sparql_beyond.conftest import Service

__all__ = ["browser"]

QUERY = ("PREFIX jido: <https://jido.ai/ontology#> SELECT (COUNT(?m) AS ?decisions) WHERE { "
         f"GRAPH <{long_term('page').value}> {{ ?m a jido:Decision }} }}")


@pytest.fixture(scope="module")
def page(service: Service) -> Iterator[Service]:
    """Project page with one decision of each of the three decision classes."""
    for kind in ("decision", "architectural_decision", "implementation_decision"):
        service.remember("page", f"a {kind}", kind=kind)
    yield service


def _count(chrome: webdriver.Chrome, wait: WebDriverWait, *, ticked: bool,  # type: ignore[type-arg]
           expected: str) -> None:
    box = chrome.find_element(By.ID, "entailment")
    if box.is_selected() != ticked:
        box.click()
    chrome.execute_script("window.jidoYasgui.getTab().getYasqe().setValue(arguments[0]);", QUERY)
    chrome.find_element(By.CSS_SELECTOR, ".yasqe_queryButton").click()
    try:
        wait.until(expected_conditions.text_to_be_present_in_element(
            (By.CSS_SELECTOR, ".yasr table.dataTable tbody td:last-child"), expected))
    finally:
        chrome.save_screenshot("/tmp/beyond-query-page.png")


def test_switch_adds_entailment_and_examples_are_tabs(browser: webdriver.Chrome,
                                                      page: Service) -> None:
    browser.get(f"{page.server.url}/")
    wait = WebDriverWait(browser, 20)
    wait.until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, ".CodeMirror")))
    tabs = browser.find_element(By.CSS_SELECTOR, ".tabsList").text
    assert all(name in tabs for name in EXAMPLES), tabs
    _count(browser, wait, ticked=False, expected="1")
    _count(browser, wait, ticked=True, expected="3")
