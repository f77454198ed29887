"""The latest crawl's nodes as columns, for filtering and exporting without decoding.

Built in the loader process with the rest of a prepared snapshot, and packed so that it
crosses to the serving process as a few large objects, not one per node and field: taking
a snapshot over holds the serving process's GIL for as long as unpickling it takes. Numbers
are arrays; text is an array of codes into a tuple of its distinct values (networks,
countries, providers, user agents, hostnames); the CSV records are one bytes object, with
offsets. A text cell a spreadsheet would run as a formula is written with a leading ``'``
(``csv_safe``). Only what a new crawl's switch needs is made in the loader: the sort
orders and the search texts are made in the serving process, once per crawl, when a query
first needs them. A query is a few passes of comprehensions over these columns, made STEP
nodes at a time: a generator that yields between two steps, so that a query of a large
crawl never holds the serving process's event loop for long.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from ...models import NodeRow
from .csv_records import CsvRecords, columns_of, each_once

SORTS = ("address", "user_agent", "version", "height", "connected_since", "country")
STEP = 4096  # nodes a query examines between two yields: a fraction of a millisecond

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
        """Codes in the order each value first comes (passes in C)."""
        values = tuple(dict.fromkeys(column))
        index = {value: code for code, value in enumerate(values)}
        return cls(values, array("I", map(index.__getitem__, column)))

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
    versions: array[int]  # -1 where the row gives none
    services: array[int]
    heights: array[int]
    since: array[int]  # connected_since, -1 where the row gives none
    hostnames: Codes
    orgs: Codes
    records: CsvRecords  # every node's CSV record (made after the rest, in a new crawl)
    # Per node, a hash of the values a profile compares (``answers/profiles.py``): user
    # agent, version, services, country and ASN as held here, the numbers spelled out (the
    # hash of a number is no fingerprint: -1 and -2 share one, and so do 1 and 2**61). The
    # serving process finds the nodes that changed since the crawl before by one number
    # each. A hash is its process's own (the seed is random; the loader's children share
    # the loader's), so it only picks the nodes to compare value by value; two sets of
    # values that share one (a chance of one in 2**64) would hide a change.
    fingerprints: array[int]
    # Made in the serving process when a query first needs them, not in the loader: they
    # are not on the way to a new crawl's switch, and most crawls are never searched so.
    # Positions in each sort order (``order``), and each node's search text (address,
    # hostname, user agent and organisation, lowercased: ``_texts_made``), the latter in
    # steps, as queries that run side by side go on with it.
    orders: dict[str, array[int]] = field(default_factory=dict, compare=False, repr=False)
    texts: list[str] = field(default_factory=list, compare=False, repr=False)

    @classmethod
    def build(
        cls,
        nodes: dict[str, NodeRow],
        networks: dict[str, str],
        *,
        with_csv: bool = True,
        order: list[int] | None = None,
    ) -> NodeCatalog:
        """The columns of a crawl's nodes. Each column is made by passes in C (``map``,
        ``zip``, ``sorted``) over the rows or over a column's distinct values, with a
        Python step per node only where a value must be tested: a new crawl's columns are
        on the way to its being served. ``with_csv=False``: its CSV records are left to
        make after (``CsvRecords.of``), as a new crawl's follow it. ``order``: the
        crawl's positions by address (``by_address``), where the caller has them."""
        crawled = list(nodes)
        order = by_address(crawled) if order is None else order
        addresses = list(map(crawled.__getitem__, order))
        rows = list(map(list(nodes.values()).__getitem__, order))
        fields = columns_of(rows)
        agents = each_once(fields["user_agent"], lambda agent: (agent or "").lower())
        countries = each_once(
            fields["country"], lambda country: country.upper() if country else None
        )
        versions = _known(fields["protocol_version"])
        asns = each_once(fields["asn"], lambda asn: asn.upper() if asn else None)
        spelled = (each_once(versions, str), each_once(fields["services"], str))
        return cls(
            addresses=addresses,
            networks=Codes.of(list(map(networks.__getitem__, addresses))),
            countries=Codes.of(countries),
            asns=Codes.of(asns),
            agents=Codes.of(agents),
            versions=array("q", versions),
            services=array("Q", fields["services"]),  # unsigned 64-bit, as sent
            heights=array("q", fields["height"]),
            since=array("q", _known(fields["connected_since"])),
            hostnames=Codes.of(fields["hostname"]),
            orgs=Codes.of(fields["org"]),
            records=CsvRecords.of(nodes) if with_csv else CsvRecords(),
            fingerprints=array("q", map(hash, zip(agents, countries, asns, *spelled, strict=True))),
        )

    @property
    def csv(self) -> bytes:
        """Every node's CSV record, ended by CRLF, in address order."""
        return self.records.blob

    def csv_record(self, position: int) -> bytes:
        starts = self.records.starts
        return self.records.blob[starts[position] : starts[position + 1]]

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
        order = self.order(sort)
        if descending:
            order = order[::-1]
        tests = self._tests(wanted)
        if not tests:
            return list(order)
        if wanted.q is not None:
            yield from self._texts_made()
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

    def order(self, sort: str) -> array[int]:
        """The positions in a sort order (one of SORTS), ascending: ties in address order.
        Made the first time it is asked for (one sort, in C)."""
        made = self.orders.get(sort)
        if made is None:
            if sort == "address":  # the addresses are sorted: their order is the positions'
                made = array("I", range(len(self.addresses)))
            else:
                keys = self._sort_keys(sort)
                made = array("I", sorted(range(len(keys)), key=keys.__getitem__))
            self.orders[sort] = made
        return made

    def _sort_keys(self, sort: str) -> Sequence[Any]:
        if sort == "user_agent":  # lowercased, "" for none
            return list(map(self.agents.values.__getitem__, self.agents.codes))
        if sort == "country":
            spelled = tuple(country or "" for country in self.countries.values)
            return list(map(spelled.__getitem__, self.countries.codes))
        columns = {"version": self.versions, "height": self.heights, "connected_since": self.since}
        if sort not in columns:
            raise ValueError(f"no sort order {sort!r}: one of {', '.join(SORTS)}")
        return columns[sort]

    def _texts_made(self) -> Generator[None, None, None]:
        """Make ``texts``, STEP nodes a step, unless made: queries that run side by side
        carry on each other's making, each step starting where the last ended. A node's
        parts are lowercased one by one, as the whole text would be (its address is
        canonical, lowercase already)."""
        texts, addresses = self.texts, self.addresses
        if len(texts) == len(addresses):
            return
        columns = [
            (tuple(map(_lowered, codes.values)), codes.codes)
            for codes in (self.hostnames, self.agents, self.orgs)
        ]
        while len(texts) < len(addresses):
            at = len(texts)
            parts = (map(values.__getitem__, codes[at : at + STEP]) for values, codes in columns)
            texts.extend(map(" ".join, zip(addresses[at : at + STEP], *parts, strict=True)))
            yield


