"""Counting a crawl for the history: how many nodes, by network and by every key of the
breakdowns, its consensus height and which addresses it had, without building its nodes.

A long history repeats the same nodes crawl after crawl, so the canonical spelling and
network of each host a process has seen are kept (``spellings.py``): a process that
counts many crawls spells each node once, not once per crawl. Past the decoding of its
rows, a crawl costs passes in C over them (``map`` and ``Counter``), and a Python step only
for a row on a port other than the crawl's usual one, or a host not seen before.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

import msgspec

from ..models import ExportRow
from .address import NETWORKS, network_of
from .breakdown import Value, tally, tally_crawl
from .decode import (
    Rules,
    check_usable,
    decode_snapshot,
    does_not_decode,
    export_decoder,
    form_of,
    tally_networks,
    unprepared,
)
from .files import LoadError, read_file
from .rows import CrawlRow, Rows, overflows
from .spellings import UNUSABLE, Spellings


class _CountedRow(ExportRow, frozen=True, array_like=True, gc=False):
    """An export row as the loader decodes it, but left out of the garbage collector's
    view: its fields are strings, numbers and nulls, which make no cycles, and a crawl's
    15,000 tracked rows would make its collections walk them, crawl after crawl."""


_counted_rows = msgspec.json.Decoder(list[_CountedRow])


@dataclass(frozen=True)
class AddressChanges:
    """A crawl's addresses as changes from those of the crawl counted before it in the same
    run (``read_counts``): consecutive crawls share most of their nodes, so these are a few
    hundred addresses where the crawl has 15,000."""

    added: list[str]
    removed: list[str]


@dataclass(frozen=True)
class CrawlCount:
    """What the history keeps of an older crawl: its nodes, in all and per network (in
    NETWORKS order), its consensus height, which addresses were in it, and its nodes
    counted by value for every key of the breakdowns but network."""

    nodes: int
    networks: tuple[int, ...]
    latest_height: int
    addresses: list[str]  # canonical host:port; none if given as ``changes``
    tallies: dict[str, dict[Value, int]]  # key -> value -> nodes (None: no value)
    changes: AddressChanges | None = None  # the addresses, from the crawl counted before it

    def __reduce__(self) -> tuple[Callable[..., CrawlCount], tuple[object, ...]]:
        """Pickled with its addresses as one string, a line each (no address holds a line
        break): what a counting process sends back, as one copy, not one item per node."""
        joined = "\n".join(self.addresses)
        parts = (self.nodes, self.networks, self.latest_height, joined, self.tallies)
        return _unpickled, (*parts, self.changes)


def _unpickled(
    nodes: int,
    networks: tuple[int, ...],
    latest_height: int,
    joined: str,
    tallies: dict[str, dict[Value, int]],
    changes: AddressChanges | None = None,
) -> CrawlCount:
    addresses = joined.split("\n") if joined else []
    return CrawlCount(nodes, networks, latest_height, addresses, tallies, changes)


def read_count(path: Path, rules: Rules) -> CrawlCount:
    """A crawl file counted: nodes in all, per network and per value, height and addresses."""
    return count_nodes(read_file(path, rules.max_file_size)[0], rules.allow_empty)


def read_counts(paths: Sequence[Path], rules: Rules) -> list[CrawlCount | LoadError | None]:
    """Crawl files counted in this order, as ``read_count`` counts each. Each count after
    the first has its addresses as ``changes`` from the count before it in this list: what
    the history's presence takes from consecutive crawls, without a pass over every address
    of each (see ``live/stores/earlier_crawls.py``).

    Args:
        paths: the crawl files, each crawl next to the one before it in time.
        rules: what a crawl must be to be counted.

    Returns:
        Per path, its count, the LoadError that refused it, or None if it is gone. A refused
        or gone crawl is skipped: the changes of the next count are from the one before it.
    """
    counts: list[CrawlCount | LoadError | None] = []
    before: _Before | None = None
    for path in paths:
        try:
            data = read_file(path, rules.max_file_size)[0]
            counted, before_next = _count_after(data, rules.allow_empty, before)
        except FileNotFoundError:
            counts.append(None)
            continue
        except LoadError as exc:
            counts.append(exc)
            continue
        except Exception as exc:  # the run's other crawls are still counted
            counts.append(unprepared(exc))
            continue
        counts.append(counted)
        before = before_next
    return counts


class _Before(NamedTuple):
    """The crawl counted before the next in a run: its addresses and nodes per network."""

    addresses: set[str]
    networks: tuple[int, ...]


def count_nodes(data: bytes, allow_empty: bool = False) -> CrawlCount:
    """Count a crawl. Its rows are decoded whole, as the loader decodes them, so a crawl the
    loader would refuse is refused here too, with the same kind."""
    if form_of(data) == b"{":  # the API form: rare, counted from its decoded snapshot
        snapshot = decode_snapshot(data, 0, allow_empty)
        keyed = snapshot.nodes
        tallied = tally_networks(network_of(a.rpartition(":")[0].strip("[]")) for a in keyed)
        by_value = _plain(tally(keyed.values(), snapshot.latest_height))
        return CrawlCount(len(keyed), tallied, snapshot.latest_height, list(keyed), by_value)
    unique, nodes, spellings = _unique_rows(data, allow_empty)
    networks = Counter(map(spellings.networks.__getitem__, unique))
    by_network = tuple(networks[index] for index in range(len(NETWORKS)))
    height, by_key = tally_crawl(nodes)
    return CrawlCount(len(unique), by_network, height, list(unique), _plain(by_key))


def _count_after(
    data: bytes, allow_empty: bool, before: _Before | None
) -> tuple[CrawlCount, _Before]:
    """``count_nodes``, with the crawl's addresses as changes from ``before`` if given, and
    what the next crawl of the run is counted after. Its nodes per network are then those
    of ``before`` with the changes': a pass over a few hundred addresses, not 15,000."""
    if before is None or form_of(data) == b"{":
        counted = count_nodes(data, allow_empty)
        now = set(counted.addresses)  # the spellings' own strings: no hashing again
        if before is not None:
            changes = AddressChanges(list(now - before.addresses), list(before.addresses - now))
            counted = replace(counted, addresses=[], changes=changes)
        return counted, _Before(now, counted.networks)
    unique, nodes, spellings = _unique_rows(data, allow_empty)
    now = set(unique)
    changes = AddressChanges(list(now - before.addresses), list(before.addresses - now))
    added = spellings.network_counts(changes.added)
    removed = spellings.network_counts(changes.removed)
    by_network = tuple(
        count + added[index] - removed[index] for index, count in enumerate(before.networks)
    )
    height, by_key = tally_crawl(nodes)
    counted = CrawlCount(len(unique), by_network, height, [], _plain(by_key), changes)
    return counted, _Before(now, by_network)


