"""A crawl of bitnodes' export rows straight to the archive's rows (a backfill's day), with
no node objects between: the rows' fields as columns, each host made canonical once per
process (a day's crawls list mostly the same nodes), and a repeated address kept as
``decode_snapshot`` keeps it (the later row, at the first one's place). The same rows as
``columns_of(decode_snapshot(...))``, which the other forms (crawl-only rows, the API
object) still take.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pyarrow as pa
from msgspec.structs import astuple

from ..crawl.address import AddressError, canonical_host, network_of
from ..crawl.decode import (
    check_usable,
    does_not_decode,
    export_decoder,
    form_of,
    most_common_height,
)
from ..models import ExportRow
from .columns import NAMES, NODE_FIELDS
from .parquet import ARROW_SCHEMA

HOSTS_KEPT = 1_000_000  # canonical hosts kept per process, then forgotten all at once
_hosts: dict[str, tuple[str, str] | None] = {}  # host -> canonical host and type, or None


class ExportRows:
    """A crawl's rows as the archive's table, with its nodes and consensus height."""

    def __init__(self, rows: pa.Table, height: int) -> None:
        self.rows = rows
        self.nodes = len(rows)
        self.height = height


def export_rows(data: bytes, timestamp: int, network: str, allow_empty: bool) -> ExportRows | None:
    """The crawl's rows as the archive's table, if it is in the export form.

    Args:
        data: the crawl file's bytes.
        timestamp: the crawl's.
        network: the network's name.
        allow_empty: whether a crawl with no nodes is archived.

    Returns:
        Its rows, or None for a crawl in another form.

    Raises:
        LoadError: what ``decode_snapshot`` raises for the same bytes.
    """
    try:
        if form_of(data) != b"[":
            return None
        rows = export_decoder.decode(data)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise does_not_decode(exc) from None
    if rows and not isinstance(rows[0], ExportRow):
        return None
    fields = list(zip(*map(astuple, rows), strict=True)) or [()] * (2 + len(NODE_FIELDS))
    hosts = list(map(_canonical, fields[0], fields[1]))
    kept = {
        (host[0], port): index
        for index, (host, port) in enumerate(zip(hosts, fields[1], strict=True))
        if host is not None
    }
    check_usable(len(kept), hosts.count(None), allow_empty)
    columns: dict[str, Any] = dict(zip(NODE_FIELDS, fields[2:], strict=True))
    columns["address"] = [host[0] if host else None for host in hosts]
    columns["address_type"] = [host[1] if host else None for host in hosts]
    columns["port"] = fields[1]
    table = _table(columns, len(rows), timestamp, network)
    if len(kept) != len(rows):  # a repeated or unusable address: the rows decode keeps
        table = table.take(list(kept.values()))
    table = table.set_column(NAMES.index("position"), "position", _positions(len(kept)))
    height = most_common_height(columns["height"][index] for index in kept.values())
    return ExportRows(table, height)


def _canonical(host: str, port: int) -> tuple[str, str] | None:
    """The row's canonical host and its type, or None if decode would skip the row."""
    if not 1 <= port <= 65535:
        return None
    try:
        return _hosts[host]
    except KeyError:
        pass
    if len(_hosts) >= HOSTS_KEPT:
        _hosts.clear()
    try:
        canonical = canonical_host(host)
        known: tuple[str, str] | None = (canonical, network_of(canonical))
    except AddressError:
        known = None
    _hosts[host] = known
    return known


def _table(columns: dict[str, Any], count: int, timestamp: int, network: str) -> pa.Table:
    columns["timestamp"] = pa.repeat(pa.scalar(timestamp, pa.int64()), count)
    columns["network"] = pa.repeat(pa.scalar(network, pa.string()), count)
    columns["position"] = _positions(count)
    arrays = [
        value if isinstance(value, pa.Array) else pa.array(value, ARROW_SCHEMA.field(name).type)
        for name, value in ((name, columns[name]) for name in NAMES)
    ]
    return pa.table(arrays, schema=ARROW_SCHEMA)


def _positions(count: int) -> pa.Array:
    return pa.array(range(count), pa.int32())
