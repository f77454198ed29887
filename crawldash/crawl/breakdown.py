"""What a crawl is made of: its nodes counted by network, country, provider, client,
protocol version, service bit and height against the consensus."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

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
    with no value counts under None, never dropped. One pass over the nodes."""
    counts: dict[str, Counter[Value]] = {by: Counter() for by in BY}
    by_network, country, asn = counts["network"], counts["country"], counts["asn"]
    agent, version, bits, band = (
        counts["user_agent"],
        counts["version"],
        counts["services"],
        counts["height"],
    )
    names: dict[int, list[str] | tuple[None]] = {}
    for address, node in nodes.items():
        by_network[networks[address]] += 1
        country[node.country] += 1
        asn[node.asn] += 1
        agent[node.user_agent] += 1
        version[node.protocol_version] += 1
        named = names.get(node.services)
        if named is None:
            named = names[node.services] = service_names(node.services) or (None,)
        bits.update(named)
        band[height_band(node.height, consensus)] += 1
    return {by: sorted(counted.items(), key=_order) for by, counted in counts.items()}


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
