"""Counting crawls into the history: the newest few at each refresh, the rest in batches
in the background, newest first, alongside the refreshes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

from ...crawl.decode import CrawlCount
from ...crawl.files import FileVersion, Listing
from ..memory.history import HistoryEntry
from ..state import State
from .rejections import Rejections

SKIPPED_FIRST = 144  # skipped crawls counted before the one served (a day of 10-minute ones)
CountFile = Callable[[str, FileVersion], Awaitable[CrawlCount | None]]


class Counting:
    """Which crawls present still need a point, and counting them."""

    def __init__(self, state: State, rejected: Rejections, count_file: CountFile) -> None:
        self.state = state
        self.rejected = rejected
        self.count_file = count_file
        # Crawls that may still need counting: a refresh looks at these and at files that
        # changed, not at every file in the folder.
        self.uncounted: set[int] = set()

    def update(self, listing: Listing, among: Iterable[int]) -> list[int]:
        """Those of ``uncounted`` and ``among`` whose count or membership the state lacks or
        holds for an older version, among the crawls it has room for, newest first."""
        history, presence = self.state.history, self.state.presence
        newest, capacity = listing.newest_first, history.capacity
        oldest_kept = newest[capacity - 1] if len(newest) > capacity else -1
        pending = []
        for timestamp in self.uncounted.union(among):
            found = listing.snapshots.get(timestamp)
            if found is None or timestamp < oldest_kept:
                continue
            name, version = found
            entry = history.get(timestamp)
            if entry is not None and entry.counted_from(version) and presence.has(timestamp):
                continue
            if not self.rejected.known(name, version):
                pending.append(timestamp)
        self.uncounted = set(pending)
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

    async def count(self, listing: Listing, timestamps: list[int]) -> bool:
        """Count these crawls into the history; True if it changed."""
        changed = False
        for timestamp in timestamps:
            name, version = listing.snapshots[timestamp]
            counted = await self.count_file(name, version)
            self.uncounted.discard(timestamp)
            if counted is not None:
                entry = HistoryEntry(
                    timestamp,
                    counted.nodes,
                    version.size,
                    version.mtime_ns,
                    counted.networks,
                    counted.latest_height,
                )
                changed |= await self.state.record_crawl(entry, counted.addresses)
        return changed
