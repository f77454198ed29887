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
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from ..models import ApiSnapshot, Base, CrawlerStatus, ExportRow, NodeRow
from .address import NETWORKS, AddressError, canonical_address, parse_address
from .files import LoadError, read_file

if TYPE_CHECKING:  # the loader process imports this module: it needs no settings
    from ..settings.serve import Settings


class CrawlRow(Base, frozen=True, array_like=True):
    """One row of bitnodes' crawl-only output (``crawl.py``'s ``dump``): address, port,
    services and height, the height 0 when the crawler had none."""

    address: str
    port: int
    services: int
    height: int

    def node(self) -> NodeRow:
        """The node, its 11 fields the crawler does not write null."""
        return NodeRow(
            protocol_version=None,
            user_agent=None,
            connected_since=None,
            services=self.services,
            height=self.height,
            hostname=None,
            city=None,
            country=None,
            latitude=None,
            longitude=None,
            timezone=None,
            asn=None,
            org=None,
        )


_export_rows = msgspec.json.Decoder(list[ExportRow])
_crawl_rows = msgspec.json.Decoder(list[CrawlRow])
_api_decoder = msgspec.json.Decoder(ApiSnapshot)
_status_decoder = msgspec.json.Decoder(CrawlerStatus)


class RowsDecoder:
    """Either array form's rows: export rows, else crawl-only rows."""

    def decode(self, data: bytes) -> list[ExportRow] | list[CrawlRow]:
        """Decode the rows of a crawl in the array form.

        Args:
            data: the file's bytes, a JSON array of rows.

        Returns:
            The rows, all of one form: each has ``address``, ``port``, ``height`` and
            ``node()``.

        Raises:
            msgspec.DecodeError: not JSON, or rows of neither form (the message gives
                both forms' reasons).
        """
        # Export rows are tried first and alone: they are the common form, and a large
        # crawl's decode is the hot path. Crawl-only rows fail it at the first row.
        try:
            return _export_rows.decode(data)
        except msgspec.ValidationError as as_export:
            try:
                return _crawl_rows.decode(data)
            except msgspec.ValidationError as as_crawl:
                reasons = f"as export rows: {as_export}; as crawl-only rows: {as_crawl}"
                raise msgspec.ValidationError(reasons) from None


export_decoder = RowsDecoder()  # the name the counting of older crawls imports


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


def form_of(data: bytes) -> bytes:
    first = data.lstrip()[:1]
    if first not in (b"[", b"{"):
        raise LoadError("not_json", "not JSON: expected an array of rows or an object with 'nodes'")
    return first


def decode_snapshot(data: bytes, timestamp: int, allow_empty: bool = False) -> Snapshot:
    """Decode a crawl in any of its forms; the later of two rows for one address wins."""
    try:
        if form_of(data) == b"[":
            rows = export_decoder.decode(data)
            nodes, skipped = _index_rows((row.address, row.port, row.node()) for row in rows)
        else:
            api = _api_decoder.decode(data)
            nodes, skipped = _index_keys(api.nodes)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise does_not_decode(exc) from None
    check_usable(len(nodes), skipped, allow_empty)
    return Snapshot(timestamp, nodes, consensus_height(nodes.values()), skipped)


def does_not_decode(error: msgspec.DecodeError | RecursionError) -> LoadError:
    reason = "nested too deeply" if isinstance(error, RecursionError) else str(error)
    return LoadError("decode", f"does not decode: {reason}")


def check_usable(nodes: int, skipped: int, allow_empty: bool) -> None:
    """Refuse a crawl with rows but no usable address, or (unless allowed) no rows."""
    if skipped and not nodes:
        raise LoadError("no_usable_rows", f"none of its {skipped} rows has a usable address")
    if not nodes and not allow_empty:
        raise LoadError(
            "empty", "the crawl lists no nodes (--allow-empty-crawls serves such crawls)"
        )


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
