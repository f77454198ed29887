"""Each crawl's nodes counted by value (country, provider, client, protocol version, service
bit, height band), as the history keeps them: codes into one table of values shared by
every crawl, packed into a few bytes per value a crawl has. A long history then costs a
short bytes object per crawl, not a Python object per count, in memory and in its index.

A crawl's counts are one array of numbers, for each key in KEYS order: how many values it
has, then each value's code and its number of nodes. The array is stored with its item
width first (``H``: 2 bytes, when every number fits, else ``I``: 4), little-endian.
"""

from __future__ import annotations

import heapq
import sys
from array import array
from collections.abc import Iterable, Mapping

from ...crawl.breakdown import Value

KEYS = ("country", "asn", "user_agent", "version", "services", "height")
WHOLE = "user_agent"  # kept whole, every value: any text may be matched against it
# Values kept per crawl of every other key, the most nodes first: far more than a chart
# shows (50 at most), and a crawl's long tail of providers costs nothing beyond them (its
# nodes count as other there).
KEPT = 256
UNKNOWN = 0  # the code of "no value" (None), in every key
_WIDTHS = {ord("H"): "H", ord("I"): "I"}
_SWAP = sys.byteorder == "big"  # stored little-endian
Tallies = Mapping[str, Iterable[tuple[Value, int]]]  # key -> (value, nodes) pairs


class Values:
    """The table of values every crawl's counts refer to, by key: a value's code is its
    place in its key's list, from 1 (0 is no value)."""

    def __init__(self, names: list[list[str]] | None = None) -> None:
        """A table of values, empty or as an index file kept it.

        Args:
            names: each key's values in code order, as ``copy()`` gave them; none: an
                empty table.

        Raises:
            ValueError: not one list per key, or a value listed twice in one.
        """
        self.names = [[] for _ in KEYS] if names is None else [list(v) for v in names]
        if len(self.names) != len(KEYS):
            raise ValueError(f"values of {len(self.names)} keys, not {len(KEYS)}")
        self._codes = [{name: code for code, name in enumerate(v, 1)} for v in self.names]
        if any(len(codes) != len(v) for codes, v in zip(self._codes, self.names, strict=True)):
            raise ValueError("a value is listed twice")
        self._lowered: list[str] = []  # user agents in lower case, for match()

    def copy(self) -> list[list[str]]:
        """Each key's values, as an index file keeps them."""
        return [list(values) for values in self.names]

    def pack(self, tallies: Tallies) -> bytes:
        """A crawl's counts, packed; its new values are added to the table.

        Args:
            tallies: per key of KEYS, each value (None for none) and its nodes; a key not
                given counts no value.

        Returns:
            The counts' bytes: every value of ``WHOLE``, and the KEPT with most nodes of
            each other key.
        """
        numbers: list[int] = []
        for index, key in enumerate(KEYS):
            pairs = list(tallies.get(key, ()))
            if key != WHOLE and len(pairs) > KEPT:
                pairs = heapq.nlargest(KEPT, pairs, key=lambda pair: pair[1])
            numbers.append(len(pairs))
            codes = self._codes[index]
            for value, count in pairs:
                if value is None:
                    code = UNKNOWN
                else:
                    name = str(value)
                    code = codes.get(name) or self._add(index, name)
                numbers += (code, count)
        return _packed(numbers)

    def _add(self, index: int, name: str) -> int:
        self.names[index].append(name)
        code = self._codes[index][name] = len(self.names[index])
        return code

    def name(self, index: int, code: int) -> str:
        """The value of a code of the key at ``index`` of KEYS (not UNKNOWN)."""
        return self.names[index][code - 1]

    def matching(self, text: str) -> frozenset[int]:
        """The codes of the user agents that hold ``text``, in any case."""
        agents = self.names[KEYS.index(WHOLE)]
        self._lowered.extend(agent.lower() for agent in agents[len(self._lowered) :])
        lowered = text.lower()
        return frozenset(code for code, agent in enumerate(self._lowered, 1) if lowered in agent)

    def check(self, packed: bytes) -> None:
        """Raise ValueError unless ``packed`` is counts of every key, in this table."""
        numbers = unpacked(packed)
        at = 0
        for names in self.names:
            if at >= len(numbers):
                raise ValueError("counts of fewer keys than expected")
            end = at + 1 + 2 * numbers[at]
            codes = numbers[at + 1 : end : 2]
            if end > len(numbers) or (codes and max(codes) > len(names)):
                raise ValueError("counts that the table of values does not name")
            at = end
        if at != len(numbers):
            raise ValueError("counts of more keys than expected")


def counts_of(packed: bytes, index: int) -> dict[int, int]:
    """A crawl's counts of the key at ``index`` of KEYS: code -> nodes."""
    numbers = unpacked(packed)
    at = 0
    for _ in range(index):
        at += 1 + 2 * numbers[at]
    pairs = numbers[at + 1 : at + 1 + 2 * numbers[at]]
    return dict(zip(pairs[::2], pairs[1::2], strict=True))


def unpacked(packed: bytes) -> array[int]:
    """The numbers of packed counts; ValueError if they are not such bytes."""
    kind = _WIDTHS.get(packed[0]) if packed else None
    if kind is None:
        raise ValueError("counts of an unknown width")
    numbers = array(kind)
    numbers.frombytes(memoryview(packed)[1:])  # ValueError if cut in the middle of one
    if _SWAP:
        numbers.byteswap()
    return numbers


def _packed(numbers: list[int]) -> bytes:
    kind = "H" if max(numbers, default=0) < 1 << 16 else "I"
    packed = array(kind, numbers)
    if _SWAP:
        packed.byteswap()
    return kind.encode() + packed.tobytes()
