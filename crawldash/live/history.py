"""The bounded history of crawls: one entry per crawl, and its answers encoded once per change."""

from __future__ import annotations

import bisect
import statistics
import time
from collections import deque
from itertools import islice, pairwise

import msgspec

from ..crawl.files import FileVersion
from ..models import Base, HistoryPoint, NetworkCounts, NetworkPoint
from .bodies import Representation, encoded, represent

_MAX_CACHED_BODIES = 32


class HistoryEntry(Base, frozen=True, array_like=True):
    """One crawl: its point, and the version of the file it was counted from (0, 0 if none)."""

    timestamp: int
    reachable: int
    size: int = 0
    mtime_ns: int = 0
    networks: tuple[int, ...] | None = None  # counts in NETWORKS order; None in old indexes

    def counted_from(self, version: FileVersion) -> bool:
        return self.size == version.size and self.mtime_ns == version.mtime_ns


_encoder = msgspec.json.Encoder()


class History:
    """One entry per crawl in ascending time order, at most ``capacity`` of them."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._entries: deque[HistoryEntry] = deque(maxlen=capacity)
        self._by_timestamp: dict[int, HistoryEntry] = {}
        self._bodies: dict[tuple[int, bool, str], Representation] = {}
        self._changed_at = time.time()
        self._median_interval: int | None = None

    def __len__(self) -> int:
        return len(self._entries)

    def entries(self) -> list[HistoryEntry]:
        return list(self._entries)

    def get(self, timestamp: int) -> HistoryEntry | None:
        return self._by_timestamp.get(timestamp)

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
        self._bodies.clear()
        self._changed_at = time.time()
        self._median_interval = None
        return True

    def _index_of(self, timestamp: int) -> int:
        return bisect.bisect_left(self._entries, timestamp, key=lambda e: e.timestamp)

    def _append(self, entry: HistoryEntry) -> None:
        if len(self._entries) == self.capacity:
            del self._by_timestamp[self._entries.popleft().timestamp]
        self._entries.append(entry)

    def _insert(self, entry: HistoryEntry) -> None:
        if len(self._entries) == self.capacity:
            del self._by_timestamp[self._entries.popleft().timestamp]
        self._entries.insert(self._index_of(entry.timestamp), entry)

    def body(
        self, limit: int, by_network: bool = False, coding: str = "identity"
    ) -> Representation:
        """The JSON array of the most recent ``limit`` points, in a content coding (identity,
        gzip or br), encoded once per change."""
        count = min(limit, len(self._entries))
        key = (count, by_network, coding)
        body = self._bodies.get(key)
        if body is None:
            if coding == "identity":
                recent = islice(self._entries, len(self._entries) - count, None)
                point = _point_by_network if by_network else _point
                body = represent(_encoder.encode([point(e) for e in recent]), self._changed_at)
            else:
                body = encoded(self.body(count, by_network), coding)
            if len(self._bodies) >= _MAX_CACHED_BODIES:
                self._bodies.clear()
            self._bodies[key] = body
        return body

    def median_interval(self) -> int | None:
        """The median seconds between the most recent crawls; None with fewer than two."""
        if self._median_interval is None and len(self._entries) >= 2:
            recent = [e.timestamp for e in islice(self._entries, max(0, len(self) - 25), None)]
            self._median_interval = int(statistics.median(b - a for a, b in pairwise(recent)))
        return self._median_interval


def _point(entry: HistoryEntry) -> HistoryPoint:
    return HistoryPoint(entry.timestamp, entry.reachable)


def _point_by_network(entry: HistoryEntry) -> HistoryPoint | NetworkPoint:
    if entry.networks is None:
        return _point(entry)
    networks = NetworkCounts(*entry.networks)
    return NetworkPoint(entry.timestamp, entry.reachable, networks)
