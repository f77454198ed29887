"""The kept propagation files as a real server meets them when they are not what the bridge
writes: a FIFO, a link to a device, a file past the largest the bridge can write, and a
large valid file, parsed while requests are answered (issue 40)."""

from __future__ import annotations

import os
import shutil
import signal
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from crawldash.crawl.propagation import (
    BLOCKS_FILE,
    BLOCKS_MAX_BYTES,
    LATENCY_FILE,
    MAX_BLOCKS,
    BlocksFile,
    LatencyFile,
    pack,
    write_blocks,
    write_latency,
)
from crawldash.settings.bridge import BridgeSettings
from crawldash.settings.options import options_of

from .factories import export_body, rows, write_snapshot
from .helpers import get
from .process import as_nobody, serving, shared_folder, wait_until
from .test_propagation_serving import NOW_BUCKET, block

NODE = "203.0.113.5:8333"
TICKS = 2.0  # seconds: four looks at the propagation folder
MAX_GROWTH_KB = 100 * 1024  # peak RSS growth allowed while a bad file is refused


def kept_blocks(base: str) -> int:
    count: int = get(f"{base}/api/v1/inv/?limit=1")["count"]
    return count


def peak_rss_kb(pid: int) -> int:
    """The most resident memory the process has had (VmHWM), in kB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def server_pid(base: str) -> int:
    """The pid of the server listening at ``base``, found by its command line."""
    port = base.rsplit(":", 1)[1].encode()
    for entry in Path("/proc").iterdir():
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"serve" in args and b"--port" in args and port in args:
            return int(entry.name)
    raise AssertionError(f"no server at {base}")


@contextmanager
def kept_server(folder: Path, logs: list[str], **arguments: Any) -> Iterator[tuple[str, Path, int]]:
    """A server of ``folder/data`` and its kept propagation ``folder/kept`` (three blocks
    and one node's latency), once it serves them; yields its URL, the kept folder, its pid."""
    data, kept, state = folder / "data", folder / "kept", folder / "state"
    write_snapshot(data, int(time.time()) - 60, export_body(rows(5)))
    write_blocks(kept, BlocksFile(0, [block(n) for n in (3, 2, 1)]))
    latency = LatencyFile(NOW_BUCKET, {NODE: pack({NOW_BUCKET: (1, 42)})}, {})
    write_latency(kept, latency)
    for path in (data, kept, *data.iterdir(), *kept.iterdir()):
        path.chmod(0o755 if path.is_dir() else 0o644)
    state.mkdir(mode=0o777)
    state.chmod(0o777)
    with serving(data, state, "--propagation-dir", str(kept), logs=logs, **arguments) as base:
        wait_until(lambda: kept_blocks(base) == 3)
        yield base, kept, server_pid(base)


def still_serving_the_last_good_data(base: str) -> None:
    assert get(f"{base}/healthz")["status"] == "ok"
    assert kept_blocks(base) == 3
    latency = get(f"{base}/api/v1/nodes/203.0.113.5-8333/latency/")
    assert latency["daily_latency"][-1]["v"] == 42


def refusals(logs: list[str], name: str) -> list[str]:
    return [line for line in logs[0].splitlines() if f"kept {name} not read" in line]


@pytest.fixture
def folder() -> Iterator[Path]:
    path = shared_folder()  # another user can enter it
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize("user", ["root", "nobody"])
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_a_fifo_is_refused_once_and_the_server_still_stops(
    folder: Path, user: str, stop: signal.Signals
):
    """A FIFO is opened without waiting for a writer and refused: no thread is stuck in
    open(), the last good data stays, and the server stops on a signal (``serving()``
    checks that it exits cleanly; it sends SIGINT to a server still running)."""
    logs: list[str] = []
    arguments = as_nobody() if user == "nobody" else {}
    with kept_server(folder, logs, **arguments) as (base, kept, pid):
        os.mkfifo(kept / "fifo")
        os.replace(kept / "fifo", kept / BLOCKS_FILE)
        time.sleep(TICKS)
        still_serving_the_last_good_data(base)
        os.kill(pid, stop)
    (line,) = refusals(logs, BLOCKS_FILE)
    assert "not a regular file" in line


@pytest.mark.parametrize("name", [LATENCY_FILE, BLOCKS_FILE])
def test_a_link_to_dev_zero_is_refused_without_reading_it(folder: Path, name: str):
    logs: list[str] = []
    with kept_server(folder, logs) as (base, kept, pid):
        before = peak_rss_kb(pid)
        (kept / "link").symlink_to("/dev/zero")
        os.replace(kept / "link", kept / name)
        time.sleep(TICKS)
        assert peak_rss_kb(pid) - before < MAX_GROWTH_KB
        still_serving_the_last_good_data(base)
    (line,) = refusals(logs, name)
    assert "not a regular file" in line


def test_a_file_past_the_largest_the_bridge_writes_is_refused_unread(folder: Path):
    """A (sparse) blocks file one byte past the most ``--max-blocks`` blocks can take."""
    logs: list[str] = []
    with kept_server(folder, logs) as (base, kept, pid):
        before = peak_rss_kb(pid)
        with open(kept / "huge", "wb") as huge:
            huge.truncate(BLOCKS_MAX_BYTES + 1)
        os.replace(kept / "huge", kept / BLOCKS_FILE)
        time.sleep(TICKS)
        assert peak_rss_kb(pid) - before < MAX_GROWTH_KB
        still_serving_the_last_good_data(base)
    (line,) = refusals(logs, BLOCKS_FILE)
    assert f"over the limit of {BLOCKS_MAX_BYTES} bytes" in line


def test_status_answers_while_a_large_file_is_parsed(folder: Path):
    """While a large blocks file is read and its answers built, /api/status is answered
    throughout: no pause between two answers is a large part of the whole parse (decoded
    in one call, the file held the interpreter lock for much of it)."""
    logs: list[str] = []
    large = BlocksFile(1, [block(n) for n in range(150_000, 0, -1)])
    with kept_server(folder, logs) as (base, kept, _):
        write_blocks(folder / "staged", large)
        os.replace(folder / "staged" / BLOCKS_FILE, kept / BLOCKS_FILE)
        started, answered, longest = time.monotonic(), time.monotonic(), 0.0
        while kept_blocks(base) != 150_000:
            urllib.request.urlopen(f"{base}/api/status", timeout=30).close()
            now = time.monotonic()
            longest, answered = max(longest, now - answered), now
        parse = time.monotonic() - started
    assert longest < parse / 4, (longest, parse)


def test_the_largest_blocks_file_follows_the_bridge_setting():
    """MAX_BLOCKS is the highest --max-blocks the bridge takes."""
    (parse,) = [option.parse for name, option in options_of(BridgeSettings) if name == "max_blocks"]
    assert parse(str(MAX_BLOCKS)) == MAX_BLOCKS
    with pytest.raises(ValueError, match="outside"):
        parse(str(MAX_BLOCKS + 1))
