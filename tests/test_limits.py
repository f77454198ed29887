"""crawldash as a real process at its limits: another user's permissions, the open-file
limit systemd gives a service, a crowd of subscribers at shutdown, absurd settings."""

from __future__ import annotations

import json
import resource
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from crawldash.crawl.atomic import write_atomically
from crawldash.live.stores.history import HistoryEntry
from crawldash.live.stores.index_files import HistoryStore
from crawldash.web.server import STOP_SECONDS

from .factories import export_body, rows, write_snapshot, write_status
from .helpers import fetch
from .process import PATIENCE, as_nobody, free_port, serving, shared_folder, wait_until

NOW = int(time.time()) // 600 * 600


@pytest.fixture
def folder() -> Iterator[Path]:
    path = shared_folder()
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_unreadable_entries_as_another_user(folder: Path):
    """Served as the nobody user: a crawl file and status.json it may not read are those
    entries' problem; the newest crawl it can read is served."""
    data, state = folder / "data", folder / "state"
    write_snapshot(data, NOW - 600, export_body(rows(3)))
    write_snapshot(data, NOW, export_body(rows(5))).chmod(0o600)  # root's alone
    write_status(data, state="running", updated_at=NOW).chmod(0o600)
    data.chmod(0o755)
    state.mkdir(mode=0o777)
    state.chmod(0o777)
    logs: list[str] = []
    with serving(data, state, logs=logs, **as_nobody()) as base:
        status, _, body = fetch(f"{base}/api/snapshot")
        assert status == 200
        assert json.loads(body)["timestamp"] == NOW - 600
        assert json.loads(fetch(f"{base}/api/status")[2])["state"] == "unknown"
    assert f"name={NOW}.json kind=unreadable" in logs[0]
    assert "name=status.json kind=unreadable" in logs[0]


@pytest.mark.slow  # opens 1,100 connections
# Serial: the server accepts as fast as the client connects only while nothing else holds
# the machine's cores; starved, it takes a burst of a thousand at once, past its open files.
@pytest.mark.serial
def test_connections_past_the_limit_are_refused_at_once(tmp_path: Path):
    """Under systemd's default of 1,024 open files, 1,100 idle connections leave the server
    answering: those past the limit get a 503 at once, and nothing floods the log."""
    room_for_clients()
    data = tmp_path / "data"
    write_snapshot(data, NOW, export_body(rows(3)))
    logs: list[str] = []
    prefix = ("prlimit", "--nofile=1024:1024")
    with serving(data, tmp_path / "state", logs=logs, prefix=prefix) as base:
        port = int(base.rpartition(":")[2])
        idle = []
        for _ in range(1100):
            idle.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        status, headers, body = fetch(f"{base}/api/status")  # an answer, not a time-out
        assert status == 503
        assert json.loads(body)["error"]["code"] == "too_many_connections"
        assert headers["X-Content-Type-Options"] == "nosniff"
        for sock in idle:
            sock.close()
        wait_until(lambda: fetch(f"{base}/api/status")[0] == 200)
    assert "open_files=1024 max_connections=512" in logs[0]
    assert len(logs[0].splitlines()) < 20


@pytest.mark.slow  # opens 1,100 connections, and its stop takes seconds
@pytest.mark.serial  # as above: the burst must use up the server's open files
def test_a_stop_as_open_files_run_out_is_quick_and_quiet(tmp_path: Path):
    """Stopped the moment a burst of connections used up its open files, with a client that
    reads nothing of its answer: the stop gives that answer STOP_SECONDS in all (aiohttp
    alone gave it as long again once cancelled), and asyncio's retries of accept(), due
    after the listening socket closed, log nothing (each logged a traceback before the
    server's loop dropped them)."""
    room_for_clients()
    data = tmp_path / "data"
    write_snapshot(data, NOW, export_body(rows(20_000)))  # more than the sockets' buffers
    logs: list[str] = []
    clients: list[socket.socket] = []
    prefix = ("prlimit", "--nofile=1024:1024")
    try:
        with serving(data, tmp_path / "state", logs=logs, prefix=prefix) as base:
            port = int(base.rpartition(":")[2])
            stalled = socket.socket()
            clients.append(stalled)
            stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            stalled.settimeout(PATIENCE)
            stalled.connect(("127.0.0.1", port))
            stalled.sendall(b"GET /api/snapshot HTTP/1.1\r\nHost: c\r\n\r\n")
            assert stalled.recv(1, socket.MSG_PEEK) == b"H"  # its answer is under way
            for _ in range(1100):
                clients.append(socket.create_connection(("127.0.0.1", port), timeout=5))
            stopping = time.monotonic()
        took = time.monotonic() - stopping  # serving() stops it and waits for its end
    finally:
        for sock in clients:
            sock.close()
    assert STOP_SECONDS <= took < STOP_SECONDS + 2.0, took
    assert "Invalid file descriptor" not in logs[0]
    assert len(logs[0].splitlines()) < 20


