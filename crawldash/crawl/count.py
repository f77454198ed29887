"""Counting a crawl for the history: how many nodes, by network, its consensus height and
which addresses it had, without building its nodes.

A long history repeats the same nodes crawl after crawl, so the canonical spelling and
network of each ``(host, port)`` a process has seen are kept (up to KNOWN_MAX of them):
a process that counts many crawls spells each node once, not once per crawl.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import msgspec

from .address import NETWORKS, AddressError, canonical_address, network_of
from .decode import (
    Rules,
    check_usable,
    decode_snapshot,
    does_not_decode,
    export_decoder,
    form_of,
    most_common_height,
    tally_networks,
)
from .files import read_file

KNOWN_MAX = 500_000  # (host, port) pairs remembered; past it, the memory starts again
_NETWORK_INDEX = {network: index for index, network in enumerate(NETWORKS)}
_known: dict[tuple[str, int], tuple[str, int]] = {}  # -> (canonical address, network index)


@dataclass(frozen=True)
class CrawlCount:
    """What the history keeps of an older crawl: its nodes, in all and per network (in
    NETWORKS order), its consensus height, and which addresses were in it."""

    nodes: int
    networks: tuple[int, ...]
    latest_height: int
    addresses: list[str]  # canonical host:port


def read_count(path: Path, rules: Rules) -> CrawlCount:
    """A crawl file counted: nodes in all and per network, height and addresses."""
    return count_nodes(read_file(path, rules.max_file_size)[0], rules.allow_empty)


def count_nodes(data: bytes, allow_empty: bool = False) -> CrawlCount:
    """Count a crawl. Its rows are decoded whole, as the loader decodes them, so a crawl the
    loader would refuse is refused here too, with the same kind."""
    if form_of(data) == b"{":  # the API form: rare, counted from its decoded snapshot
        snapshot = decode_snapshot(data, 0, allow_empty)
        nodes = snapshot.nodes
        tally = tally_networks(network_of(a.rpartition(":")[0].strip("[]")) for a in nodes)
        return CrawlCount(len(nodes), tally, snapshot.latest_height, list(nodes))
    try:
        rows = export_decoder.decode(data)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise does_not_decode(exc) from None
    heights: dict[str, int] = {}  # the later of two rows for one address wins
    networks: dict[str, int] = {}
    skipped = 0
    for row in rows:
        known = _known.get((row.address, row.port))
        if known is None:
            try:
                known = _remember(row.address, row.port)
            except AddressError:
                skipped += 1
                continue
        heights[known[0]] = row.height
        networks[known[0]] = known[1]
    check_usable(len(heights), skipped, allow_empty)
    by_network = [0] * len(NETWORKS)
    for index in networks.values():
        by_network[index] += 1
    height = most_common_height(heights.values())
    return CrawlCount(len(heights), tuple(by_network), height, list(heights))


def _remember(host: str, port: int) -> tuple[str, int]:
    address = canonical_address(host, port)
    if len(_known) >= KNOWN_MAX:
        _known.clear()
    network = network_of(address.rpartition(":")[0].strip("[]"))
    known = _known[host, port] = (address, _NETWORK_INDEX[network])
    return known
