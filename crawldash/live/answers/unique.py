"""Distinct nodes over a window of crawls (``/api/unique``): how many addresses were in any
of the crawls held in the window that ends at the newest, from the presence.

An answer needs each address's newest slot: one pass over the addresses' bitmaps, made on
the event loop and in the way of every other request, the one cost here that grows with
the addresses held. It is made once per change of the presence (``NewestSlots``), and every
window asked for meanwhile (the dashboard asks three after each crawl) counts from it in a
few passes in C; each answer is kept until the next change.
"""

from __future__ import annotations

import bisect
import time
from dataclasses import dataclass
from itertools import compress

import msgspec
from pyroaring import BitMap

from ...models import UniqueBody
from ..bodies import Representation, represent
from ..stores.presence import Presence

_MAX_ANSWERS = 64  # windows kept per change of the presence
_encoder = msgspec.json.Encoder()


@dataclass(frozen=True)
class NewestSlots:
    """Each address's newest slot, in one order with its bitmap, as the presence held them
    when made. A bit past the newest published slot (a crawl still being added) may come
    later without a change of version: such a bit is never counted, so the slots stay
    right for every window until the presence's version changes."""

    bitmaps: list[BitMap]
    newest: list[int]

    @classmethod
    def of(cls, presence: Presence) -> NewestSlots:
        bitmaps = list(presence.parts()[2].values())
        return cls(bitmaps, list(map(BitMap.max, bitmaps)))


class UniqueCounts:
    """The answers of ``/api/unique``, kept until the presence changes."""

    def __init__(self, presence: Presence) -> None:
        self.presence = presence
        self._answers: dict[int, Representation] = {}
        self._slots: NewestSlots | None = None
        self._made_for: tuple[int, int] = (-1, -1)  # (id of the presence, its version)

    def body(self, window: int) -> Representation:
        """The JSON answer for a window of ``window`` seconds."""
        made_for = (id(self.presence), self.presence.version)
        if made_for != self._made_for:
            self._answers.clear()
            self._slots = None
            self._made_for = made_for
        elif len(self._answers) >= _MAX_ANSWERS:
            self._answers.clear()
        answer = self._answers.get(window)
        if answer is None:
            if self._slots is None:
                self._slots = NewestSlots.of(self.presence)
            body = _encoder.encode(unique(self.presence, window, self._slots))
            answer = self._answers[window] = represent(body, time.time())
        return answer


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
    count = sum(map(start.__le__, slots.newest)) - sum(map(end.__le__, slots.newest))
    # A bit past the newest slot is a crawl still being added, not published yet: an
    # address with one counts if it has a bit in the window.
    for bitmap in compress(slots.bitmaps, map(end.__le__, slots.newest)):
        count += bool(bitmap.range_cardinality(start, end))
    return UniqueBody(window, timestamps[first], newest, len(timestamps) - first, count)
