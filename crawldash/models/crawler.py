"""The msgspec types that the crawler's files decode into: a crawl's rows, in both of
bitnodes' forms, and ``status.json``; and the base of every type."""

from __future__ import annotations

import msgspec


class Base(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    """Base of every type: immutable, unknown keys ignored."""


class Node(Base, frozen=True):
    """A node's 13 fields by name, as ``/api/check`` shows it; null where the crawl does not
    say (bitnodes' crawl-only rows have only services and height)."""

    protocol_version: int | None
    user_agent: str | None
    connected_since: int | None
    services: int
    height: int
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
    port: int
    protocol_version: int
    user_agent: str | None
    connected_since: int
    services: int
    height: int
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
