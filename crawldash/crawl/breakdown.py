"""What a crawl is made of: its nodes counted by network, country, provider, client,
protocol version, service bit and height against the consensus."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable
from operator import attrgetter
from typing import Protocol

from ..models import NodeRow
from .address import network_of

# The service bits a node advertises, by name (BIP 111, 144, 157, 159, 324 and older).
SERVICE_BITS = {
    0: "NETWORK",
    1: "GETUTXO",
    2: "BLOOM",
    3: "WITNESS",
    4: "XTHIN",
    6: "COMPACT_FILTERS",
    10: "NETWORK_LIMITED",
    11: "P2P_V2",
}
SERVICE_NAMES = {name: bit for bit, name in SERVICE_BITS.items()}
BY = ("network", "country", "asn", "user_agent", "version", "services", "height")
Value = str | int | None
Row = tuple[Value, int]  # a value and how many nodes have it


class Counted(Protocol):
    """A node as counted: a decoded NodeRow, or a crawl file's row before it is one."""

    @property
    def country(self) -> str | None: ...
    @property
    def asn(self) -> str | None: ...
    @property
    def user_agent(self) -> str | None: ...
    @property
    def protocol_version(self) -> int | None: ...
    @property
    def services(self) -> int: ...
    @property
    def height(self) -> int: ...


_FIELDS = {
    "country": attrgetter("country"),
    "asn": attrgetter("asn"),
    "user_agent": attrgetter("user_agent"),
}
# Taken together: a crawl has few distinct triples of them, so one pass counts all three.
_numbers = attrgetter("protocol_version", "services", "height")


def service_names(services: int) -> list[str]:
    """The names of the bits set, unknown ones as ``BIT_<n>``."""
    names = []
    for bit in range(services.bit_length()):
        if services >> bit & 1:
            names.append(SERVICE_BITS.get(bit, f"BIT_{bit}"))
    return names


def height_band(height: int, consensus: int) -> str:
    """Where a node's height stands against the consensus height."""
    if height == consensus:
        return "consensus"
    if height > consensus:
        return "ahead"
    return "behind_1_6" if consensus - height <= 6 else "behind_more"


def host_of(address: str) -> str:
    return address.rpartition(":")[0].strip("[]")


def networks_of(addresses: Iterable[str]) -> dict[str, str]:
    """Each canonical address's network, worked out once per crawl."""
    return {address: network_of(host_of(address)) for address in addresses}


def breakdowns(
    nodes: dict[str, NodeRow], consensus: int, networks: dict[str, str]
) -> dict[str, list[Row]]:
    """Every breakdown of a crawl, rows sorted by nodes descending, then value; a node
    with no value counts under None, never dropped."""
    counts: dict[str, Counter[Value]] = {"network": Counter(map(networks.__getitem__, nodes))}
    counts.update(tally(nodes.values(), consensus))
    return {by: sorted(counts[by].items(), key=_order) for by in BY}


def tally(nodes: Collection[Counted], consensus: int) -> dict[str, Counter[Value]]:
    """A crawl's nodes counted by every key but network, by the rules of ``breakdowns``,
    against the consensus height given (``tally_crawl`` has the rest of the doc)."""
    return tally_crawl(nodes, consensus)[1]


def tally_crawl(
    nodes: Collection[Counted], consensus: int | None = None
) -> tuple[int, dict[str, Counter[Value]]]:
    """A crawl's nodes counted by every key but network, by the rules of ``breakdowns``:
    what the history keeps of each crawl, so that its counts and the latest crawl's
    breakdowns agree.

    Args:
        nodes: each node once (the later of two rows for one address), as rows.
        consensus: the crawl's consensus height; None: the most common of these nodes'
            heights (``consensus_of``).

    Returns:
        The consensus height, and per key each value (None for a node without one) and
        its number of nodes. Each pass over the nodes is in C (``Counter`` over
        ``attrgetter``), with no Python step per node: the history of a backlog is
        counted in processes that must keep pace with the decoding of its files.
    """
    counts: dict[str, Counter[Value]] = {
        by: Counter(map(field, nodes)) for by, field in _FIELDS.items()
    }
    versions: Counter[Value] = Counter()
    services: Counter[int] = Counter()
    heights: Counter[int] = Counter()
    for (version, bits, height), count in Counter(map(_numbers, nodes)).items():
        versions[version] += count
        services[bits] += count
        heights[height] += count
    if consensus is None:
        consensus = consensus_of(heights)
    names: Counter[Value] = Counter()
    for bits, count in services.items():
        for name in service_names(bits) or (None,):
            names[name] += count
    bands: Counter[Value] = Counter()
    for height, count in heights.items():
        bands[height_band(height, consensus)] += count
    counts["version"], counts["services"], counts["height"] = versions, names, bands
    return consensus, counts


def consensus_of(heights: Counter[int]) -> int:
    """The most common height (the higher one on a tie), 0 for none: the rule of
    ``decode.most_common_height``, from heights already counted."""
    if not heights:
        return 0
    return max(heights.items(), key=lambda item: (item[1], item[0]))[0]


def _order(row: Row) -> tuple[int, int, str]:
    value, count = row
    return (-count, value is None, str(value))


def organisations(nodes: Iterable[NodeRow]) -> dict[str, str]:
    """Each ASN's organisation name, as the crawl gives it (the most common spelling)."""
    names: dict[str, Counter[str]] = {}
    for node in nodes:
        if node.asn is not None and node.org is not None:
            names.setdefault(node.asn, Counter())[node.org] += 1
    return {asn: spellings.most_common(1)[0][0] for asn, spellings in names.items()}
