"""What the bitnodes bridge keeps after 60 days beside a busy ping.py, written straight to
its files for the endpoints scenario: a block every 10 minutes, each with a full head,
and a month of round-trip times for the served node and 999 others."""

from __future__ import annotations

import random
from array import array
from pathlib import Path

from crawldash.crawl.propagation import (
    HEAD_SIZE,
    LATENCY_KEPT,
    TEN_MINUTES,
    Block,
    BlocksFile,
    LatencyFile,
    compacted,
    pack,
    write_blocks,
    write_latency,
)

BLOCKS = 8640  # 60 days, one block each 10 minutes
LATENCY_NODES = 1000


def write_kept(folder: Path, hit: str, now: int, seed: int = 5) -> str:
    """Write blocks.msgpack and latency.msgpack into ``folder``; the newest block's hash."""
    rng = random.Random(seed)
    bucket = now // TEN_MINUTES
    blocks = []
    for number in range(BLOCKS):
        first = (now - number * TEN_MINUTES) * 1000
        head = [(f"198.51.{i}.{number % 250 + 1}:8333", first + 37 * i) for i in range(HEAD_SIZE)]
        blocks.append(
            Block(
                f"{BLOCKS - number:064x}", first, 9000, 4200.0, 900.5, 610.25, 700.0, 2100.0, head
            )
        )
    write_blocks(folder, BlocksFile(now, blocks))
    addresses = [hit] + [f"203.0.{i // 250}.{i % 250 + 1}:8333" for i in range(LATENCY_NODES - 1)]
    # Ten month-long series shared out: a node's values do not change what an answer costs.
    series = []
    for _ in range(10):
        cells = {bucket - age: (1, rng.randrange(20, 400)) for age in range(LATENCY_KEPT)}
        series.append(pack(compacted(pack(cells), bucket)))
    nodes = {address: series[i % len(series)] for i, address in enumerate(addresses)}
    looked = array("i", range(bucket - LATENCY_KEPT + 1, bucket + 1)).tobytes()
    write_latency(folder, LatencyFile(bucket, nodes, {}, looked))
    return blocks[0].hash
