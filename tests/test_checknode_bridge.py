"""A successful live check reaches bitnodes' ``check`` set: serve leaves it in the
hand-off folder, the bridge (a real process, as another user) adds it to a real
redis-server with bitnodes' member format and removes the file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, cast

import pytest
import redis

from crawldash.settings.addresses import cidrs

from .bitcoin_peers import bitcoin_node, listening
from .conftest import Serve
from .helpers import bridge_command
from .process import as_nobody, free_port, shared_folder, wait_until
from .test_bridge import REDIS, start_redis

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(REDIS is None, reason="redis-server (Debian redis-server) missing"),
]
NOBODY = 65534


def handoff_folder() -> Path:
    """As docs/operating.md has it: a folder of the two users' group, setgid, 2770."""
    folder = shared_folder() / "checks"
    folder.mkdir()
    os.chown(folder, -1, NOBODY)  # the group the bridge's user is in
    folder.chmod(0o2770)
    return folder


def bridge(folder: Path, redis_port: int, user: dict[str, Any]) -> subprocess.Popen[str]:
    out = shared_folder() / "status"
    out.mkdir(mode=0o777)
    out.chmod(0o777)
    command = bridge_command(
        *("--out", str(out / "status.json"), "--redis", f"redis://127.0.0.1:{redis_port}/0"),
        *("--check-handoff-dir", str(folder), "--check-handoff-interval", "0.1"),
        python=user.get("python", sys.executable),
        prefix=user.get("prefix", ()),
    )
    environment = {**os.environ, **user.get("env", {})}
    return subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=environment)


@pytest.mark.parametrize("as_another_user", [False, True])
async def test_a_successful_check_reaches_bitnodes_check_set(serve: Serve, as_another_user):
    user = as_nobody() if as_another_user else {}
    folder, port = handoff_folder(), free_port()
    server = start_redis(port)
    running = bridge(folder, port, user)
    try:
        client = await serve(
            live_check=("main",),
            live_check_magic=(("main", "f9beb4d9"),),
            live_check_allow=cidrs("127.0.0.0/8"),
            check_handoff_dir=(("main", folder),),
        )
        before = time.time()
        async with listening(bitcoin_node(services=1037)) as peer:
            response = await client.post(
                "/api/v1/checknode/", data={"address": "127.0.0.1", "port": str(peer.port)}
            )
            assert (await response.json())["success"] is True
        store = redis.Redis(port=port)
        wait_until(lambda: store.zcard("check") == 1)
        kept = store.zrange("check", 0, -1, withscores=True)
        [(member, score)] = cast(list[tuple[bytes, float]], kept)
        # bitnodes' own format: json.dumps of a list, with json's default separators
        assert member.decode() == f'["127.0.0.1", {peer.port}, 1037]'
        assert member.decode() == json.dumps(["127.0.0.1", peer.port, 1037])
        address, node_port, services = json.loads(member)  # as crawl.py reads it
        assert (address, node_port, services) == ("127.0.0.1", peer.port, 1037)
        assert int(before) <= score <= time.time()
        wait_until(lambda: not list(folder.iterdir()))  # handed over, then removed
    finally:
        running.send_signal(signal.SIGTERM)
        _, stderr = running.communicate(timeout=10)
        server.terminate()
        server.wait(10)
    assert running.returncode == 0, stderr
    assert "Traceback" not in stderr


def test_a_file_that_holds_no_check_is_removed_and_said(tmp_path: Path):
    folder, port = tmp_path / "checks", free_port()
    folder.mkdir()
    (folder / "1-bad.json").write_bytes(b'{"address": "1.2.3.4"}')
    (folder / "2-good.json").write_bytes(
        b'{"address":"2001:db8::5","port":8333,"services":9,"checked_at":1700000000}'
    )
    (folder / ".3-half.json.tmp").write_bytes(b"{")  # still being written: left alone
    server = start_redis(port)
    running = bridge(folder, port, {})
    try:
        store = redis.Redis(port=port)
        wait_until(lambda: store.zcard("check") == 1)
        assert store.zrange("check", 0, -1, withscores=True) == [
            (b'["2001:db8::5", 8333, 9]', 1_700_000_000.0)
        ]
        wait_until(lambda: sorted(p.name for p in folder.iterdir()) == [".3-half.json.tmp"])
    finally:
        running.send_signal(signal.SIGTERM)
        _, stderr = running.communicate(timeout=10)
        server.terminate()
        server.wait(10)
    assert "removed 1 hand-off files that hold no check" in stderr
