"""The bitnodes status bridge against a real redis-server."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from .process import free_port

REDIS = shutil.which("redis-server")
pytestmark = pytest.mark.skipif(REDIS is None, reason="redis-server (Debian redis-server) missing")


def start_redis(port: int) -> subprocess.Popen[bytes]:
    assert REDIS is not None
    server = subprocess.Popen(
        [REDIS, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    client = redis.Redis(port=port)
    wait_until(lambda: _pings(client))
    return server


def _pings(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False


def wait_until(check, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            pytest.fail("condition not met in time")
        time.sleep(0.05)


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
    assert "status.json not rewritten" in stderr
    assert "redis reachable again" in stderr
