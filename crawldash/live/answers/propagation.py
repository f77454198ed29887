"""Block propagation and node latency, as the bitnodes bridge keeps them
(``crawl/propagation.py``), held with their bitnodes.io API v1 answers encoded once per
change of the kept files, not per request.

The folder is looked at with two ``stat`` calls per watcher tick; a changed file is read
and its answers built in a worker thread, then swapped in on the event loop. The blocks are
decoded one at a time as their answers are built, never in one call: a call into C holds
the interpreter lock until it returns, and the event loop would wait for a large file's.
Only regular files up to the largest the bridge writes are read, without blocking
(``crawl/propagation.py``): a FIFO, a device or an oversized file is refused. Every block's
``/api/v1/inv/<hash>/`` body and list row is built when the blocks file changes; a node's
latency body (a few hundred points) when first asked for, until the latency file changes.
A file that cannot be read or decoded is logged once per version and the last good data
stays in service.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from ...crawl.files import FileVersion, file_version
from ...crawl.propagation import (
    BLOCKS_FILE,
    CURVE_STEPS,
    LATENCY_FILE,
    Block,
    LatencyFile,
    block_of,
    latency_series,
    read_block_records,
    read_latency,
)

log = logging.getLogger(__name__)
MAX_LATENCY_BODIES = 4096  # node answers kept; past that the cache starts again
_encoder = msgspec.json.Encoder()


class InvStats(
    msgspec.Struct, frozen=True, omit_defaults=True, rename={"p50": "50%", "p90": "90%"}
):
    """bitnodes.io's ``stats``: ``head`` is the first announcements ``[address:port, ms]``,
    the rest are delays in ms after the earliest announcement. crawldash adds ``ecdf``:
    ``[delay, percent]`` by which each 5% of the nodes had announced the block (none for a
    block kept before the bridge kept it)."""

    head: list[tuple[str, int]]
    min: int
    max: int
    mean: float
    std: float
    p50: float
    p90: float
    ecdf: list[tuple[int, int]] = []


class InvBody(msgspec.Struct, frozen=True):
    inv_hash: str
    stats: InvStats


class InvItem(msgspec.Struct, frozen=True, rename={"p50": "50%", "p90": "90%"}):
    """A row of ``/api/v1/inv/``: bitnodes.io's ``inv_hash``, and crawldash's additions
    for a list view: when it was first announced (ms), by how many nodes, and the
    median and 90th-percentile delays (ms)."""

    inv_hash: str
    first_seen: int
    nodes: int
    p50: float
    p90: float


class InvList(msgspec.Struct, frozen=True):
    """``/api/v1/inv/``'s shape (the pages are joined from the rows, not encoded from it)."""

    count: int
    next: str | None
    previous: str | None
    results: list[InvItem]


class LatencyPoint(msgspec.Struct, frozen=True, array_like=False):
    t: int
    v: int


class LatencyBody(msgspec.Struct, frozen=True):
    daily_latency: list[LatencyPoint]
    weekly_latency: list[LatencyPoint]
    monthly_latency: list[LatencyPoint]


def _ms(value: float) -> float:
    return round(value, 3)


def inv_body(block: Block) -> bytes:
    stats = InvStats(
        [(address, ms) for address, ms in block.head],
        0,
        round(block.max),
        _ms(block.mean),
        _ms(block.std),
        _ms(block.p50),
        _ms(block.p90),
        _ecdf(block.curve),
    )
    return _encoder.encode(InvBody(block.hash, stats))


