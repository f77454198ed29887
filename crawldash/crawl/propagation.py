"""The bitnodes bridge's kept propagation and latency files: their shapes, reading and
writing, and the latency buckets.

bitnodes' own Redis forgets a block's announcements (``binv:<hash>``) and a node's
round-trip times (``rtt:<address>-<port>``) after three hours. The bridge
(``bridge/propagation.py``) keeps what it reads in two files of its own, ``blocks.msgpack``
and ``latency.msgpack``, and ``crawldash serve --propagation-dir`` serves them. Both sides
use the shapes here, so that what one writes the other reads.

A node's latency is kept as 10-minute cells ``(bucket, count, sum)`` of 32-bit integers
(``bucket`` is unix seconds // 600; a cell with ``count`` 0 says the node was held by
bitnodes' ``ping.py``, so reachable, but gave no round-trip time). As cells age they are
merged into hours (after a day) and six hours (after a week), which is all the weekly and
monthly views need, so that a node costs a few kilobytes however long it is kept. The
10-minute buckets in which the bridge looked at all are kept beside them: a node with no
cell in a bucket that was looked at was unreachable, while nothing can be said of a
bucket nobody looked at.

The serving side reads the files as it reads crawler files (``files.read_file``: regular
files only, opened without blocking, up to a size), the largest the bridge can write:
``BLOCKS_MAX_BYTES`` and ``LATENCY_MAX_BYTES``.

The values follow bitnodes.io's API page: ``v`` is the mean round-trip time, ``-1`` where
the node was unreachable, and ``0`` where it was reachable but gave no round-trip time
(and, here, where the bridge was not looking).
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

import msgspec

from .address import MAX_ADDRESS_LENGTH, AddressError, canonical_address
from .atomic import write_atomically
from .files import LoadError, read_file

BLOCKS_FILE = "blocks.msgpack"
LATENCY_FILE = "latency.msgpack"
CELL_BYTES = 12  # bucket, count and sum, each a 32-bit integer
MAX_CELL_VALUE = 2**31 - 1  # of a cell's count and sum
HEAD_SIZE = 10  # announcements in a block's head, as bitnodes.io shows
CURVE_STEPS = 20  # a block's curve: its delays at every 5% of the nodes that announced it
TEN_MINUTES = 600
BUCKET_UNITS = {"daily": 1, "weekly": 6, "monthly": 36}  # in 10-minute buckets
BUCKETS_SHOWN = {"daily": 144, "weekly": 168, "monthly": 120}  # a day, a week, 30 days
HOUR_AFTER = 144  # 10-minute buckets: a day; older cells are merged into hours
SIX_HOURS_AFTER = 1008  # a week; older cells are merged into six hours
LATENCY_KEPT = 4320  # 30 days: the monthly view's reach; older cells are dropped
MAX_BLOCKS = 1_000_000  # the highest --max-blocks of the bridge (settings/bridge.py)
MAX_LATENCY_NODES = 100_000  # far more than bitnodes holds over the 30 days kept
BLOCK_HASH = re.compile(r"[0-9a-f]{64}")
T = TypeVar("T")


class Block(msgspec.Struct, frozen=True, array_like=True):
    """What is kept of one block's announcements: the earliest time (ms since the epoch),
    how many nodes announced it, the delay statistics in ms after the earliest (the
    earliest included, at 0) and the first announcements, earliest first. ``curve`` is
    the delay (ms, rounded) by which each 5% of the nodes had announced it, 0% to 100%,
    for the block's ECDF; files written before it was kept have none."""

    hash: str
    first_seen: int
    nodes: int
    max: float
    mean: float
    std: float
    p50: float
    p90: float
    head: list[tuple[str, int]]
    curve: list[int] = []


class BlocksFile(msgspec.Struct, frozen=True):
    written_at: int
    blocks: list[Block]


class LatencyFile(msgspec.Struct, frozen=True):
    """``as_of`` is the 10-minute bucket of the last pass: the views end there. ``nodes``
    maps a canonical address to its cells, packed; ``expires`` to the expiry (ms) of its
    ``rtt:`` key when last read, so that a sample is not counted twice across restarts;
    ``looked`` the buckets of the last 30 days in which the bridge made a pass."""

    as_of: int
    nodes: dict[str, bytes]
    expires: dict[str, int]
    looked: bytes = b""  # the 10-minute buckets with a pass, packed 32-bit integers, sorted


