"""The bitnodes status bridge against real faults: its folder on a read-only mount, on a
full one, and bitnodes' own Unix socket in place of the URL's host. The mounts are small
tmpfs mounted here, which needs root (or the right to mount): without it these are skipped,
saying so."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest
import redis

from .helpers import bridge, bridge_command, status_passes, stopped
from .process import free_port, wait_until
from .test_bridge import REDIS, read, run_until_written, start_redis

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(REDIS is None, reason="redis-server (Debian redis-server) missing"),
]

INTERVAL = "0.1"  # the shortest the bridge takes: many tries within a test's second
TRIES = 3  # status passes made while the fault is kept: several tries, even backing off


@pytest.fixture
def redis_client() -> Iterator[redis.Redis]:
    """A real redis-server holding a crawler's state, and a client of it."""
    port = free_port()
    server = start_redis(port)
    client = redis.Redis(port=port)
    client.set("crawl:master:state", "running")
    client.sadd("up", "n1", "n2")
    yield client
    server.terminate()
    server.wait(10)


def url_of(client: redis.Redis) -> str:
    return f"redis://127.0.0.1:{client.connection_pool.connection_kwargs['port']}/0"


@contextmanager
def tmpfs(folder: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` mounted on ``folder`` (made here), unmounted on leaving; the
    test is skipped if this process may not mount one."""
    folder.mkdir()
    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root and mount(8)")
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if made.returncode != 0:
        pytest.skip(f"mounting a tmpfs is not permitted here: {made.stderr.strip()}")
    try:
        yield folder
    finally:
        if subprocess.run(["umount", str(folder)], check=False).returncode != 0:
            subprocess.run(["umount", "--lazy", str(folder)], check=False)


def remount(folder: Path, mode: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{mode}", str(folder)], check=True)


def bridging(client: redis.Redis, out: Path) -> AbstractContextManager[subprocess.Popen[str]]:
    """The bridge writing ``out`` every INTERVAL, stopped with SIGTERM on leaving."""
    return bridge("--out", str(out), "--redis", url_of(client), "--interval", INTERVAL)


def assert_failed_once_then_recovered(stderr: str, out: Path, reason: str) -> None:
    failures = [line for line in stderr.splitlines() if f"writing {out} failed" in line]
    assert len(failures) == 1, stderr  # said when it starts failing, not at every try
    assert "reason=OSError" in failures[0]
    assert reason in failures[0]
    assert "status not rewritten; retrying with back-off" in failures[0]
    assert stderr.count(f"writing {out} works again; status rewritten") == 1, stderr


def test_a_read_only_folder_is_logged_once_and_written_once_writable(
    redis_client: redis.Redis, tmp_path: Path
):
    with tmpfs(tmp_path / "mounted", "1m") as folder:
        out = folder / "status.json"
        remount(folder, "ro")
        with bridging(redis_client, out) as process:
            status_passes(redis_client, TRIES)
            assert process.poll() is None  # still running
            assert not out.exists()
            with pytest.raises(OSError, match="Read-only file system"):  # the fault meant
                (folder / "probe").write_bytes(b"")

            remount(folder, "rw")
            wait_until(lambda: read(out) is not None)
            assert (read(out) or {})["state"] == "running"
            written = out.stat().st_mtime_ns
            wait_until(lambda: out.stat().st_mtime_ns > written)  # and at every interval
            assert process.poll() is None
            stderr = stopped(process)
    assert_failed_once_then_recovered(stderr, out, "Read-only file system")


def test_a_full_folder_is_logged_once_and_written_once_freed(
    redis_client: redis.Redis, tmp_path: Path
):
    with tmpfs(tmp_path / "mounted", "16k") as folder:
        out = folder / "status.json"
        out.write_bytes(b'{"state": "before"}')  # a status of an earlier run
        filler = folder / "filler"
        fill(filler)
        with (
            pytest.raises(OSError, match="No space left on device"),  # the fault meant
            (folder / "probe").open("wb", buffering=0) as probe,
        ):
            probe.write(b"{}")
        (folder / "probe").unlink()
        with bridging(redis_client, out) as process:
            status_passes(redis_client, TRIES)
            assert process.poll() is None  # still running
            assert read(out) == {"state": "before"}  # left whole, not half rewritten

            filler.unlink()
            wait_until(lambda: (read(out) or {}).get("state") == "running")
            written = out.stat().st_mtime_ns
            wait_until(lambda: out.stat().st_mtime_ns > written)  # and at every interval
            assert process.poll() is None
            stderr = stopped(process)
        assert not [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]
    assert_failed_once_then_recovered(stderr, out, "No space left on device")


def fill(path: Path) -> None:
    """Write ``path`` until its file system is full."""
    with path.open("wb", buffering=0) as file:
        while True:
            try:
                file.write(b"\0" * 4096)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                return


def test_bitnodes_socket_wins_over_the_urls_host(tmp_path: Path):
    sock = tmp_path / "redis.sock"
    server = start_redis(
        0, "--unixsocket", str(sock), client=redis.Redis(unix_socket_path=str(sock))
    )
    try:
        # In the URL's database: the socket replaces only its host and port.
        redis.Redis(unix_socket_path=str(sock), db=2).set("crawl:master:state", "starting")
        out = tmp_path / "status.json"
        elsewhere = "redis://elsewhere.invalid:6390/2"
        command = bridge_command("--out", str(out), "--redis", elsewhere, "--interval", INTERVAL)
        stderr = run_until_written(command, out, {"REDIS_SOCKET": str(sock)})
        started = [line for line in stderr.splitlines() if "status bridge started" in line]
        assert len(started) == 1, stderr
        assert f"redis=unix://{sock}?db=2 " in started[0]
        assert "elsewhere.invalid" not in stderr
        assert (read(out) or {})["state"] == "starting"
    finally:
        server.terminate()
        server.wait(10)
