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

import logging
import time
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import redis

from ..crawl.address import AddressError
from ..crawl.propagation import (
    BLOCK_HASH,
    CELL_BYTES,
    MAX_CELL_VALUE,
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
from .redis_values import Skips, decoded, whole

log = logging.getLogger(__name__)
MAX_KEYS_PER_PASS = 100_000  # of each kind; the rest waits for the next pass
BLOCKS_BUDGET = 4.0  # seconds of block reading per pass; the rest waits for the next pass
SCAN_COUNT = 1000
PUSHED_SLACK_MS = 1000  # an expiry later by more than this is a new push
DAY_MS = 86_400_000
MAX_RTT_MS = 3_600_000  # a round-trip time past an hour is no ping's; below 0, none at all
MAX_ROW_BYTES = 4096  # of an opendata member: a node's row, its user agent the longest part


class HeldRow(msgspec.Struct, array_like=True):
    """The start of an ``opendata`` member: ``[address, port, ...]``."""

    address: str
    port: int


HELD_ROW = msgspec.json.Decoder(HeldRow)


class Collector:
    """Reads ``binv:*``, ``rtt:*`` and ``opendata`` each pass; keeps them in ``folder``."""

    def __init__(
        self, client: redis.Redis, folder: Path, max_age_days: int, max_blocks: int
    ) -> None:
        self.client, self.folder = client, folder
        self.max_age_ms, self.max_blocks = max_age_days * DAY_MS, max_blocks
        self.stats = BlockStats(client)
        self.skips = Skips(log)
        self._counts: dict[str, int] = {}  # announcements of each binv: key when last read
        self._blocks: dict[str, Block] | None = None
        self._unwritten = False  # blocks changed in memory, not yet in the file
        self._latency: LatencyFile | None = None  # as last read or merged
        self._latency_unwritten = False

    def collect(self, now: float) -> None:
        """One pass: read Redis, merge, write what changed. RedisError and OSError go to
        the caller, which retries; what was kept stays as it was. What the pass skipped is
        logged as it ends.

        Args:
            now: the pass's time, unix seconds.
        """
        try:
            self._collect(now)
        finally:
            self.skips.report()

    def _collect(self, now: float) -> None:
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
        seen: set[str] = set()  # the blocks whose keys this pass found
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
                    self.skips.skip("skipped binv: keys, no sorted set of a block hash", key)
                    continue
                seen.add(block_hash)
                if count != self._counts.get(block_hash):
                    wanted[key] = block_hash, count
            triples = [(key, block_hash, count) for key, (block_hash, count) in wanted.items()]
            for key, block in self.stats.read(triples, self.skips, deadline):
                block_hash, count = wanted[key]
                self._counts[block_hash] = count
                kept = self._blocks.get(block_hash)
                if block is not None and (kept is None or block.nodes >= kept.nodes):
                    changed = changed or block != kept
                    self._blocks[block_hash] = block
        # The counts of keys gone are forgotten (bitnodes lets each expire, and a peer may
        # announce any number of hashes of no block): they stay as many as Redis's keys.
        self._counts = {h: n for h, n in self._counts.items() if h in seen}
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
                sample = self._rtt_sample(key, newest, ttl)
                if sample is None:
                    continue
                address, rtt = sample
                expiry = now_ms + int(ttl)
                if expiry <= expires.get(address, 0) + PUSHED_SLACK_MS:
                    continue  # no push since it was last read
                expires[address] = expiry
                count, total = current.get(address, (0, 0))
                current[address] = (count + 1, total + rtt)
        for address, (count, total) in current.items():
            updated = self._with_cell(nodes.get(address, b""), address, bucket, count, total)
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

    def _with_cell(self, packed: bytes, address: str, bucket: int, count: int, total: int) -> bytes:
        """A node's cells with this pass's samples added to the current cell; a cell whose
        sum would outgrow its 32-bit integer keeps what it has."""
        last = array("i", packed[-CELL_BYTES:]) if packed else None
        if last is not None and last[0] == bucket:
            packed, count, total = packed[:-CELL_BYTES], count + last[1], total + last[2]
        if total > MAX_CELL_VALUE:
            self.skips.skip("round-trip times skipped: their 10-minute cell is full", address)
            return packed + (last.tobytes() if last is not None and last[0] == bucket else b"")
        return packed + array("i", (bucket, count, total)).tobytes()

    def _rtt_sample(self, key: bytes, newest: Any, ttl: Any) -> tuple[str, int] | None:
        """The canonical address of an ``rtt:`` key and its newest round-trip time, when
        that is a whole number of ms from 0 to MAX_RTT_MS and the key has an expiry."""
        if isinstance(newest, Exception) or isinstance(ttl, Exception):
            self.skips.skip("skipped rtt: keys, no list", key)
            return None
        if newest is None:
            return None  # gone since the SCAN
        rtt = whole(newest, 0, MAX_RTT_MS)
        if rtt is None:
            self.skips.skip("skipped rtt: keys, no round-trip time in bounds", key, (key, newest))
            return None
        if not isinstance(ttl, int) or ttl < 0:
            return None  # no expiry: no key cache_inv wrote
        try:
            return bitnodes_member(key[4:].decode()), rtt
        except (AddressError, UnicodeDecodeError):
            self.skips.skip("skipped rtt: keys, no address", key)
            return None

    def _held(self) -> Iterator[str]:
        """The nodes ping.py is connected to: ``opendata`` members, JSON arrays that start
        with the address and the port."""
        if self.client.type("opendata") != b"zset":
            return
        for member in self.client.zrange("opendata", 0, MAX_KEYS_PER_PASS - 1):
            row = decoded(member, HELD_ROW, MAX_ROW_BYTES)  # type: ignore[arg-type]  # bytes
            try:
                if row is None:
                    raise AddressError("not [address, port, ...]")
                yield bitnodes_member(f"{row.address}-{row.port}")
            except AddressError:
                self.skips.skip("skipped opendata members, not [address, port, ...]", member)

    def _scan(self, pattern: str) -> Iterator[bytes]:
        """Keys matching ``pattern``, at most MAX_KEYS_PER_PASS, SCAN by SCAN."""
        for seen, key in enumerate(self.client.scan_iter(match=pattern, count=SCAN_COUNT)):
            if seen >= MAX_KEYS_PER_PASS:
                self.skips.skip(f"more than {seen} {pattern} keys; the rest wait", pattern)
                return
            yield key


def _batches(keys: Iterator[bytes], size: int = SCAN_COUNT) -> Iterator[list[bytes]]:
    batch: list[bytes] = []
    for key in keys:
        batch.append(key)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