def _ecdf(curve: list[int]) -> list[tuple[int, int]]:
    """The curve as ``[delay, percent]`` points; none for a curve of another length (a
    file of another version), whose steps could not be named."""
    if len(curve) != CURVE_STEPS + 1:
        return []
    return [(delay, 100 * step // CURVE_STEPS) for step, delay in enumerate(curve)]


def latency_body(packed: bytes, as_of: int, looked: bytes) -> bytes:
    views = latency_series(packed, as_of, looked)
    points = {view: [LatencyPoint(t, v) for t, v in series] for view, series in views.items()}
    return _encoder.encode(LatencyBody(points["daily"], points["weekly"], points["monthly"]))


@dataclass
class Prepared:
    """One version of the kept blocks, answers encoded."""

    hashes: list[str] = field(default_factory=list)  # newest first
    rows: list[bytes] = field(default_factory=list)  # the list's rows, in that order
    bodies: dict[str, bytes] = field(default_factory=dict)  # /api/v1/inv/<hash>/


def prepare(blocks: Iterable[Block]) -> Prepared:
    """The answers of ``blocks``, newest first.

    Args:
        blocks: the kept blocks, newest first; a generator is taken one at a time.

    Returns:
        Their rows and bodies.
    """
    prepared = Prepared()
    for block in blocks:
        prepared.hashes.append(block.hash)
        item = InvItem(block.hash, block.first_seen, block.nodes, _ms(block.p50), _ms(block.p90))
        prepared.rows.append(_encoder.encode(item))
        prepared.bodies[block.hash] = inv_body(block)
    return prepared


@dataclass
class Loaded:
    """What a look at the folder found: new blocks and latency, or None where unchanged."""

    versions: tuple[FileVersion | None, FileVersion | None]
    blocks: Prepared | None = None
    latency: LatencyFile | None = None


class Propagation:
    """The kept propagation and latency of ``folder`` (None: there is none to serve)."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self.blocks = Prepared()
        self.latency: LatencyFile | None = None
        self.changes = 0  # counts swaps in, so that pages built from them are rebuilt
        self._versions: tuple[FileVersion | None, FileVersion | None] = (None, None)
        self._refused: set[tuple[str, FileVersion | None]] = set()
        self._latency_bodies: dict[str, bytes] = {}

    def look(self) -> Loaded | None:
        """Blocking: stat both files; read and prepare what changed. None if nothing did.
        A version that could not be read is not read again until it changes."""
        if self.folder is None:
            return None
        old_blocks, old_latency = self._versions
        blocks = file_version(self.folder / BLOCKS_FILE)
        latency = file_version(self.folder / LATENCY_FILE)
        loaded = Loaded((old_blocks, old_latency))
        if blocks != old_blocks and (BLOCKS_FILE, blocks) not in self._refused:
            try:
                kept = read_block_records(self.folder)
                records = kept.blocks if kept is not None else []
                loaded.blocks = prepare(block_of(record) for record in records)
                loaded.versions = (blocks, loaded.versions[1])
            except (OSError, ValueError) as exc:
                self._refuse(BLOCKS_FILE, blocks, exc)
        if latency != old_latency and (LATENCY_FILE, latency) not in self._refused:
            try:
                loaded.latency = read_latency(self.folder)
                loaded.versions = (loaded.versions[0], latency)
            except (OSError, ValueError) as exc:
                self._refuse(LATENCY_FILE, latency, exc)
        return None if loaded.versions == self._versions else loaded

    def take(self, loaded: Loaded) -> None:
        """On the event loop: swap in what ``look`` prepared."""
        old_blocks, old_latency = self._versions
        if loaded.versions[0] != old_blocks and loaded.blocks is not None:
            self.blocks = loaded.blocks
        if loaded.versions[1] != old_latency:
            self.latency = loaded.latency
            self._latency_bodies.clear()
        self._versions = loaded.versions
        self.changes += 1

    def latency_of(self, address: str) -> bytes | None:
        """The ``/latency/`` answer of a canonical address; None if nothing is kept."""
        body = self._latency_bodies.get(address)
        if body is None and self.latency is not None:
            packed = self.latency.nodes.get(address)
            if packed is None:
                return None
            if len(self._latency_bodies) >= MAX_LATENCY_BODIES:
                self._latency_bodies.clear()
            body = self._latency_bodies[address] = latency_body(
                packed, self.latency.as_of, self.latency.looked
            )
        return body

    def _refuse(self, name: str, version: FileVersion | None, exc: Exception) -> None:
        self._refused.add((name, version))
        log.warning("kept %s not read, the last good data stays in service: %s", name, exc)
