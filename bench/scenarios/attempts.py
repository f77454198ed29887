"""The bitnodes bridge's record of each crawl's attempts (``bridge/attempts.py``): the CPU
of one crawl's final scan and keep over a Redis of 100,000 ``node:*`` keys (12,000 of them
in ``up``) among 50,000 other keys, in a process of its own; and the size on disk of 8,640
crawls (60 days) of 100,000 tried addresses kept in ``attempts.msgpack``.

How the crawls change is a model, not a measurement of bitnodes (its Redis keeps one crawl
at a time): each crawl tries the newest 100,000 addresses of a pool that grows by 300 a
crawl, less 1,000 left out at random, and reaches 10,000, of which 200 change a crawl.
Addresses left out at random are the costliest case for keeping each crawl as the
difference from the one before.

Run alone: ``python -m bench.scenarios.attempts`` (needs ``redis-server``).
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator

from pyroaring import BitMap

from bench.config import REPO
from bench.context import Bench
from bench.load import free_port
from bench.rows import Measure, Note, Row, Section, Unit
from bench.scenarios.bridge_propagation import _wait_for
from crawldash.crawl.attempts import (
    FORMAT,
    FullCrawl,
    KeptAttempts,
    Rules,
    encode_attempts,
    encode_crawls,
    pack_addresses,
)

KEYS, REACHED, OTHER_KEYS = 100_000, 12_000, 50_000
CRAWLS, QUICK_CRAWLS = 8640, 144
CPU_LIMIT = 2.0  # seconds of the bridge's CPU for one crawl
MB_LIMIT = 50.0

# One crawl's final scan and keep, in a child: the collector sees the crawl start, scans
# once pending is empty, then keeps it when elapsed moves on; prints its CPU seconds.
KEEP = """
import json, sys, time
from pathlib import Path
import redis
from crawldash.bridge.attempts import AttemptsCollector
client = redis.Redis(port=int(sys.argv[1]))
collector = AttemptsCollector(client, Path(sys.argv[2]), 60)
collector.collect(0.0)
client.set("crawl:master:state", "running")
started = time.process_time()
collector.collect(1.0)
client.lpush("elapsed", json.dumps([1700000600, 600]))
collector.collect(2.0)
print(json.dumps({"cpu": time.process_time() - started,
                  "bytes": (Path(sys.argv[2]) / "attempts.msgpack").stat().st_size}))
"""


def address(i: int) -> str:
    return f"{1 + i // 16_777_216}.{(i // 65_536) % 256}.{(i // 256) % 256}.{i % 256}"


def fill(port: int, keys: int) -> None:
    """A crawl's keys as crawl.py leaves them once pending is empty, among other keys."""
    import redis

    client = redis.Redis(port=port)
    pipe = client.pipeline(transaction=False)
    for i in range(keys):
        pipe.set(f"node:{address(i)}-8333-1033", "")
        if i < keys * REACHED // KEYS:
            pipe.sadd("up", f"node:{address(i)}-8333-1033")
    for i in range(keys * OTHER_KEYS // KEYS):
        pipe.set(f"height:{address(i)}-8333-1033", "900000")
    pipe.execute()
    client.set("crawl:master:state", "starting")
    client.lpush("elapsed", json.dumps([1_700_000_000, 600]))


def keep_cpu(keys: int) -> dict[str, float]:
    redis_server = shutil.which("redis-server")
    if redis_server is None:
        raise FileNotFoundError("redis-server")
    port = free_port()
    server = subprocess.Popen(
        [redis_server, "--port", str(port), "--bind", "127.0.0.1", "--save", ""],
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        _wait_for(port)
        fill(port, keys)
        with tempfile.TemporaryDirectory(prefix="crawldash-bench-") as folder:
            command = [sys.executable, "-c", KEEP, str(port), folder]
            out = subprocess.run(command, check=True, capture_output=True, cwd=REPO, text=True)
            return dict(json.loads(out.stdout))
    finally:
        server.terminate()
        server.wait(30)


def modelled(crawls: int, seed: int = 41) -> Iterator[FullCrawl]:
    rng = random.Random(seed)
    pool, reached = KEYS, list(range(10_000))
    for n in range(crawls):
        low = pool - KEYS
        tried = BitMap(range(low, pool)) - BitMap(rng.sample(range(low, pool), 1000))
        for _ in range(200):
            reached[rng.randrange(len(reached))] = rng.randrange(low, pool)
        yield FullCrawl(1_700_000_000 + 600 * n, True, tried, BitMap(reached), 0)
        pool += 300


def kept_bytes(crawls: int) -> tuple[int, int]:
    """The file's size for ``crawls`` modelled crawls, and the addresses it names."""
    kept = list(encode_crawls(modelled(crawls)))
    pool = KEYS + 300 * crawls
    addresses = pack_addresses([f"{address(i)}:8333" for i in range(pool)])
    return len(encode_attempts(KeptAttempts(FORMAT, addresses, kept, [Rules()]))), pool


def run(bench: Bench) -> list[Row]:
    quick = bench.config.quick
    keys, crawls = (KEYS // 50, QUICK_CRAWLS) if quick else (KEYS, CRAWLS)
    rows: list[Row] = []
    try:
        found = keep_cpu(keys)
        rows.append(
            Measure(
                Section.TARGETS,
                f"bridge, one crawl's attempts: {keys:,} node:* keys scanned and kept, CPU",
                (found["cpu"],),
                Unit.S,
                2,
                limits=(CPU_LIMIT,),
                details=f"{keys * OTHER_KEYS // KEYS:,} other keys; one crawl's file "
                f"{found['bytes']:,.0f} bytes",
            )
        )
    except FileNotFoundError:
        rows.append(Note("redis-server missing: the bridge's attempts were not measured"))
    size, pool = kept_bytes(crawls)
    rows.append(
        Measure(
            Section.TARGETS,
            f"attempts.msgpack for {crawls:,} crawls of {KEYS:,} tried (modelled churn)",
            (size / 1e6,),
            Unit.MB,
            1,
            limits=(MB_LIMIT,),
            details=f"{pool:,} addresses; 1,000 left out at random and 200 reached changed "
            "a crawl (the costliest case)",
        )
    )
    return rows


if __name__ == "__main__":
    print(json.dumps({"keep": keep_cpu(KEYS), "bytes": kept_bytes(CRAWLS)[0]}))
