"""The server caps glibc's malloc arenas (``ops/startup.py``): its threads (the executor's,
each network's watcher) share two arenas instead of keeping one each, unless the operator
set MALLOC_ARENA_MAX. Seen from outside, in the real server's memory map: a thread's arena
is a heap of its own, mapped at a multiple of 64 MiB (glibc's HEAP_MAX_SIZE on 64 bits);
the main arena is the ``[heap]``."""

from __future__ import annotations

import contextlib
import os
import urllib.request
from pathlib import Path

import pytest

from crawldash.ops.startup import limit_malloc_arenas

from .factories import export_body, rows, write_snapshot, write_status
from .process import serving

TS = 1_700_000_000
HEAP_ALIGN = 64 * 1024 * 1024
ASKED = ("/api/snapshot", "/api/status", "/api/history", "/api/nodes?format=csv")

pytestmark = pytest.mark.skipif(
    not os.path.exists("/proc/self/smaps"), reason="reads /proc/<pid>/smaps (Linux)"
)


def thread_heaps(pid: int) -> int:
    """Anonymous read-write mappings at a multiple of 64 MiB: the arenas' heaps."""
    heaps = 0
    with open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            fields = line.split()
            start = int(fields[0].split("-")[0], 16)
            if len(fields) == 5 and fields[1].startswith("rw") and start % HEAP_ALIGN == 0:
                heaps += 1
    return heaps


def server_pid(base: str) -> int:
    """The pid of the child of this process serving ``base``'s port."""
    port = base.rsplit(":", 1)[1]
    for task in os.listdir("/proc/self/task"):
        for child in Path(f"/proc/self/task/{task}/children").read_text().split():
            command = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            if b"serve" in command and port.encode() in command:
                return int(child)
    raise AssertionError(f"no server on port {port} among this process's children")


def heaps_after_use(tmp_path: Path, env: dict[str, str]) -> int:
    """Thread arenas of a real server with two networks, the second empty, once each has
    been asked a few times."""
    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        folder.mkdir()
    write_snapshot(first, TS, export_body(rows(2000)))
    write_status(first)
    networks = (f"--network=main={first}", f"--network=second={second}")
    with serving(None, tmp_path / "state", *networks, env=env) as base:
        for prefix in ("", "/n/second"):
            for path in ASKED:
                with contextlib.suppress(OSError):  # the empty network's 503s too
                    urllib.request.urlopen(base + prefix + path, timeout=10).close()
        return thread_heaps(server_pid(base))


def test_the_server_keeps_at_most_one_thread_arena(tmp_path):
    assert heaps_after_use(tmp_path, {}) <= 1  # two arenas: the main one and one more


def test_an_operators_malloc_arena_max_is_left_to_glibc(tmp_path):
    env = {"MALLOC_ARENA_MAX": "8"}
    assert heaps_after_use(tmp_path, env) > 1  # as without the cap: one per thread


def test_a_cap_the_operator_set_is_not_set_again():
    assert limit_malloc_arenas({"MALLOC_ARENA_MAX": "4"}) is None
