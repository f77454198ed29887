"""What bitnodes and its bridge would leave beside the demo's crawls: bitnodes' crawl files
(who completed a handshake), the bridge's kept attempts (who was tried, under which rules),
block propagation and node latency. Redis is what the demo does without: each crawl's,
block's and node's values are drawn here, then made and written by the code the bridge
uses (``crawl/blocks.py``, ``crawl/propagation.py``'s latency cells and writers,
``crawl/attempts.py``'s encoding and writer), so that the files are the bridge's own.
"""

from __future__ import annotations

import logging
import math
import random
from pathlib import Path

import msgspec
from pyroaring import BitMap

from ..crawl.atomic import write_atomically
from ..crawl.attempts import (
    FORMAT,
    FullCrawl,
    KeptAttempts,
    Rules,
    encode_crawls,
    pack_addresses,
    write_attempts,
)
from ..crawl.blocks import from_announcements
from ..crawl.breakdown import host_of
from ..crawl.propagation import (
    TEN_MINUTES,
    BlocksFile,
    LatencyFile,
    compacted,
    pack,
    with_look,
    write_blocks,
    write_latency,
)
from .fake_crawler import Crawl

log = logging.getLogger(__name__)
PAIRED_CRAWLS = 3  # the newest exports given a crawl file and attempts
CRAWL_LEAD = 45  # seconds from a crawl's file to the export taken after it
REACHED_NOT_HELD = 0.005  # of the crawl's nodes, more reached but not in the export
FAILED = 0.02  # tried and not reached
BLOCKS = 288  # two days of blocks
ANNOUNCERS = (1200, 2400)  # nodes that announce a block, at most the crawl's
LATENCY_DAYS = 3
LATENCY_EVERY = 12  # one node in this many of the newest crawl has its latency kept
DAY_BUCKETS = 86_400 // TEN_MINUTES


def write_bridge(bridge_dir: Path, crawl_dir: Path, kept: list[Crawl], seed: int) -> None:
    """The bridge's folder and bitnodes' crawl folder for the crawls written as files.

    Args:
        bridge_dir: the bridge's folder (``--propagation-dir``).
        crawl_dir: bitnodes' crawl folder (``--crawl-dir``).
        kept: the crawls written as files, oldest first.
        seed: of the draws, as the crawls'.
    """
    if not kept:
        return
    rng = random.Random(seed)
    for folder in (bridge_dir, crawl_dir):
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.json"):
            old.unlink()
    write_attempts(bridge_dir, _attempts(rng, crawl_dir, kept[-PAIRED_CRAWLS:]))
    newest = kept[-1]
    addresses = newest.addresses()
    blocks = []
    for number in range(BLOCKS):
        first_seen = (newest.timestamp - number * TEN_MINUTES - rng.randrange(TEN_MINUTES)) * 1000
        block_hash = "0" * 19 + f"{rng.getrandbits(180):045x}"
        members, scores = _announcements(rng, addresses, first_seen)
        blocks.append(from_announcements(block_hash, members, scores))
    blocks.sort(key=lambda block: (-block.first_seen, block.hash))
    write_blocks(bridge_dir, BlocksFile(newest.timestamp, blocks))
    write_latency(bridge_dir, _latency(rng, addresses[::LATENCY_EVERY], newest.timestamp))


def _attempts(rng: random.Random, crawl_dir: Path, crawls: list[Crawl]) -> KeptAttempts:
    """Each crawl's file in ``crawl_dir`` and its attempts, as the bridge keeps them: its
    nodes and a few more reached, some tried and failed, two hosts excluded by a rule."""
    pool = crawls[-1].pool
    positions: dict[str, int] = {}
    full, rules = [], []
    for crawl in crawls:
        members = set(crawl.members)
        away = [i for i in range(len(pool)) if i not in members]
        rng.shuffle(away)
        extra = max(1, int(len(members) * REACHED_NOT_HELD))
        failed = max(1, int(len(members) * FAILED))
        reached = [*crawl.members, *away[:extra]]
        tried = [*reached, *away[extra : extra + failed]]
        excluded = away[extra + failed : extra + failed + 2]
        rules.append(Rules(exclude_nodes=sorted(host_of(pool[i].address) for i in excluded)))
        timestamp = crawl.timestamp - CRAWL_LEAD
        rows = msgspec.json.decode(b"[" + b",".join(map(crawl.row_of, reached)) + b"]")
        crawl_only = [[row[0], row[1], row[5], row[6]] for row in rows]  # bitnodes' crawl form
        write_atomically(crawl_dir / f"{timestamp}.json", msgspec.json.encode(crawl_only))
        for group in (reached, tried):  # reached first, as the bridge numbers them
            for address in sorted(pool[i].address for i in group):
                positions.setdefault(address, len(positions))
        tried_at = BitMap(positions[pool[i].address] for i in tried)
        reached_at = BitMap(positions[pool[i].address] for i in reached)
        full.append(FullCrawl(timestamp, True, tried_at, reached_at, len(rules) - 1))
    addresses = sorted(positions, key=positions.__getitem__)
    return KeptAttempts(FORMAT, pack_addresses(addresses), list(encode_crawls(full)), rules)


def _announcements(
    rng: random.Random, addresses: list[str], first_seen: int
) -> tuple[list[bytes], list[float]]:
    """A block's ``binv:`` set: members as ping.py writes them (``address-port``, IPv6
    unbracketed), each with the ms of its first ``inv``, earliest first. Delays are
    log-normal around a median that moves from block to block."""
    count = min(len(addresses), rng.randint(*ANNOUNCERS))
    median = rng.uniform(700, 2500)
    spread = rng.uniform(0.8, 1.3)
    delays = sorted(
        [0.0] + [rng.lognormvariate(math.log(median), spread) for _ in range(count - 1)]
    )
    members = [
        f"{host_of(address)}-{address.rpartition(':')[2]}".encode()
        for address in rng.sample(addresses, count)
    ]
    return members, [first_seen + round(delay) for delay in delays]


def _latency(rng: random.Random, addresses: list[str], now: int) -> LatencyFile:
    """The kept round-trip times of ``addresses`` over LATENCY_DAYS, in the bridge's cells,
    compacted as the bridge compacts them; a node now and then silent (unreachable)."""
    as_of = now // TEN_MINUTES
    buckets = range(as_of - LATENCY_DAYS * DAY_BUCKETS + 1, as_of + 1)
    looked = b""
    for bucket in buckets:
        looked = with_look(looked, bucket)
    nodes, expires = {}, {}
    for address in addresses:
        typical = rng.lognormvariate(math.log(600 if ".onion" in address else 90), 0.5)
        cells: dict[int, tuple[int, int]] = {}
        draw = rng.random
        for bucket in buckets:
            # One draw a bucket (the demo's start waits on them): under 0.03 no answer in
            # these ten minutes, else its digits give the count (1-3) and the spread.
            roll = draw()
            if roll < 0.03:
                continue
            count = 1 + int(roll * 1000) % 3
            cells[bucket] = (count, round(count * typical * (0.7 + 0.9 * (roll * 97 % 1))))
        nodes[address] = pack(compacted(pack(cells), as_of))
        expires[address] = (now + 3 * 3600) * 1000
    return LatencyFile(as_of, nodes, expires, looked)
