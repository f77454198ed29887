"""The bitnodes bridge's collection over a full Redis of block announcements: 1,000
``binv:*`` keys of 10,000 members each (ping.py's shape), the members the demo's mix of
IPv4, IPv6, onion, I2P and CJDNS nodes, as ping.py names them. The first pass (which stops
reading blocks after its budget, leaving the rest to the next passes) and all the passes
until every block is kept are timed, and their peak memory taken, in a process of its
own so that the memory is the passes' alone.

Redis and the bridge may use every core, as on a machine where nothing is pinned, each in
a session of its own as the services they are: once with nothing else running, then again
(into an empty folder) beside one CPU-bound process per core at nice 0, a stand-in for the
crawler's own machine.

Run alone: ``python -m bench.scenarios.bridge_propagation`` (needs ``redis-server``).
"""

from __future__ import annotations

import contextlib
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from bench.config import REPO
from bench.context import Bench
from bench.load import free_port
from bench.rows import Measure, Note, Row, Section, Unit
from bench.servers import BOTH_CORES, spinners
from crawldash.demo.fake_crawler import generate_crawls

if TYPE_CHECKING:
    import redis

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
from crawldash.bridge.propagation import Collector
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
    """1,000 blocks, each announced by the same 10,000 nodes, as ping.py writes them."""
    import redis

    client = redis.Redis(port=port)
    t0 = int(time.time() * 1000) - 8 * 86_400_000  # a week of blocks, within --keep-days
    nodes = ping_members(MEMBERS)
    for block in range(keys):
        members = {node: t0 + block * 600_000 + (i * 7919) % 30_000 for i, node in enumerate(nodes)}
        key = f"binv:{block:064x}"
        client.zadd(key, members)
        client.expire(key, 10_800)


def ping_members(count: int) -> list[str]:
    """``count`` nodes of the demo's mix, named as ping.py names them: ADDRESS-PORT, IPv6
    without brackets."""
    crawl = next(generate_crawls(nodes=count * 2, crawls=1, end=int(time.time())))
    named = []
    for address in random.Random(28).sample(crawl.addresses(), count):
        host, _, port = address.rpartition(":")
        named.append(f"{host.strip('[]')}-{port}")
    return named


def measure(keys: int = KEYS) -> dict[str, dict[str, float]]:
    """Start a redis-server, fill it, run the passes in a child, on a quiet machine and
    on a busy one: each run's seconds and peak MB."""
    import redis

    redis_server = shutil.which("redis-server")
    if redis_server is None:
        raise FileNotFoundError("redis-server")
    cores = ["taskset", "-c", BOTH_CORES]  # this driver is pinned to one core: not these
    with tempfile.TemporaryDirectory(prefix="crawldash-bench-") as folder:
        port = free_port()
        server = subprocess.Popen(
            [*cores, redis_server, "--port", str(port), "--bind", "127.0.0.1", "--save", ""],
            stdout=subprocess.DEVNULL,
            start_new_session=True,  # as a service of its own: the scheduler's share is its own
        )
        try:
            _wait_for(port)
            fill(port, keys)
            found = {}
            client = redis.Redis(port=port)
            for run, busy in (("quiet", False), ("busy", True)):
                redis_cpu = _cpu_seconds(client)
                kept = Path(folder) / run
                command = [*cores, sys.executable, "-c", PASS, str(port), str(kept), str(keys)]
                with contextlib.ExitStack() as stack:
                    if busy:
                        stack.enter_context(spinners())
                    out = subprocess.run(
                        command,
                        check=True,
                        capture_output=True,
                        cwd=REPO,
                        text=True,
                        start_new_session=True,  # the bridge's own service, likewise
                    ).stdout
                found[run] = json.loads(out)
                found[run]["redis_cpu"] = _cpu_seconds(client) - redis_cpu
        finally:
            server.terminate()
            server.wait(30)
    return found


def run(bench: Bench) -> list[Row]:
    keys = QUICK_KEYS if bench.config.quick else KEYS
    try:
        found = measure(keys)
    except FileNotFoundError:
        return [Note("redis-server missing: the bridge's propagation pass was not measured")]
    name = f"bridge over {keys:,} binv:* keys of {MEMBERS:,} members"
    quiet, busy = found["quiet"], found["busy"]
    return [
        Measure(
            Section.TARGETS,
            f"{name}: reading every block (passes back to back)",
            (quiet["all_seconds"],),
            Unit.S,
            2,
            limits=(SECONDS_LIMIT,),
            details=f"{_passes(quiet)}; Redis and the bridge on cores {BOTH_CORES}",
        ),
        Measure(
            Section.TARGETS,
            f"{name}: the same, every core busy",
            (busy["all_seconds"],),
            Unit.S,
            2,
            details=f"{_passes(busy)}; one `while True: pass` per core at nice 0",
        ),
        Measure(
            Section.TARGETS,
            f"{name}: a pass once every block is kept and none changed",
            (quiet["steady_seconds"],),
            Unit.S,
            2,
        ),
        Measure(
            Section.TARGETS,
            f"{name}: peak memory of the bridge",
            (max(quiet["peak_mib"], busy["peak_mib"]),),
            Unit.MIB,
            0,
            limits=(MB_LIMIT,),
        ),
    ]


def _passes(result: dict[str, float]) -> str:
    return (
        f"{result['passes']:.0f} passes; the first, bounded, took {result['seconds']:.2f} s "
        f"and kept {result['first_keys']:.0f} blocks; Redis used {result['redis_cpu']:.2f} s "
        "of CPU"
    )


def _cpu_seconds(client: redis.Redis) -> float:
    """The CPU time redis-server has used: its own work, which no bridge can take off it."""
    cpu = client.info("cpu")
    return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])


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
