"""crawldash as a real process, for tests that talk to it as a client would."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(
    data_dir: Path, state_dir: Path, *options: str, logs: list[str] | None = None
) -> Iterator[str]:
    """Run ``python -m crawldash serve`` until it answers; yield its base URL; stop it with
    SIGINT and check that it exited cleanly. Its standard error goes into ``logs``."""
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "crawldash",
        "serve",
        "--data-dir",
        str(data_dir),
        "--state-dir",
        str(state_dir),
        "--port",
        str(port),
        *options,
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    server = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 15
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
        _, stderr = server.communicate(timeout=10)
        if logs is not None:
            logs.append(stderr)
    assert server.returncode == 0, stderr
    assert "Traceback" not in stderr, stderr