class BlockRecords(msgspec.Struct, frozen=True):
    """The blocks file with each block left encoded, to be decoded a few at a time."""

    written_at: int
    blocks: list[msgspec.Raw]


def _largest_block() -> int:
    """The most bytes one block takes in the file: the longest values in every field."""
    head = [("x" * MAX_ADDRESS_LENGTH, -(2**63))] * HEAD_SIZE
    huge = -(2**63)
    curve = [huge] * (CURVE_STEPS + 1)
    largest = Block("f" * 64, huge, huge, 0.0, 0.0, 0.0, 0.0, 0.0, head, curve)
    return len(msgspec.msgpack.encode(largest))


def _largest_node() -> tuple[int, int]:
    """The most bytes a latency file takes with no node, and for each node: every cell
    30 days of compaction keep (a part-filled hour and six hours, and the current cell,
    beside the merged ones) and the expiry of its ``rtt:`` key."""
    kept_cells = (
        HOUR_AFTER
        + (SIX_HOURS_AFTER - HOUR_AFTER) // BUCKET_UNITS["weekly"]
        + (LATENCY_KEPT - SIX_HOURS_AFTER) // BUCKET_UNITS["monthly"]
        + 3
    )
    looked, address = bytes(4 * LATENCY_KEPT), "x" * MAX_ADDRESS_LENGTH
    empty = len(msgspec.msgpack.encode(LatencyFile(-(2**31), {}, {}, looked)))
    nodes, expires = {address: bytes(CELL_BYTES * kept_cells)}, {address: -(2**63)}
    one = len(msgspec.msgpack.encode(LatencyFile(-(2**31), nodes, expires, looked)))
    return empty + 16, one - empty  # 16: room for the maps' longer headers


_block_decoder = msgspec.msgpack.Decoder(Block)
BLOCKS_MAX_BYTES = 64 + MAX_BLOCKS * _largest_block()  # 64: the file's own fields
_NO_NODE, _NODE = _largest_node()
LATENCY_MAX_BYTES = _NO_NODE + MAX_LATENCY_NODES * _NODE


def bitnodes_member(member: str) -> str:
    """The canonical ``host:port`` of a bitnodes ``<address>-<port>`` (IPv6 unbracketed),
    or AddressError."""
    host, dash, port = member.rpartition("-")
    if not dash or not host or not port.isdigit() or len(port) > 5:
        raise AddressError(f"{member[:60]!r} is not ADDRESS-PORT")
    return canonical_address(host.strip("[]"), int(port))


def read_blocks(folder: Path) -> BlocksFile | None:
    """The kept blocks; None when there is no file. ValueError for a broken one."""
    return _read(folder / BLOCKS_FILE, BlocksFile, BLOCKS_MAX_BYTES)


def read_block_records(folder: Path, max_size: int = BLOCKS_MAX_BYTES) -> BlockRecords | None:
    """The kept blocks, each still encoded: splitting the file is quick, while decoding it
    whole would hold the interpreter lock for as long as a large file takes.

    Args:
        folder: the propagation folder.
        max_size: the most bytes read; a larger file is refused.

    Returns:
        The records (decode each with ``block_of``), or None when there is no file.
        ValueError for a broken or refused file, OSError for one that cannot be read.
    """
    return _read(folder / BLOCKS_FILE, BlockRecords, max_size)


def block_of(record: msgspec.Raw) -> Block:
    """One block of ``read_block_records``; ValueError if it is broken."""
    try:
        return _block_decoder.decode(record)
    except msgspec.DecodeError as exc:
        raise ValueError(f"{BLOCKS_FILE}: {exc}") from None


def read_latency(folder: Path, max_size: int = LATENCY_MAX_BYTES) -> LatencyFile | None:
    """The kept latency; None when there is no file. ValueError for a broken or refused
    one (over ``max_size`` bytes, or not a regular file), OSError for an unreadable one."""
    return _read(folder / LATENCY_FILE, LatencyFile, max_size)


def _read(path: Path, kind: type[T], max_size: int) -> T | None:
    """``path`` decoded as ``kind``, read as crawler files are: a FIFO or a device is
    refused, not waited on or read without end."""
    try:
        data, _ = read_file(path, max_size)
    except FileNotFoundError:
        return None
    except LoadError as exc:
        if exc.kind == "unreadable":  # passing, maybe: the bridge tries again, not afresh
            raise OSError(f"{path}: {exc}") from None
        raise ValueError(f"{path}: {exc}") from None
    try:
        return msgspec.msgpack.decode(data, type=kind)
    except msgspec.DecodeError as exc:
        raise ValueError(f"{path}: {exc}") from None


