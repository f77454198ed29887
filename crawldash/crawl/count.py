"""Counting a crawl for the history: how many nodes, by network and by every key of the
breakdowns, its consensus height and which addresses it had, without building its nodes.

A long history repeats the same nodes crawl after crawl, so the canonical spelling and
network of each ``(host, port)`` a process has seen are kept (up to KNOWN_MAX of them):
a process that counts many crawls spells each node once, not once per crawl. Past the
decoding of the rows, a crawl costs one Python step per row (its address) and passes in C
(``Counter`` over the rows) for its networks and values.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import Any

import msgspec

from ..models import ExportRow
from .address import NETWORKS, AddressError, canonical_address, network_of
from .breakdown import Counted, Value, consensus_of, tally
from .decode import (
    Rules,
    check_usable,
    decode_snapshot,
    does_not_decode,
    export_decoder,
    form_of,
    tally_networks,
)
from .files import read_file

KNOWN_MAX = 500_000  # (host, port) pairs remembered; past it, the memory starts again
_NETWORK_INDEX = {network: index for index, network in enumerate(NETWORKS)}
_known: dict[tuple[str, int], str] = {}  # -> the canonical address
_networks: dict[str, int] = {}  # canonical address -> its network's index in NETWORKS
_height = attrgetter("height")


@dataclass(frozen=True)
class CrawlCount:
    """What the history keeps of an older crawl: its nodes, in all and per network (in
    NETWORKS order), its consensus height, which addresses were in it, and its nodes
    counted by value for every key of the breakdowns but network."""

    nodes: int
    networks: tuple[int, ...]
    latest_height: int
    addresses: list[str]  # canonical host:port
    tallies: dict[str, dict[Value, int]]  # key -> value -> nodes (None: no value)


def read_count(path: Path, rules: Rules) -> CrawlCount:
    """A crawl file counted: nodes in all, per network and per value, height and addresses."""
    return count_nodes(read_file(path, rules.max_file_size)[0], rules.allow_empty)


def count_nodes(data: bytes, allow_empty: bool = False) -> CrawlCount:
    """Count a crawl. Its rows are decoded whole, as the loader decodes them, so a crawl the
    loader would refuse is refused here too, with the same kind."""
    if form_of(data) == b"{":  # the API form: rare, counted from its decoded snapshot
        snapshot = decode_snapshot(data, 0, allow_empty)
        keyed = snapshot.nodes
        tallied = tally_networks(network_of(a.rpartition(":")[0].strip("[]")) for a in keyed)
        by_value = _plain(tally(keyed.values(), snapshot.latest_height))
        return CrawlCount(len(keyed), tallied, snapshot.latest_height, list(keyed), by_value)
    try:
        rows = export_decoder.decode(data)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise does_not_decode(exc) from None
    if len(_known) >= KNOWN_MAX:  # between two crawls: a crawl's addresses stay known
        _known.clear()
        _networks.clear()
    latest: dict[str, Any] = {}  # address -> its row; the later of two rows wins
    skipped = 0
    for row in rows:
        address = _known.get((row.address, row.port))
        if address is None:
            try:
                address = _remember(row.address, row.port)
            except AddressError:
                skipped += 1
                continue
        latest[address] = row
    check_usable(len(latest), skipped, allow_empty)
    networks = Counter(map(_networks.__getitem__, latest))
    by_network = tuple(networks[index] for index in range(len(NETWORKS)))
    nodes: Collection[Counted] = latest.values()
    if latest and not isinstance(rows[0], ExportRow):  # crawl-only rows, with few fields
        nodes = [row.node() for row in latest.values()]
    heights = Counter(map(_height, nodes))
    height = consensus_of(heights)
    counted = _plain(tally(nodes, height, heights))
    return CrawlCount(len(latest), by_network, height, list(latest), counted)


def _plain(tallied: dict[str, Counter[Value]]) -> dict[str, dict[Value, int]]:
    """Plain dicts: what crosses from a counting process, pickled."""
    return {key: dict(counted) for key, counted in tallied.items()}


def _remember(host: str, port: int) -> str:
    address = _known[host, port] = canonical_address(host, port)
    _networks[address] = _NETWORK_INDEX[network_of(address.rpartition(":")[0].strip("[]"))]
    return address
