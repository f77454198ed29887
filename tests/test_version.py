"""One version, pyproject.toml's: ``crawldash --version``, the start-up line, ``/metrics``
and the OpenAPI document all give it."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import urllib.request
from pathlib import Path

from .conftest import Client
from .process import serving

ROOT = Path(__file__).resolve().parent.parent


def declared() -> str:
    with (ROOT / "pyproject.toml").open("rb") as file:
        version = tomllib.load(file)["project"]["version"]
    assert isinstance(version, str)
    return version


def test_version_option_prints_the_version_in_pyproject():
    run = subprocess.run(
        [sys.executable, "-m", "crawldash", "--version"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert run.stdout.strip() == f"crawldash {declared()}"


async def test_metrics_and_the_openapi_document_give_the_version(client: Client):
    metrics = await (await client.get("/metrics")).text()
    assert f'crawldash_build_info{{version="{declared()}"}} 1.0' in metrics.splitlines()
    document = await (await client.get("/api/openapi.json")).json()
    assert document["info"]["version"] == declared()


def test_the_start_up_line_names_the_version(tmp_path: Path):
    logs: list[str] = []
    with (
        serving(tmp_path, tmp_path / "state", logs=logs) as base,
        urllib.request.urlopen(f"{base}/healthz", timeout=5) as response,
    ):
        assert response.status == 200
    [line] = [line for line in logs[0].splitlines() if " on http://127.0.0.1:" in line]
    assert f"crawldash {declared()} serving " in line
