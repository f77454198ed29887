"""Which addresses were in each crawl the history holds.

One compressed bitmap (pyroaring) per address over crawl *slots*: consecutive integers
given to the crawls whose membership is known, in time order. A node present for weeks is
one run in its bitmap, so memory follows churn, not crawls times nodes (``python -m
bench.studies.presence`` compares it with one bitmap per crawl; see docs/architecture.md, "Node
presence in memory").

The oldest crawl has slot ``_low``. A newer crawl takes the next slot, an older one (the
background counting adds them newest first) the slot before ``_low``; one inserted
between two known crawls shifts the slots after it, which is rare and costs one pass.

All on the event loop: ``update`` sets a new crawl's bits in slices, yielding to requests,
and publishes the crawl when all are set (readers look only at published slots, so they
see it whole or not at all). Changes are serialised by ``lock``, which saving the index
takes too. Forgetting the oldest crawls only moves ``_low``: their bits are stripped when
the index is encoded, not on every new crawl.
"""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from pyroaring import BitMap

from ...models import PresenceRun

BASE_SLOT = 1 << 31  # room below for older crawls, above for newer ones
_END = 1 << 32  # past the last possible slot
SLICE = 512  # addresses updated between two yields to the event loop (under a millisecond)


@dataclass(frozen=True)
class Summary:
    """One address over the crawls whose membership is known."""

    crawls: int  # crawls whose membership is known
    seen: int  # of them with the address
    first_seen: int | None  # the first and last crawl timestamps with it
    last_seen: int | None