@pytest.mark.serial  # its bound of 5 s to stop is the machine's, the rest of the suite aside
def test_stops_in_seconds_with_200_subscribers(tmp_path: Path):
    data = tmp_path / "data"
    write_snapshot(data, NOW, export_body(rows(3)))
    port = free_port()
    command = [sys.executable, "-m", "crawldash", "serve", "--data-dir", str(data)]
    command += ["--state-dir", str(tmp_path / "state"), "--port", str(port)]
    command += ["--max-subscribers", "300", "--max-subscribers-per-client", "300"]
    server = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    streams: list[socket.socket] = []
    try:
        deadline = time.monotonic() + 15
        while get_or_none(f"http://127.0.0.1:{port}/api/status") is None:
            assert time.monotonic() < deadline, "crawldash did not start"
            time.sleep(0.05)
        streams.extend(subscribe(port) for _ in range(200))
        started = time.monotonic()
        server.send_signal(signal.SIGTERM)
        _, stderr = server.communicate(timeout=10)
        took = time.monotonic() - started
        assert took < 5.0, took
        assert server.returncode == 0, stderr
        assert "Traceback" not in stderr
        ended = [sock.recv(65536) for sock in streams]
        assert all(chunk.endswith(b"0\r\n\r\n") for chunk in ended)  # ended, not cut
    finally:
        server.kill()
        server.wait()
        for sock in streams:
            sock.close()


def room_for_clients() -> None:
    """Let this process open the clients of a burst past the server's 1,024 open files."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))


def get_or_none(url: str) -> int | None:
    try:
        return fetch(url)[0]
    except OSError:
        return None


def subscribe(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.sendall(b"GET /api/events HTTP/1.1\r\nHost: c\r\n\r\n")
    head = b""
    while b"retry: 2000" not in head:
        head += sock.recv(65536)
    return sock


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (["--max-file-size", "100G"], "--max-file-size 107374182400 bytes is more than"),
        (["--host", "no-such-host.invalid"], "cannot resolve --host 'no-such-host.invalid'"),
    ],
)
def test_settings_that_cannot_work_are_refused_in_one_line(tmp_path, options, says):
    command = [sys.executable, "-m", "crawldash", "serve", "--data-dir", str(tmp_path)]
    command += ["--state-dir", str(tmp_path / "state"), "--port", str(free_port()), *options]
    refused_in_one_line(command, says)


def refused_in_one_line(command: list[str], says: str) -> None:
    run = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    assert run.returncode != 0
    assert says in run.stderr
    assert "Traceback" not in run.stderr
    assert len([line for line in run.stderr.splitlines() if "error" in line]) == 1


def test_a_port_in_use_is_refused_in_one_line(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        command = [sys.executable, "-m", "crawldash", "serve", "--data-dir", str(tmp_path)]
        command += ["--state-dir", str(tmp_path / "state"), "--port", str(port)]
        refused_in_one_line(command, f"cannot listen on 127.0.0.1:{port}: ")


def test_a_state_folder_that_cannot_be_written_is_refused_in_one_line(tmp_path):
    (tmp_path / "a-file").write_text("not a folder")
    command = [sys.executable, "-m", "crawldash", "serve", "--data-dir", str(tmp_path)]
    command += ["--state-dir", str(tmp_path / "a-file" / "state"), "--port", str(free_port())]
    refused_in_one_line(command, f"cannot write to --state-dir {tmp_path / 'a-file' / 'state'}")


def test_the_server_header_names_no_version(tmp_path: Path):
    data = tmp_path / "data"
    write_snapshot(data, NOW, export_body(rows(3)))
    with serving(data, tmp_path / "state") as base:
        for path in ("/api/status", "/api/nothing", "/api/check?address=x"):
            assert fetch(base + path)[1]["Server"] == "crawldash"


def test_files_crawldash_writes_are_read_by_another_user(folder: Path):
    """The two users of the shipped units: the bridge's status.json and the history index
    are written as one user (here root, under the usual umask) and served as another."""
    data, state = folder / "data", folder / "state"
    data.mkdir(mode=0o755)
    data.chmod(0o755)
    write_atomically(
        data / "status.json",
        b'{"state": "running", "queue_size": 5, '
        b'"height": 900000, "last_elapsed": 480.0, "updated_at": %d}' % NOW,
    )
    HistoryStore.for_data_dir(state, data).save([HistoryEntry(NOW - 1200, 9)])
    write_snapshot(data, NOW, export_body(rows(3)))
    state.chmod(0o777)  # the nobody user writes its index here too
    with serving(data, state, **as_nobody()) as base:
        assert json.loads(fetch(f"{base}/api/status")[2])["state"] == "running"
        assert json.loads(fetch(f"{base}/api/snapshot")[2])["timestamp"] == NOW
        history = json.loads(fetch(f"{base}/api/history")[2])
        assert [p["timestamp"] for p in history] == [NOW - 1200, NOW]
