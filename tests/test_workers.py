"""``--workers 2``: two processes answer on one port; a signal stops them all."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from .factories import export_body, rows, write_snapshot
from .process import free_port

pytestmark = pytest.mark.slow


def listeners(port: int) -> int:
    out = subprocess.run(["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True)
    return len([line for line in out.stdout.splitlines() if line.strip()])


@pytest.mark.skipif(shutil.which("ss") is None, reason="ss (iproute2) missing")
def test_two_workers_share_a_port(tmp_path: Path):
    write_snapshot(tmp_path / "data", 1_700_000_000, export_body(rows(30)))
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "crawldash",
            "serve",
            "--data-dir",
            str(tmp_path / "data"),
            "--state-dir",
            str(tmp_path / "state"),
            "--port",
            str(port),
            "--workers",
            "2",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 20
        while listeners(port) < 2:
            assert time.monotonic() < deadline, "two workers did not start"
            time.sleep(0.1)
        for _ in range(20):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/snapshot", timeout=5) as r:
                assert json.load(r)["total_nodes"] == 30
    finally:
        server.send_signal(signal.SIGINT)
        _, stderr = server.communicate(timeout=20)
    assert server.returncode == 0, stderr
    assert "Traceback" not in stderr
    assert listeners(port) == 0
