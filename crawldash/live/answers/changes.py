"""``/api/changes``: which nodes joined and left between an earlier crawl and the latest,
encoded once per pair of crawls until their membership changes."""

from __future__ import annotations

import bisect
from collections import Counter

import msgspec

from ...crawl.address import NETWORKS, network_of
from ...models import ChangesBody, NetworkChanges
from ..stores.presence import Presence

MAX_BODIES = 64  # pairs of crawls kept
_encoder = msgspec.json.Encoder()


class Changes:
    """Answers of ``/api/changes`` by (earlier, latest) crawl."""

    def __init__(self, presence: Presence) -> None:
        self.presence = presence
        self._bodies: dict[tuple[int | None, int, int], bytes] = {}

    def body(self, latest: int, since: int | None = None) -> bytes | None:
        """``latest`` against the crawl before it, or against the latest crawl at or before
        ``since``; None if ``since`` is given and no crawl at or before it is known."""
        presence = self.presence
        if since is None:
            earlier = presence.before(latest)
        else:
            earlier = presence.at_or_before(min(since, latest))
            if earlier is None:
                return None
        key = (earlier, latest, presence.rewritten)
        body = self._bodies.get(key)
        if body is None:
            if len(self._bodies) >= MAX_BODIES:
                self._bodies.clear()
            body = self._bodies[key] = _encoder.encode(self._compare(earlier, latest))
        return body

    def _compare(self, earlier: int | None, latest: int) -> ChangesBody:
        if earlier is None or not self.presence.has(latest):
            joined: list[str] = []
            left: list[str] = []
        else:
            joined, left = differences(self.presence, earlier, latest)
        came, went = Counter(map(_network, joined)), Counter(map(_network, left))
        by_network = {name: NetworkChanges(came[name], went[name]) for name in NETWORKS}
        return ChangesBody(earlier, latest, joined, left, len(joined), len(left), by_network)


def differences(presence: Presence, before: int, after: int) -> tuple[list[str], list[str]]:
    """Addresses in crawl ``after`` but not ``before`` (joined), and the reverse (left);
    both crawls must be known. One pass over the addresses: a few milliseconds."""
    low, stamps, bits = presence.parts()
    old = low + bisect.bisect_left(stamps, before)
    new = low + bisect.bisect_left(stamps, after)
    joined: list[str] = []
    left: list[str] = []
    for address, bitmap in bits.items():
        was, now = old in bitmap, new in bitmap
        if was != now:
            (joined if now else left).append(address)
    return sorted(joined), sorted(left)


def _network(address: str) -> str:
    return network_of(address.rpartition(":")[0].strip("[]"))
