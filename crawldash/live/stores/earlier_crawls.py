"""Older crawls added to the presence in bulk: the history's backlog, counted newest first.

Consecutive crawls share most of their nodes, so a run of older crawls is taken as the
changes from one crawl to the next: each node's stretch of crawls becomes one range of
slots, set into its bitmap once, where adding every address of every crawl one by one
would make the event loop the bottleneck of a cold start. The crawls are published
together once their bits are set, so readers see all of them or none.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from ...crawl.count import AddressChanges
from .presence import Presence


class OlderCrawls:
    """Crawls older than every crawl the presence knows, given newest first."""

    def __init__(self, presence: Presence) -> None:
        self.presence = presence
        self.top = presence.next_older_slot()  # the slot of the first crawl given
        self.timestamps: list[int] = []  # newest first
        self._previous: set[str] = set()  # the addresses of the crawl given last
        self._since: dict[str, int] = {}  # address -> the highest slot of its open stretch
        self._ranges: list[tuple[str, int, int]] = []  # address, first slot, end (exclusive)

    def __len__(self) -> int:
        return len(self.timestamps)

    def takes(self, timestamp: int) -> bool:
        """True if ``timestamp`` is the next older crawl: older than all known and given."""
        oldest = self.timestamps[-1] if self.timestamps else self.presence.oldest()
        return (oldest is None or timestamp < oldest) and not self.presence.has(timestamp)

    def add(
        self, timestamp: int, addresses: Collection[str], changes: AddressChanges | None = None
    ) -> None:
        """The next older crawl and its addresses (a set is kept as given: change it no
        more). ``changes``, if given, must be those addresses' changes from the crawl given
        last: they spare two passes over every address (``crawl.count.read_counts``)."""
        if not self.timestamps:  # the run begins: below the oldest known now
            self.top = self.presence.next_older_slot()
        slot = self.top - len(self.timestamps)
        now = addresses if isinstance(addresses, set) else set(addresses)
        if changes is None:
            added: Collection[str] = now - self._previous
            removed: Collection[str] = self._previous - now
        else:
            added, removed = changes.added, changes.removed
        for address in added:
            self._since[address] = slot
        for address in removed:
            self._ranges.append((address, slot + 1, self._since.pop(address) + 1))
        self._previous = now
        self.timestamps.append(timestamp)

    async def publish(self, keep: Callable[[int], bool]) -> bool:
        """Set every stretch into the presence and publish the crawls; False (nothing
        changed) if the presence took an older crawl meanwhile: they are counted again."""
        bottom = self.top - len(self.timestamps) + 1
        ranges = self._ranges + [(a, bottom, since + 1) for a, since in self._since.items()]
        self._since, self._previous, self._ranges = {}, set(), []
        return await self.presence.add_older(self.top, self.timestamps, ranges, keep)
