"""The latest crawl's nodes as columns, for filtering and exporting without decoding.

Built in the loader process with the rest of a prepared snapshot, and packed so that it
crosses to the serving process as a few large objects, not one per node and field: taking
a snapshot over holds the serving process's GIL for as long as unpickling it takes. Numbers
are arrays; text with few distinct values (networks, countries, providers, user agents) is
an array of codes into a tuple of values; the search text and the CSV records are one
string and one bytes object each, with offsets. A query is a few passes of comprehensions
over these columns in an order sorted once per crawl.
"""

from __future__ import annotations

import csv
from array import array
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import SimpleNamespace

import msgspec

from ...models import NodeRow

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
class Codes:
    """A column of text with few distinct values: a code per node into ``values``."""

    values: tuple[str | None, ...]
    codes: array[int]

    @classmethod
    def of(cls, column: Sequence[str | None]) -> Codes:
        index: dict[str | None, int] = {}
        codes = array("I", [index.setdefault(value, len(index)) for value in column])
        return cls(tuple(index), codes)

    def matching(self, wanted: str) -> set[int]:
        """Codes of the values that equal ``wanted``."""
        return {code for code, value in enumerate(self.values) if value == wanted}

    def containing(self, wanted: str) -> set[int]:
        """Codes of the values that contain ``wanted``."""
        return {code for code, value in enumerate(self.values) if value and wanted in value}


@dataclass(frozen=True)
class NodeCatalog:
    addresses: list[str]  # sorted; a node's position is its index here
    networks: Codes
    countries: Codes  # upper case
    asns: Codes  # upper case
    agents: Codes  # lower case, "" for none
    versions: array[int]
    services: array[int]
    search: (
        str  # per node: address, hostname, user agent and organisation, lowercased; "\n" after each
    )
    search_starts: array[int]  # where each node's search text starts, and the end
    csv: bytes  # every node's CSV record, ended by CRLF
    csv_starts: array[int]
    orders: dict[str, array[int]]  # positions in each sort order, ascending

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
            key: array("I", sorted(range(len(rows)), key=column.__getitem__))  # type: ignore[arg-type]
            for key, column in columns.items()
        }
        search = [
            _searchable(address, row) + "\n" for address, row in zip(addresses, rows, strict=True)
        ]
        lines = _csv_lines(addresses, rows)
        return cls(
            addresses=addresses,
            networks=Codes.of([networks[address] for address in addresses]),
            countries=Codes.of(countries),
            asns=Codes.of([row.asn.upper() if row.asn else None for row in rows]),
            agents=Codes.of(agents),
            versions=array("q", versions),
            services=array("q", [row.services for row in rows]),
            search="".join(search),
            search_starts=_starts(map(len, search)),
            csv=b"".join(lines),
            csv_starts=_starts(map(len, lines)),
            orders=orders,
        )

    def csv_record(self, position: int) -> bytes:
        return self.csv[self.csv_starts[position] : self.csv_starts[position + 1]]

    def matching(
        self, wanted: NodeFilter, sort: str = "address", descending: bool = False
    ) -> list[int]:
        """Positions of the nodes that match every filter, in the order asked for."""
        order = self.orders[sort]
        found: Iterable[int] = reversed(order) if descending else order
        for column, codes in (
            (
                self.networks,
                None if wanted.network is None else self.networks.matching(wanted.network),
            ),
            (
                self.countries,
                None if wanted.country is None else self.countries.matching(wanted.country),
            ),
            (self.asns, None if wanted.asn is None else self.asns.matching(wanted.asn)),
            (
                self.agents,
                None if wanted.user_agent is None else self.agents.containing(wanted.user_agent),
            ),
        ):
            if codes is not None:
                of = column.codes
                found = [i for i in found if of[i] in codes]
        if wanted.version is not None:
            versions, version = self.versions, wanted.version
            found = [i for i in found if versions[i] == version]
        if wanted.services is not None:
            services, mask = self.services, wanted.services
            found = [i for i in found if services[i] & mask]
        if wanted.q is not None:
            hits = self._searched(wanted.q)
            found = [i for i in found if i in hits]
        return list(found)

    def _searched(self, text: str) -> set[int]:
        """Positions of the nodes whose search text contains ``text``: str.find over the
        one string, not a test per node."""
        hits: set[int] = set()
        if "\n" in text:
            return hits
        search, starts = self.search, self.search_starts
        at = search.find(text)
        while at >= 0:
            position = bisect_right(starts, at) - 1
            hits.add(position)
            at = search.find(text, starts[position + 1])
        return hits


def _starts(lengths: Iterable[int]) -> array[int]:
    """Offsets where each item starts, and the end, from their lengths."""
    starts = array("I", [0])
    total = 0
    for length in lengths:
        total += length
        starts.append(total)
    return starts


def _searchable(address: str, row: NodeRow) -> str:
    return " ".join((address, row.hostname or "", row.user_agent or "", row.org or "")).lower()


def _csv_lines(addresses: list[str], rows: list[NodeRow]) -> list[bytes]:
    """Each node's CSV record, ended by CRLF, written by the csv module (RFC 4180: a field
    quoted where it holds a comma, a quote or a line break; floats by ``repr``; None
    empty), whose writer hands over one record per ``write``."""
    records: list[str] = []
    writer = csv.writer(SimpleNamespace(write=records.append), lineterminator="\r\n")
    astuple = msgspec.structs.astuple
    writer.writerows((address, *astuple(row)) for address, row in zip(addresses, rows, strict=True))
    return [record.encode() for record in records]
