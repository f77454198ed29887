"""Query strings of the API, parsed into what the handlers need or an ``ApiError`` 400.

Each parser is cached by the raw query string (monitors repeat theirs), which spares the
request path a ``parse_qsl`` and a validation per request; errors are never cached.
"""

from __future__ import annotations

import re
from functools import lru_cache
from urllib.parse import parse_qsl

from ..crawl.address import AddressError, parse_address
from .errors import ApiError

DEFAULT_HISTORY_LIMIT = 144
_WHOLE_NUMBER = re.compile(r"[0-9]+")
_MAX_LIMIT_DIGITS = 18  # more digits than this is more crawls than any history holds
_HUGE_LIMIT = 1_000_000_000_000_000_000


def parse_query(raw_query: str) -> dict[str, list[str]]:
    """Every value of every parameter, in order."""
    values: dict[str, list[str]] = {}
    for name, value in parse_qsl(raw_query, keep_blank_values=True):
        values.setdefault(name, []).append(value)
    return values


@lru_cache(maxsize=1024)
def history_query(raw_query: str, capacity: int) -> tuple[int, bool]:
    """``limit`` and whether ``by=network`` was asked, from a raw query string."""
    query = parse_query(raw_query)
    values = query.get("limit", [str(DEFAULT_HISTORY_LIMIT)])
    limit = whole_number(values[0]) if len(values) == 1 else None
    if limit is None:
        raise ApiError(
            400,
            "invalid_limit",
            f"limit must be given once, as a whole number of at least 1 (default "
            f"{DEFAULT_HISTORY_LIMIT}; at most {capacity} points are held)",
        )
    by = query.get("by", [])
    if by not in ([], ["network"]):
        raise ApiError(
            400, "invalid_by", "by must be given once, as by=network (counts per network)"
        )
    return limit, bool(by)


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
    values = parse_query(raw_query).get("address", [])
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
