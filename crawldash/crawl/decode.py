"""Crawler bytes to Structs: a decoded snapshot, a count or a status, or a LoadError."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from ..models import ApiSnapshot, CrawlerStatus, ExportRow, NodeRow
from .address import NETWORKS, AddressError, canonical_address, network_of, parse_address
from .files import LoadError, read_file

if TYPE_CHECKING:  # the loader process imports this module: it needs no settings
    from ..settings import Settings

_export_decoder = msgspec.json.Decoder(list[ExportRow])
_api_decoder = msgspec.json.Decoder(ApiSnapshot)
_status_decoder = msgspec.json.Decoder(CrawlerStatus)


@dataclass(frozen=True)
class Rules:
    """What a crawl file must be to be served or counted: the loader and the counting of
    older crawls apply the same rules, so only crawls that could be served get points."""

    max_file_size: int
    allow_empty: bool = False  # serve crawls with no nodes (a crawler that found nothing)

    @classmethod
    def of(cls, settings: Settings) -> Rules:
        return cls(settings.max_file_size, settings.allow_empty_crawls)


@dataclass(frozen=True)
class Snapshot:
    """One crawl, decoded: unique nodes by canonical ``host:port``."""

    timestamp: int
    nodes: dict[str, NodeRow]
    latest_height: int
    skipped_rows: int  # rows whose address is unusable


def _form(data: bytes) -> bytes:
    first = data.lstrip()[:1]
    if first not in (b"[", b"{"):
        raise LoadError("not_json", "not JSON: expected an array of rows or an object with 'nodes'")
    return first


def decode_snapshot(data: bytes, timestamp: int, allow_empty: bool = False) -> Snapshot:
    """Decode either snapshot form; the later of two rows for one address wins."""
    try:
        if _form(data) == b"[":
            rows = _export_decoder.decode(data)
            nodes, skipped = _index_rows((row.address, row.port, row.node()) for row in rows)
        else:
            api = _api_decoder.decode(data)
            nodes, skipped = _index_keys(api.nodes)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise LoadError("decode", f"does not decode: {_decode_reason(exc)}") from None
    if skipped and not nodes:
        raise LoadError("no_usable_rows", f"none of its {skipped} rows has a usable address")
    if not nodes and not allow_empty:
        raise LoadError(
            "empty", "the crawl lists no nodes (--allow-empty-crawls serves such crawls)"
        )
    return Snapshot(timestamp, nodes, consensus_height(nodes.values()), skipped)


def _decode_reason(error: Exception) -> str:
    return "nested too deeply" if isinstance(error, RecursionError) else str(error)


def _index_rows(rows: Iterable[tuple[str, int, NodeRow]]) -> tuple[dict[str, NodeRow], int]:
    nodes: dict[str, NodeRow] = {}
    skipped = 0
    for host, port, node in rows:
        try:
            nodes[canonical_address(host, port)] = node
        except AddressError:
            skipped += 1
    return nodes, skipped


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
    heights = Counter(node.height for node in nodes)
    if not heights:
        return 0
    return max(heights.items(), key=lambda item: (item[1], item[0]))[0]


@dataclass(frozen=True)
class CrawlCount:
    """What the history keeps of an older crawl: its nodes, in all and per network (in
    NETWORKS order), its consensus height, and which addresses were in it."""

    nodes: int
    networks: tuple[int, ...]
    latest_height: int
    addresses: list[str]  # canonical host:port


def count_nodes(data: bytes, allow_empty: bool = False) -> CrawlCount:
    """Count a snapshot. Decoded whole, as the loader decodes it: a crawl it would refuse
    is refused here too."""
    snapshot = decode_snapshot(data, 0, allow_empty)
    nodes = snapshot.nodes
    return CrawlCount(len(nodes), count_networks(nodes), snapshot.latest_height, list(nodes))


def count_networks(keys: Iterable[str]) -> tuple[int, ...]:
    """Counts of canonical ``host:port`` keys by network, in NETWORKS order."""
    return tally_networks(network_of(key.rpartition(":")[0].strip("[]")) for key in keys)


def tally_networks(names: Iterable[str]) -> tuple[int, ...]:
    """Counts of network names, in NETWORKS order."""
    counts = Counter(names)
    return tuple(counts.get(network, 0) for network in NETWORKS)


def decode_status(data: bytes) -> CrawlerStatus:
    try:
        return _status_decoder.decode(data)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise LoadError("decode", f"does not decode: {_decode_reason(exc)}") from None


def read_status(path: Path, rules: Rules) -> CrawlerStatus:
    """``status.json``, read and decoded."""
    return decode_status(read_file(path, rules.max_file_size)[0])


def read_count(path: Path, rules: Rules) -> CrawlCount:
    """A crawl file counted: nodes in all and per network, height and addresses."""
    return count_nodes(read_file(path, rules.max_file_size)[0], rules.allow_empty)
