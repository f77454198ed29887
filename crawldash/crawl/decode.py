"""Crawler bytes to Structs: a decoded snapshot, a count or a status, or a LoadError."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import msgspec

from ..models import AddressOnly, ApiSnapshot, ApiSnapshotKeys, CrawlerStatus, ExportRow, NodeRow
from .address import NETWORKS, AddressError, canonical_address, network_of, parse_address
from .files import LoadError, read_file

_export_decoder = msgspec.json.Decoder(list[ExportRow])
_api_decoder = msgspec.json.Decoder(ApiSnapshot)
_export_count_decoder = msgspec.json.Decoder(list[AddressOnly])
_api_count_decoder = msgspec.json.Decoder(ApiSnapshotKeys)
_status_decoder = msgspec.json.Decoder(CrawlerStatus)


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


def decode_snapshot(data: bytes, timestamp: int) -> Snapshot:
    """Decode either snapshot form; the later of two rows for one address wins."""
    try:
        if _form(data) == b"[":
            rows = _export_decoder.decode(data)
            nodes, skipped = _index_rows((row.address, row.port, row.node()) for row in rows)
        else:
            api = _api_decoder.decode(data)
            nodes, skipped = _index_keys(api.nodes)
    except msgspec.DecodeError as exc:
        raise LoadError("decode", f"does not decode: {exc}") from None
    if skipped and not nodes:
        raise LoadError("no_usable_rows", f"none of its {skipped} rows has a usable address")
    return Snapshot(timestamp, nodes, consensus_height(nodes.values()), skipped)


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


def count_nodes(data: bytes) -> tuple[int, tuple[int, ...]]:
    """Unique usable addresses in a snapshot, in all and per network (in NETWORKS order),
    without building its nodes."""
    try:
        if _form(data) == b"[":
            keys = {
                _key_or_none(row.address, row.port) for row in _export_count_decoder.decode(data)
            }
        else:
            keys = {_parsed_or_none(key) for key in _api_count_decoder.decode(data).nodes}
    except msgspec.DecodeError as exc:
        raise LoadError("decode", f"does not decode: {exc}") from None
    keys.discard(None)
    return len(keys), count_networks(key for key in keys if key is not None)


def count_networks(keys: Iterable[str]) -> tuple[int, ...]:
    """Counts of canonical ``host:port`` keys by network, in NETWORKS order."""
    counts = Counter(network_of(key.rpartition(":")[0].strip("[]")) for key in keys)
    return tuple(counts.get(network, 0) for network in NETWORKS)


def _key_or_none(host: str, port: int) -> str | None:
    try:
        return canonical_address(host, port)
    except AddressError:
        return None


def _parsed_or_none(key: str) -> str | None:
    try:
        return parse_address(key)
    except AddressError:
        return None


def decode_status(data: bytes) -> CrawlerStatus:
    try:
        return _status_decoder.decode(data)
    except msgspec.DecodeError as exc:
        raise LoadError("decode", f"does not decode: {exc}") from None


def read_status(path: Path, max_size: int) -> CrawlerStatus:
    """``status.json``, read and decoded."""
    return decode_status(read_file(path, max_size)[0])


def read_count(path: Path, max_size: int) -> tuple[int, tuple[int, ...]]:
    """A crawl file's node count, in all and per network."""
    return count_nodes(read_file(path, max_size)[0])
