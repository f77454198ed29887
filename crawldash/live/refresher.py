"""Bring the in-memory state up to date with the data folder.

Reading and decoding run off the event loop: snapshots in the loader process (a
15,000-node snapshot takes a few hundred ms of CPU, which in a thread would hold the GIL
against requests), everything else in worker threads. The state is changed on the event
loop only.
A file that cannot be used is remembered by version, logged once, and tried again when it
changes; the last good data stays in service meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Collection, Iterable
from itertools import accumulate
from pathlib import Path
from typing import TypeVar

from ..crawl.decode import read_count, read_status
from ..crawl.files import STATUS_NAME, FileVersion, Listing, LoadError, list_data_dir
from .history import HistoryEntry
from .loader import LoaderProcess
from .prepared import PreparedSnapshot, load_snapshot
from .rejections import Rejections
from .state import State
from .store import HistoryStore

log = logging.getLogger(__name__)
T = TypeVar("T")
SNAPSHOT_TRIES = 3  # older candidates tried when the newest files are unusable
BACKFILL_BATCH = 32
FULL_LISTING_SECONDS = 300.0


class Refresher:
    def __init__(
        self,
        state: State,
        store: HistoryStore,
        loader: LoaderProcess,
        *,
        data_dir: Path,
        max_file_size: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.state = state
        self.store = store
        self.loader = loader
        self.data_dir = data_dir
        self.max_file_size = max_file_size
        self._served: tuple[int, FileVersion] | None = None
        self._status_version: FileVersion | None = None
        self.rejected = Rejections(clock)
        self._lock = asyncio.Lock()
        self._dirty = False
        self._saver: asyncio.Task[None] | None = None
        self.observers: list[Callable[[float], None]] = []  # told each refresh's duration
        self._listing: Listing | None = None
        self._listed_at = -FULL_LISTING_SECONDS  # when the folder was last listed whole
        # Crawls that may still need counting: a refresh looks at these and at files that
        # changed, not at every file in the folder.
        self._uncounted: set[int] = set()

    def restore_history(self) -> None:
        for entry in self.store.load():
            self.state.history.record(entry)

    async def refresh(
        self,
        count_budget: int = 16,
        changed: Collection[str] | None = None,
        count_bytes: int | None = None,
    ) -> None:
        """Pick up changes: status, the newest usable snapshot, and up to ``count_budget``
        new crawls (and, if given, only as many as fit in ``count_bytes`` of files).
        ``changed``: the file names that changed, if known; the folder is listed whole at
        least every FULL_LISTING_SECONDS anyway, in case a change went unseen."""
        async with self._lock:
            started = time.perf_counter()
            if time.monotonic() - self._listed_at > FULL_LISTING_SECONDS:
                changed = None
            if changed is None:
                self._listed_at = time.monotonic()
            listing = await asyncio.to_thread(list_data_dir, self.data_dir, self._listing, changed)
            self._listing = listing
            self.rejected.begin_refresh(listing.names)
            await self._refresh_status(listing.status)
            await self._refresh_snapshot(listing)
            pending = self._pending(listing, self._uncounted | listing.changed)
            self._uncounted = set(pending)
            counted = pending[:count_budget]
            if count_bytes is not None:
                sizes = accumulate(listing.snapshots[t][1].size for t in counted)
                counted = [
                    t for t, total in zip(counted, sizes, strict=True) if total <= count_bytes
                ]
            await self._count(listing, counted)
            for observe in self.observers:
                observe(time.perf_counter() - started)

    async def backfill(self) -> None:
        """Count every crawl the history lacks, newest first, alongside the watcher's refreshes."""
        listing = await asyncio.to_thread(list_data_dir, self.data_dir)
        pending = self._pending(listing, listing.snapshots.keys())
        for start in range(0, len(pending), BACKFILL_BATCH):
            await self._count(listing, pending[start : start + BACKFILL_BATCH])
        self.state.history_complete = True
        await self.flush()

    async def flush(self) -> None:
        """Wait until the history index on disk holds what memory holds."""
        while self._saver is not None and not self._saver.done():
            await self._saver

    async def _refresh_status(self, version: FileVersion | None) -> None:
        if version is None or version == self._status_version:
            return
        if self.rejected.known(STATUS_NAME, version):
            return
        status = await self._load(STATUS_NAME, version, read_status)
        if status is not None:
            self._status_version = version
            self.state.set_status(status, version.mtime_ns / 1e9)

    async def _refresh_snapshot(self, listing: Listing) -> None:
        served_ts, served_version = self._served or (-1, None)
        tries = 0
        for timestamp in listing.newest_first:
            name, version = listing.snapshots[timestamp]
            if timestamp < served_ts or (timestamp == served_ts and version == served_version):
                return
            if self.rejected.known(name, version):
                continue
            started = time.perf_counter()
            served = await self._load(name, version, load_snapshot, in_loader=True)
            if served is not None:
                self._serve(served, version, time.perf_counter() - started)
                return
            tries += 1
            if tries == SNAPSHOT_TRIES:
                return

    def _serve(self, served: PreparedSnapshot, version: FileVersion, seconds: float) -> None:
        self.state.set_snapshot(served)
        self._served = (served.timestamp, version)
        entry = HistoryEntry(
            served.timestamp, served.total_nodes, version.size, version.mtime_ns, served.networks
        )
        if self.state.history.record(entry):
            self._schedule_save()
        log.info(
            "snapshot loaded timestamp=%d nodes=%d skipped_rows=%d height=%d bytes=%d seconds=%.3f",
            served.timestamp,
            served.total_nodes,
            served.skipped_rows,
            served.latest_height,
            version.size,
            seconds,
        )

    async def _count(self, listing: Listing, timestamps: list[int]) -> None:
        changed = False
        for timestamp in timestamps:
            name, version = listing.snapshots[timestamp]
            counted = await self._load(name, version, read_count)
            if counted is not None:
                reachable, networks = counted
                entry = HistoryEntry(timestamp, reachable, version.size, version.mtime_ns, networks)
                changed |= self.state.history.record(entry)
        if changed:
            self._schedule_save()

    def _pending(self, listing: Listing, among: Iterable[int]) -> list[int]:
        """Those of ``among`` whose count the history lacks or holds for an older version,
        among the crawls it has room for, newest first."""
        history = self.state.history
        newest = listing.newest_first
        oldest_kept = newest[history.capacity - 1] if len(newest) > history.capacity else -1
        pending = []
        for timestamp in among:
            found = listing.snapshots.get(timestamp)
            if found is None or timestamp < oldest_kept:
                continue
            name, version = found
            entry = history.get(timestamp)
            if entry is not None and entry.counted_from(version):
                continue
            if not self.rejected.known(name, version):
                pending.append(timestamp)
        return sorted(pending, reverse=True)

    async def _load(
        self,
        name: str,
        version: FileVersion,
        reader: Callable[[Path, int], T],
        *,
        in_loader: bool = False,
    ) -> T | None:
        """``reader`` over the file, in the loader process or a worker thread; None if the
        file is gone or unusable (then it is remembered as rejected)."""
        path = self.data_dir / name
        try:
            if in_loader:
                return await self.loader.run(reader, path, self.max_file_size)
            return await asyncio.to_thread(reader, path, self.max_file_size)
        except FileNotFoundError:
            return None
        except LoadError as exc:
            self.rejected.add(name, version, exc)
            return None

    def _schedule_save(self) -> None:
        self._dirty = True
        if self._saver is None or self._saver.done():
            self._saver = asyncio.create_task(self._save_while_dirty())

    async def _save_while_dirty(self) -> None:
        while self._dirty:
            self._dirty = False
            await asyncio.to_thread(self.store.save, self.state.history.entries())
