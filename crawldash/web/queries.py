"""Query strings of the API, parsed into what the handlers need or an ``ApiError`` 400.

Each parser is cached by the raw query string (monitors repeat theirs), which spares the
request path a ``parse_qsl`` and a validation per request; errors are never cached.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import parse_qsl

from ..crawl.address import NETWORKS, AddressError, parse_address
from ..crawl.breakdown import BY, SERVICE_NAMES
from ..live.answers.trends import DEFAULT_TOP, MAX_TOP
from ..live.snapshot.breakdown import DEFAULT_ROWS, MAX_ROWS
from ..live.snapshot.catalog import SORTS, NodeFilter
from .errors import ApiError

DEFAULT_HISTORY_LIMIT = 144
MAX_MATCH = 64  # characters of a history's match
HISTORY_FORMATS = ("json", "csv")
DEFAULT_WINDOW, MIN_WINDOW, MAX_WINDOW = 86_400, 60, 31_536_000  # /api/unique, seconds
_WHOLE_NUMBER = re.compile(r"[0-9]+")
_MAX_LIMIT_DIGITS = 18  # more digits than this is more crawls than any history holds
_HUGE_LIMIT = 1_000_000_000_000_000_000


def parse_query(raw_query: str) -> dict[str, list[str]]:
    """Every value of every parameter, in order."""
    values: dict[str, list[str]] = {}
    for name, value in parse_qsl(raw_query, keep_blank_values=True):
        values.setdefault(name, []).append(value)
    return values


@dataclass(frozen=True)
class HistoryQuery:
    """What ``/api/history`` was asked for."""

    limit: int
    by: str | None  # network, or a key of the breakdowns; None: reachable counts alone
    top: int  # values shown by a key of the breakdowns
    match: str | None  # with by=user_agent: the text to count user agents holding
    format: str  # json or csv


@lru_cache(maxsize=1024)
def history_query(raw_query: str, capacity: int) -> HistoryQuery:
    """``/api/history``'s parameters, from a raw query string."""
    query = parse_query(raw_query)
    limit = _limit(query, capacity)
    by = query.get("by", [])
    if len(by) > 1 or (by and by[0] not in BY):
        raise ApiError(400, "invalid_by", f"by must be given once, as one of {', '.join(BY)}")
    top = bounded(query, "top", DEFAULT_TOP, MAX_TOP)
    match = one_value(query, "match")
    if match is not None and (by != ["user_agent"] or not 1 <= len(match) <= MAX_MATCH):
        raise ApiError(
            400,
            "invalid_match",
            f"match must be given once, with by=user_agent, as 1 to {MAX_MATCH} characters",
        )
    form = one_value(query, "format")
    form = "json" if form is None else form
    if form not in HISTORY_FORMATS:
        raise ApiError(400, "invalid_format", f"format must be {' or '.join(HISTORY_FORMATS)}")
    return HistoryQuery(limit, by[0] if by else None, top, match, form)


@lru_cache(maxsize=1024)
def unique_query(raw_query: str) -> int:
    """``window`` of ``/api/unique``, in seconds."""
    text = one_value(parse_query(raw_query), "window")
    window = DEFAULT_WINDOW if text is None else whole_number(text)
    if window is None or not MIN_WINDOW <= window <= MAX_WINDOW:
        raise ApiError(
            400,
            "invalid_window",
            f"window must be given once, as seconds from {MIN_WINDOW} to {MAX_WINDOW:,}",
        )
    return window


def _limit(query: dict[str, list[str]], capacity: int) -> int:
    """``limit`` of the history and presence: how many of the latest crawls."""
    values = query.get("limit", [str(DEFAULT_HISTORY_LIMIT)])
    limit = whole_number(values[0]) if len(values) == 1 else None
    if limit is None:
        raise ApiError(
            400,
            "invalid_limit",
            f"limit must be given once, as a whole number of at least 1 (default "
            f"{DEFAULT_HISTORY_LIMIT}; at most {capacity} crawls are held)",
        )
    return limit


def whole_number(text: str) -> int | None:
    """A whole number of at least 1, or None; absurdly long ones count as very large."""
    if not _WHOLE_NUMBER.fullmatch(text):
        return None
    digits = text.lstrip("0")
    if len(digits) > _MAX_LIMIT_DIGITS:
        return _HUGE_LIMIT
    return int(digits) if digits else None


@lru_cache(maxsize=4096)
def check_query(raw_query: str) -> str:
    """The canonical address asked about, from a raw query string."""
    return _address(parse_query(raw_query))


@lru_cache(maxsize=4096)
def presence_query(raw_query: str, capacity: int) -> tuple[str, int]:
    """The canonical address and ``limit`` of ``/api/presence``."""
    query = parse_query(raw_query)
    address = _address(query)
    return address, _limit(query, capacity)


