"""The wheel, installed in a fresh venv and run outside the checkout, serves the ontology."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT, free_port


@pytest.mark.slow
def test_wheel_installs_and_serves_from_outside_the_checkout(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(ROOT)],
                   check=True, capture_output=True, timeout=300)
    (wheel,) = dist.glob("jido_kg-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "kg/ontology/jido.ttl" in names and "kg/ontology/shapes.ttl" in names
    assert any(n.startswith("kg/queries/") and n.endswith(".rq") for n in names)

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)]
    subprocess.run(pip, check=True, capture_output=True, timeout=600)

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    process = subprocess.Popen(
        [str(venv / "bin" / "jido-kg"), "serve", "--store", str(outside / "store"),
         "--port", str(port)],
        cwd=outside, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        body = b""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None:
            try:
                request = urllib.request.Request(f"http://127.0.0.1:{port}/ontology",
                                                 headers={"Accept": "application/rdf+xml"})
                with urllib.request.urlopen(request, timeout=2) as response:
                    body = response.read()
                break
            except OSError:
                time.sleep(0.2)
        assert b"https://jido.ai/ontology" in body, process.stderr.read() if process.poll() else ""
    finally:
        process.terminate()
        process.wait(timeout=15)
