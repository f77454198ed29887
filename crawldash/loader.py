"""Crawler files to Structs: bytes in, a decoded snapshot, count or status out, or LoadError."""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import msgspec

from .address import NETWORKS, AddressError, canonical_address, network_of, parse_address
from .models import AddressOnly, ApiSnapshot, ApiSnapshotKeys, CrawlerStatus, ExportRow, NodeRow

STATUS_NAME = "status.json"
_SNAPSHOT_NAME = re.compile(r"([0-9]{1,12})\.json")

_export_decoder = msgspec.json.Decoder(list[ExportRow])
_api_decoder = msgspec.json.Decoder(ApiSnapshot)
_export_count_decoder = msgspec.json.Decoder(list[AddressOnly])
_api_count_decoder = msgspec.json.Decoder(ApiSnapshotKeys)
_status_decoder = msgspec.json.Decoder(CrawlerStatus)


class LoadError(Exception):
    """A crawler file that must not be served; the message says why, ``kind`` names it."""

    KINDS = ("too_large", "empty", "not_json", "decode", "no_usable_rows")

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind

    def __reduce__(self) -> tuple[type[LoadError], tuple[str, str]]:
        return LoadError, (self.kind, str(self))  # it crosses from the loader process


@dataclass(frozen=True)
class FileVersion:
    """What identifies one version of a file: it changes whenever the file is rewritten."""

    size: int
    mtime_ns: int


@dataclass(frozen=True)
class Snapshot:
    """One crawl, decoded: unique nodes by canonical ``host:port``."""

    timestamp: int
    nodes: dict[str, NodeRow]
    latest_height: int
    skipped_rows: int


def snapshot_timestamp(name: str) -> int | None:
    """The crawl timestamp a file name stands for, or None if it is not a snapshot file."""
    match = _SNAPSHOT_NAME.fullmatch(name)
    return int(match.group(1)) if match else None


def read_file(path: Path, max_size: int) -> tuple[bytes, FileVersion]:
    """Read a whole file, refusing empty and over-large ones. FileNotFoundError passes through."""
    with path.open("rb") as handle:
        info = os.fstat(handle.fileno())
        if info.st_size > max_size:
            raise LoadError(
                "too_large", f"{info.st_size} bytes is over the limit of {max_size} bytes"
            )
        data = handle.read(max_size + 1)
    if len(data) > max_size:
        raise LoadError("too_large", f"grew past the limit of {max_size} bytes while being read")
    if not data.strip():
        raise LoadError("empty", "the file is empty")
    return data, FileVersion(info.st_size, info.st_mtime_ns)


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
