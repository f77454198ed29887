"""Work for the loader process in tests: importable by name, as a spawned process needs."""

from __future__ import annotations

import ctypes
import os
import platform
import signal
import time
from pathlib import Path

from crawldash.crawl.decode import Rules
from crawldash.crawl.files import LoadError
from crawldash.live.loader.new_crawl import load_new_crawl
from crawldash.live.loader.priority import SCHED_ATTR
from crawldash.live.snapshot.prepared import Later, PreparedSnapshot

SCHED_GETATTR = {"x86_64": 315, "aarch64": 275}  # syscall numbers; tests skip elsewhere


def die_the_first_time(marker: str) -> int:
    """Kill this process the first time (leaving ``marker``); then return its pid."""
    if not Path(marker).exists():
        Path(marker).touch()
        os.kill(os.getpid(), signal.SIGKILL)
    return os.getpid()


def count_calls(tally: str) -> int:
    """Add a line to the file ``tally``; return how many lines it has now."""
    with open(tally, "a") as lines:
        lines.write("call\n")
    return len(Path(tally).read_text().splitlines())


def fail_the_first_time(marker: str) -> int:
    """Raise a LoadError the first time (leaving ``marker``); then return this pid."""
    if not Path(marker).exists():
        Path(marker).touch()
        raise LoadError("broken", "half-written the first time")
    return os.getpid()


def large_and_small(size: int) -> dict[str, object]:
    """Bytes objects above and below the size that crosses beside a reply's pickle, one of
    them referred to twice, among other values."""
    large = bytes(range(256)) * (size // 256)
    return {"large": large, "again": large, "other": large[::-1], "small": b"small", "n": 7}


def scheduling() -> tuple[int, int, int]:
    """This process's scheduling policy, niceness and scheduler slice (ns), as the kernel
    has them (``sched_getattr``: /proc/<pid>/sched leaves the slice out under SCHED_IDLE).
    Runs in the loader process too, where a pytest skip would kill the child: tests check
    the machine first."""
    attr = ctypes.create_string_buffer(SCHED_ATTR.size)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(SCHED_GETATTR[platform.machine()], 0, attr, SCHED_ATTR.size, 0) != 0:
        raise OSError(ctypes.get_errno(), "sched_getattr")
    _, policy, _, nice, _, slice_ns, _, _ = SCHED_ATTR.unpack(attr.raw)
    return policy, nice, slice_ns


def part_then_wait(flag: str) -> str:
    """Send a part of the answer ahead, then wait for the caller to have it (it leaves
    ``flag``) before replying; raise if it never comes."""
    from crawldash.live.loader.process import send_part

    if not send_part({"part": 1}):
        return "not sent"
    deadline = time.monotonic() + 10
    while not Path(flag).exists():
        if time.monotonic() > deadline:
            raise TimeoutError("the part never reached the caller")
        time.sleep(0.01)
    return "whole"


def part_then_die() -> None:
    """Send a part of the answer ahead, then die without replying."""
    from crawldash.live.loader.process import send_part

    send_part({"part": 1})
    os.kill(os.getpid(), signal.SIGKILL)


def part_then_reply() -> str:
    """Send a part of the answer ahead, then reply at once."""
    from crawldash.live.loader.process import send_part

    send_part("ahead")
    return "replied"


def load_unless_marked(path: Path, rules: Rules) -> PreparedSnapshot | Later:
    """A new crawl's load, but one whose file holds ``"overflow"`` raises what no load
    should (as an overflow in the catalog once did)."""
    if b"overflow" in path.read_bytes():
        raise OverflowError("int too big to convert")
    return load_new_crawl(path, rules)
