"""Work for the loader process in tests: importable by name, as a spawned process needs."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from crawldash.crawl.files import LoadError


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
