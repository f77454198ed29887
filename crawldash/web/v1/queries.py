"""Query strings and path parts of the bitnodes API v1 routes, parsed into what the handlers
need or an ``ApiError`` 400 (cached by raw value, as in ``queries``)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ...crawl.address import AddressError, parse_address
from ...crawl.propagation import BLOCK_HASH
from ...live.snapshot.catalog import NodeFilter
from ...live.snapshot.past_crawls import FIELDS
from ..errors import ApiError
from ..queries import COUNTRY, bounded, one_value, parse_query, text_value, whole_number

V1_DEFAULT_LIMIT = 10  # as bitnodes.io
V1_MAX_LIMIT = 100
MAX_PAGE = 10**9


@dataclass(frozen=True)
class Page:
    page: int
    limit: int

    @property
    def start(self) -> int:
        return (self.page - 1) * self.limit


def _page(query: dict[str, list[str]]) -> Page:
    return Page(
        bounded(query, "page", 1, MAX_PAGE),
        bounded(query, "limit", V1_DEFAULT_LIMIT, V1_MAX_LIMIT),
    )


@lru_cache(maxsize=1024)
def snapshots_query(raw_query: str) -> Page:
    """``page`` and ``limit`` of ``/api/v1/snapshots/``."""
    return _page(parse_query(raw_query))


@lru_cache(maxsize=1024)
def field_query(raw_query: str) -> str | None:
    """``field`` of a v1 snapshot: None for the whole snapshot, or one of FIELDS."""
    field = one_value(parse_query(raw_query), "field")
    if field is not None and field not in FIELDS:
        raise ApiError(400, "invalid_field", f"field must be one of {', '.join(FIELDS)}")
    return field


@lru_cache(maxsize=1024)
def nodes_page_query(raw_query: str) -> tuple[NodeFilter, Page]:
    """``country``, ``q``, ``page`` and ``limit`` of ``/api/v1/nodes/``."""
    query = parse_query(raw_query)
    country = one_value(query, "country")
    if country is not None and not COUNTRY.fullmatch(country):
        raise ApiError(400, "invalid_country", "country must be a two-letter code, e.g. DE")
    wanted = NodeFilter(country=country.upper() if country else None, q=text_value(query, "q"))
    return wanted, _page(query)


@lru_cache(maxsize=1024)
def leaderboard_query(raw_query: str) -> tuple[str | None, Page]:
    """``q`` (a part of address or user agent, any case), ``page`` and ``limit`` of
    ``/api/v1/nodes/leaderboard/``."""
    query = parse_query(raw_query)
    return text_value(query, "q"), _page(query)


def snapshot_timestamp(text: str) -> int | None:
    """The crawl timestamp of a ``/api/v1/snapshots/<timestamp>/`` path; None for
    ``latest``; 404 ``snapshot_not_found`` for anything else that is not a crawl time."""
    if text == "latest":
        return None
    timestamp = whole_number(text) if len(text) <= 12 else None
    if timestamp is None:
        raise ApiError(
            404,
            "snapshot_not_found",
            f"{text[:40]!r} is not a crawl timestamp: give one from /api/v1/snapshots/ or latest",
        )
    return timestamp


@lru_cache(maxsize=4096)
def node_address(text: str) -> str:
    """The canonical address of a ``/api/v1/nodes/<address>-<port>/`` path: the port after
    the last ``-``, IPv6 with or without brackets."""
    host, dash, port = text.rpartition("-")
    if not dash or not host:
        raise ApiError(
            400, "invalid_address", "give the node as ADDRESS-PORT, e.g. 203.0.113.5-8333"
        )
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    try:
        return parse_address(f"{host}:{port}")
    except AddressError as exc:
        raise ApiError(400, "invalid_address", str(exc)) from None


@lru_cache(maxsize=4096)
def inv_hash(text: str) -> str:
    """The block hash of a ``/api/v1/inv/<hash>/`` path: 64 hex digits, any case, as
    bitnodes writes it (the byte order block explorers show)."""
    lowered = text.lower()
    if not BLOCK_HASH.fullmatch(lowered):
        raise ApiError(
            400,
            "invalid_hash",
            "give the block hash as 64 hexadecimal digits, as /api/v1/inv/ lists",
        )
    return lowered
