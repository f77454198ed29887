"""The latest crawl's search text and its index, for ``q``: which nodes contain a text.

Built once per crawl in the loader process, with the catalog. Every text of one to three
characters found in some node's search text (address, hostname, user agent and
organisation, lowercased) is listed with the nodes that contain it, as a compressed bitmap
of their positions. A text of three characters or fewer is then one lookup; a longer one is
the nodes that contain all of its three-character parts (intersections in C), each of them
checked for the whole text: only those nodes' text is read, in steps of ``STEP`` nodes (a
generator that yields between them), so that the event loop answers other requests in
between.

It crosses to the serving process as a few objects, not one per gram: the keys as one
string, the bitmaps serialized one after another into one bytes object (which follows the
reply's pickle, read without the GIL: see ``process.py``), and offsets.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Generator, Iterable
from dataclasses import dataclass
from typing import TypeVar, cast

from pyroaring import BitMap

GRAM = 3  # the longest text indexed; longer ones are looked up by their parts this long
KEY = GRAM + 1  # a key: its gram's length as one character, then the gram padded
STEP = 2048  # nodes checked, or taken from an order, between two yields to the loop

Steps = Generator[None, None, BitMap]
T = TypeVar("T")


def _key(gram: str) -> str:
    # The length first, so that padding never makes two grams one key, whatever they hold.
    return chr(len(gram)) + gram + "\0" * (GRAM - len(gram))


class _Keys:
    """The keys string as a sequence of keys, for bisect."""

    def __init__(self, keys: str) -> None:
        self.keys = keys

    def __len__(self) -> int:
        return len(self.keys) // KEY

    def __getitem__(self, at: int) -> str:
        return self.keys[at * KEY : (at + 1) * KEY]


@dataclass(frozen=True)
class SearchIndex:
    text: str  # per node: its search text, then "\n"
    starts: array[int]  # where each node's text starts in ``text``, and the end
    keys: str  # every gram's key, sorted, KEY characters each
    maps: bytes  # each key's bitmap of positions, serialized, in the order of ``keys``
    map_starts: array[int]  # where each bitmap starts in ``maps``, and the end

    @classmethod
    def build(cls, texts: list[str]) -> SearchIndex:
        """The index of ``texts`` (each node's search text, by position)."""
        postings: dict[str, list[int]] = {}
        for position, text in enumerate(texts):
            grams = set(text)
            grams.update([text[i : i + 2] for i in range(len(text) - 1)])
            grams.update([text[i : i + 3] for i in range(len(text) - 2)])
            for gram in grams:
                found = postings.get(gram)
                if found is None:
                    postings[gram] = [position]
                else:
                    found.append(position)
        keyed = sorted((_key(gram), gram) for gram in postings)
        maps = [BitMap(postings[gram]).serialize() for _, gram in keyed]
        return cls(
            text="".join(text + "\n" for text in texts),
            starts=offsets(len(text) + 1 for text in texts),
            keys="".join(key for key, _ in keyed),
            maps=b"".join(maps),
            map_starts=offsets(map(len, maps)),
        )

    def containing(self, gram: str) -> BitMap:
        """The nodes whose text contains ``gram`` (of at most GRAM characters)."""
        key = _key(gram)
        keys = _Keys(self.keys)
        at = bisect_left(keys, key)
        if at == len(keys) or keys[at] != key:
            return BitMap()
        return BitMap.deserialize(self.maps[self.map_starts[at] : self.map_starts[at + 1]])

    def searched(self, text: str) -> Steps:
        """The nodes whose search text contains ``text`` (lowercased), in steps."""
        if "\n" in text or not text:  # "\n" ends each node's text: it is in none
            return BitMap() if "\n" in text else BitMap(range(len(self.starts) - 1))
        if len(text) <= GRAM:
            return self.containing(text)
        parts = {text[i : i + GRAM] for i in range(len(text) - GRAM + 1)}
        first, *others = (self.containing(part) for part in parts)
        candidates = first.intersection(*others)
        found = BitMap()
        whole, starts = self.text, self.starts
        chosen = candidates.to_array()
        for at in range(0, len(chosen), STEP):
            step = chosen[at : at + STEP]
            found.update([i for i in step if text in whole[starts[i] : starts[i + 1]]])
            yield
        return found


def offsets(lengths: Iterable[int]) -> array[int]:
    """Offsets where each item starts, and the end, from their lengths."""
    starts = array("I", [0])
    total = 0
    for length in lengths:
        total += length
        starts.append(total)
    return starts


def finished(steps: Generator[None, None, T]) -> T:
    """What ``steps`` return, run through without a pause."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return cast(T, done.value)
