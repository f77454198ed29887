"""A server or an archive run killed outright (SIGKILL, as the OOM killer kills) takes its
pool's processes with it: none is left waiting for good, holding its memory."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from crawldash.archive.backfill import every_core

from .helpers import write_generated
from .process import free_port, wait_until

END = int(time.time()) // 600 * 600 - 600


def test_counting_processes_end_with_a_killed_server(tmp_path: Path):
    data = tmp_path / "data"
    write_generated(data, nodes=400, crawls=600, end=END)  # a backlog to count
    where = ["--state-dir", str(tmp_path / "state"), "--port", str(free_port())]
    killed_leaves_nothing(["serve", "--data-dir", str(data), *where])


@pytest.mark.skipif(every_core() < 2, reason="on one core, crawldash archive runs no pool")
def test_archive_processes_end_with_a_killed_run(tmp_path: Path):
    data = tmp_path / "data"
    write_generated(data, nodes=1500, crawls=150, end=END)
    killed_leaves_nothing(
        ["archive", "--data-dir", str(data), "--archive-dir", str(tmp_path / "archive")]
    )


def killed_leaves_nothing(arguments: list[str]) -> None:
    """Run ``crawldash ARGUMENTS`` until its pool's processes run, kill it outright, and
    see every process it had started (the pool's, its loader, multiprocessing's resource
    tracker) end."""
    crawldash = [sys.executable, "-m", "crawldash", *arguments]
    process = subprocess.Popen(crawldash, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: workers(process.pid))
        started = children(process.pid)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(10)
    wait_until(lambda: not [pid for pid in started if running(pid)])


def workers(pid: int) -> set[int]:
    """The pool's processes ``pid`` runs (started by multiprocessing's spawn)."""
    return {child for child in children(pid) if b"spawn_main" in cmdline(child)}


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return b""


def children(pid: int) -> set[int]:
    """The processes ``pid``'s threads started that are running still."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found.update(int(child) for child in (task / "children").read_text().split())
        except FileNotFoundError:  # the thread ended meanwhile
            continue
    return {child for child in found if running(child)}


def running(pid: int) -> bool:
    """Whether ``pid`` runs: neither gone nor a zombie (an orphan's end may not be reaped
    where PID 1 reaps nothing)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
