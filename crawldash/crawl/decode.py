"""Crawler bytes to Structs: a decoded snapshot or a status, or a LoadError.

A crawl comes in one of three forms: bitnodes' export rows (15 fields, what ``export.py``
writes), its crawl-only rows (4 fields: address, port, services, height, what ``crawl.py``
writes to ``data/crawl/<magic>/`` when nothing else runs), or the API v1 object. A
crawl-only row's node has the fields it has and null for the rest.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from operator import methodcaller
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from ..models import ApiSnapshot, CrawlerStatus, NodeRow
from .address import NETWORKS, AddressError, parse_address
from .files import MAX_CLOCK_SKEW, LoadError, read_file
from .rows import RowsDecoder, decode_keyed
from .spellings import UNUSABLE, Spellings, each_spelled

if TYPE_CHECKING:  # the loader process imports this module: it needs no settings
    from ..settings.serve import Settings


_api_decoder = msgspec.json.Decoder(ApiSnapshot)
_status_decoder = msgspec.json.Decoder(CrawlerStatus)
export_decoder = RowsDecoder()  # the name the counting of older crawls imports
_node = methodcaller("node")


@dataclass(frozen=True)
class Rules:
    """What a crawl file must be to be served or counted: the loader and the counting of
    older crawls apply the same rules, so only crawls that could be served get points."""

    max_file_size: int
    allow_empty: bool = False  # serve crawls with no nodes (a crawler that found nothing)
    # Seconds a crawl may be named ahead of this machine's clock: one named later is not
    # served, counted or archived until the clock catches up (``files.named_ahead``).
    max_clock_skew: int = MAX_CLOCK_SKEW

    @classmethod
    def of(cls, settings: Settings) -> Rules:
        return cls(settings.max_file_size, settings.allow_empty_crawls, settings.max_clock_skew)


@dataclass(frozen=True)
class Snapshot:
    """One crawl, decoded: unique nodes by canonical ``host:port``."""

    timestamp: int
    nodes: dict[str, NodeRow]
    latest_height: int
    skipped_rows: int  # rows whose address, form or a value is unusable
    # Each address's network, where the decode spelled the addresses (the array forms);
    # None: worked out from the addresses (``breakdown.networks_of``).
    networks: dict[str, str] | None = None


def form_of(data: bytes) -> bytes:
    first = data.lstrip()[:1]
    if first not in (b"[", b"{"):
        raise LoadError("not_json", "not JSON: expected an array of rows or an object with 'nodes'")
    return first


def decode_snapshot(
    data: bytes, timestamp: int, allow_empty: bool = False, spellings: Spellings | None = None
) -> Snapshot:
    """Decode a crawl in any of its forms; the later of two rows for one address wins, and
    a row that cannot be used is skipped and counted. ``spellings``: the hosts this process
    remembers (the loader's, of the crawl before), to which the crawl's are added; without
    them each row is spelled on its own, and the networks are left to work out."""
    networks = None
    try:
        if form_of(data) == b"[":
            rows, bad = export_decoder.decode(data)
            if spellings is None:
                nodes, skipped = _index_rows(each_spelled(rows), rows)
            else:
                nodes, skipped = _index_rows(spellings.addresses(rows), rows)
                networks = spellings.network_names(nodes)
        else:
            keyed, bad = decode_keyed(data, _api_nodes)
            nodes, skipped = _index_keys(keyed)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise does_not_decode(exc) from None
    check_usable(len(nodes), skipped + bad, allow_empty)
    return Snapshot(timestamp, nodes, consensus_height(nodes.values()), skipped + bad, networks)


def _api_nodes(data: bytes) -> dict[str, NodeRow]:
    return _api_decoder.decode(data).nodes


def unprepared(error: Exception) -> LoadError:
    """The rejection of a crawl that raised ``error`` while it was decoded or prepared: a
    fault of crawldash's own, met on that file, which must cost the file and nothing more
    (not the watcher, the counting or the archive)."""
    return LoadError("unprepared", f"could not be prepared: {type(error).__name__}: {error}")


def does_not_decode(error: msgspec.DecodeError | RecursionError) -> LoadError:
    reason = "nested too deeply" if isinstance(error, RecursionError) else str(error)
    return LoadError("decode", f"does not decode: {reason}")


def check_usable(nodes: int, skipped: int, allow_empty: bool) -> None:
    """Refuse a crawl with rows but no usable one, or (unless allowed) no rows."""
    if skipped and not nodes:
        raise LoadError("no_usable_rows", f"none of its {skipped} rows is usable")
    if not nodes and not allow_empty:
        raise LoadError(
            "empty", "the crawl lists no nodes (--allow-empty-crawls serves such crawls)"
        )


def _index_rows(addresses: list[str], rows: list[Any]) -> tuple[dict[str, NodeRow], int]:
    """Each usable row's node by its canonical address (UNUSABLE: none), in passes in C:
    the later of two rows for one address wins."""
    nodes = dict(zip(addresses, map(_node, rows), strict=True))
    if UNUSABLE not in nodes:
        return nodes, 0
    del nodes[UNUSABLE]
    return nodes, addresses.count(UNUSABLE)


def _index_keys(keyed: dict[str, NodeRow]) -> tuple[dict[str, NodeRow], int]:
    nodes: dict[str, NodeRow] = {}
    skipped = 0
    for key, node in keyed.items():
        try:
            nodes[parse_address(key)] = node
        except AddressError:
            skipped += 1
    return nodes, skipped


def consensus_height(nodes: Iterable[NodeRow]) -> int:
    """The most common height among the nodes (the higher one on a tie); 0 for none."""
    return most_common_height(node.height for node in nodes)


def most_common_height(heights_of_nodes: Iterable[int]) -> int:
    """The most common of these heights (the higher one on a tie); 0 for none."""
    heights = Counter(heights_of_nodes)
    if not heights:
        return 0
    return max(heights.items(), key=lambda item: (item[1], item[0]))[0]


def tally_networks(names: Iterable[str]) -> tuple[int, ...]:
    """Counts of network names, in NETWORKS order."""
    counts = Counter(names)
    return tuple(counts.get(network, 0) for network in NETWORKS)


def decode_status(data: bytes) -> CrawlerStatus:
    try:
        return _status_decoder.decode(data)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise does_not_decode(exc) from None


def read_status(path: Path, rules: Rules) -> CrawlerStatus:
    """``status.json``, read and decoded."""
    return decode_status(read_file(path, rules.max_file_size)[0])
