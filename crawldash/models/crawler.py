"""The msgspec types that the crawler's files decode into: a crawl's rows, in both of
bitnodes' forms, and ``status.json``; and the base of every type.

A crawled node chooses its own version, services and height, and bitnodes writes them as
they came (``protocol.py``: version and height are int32, services a uint64): the types
take each number over its whole range in the protocol and no further, so that a value
beyond it is that row's fault, found when the row is decoded (``crawl/rows.py``), never an
overflow in whatever keeps it later (an array, a Parquet column).
"""

from __future__ import annotations

from typing import Annotated

import msgspec

# msgspec takes no bound beyond int64, so services' upper one is checked after decoding
# (``crawl/rows.py``: ``UINT64_MAX``).
Int32 = Annotated[int, msgspec.Meta(ge=-(2**31), le=2**31 - 1)]
Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
Services = Annotated[int, msgspec.Meta(ge=0)]
Port = Int64  # a port beyond 1-65535 is an unusable address: that row is skipped


class Base(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    """Base of every type: immutable, unknown keys ignored."""


class Node(Base, frozen=True):
    """A node's 13 fields by name, as ``/api/check`` shows it; null where the crawl does not
    say (bitnodes' crawl-only rows have only services and height)."""

    protocol_version: Int32 | None
    user_agent: str | None
    connected_since: Int64 | None
    services: Services
    height: Int32
    hostname: str | None
    city: str | None
    country: str | None
    latitude: float | None
    longitude: float | None
    timezone: str | None
    asn: str | None
    org: str | None


class NodeRow(Node, frozen=True, array_like=True):
    """The same fields as a row: how the bitnodes API v1 lists a node."""

    def named(self) -> Node:
        return Node(*msgspec.structs.astuple(self))


class ExportRow(Base, frozen=True, array_like=True):
    """One row of the bitnodes export form: address, port, then the 13 node fields."""

    address: str
    port: Port
    protocol_version: Int32
    user_agent: str | None
    connected_since: Int64
    services: Services
    height: Int32
    hostname: str | None
    city: str | None
    country: str | None
    latitude: float
    longitude: float
    timezone: str | None
    asn: str | None
    org: str | None

    def node(self) -> NodeRow:
        return NodeRow(*msgspec.structs.astuple(self)[2:])


class CrawlerStatus(Base, frozen=True):
    """``status.json`` as the crawler (or a bridge) writes it."""

    state: str
    queue_size: int
    height: int | None = None
    last_elapsed: float | None = None
    updated_at: int | None = None
    reached: int | None = None  # nodes reached so far in the crawl under way
    last_crawl_at: int | None = None  # when the last finished crawl ended