def _unique_rows(
    data: bytes, allow_empty: bool
) -> tuple[dict[str, None], Sequence[Any], Spellings]:
    """A crawl in the export form decoded: each canonical address once, in the order they
    first come, each node's row (the later of two for one address) and the spellings'
    memory that spelled them."""
    try:
        rows, bad = _decode_rows(data)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise does_not_decode(exc) from None
    spellings = Spellings.now()
    addresses = spellings.addresses(rows)
    unique = dict.fromkeys(addresses)  # each address once, where it first comes
    nodes: Sequence[Any] = rows  # each node's row, all of one form
    skipped = bad
    if UNUSABLE in unique or len(unique) < len(addresses):  # rare: rows to skip or merge
        skipped += addresses.count(UNUSABLE)
        latest = dict(zip(addresses, rows, strict=True))  # the later of two rows wins
        latest.pop(UNUSABLE, None)
        unique.pop(UNUSABLE, None)
        nodes = list(latest.values())
    check_usable(len(unique), skipped, allow_empty)
    if nodes and isinstance(nodes[0], CrawlRow):  # crawl-only rows, with few fields
        nodes = [row.node() for row in nodes]
    return unique, nodes, spellings


def _decode_rows(data: bytes) -> Rows:
    """The rows as the loader decodes them (``crawl/rows.py``), each export row as a
    ``_CountedRow`` where all of them are."""
    try:
        rows = _counted_rows.decode(data)
    except msgspec.DecodeError:  # crawl-only rows, rows to skip, or not JSON: its reasons
        return export_decoder.decode(data)
    return export_decoder.decode(data) if overflows(rows) else Rows(rows, 0)


def _plain(tallied: dict[str, Counter[Value]]) -> dict[str, dict[Value, int]]:
    """Plain dicts: what crosses from a counting process, pickled."""
    return {key: dict(counted) for key, counted in tallied.items()}
