"""The latest crawl's nodes as columns, for filtering and exporting without decoding.

Built in the loader process with the rest of a prepared snapshot. A query is a few passes
of list comprehensions over plain columns in an order sorted once per crawl; each node's
JSON and CSV line are bytes made once, spliced into answers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import msgspec

from ..models import NodeRow

FIELDS = (
    "protocol_version",
    "user_agent",
    "connected_since",
    "services",
    "height",
    "hostname",
    "city",
    "country",
    "latitude",
    "longitude",
    "timezone",
    "asn",
    "org",
)
CSV_HEADER = ",".join(("address", *FIELDS)).encode() + b"\r\n"
SORTS = ("address", "user_agent", "version", "height", "connected_since", "country")


@dataclass(frozen=True)
class NodeFilter:
    """What a node must match; None matches anything. Text is lowercased, codes upper."""

    network: str | None = None
    country: str | None = None
    asn: str | None = None
    user_agent: str | None = None  # a substring of the user agent, lowercased
    version: int | None = None
    services: int | None = None  # a bit that must be set, as a mask
    q: str | None = None  # a substring of address, hostname, user agent or organisation


@dataclass(frozen=True)
class NodeCatalog:
    addresses: list[str]
    networks: list[str]
    countries: list[str | None]
    asns: list[str | None]
    agents: list[str]  # lowercased, "" for none
    versions: list[int]
    services: list[int]
    heights: list[int]
    search: list[str]  # address, hostname, user agent and organisation, lowercased
    csv_lines: list[bytes]
    orders: dict[str, list[int]]  # positions in each sort order, ascending

    @classmethod
    def build(cls, nodes: dict[str, NodeRow], networks: dict[str, str]) -> NodeCatalog:
        addresses = sorted(nodes)
        rows = [nodes[address] for address in addresses]
        agents = [(row.user_agent or "").lower() for row in rows]
        countries = [row.country.upper() if row.country else None for row in rows]
        versions = [row.protocol_version for row in rows]
        heights = [row.height for row in rows]
        columns: dict[str, Sequence[object]] = {
            "address": addresses,
            "user_agent": agents,
            "version": versions,
            "height": heights,
            "connected_since": [row.connected_since for row in rows],
            "country": [c or "" for c in countries],
        }
        orders = {
            key: sorted(range(len(rows)), key=column.__getitem__)  # type: ignore[arg-type]
            for key, column in columns.items()
        }
        return cls(
            addresses=addresses,
            networks=[networks[address] for address in addresses],
            countries=countries,
            asns=[row.asn.upper() if row.asn else None for row in rows],
            agents=agents,
            versions=versions,
            services=[row.services for row in rows],
            heights=heights,
            search=[
                _searchable(address, row) for address, row in zip(addresses, rows, strict=True)
            ],
            csv_lines=_csv_lines(addresses, rows),
            orders=orders,
        )

    def matching(
        self, wanted: NodeFilter, sort: str = "address", descending: bool = False
    ) -> list[int]:
        """Positions of the nodes that match every filter, in the order asked for."""
        found = self.orders[sort][::-1] if descending else self.orders[sort]
        if wanted.network is not None:
            found = [i for i in found if self.networks[i] == wanted.network]
        if wanted.country is not None:
            found = [i for i in found if self.countries[i] == wanted.country]
        if wanted.asn is not None:
            found = [i for i in found if self.asns[i] == wanted.asn]
        if wanted.version is not None:
            found = [i for i in found if self.versions[i] == wanted.version]
        if wanted.services is not None:
            found = [i for i in found if self.services[i] & wanted.services]
        if wanted.user_agent is not None:
            found = [i for i in found if wanted.user_agent in self.agents[i]]
        if wanted.q is not None:
            found = [i for i in found if wanted.q in self.search[i]]
        return found


def _searchable(address: str, row: NodeRow) -> str:
    return " ".join((address, row.hostname or "", row.user_agent or "", row.org or "")).lower()


def _csv_lines(addresses: list[str], rows: list[NodeRow]) -> list[bytes]:
    """Each node's CSV record (RFC 4180, as Python's csv module writes it), ended by CRLF;
    made a column at a time, numbers by ``map``: several times faster than per field."""
    columns: list[Iterable[str]] = [_csv_texts(addresses)]
    for values in zip(*(msgspec.structs.astuple(row) for row in rows), strict=True):
        if isinstance(values[0], float):
            columns.append(map(repr, values))
        elif isinstance(values[0], int):
            columns.append(map(str, values))
        else:
            columns.append(_csv_texts(values))
    return [(",".join(record) + "\r\n").encode() for record in zip(*columns, strict=True)]


def _csv_texts(values: Iterable[object]) -> list[str]:
    """A column of text or None: quoted where it must be, empty for None."""
    special = _CSV_SPECIAL.search
    texts = ["" if value is None else str(value) for value in values]
    return ['"' + text.replace('"', '""') + '"' if special(text) else text for text in texts]


_CSV_SPECIAL = re.compile(r'[,"\r\n]')
