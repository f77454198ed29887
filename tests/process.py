"""crawldash as a real process, for tests that talk to it as a client would."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

# How long a test waits for what must happen: long enough for a machine with every core
# busy (make test-busy), and spent only when something is wrong; well within the per-test
# timeout (pyproject.toml).
PATIENCE = 60.0


def wait_until(check: Callable[[], object], within: float = PATIENCE) -> None:
    """Poll ``check`` until it is true; an OSError (nothing listening yet) counts as not
    yet. Fails the test after ``within`` seconds."""
    deadline = time.monotonic() + within
    while True:
        try:
            if check():
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            pytest.fail(f"condition not met within {within} s")
        time.sleep(0.05)


def watching(base: str) -> bool:
    """True once the server at ``base`` sees changes to each data folder as they happen."""
    with urllib.request.urlopen(f"{base}/metrics", timeout=5) as response:
        lines = [
            line
            for line in response.read().splitlines()
            if line.startswith(b"crawldash_watcher_watching{")
        ]
        return bool(lines) and all(line.endswith(b" 1.0") for line in lines)


def served_whole(base: str, timestamp: int) -> bool:
    """True once the server at ``base`` serves the crawl ``timestamp``: its history has
    the crawl's point, which comes at the same moment as every other answer about it. Each
    node's profile changes are taken in a moment after: a test of those waits for them too
    (test_node_page.compared)."""
    with urllib.request.urlopen(f"{base}/api/history?limit=1", timeout=5) as response:
        points = json.loads(response.read())
    return bool(points) and points[-1]["timestamp"] == timestamp


# Ports for the servers tests start, below the kernel's ephemeral range (32768 and up
# here): the kernel's port 0 hands out the ports outgoing connections take too, so a port
# found free that way could be another process's by the time a server binds it, and a test
# then talks to a server not its own. Each xdist worker draws from a band of its own, in
# turn, so no two workers, and no two tests of one worker, are given the same port.
PORTS_FROM, BAND, BANDS = 10_000, 700, 32
_drawn = 0


def _band() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # gw0, gw1, ...; none when serial
    return int(worker[2:]) % (BANDS - 1) if worker.startswith("gw") else BANDS - 1


def free_port() -> int:
    """A loopback port that no other test of this run is given, free as it is drawn."""
    global _drawn
    first = PORTS_FROM + _band() * BAND
    for _ in range(BAND):
        port = first + (os.getpid() + _drawn) % BAND  # the pid: runs after runs differ
        _drawn += 1
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue  # in use, or lingering from an earlier run
            return port
    raise RuntimeError(f"no free port in {first}..{first + BAND - 1}")


@contextmanager
def serving(
    data_dir: Path | None,
    state_dir: Path,
    *options: str,
    logs: list[str] | None = None,
    prefix: Sequence[str] = (),
    python: str = sys.executable,
    env: Mapping[str, str] | None = None,
) -> Iterator[str]:
    """Run ``python -m crawldash serve`` (behind ``prefix``: setpriv, prlimit; without
    ``--data-dir`` if ``data_dir`` is None, for ``--network`` options) until it answers;
    yield its base URL; stop it with SIGINT and check that it exited cleanly. Its standard
    error goes into ``logs``."""
    port = free_port()
    command = [
        *prefix,
        python,
        "-m",
        "crawldash",
        "serve",
        *(("--data-dir", str(data_dir)) if data_dir is not None else ()),
        "--state-dir",
        str(state_dir),
        "--port",
        str(port),
        *options,
    ]
    environment = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    server = subprocess.Popen(
        command, env={**environment, **(env or {})}, stderr=subprocess.PIPE, text=True
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + PATIENCE
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status", timeout=2).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("crawldash did not start") from None
                time.sleep(0.05)
        yield base
    finally:
        server.send_signal(signal.SIGINT)
        _, stderr = server.communicate(timeout=PATIENCE)
        if logs is not None:
            logs.append(stderr)
    assert server.returncode == 0, stderr
    assert "Traceback" not in stderr, stderr


AS_NOBODY = ("setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups")
SYSTEM_PYTHON = "/usr/bin/python3"


def as_nobody() -> dict[str, Any]:
    """``serving()`` arguments that run crawldash as the nobody user, with the system's
    Python (this test run's may live in a folder only root can enter, as under pyenv) and
    this checkout and its virtualenv's packages on the path."""
    if not Path(SYSTEM_PYTHON).exists() or shutil.which("setpriv") is None:
        pytest.skip("needs setpriv and the system's python3 to run as another user")
    packages = sysconfig.get_paths()["purelib"]
    root = Path(__file__).resolve().parent.parent
    return {
        "prefix": AS_NOBODY,
        "python": SYSTEM_PYTHON,
        "env": {"PYTHONPATH": f"{root}{os.pathsep}{packages}"},
    }


def shared_folder() -> Path:
    """A fresh folder under /tmp that another user can enter (pytest's tmp_path cannot)."""
    folder = Path(tempfile.mkdtemp(prefix="crawldash-test-"))
    folder.chmod(0o755)
    return folder


def nginx_config(folder: Path, example: Path, port: int, upstream: str) -> Path:
    """An nginx example run as an operator would, its cache, upstream and port put in
    ``folder`` (each replacement must find its line), inside a main configuration of its
    own; returns that configuration's path."""
    conf = example.read_text()
    for old, new in (
        ("/var/cache/nginx/", f"{folder}/cache/"),
        ("server 127.0.0.1:8080;", f"server {upstream};"),
        ("listen 80;", f"listen 127.0.0.1:{port};"),
    ):
        assert old in conf, old
        conf = conf.replace(old, new)
    (folder / "cache").mkdir()
    (folder / "crawldash.conf").write_text(conf)
    (folder / "nginx.conf").write_text(
        f"user root;\nerror_log {folder}/error.log;\npid {folder}/nginx.pid;\n"
        "daemon off;\nevents {}\n"
        f"http {{ access_log off; client_body_temp_path {folder}/body; "
        f"proxy_temp_path {folder}/proxy; include {folder}/crawldash.conf; }}\n"
    )
    return folder / "nginx.conf"
