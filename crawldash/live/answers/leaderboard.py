"""The leaderboard: every reachable IPv4/IPv6 node of the crawl served ranked by its Peer
Index (``crawl/pix.py``), built once per crawl, off the request path.

A build starts on the first request about a crawl not built yet, and, once the board has
been asked for, as each crawl is announced (every answer about it taken in, its presence
too): a server whose leaderboard no one reads spends nothing on it. A request waits for
the build of the crawl served, never answers from an older one. The presence is counted on the
event loop in slices (it changes there); the rest, decoding the nodes' values, the
latency means, the indexes, the order and each row's JSON, runs in a worker thread on what
was gathered. The latency means are worked out once per version of the bridge's latency
file, and kept for the crawls after it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import msgspec

from ...crawl.pix import (
    DECIMALS,
    WINDOWS,
    CrawlFigures,
    Inputs,
    Means,
    indexes,
    peer_index,
    row_json,
    window_means,
)
from ...crawl.propagation import LatencyFile
from ...models import NodeRow
from ..snapshot.prepared import PreparedSnapshot
from ..stores.presence import Presence
from .propagation import Propagation

log = logging.getLogger(__name__)
RANKED = ("ipv4", "ipv6")
SLICE = 1024  # addresses counted between two yields to the event loop
Ticks = tuple[tuple[int, int], tuple[int, int], tuple[int, int]]


_row = msgspec.json.Decoder(NodeRow)  # a node's row as kept (array form), decoded as is


class Served(Protocol):
    """What the leaderboard reads of the state: the crawl served, its presence, and the
    listeners told of each crawl announced."""

    @property
    def snapshot(self) -> PreparedSnapshot | None: ...
    @property
    def presence(self) -> Presence: ...
    @property
    def listeners(self) -> list[Callable[[str], None]]: ...


@dataclass(frozen=True)
class Board:
    """One crawl's leaderboard: rows in rank order, each node's JSON row, and what q
    searches (address and user agent, lowercased)."""

    key: tuple[object, ...]  # the crawl it was built from, and the crawls counted then
    latency: LatencyFile | None  # the bridge's latency it was built with
    timestamp: int
    rows: list[bytes]
    texts: list[str]
    positions: dict[str, int]  # canonical address -> its row

    def row_of(self, address: str) -> bytes | None:
        position = self.positions.get(address)
        return None if position is None else self.rows[position]

    def matching(self, q: str | None) -> list[int]:
        """Positions of the rows whose address or user agent holds ``q`` (lowercased)."""
        if q is None:
            return list(range(len(self.rows)))
        return [i for i, text in enumerate(self.texts) if q in text]


@dataclass
class _Gathered:
    """What the event loop reads for a build, handed to the worker thread."""

    snapshot: PreparedSnapshot
    key: tuple[object, ...]  # the board's, as it was when gathered
    positions: list[int]  # the ranked nodes' positions in the catalog
    ticks: list[Ticks]
    latency: LatencyFile | None


@dataclass
class _LatencyMeans:
    source: LatencyFile | None = None
    means: dict[str, Means] = field(default_factory=dict)


class Leaderboard:
    """The leaderboard of the crawl ``served`` serves, with the latency ``propagation``
    keeps."""

    def __init__(self, served: Served, propagation: Propagation) -> None:
        self.served, self.propagation = served, propagation
        self.board: Board | None = None
        self.builds = 0  # counts builds done, for tests and the bench
        self.seconds = 0.0  # the last build's, from its start to its board served
        self._task: asyncio.Task[None] | None = None
        self._building: tuple[object, ...] | None = None
        self._means = _LatencyMeans()
        self._asked = False  # the board was asked for: each crawl's is built as it comes
        served.listeners.append(self._heard)

    def _heard(self, event: str) -> None:
        """A crawl announced: every answer about it taken in, its presence too."""
        snapshot = self.served.snapshot
        if not self._asked or event != "snapshot" or snapshot is None:
            return
        if not self._holds(snapshot):
            self._start(snapshot)

    async def current(self) -> Board | None:
        """The board of the crawl served, once built; None while no crawl is served.

        Raises:
            RuntimeError: the build of the crawl served failed (the log says why).
        """
        self._asked = True
        snapshot = self.served.snapshot
        if snapshot is None:
            return None
        if self._holds(snapshot):
            return self.board
        await asyncio.shield(self._start(snapshot))
        if self._holds(snapshot):
            return self.board
        if self.served.snapshot is not snapshot:  # a newer crawl came meanwhile: its board
            return await self.current()
        raise RuntimeError(f"the leaderboard of the crawl of {snapshot.timestamp} failed")

    def _holds(self, snapshot: PreparedSnapshot) -> bool:
        """Whether the board is of ``snapshot``, with the latency kept now."""
        board = self.board
        return (
            board is not None
            and board.key == self._key(snapshot)
            and board.latency is self.propagation.latency
        )

    def _key(self, snapshot: PreparedSnapshot) -> tuple[object, ...]:
        """What a board is of: the crawl, and how many of the crawls its uptimes count are
        held (older crawls are counted in the background after a start: a board built
        meanwhile is built again, on a request, once more of them are in)."""
        held = min(len(self.served.presence), max(WINDOWS))
        return (snapshot.timestamp, snapshot.version, held)

    def _start(self, snapshot: PreparedSnapshot) -> asyncio.Task[None]:
        """The build of ``snapshot``'s board: the one under way, or a new one, begun after
        the one before it ends (one build at a time)."""
        key = (*self._key(snapshot), id(self.propagation.latency))
        if self._task is not None and self._building == key:
            return self._task
        previous = self._task

        async def build() -> None:
            if previous is not None and not previous.done():
                await asyncio.wait([previous])
            try:
                await self._build(snapshot)
            except Exception:
                log.exception("leaderboard not built for the crawl of %d", snapshot.timestamp)

        self._task = asyncio.get_running_loop().create_task(build())
        self._building = key
        return self._task

    async def _build(self, snapshot: PreparedSnapshot) -> None:
        if self._holds(snapshot):
            return
        loop = asyncio.get_running_loop()
        started = loop.time()
        gathered = await self._gather(snapshot)
        board = await asyncio.to_thread(self._assemble, gathered)
        self.board = board
        self.builds += 1
        self.seconds = loop.time() - started
        log.info(
            "leaderboard built timestamp=%d nodes=%d seconds=%.3f",
            board.timestamp,
            len(board.rows),
            self.seconds,
        )

    async def _gather(self, snapshot: PreparedSnapshot) -> _Gathered:
        """The ranked nodes and their ticks in each window, on the event loop in slices."""
        catalog = snapshot.catalog
        ranked = {code for code, name in enumerate(catalog.networks.values) if name in RANKED}
        codes = catalog.networks.codes
        positions = [i for i in range(len(catalog.addresses)) if codes[i] in ranked]
        ticks: list[Ticks] = []
        for start in range(0, len(positions), SLICE):
            presence = self.served.presence
            low, stamps, bits = presence.parts()
            end = low + len(stamps)
            spans = [(max(low, end - window), end) for window in WINDOWS]
            for i in positions[start : start + SLICE]:
                bitmap = bits.get(catalog.addresses[i])
                counted = tuple(
                    (bitmap.range_cardinality(a, b) if bitmap is not None else 0, b - a)
                    for a, b in spans
                )
                ticks.append(counted)  # type: ignore[arg-type]
            await asyncio.sleep(0)
        return _Gathered(snapshot, self._key(snapshot), positions, ticks, self.propagation.latency)

    def _assemble(self, gathered: _Gathered) -> Board:
        """Blocking, in a worker thread: the indexes, the order and the rows."""
        snapshot, positions = gathered.snapshot, gathered.positions
        catalog = snapshot.catalog
        addresses = catalog.addresses
        asn_values, asn_codes = catalog.asns.values, catalog.asns.codes
        figures = CrawlFigures.of(
            (v if v >= 0 else None for v in catalog.versions),
            catalog.services,
            (asn_values[code] for code in asn_codes),
            (port_of(address) for address in addresses),
            snapshot.latest_height,
        )
        means = self._latency_means(gathered.latency, [addresses[i] for i in positions])
        scored = []
        for i, ticks in zip(positions, gathered.ticks, strict=True):
            address = addresses[i]
            shown = _row.decode(snapshot.nodes.row(i))
            version = catalog.versions[i]
            node = Inputs(
                version if version >= 0 else None,
                catalog.services[i],
                shown.height,
                asn_values[asn_codes[i]],
                port_of(address),
                means.get(address, (None, None, None)),
                ticks,
            )
            values = indexes(node, figures)
            pix = round(peer_index(values), DECIMALS)
            scored.append((-pix, address, values, pix, shown))
        scored.sort(key=lambda item: (item[0], item[1]))
        rows, texts, where = [], [], {}
        rank, before = 0, None
        for position, (_, address, values, pix, shown) in enumerate(scored):
            if pix != before:  # dense ranks, as bitnodes.io's: equal PIX, equal rank
                rank, before = rank + 1, pix
            rows.append(row_json(address, values, pix, rank, shown.user_agent, shown.country))
            texts.append(f"{address} {shown.user_agent or ''}".lower())
            where[address] = position
        return Board(gathered.key, gathered.latency, snapshot.timestamp, rows, texts, where)

    def _latency_means(
        self, latency: LatencyFile | None, wanted: Sequence[str]
    ) -> dict[str, Means]:
        """Each wanted node's mean round-trip time over each view of /latency/, worked out
        once per version of the latency file (only builds call it, one at a time)."""
        if latency is None:
            return {}
        kept = self._means
        if kept.source is not latency:
            kept.source, kept.means = latency, {}
        nodes, means = latency.nodes, kept.means
        for address in wanted:
            if address in means:
                continue
            packed = nodes.get(address)
            if packed is None:
                continue
            means[address] = window_means(packed, latency.as_of)
        return means


def port_of(address: str) -> int:
    return int(address.rpartition(":")[2])
