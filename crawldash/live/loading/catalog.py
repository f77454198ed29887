"""The latest crawl's nodes as columns, for filtering and exporting without decoding.

Built in the loader process with the rest of a prepared snapshot, and packed so that it
crosses to the serving process as a few large objects, not one per node and field: taking
a snapshot over holds the serving process's GIL for as long as unpickling it takes. Numbers
are arrays; text with few distinct values (networks, countries, providers, user agents) is
an array of codes into a tuple of values; the CSV records are one bytes object, with
offsets; ``q``'s search text and its index are ``search.py``'s. A query is a few passes of
comprehensions over these columns in an order sorted once per crawl, made in steps (a
generator that yields every ``STEP`` nodes), so that a large crawl's query never holds the
event loop for long.
"""

from __future__ import annotations

import csv
from array import array
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from types import SimpleNamespace

import msgspec
from pyroaring import BitMap

from ...models import NodeRow
from .search import STEP, SearchIndex, finished, offsets

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
    search: SearchIndex  # for q: address, hostname, user agent and organisation
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
        lines = _csv_lines(addresses, rows)
        return cls(
            addresses=addresses,
            networks=Codes.of([networks[address] for address in addresses]),
            countries=Codes.of(countries),
            asns=Codes.of([row.asn.upper() if row.asn else None for row in rows]),
            agents=Codes.of(agents),
            versions=array("q", versions),
            services=array("q", [row.services for row in rows]),
            search=SearchIndex.build(
                [_searchable(address, row) for address, row in zip(addresses, rows, strict=True)]
            ),
            csv=b"".join(lines),
            csv_starts=offsets(map(len, lines)),
            orders=orders,
        )

    def csv_record(self, position: int) -> bytes:
        return self.csv[self.csv_starts[position] : self.csv_starts[position + 1]]

    def matching(
        self, wanted: NodeFilter, sort: str = "address", descending: bool = False
    ) -> list[int]:
        """Positions of the nodes that match every filter, in the order asked for."""
        return list(finished(self.matching_steps(wanted, sort, descending)))

    def matching_steps(
        self, wanted: NodeFilter, sort: str = "address", descending: bool = False
    ) -> Generator[None, None, Sequence[int]]:
        """The same, in steps: it yields every STEP nodes examined (where an async caller
        lets the event loop answer others), and returns the positions."""
        hits: BitMap | None = None
        if wanted.q is not None:
            hits = yield from self.search.searched(wanted.q)
        keep = self._filters(wanted)
        if hits is not None and sort == "address":
            order: Sequence[int] = hits.to_array()  # positions are in address order
        else:
            order = self.orders[sort]
            if hits is not None:
                keep.append(_within(hits))
        if descending:
            order = order[::-1]
        if not keep:  # nothing to test per node: the order is the answer, copied in C
            return order
        found: list[int] = []
        for first in range(0, len(order), STEP):
            chunk = order[first : first + STEP]
            for each in keep:
                chunk = each(chunk)
            found += chunk
            yield
        return found

    def _filters(self, wanted: NodeFilter) -> list[Filter]:
        """A test per filter given, each taking a step's positions to those that pass."""
        keep: list[Filter] = []
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
                keep.append(_coded(column.codes, codes))
        if wanted.version is not None:
            keep.append(_equal(self.versions, wanted.version))
        if wanted.services is not None:
            keep.append(_masked(self.services, wanted.services))
        return keep


Filter = Callable[[Sequence[int]], list[int]]


def _coded(of: array[int], codes: set[int]) -> Filter:
    return lambda chunk: [i for i in chunk if of[i] in codes]


def _equal(of: array[int], value: int) -> Filter:
    return lambda chunk: [i for i in chunk if of[i] == value]


def _masked(of: array[int], mask: int) -> Filter:
    return lambda chunk: [i for i in chunk if of[i] & mask]


def _within(hits: BitMap) -> Filter:
    return lambda chunk: [i for i in chunk if i in hits]


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
