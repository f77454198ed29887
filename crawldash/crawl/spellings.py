"""What a process remembers of the hosts it has seen: per port, each host as a crawler
wrote it and its canonical address, and each address's network.

Consecutive crawls share most of their nodes, and most rows of a crawl are on its usual
port: a crawl whose hosts were seen before is spelled in passes in C, a lookup per row,
with a Python step only for a row on another port or a host new to the memory. The
counting of older crawls keeps one memory across the crawls it counts (up to KNOWN_MAX
hosts, ``Spellings.now``); the loader process keeps the last crawl's, which the next
crawl's load starts from (``live/loader/new_crawl.py``).
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import compress
from operator import attrgetter
from typing import Protocol

from .address import NETWORKS, AddressError, canonical_address, network_of
from .breakdown import host_of

KNOWN_MAX = 500_000  # hosts a count remembers; past it, its memory starts again
UNUSABLE = ""  # the address of a row whose host or port is not usable: never a real one
NETWORK_INDEX = {network: index for index, network in enumerate(NETWORKS)}
_host, _port = attrgetter("address"), attrgetter("port")


class Addressed(Protocol):
    """A row of either array form: its host as written, and its port."""

    @property
    def address(self) -> str: ...

    @property
    def port(self) -> int: ...


class Spellings:
    """Per port, each host as written and its canonical address (UNUSABLE if it has none);
    and each address's network (its index in NETWORKS)."""

    current: Spellings | None = None  # the memory counts use, until it is full

    def __init__(self) -> None:
        self.by_port: dict[int, dict[str, str]] = {}
        self.networks: dict[str, int] = {}

    @classmethod
    def now(cls) -> Spellings:
        """The memory for the next count: a new one once this one holds KNOWN_MAX hosts. A
        count under way in another thread keeps the one it began with."""
        current = cls.current
        if current is None or sum(map(len, current.by_port.values())) >= KNOWN_MAX:
            current = cls.current = cls()
        return current

    def addresses(self, rows: Sequence[Addressed]) -> list[str]:
        """Each row's canonical address (UNUSABLE if it has none), in the order of the
        rows. Most rows are of a host seen before on the crawl's usual port: one lookup
        each, in C."""
        if not rows:
            return []
        hosts: list[str] = list(map(_host, rows))
        ports: list[int] = list(map(_port, rows))
        usual = usual_port(ports)
        addresses: list[str | None] = list(map(self.by_port.setdefault(usual, {}).get, hosts))
        if ports.count(usual) < len(ports):  # the few rows on other ports, found in C
            for index in compress(range(len(ports)), map(usual.__ne__, ports)):
                addresses[index] = self.address(hosts[index], ports[index])
        with contextlib.suppress(ValueError):  # a None left: a host new on the usual port
            index = addresses.index(None)
            while True:
                addresses[index] = self.address(hosts[index], usual)
                index = addresses.index(None, index + 1)
        return addresses  # type: ignore[return-value]  # no None is left

    def network_names(self, addresses: Iterable[str]) -> dict[str, str]:
        """Each address's network by name, for addresses this memory spelled (in C)."""
        addresses = list(addresses)
        indexes = map(self.networks.__getitem__, addresses)
        return dict(zip(addresses, map(NETWORKS.__getitem__, indexes), strict=True))

    def network_counts(self, addresses: Iterable[str]) -> Counter[int]:
        """Canonical addresses counted by network (by index in NETWORKS): those of a crawl
        counted before this memory started again are worked out anew."""
        known = self.networks
        return Counter(
            known[a] if a in known else NETWORK_INDEX[network_of(host_of(a))] for a in addresses
        )

    def address(self, host: str, port: int) -> str:
        """The canonical address of a host as written and a port, remembered."""
        known = self.by_port.setdefault(port, {})
        address = known.get(host)
        if address is None:
            address = spelled(host, port)
            if address != UNUSABLE:
                self.networks[address] = NETWORK_INDEX[network_of(host_of(address))]
            # Last: a count in another thread that finds the host (``addresses``) then
            # looks up its network, which must be there already.
            known[host] = address
        return address


def spelled(host: str, port: int) -> str:
    """The canonical address of a host as written and a port; UNUSABLE if it has none."""
    try:
        return canonical_address(host, port)
    except AddressError:
        return UNUSABLE


def each_spelled(rows: Sequence[Addressed]) -> list[str]:
    """Each row's canonical address (UNUSABLE if it has none), spelled on its own: where
    no memory is kept, this costs less than keeping one for a single crawl."""
    return list(map(spelled, map(_host, rows), map(_port, rows)))


def usual_port(ports: list[int]) -> int:
    """The crawl's most common port (the first row's, if half the rows have it)."""
    first = ports[0]
    if ports.count(first) * 2 >= len(ports):
        return first
    return Counter(ports).most_common(1)[0][0]
