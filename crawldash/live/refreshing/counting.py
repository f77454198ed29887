"""Counting crawls into the history: the newest few at each refresh, the rest in batches
in the background, newest first, alongside the refreshes.

A batch is read ahead: its crawls are counted a few at a time (on every core, by the
counting processes) while the ones already counted are recorded, in order, newest first,
so that each is added next to the crawls already known.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable

from ...crawl.count import CrawlCount
from ...crawl.files import FileVersion, Listing
from ..memory.backfill import OlderCrawls
from ..memory.history import HistoryEntry
from ..state import State
from .rejections import Rejections

SKIPPED_FIRST = 144  # skipped crawls counted before the one served (a day of 10-minute ones)
READ_AHEAD = 4  # crawls counted ahead of the one being recorded, per counting process
OLDER_AT_ONCE = 32  # older crawls published into the presence together
# Reads a crawl's count; the flag says it is one of many (a batch), which the counting
# processes read faster than the loader process does one at a time.
CountFile = Callable[[str, FileVersion, bool], Awaitable[CrawlCount | None]]


class Counting:
    """Which crawls present still need a point, and counting them."""

    def __init__(
        self, state: State, rejected: Rejections, count_file: CountFile, read_ahead: int = 1
    ) -> None:
        self.state = state
        self.rejected = rejected
        self.count_file = count_file
        self.read_ahead = read_ahead  # crawls counted at once in a batch
        # Crawls that may still need counting: a refresh looks at these and at files that
        # changed, not at every file in the folder.
        self.uncounted: set[int] = set()
        self.retrying: set[int] = set()  # refused for a passing fault, to be tried again

    def update(self, listing: Listing, among: Iterable[int]) -> list[int]:
        """Those of ``uncounted`` and ``among`` whose count or membership the state lacks or
        holds for an older version, among the crawls it has room for, newest first."""
        history, presence = self.state.history, self.state.presence
        newest, capacity = listing.newest_first, history.capacity
        oldest_kept = newest[capacity - 1] if len(newest) > capacity else -1
        pending, retrying = [], set()
        for timestamp in self.uncounted.union(self.retrying, among):
            found = listing.snapshots.get(timestamp)
            if found is None or timestamp < oldest_kept:
                continue
            name, version = found
            entry = history.get(timestamp)
            if (
                entry is not None
                and entry.counted_from(version)
                and entry.counts is not None  # else counted before counts were kept
                and presence.has(timestamp)
            ):
                continue
            if not self.rejected.known(name, version):
                pending.append(timestamp)
            elif self.rejected.retrying(name, version):
                retrying.add(timestamp)  # a passing fault: counted once it is tried again
        self.uncounted, self.retrying = set(pending), retrying
        return sorted(pending, reverse=True)

    async def count_skipped(self, listing: Listing, served: int) -> bool:
        """Count first, oldest first, the crawls between the newest whose membership is
        known and the one now served: skipped while another loaded, or written while
        crawldash was stopped. Each is then added after the newest known, as the served
        crawl is next; counted after it, each would be inserted between two known crawls,
        a pass over every address on the event loop (tens of ms with 15,000 nodes). At
        most SKIPPED_FIRST of them, the newest: older ones are counted later as usual.
        True if the history changed."""
        newest_known = self.state.presence.newest()
        if newest_known is None:
            return False
        pending = self.update(listing, ())
        skipped = [t for t in pending if newest_known < t < served][:SKIPPED_FIRST]
        return await self.count(listing, skipped[::-1])

    async def count(
        self,
        listing: Listing,
        timestamps: list[int],
        lock: asyncio.Lock | None = None,
    ) -> bool:
        """Count these crawls into the history, in this order; True if it changed.

        Args:
            listing: the folder as listed, which names each crawl's file and version.
            timestamps: the crawls to count.
            lock: held while each crawl is recorded (not while it is read), so that a
                refresh waits for one record at most, never for a batch.
        """
        changed = False
        older = OlderCrawls(self.state.presence)  # a run of the next older crawls
        async for timestamp, version, counted in self._read_in_order(listing, timestamps):
            self.uncounted.discard(timestamp)
            if counted is None:
                continue
            entry = HistoryEntry(
                timestamp,
                counted.nodes,
                version.size,
                version.mtime_ns,
                counted.networks,
                counted.latest_height,
                self.state.history.values.pack(
                    {key: values.items() for key, values in counted.tallies.items()}
                ),
            )
            async with lock if lock is not None else contextlib.nullcontext():
                if not older.takes(timestamp) or len(older) == OLDER_AT_ONCE:
                    changed |= await self._publish(older)
                    older = OlderCrawls(self.state.presence)
                if older.takes(timestamp):
                    changed |= self.state.record_older(entry, counted.addresses, older)
                else:
                    changed |= await self.state.record_crawl(entry, counted.addresses)
        async with lock if lock is not None else contextlib.nullcontext():
            changed |= await self._publish(older)
        return changed

    async def _publish(self, older: OlderCrawls) -> bool:
        """Publish a run of older crawls; if the presence refused it (another count added
        older crawls, or the oldest were forgotten, since the run began), its crawls have
        a point but no membership: they are counted again, as ``publish`` promises."""
        if await older.publish(self.state.history.holds):
            return True
        self.uncounted.update(older.timestamps)  # update() drops those known or not kept
        return False

    async def _read_in_order(
        self, listing: Listing, timestamps: list[int]
    ) -> AsyncIterator[tuple[int, FileVersion, CrawlCount | None]]:
        """Each crawl's count, in the order given, with up to ``read_ahead`` being read."""
        batch = len(timestamps) > 1
        reads: list[tuple[int, FileVersion, asyncio.Task[CrawlCount | None]]] = []
        waiting = iter(timestamps)
        try:
            while True:
                while len(reads) < max(1, self.read_ahead if batch else 1):
                    timestamp = next(waiting, None)
                    if timestamp is None:
                        break
                    name, version = listing.snapshots[timestamp]
                    read = asyncio.ensure_future(self.count_file(name, version, batch))
                    reads.append((timestamp, version, read))
                if not reads:
                    return
                timestamp, version, read = reads.pop(0)
                yield timestamp, version, await read
        finally:
            for _, _, read in reads:
                read.cancel()
