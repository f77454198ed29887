"""PyPI's ``bitcoin-network-tools`` (a bitnodes.io client no one here wrote) against a
real crawldash's leaderboard: the package's own tests of ``get_leaderboard`` and
``get_node_ranking`` (which errored while crawldash answered ``404 not_served``), run by
pytest in the client's virtualenv with only its base URL pointed at crawldash; and the
client's answers equal to crawldash's own. Skipped, with the reason, where the package
(or pytest for it) cannot be had."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from .factories import export_body, row, rows, write_snapshot
from .process import serving
from .test_bitnodes_client import client_python, get

pytestmark = pytest.mark.slow
# A pytest plugin for the package's own tests: BitnodesAPI with crawldash's base URL (the
# client has no setter for it: bitnodes.io's is built in).
PLUGIN = """
import os
from bitcoin_network_tools.bitnodes_api import BitnodesAPI

_made = BitnodesAPI.__init__

def _pointed(self, *args, **kwargs):
    _made(self, *args, **kwargs)
    self._BitnodesAPI__base_url = os.environ["CRAWLDASH_V1"]

BitnodesAPI.__init__ = _pointed
"""
CALLS = """
import json, sys, warnings
from bitcoin_network_tools.bitnodes_api import BitnodesAPI
warnings.simplefilter("ignore")
api = BitnodesAPI()
api._BitnodesAPI__base_url = sys.argv[1]
print(json.dumps([api.get_leaderboard(limit=3, page=2), api.get_node_ranking(sys.argv[2], 8333)]))
"""


def with_pytest(python: Path) -> None:
    """pytest in the client's virtualenv, to run the package's own tests."""
    if subprocess.run([str(python), "-c", "import pytest"], capture_output=True).returncode == 0:
        return
    install = [str(python), "-m", "pip", "install", "--quiet", "pytest"]
    try:
        done = subprocess.run(install, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        pytest.skip("pytest could not be installed beside the client within 10 minutes")
    if done.returncode != 0:
        pytest.skip(f"pytest cannot be had for the client: {done.stderr.strip()[-300:]}")


def test_the_clients_own_leaderboard_tests_pass(tmp_path: Path):
    python = client_python()
    with_pytest(python)
    tests = subprocess.run(
        [
            str(python),
            "-c",
            "import bitcoin_network_tools.tests, os; print(os.path.dirname("
            "bitcoin_network_tools.tests.__file__))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    data = tmp_path / "f9beb4d9"
    crawl = [*rows(12), row("2001:db8::7")]
    write_snapshot(data, 1_790_000_000, export_body(crawl))
    (tmp_path / "crawldash_pointed.py").write_text(PLUGIN)
    with serving(data, tmp_path / "state") as base:
        api = f"{base}/api/v1/"
        ran = subprocess.run(
            [
                str(python),
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "-p",
                "crawldash_pointed",
                "--rootdir",
                str(tmp_path),
                "-k",
                "leaderboard or ranking",
                str(Path(tests) / "test_bitnodes_api.py"),
            ],
            cwd=tmp_path,
            env={"CRAWLDASH_V1": api, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path)},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
        assert "2 passed" in ran.stdout, ran.stdout[-2000:]
        answers = subprocess.run(
            [str(python), "-c", CALLS, api, "198.0.0.5"],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        board, ranking = json.loads(answers.stdout)
        assert board == get(api + "nodes/leaderboard/?page=2&limit=3")["ok"]
        assert (board["count"], len(board["results"])) == (13, 3)
        assert ranking == get(api + "nodes/leaderboard/198.0.0.5-8333/")["ok"]
        assert {"node", "peer_index", "rank"} <= set(ranking)