@lru_cache(maxsize=1024)
def changes_query(raw_query: str) -> int | None:
    """``since`` of ``/api/changes``, a unix time, or None for the crawl before the latest."""
    since = one_value(parse_query(raw_query), "since")
    if since is None:
        return None
    if not _WHOLE_NUMBER.fullmatch(since) or len(since) > 12:
        raise ApiError(
            400, "invalid_since", "since must be a unix time in seconds, e.g. 1700000000"
        )
    return int(since)


def _address(query: dict[str, list[str]]) -> str:
    values = query.get("address", [])
    if not values or not values[0]:
        raise ApiError(
            400,
            "missing_address",
            "give the peer as ?address=host:port, e.g. 203.0.113.5:8333",
        )
    if len(values) > 1:
        raise ApiError(400, "invalid_address", "address must be given once")
    try:
        return parse_address(values[0])
    except AddressError as exc:
        raise ApiError(400, "invalid_address", str(exc)) from None


def one_value(query: dict[str, list[str]], name: str) -> str | None:
    """The one value of a parameter, or None; 400 ``invalid_<name>`` if given twice."""
    values = query.get(name, [])
    if len(values) > 1:
        raise ApiError(400, f"invalid_{name}", f"{name} must be given once")
    return values[0] if values else None


def bounded(query: dict[str, list[str]], name: str, default: int, high: int) -> int:
    text = one_value(query, name)
    number = default if text is None else whole_number(text)
    if number is None or number > high:
        raise ApiError(400, f"invalid_{name}", f"{name} must be a whole number from 1 to {high}")
    return number


@lru_cache(maxsize=1024)
def breakdown_query(raw_query: str) -> tuple[str, int]:
    """``by`` and ``limit`` of ``/api/breakdown``."""
    query = parse_query(raw_query)
    by = one_value(query, "by")
    if by not in BY:
        raise ApiError(400, "invalid_by", f"by must be one of {', '.join(BY)}")
    return by, bounded(query, "limit", DEFAULT_ROWS, MAX_ROWS)


COUNTRY = re.compile(r"[A-Za-z]{2}")
_ASN = re.compile(r"(?:AS)?([0-9]{1,10})", re.IGNORECASE)
NODE_FORMATS = ("json", "csv", "addresses")
MAX_NODES_PAGE = 1000
MAX_TEXT = 200


@dataclass(frozen=True)
class NodesQuery:
    wanted: NodeFilter
    sort: str
    descending: bool
    page: int
    limit: int
    format: str


@lru_cache(maxsize=1024)
def nodes_query(raw_query: str) -> NodesQuery:
    """The filters, order, page and format of ``/api/nodes``; 400 naming a bad one."""
    query = parse_query(raw_query)
    network = one_value(query, "network")
    if network is not None and network not in NETWORKS:
        raise ApiError(400, "invalid_network", f"network must be one of {', '.join(NETWORKS)}")
    country = one_value(query, "country")
    if country is not None and not COUNTRY.fullmatch(country):
        raise ApiError(400, "invalid_country", "country must be a two-letter code, e.g. DE")
    asn = one_value(query, "asn")
    asn_match = _ASN.fullmatch(asn) if asn is not None else None
    if asn is not None and asn_match is None:
        raise ApiError(400, "invalid_asn", "asn must be AS followed by a number, e.g. AS3320")
    version = one_value(query, "version")
    # A number past any protocol version's digits stands for a very large one (it matches
    # no node): Python refuses to read a number of thousands of digits.
    version_number = None if version is None else whole_number(version)
    if version is not None and version_number is None:
        raise ApiError(400, "invalid_version", "version must be a protocol version, e.g. 70016")
    services = one_value(query, "services")
    if services is not None and services.upper() not in SERVICE_NAMES:
        names = ", ".join(SERVICE_NAMES)
        raise ApiError(400, "invalid_services", f"services must be one of {names}")
    sort = one_value(query, "sort")
    sort = "address" if sort is None else sort
    if sort.removeprefix("-") not in SORTS:
        choices = ", ".join(SORTS)
        raise ApiError(400, "invalid_sort", f"sort must be one of {choices}, or - before one")
    form = one_value(query, "format")
    form = "json" if form is None else form
    if form not in NODE_FORMATS:
        raise ApiError(400, "invalid_format", f"format must be one of {', '.join(NODE_FORMATS)}")
    wanted = NodeFilter(
        network=network,
        country=country.upper() if country else None,
        asn=f"AS{asn_match.group(1)}" if asn_match else None,
        user_agent=text_value(query, "user_agent"),
        version=version_number,
        services=1 << SERVICE_NAMES[services.upper()] if services is not None else None,
        q=text_value(query, "q"),
    )
    page = bounded(query, "page", 1, 10**9)
    limit = bounded(query, "limit", 100, MAX_NODES_PAGE)
    return NodesQuery(wanted, sort.removeprefix("-"), sort.startswith("-"), page, limit, form)


def text_value(query: dict[str, list[str]], name: str) -> str | None:
    text = one_value(query, name)
    if text is not None and len(text) > MAX_TEXT:
        raise ApiError(400, f"invalid_{name}", f"{name} is longer than {MAX_TEXT} characters")
    return text.lower() if text else None
