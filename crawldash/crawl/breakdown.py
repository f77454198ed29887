"""What a crawl is made of: its nodes counted by network, country, provider, client,
protocol version, service bit and height against the consensus."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable

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


def breakdowns(nodes: dict[str, NodeRow], consensus: int) -> dict[str, list[Row]]:
    """Every breakdown of a crawl, rows sorted by nodes descending, then value; a node
    with no value counts under None, never dropped."""
    values: dict[str, Callable[[str, NodeRow], Iterable[Value]]] = {
        "network": lambda address, _: (network_of(host_of(address)),),
        "country": lambda _, node: (node.country,),
        "asn": lambda _, node: (node.asn,),
        "user_agent": lambda _, node: (node.user_agent,),
        "version": lambda _, node: (node.protocol_version,),
        "services": lambda _, node: service_names(node.services) or (None,),
        "height": lambda _, node: (height_band(node.height, consensus),),
    }
    result = {}
    for key, of in values.items():
        counts: Counter[Value] = Counter()
        for address, node in nodes.items():
            counts.update(of(address, node))
        result[key] = sorted(counts.items(), key=_order)
    return result


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