class Presence:
    """Membership of every crawl held, by address."""

    def __init__(self) -> None:
        self._bits: dict[str, BitMap] = {}
        self._timestamps: list[int] = []  # ascending; slot of index i is _low + i
        self._known: set[int] = set()
        self._low = BASE_SLOT
        self._stale = False  # bits of forgotten crawls may remain below _low
        self.version = 0  # changes with any membership
        # Changes when an address's newest slot may change, or an address comes: not when
        # a crawl whose bits are set is published, nor when the oldest are forgotten (their
        # bits stay below ``_low`` until stripped, in no window), so that what is worked
        # out from each address's newest slot (``answers/unique.py``) outlives both.
        self.members = 0
        self.rewritten = 0  # changes when a known crawl's membership changes or is dropped
        self.passes = 0  # passes over every address made to clear or shift slots
        self.lock = asyncio.Lock()  # held while a change is under way

    def __len__(self) -> int:
        return len(self._timestamps)

    def has(self, timestamp: int) -> bool:
        return timestamp in self._known

    def newest(self) -> int | None:
        """The newest crawl whose membership is known."""
        return self._timestamps[-1] if self._timestamps else None

    def oldest(self) -> int | None:
        """The oldest crawl whose membership is known."""
        return self._timestamps[0] if self._timestamps else None

    def next_older_slot(self) -> int:
        """The slot a crawl older than all known would take."""
        return self._low - 1 if self._timestamps else self._low

    async def add_older(
        self,
        top: int,
        timestamps: list[int],
        ranges: Iterable[tuple[str, int, int]],
        keep: Callable[[int], bool],
    ) -> bool:
        """Crawls older than all known, newest first from slot ``top`` down, with each
        address's stretches of slots (``backfill.OlderCrawls``); then forget the crawls
        ``keep`` refuses. False if an older crawl was added since ``top`` was taken."""
        async with self.lock:
            if not timestamps or top != self.next_older_slot():
                return False
            if self._timestamps and timestamps[0] >= self._timestamps[0]:
                return False
            await self.strip_in_slices()  # the slots below the oldest may hold forgotten bits
            bits = self._bits
            for count, (address, start, end) in enumerate(ranges, 1):
                bitmap = bits.get(address)
                if bitmap is None:
                    bitmap = bits[address] = BitMap()
                bitmap.add_range(start, end)
                if count % SLICE == 0:
                    await asyncio.sleep(0)
            self._timestamps[:0] = timestamps[::-1]  # published
            self._known.update(timestamps)
            self._low = top - len(timestamps) + 1
            self.version += 1
            self.members += 1
            self.retain(keep)
        return True

    def timestamps(self) -> list[int]:
        return list(self._timestamps)

    async def update(
        self,
        timestamp: int,
        addresses: Sequence[str],
        keep: Callable[[int], bool],
        published: Callable[[], object] | None = None,
        ready: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        """The addresses in a crawl, then forget the crawls ``keep`` refuses; in slices
        when the crawl is newer or older than all known (the usual case), else at once.
        ``ready`` is awaited once its bits are set, before it is published (what is worked
        out from them is made then, off the way of the first answers about it);
        ``published`` is called in the step that publishes the crawl, before ``keep`` is
        asked: what else must change with it changes in the same step."""
        async with self.lock:
            stamps = self._timestamps
            if timestamp in self._known or (stamps and stamps[0] < timestamp < stamps[-1]):
                self.add(timestamp, addresses)
            else:
                newest = not stamps or timestamp > stamps[-1]
                if not newest:  # the slot below the oldest may hold a forgotten crawl
                    await self.strip_in_slices()
                slot = self._low + len(stamps) if newest else self._low - 1
                for start in range(0, len(addresses), SLICE):
                    self._set(slot, addresses[start : start + SLICE])
                    await asyncio.sleep(0)
                self.members += 1
                if ready is not None:
                    await ready()
                stamps.insert(len(stamps) if newest else 0, timestamp)  # published
                self._known.add(timestamp)
                self._low = min(self._low, slot)
                self.version += 1
            if published is not None:
                published()
            self.retain(keep)

    def add(self, timestamp: int, addresses: Iterable[str]) -> None:
        """The addresses in a crawl, at once; replaces what was known of it."""
        if timestamp in self._known:
            slot = self._low + bisect.bisect_left(self._timestamps, timestamp)
            self._clear(slot, slot + 1)
            self.rewritten += 1
        else:
            slot = self._new_slot(timestamp)
        self._set(slot, addresses)
        self.version += 1
        self.members += 1

    def _set(self, slot: int, addresses: Iterable[str]) -> None:
        bits = self._bits
        for address in addresses:
            bitmap = bits.get(address)
            if bitmap is None:
                bitmap = bits[address] = BitMap()
            bitmap.add(slot)

    def retain(self, keep: Callable[[int], bool]) -> None:
        """Forget the crawls ``keep`` refuses (those the history no longer holds)."""
        dropped = [t for t in self._timestamps if not keep(t)]
        if not dropped:
            return
        prefix = len(dropped) if dropped == self._timestamps[: len(dropped)] else 0
        if prefix:  # the oldest, the usual case: their bits are left for strip(), so that
            del self._timestamps[:prefix]  # a new crawl costs no pass over every address
            self._low += prefix
            self._stale = True
        for timestamp in dropped[prefix:]:
            self._drop(timestamp)
        self._known.difference_update(dropped)
        self.version += 1
        self.rewritten += 1

    def strip(self) -> None:
        """Remove the bits of forgotten crawls below the oldest slot, and the addresses in
        no crawl held: one pass over every address, done when the index is encoded (at most
        once a minute) and before a slot below the oldest is taken again."""
        if self._stale:
            self._clear(0, self._low)
            self._stale = False

    async def strip_in_slices(self) -> None:
        """``strip()``, yielding to requests every SLICE addresses; hold ``lock``. Readers
        look only at slots from ``_low`` up, so the bits removed meanwhile are unseen."""
        if self._stale:
            self.passes += 1
            addresses = list(self._bits)
            for start in range(0, len(addresses), SLICE):
                self._clear_some(0, self._low, addresses[start : start + SLICE])
                await asyncio.sleep(0)
            self._stale = False

    def summary(self, address: str) -> Summary:
        stamps, low = self._timestamps, self._low
        bitmap = self._bits.get(address)
        seen = 0 if bitmap is None else bitmap.range_cardinality(low, low + len(stamps))
        if bitmap is None or seen == 0:
            return Summary(len(stamps), 0, None, None)
        first = bitmap.next_set_bit(low)  # published slots only: see update()
        last = bitmap[bitmap.rank(low + len(stamps) - 1) - 1]
        return Summary(len(stamps), seen, stamps[first - low], stamps[last - low])

    def runs(self, address: str, limit: int) -> list[PresenceRun]:
        """Runs of presence and absence over the last ``limit`` crawls, oldest first."""
        count = min(limit, len(self._timestamps))
        if count == 0:
            return []
        low, stamps = self._low, self._timestamps
        start, end = low + len(stamps) - count, low + len(stamps)
        present = BitMap(self._bits.get(address, ()))
        present.remove_range(0, start)
        edges = present ^ present.shift(1)  # slots whose presence differs from the one before
        edges.remove_range(0, start + 1)
        edges.remove_range(end, _END)
        cuts = [start, *edges, end]
        return [
            PresenceRun(stamps[a - low], stamps[b - 1 - low], a in present, b - a)
            for a, b in pairwise(cuts)
        ]

    def at_or_before(self, timestamp: int) -> int | None:
        """The latest known crawl at or before ``timestamp``."""
        index = bisect.bisect_right(self._timestamps, timestamp)
        return self._timestamps[index - 1] if index else None

    def before(self, timestamp: int) -> int | None:
        """The latest known crawl before ``timestamp``."""
        index = bisect.bisect_left(self._timestamps, timestamp)
        return self._timestamps[index - 1] if index else None

    def parts(self) -> tuple[int, list[int], dict[str, BitMap]]:
        """The lowest slot, the timestamps and the bitmaps (what the index file holds):
        read them, never change them."""
        return self._low, self._timestamps, self._bits

    @classmethod
    def restored(cls, low: int, timestamps: list[int], bits: dict[str, BitMap]) -> Presence:
        """A presence from the parts of an index file, already checked."""
        presence = cls()
        presence._low, presence._timestamps, presence._bits = low, timestamps, bits
        presence._known = set(timestamps)
        return presence

    def _new_slot(self, timestamp: int) -> int:
        index = bisect.bisect_left(self._timestamps, timestamp)
        if index == len(self._timestamps):
            slot = self._low + index
        elif index == 0:
            self.strip()
            self._low -= 1
            slot = self._low
        else:
            slot = self._low + index
            self._shift(slot, 1)
        self._timestamps.insert(index, timestamp)
        self._known.add(timestamp)
        return slot

    def _drop(self, timestamp: int) -> None:
        self.members += 1
        index = bisect.bisect_left(self._timestamps, timestamp)
        slot = self._low + index
        self._clear(slot, slot + 1)
        del self._timestamps[index]
        if index == 0:
            self._low += 1
        else:
            self._shift(slot + 1, -1)

    def _clear(self, start: int, end: int) -> None:
        """Remove slots ``start`` to ``end`` (exclusive) from every bitmap; forget addresses
        left in no crawl."""
        self.passes += 1
        self._clear_some(start, end, list(self._bits))

    def _clear_some(self, start: int, end: int, addresses: Iterable[str]) -> None:
        for address in addresses:
            bitmap = self._bits[address]
            bitmap.remove_range(start, end)
            if not bitmap:
                del self._bits[address]

    def _shift(self, start: int, by: int) -> None:
        """Move every bit at slot ``start`` or above by ``by`` (one up or down)."""
        self.passes += 1
        self.members += 1
        for bitmap in self._bits.values():
            if bitmap.max() >= start:
                upper = BitMap(bitmap)
                upper.remove_range(0, start)
                bitmap.remove_range(start, _END)
                bitmap |= upper.shift(by)
