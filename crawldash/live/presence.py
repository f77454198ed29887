"""Which addresses were in each crawl the history holds.

One compressed bitmap (pyroaring) per address over crawl *slots*: consecutive integers
given to the crawls whose membership is known, in time order. A node present for weeks is
one run in its bitmap, so memory follows churn, not crawls times nodes: with 20,000
addresses over 8,640 crawls (12,000 steady, 8,000 toggling in 1% of crawls) this took
8 MB, where one bitmap per crawl took 70 MB (see the README's "Node presence").

The oldest crawl has slot ``_low``. A newer crawl takes the next slot, an older one (the
background counting adds them newest first) the slot before ``_low``; one inserted
between two known crawls shifts the slots after it, which is rare and costs one pass.
No aiohttp here; everything runs on the event loop, in a few milliseconds per crawl.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import pairwise

import msgspec
from pyroaring import BitMap

from ..models import Base, PresenceRun

BASE_SLOT = 1 << 31  # room below for older crawls, above for newer ones
_END = 1 << 32  # past the last possible slot


@dataclass(frozen=True)
class Summary:
    """One address over the crawls whose membership is known."""

    crawls: int  # crawls whose membership is known
    seen: int  # of them with the address
    first_seen: int | None  # the first and last crawl timestamps with it
    last_seen: int | None


class _File(Base, frozen=True, array_like=True):
    """The presence index on disk."""

    format: int
    low: int
    timestamps: list[int]
    addresses: list[str]
    bitmaps: list[bytes]  # serialized, in the order of ``addresses``


_FORMAT = 1
_file_encoder = msgspec.msgpack.Encoder()
_file_decoder = msgspec.msgpack.Decoder(_File)


class Presence:
    """Membership of every crawl held, by address."""

    def __init__(self) -> None:
        self._bits: dict[str, BitMap] = {}
        self._timestamps: list[int] = []  # ascending; slot of index i is _low + i
        self._known: set[int] = set()
        self._low = BASE_SLOT
        self.version = 0  # changes with any membership
        self.rewritten = 0  # changes when a known crawl's membership changes or is dropped

    def __len__(self) -> int:
        return len(self._timestamps)

    def has(self, timestamp: int) -> bool:
        return timestamp in self._known

    def timestamps(self) -> list[int]:
        return list(self._timestamps)

    def add(self, timestamp: int, addresses: Iterable[str]) -> None:
        """The addresses in a crawl; replaces what was known of it."""
        if timestamp in self._known:
            slot = self._low + bisect.bisect_left(self._timestamps, timestamp)
            self._clear(slot, slot + 1)
            self.rewritten += 1
        else:
            slot = self._new_slot(timestamp)
        bits = self._bits
        for address in addresses:
            bitmap = bits.get(address)
            if bitmap is None:
                bitmap = bits[address] = BitMap()
            bitmap.add(slot)
        self.version += 1

    def retain(self, keep: Callable[[int], bool]) -> None:
        """Forget the crawls ``keep`` refuses (those the history no longer holds)."""
        dropped = [t for t in self._timestamps if not keep(t)]
        if not dropped:
            return
        prefix = len(dropped) if dropped == self._timestamps[: len(dropped)] else 0
        if prefix:  # the oldest: the usual case, one pass whatever their number
            self._clear(self._low, self._low + prefix)
            del self._timestamps[:prefix]
            self._low += prefix
        for timestamp in dropped[prefix:]:
            self._drop(timestamp)
        self._known.difference_update(dropped)
        self.version += 1
        self.rewritten += 1

    def summary(self, address: str) -> Summary:
        bitmap = self._bits.get(address)
        if bitmap is None:
            return Summary(len(self._timestamps), 0, None, None)
        first, last = bitmap.min() - self._low, bitmap.max() - self._low
        stamps = self._timestamps
        return Summary(len(stamps), len(bitmap), stamps[first], stamps[last])

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

    def differences(self, before: int, after: int) -> tuple[list[str], list[str]]:
        """Addresses in crawl ``after`` but not ``before`` (joined), and the reverse (left);
        both crawls must be known. One pass over the addresses: a few milliseconds."""
        old = self._low + bisect.bisect_left(self._timestamps, before)
        new = self._low + bisect.bisect_left(self._timestamps, after)
        joined: list[str] = []
        left: list[str] = []
        for address, bitmap in self._bits.items():
            was, now = old in bitmap, new in bitmap
            if was != now:
                (joined if now else left).append(address)
        return sorted(joined), sorted(left)

    def at_or_before(self, timestamp: int) -> int | None:
        """The latest known crawl at or before ``timestamp``."""
        index = bisect.bisect_right(self._timestamps, timestamp)
        return self._timestamps[index - 1] if index else None

    def before(self, timestamp: int) -> int | None:
        """The latest known crawl before ``timestamp``."""
        index = bisect.bisect_left(self._timestamps, timestamp)
        return self._timestamps[index - 1] if index else None

    def encode(self) -> bytes:
        """The index file's bytes; a few milliseconds, so it is made on the loop. Bitmaps
        are turned into runs here, after each change: a run then stays a run as crawls are
        added (8 bytes, where a plain array takes 2 per crawl)."""
        bitmaps = []
        for bitmap in self._bits.values():
            bitmap.run_optimize()
            bitmaps.append(bitmap.serialize())
        return _file_encoder.encode(
            _File(_FORMAT, self._low, self._timestamps, list(self._bits), bitmaps)
        )

    @classmethod
    def decode(cls, data: bytes) -> Presence:
        """An index file's bytes; ValueError if they do not make a consistent index."""
        try:
            saved = _file_decoder.decode(data)
        except msgspec.DecodeError as exc:
            raise ValueError(str(exc)) from None
        stamps = saved.timestamps
        if saved.format != _FORMAT or len(saved.addresses) != len(saved.bitmaps):
            raise ValueError("not a presence index of this version")
        if any(a >= b for a, b in pairwise(stamps)):
            raise ValueError("crawls out of order")
        presence = cls()
        presence._low, presence._timestamps, presence._known = saved.low, stamps, set(stamps)
        slots = range(saved.low, saved.low + len(stamps))
        for address, data_ in zip(saved.addresses, saved.bitmaps, strict=True):
            bitmap = BitMap.deserialize(data_)
            if not bitmap or bitmap.min() not in slots or bitmap.max() not in slots:
                raise ValueError(f"the bitmap of {address} is out of range")
            presence._bits[address] = bitmap
        return presence

    def _new_slot(self, timestamp: int) -> int:
        index = bisect.bisect_left(self._timestamps, timestamp)
        if index == len(self._timestamps):
            slot = self._low + index
        elif index == 0:
            self._low -= 1
            slot = self._low
        else:
            slot = self._low + index
            self._shift(slot, 1)
        self._timestamps.insert(index, timestamp)
        self._known.add(timestamp)
        return slot

    def _drop(self, timestamp: int) -> None:
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
        empty = []
        for address, bitmap in self._bits.items():
            bitmap.remove_range(start, end)
            if not bitmap:
                empty.append(address)
        for address in empty:
            del self._bits[address]

    def _shift(self, start: int, by: int) -> None:
        """Move every bit at slot ``start`` or above by ``by`` (one up or down)."""
        for bitmap in self._bits.values():
            if bitmap.max() >= start:
                upper = BitMap(bitmap)
                upper.remove_range(0, start)
                bitmap.remove_range(start, _END)
                bitmap |= upper.shift(by)
