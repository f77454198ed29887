"""The bitnodes bridge's collection over a full Redis of block announcements: 1,000
``binv:*`` keys of 10,000 members each (ping.py's shape). The first pass (which stops
reading blocks after its budget, leaving the rest to the next passes) and all the passes
until every block is kept are timed, and their peak memory taken, in a process of its
own so that the memory is the passes' alone.

Run alone: ``python -m bench.scenarios.propagation`` (needs ``redis-server``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.config import REPO
from bench.context import Bench
from bench.rows import Measure, Note, Row, Section, Unit

KEYS = 1000
MEMBERS = 10_000
QUICK_KEYS = 20  # --quick: enough to see that the pass works
SECONDS_LIMIT = 5.0
MB_LIMIT = 100.0

# The passes, in a child process: Collector.collect over the filled Redis until every
# block is kept; prints the first pass's wall time and the blocks it kept, the passes and
# time until all were, and the child's peak resident memory: VmHWM of its own memory map,
# not ru_maxrss, which Linux carries over from the parent's memory at exec.
PASS = """
import json, sys, time
from pathlib import Path
import redis
from crawldash.crawl.propagation import read_blocks
from crawldash.tools.propagation import Collector
client = redis.Redis(port=int(sys.argv[1]))
folder = Path(sys.argv[2])
collector = Collector(client, folder, 60, 20_000)
started = time.perf_counter()
collector.collect(time.time())
first = time.perf_counter() - started
first_keys = len(read_blocks(folder).blocks)
passes = 1
while len(read_blocks(folder).blocks) < int(sys.argv[3]):
    collector.collect(time.time())
    passes += 1
every = time.perf_counter() - started
started = time.perf_counter()
collector.collect(time.time())  # every block kept, none changed: a pass as most are
steady = time.perf_counter() - started
status = Path('/proc/self/status').read_text().splitlines()
peak = next(int(l.split()[1]) for l in status if l.startswith('VmHWM:')) / 1024
print(json.dumps({"seconds": first, "peak_mib": peak, "first_keys": first_keys,
                  "passes": passes, "all_seconds": every, "steady_seconds": steady}))
"""


def fill(port: int, keys: int) -> None:
    """1,000 blocks, each announced by 10,000 nodes, as ping.py writes them."""
    import redis

    client = redis.Redis(port=port)
    t0 = int(time.time() * 1000) - 8 * 86_400_000  # a week of blocks, within --keep-days
    for block in range(keys):
        members: dict[str, int] = {}
        for node in range(MEMBERS):
            address = f"10.{node // 65536}.{node // 256 % 256}.{node % 256}-8333"
            members[address] = t0 + block * 600_000 + (node * 7919) % 30_000
        key = f"binv:{block:064x}"
        client.zadd(key, members)
        client.expire(key, 10_800)


def measure(keys: int = KEYS) -> dict[str, float]:
    """Start a redis-server, fill it, run the pass in a child; its seconds and peak MB."""
    redis_server = shutil.which("redis-server")
    if redis_server is None:
        raise FileNotFoundError("redis-server")
    with tempfile.TemporaryDirectory(prefix="crawldash-bench-") as folder:
        port = _free_port()
        server = subprocess.Popen(
            [redis_server, "--port", str(port), "--bind", "127.0.0.1", "--save", ""],
            stdout=subprocess.DEVNULL,
        )
        try:
            _wait_for(port)
            fill(port, keys)
            out = subprocess.run(
                [sys.executable, "-c", PASS, str(port), str(Path(folder) / "kept"), str(keys)],
                check=True,
                capture_output=True,
                cwd=REPO,
                text=True,
            ).stdout
        finally:
            server.terminate()
            server.wait(30)
    result: dict[str, float] = json.loads(out)
    return result


def run(bench: Bench) -> list[Row]:
    keys = QUICK_KEYS if bench.config.quick else KEYS
    try:
        result = measure(keys)
    except FileNotFoundError:
        return [Note("redis-server missing: the bridge's propagation pass was not measured")]
    name = f"bridge over {keys:,} binv:* keys of {MEMBERS:,} members"
    return [
        Measure(
            Section.TARGETS,
            f"{name}: reading every block (passes back to back)",
            (result["all_seconds"],),
            Unit.S,
            2,
            limits=(SECONDS_LIMIT,),
            details=f"{result['passes']:.0f} passes; the first, bounded, took "
            f"{result['seconds']:.2f} s and kept {result['first_keys']:.0f} blocks",
        ),
        Measure(
            Section.TARGETS,
            f"{name}: a pass once every block is kept and none changed",
            (result["steady_seconds"],),
            Unit.S,
            2,
        ),
        Measure(
            Section.TARGETS,
            f"{name}: peak memory of the bridge",
            (result["peak_mib"],),
            Unit.MIB,
            0,
            limits=(MB_LIMIT,),
        ),
    ]


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for(port: int) -> None:
    import redis

    deadline = time.monotonic() + 10
    while True:
        try:
            if redis.Redis(port=port).ping():
                return
        except redis.ConnectionError:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.05)


if __name__ == "__main__":
    print(json.dumps(measure()))
