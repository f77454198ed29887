"""The bounded history of crawls, its pre-encoded answers, and its index on disk."""

from __future__ import annotations

import bisect
import hashlib
import logging
import os
import statistics
import tempfile
import time
from collections import deque
from itertools import islice, pairwise
from pathlib import Path

import msgspec

from .loader import FileVersion
from .models import Base, HistoryPoint, NetworkCounts, NetworkPoint
from .representation import Representation, encoded, represent

log = logging.getLogger(__name__)
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


_entries_decoder = msgspec.json.Decoder(list[HistoryEntry])
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

    def oldest_timestamp(self) -> int | None:
        return self._entries[0].timestamp if self._entries else None

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


class HistoryStore:
    """The history index on disk, written atomically; once writing fails, memory only."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.failed = False

    @classmethod
    def for_data_dir(cls, state_dir: Path, data_dir: Path) -> HistoryStore:
        """One index per data folder, so that instances over different folders never mix."""
        digest = hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:16]
        return cls(state_dir / f"history-{digest}.json")

    def load(self) -> list[HistoryEntry]:
        try:
            return _entries_decoder.decode(self.path.read_bytes())
        except FileNotFoundError:
            return []
        except (OSError, msgspec.DecodeError) as exc:
            log.warning(
                "history index %s is unusable, rebuilding it from files: %s", self.path, exc
            )
            return []

    def save(self, entries: list[HistoryEntry]) -> None:
        if self.failed:
            return
        try:
            write_atomically(self.path, _encoder.encode(entries))
        except OSError as exc:
            self.failed = True
            log.warning(
                "cannot write the history index %s (%s); history is kept in memory only "
                "and crawls pruned from the data folder will be lost at restart",
                self.path,
                exc,
            )


def write_atomically(path: Path, data: bytes) -> None:
    """Write to a temporary file beside ``path``, flush it to disk, then rename it over."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
