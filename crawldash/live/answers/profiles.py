"""What the crawls said about each node, and when that changed (``/api/profile``): as each
crawl is served, every node in both it and the crawl before has its user agent, protocol
version, services, country and provider (ASN) compared, and each difference is kept.

The comparison runs in the serving process, beside the answers, so it is a few passes in C
over the crawl: each node of the new crawl is looked up in the crawl before by the
fingerprint of its compared values that the loader made (``NodeCatalog.fingerprints``);
only a node whose fingerprint differs is compared column by column, and its JSON decoded if
one does. After a new loader process (another hash seed) every node is compared
so, once. Changes are kept in memory, at most ``MAX_PER_NODE`` per node and
``MAX_NODES`` nodes; they cover the crawls served since crawldash started.

A crawl's changes are found after it is served, not on the way to its being served: from
the switch until they are in (``expect``, then ``take`` or ``settle``), an answer waits
for them (``settled``), so that none is of the crawl before."""

from __future__ import annotations

import asyncio
from bisect import bisect_left
from collections import OrderedDict
from itertools import compress
from operator import ne

import msgspec

from ...models import Change, Node, ProfileBody
from ..snapshot.catalog import NodeCatalog
from ..snapshot.prepared import PreparedSnapshot

FIELDS = ("user_agent", "protocol_version", "services", "country", "asn")
MAX_PER_NODE = 32  # changes kept per node, newest
MAX_NODES = 200_000  # nodes with changes kept; past it, those changed least recently go
_node = msgspec.json.Decoder(Node)
_encoder = msgspec.json.Encoder()


class Profiles:
    """Each node's changes, from the crawls served one after another."""

    def __init__(self) -> None:
        self.since: int | None = None
        self.version = 0  # bumped with every crawl compared
        self._changes: OrderedDict[str, list[Change]] = OrderedDict()
        self._bodies: dict[str, bytes] = {}
        self._settled = asyncio.Event()  # no crawl served is waiting for its changes
        self._settled.set()

    def expect(self) -> None:
        """A crawl is served whose changes are still being found: answers wait for them."""
        self._settled.clear()

    def settle(self) -> None:
        """The crawl served has no changes to wait for (none before it, or its comparison
        failed): answers go on from what is kept."""
        self._settled.set()

    async def settled(self) -> None:
        """Return once the changes of the crawl served are in."""
        await self._settled.wait()

    def compare(
        self, before: PreparedSnapshot, after: PreparedSnapshot
    ) -> list[tuple[str, Change]]:
        """The differences between two crawls served one after the other. Pure: safe in a
        worker thread, the result taken in on the event loop with ``take``.

        Args:
            before: the crawl served until now.
            after: the crawl served from now on.

        Returns:
            Each node's changes, as (address, change).
        """
        old, new = before.catalog, after.catalog
        held = dict(zip(old.addresses, old.fingerprints, strict=True))
        # Passes in C: the nodes whose fingerprint differs, or that are new (None before).
        differ = map(ne, map(held.get, new.addresses), new.fingerprints)
        found: list[tuple[str, Change]] = []
        for j in compress(range(len(new.addresses)), differ):
            address = new.addresses[j]
            if address not in held:  # new in this crawl
                continue
            i = bisect_left(old.addresses, address)  # the addresses are sorted
            if _columns_differ(old, i, new, j):  # not only a fingerprint of another process
                changes = _changes(before.nodes.at(i), after.nodes.at(j), after.timestamp)
                found.extend((address, change) for change in changes)
        return found

    def take(self, since: int, found: list[tuple[str, Change]]) -> None:
        """Keep what ``compare`` found, comparing from crawl ``since`` on."""
        if self.since is None:
            self.since = since
        for address, change in found:
            kept = self._changes.pop(address, [])
            kept.insert(0, change)
            del kept[MAX_PER_NODE:]
            self._changes[address] = kept
        while len(self._changes) > MAX_NODES:
            self._changes.popitem(last=False)
        self.version += 1
        self._bodies.clear()
        self._settled.set()

    def body(self, address: str) -> bytes:
        """The ``/api/profile`` answer of a canonical address, kept until the next crawl."""
        body = self._bodies.get(address)
        if body is None:
            answer = ProfileBody(address, self.since, self._changes.get(address, []))
            body = self._bodies[address] = _encoder.encode(answer)
            if len(self._bodies) > 4096:
                self._bodies.clear()
        return body


def _columns_differ(old: NodeCatalog, i: int, new: NodeCatalog, j: int) -> bool:
    """Whether a column the catalog holds differs for one node in two crawls (codes into
    each crawl's own values, so compared through them)."""
    return (
        old.agents.values[old.agents.codes[i]] != new.agents.values[new.agents.codes[j]]
        or old.versions[i] != new.versions[j]
        or old.services[i] != new.services[j]
        or old.countries.values[old.countries.codes[i]]
        != new.countries.values[new.countries.codes[j]]
        or old.asns.values[old.asns.codes[i]] != new.asns.values[new.asns.codes[j]]
    )


def _changes(before: bytes, after: bytes, crawl: int) -> list[Change]:
    old, new = _node.decode(before), _node.decode(after)
    return [
        Change(crawl, name, getattr(old, name), getattr(new, name))
        for name in FIELDS
        if getattr(old, name) != getattr(new, name)
    ]
