"""Distinct nodes over a window of crawls (``/api/unique``): how many addresses were in any
of the crawls held in the window that ends at the newest, from the presence.

One pass over the addresses' bitmaps (the newest slot each has, and for the few with a bit
past the newest published crawl, whether any falls in the window), made once per window
asked for after each change of the presence and kept until the next.
"""

from __future__ import annotations

import bisect
import time

import msgspec

from ...models import UniqueBody
from ..bodies import Representation, represent
from ..stores.presence import Presence

_MAX_ANSWERS = 64  # windows kept per change of the presence
_encoder = msgspec.json.Encoder()


class UniqueCounts:
    """The answers of ``/api/unique``, kept until the presence changes."""

    def __init__(self, presence: Presence) -> None:
        self.presence = presence
        self._answers: dict[int, Representation] = {}
        self._made_for: tuple[int, int] = (-1, -1)  # (id of the presence, its version)

    def body(self, window: int) -> Representation:
        """The JSON answer for a window of ``window`` seconds."""
        made_for = (id(self.presence), self.presence.version)
        if made_for != self._made_for or len(self._answers) >= _MAX_ANSWERS:
            self._answers.clear()
            self._made_for = made_for
        answer = self._answers.get(window)
        if answer is None:
            body = _encoder.encode(unique(self.presence, window))
            answer = self._answers[window] = represent(body, time.time())
        return answer


def unique(presence: Presence, window: int) -> UniqueBody:
    """The crawls whose membership is known in ``(newest - window, newest]``, and how many
    distinct addresses were in any of them.

    Args:
        presence: which addresses each crawl had.
        window: seconds.

    Returns:
        The answer; with no crawl known, no crawl and no address.
    """
    low, timestamps, bits = presence.parts()
    if not timestamps:
        return UniqueBody(window, None, None, 0, 0)
    newest = timestamps[-1]
    first = bisect.bisect_right(timestamps, newest - window)
    start, end = low + first, low + len(timestamps)  # the window's slots; end is past it
    count = 0
    for bitmap in bits.values():
        last = bitmap.max()
        # A bit past the newest slot is a crawl still being added: not published yet.
        if last >= start and (last < end or bitmap.range_cardinality(start, end)):
            count += 1
    return UniqueBody(window, timestamps[first], newest, len(timestamps) - first, count)
