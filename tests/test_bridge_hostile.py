"""The bitnodes bridge against a hostile Redis (issue 40): values no bitnodes writes, a flood
of bad keys, strings and sorted sets far larger than bitnodes' own. Each is put in a real
redis-server and the real bridge runs over it: it never dies of data, logs a few lines,
copies bounded strings and keeps writing the status on its interval."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from subprocess import Popen
from typing import NamedTuple

import pytest
import redis

from crawldash.crawl.propagation import BlocksFile, cells, read_blocks, read_latency

from .helpers import bridge, propagation_passes, stopped
from .process import PATIENCE, wait_until
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


def bridging(
    port: int, tmp: Path, interval: str = "0.1", log: Path | None = None
) -> AbstractContextManager[Popen[str]]:
    """The bridge with its propagation collection, stopped with SIGTERM on leaving."""
    return bridge(
        *("--interval", interval, "--redis", f"redis://127.0.0.1:{port}/0"),
        *("--out", str(tmp / "status.json")),
        *("--propagation-interval", "0.2", "--propagation-dir", str(tmp / "kept")),
        log=log,
    )


def good_data(client: redis.Redis) -> None:
    """A crawler's state and a block and a round-trip time as bitnodes writes them."""
    client.set("crawl:master:state", "running")
    client.zadd(f"binv:{GOOD_BLOCK}", {GOOD_NODE: T0, "198.51.100.7-8333": T0 + 40})
    client.lpush(f"rtt:{GOOD_NODE}", 42)
    client.expire(f"rtt:{GOOD_NODE}", 10_800)


def passes(tmp: Path, client: redis.Redis, blocks: int = 1, count: int = 3) -> None:
    """Wait for ``blocks`` blocks to be kept, then for ``count`` rewrites of the status and
    ``count`` propagation passes more: nothing is said twice."""
    kept = tmp / "kept"
    wait_until(lambda: len((read_blocks(kept) or NONE_KEPT).blocks) >= blocks)
    for _ in range(count):
        rewritten(tmp / "status.json")
    propagation_passes(client, count)


def rewritten(path: Path) -> None:
    """Wait for ``path`` to be written again, or for the first time: the collector's thread
    may keep a block before the status's thread has written the status once."""
    written = mtime_of(path)
    wait_until(lambda: mtime_of(path) > written)


def holds(check: Callable[[], bool]) -> bool:
    try:
        return check()
    except OSError:
        return False


def mtime_of(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except FileNotFoundError:
        return 0


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
    with bridging(redis_port, tmp_path) as process:
        wait_until(lambda: read(tmp_path / "status.json") is not None)
        passes(tmp_path, client)
        stderr = stopped(process)
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
    with bridging(redis_port, tmp_path) as process:
        wait_until(lambda: read(tmp_path / "status.json") is not None)
        stopped(process)
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
    with bridging(redis_port, tmp_path) as process:
        passes(tmp_path, client, blocks=2 if case == "binv infinite" else 1)
        stderr = stopped(process)
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


# The two causes of the flood, as the bridge says them: 20,000 keys of each, more than it
# remembers having said (redis_values.MAX_REMEMBERED), so each pass says them again.
WHOLE_PASS = (("binv:", "sorted set of a block hash"), ("rtt:", "list"))


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
    log = tmp_path / "bridge.log"
    whole = [f"{cause} keys, no {kind} (20000 this pass" for cause, kind in WHOLE_PASS]
    with bridging(redis_port, tmp_path, interval="0.5", log=log) as process:
        passes(tmp_path, client, count=2)
        # A pass reads blocks for a few seconds at most: on a busy machine the first pass
        # meets only some of the bad binv: keys, and a later one all of them.
        wait_until(lambda: all(line in log.read_text() for line in whole))
        stderr = stopped(process, log)
    warnings = [line for line in stderr.splitlines() if " WARNING " in line]
    by_cause = [
        sum(f"skipped {cause} keys" in line for line in warnings) for cause, _ in WHOLE_PASS
    ]
    assert sum(by_cause) == len(warnings), warnings  # nothing but the two causes
    assert abs(by_cause[0] - by_cause[1]) <= 1, warnings  # a line per cause and pass


def peak_memory_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def test_a_huge_block_is_read_bounded_while_the_status_keeps_its_interval(
    redis_port: int,  # noqa: F811
    tmp_path: Path,
) -> None:
    # Filling takes seconds on a busy machine: past redis-py's 5 s default, the EVAL would
    # be sent again, and refused as BUSY while the first still runs.
    client = redis.Redis(port=redis_port, socket_timeout=PATIENCE)
    good_data(client)
    client.eval(FILL, 1, f"binv:{BAD_BLOCK}", 1_000_000, T0)
    for number in range(3, 6):  # four such blocks
        client.copy(f"binv:{BAD_BLOCK}", f"binv:{str(number) * 64}")
    status, kept = tmp_path / "status.json", tmp_path / "kept"
    with bridging(redis_port, tmp_path) as process:
        wait_until(status.exists)
        reading = status_rate(status, lambda: len((read_blocks(kept) or NONE_KEPT).blocks) >= 5)
        ended = time.monotonic() + min(max(reading.seconds, 2.0), 5.0)
        after = status_rate(status, lambda: time.monotonic() > ended)  # nothing left to read
        peak = peak_memory_mb(process.pid)
        stopped(process)
    blocks = {block.hash: block for block in (read_blocks(kept) or NONE_KEPT).blocks}
    assert len(blocks) == 5
    assert blocks[BAD_BLOCK].nodes == 100_000  # the earliest read, not the million
    # The status kept its interval while the blocks were read: its rate then is of the
    # order of its rate after, on this machine as busy as it is. The reading shares the
    # cores with Redis' scripts, so its rate may halve; a status that waited for the reading
    # would be written once a pass or not at all, a tenth of the rate and less.
    assert reading.per_second > after.per_second / 4, (reading, after)
    assert peak < 200, peak


class Rate(NamedTuple):
    writes: int
    seconds: float

    @property
    def per_second(self) -> float:
        return self.writes / self.seconds


def status_rate(status: Path, done: Callable[[], bool]) -> Rate:
    """How often ``status`` is rewritten until ``done()`` (within PATIENCE); an OSError
    (the kept file caught as the bridge replaces it) counts as not done."""
    started = time.monotonic()
    last, writes = mtime_of(status), 0
    while not holds(done):
        assert time.monotonic() - started < PATIENCE, "not done"
        time.sleep(0.01)
        if (now := mtime_of(status)) != last:
            last, writes = now, writes + 1
    return Rate(writes, time.monotonic() - started)
