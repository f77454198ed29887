"""A real bitnodes.io client no one here wrote, PyPI's ``bitcoin-network-tools`` (its
``BitnodesAPI``), installed in a virtualenv of the test's own and pointed at a real
crawldash's ``/api/v1/``: every method crawldash can answer gets what crawldash serves at
that route, and the routes asked without their final slash (a GET, and the live check's
POST) are answered as with it. Skipped, with the reason, where the package cannot be had."""

from __future__ import annotations

import fcntl
import json
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from crawldash.crawl.propagation import BlocksFile, LatencyFile, pack, write_blocks, write_latency

from .bitcoin_peers import closed_port
from .factories import export_body, rows, write_snapshot
from .process import serving
from .test_propagation_serving import block

pytestmark = pytest.mark.slow
VENV = Path(tempfile.gettempdir()) / "crawldash-test-bitnodes-client"
NODE = ("198.0.0.1", 8333)
# Run by the client's virtualenv: each call of a list of [method, keyword arguments] on a
# BitnodesAPI whose base URL is crawldash's, its answer or the HTTP error it raised; and
# the routes without their slash, asked with the client's own HTTP library.
CLIENT = """
import json, sys, warnings
import requests
from bitcoin_network_tools.bitnodes_api import BitnodesAPI

warnings.simplefilter("ignore")  # "used in unauthenticated mode"
base, calls, closed = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
api = BitnodesAPI()
api._BitnodesAPI__base_url = base  # the client has no setter: bitnodes.io's is built in
answers = []
for method, kwargs in calls:
    try:
        answers.append({"ok": getattr(api, method)(**kwargs)})
    except requests.HTTPError as error:
        answers.append({"status": error.response.status_code, "body": error.response.json()})
plain = requests.get(base + "snapshots", params={"limit": 2}, timeout=30)
check = requests.post(base + "checknode", data={"address": "127.0.0.1", "port": closed})
print(json.dumps({
    "answers": answers,
    "unslashed": [plain.status_code, plain.json(), [r.status_code for r in plain.history]],
    "check": [check.status_code, check.json(), [r.status_code for r in check.history]],
}))
"""


def client_python() -> Path:
    """The python of a virtualenv with bitcoin-network-tools from PyPI, made once (by one
    test process, however many ask at once)."""
    python, ready = VENV / "bin" / "python", VENV / "installed"
    if ready.exists():
        return python
    VENV.parent.mkdir(parents=True, exist_ok=True)
    with VENV.with_suffix(".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not ready.exists():
            make_venv(python, ready)
    return python


def make_venv(python: Path, ready: Path) -> None:
    made = subprocess.run(
        [sys.executable, "-m", "venv", "--clear", str(VENV)], capture_output=True, text=True
    )
    if made.returncode != 0:
        pytest.skip(f"no virtualenv for the client: {made.stderr.strip()[-300:]}")
    install = [str(python), "-m", "pip", "install", "--quiet", "bitcoin-network-tools"]
    try:
        installed = subprocess.run(install, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        pytest.skip("bitcoin-network-tools could not be installed within 10 minutes")
    if installed.returncode != 0:
        pytest.skip(f"bitcoin-network-tools cannot be had: {installed.stderr.strip()[-300:]}")
    ready.touch()


def get(url: str) -> dict[str, Any]:
    """crawldash's own answer at ``url``: the body, or the status and error body."""
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return {"ok": json.load(response)}
    except urllib.error.HTTPError as error:
        with error:  # its connection closed now, not by the collector
            return {"status": error.code, "body": json.load(error)}


def test_every_method_crawldash_answers(tmp_path: Path):
    python = client_python()
    data, kept = tmp_path / "f9beb4d9", tmp_path / "kept"
    now = int(time.time()) // 600 * 600
    for index in range(3):
        write_snapshot(data, now - 1800 + 600 * index, export_body(rows(3 + index)))
    blocks = [block(number) for number in (12, 11, 10)]
    write_blocks(kept, BlocksFile(0, blocks))
    bucket = now // 600
    cells = {bucket - age: (1, 40 + age) for age in range(0, 300, 7)}
    write_latency(kept, LatencyFile(bucket, {f"{NODE[0]}:{NODE[1]}": pack(cells)}, {}))
    options = ["--propagation-dir", str(kept), "--live-check", "main"]
    options += ["--live-check-allow", "127.0.0.0/8"]
    address, port = NODE
    older = str(now - 1200)
    calls: list[tuple[str, dict[str, Any], str]] = [  # method, arguments, crawldash's route
        ("get_snapshots", {}, "snapshots/"),
        ("get_snapshots", {"page": 2, "limit": 1}, "snapshots/?page=2&limit=1"),
        ("get_nodes_list", {}, "snapshots/latest/"),
        ("get_nodes_list", {"timestamp": older}, f"snapshots/{older}/?timestamp={older}"),
        ("get_nodes_list", {"field": "user_agents"}, "snapshots/latest/?field=user_agents"),
        ("get_nodes_list", {"field": "coordinates"}, "snapshots/latest/?field=coordinates"),
        ("get_node_status", {"address": address, "port": port}, f"nodes/{address}-{port}/"),
        (
            "get_node_latency",
            {"address": address, "port": port},
            f"nodes/{address}-{port}/latency/",
        ),
        ("get_leaderboard", {"limit": 2}, "nodes/leaderboard/?limit=2"),
        (
            "get_node_ranking",
            {"address": address, "port": port},
            f"nodes/leaderboard/{address}-{port}/",
        ),
        ("get_data_propagation_list", {"limit": 2}, "inv/?limit=2"),
        ("get_data_propagation", {"inv_hash": blocks[1].hash}, f"inv/{blocks[1].hash}/"),
        ("get_address_list", {}, "addresses/"),  # bitnodes.io's alone: 404 not_served
    ]
    with serving(data, tmp_path / "state", *options) as base:
        api = f"{base}/api/v1/"
        listed = json.dumps([[method, kwargs] for method, kwargs, _ in calls])
        closed = str(closed_port())
        ran = subprocess.run(
            [str(python), "-c", CLIENT, api, listed, closed],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert ran.returncode == 0, ran.stderr
        got = json.loads(ran.stdout)
        for (method, kwargs, route), answer in zip(calls, got["answers"], strict=True):
            assert answer == get(api + route), (method, kwargs)
            assert "ok" in answer or answer["body"]["error"]["code"] == "not_served", method
        assert got["answers"][6]["ok"]["address"] == address  # a real node status, say
        assert len(got["answers"][11]["ok"]["stats"]["head"]) == 3
        # without the final slash, with the client's own HTTP library: the same answers
        status, body, redirects = got["unslashed"]
        assert (status, body, redirects) == (200, get(api + "snapshots/?limit=2")["ok"], [308])
        status, body, redirects = got["check"]  # a 308 keeps the POST, and its form
        assert (status, body["success"], body["reason"], redirects) == (
            200,
            False,
            "refused",
            [308],
        )
