"""The bitnodes bridge's collection of block propagation and node latency, from bitnodes'
Redis into files of its own that outlive Redis' three hours.

bitnodes' ``ping.py`` keeps ``binv:<hash>`` sorted sets (member ``<address>-<port>``, IPv6
unbracketed; score the ms since the epoch of the node's first ``inv`` of the block) and
``cache_inv.py`` keeps ``rtt:<address>-<port>`` lists of round-trip times in ms, newest
first; both expire three hours after their last write. ``opendata`` holds the nodes
``ping.py`` is connected to (taken from the latest crawl).

Each pass walks the keys with SCAN (never KEYS), at most ``MAX_KEYS_PER_PASS`` of each, so
Redis is never blocked for long. A block is read again only when its count of announcements
changed (``block_stats.py`` reads it). What a pass read is merged into what is kept: a
block keeps its record with the most announcements (so a Redis that restarts empty loses
nothing), and a node's new round-trip time is seen as its ``rtt:`` key's expiry moving
forward (cache_inv renews it on every push).

The latency file holds every node's cells for 30 days, so it is written once per 10-minute
bucket (when the first pass of a new bucket finds the last one complete) and when the
bridge stops, not on every pass: a bridge killed without warning loses at most the bucket
it was filling, and the serving side, which reads the whole file, rereads it as rarely.
"""

from __future__ import annotations

import json
import logging
import time
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import redis

from ..crawl.address import AddressError
from ..crawl.propagation import (
    BLOCK_HASH,
    CELL_BYTES,
    TEN_MINUTES,
    Block,
    BlocksFile,
    LatencyFile,
    bitnodes_member,
    compacted,
    pack,
    read_blocks,
    read_latency,
    with_look,
    write_blocks,
    write_latency,
)
from .block_stats import BlockStats

log = logging.getLogger(__name__)
MAX_KEYS_PER_PASS = 100_000  # of each kind; the rest waits for the next pass
BLOCKS_BUDGET = 4.0  # seconds of block reading per pass; the rest waits for the next pass
SCAN_COUNT = 1000
PUSHED_SLACK_MS = 1000  # an expiry later by more than this is a new push
DAY_MS = 86_400_000


