"""The bitnodes bridge against a hostile Redis (issue 40): values no bitnodes writes, a flood
of bad keys, strings and sorted sets far larger than bitnodes' own. Each is put in a real
redis-server and the real bridge runs over it: it never dies of data, logs a few lines,
copies bounded strings and keeps writing the status on its interval."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis

from crawldash.crawl.propagation import BlocksFile, cells, read_blocks, read_latency

from .process import wait_until
from .test_bridge import REDIS, read, redis_port  # noqa: F401 (a fixture)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(REDIS is None, reason="redis-server (Debian redis-server) missing"),
]

T0 = int(time.time() * 1000) - 3_600_000  # an hour ago, in ms
GOOD_BLOCK, BAD_BLOCK = "1" * 64, "2" * 64
GOOD_NODE = "203.0.113.5-8333"
NONE_KEPT = BlocksFile(0, [])
# Fills a sorted set with ARGV[1] members server-side: a million ZADDs from the test would
# take longer than the bridge's pass being tested.
FILL = """
for i = 1, tonumber(ARGV[1]) do
  redis.call('ZADD', KEYS[1], ARGV[2] + i, '10.' .. (i % 250) .. '.'
    .. (math.floor(i / 250) % 250) .. '.' .. (math.floor(i / 62500) + 1) .. '-8333')
end
"""


@contextmanager
def bridge(port: int, tmp: Path, interval: str = "0.1") -> Iterator[subprocess.Popen[str]]:
    """The bridge with its propagation collection, stopped with SIGTERM on leaving."""
    command = [
        *(sys.executable, "-m", "crawldash", "bitnodes-status", "--interval", interval),
        *("--redis", f"redis://127.0.0.1:{port}/0", "--out", str(tmp / "status.json")),
        *("--propagation-interval", "0.2", "--propagation-dir", str(tmp / "kept")),
    ]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        process.communicate(timeout=30)


def log_of(process: subprocess.Popen[str]) -> str:
    """Its standard error, once it has ended on SIGTERM as a clean exit."""
    assert process.poll() is None, process.communicate()[1]  # still running
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr, stderr
    return stderr


def good_data(client: redis.Redis) -> None:
    """A crawler's state and a block and a round-trip time as bitnodes writes them."""
    client.set("crawl:master:state", "running")
    client.zadd(f"binv:{GOOD_BLOCK}", {GOOD_NODE: T0, "198.51.100.7-8333": T0 + 40})
    client.lpush(f"rtt:{GOOD_NODE}", 42)
    client.expire(f"rtt:{GOOD_NODE}", 10_800)


def passes(tmp: Path, count: int = 3) -> None:
    """Wait for ``count`` rewrites of the blocks file's neighbour, the status, and for the
    good block to be kept: several propagation passes have run."""
    kept = tmp / "kept"
    wait_until(lambda: len((read_blocks(kept) or NONE_KEPT).blocks) >= 1)
    for _ in range(count):
        rewritten(tmp / "status.json")
    time.sleep(0.6)  # a few propagation passes more: nothing said twice


def rewritten(path: Path) -> None:
    """Wait for ``path`` to be written again."""
    written = path.stat().st_mtime_ns
    wait_until(lambda: path.stat().st_mtime_ns > written)


def latency_count(kept: Path, address: str) -> int:
    latency = read_latency(kept)
    if latency is None or address not in latency.nodes:
        return 0
    return sum(count for _, count, _ in cells(latency.nodes[address]))


def test_an_infinite_elapsed_is_null_and_the_status_still_written(
    redis_port: int,  # noqa: F811
    tmp_path: Path,
) -> None:
    client = redis.Redis(port=redis_port)
    good_data(client)
    client.rpush("elapsed", "[Infinity, 5]")
    with bridge(redis_port, tmp_path) as process:
        wait_until(lambda: read(tmp_path / "status.json") is not None)
        passes(tmp_path)
        stderr = log_of(process)
    status = read(tmp_path / "status.json") or {}
    assert (status["state"], status["last_elapsed"], status["last_crawl_at"]) == (
        "running",
        None,
        None,
    )
    assert stderr.count("redis key elapsed holds") == 1, stderr


def test_a_huge_state_is_cut_to_64_characters(
    redis_port: int,  # noqa: F811
    tmp_path: Path,
) -> None:
    client = redis.Redis(port=redis_port)
    good_data(client)
    client.set("crawl:master:state", "x" * 5_000_000)
    with bridge(redis_port, tmp_path) as process:
        wait_until(lambda: read(tmp_path / "status.json") is not None)
        log_of(process)
    assert (read(tmp_path / "status.json") or {})["state"] == "x" * 64
    assert (tmp_path / "status.json").stat().st_size < 1000


def opendata_row(address: str, port: str) -> str:
    return f'["{address}", {port}, 70016, "/Satoshi:28.0.0/", 1790000000, 1033]'


