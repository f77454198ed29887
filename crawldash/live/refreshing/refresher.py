"""Bring the in-memory state up to date with the data folder.

Reading and decoding run off the event loop: snapshots in the loader process (a
15,000-node snapshot takes a few hundred ms of CPU, which in a thread would hold the GIL
against requests), everything else in worker threads. The state is changed on the event
loop only.
One entry of the folder that cannot be used (broken, unreadable, not a file, named from the
future) is that entry's problem: it is remembered by version, logged once, and tried again
when it changes; the newest usable crawl stays in service meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Callable, Collection
from itertools import accumulate
from pathlib import Path
from typing import TypeVar

from ...crawl.decode import Rules, read_status
from ...crawl.files import (
    STATUS_NAME,
    FileVersion,
    Listing,
    LoadError,
    file_version,
    list_data_dir,
    misnamed,
    named_ahead,
)
from ..loader.client import LoaderClient
from ..loader.counters import Counters
from ..loader.new_crawl import load_new_crawl
from ..state import State
from ..stores.index_codec import encode_presence_in_slices
from ..stores.index_files import HistoryStore, IndexSaver, PresenceStore
from ..stores.saved_history import encode_entries_in_slices
from .counting import READ_AHEAD, Counting
from .pairing import Pairing
from .reading import Reader
from .rejections import Rejections
from .switching import Switch

log = logging.getLogger(__name__)
T = TypeVar("T")
SNAPSHOT_TRIES = 3  # older candidates decoded per refresh when the newest are unusable
COUNT_BATCH = 32
FULL_LISTING_SECONDS = 300.0
# Each index is written at most this often (and at shutdown): a save holds up the event loop
# for milliseconds, which a burst of crawls or the counting at start-up would pay per crawl.
# What a crash loses of either is rebuilt from the crawl files still present.
INDEX_SAVE_EVERY = 60.0
# A refresh runs work in worker threads (a load's reply read, each node's changes compared);
# one holding the GIL in Python code keeps it from the event loop for up to the switch
# interval, 5 ms by default: every poll answered meanwhile would wait that long.
SWITCH_INTERVAL = 0.001


class Refresher:
    def __init__(
        self,
        state: State,
        store: HistoryStore,
        presence_store: PresenceStore,
        loader: LoaderClient,
        *,
        data_dir: Path,
        rules: Rules,
        status_file: Path | None = None,
        counters: Counters | None = None,
        clock: Callable[[], float] = time.time,
        pairing: Pairing | None = None,
    ) -> None:
        sys.setswitchinterval(min(sys.getswitchinterval(), SWITCH_INTERVAL))
        self.state = state
        self.loader = loader
        self.data_dir = data_dir
        # A status file outside the data folder is looked at by itself (poll_status), so
        # that it never waits behind a load; None: status.json in the data folder.
        self.status_file = status_file
        self.rules = rules
        self.clock = clock
        self.rejected = Rejections(clock)
        self.store = store
        kept = lambda: encode_entries_in_slices(state.history.kept())  # noqa: E731
        self.saver = IndexSaver(store, kept, clock, INDEX_SAVE_EVERY)
        self.presence_store = presence_store
        encoded = lambda: encode_presence_in_slices(state.presence)  # noqa: E731  (restoring replaces it)
        self.presence_saver = IndexSaver(presence_store, encoded, clock, INDEX_SAVE_EVERY)
        self.counters = counters  # None: older crawls are counted one at a time
        self.reader = Reader(state, loader, counters, self.rejected, data_dir=data_dir, rules=rules)
        read_ahead = counters.workers * READ_AHEAD if counters is not None else 1
        count_run = self.reader.count_run if counters is not None else None
        self.counting = Counting(state, self.rejected, self.reader.count, read_ahead, count_run)
        self.switch = Switch(state, self.counting, self._changed, pairing)
        self.observers: list[Callable[[float], None]] = []  # told each refresh's duration
        self._status_version: FileVersion | None = None
        self._lock = asyncio.Lock()
        self._listing: Listing | None = None
        self._listed_at = -FULL_LISTING_SECONDS  # when the folder was last listed whole
        self._more_to_count = asyncio.Event()
        self._batch_under_way = False  # keep_counting is counting older crawls

    def restore_history(self) -> None:
        """The history and presence indexes, whole: a point is never dropped because the
        clock says it is in the future (a clock not yet synced at boot would erase history
        that no crawl file holds any more); that is said once. Runs in a worker thread,
        before anything else uses the state."""
        kept = self.store.load_kept()
        ahead = [entry.timestamp for entry in kept.entries if self._ahead(entry.timestamp)]
        if ahead:
            log.warning(
                "%d history points are named more than --max-clock-skew ahead of this "
                "machine's clock (the latest by %d s): kept; is the clock right?",
                len(ahead),
                max(ahead) - int(self.clock()),
            )
        self.state.history.restore(kept)
        self.state.replace_presence(self.presence_store.load())

    def _changed(self) -> None:
        """The history and presence changed: save both indexes."""
        self.saver.schedule()
        self.presence_saver.schedule()

    async def refresh(
        self,
        count_budget: int = 16,
        changed: Collection[str] | None = None,
        count_bytes: int | None = None,
    ) -> None:
        """Pick up changes: the newest usable snapshot, the status, and up to
        ``count_budget`` new crawls (and, if given, only as many as fit in ``count_bytes``).
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
            self.state.crawl_files = listing.newest_first
            self.state.crawl_versions = listing.snapshots
            self.rejected.begin_refresh(listing.names)
            if self.counting.update(listing, self._present(listing, listing.changed)):
                self.state.history_complete = False  # until the new crawls have points
            await self._refresh_snapshot(listing)
            if self.status_file is None:
                await self._refresh_status(listing.status)
            else:
                await self.poll_status()
            pending = self.counting.update(listing, ())  # less the crawl just served
            counted = pending[:count_budget]
            if self.counters is not None and len(pending) > count_budget:
                counted = []  # a backlog: counted by the batches, never ahead of a new crawl
                self._more_to_count.set()
            if count_bytes is not None:
                sizes = accumulate(listing.snapshots[t][1].size for t in counted)
                counted = [t for t, size in zip(counted, sizes, strict=True) if size <= count_bytes]
            if not self._batch_under_way:  # else the batch counts them: a run of older
                await self._count(listing, counted)  # crawls published under it is refused
            for observe in self.observers:
                observe(time.perf_counter() - started)

    async def keep_counting(self) -> None:
        """Count, in batches, every crawl present that the history lacks; run until
        cancelled. The lock is held only while each crawl is recorded: a refresh, and so a
        new crawl, never waits for a batch to be read."""
        while True:
            await self._more_to_count.wait()
            listing = self._listing
            if listing is not None:
                pending = self.counting.update(listing, ())
                self._batch_under_way = True
                try:
                    await self._count(listing, pending[:COUNT_BATCH], self._lock)
                finally:
                    self._batch_under_way = False
            await asyncio.sleep(0)  # let requests and refreshes in between batches

    async def _count(
        self, listing: Listing, timestamps: list[int], lock: asyncio.Lock | None = None
    ) -> None:
        if await self.counting.count(listing, timestamps, lock):
            self._changed()
        # Complete: every crawl present is counted, or refused for its content.
        # Passing faults are tried again by the watcher's refreshes, when they are due.
        self.state.history_complete = not self.counting.uncounted and not self.counting.retrying
        if self.counting.uncounted:
            self._more_to_count.set()
        else:
            self._more_to_count.clear()
            if self.counters is not None:
                self.counters.rest()  # nothing of them stays at rest

    def _present(self, listing: Listing, among: Collection[int]) -> list[int]:
        """Those of ``among`` not named from the future, which are rejected as such."""
        present = []
        for timestamp in among:
            if error := self._ahead(timestamp):
                name, version = listing.snapshots[timestamp]
                self.rejected.add(name, version, error)
            else:
                present.append(timestamp)
        return present

    def _ahead(self, timestamp: int) -> LoadError | None:
        return named_ahead(timestamp, self.clock(), self.rules.max_clock_skew)

    async def poll_status(self) -> None:
        """Pick up a change of the status file: one stat, and never behind a load (the app
        calls this on a timer of its own, beside the watcher's refreshes)."""
        path = self.status_file or self.data_dir / STATUS_NAME
        await self._refresh_status(await asyncio.to_thread(file_version, path))

    async def _refresh_status(self, version: FileVersion | None) -> None:
        if version is None or version == self._status_version:
            return
        if self.rejected.known(STATUS_NAME, version):
            return
        status = await self.reader.read(STATUS_NAME, version, read_status, path=self.status_file)
        if status is not None:
            self._status_version = version
            self.state.set_status(status, version.mtime_ns / 1e9)

    async def _refresh_snapshot(self, listing: Listing) -> None:
        """Serve the newest usable crawl newer than the one served (or the served one,
        rewritten). While the served crawl's file is gone, the newest usable one present
        wins, older or not; memory keeps the last good one only when none is usable."""
        served = self.switch.served
        if served is not None and served[0] not in listing.snapshots:
            served = None  # its file is gone: whatever is newest and usable now
        if served is not None and misnamed(listing, served[0]):
            served = None  # named ahead of its writing, and a later-written crawl is here
        tries = 0
        for timestamp in listing.newest_first:
            name, version = listing.snapshots[timestamp]
            if served is not None and (timestamp < served[0] or (timestamp, version) == served):
                return
            error = self._ahead(timestamp) or misnamed(listing, timestamp)
            if error:
                self.rejected.add(name, version, error)
                continue
            if self.rejected.known(name, version):
                continue
            self.switch.begin(listing, timestamp)
            loaded = await self.reader.read(
                name, version, load_new_crawl, in_loader=True, on_part=self.switch.on_part
            )
            if await self.switch.end(loaded):
                return
            tries += 1
            if tries == SNAPSHOT_TRIES and self.state.snapshot is not None:
                return  # the others next time: each decode is costly
