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
HEAP_SIZE = 64 * 1024 * 1024  # glibc's HEAP_MAX_SIZE on 64 bits
ASKED = ("/api/snapshot", "/api/status", "/api/history", "/api/nodes?format=csv")

pytestmark = pytest.mark.skipif(
    not os.path.exists("/proc/self/smaps"), reason="reads /proc/<pid>/smaps (Linux)"
)


def thread_heaps(pid: int) -> int:
    """The arenas' heaps among the process's mappings: each is a 64 MiB reservation at a
    multiple of 64 MiB, read-write as far as it is used and inaccessible past that. Other
    anonymous mappings may start at such a multiple too, but do not end with the rest of
    the 64 MiB kept inaccessible."""
    mappings = []
    with open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            fields = line.split()
            start, end = (int(bound, 16) for bound in fields[0].split("-"))
            mappings.append((start, end, fields[1], len(fields) == 5))
    heaps = 0
    for (start, end, mode, anonymous), after in zip(mappings, [*mappings[1:], None], strict=True):
        if start % HEAP_SIZE or not mode.startswith("rw") or not anonymous:
            continue
        if end - start == HEAP_SIZE or (after is not None and _rest_of_heap(start, end, after)):
            heaps += 1
    return heaps


def _rest_of_heap(start: int, end: int, after: tuple[int, int, str, bool]) -> bool:
    """Whether ``after`` is the inaccessible rest of a heap at ``start``, used to ``end``."""
    after_start, after_end, mode, anonymous = after
    return (
        after_start == end
        and mode.startswith("---")
        and anonymous
        and (after_end - start == HEAP_SIZE)
    )


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
