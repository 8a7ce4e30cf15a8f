"""The query page in a real headless Chromium: type a query, run it, see the result table."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from api.ui import STATIC_DIR, YASGUI_FILES
from tests.browser import chromium
from tests.conftest import RunningServer


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[webdriver.Chrome]:
    """One headless Chromium for the module."""
    chrome = chromium(tmp_path_factory.mktemp("chromium-profile"), size=(1280, 900))
    yield chrome
    chrome.quit()


def test_yasgui_files_are_installed() -> None:
    missing = [f for f in YASGUI_FILES if not (STATIC_DIR / f).is_file()]
    assert not missing, f"run `make setup` (copies YASGUI into api/static): {missing}"


def test_query_page_runs_a_query_and_shows_the_table(
    browser: webdriver.Chrome, sparql_server: RunningServer
) -> None:
    browser.get(f"{sparql_server.url}/")
    wait = WebDriverWait(browser, 20)
    wait.until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, ".CodeMirror")))
    assert "jido:" in browser.execute_script(
        "return window.jidoYasgui.getTab().getYasqe().getValue()")
    query = ('SELECT ?greeting WHERE { VALUES ?greeting { "hello from jido" "second row" } }')
    # Type it as a person would: into the editor, replacing the example, then press "run".
    browser.find_element(By.CSS_SELECTOR, ".CodeMirror").click()
    editor = browser.switch_to.active_element
    editor.send_keys(Keys.CONTROL, "a")
    editor.send_keys(Keys.DELETE)
    editor.send_keys(query)
    typed = browser.execute_script("return window.jidoYasgui.getTab().getYasqe().getValue()")
    assert "hello from jido" in typed, typed
    browser.find_element(By.CSS_SELECTOR, ".yasqe_queryButton").click()
    cells = wait.until(expected_conditions.presence_of_all_elements_located(
        (By.CSS_SELECTOR, ".yasr table.dataTable tbody td")))
    text = " ".join(c.text for c in cells)
    assert "hello from jido" in text and "second row" in text
    browser.save_screenshot("/tmp/query-page.png")