class Collector:
    """Reads ``binv:*``, ``rtt:*`` and ``opendata`` each pass; keeps them in ``folder``."""

    def __init__(
        self, client: redis.Redis, folder: Path, max_age_days: int, max_blocks: int
    ) -> None:
        self.client, self.folder = client, folder
        self.max_age_ms, self.max_blocks = max_age_days * DAY_MS, max_blocks
        self.stats = BlockStats(client)
        self._said: set[str] = set()
        self._counts: dict[str, int] = {}  # announcements of each binv: key when last read
        self._blocks: dict[str, Block] | None = None
        self._unwritten = False  # blocks changed in memory, not yet in the file
        self._latency: LatencyFile | None = None  # as last read or merged
        self._latency_unwritten = False

    def collect(self, now: float) -> None:
        """One pass: read Redis, merge, write what changed. RedisError and OSError go to
        the caller, which retries; what was kept stays as it was."""
        self._load()
        assert self._blocks is not None
        changed = self._collect_blocks()
        cutoff = int(now * 1000) - self.max_age_ms
        expired = [h for h, block in self._blocks.items() if block.first_seen < cutoff]
        for block_hash in expired:
            del self._blocks[block_hash]
        if len(self._blocks) > self.max_blocks:
            newest = sorted(self._blocks.values(), key=lambda b: b.first_seen)[-self.max_blocks :]
            self._blocks = {block.hash: block for block in newest}
            changed = True
        self._unwritten = self._unwritten or changed or bool(expired)
        if self._unwritten:
            newest_first = sorted(self._blocks.values(), key=lambda b: (-b.first_seen, b.hash))
            write_blocks(self.folder, BlocksFile(int(now), newest_first))
            self._unwritten = False
        self._collect_latency(now)

    def _load(self) -> None:
        """What was kept, read once per run; a broken file is logged and started afresh."""
        if self._blocks is not None:
            return
        try:
            blocks = read_blocks(self.folder)
        except ValueError as exc:
            log.warning("kept blocks unreadable, starting afresh: %s", exc)
            blocks = None
        try:
            self._latency = read_latency(self.folder)
        except ValueError as exc:
            log.warning("kept latency unreadable, starting afresh: %s", exc)
        self._blocks = {block.hash: block for block in blocks.blocks} if blocks else {}

    def _collect_blocks(self) -> bool:
        """Read each new or changed block, until BLOCKS_BUDGET is spent: a backlog (a first
        start beside a full Redis) is then read over a few passes, never one long one."""
        assert self._blocks is not None
        changed, deadline = False, time.monotonic() + BLOCKS_BUDGET
        for keys in _batches(self._scan("binv:*")):
            if time.monotonic() > deadline:
                break
            pipe = self.client.pipeline(transaction=False)
            for key in keys:
                pipe.zcard(key)
            wanted: dict[bytes, tuple[str, int]] = {}  # key -> its hash and count
            for key, count in zip(keys, pipe.execute(raise_on_error=False), strict=True):
                block_hash = key[5:].decode(errors="replace").lower()
                if isinstance(count, Exception) or not BLOCK_HASH.fullmatch(block_hash):
                    self._once(f"key:{key!r}", "skipped %r: not a sorted set of a block hash", key)
                elif count != self._counts.get(block_hash):
                    wanted[key] = block_hash, count
            pairs = [(key, block_hash) for key, (block_hash, _) in wanted.items()]
            for key, block in self.stats.read(pairs, self._once, deadline):
                block_hash, count = wanted[key]
                self._counts[block_hash] = count
                kept = self._blocks.get(block_hash)
                if block is not None and (kept is None or block.nodes >= kept.nodes):
                    changed = changed or block != kept
                    self._blocks[block_hash] = block
        return changed

    def _collect_latency(self, now: float) -> None:
        """This pass's round-trip times and held nodes, added to the current 10-minute
        cell of each node (the last of its packed cells); the whole is compacted once per
        new bucket, not per pass."""
        now_ms, bucket = int(now * 1000), int(now) // TEN_MINUTES
        kept = self._latency
        nodes = dict(kept.nodes) if kept else {}
        expires = dict(kept.expires) if kept else {}
        new_bucket = changed = kept is None or kept.as_of != bucket
        looked = with_look(kept.looked if kept else b"", bucket)
        if kept is not None and new_bucket:
            nodes = {a: pack(compacted(p, bucket)) for a, p in nodes.items()}
            nodes = {a: p for a, p in nodes.items() if p}
            expires = {a: e for a, e in expires.items() if e > now_ms}
        current: dict[str, tuple[int, int]] = dict.fromkeys(self._held(), (0, 0))
        for keys in _batches(self._scan("rtt:*")):
            pipe = self.client.pipeline(transaction=False)
            for key in keys:
                pipe.lindex(key, 0)
                pipe.pttl(key)
            replies = pipe.execute(raise_on_error=False)
            for key, newest, ttl in zip(keys, replies[::2], replies[1::2], strict=True):
                address = self._rtt_address(key, newest, ttl)
                if address is None or not isinstance(ttl, int) or ttl < 0:
                    continue
                expiry = now_ms + ttl
                if expiry <= expires.get(address, 0) + PUSHED_SLACK_MS:
                    continue  # no push since it was last read
                expires[address] = expiry
                count, total = current.get(address, (0, 0))
                current[address] = (count + 1, total + int(newest))
        for address, (count, total) in current.items():
            packed = nodes.get(address, b"")
            last = array("i", packed[-CELL_BYTES:]) if packed else None
            if last is not None and last[0] == bucket:
                packed, count, total = packed[:-CELL_BYTES], count + last[1], total + last[2]
            updated = packed + array("i", (bucket, count, total)).tobytes()
            if updated != nodes.get(address):
                nodes[address], changed = updated, True
        if changed:
            self._latency = LatencyFile(bucket, nodes, expires, looked)
            self._latency_unwritten = True
        if new_bucket:
            self.flush()

    def flush(self) -> None:
        """Write the latency merged since the last write, if any (the bridge calls this
        as it stops). OSError goes to the caller; what is merged stays for the next try."""
        if self._latency_unwritten and self._latency is not None:
            write_latency(self.folder, self._latency)
            self._latency_unwritten = False

    def _rtt_address(self, key: bytes, newest: Any, ttl: Any) -> str | None:
        """The canonical address of an ``rtt:`` key whose newest value is a whole number."""
        try:
            if isinstance(newest, Exception) or isinstance(ttl, Exception):
                raise ValueError("not a list")
            if newest is None:
                return None
            int(newest)
            return bitnodes_member(key[4:].decode())
        except (ValueError, UnicodeDecodeError) as exc:
            self._once(f"key:{key!r}", "skipped %r: %s", key, exc)
            return None

    def _held(self) -> Iterator[str]:
        """The nodes ping.py is connected to: ``opendata`` members, JSON arrays that start
        with the address and the port."""
        if self.client.type("opendata") != b"zset":
            return
        for member in self.client.zrange("opendata", 0, MAX_KEYS_PER_PASS - 1):
            try:
                row = json.loads(member)  # type: ignore[arg-type]  # bytes, without decoding
                yield bitnodes_member(f"{row[0]}-{int(row[1])}")
            except (ValueError, TypeError, IndexError, KeyError, AddressError):
                self._once(
                    "opendata", "opendata member %r skipped: not [address, port, ...]", member
                )

    def _scan(self, pattern: str) -> Iterator[bytes]:
        """Keys matching ``pattern``, at most MAX_KEYS_PER_PASS, SCAN by SCAN."""
        for seen, key in enumerate(self.client.scan_iter(match=pattern, count=SCAN_COUNT)):
            if seen >= MAX_KEYS_PER_PASS:
                self._once(f"many:{pattern}", "more than %d %s keys; the rest wait", seen, pattern)
                return
            yield key

    def _once(self, what: str, message: str, *args: object) -> None:
        if what not in self._said:
            self._said.add(what)
            log.warning(message, *args)


def _batches(keys: Iterator[bytes], size: int = SCAN_COUNT) -> Iterator[list[bytes]]:
    batch: list[bytes] = []
    for key in keys:
        batch.append(key)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