def write_blocks(folder: Path, kept: BlocksFile) -> None:
    write_atomically(folder / BLOCKS_FILE, msgspec.msgpack.encode(kept))


def write_latency(folder: Path, kept: LatencyFile) -> None:
    write_atomically(folder / LATENCY_FILE, msgspec.msgpack.encode(kept))


def cells(packed: bytes) -> Iterator[tuple[int, int, int]]:
    """``(bucket, count, sum)`` of a node's packed cells, oldest first."""
    values = array("i")
    values.frombytes(packed)
    for i in range(0, len(values) - 2, 3):
        yield values[i], values[i + 1], values[i + 2]


def pack(kept: dict[int, tuple[int, int]]) -> bytes:
    """Cells by bucket, packed oldest first."""
    values = array("i")
    for bucket in sorted(kept):
        count, total = kept[bucket]
        values.extend((bucket, count, total))
    return values.tobytes()


def compacted(packed: bytes, now_bucket: int) -> dict[int, tuple[int, int]]:
    """A node's cells with those over a day old merged into hours, those over a week old
    into six hours, and those older than 30 days dropped: exact, as sums and counts merge,
    but where a merged one would outgrow its 32-bit integers (``_fitted``)."""
    merged: dict[int, tuple[int, int]] = {}
    for bucket, count, total in cells(packed):
        age = now_bucket - bucket
        if age >= LATENCY_KEPT:
            continue
        if age >= SIX_HOURS_AFTER:
            bucket -= bucket % BUCKET_UNITS["monthly"]
        elif age >= HOUR_AFTER:
            bucket -= bucket % BUCKET_UNITS["weekly"]
        had_count, had_total = merged.get(bucket, (0, 0))
        merged[bucket] = _fitted(had_count + count, had_total + total)
    return merged


def _fitted(count: int, total: int) -> tuple[int, int]:
    """A merged cell within a 32-bit integer each: past it (cells full of the longest
    round-trip times, merged), as few samples as fit, of the same mean, which is what a
    cell is read for."""
    if count <= MAX_CELL_VALUE and total <= MAX_CELL_VALUE:
        return count, total
    if count <= 0:  # no sample: no mean to keep (the bridge writes no such cell)
        return max(count, 0), MAX_CELL_VALUE
    fewer = max(1, count * MAX_CELL_VALUE // max(total, count))
    return fewer, min(MAX_CELL_VALUE, total * fewer // count)


def with_look(looked: bytes, bucket: int) -> bytes:
    """``looked`` with ``bucket`` added and those past the monthly view's reach dropped."""
    buckets = array("i")
    buckets.frombytes(looked)
    kept = array("i", (b for b in buckets if bucket - b < LATENCY_KEPT and b != bucket))
    kept.append(bucket)
    return kept.tobytes()


def latency_series(
    packed: bytes, as_of: int, looked: bytes = b""
) -> dict[str, list[tuple[int, int]]]:
    """The daily, weekly and monthly views of a node's cells, each ``(t, v)`` oldest first,
    ending with the bucket that holds ``as_of``: ``v`` is the mean round-trip time in ms
    (rounded half to even); 0 where the node was reachable (held) but gave none, or where
    no pass looked; -1 where a pass looked and the node was neither held nor answered."""
    views: dict[str, list[tuple[int, int]]] = {}
    known = list(cells(packed))
    passes = array("i")
    passes.frombytes(looked)
    for view, units in BUCKET_UNITS.items():
        last = as_of - as_of % units
        first = last - (BUCKETS_SHOWN[view] - 1) * units
        sums: dict[int, tuple[int, int]] = {}
        for bucket, count, total in known:
            start = bucket - bucket % units
            if first <= start <= last:
                had_count, had_total = sums.get(start, (0, 0))
                sums[start] = (had_count + count, had_total + total)
        seen = {bucket - bucket % units for bucket in passes}
        series = []
        for start in range(first, last + 1, units):
            if start in sums:
                count, total = sums[start]
                value = round(total / count) if count else 0
            else:
                value = -1 if start in seen else 0
            series.append((start * TEN_MINUTES, value))
        views[view] = series
    return views