def by_address(addresses: list[str]) -> list[int]:
    """The positions of ``addresses`` in the order of the addresses (a catalog's order)."""
    return sorted(range(len(addresses)), key=addresses.__getitem__)


def _coded(column: Codes, kept: set[int], chunk: Iterable[int]) -> list[int]:
    codes = column.codes
    return [i for i in chunk if codes[i] in kept]


def _equal(values: array[int], value: int, chunk: Iterable[int]) -> list[int]:
    return [i for i in chunk if values[i] == value]


def _any_bit(values: array[int], mask: int, chunk: Iterable[int]) -> list[int]:
    return [i for i in chunk if values[i] & mask]


def _holding(texts: list[str], q: str, chunk: Iterable[int]) -> list[int]:
    return [i for i in chunk if q in texts[i]]


def _lowered(text: str | None) -> str:
    return (text or "").lower()


def _known(numbers: Sequence[int | None]) -> Sequence[int]:
    """A column of numbers, -1 for each None (passes in C where there is none)."""
    if None not in numbers:
        return numbers  # type: ignore[return-value]  # int alone
    return [_or_unknown(number) for number in numbers]


def _or_unknown(number: int | None) -> int:
    """A number a crawl-only row does not give, as -1: it sorts first and matches no filter."""
    return -1 if number is None else number
