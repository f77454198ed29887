"""The latest crawl's nodes as columns, for filtering and exporting without decoding.

Built in the loader process with the rest of a prepared snapshot, and packed so that it
crosses to the serving process as a few large objects, not one per node and field: taking
a snapshot over holds the serving process's GIL for as long as unpickling it takes. Numbers
are arrays; text with few distinct values (networks, countries, providers, user agents) is
an array of codes into a tuple of values; the search text and the CSV records are one
string and one bytes object each, with offsets. A text cell a spreadsheet would run as a
formula is written with a leading ``'`` (``csv_safe``). A query is a few passes of comprehensions
over these columns in an order sorted once per crawl, made STEP nodes at a time: a
generator that yields between two steps, so that a query of a large crawl never holds the
serving process's event loop for long.
"""

from __future__ import annotations

import csv
from array import array
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import pairwise
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
STEP = 4096  # nodes a query examines between two yields: a fraction of a millisecond
# What makes a spreadsheet read a cell as a formula (OWASP's list for CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")

Steps = Generator[None, None, list[int]]  # yields between steps, returns the positions
Test = Callable[[Iterable[int]], list[int]]  # keeps the positions that pass, in order


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
    # Each node's search text, cut from ``search`` by the crawl's first q search, in steps,
    # in the serving process: a test per node is a fraction of the cost of mapping every
    # hit in the one string back to its node, and cutting it in the loader would lengthen
    # every load and the takeover of its result.
    texts: list[str] = field(default_factory=list, compare=False, repr=False)

    @classmethod
    def build(cls, nodes: dict[str, NodeRow], networks: dict[str, str]) -> NodeCatalog:
        addresses = sorted(nodes)
        rows = [nodes[address] for address in addresses]
        agents = [(row.user_agent or "").lower() for row in rows]
        countries = [row.country.upper() if row.country else None for row in rows]
        versions = [_or_unknown(row.protocol_version) for row in rows]
        heights = [row.height for row in rows]
        columns: dict[str, Sequence[object]] = {
            "address": addresses,
            "user_agent": agents,
            "version": versions,
            "height": heights,
            "connected_since": [_or_unknown(row.connected_since) for row in rows],
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
            services=array("Q", [row.services for row in rows]),  # unsigned 64-bit, as sent
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
        """Positions of the nodes that match every filter, in the order asked for, at once."""
        steps = self.matching_steps(wanted, sort, descending)
        while True:
            try:
                next(steps)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]

    def matching_steps(
        self, wanted: NodeFilter, sort: str = "address", descending: bool = False
    ) -> Steps:
        """What ``matching`` returns, made STEP nodes at a time: the generator yields
        between two steps (a caller on the event loop lets other requests in there) and
        returns the positions."""
        order = self.orders[sort]
        if descending:
            order = order[::-1]
        tests = self._tests(wanted)
        if not tests:
            return list(order)
        if wanted.q is not None:
            if "\n" in wanted.q:  # every node's text ends with one: nothing holds it inside
                return []
            yield from self._cut_texts()
        found: list[int] = []
        for start in range(0, len(order), STEP):
            chunk: Iterable[int] = order[start : start + STEP]
            for test in tests:
                chunk = test(chunk)
            found.extend(chunk)
            if start + STEP < len(order):
                yield
        return found

    def _tests(self, wanted: NodeFilter) -> list[Test]:
        """One test per filter given: each keeps the positions that pass, in order."""
        tests: list[Test] = []
        if wanted.network is not None:
            tests.append(partial(_coded, self.networks, self.networks.matching(wanted.network)))
        if wanted.country is not None:
            tests.append(partial(_coded, self.countries, self.countries.matching(wanted.country)))
        if wanted.asn is not None:
            tests.append(partial(_coded, self.asns, self.asns.matching(wanted.asn)))
        if wanted.user_agent is not None:
            tests.append(partial(_coded, self.agents, self.agents.containing(wanted.user_agent)))
        if wanted.version is not None:
            tests.append(partial(_equal, self.versions, wanted.version))
        if wanted.services is not None:
            tests.append(partial(_any_bit, self.services, wanted.services))
        if wanted.q is not None:
            tests.append(partial(_holding, self.texts, wanted.q))
        return tests

    def _cut_texts(self) -> Generator[None, None, None]:
        """Cut ``texts`` out of ``search``, STEP nodes a step, unless done: queries that
        run side by side carry on each other's cutting, each step starting where the last
        ended."""
        texts, search, starts = self.texts, self.search, self.search_starts
        while len(texts) < len(self.addresses):
            at = len(texts)
            texts.extend(search[a:b] for a, b in pairwise(starts[at : at + STEP + 1]))
            yield


def _coded(column: Codes, kept: set[int], chunk: Iterable[int]) -> list[int]:
    codes = column.codes
    return [i for i in chunk if codes[i] in kept]


def _equal(values: array[int], value: int, chunk: Iterable[int]) -> list[int]:
    return [i for i in chunk if values[i] == value]


def _any_bit(values: array[int], mask: int, chunk: Iterable[int]) -> list[int]:
    return [i for i in chunk if values[i] & mask]


def _holding(texts: list[str], q: str, chunk: Iterable[int]) -> list[int]:
    return [i for i in chunk if q in texts[i]]


def _starts(lengths: Iterable[int]) -> array[int]:
    """Offsets where each item starts, and the end, from their lengths."""
    starts = array("I", [0])
    total = 0
    for length in lengths:
        total += length
        starts.append(total)
    return starts


def _or_unknown(number: int | None) -> int:
    """A number a crawl-only row does not give, as -1: it sorts first and matches no filter."""
    return -1 if number is None else number


def _searchable(address: str, row: NodeRow) -> str:
    return " ".join((address, row.hostname or "", row.user_agent or "", row.org or "")).lower()


def _csv_lines(addresses: list[str], rows: list[NodeRow]) -> list[bytes]:
    """Each node's CSV record, ended by CRLF, written by the csv module (RFC 4180: a field
    quoted where it holds a comma, a quote or a line break; floats by ``repr``; None
    empty), whose writer hands over one record per ``write``; text made ``csv_safe``."""
    records: list[str] = []
    writer = csv.writer(SimpleNamespace(write=records.append), lineterminator="\r\n")
    astuple = msgspec.structs.astuple
    writer.writerows(
        (address, *map(_cell, astuple(row))) for address, row in zip(addresses, rows, strict=True)
    )
    return [record.encode() for record in records]


def csv_safe(text: str) -> str:
    """``text`` as a CSV cell that no spreadsheet runs as a formula.

    Args:
        text: a value from a crawl (a user agent, a hostname) or a column's name.

    Returns:
        The text with a ``'`` before it where it starts with one of FORMULA_STARTS, as
        OWASP recommends; otherwise the text itself.
    """
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def _cell(value: object) -> object:
    """A field of a row as its CSV cell: numbers as they are (a negative latitude is a
    number, not a formula), text made ``csv_safe``."""
    return csv_safe(value) if isinstance(value, str) else value
