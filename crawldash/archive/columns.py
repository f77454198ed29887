"""A crawl as the archive's columns, and back: one row per node, in the archive's schema
(docs/archive.md), as plain Python lists (no pyarrow here: the loader child builds them).

``position`` is the node's place in the crawl as crawldash decoded it (the file's order,
a repeated address at its first place), so that a pruned crawl is served in the same
order, and so byte for byte the same, as its file was.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from msgspec.structs import astuple

from ..crawl.address import format_address, network_of
from ..crawl.decode import Snapshot
from ..models import NodeRow

# (column, type) in the files' order; the types are docs/archive.md's
SCHEMA: tuple[tuple[str, str], ...] = (
    ("timestamp", "int64"),
    ("network", "string"),
    ("address", "string"),
    ("port", "int32"),
    ("address_type", "string"),
    ("protocol_version", "int64"),
    ("user_agent", "string"),
    ("connected_since", "int64"),
    ("services", "uint64"),
    ("height", "int64"),
    ("hostname", "string"),
    ("city", "string"),
    ("country", "string"),
    ("latitude", "float64"),
    ("longitude", "float64"),
    ("timezone", "string"),
    ("asn", "string"),
    ("org", "string"),
    ("position", "int32"),
)
NAMES = tuple(name for name, _ in SCHEMA)
NODE_FIELDS = NAMES[5:18]  # the 13 node fields, in NodeRow's order
SORT_KEYS = ("address", "port", "timestamp")  # a node's rows of a day side by side


def columns_of(snapshot: Snapshot, network: str) -> dict[str, Sequence[Any]]:
    """The crawl's rows as columns, in the crawl's order (``position`` counts up).

    Args:
        snapshot: the crawl as the loader decoded it.
        network: the network's name (its ``network=`` partition).

    Returns:
        One sequence per column of SCHEMA, each as long as the crawl has nodes.
    """
    count = len(snapshot.nodes)
    hosts, ports = [], []
    for key in snapshot.nodes:
        host, _, port = key.rpartition(":")
        hosts.append(host[1:-1] if host.startswith("[") else host)
        ports.append(int(port))
    # One tuple per node, turned into one per field in C: a crawl's 200,000 values are
    # not appended one by one.
    fields = list(zip(*map(astuple, snapshot.nodes.values()), strict=True))
    columns: dict[str, Sequence[Any]] = dict(
        zip(NODE_FIELDS, fields or [()] * len(NODE_FIELDS), strict=True)
    )
    columns["timestamp"] = [snapshot.timestamp] * count
    columns["network"] = [network] * count
    columns["address"], columns["port"] = hosts, ports
    columns["address_type"] = [network_of(host) for host in hosts]
    columns["position"] = range(count)
    return columns


def nodes_of(columns: Mapping[str, Sequence[Any]]) -> dict[str, NodeRow]:
    """The crawl's nodes by canonical ``host:port``, from its rows in the crawl's order
    (by ``position``: ``parquet.crawl_rows``). Each row is made in C (``map``), not field
    by field in Python."""
    keys = map(format_address, columns["address"], columns["port"])
    return dict(zip(keys, map(NodeRow, *(columns[name] for name in NODE_FIELDS)), strict=True))
