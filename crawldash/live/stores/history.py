"""The bounded history of crawls: one entry per crawl, and its answers encoded once per
change (its index file's bytes are ``saved_history.py``)."""

from __future__ import annotations

import bisect
import statistics
import time
from collections import deque
from collections.abc import Iterable
from itertools import islice, pairwise
from typing import NamedTuple

import msgspec

from ...crawl.address import NETWORKS
from ...crawl.files import FileVersion
from ...models import Base, HistoryPoint, NetworkCounts, NetworkPoint
from ..bodies import Representation, encoded, represent
from .tallies import Values

# Lengths whose answers are also compressed (once per change, when first asked for): a
# day, a week and a month of 10-minute crawls, and all that is held. Others are sliced
# from the points' JSON and sent uncompressed, so that no query can make the server
# compress per request.
COMPRESSED_COUNTS = frozenset((144, 1008, 4320))
_MAX_SLICES = 64  # uncompressed answers kept per change, by length and shape


class HistoryEntry(Base, frozen=True, array_like=True):
    """One crawl: its point, and the version of the file it was counted from (0, 0 if none)."""

    timestamp: int
    reachable: int
    size: int = 0
    mtime_ns: int = 0
    networks: tuple[int, ...] | None = None  # counts in NETWORKS order; None in old indexes
    height: int | None = None  # the crawl's consensus height; None in old indexes
    counts: bytes | None = None  # its nodes by value (tallies.py); None in old indexes

    def __post_init__(self) -> None:
        """An entry of another shape (as another version might write) is refused: decoding
        an index then fails, and the index is rebuilt from the crawl files."""
        if self.networks is not None and len(self.networks) != len(NETWORKS):
            raise ValueError(f"{len(self.networks)} network counts, not {len(NETWORKS)}")

    def counted_from(self, version: FileVersion) -> bool:
        return self.size == version.size and self.mtime_ns == version.mtime_ns


_encoder = msgspec.json.Encoder()


class Kept(NamedTuple):
    """What the history index holds: the entries, and the values their counts name."""

    entries: list[HistoryEntry]
    values: list[list[str]]  # per key of tallies.KEYS, its values in code order (or none)


