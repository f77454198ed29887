"""crawldash as a real process at start-up: an index it cannot read is rebuilt, never
fatal, and "serving … on" is said only once the server really listens."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

from crawldash.live.stores.index_files import HistoryStore

from .factories import export_body, rows, write_snapshot
from .helpers import get
from .process import serving, wait_until

NOW = int(time.time()) // 600 * 600


def history_complete(base: str) -> bool:
    status = get(f"{base}/api/status")
    assert isinstance(status, dict)
    return bool(status["history_complete"])


def test_a_history_index_of_another_shape_is_rebuilt_from_the_files(tmp_path: Path):
    """Six counts per network where this version has five (as another version might
    write): one line, the history rebuilt from the crawl files, a clean exit at SIGINT."""
    data, state = tmp_path / "data", tmp_path / "state"
    for i in range(3):
        write_snapshot(data, NOW - 600 * i, export_body(rows(10 + i)))
    index = HistoryStore.for_data_dir(state, data).path
    index.parent.mkdir()
    six = [1, 2, 3, 4, 5, 6]
    index.write_text(json.dumps([[NOW - 600 * i, 99, 0, 0, six, 900_000] for i in range(5, 0, -1)]))
    logs: list[str] = []
    with serving(data, state, logs=logs) as base:  # exit 0 and no traceback, it checks
        wait_until(lambda: history_complete(base))
        history = get(f"{base}/api/history?by=network")
        assert isinstance(history, list)
        assert [(p["timestamp"], p["reachable"]) for p in history] == [
            (NOW - 1200, 12),
            (NOW - 600, 11),
            (NOW, 10),
        ]
        assert all(len(p["networks"]) == 5 for p in history)
    lines = logs[0].splitlines()
    [unusable] = [i for i, line in enumerate(lines) if "is unusable" in line]
    assert "6 network counts, not 5" in lines[unusable]
    [listening] = [i for i, line in enumerate(lines) if " on http://127.0.0.1:" in line]
    assert unusable < listening  # said once the index was read and the server listens
    assert index.with_name(index.name + ".unreadable").exists()


def test_no_serving_line_when_the_port_cannot_be_listened_on(tmp_path: Path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        command = [sys.executable, "-m", "crawldash", "serve", "--data-dir", str(tmp_path)]
        command += ["--state-dir", str(tmp_path / "state"), "--port", str(port)]
        run = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    assert run.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in run.stderr
    assert "serving" not in run.stderr, run.stderr
