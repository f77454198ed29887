"""The bitnodes status bridge against a real redis-server."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from .helpers import bridge_command
from .process import free_port, wait_until

REDIS = shutil.which("redis-server")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(REDIS is None, reason="redis-server (Debian redis-server) missing"),
]


def start_redis(
    port: int, *options: str, client: redis.Redis | None = None
) -> subprocess.Popen[bytes]:
    assert REDIS is not None
    server = subprocess.Popen(
        [
            REDIS,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            *list(options),
        ],
        stdout=subprocess.DEVNULL,
    )
    probe = client if client is not None else redis.Redis(port=port)
    wait_until(lambda: _pings(probe))
    return server


def _pings(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False


@pytest.fixture
def redis_port() -> Iterator[int]:
    port = free_port()
    server = start_redis(port)
    yield port
    server.terminate()
    server.wait(10)


def read(path: Path) -> dict[str, object] | None:
    try:
        return dict(json.loads(path.read_bytes()))
    except (FileNotFoundError, ValueError):
        return None


def test_bridge_writes_status_and_survives_an_outage(redis_port: int, tmp_path: Path):
    client = redis.Redis(port=redis_port)
    client.set("crawl:master:state", "running")
    client.sadd("pending", "a", "b", "c")
    client.set("height", "925000")
    client.lpush("elapsed", json.dumps([1_700_000_000, 480]))
    client.lpush("elapsed", json.dumps([1_700_000_600, 512]))  # newest first
    client.sadd("up", "n1", "n2")
    out = tmp_path / "status.json"
    bridge = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "crawldash",
            "bitnodes-status",
            "--redis",
            f"redis://127.0.0.1:{redis_port}/0",
            "--out",
            str(out),
            "--interval",
            "0.2",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(lambda: read(out) is not None)
        status = read(out)
        assert status is not None
        assert (status["state"], status["queue_size"], status["height"]) == ("running", 3, 925000)
        assert status["last_elapsed"] == 512
        assert (status["reached"], status["last_crawl_at"]) == (2, 1_700_000_600)
        assert abs(int(status["updated_at"]) - time.time()) < 60  # type: ignore[call-overload]

        client.set("crawl:master:state", "starting")
        wait_until(lambda: (read(out) or {}).get("state") == "starting")

        client.shutdown(nosave=True)  # Redis goes away
        time.sleep(0.5)
        written = out.stat().st_mtime_ns
        time.sleep(1.5)
        assert out.stat().st_mtime_ns == written  # no longer rewritten: the alarm can fire
        assert bridge.poll() is None  # still running

        server = start_redis(redis_port)  # Redis returns, empty
        try:
            redis.Redis(port=redis_port).set("crawl:master:state", "running")
            wait_until(lambda: (read(out) or {}).get("state") == "running", within=70)
            assert (read(out) or {}).get("last_elapsed") is None
        finally:
            server.terminate()
            server.wait(10)
    finally:
        bridge.send_signal(signal.SIGTERM)
        _, stderr = bridge.communicate(timeout=10)
    assert bridge.returncode == 0
    assert "Traceback" not in stderr
    assert "redis read failed reason=ConnectionError" in stderr
    assert "status not rewritten; retrying with back-off" in stderr
    assert "redis read works again; status rewritten" in stderr


def run_until_written(command: list[str], out: Path, env: dict[str, str] | None = None) -> str:
    """Run the bridge until it has written ``out``; its standard error."""
    bridge = subprocess.Popen(
        command, stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})}
    )
    try:
        wait_until(lambda: read(out) is not None)
    finally:
        bridge.send_signal(signal.SIGTERM)
        _, stderr = bridge.communicate(timeout=10)
    assert bridge.returncode == 0, stderr
    assert "Traceback" not in stderr
    return stderr


def test_a_password_never_reaches_the_log(tmp_path: Path):
    port = free_port()
    server = start_redis(
        port, "--requirepass", "s3cret", client=redis.Redis(port=port, password="s3cret")
    )
    try:
        out = tmp_path / "status.json"
        url = f"redis://:s3cret@127.0.0.1:{port}/0"
        stderr = run_until_written(
            bridge_command("--out", str(out), "--redis", url, "--interval", "0.2"), out
        )
        assert "s3cret" not in stderr
        assert f"redis=redis://:***@127.0.0.1:{port}/0" in stderr
        (tmp_path / "password").write_text("s3cret\n")
        out.unlink()
        command = bridge_command(
            "--out", str(out), "--redis", f"redis://127.0.0.1:{port}/0", "--interval", "0.2"
        )
        command += ["--redis-password-file", str(tmp_path / "password")]
        assert "s3cret" not in run_until_written(command, out)
    finally:
        server.terminate()
        server.wait(10)


def test_bitnodes_own_socket_and_password_variables(tmp_path: Path):
    port, sock = free_port(), tmp_path / "redis.sock"
    options = ("--unixsocket", str(sock), "--requirepass", "pw")
    server = start_redis(
        port, *options, client=redis.Redis(unix_socket_path=str(sock), password="pw")
    )
    try:
        redis.Redis(unix_socket_path=str(sock), password="pw").set("crawl:master:state", "running")
        out = tmp_path / "status.json"
        env = {"REDIS_SOCKET": str(sock), "REDIS_PASSWORD": "pw"}
        command = bridge_command("--out", str(out), "--interval", "0.2")  # the default URL
        run_until_written(command, out, env)
        assert (read(out) or {})["state"] == "running"
    finally:
        server.terminate()
        server.wait(10)


def test_malformed_values_are_null_and_said_once(redis_port: int, tmp_path: Path):
    client = redis.Redis(port=redis_port)
    client.set("crawl:master:state", "running")
    client.set("height", "tall")
    client.lpush("elapsed", "480", "512")  # plain numbers, as older bitnodes wrote
    out = tmp_path / "status.json"
    command = bridge_command("--out", str(out), "--redis", f"redis://127.0.0.1:{redis_port}/0")
    bridge = subprocess.Popen([*command, "--interval", "0.1"], stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: read(out) is not None)
        time.sleep(0.5)  # several reads
    finally:
        bridge.send_signal(signal.SIGTERM)
        _, stderr = bridge.communicate(timeout=10)
    status = read(out) or {}
    assert (status["height"], status["last_elapsed"], status["last_crawl_at"]) == (None, 512, None)
    assert stderr.count("redis key height holds") == 1
    assert "Traceback" not in stderr


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (
            ["--out", "/nonexistent/folder/status.json"],
            "/nonexistent/folder is not an existing folder",
        ),
        (["--redis", "http://localhost:6379/0"], "--redis http://localhost:6379/0: Redis URL must"),
    ],
)
def test_bad_bridge_settings_are_one_line(tmp_path: Path, options: list[str], says: str):
    command = [
        sys.executable,
        "-m",
        "crawldash",
        "bitnodes-status",
        "--out",
        str(tmp_path / "s.json"),
    ]
    run = subprocess.run(command + options, capture_output=True, text=True, timeout=30, check=False)
    assert run.returncode == 2
    assert says in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1
    assert not Path("/nonexistent").exists()
