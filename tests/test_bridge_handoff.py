"""The bridge reads the live check's hand-off folder as input: beside good hand-offs, a file
naming a host name, a folder, a FIFO or a link named like a hand-off. A real redis-server
and the real bridge process: only the good checks reach bitnodes' ``check`` set, in the
form bitnodes' ``restart()`` reads, the bridge keeps running, says each cause in a line,
and stops promptly."""

from __future__ import annotations

import ipaddress
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import cast

import pytest
import redis

from .process import free_port, wait_until
from .test_bridge import REDIS, start_redis
from .test_checknode_bridge import bridge

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(REDIS is None, reason="redis-server (Debian redis-server) missing"),
]
CHECKED_AT = 1_700_000_000
STOPS_WITHIN = 10.0  # seconds from SIGTERM to exit; a collector stuck on a FIFO took 30
GOOD = {  # file name: the check it holds, and the member bitnodes is given for it
    "2-good.json": ({"address": "203.0.113.5", "port": 8333}, '["203.0.113.5", 8333, 9]'),
    "3-spelled.json": ({"address": "2001:DB8:0:0::7", "port": 18333}, '["2001:db8::7", 18333, 9]'),
}
BAD = {  # file name: the check it holds; each holds no check bitnodes can take
    "1-host.json": {"address": "seed.bitnodes.example", "port": 8333},
    "4-bracketed.json": {"address": "[2001:db8::8]", "port": 8333},
    "5-zone.json": {"address": "fe80::1%1", "port": 8333},
    "6-services.json": {"address": "203.0.113.6", "port": 8333, "services": 2**64},
}


def hand_off(folder: Path, name: str, fields: dict[str, object]) -> None:
    check = {"services": 9, "checked_at": CHECKED_AT, **fields}
    (folder / f".{name}.tmp").write_text(json.dumps(check))
    os.replace(folder / f".{name}.tmp", folder / name)  # as serve writes them


def as_bitnodes_reads(member: bytes) -> tuple[str, int, int]:
    """What bitnodes' ``restart()`` does with a ``check`` member: ``json.loads`` into three
    values, then ``is_excluded(address)``, which calls ``ip_address()`` on anything but a
    .onion or .i2p host (a ValueError there ends its crawl cycle)."""
    address, port, services = json.loads(member)
    if not address.endswith((".onion", ".i2p")):
        ipaddress.ip_address(address)
    return address, port, services


def folder_entry(path: Path) -> None:
    path.mkdir()
    (path / "inside").write_text("not the bridge's")


def link_entry(path: Path) -> None:
    path.symlink_to("/dev/zero")  # read through, it would never end


STRANGE: dict[str, Callable[[Path], None]] = {
    "folder": folder_entry,
    "fifo": os.mkfifo,
    "link": link_entry,
}


@pytest.mark.parametrize("strange", sorted(STRANGE))
def test_only_good_checks_reach_bitnodes_and_the_bridge_stops_promptly(
    tmp_path: Path, strange: str
) -> None:
    folder, port = tmp_path / "checks", free_port()
    folder.mkdir()
    STRANGE[strange](folder / "0.json")  # sorts first: read before any check
    for name, fields in BAD.items():
        hand_off(folder, name, fields)
    for name, (fields, _) in GOOD.items():
        hand_off(folder, name, fields)
    server = start_redis(port)
    running = bridge(folder, port, {})
    store = redis.Redis(port=port)
    expected = {member.encode() for _, member in GOOD.values()}
    try:
        wait_until(lambda: set(store.zrange("check", 0, -1)) == expected)
        left = ["0.json"] if strange == "folder" else []  # a folder is not the bridge's
        wait_until(lambda: sorted(p.name for p in folder.iterdir()) == left)
        # a later hand-off still goes through: the passes go on, and say nothing again
        hand_off(folder, "7-later.json", {"address": "198.51.100.9", "port": 8333})
        expected.add(b'["198.51.100.9", 8333, 9]')
        wait_until(lambda: set(store.zrange("check", 0, -1)) == expected)
        kept = cast(list[tuple[bytes, float]], store.zrange("check", 0, -1, withscores=True))
        assert {score for _, score in kept} == {CHECKED_AT}
        for member, _ in kept:
            as_bitnodes_reads(member)
        assert running.poll() is None  # still running
    finally:
        stopped = time.monotonic()
        running.send_signal(signal.SIGTERM)
        try:
            _, stderr = running.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            running.kill()
            _, stderr = running.communicate()
        took = time.monotonic() - stopped
        server.terminate()
        server.wait(10)
    assert running.returncode == 0, stderr
    assert took < STOPS_WITHIN, stderr
    assert "Traceback" not in stderr, stderr
    assert "collection failed" not in stderr, stderr
    for cause in (
        "not an IP address, .onion or .b32.i2p host): ['1-host.json', '4-bracketed.json', "
        "'5-zone.json']",
        "services over 64 bits): ['6-services.json']",
    ):
        assert stderr.count(cause) == 1, stderr
    if strange == "folder":
        assert stderr.count("left 1 folders in the hand-off folder alone") == 1, stderr
    else:
        assert stderr.count("hold no check (not a regular file): ['0.json']") == 1, stderr