class History:
    """One entry per crawl in ascending time order, at most ``capacity`` of them, and the
    table of values their counts name."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.values = Values()
        self._entries: deque[HistoryEntry] = deque(maxlen=capacity)
        self._by_timestamp: dict[int, HistoryEntry] = {}
        self._json: dict[int, tuple[bytes, bytes]] = {}  # each point, plain and by network
        self._bodies: dict[tuple[int, bool, str], Representation] = {}  # compressed
        self._slices: dict[tuple[int, bool], Representation] = {}  # uncompressed
        self._changed_at = time.time()
        self.changes = 0  # counts the changes, so that answers built from it can tell
        self._median_interval: int | None = None

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def changed_at(self) -> float:
        """When the history last changed (unix time): its answers' Last-Modified."""
        return self._changed_at

    def recent(self, limit: int) -> list[HistoryEntry]:
        """The most recent ``limit`` entries, oldest first."""
        return list(islice(self._entries, max(0, len(self._entries) - limit), None))

    def entries(self) -> list[HistoryEntry]:
        return list(self._entries)

    def kept(self) -> Kept:
        """What the index file is to hold, as of now."""
        return Kept(list(self._entries), self.values.copy())

    def restore(self, kept: Kept) -> None:
        """The entries of an index file, into a history that holds none yet."""
        self.values = Values(kept.values or None)
        for entry in kept.entries:
            self.record(entry)

    def get(self, timestamp: int) -> HistoryEntry | None:
        return self._by_timestamp.get(timestamp)

    def held(self, timestamps: Iterable[int]) -> list[int]:
        """The crawls of ``timestamps`` that the history holds, in their order: a lookup of
        each timestamp, in C, without reading any entry."""
        return list(filter(self._by_timestamp.__contains__, timestamps))

    def holds(self, timestamp: int) -> bool:
        return timestamp in self._by_timestamp

    def record(self, entry: HistoryEntry) -> bool:
        """Add or replace the entry for a crawl; False if nothing changed or it is too old."""
        if self._by_timestamp.get(entry.timestamp) == entry:
            return False
        if entry.timestamp in self._by_timestamp:
            index = self._index_of(entry.timestamp)
            self._entries[index] = entry
        elif not self._entries or entry.timestamp > self._entries[-1].timestamp:
            self._append(entry)
        elif len(self._entries) == self.capacity and entry.timestamp < self._entries[0].timestamp:
            return False
        else:
            self._insert(entry)
        self._by_timestamp[entry.timestamp] = entry
        self._json[entry.timestamp] = (
            _encoder.encode(_point(entry)),
            _encoder.encode(_point_by_network(entry)),
        )
        self._bodies.clear()
        self._slices.clear()
        self._changed_at = time.time()
        self.changes += 1
        self._median_interval = None
        return True

    def _index_of(self, timestamp: int) -> int:
        return bisect.bisect_left(self._entries, timestamp, key=lambda e: e.timestamp)

    def _append(self, entry: HistoryEntry) -> None:
        if len(self._entries) == self.capacity:
            self._forget(self._entries.popleft())
        self._entries.append(entry)

    def _insert(self, entry: HistoryEntry) -> None:
        if len(self._entries) == self.capacity:
            self._forget(self._entries.popleft())
        self._entries.insert(self._index_of(entry.timestamp), entry)

    def _forget(self, entry: HistoryEntry) -> None:
        del self._by_timestamp[entry.timestamp]
        del self._json[entry.timestamp]

    def body(
        self, limit: int, by_network: bool = False, coding: str = "identity"
    ) -> Representation:
        """The JSON array of the most recent ``limit`` points. In ``coding`` (gzip or br)
        for the lengths in COMPRESSED_COUNTS and for all that is held, each compressed once
        per change; uncompressed for any other length."""
        count = min(limit, len(self._entries))
        if coding == "identity" or (count not in COMPRESSED_COUNTS and count != len(self)):
            return self._slice(count, by_network)
        key = (count, by_network, coding)
        body = self._bodies.get(key)
        if body is None:
            body = self._bodies[key] = encoded(self._slice(count, by_network), coding)
        return body

    def _slice(self, count: int, by_network: bool) -> Representation:
        """The most recent ``count`` points, joined from each point's JSON."""
        key = (count, by_network)
        body = self._slices.get(key)
        if body is None:
            recent = islice(self._entries, len(self._entries) - count, None)
            shape = int(by_network)
            joined = b",".join([self._json[entry.timestamp][shape] for entry in recent])
            body = represent(b"[" + joined + b"]", self._changed_at)
            if len(self._slices) >= _MAX_SLICES:
                self._slices.clear()
            self._slices[key] = body
        return body

    def median_interval(self) -> int | None:
        """The median seconds between the most recent crawls (the lower of the middle two
        of an even count: one odd interval, from a crawl once misnamed, must not be taken
        as the crawler's pace); None with fewer than two."""
        if self._median_interval is None and len(self._entries) >= 2:
            recent = [e.timestamp for e in islice(self._entries, max(0, len(self) - 25), None)]
            gaps = [b - a for a, b in pairwise(recent)]
            self._median_interval = int(statistics.median_low(gaps))
        return self._median_interval


def _point(entry: HistoryEntry) -> HistoryPoint:
    return HistoryPoint(entry.timestamp, entry.reachable)


def _point_by_network(entry: HistoryEntry) -> HistoryPoint | NetworkPoint:
    if entry.networks is None:
        return _point(entry)
    networks = NetworkCounts(*entry.networks)
    return NetworkPoint(entry.timestamp, entry.reachable, networks)
