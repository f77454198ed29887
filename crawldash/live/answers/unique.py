"""Distinct nodes over a window of crawls (``/api/unique``): how many addresses were in any
of the crawls held in the window that ends at the newest, from the presence.

An answer needs each address's newest slot: one pass over the addresses' bitmaps, on the
event loop, the one cost here that grows with the addresses held. It is made once per
change of the members (``NewestSlots``, sorted), between a new crawl's bits being set and
its publishing (``prepare``, in slices), so that the first answers after a switch, asked
together with every other endpoint's, count at once: a window is two bisections. Each
answer is kept until the presence changes.
"""

from __future__ import annotations

import asyncio
import bisect
import time
from dataclasses import dataclass
from itertools import compress

import msgspec
from pyroaring import BitMap

from ...models import UniqueBody
from ..bodies import Representation, represent
from ..stores.presence import SLICE, Presence

_MAX_ANSWERS = 64  # windows kept per change of the presence
_encoder = msgspec.json.Encoder()


@dataclass(frozen=True)
class NewestSlots:
    """Each address's newest slot, in one order with its bitmap, and all of them sorted, as
    the presence held them when made. A bit past the newest published slot (a crawl still
    being added) is never counted, so the slots stay right for every window until the
    presence's members change (``Presence.members``)."""

    bitmaps: list[BitMap]
    newest: list[int]
    ascending: list[int]

    @classmethod
    def of(cls, presence: Presence) -> NewestSlots:
        bitmaps = list(presence.parts()[2].values())
        return cls.with_order(bitmaps, list(map(BitMap.max, bitmaps)))

    @classmethod
    async def in_slices(cls, presence: Presence) -> NewestSlots:
        """``of``, yielding to the event loop every SLICE bitmaps."""
        bitmaps = list(presence.parts()[2].values())
        newest: list[int] = []
        for start in range(0, len(bitmaps), SLICE):
            newest.extend(map(BitMap.max, bitmaps[start : start + SLICE]))
            await asyncio.sleep(0)
        return cls.with_order(bitmaps, newest)

    @classmethod
    def with_order(cls, bitmaps: list[BitMap], newest: list[int]) -> NewestSlots:
        return cls(bitmaps, newest, sorted(newest))


class UniqueCounts:
    """The answers of ``/api/unique``, kept until the presence changes."""

    def __init__(self, presence: Presence) -> None:
        self.presence = presence
        self._answers: dict[int, Representation] = {}
        self._slots: NewestSlots | None = None
        self._made_for: tuple[int, int] = (-1, -1)  # (id of the presence, its version)
        self._slots_for: tuple[int, int] = (-1, -1)  # (id of the presence, its members)

    def body(self, window: int) -> Representation:
        """The JSON answer for a window of ``window`` seconds."""
        made_for = (id(self.presence), self.presence.version)
        if made_for != self._made_for or len(self._answers) >= _MAX_ANSWERS:
            self._answers.clear()
            self._made_for = made_for
        answer = self._answers.get(window)
        if answer is None:
            body = _encoder.encode(unique(self.presence, window, self._newest_slots()))
            answer = self._answers[window] = represent(body, time.time())
        return answer

    async def prepare(self) -> None:
        """Make each address's newest slot now, in slices, unless made: the presence calls
        it once a new crawl's bits are set, before the crawl is published."""
        slots_for = (id(self.presence), self.presence.members)
        if slots_for != self._slots_for:
            slots = await NewestSlots.in_slices(self.presence)
            if (id(self.presence), self.presence.members) == slots_for:  # still right
                self._slots, self._slots_for = slots, slots_for

    def _newest_slots(self) -> NewestSlots:
        slots_for = (id(self.presence), self.presence.members)
        if self._slots is None or slots_for != self._slots_for:
            self._slots, self._slots_for = NewestSlots.of(self.presence), slots_for
        return self._slots


def unique(presence: Presence, window: int, slots: NewestSlots | None = None) -> UniqueBody:
    """The crawls whose membership is known in ``(newest - window, newest]``, and how many
    distinct addresses were in any of them.

    Args:
        presence: which addresses each crawl had.
        window: seconds.
        slots: each address's newest slot, made of ``presence`` at its version now (made
            here if not given).

    Returns:
        The answer; with no crawl known, no crawl and no address.
    """
    low, timestamps, _ = presence.parts()
    if not timestamps:
        return UniqueBody(window, None, None, 0, 0)
    if slots is None:
        slots = NewestSlots.of(presence)
    newest = timestamps[-1]
    first = bisect.bisect_right(timestamps, newest - window)
    start, end = low + first, low + len(timestamps)  # the window's slots; end is past it
    ascending = slots.ascending
    past = bisect.bisect_left(ascending, end)
    count = past - bisect.bisect_left(ascending, start)
    # A bit past the newest slot is a crawl still being added, not published yet: an
    # address with one counts if it has a bit in the window.
    if past < len(ascending):
        for bitmap in compress(slots.bitmaps, map(end.__le__, slots.newest)):
            count += bool(bitmap.range_cardinality(start, end))
    return UniqueBody(window, timestamps[first], newest, len(timestamps) - first, count)