BAD_VALUES: dict[str, tuple[Callable[[redis.Redis], object], str]] = {
    "opendata out of range": (
        lambda c: c.zadd("opendata", {'["1.2.3.4", 1e400]': 1}),
        "opendata members",
    ),
    "opendata nested deep": (lambda c: c.zadd("opendata", {"[" * 100_000: 1}), "opendata members"),
    "rtt over int32": (lambda c: c.lpush("rtt:1.2.3.4-8333", 3_000_000_000), "rtt: keys"),
    "rtt negative": (lambda c: c.lpush("rtt:1.2.3.4-8333", -50), "rtt: keys"),
    "binv infinite": (
        lambda c: c.zadd(f"binv:{BAD_BLOCK}", {"1.2.3.4-8333": float("inf"), GOOD_NODE: T0}),
        "announcements",
    ),
}


@pytest.mark.parametrize("case", list(BAD_VALUES))
def test_a_bad_value_is_skipped_and_said_once(
    redis_port: int,  # noqa: F811
    tmp_path: Path,
    case: str,
) -> None:
    client = redis.Redis(port=redis_port)
    good_data(client)
    client.zadd("opendata", {opendata_row("198.51.100.7", "8333"): 1})
    put, said = BAD_VALUES[case]
    put(client)
    client.expire("rtt:1.2.3.4-8333", 10_800)
    with bridge(redis_port, tmp_path) as process:
        passes(tmp_path)
        stderr = log_of(process)
    kept = tmp_path / "kept"
    assert latency_count(kept, "203.0.113.5:8333") == 1  # the good data is kept beside
    assert latency_count(kept, "1.2.3.4:8333") == 0  # the bad value is not
    latency = read_latency(kept)
    assert latency is not None
    assert "198.51.100.7:8333" in latency.nodes  # held, so kept
    blocks = {block.hash: block for block in (read_blocks(kept) or NONE_KEPT).blocks}
    assert blocks[GOOD_BLOCK].nodes == 2
    if case == "binv infinite":
        assert (blocks[BAD_BLOCK].nodes, blocks[BAD_BLOCK].max) == (1, 0)
    warnings = [line for line in stderr.splitlines() if " WARNING " in line]
    assert len(warnings) == 1, stderr
    assert said in warnings[0]


def test_a_flood_of_bad_keys_is_a_line_per_cause(
    redis_port: int,  # noqa: F811
    tmp_path: Path,
) -> None:
    client = redis.Redis(port=redis_port)
    good_data(client)
    pipe = client.pipeline(transaction=False)
    for i in range(20_000):
        pipe.set(f"binv:{i:064x}", "a string, not a sorted set")
        pipe.set(f"rtt:10.9.{i // 250}.{i % 250}-8333", "a string, not a list")
    pipe.execute()
    with bridge(redis_port, tmp_path, interval="0.5") as process:
        passes(tmp_path, 2)
        stderr = log_of(process)
    warnings = [line for line in stderr.splitlines() if " WARNING " in line]
    assert 2 <= len(warnings) <= 10, warnings  # a line per cause and pass, at most
    assert any("20000" in line and "binv:" in line for line in warnings), warnings
    assert any("20000" in line and "rtt:" in line for line in warnings), warnings


def peak_memory_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def test_a_huge_block_is_read_bounded_while_the_status_keeps_its_interval(
    redis_port: int,  # noqa: F811
    tmp_path: Path,
) -> None:
    client = redis.Redis(port=redis_port)
    good_data(client)
    client.eval(FILL, 1, f"binv:{BAD_BLOCK}", 1_000_000, T0)
    for number in range(3, 6):  # four such blocks
        client.copy(f"binv:{BAD_BLOCK}", f"binv:{str(number) * 64}")
    status, kept = tmp_path / "status.json", tmp_path / "kept"
    longest, last_write = 0.0, None
    with bridge(redis_port, tmp_path) as process:
        wait_until(status.exists)
        last, deadline = status.stat().st_mtime_ns, time.monotonic() + 60
        last_write = time.monotonic()
        while len((read_blocks(kept) or NONE_KEPT).blocks) < 5 and time.monotonic() < deadline:
            time.sleep(0.02)
            if (mtime := status.stat().st_mtime_ns) != last:
                longest = max(longest, time.monotonic() - last_write)
                last, last_write = mtime, time.monotonic()
        peak = peak_memory_mb(process.pid)
        log_of(process)
    blocks = {block.hash: block for block in (read_blocks(kept) or NONE_KEPT).blocks}
    assert len(blocks) == 5
    assert blocks[BAD_BLOCK].nodes == 100_000  # the earliest read, not the million
    assert longest < 1.5  # the status kept its 0.1 s interval, give or take a busy machine
    assert peak < 200, peak
