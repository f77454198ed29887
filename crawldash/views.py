"""Request handlers: each reads pre-encoded bytes from the state and answers.

The JSON endpoints are methods of ``Api``, bound to the state they serve, and parse their
query strings through small caches: the hot path is a few lookups and one response.
"""

from __future__ import annotations

import re
from functools import lru_cache
from urllib.parse import parse_qsl

from aiohttp import hdrs, web
from multidict import CIMultiDict

from .address import AddressError, parse_address
from .conditional import negotiate, not_acceptable, respond
from .errors import ALLOWED_METHODS, error_response, method_not_allowed, no_snapshot
from .headers import COMMON_HEADERS, CORS_ALLOWED_HEADERS, CORS_MAX_AGE, allowed_origin
from .representation import Representation
from .state import State
from .typedefs import SETTINGS

DEFAULT_HISTORY_LIMIT = 144
_WHOLE_NUMBER = re.compile(r"[0-9]+")
_MAX_LIMIT_DIGITS = 18  # more digits than this is more crawls than any history holds
_HUGE_LIMIT = 1_000_000_000_000_000_000
_JSON_HEADERS = CIMultiDict({**COMMON_HEADERS, "Content-Type": "application/json"})


class QueryError(ValueError):
    """A query string the endpoint cannot use: ``code`` and a message for the 400 body."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class Api:
    """The JSON endpoints, bound to the state they answer from."""

    def __init__(self, state: State, openapi: Representation, cache_max_age: int | None) -> None:
        self.state = state
        self.openapi_body = openapi
        self.cache_max_age = cache_max_age  # None: until the next crawl is due

    async def snapshot(self, request: web.Request) -> web.Response:
        served = self.state.snapshot
        if served is None:
            return no_snapshot()
        coding = negotiate(request.headers.get(hdrs.ACCEPT_ENCODING))
        if coding is None:
            return not_acceptable()
        body = served.representations[coding]
        return respond(request, body, self.until_next_crawl(), vary=True)

    async def status(self, request: web.Request) -> web.Response:
        return respond(request, self.state.status_body(), "no-cache")

    async def history(self, request: web.Request) -> web.Response:
        try:
            query = request.rel_url.raw_query_string
            limit, by_network = history_query(query, self.state.history.capacity)
        except QueryError as exc:
            return error_response(400, exc.code, str(exc))
        coding = negotiate(request.headers.get(hdrs.ACCEPT_ENCODING))
        if coding is None:
            return not_acceptable()
        body = self.state.history.body(limit, by_network, coding)
        return respond(request, body, self.until_next_crawl(), vary=True)

    async def check(self, request: web.Request) -> web.Response:
        try:
            address = check_query(request.rel_url.raw_query_string)
        except QueryError as exc:
            return error_response(400, exc.code, str(exc))
        served = self.state.snapshot
        if served is None:
            return no_snapshot()
        return web.Response(body=served.check_body(address), headers=_JSON_HEADERS.copy())

    async def openapi(self, request: web.Request) -> web.Response:
        return respond(request, self.openapi_body, "public, max-age=3600")

    def until_next_crawl(self) -> str:
        """Cache-Control for data that changes with the next crawl."""
        max_age = self.cache_max_age
        if max_age is None:
            max_age = self.state.seconds_to_next_crawl()
        return "no-cache" if max_age is None else _public_for(max_age)


@lru_cache(maxsize=1024)
def _public_for(max_age: int) -> str:
    return f"public, max-age={max_age}"


def _query(raw_query: str) -> dict[str, list[str]]:
    values: dict[str, list[str]] = {}
    for name, value in parse_qsl(raw_query, keep_blank_values=True):
        values.setdefault(name, []).append(value)
    return values


@lru_cache(maxsize=1024)
def history_query(raw_query: str, capacity: int) -> tuple[int, bool]:
    """``limit`` and whether ``by=network`` was asked, from a raw query string."""
    query = _query(raw_query)
    values = query.get("limit", [str(DEFAULT_HISTORY_LIMIT)])
    limit = _whole_number(values[0]) if len(values) == 1 else None
    if limit is None:
        raise QueryError(
            "invalid_limit",
            f"limit must be given once, as a whole number of at least 1 (default "
            f"{DEFAULT_HISTORY_LIMIT}; at most {capacity} points are held)",
        )
    by = query.get("by", [])
    if by not in ([], ["network"]):
        raise QueryError("invalid_by", "by must be given once, as by=network (counts per network)")
    return limit, bool(by)


def _whole_number(text: str) -> int | None:
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
    values = _query(raw_query).get("address", [])
    if not values or not values[0]:
        raise QueryError(
            "missing_address", "give the peer as ?address=host:port, e.g. 203.0.113.5:8333"
        )
    if len(values) > 1:
        raise QueryError("invalid_address", "address must be given once")
    try:
        return parse_address(values[0])
    except AddressError as exc:
        raise QueryError("invalid_address", str(exc)) from None


async def not_allowed(request: web.Request) -> web.Response:
    return method_not_allowed(request.method)


async def not_found(request: web.Request) -> web.Response:
    if request.method not in ("GET", "HEAD"):
        return method_not_allowed(request.method)
    return error_response(
        404, "not_found", f"no such endpoint: {request.path}; see the README for the API"
    )


async def preflight(request: web.Request) -> web.Response:
    """``OPTIONS``: a CORS preflight for GET from an allowed origin; otherwise 405."""
    settings = request.app[SETTINGS]
    origin = allowed_origin(settings.cors_origins, request.headers.get("Origin"))
    wanted = request.headers.get("Access-Control-Request-Method", "")
    if origin is None or wanted not in ("GET", "HEAD"):
        return method_not_allowed(request.method)
    return web.Response(
        status=204,
        headers={
            **COMMON_HEADERS,
            "Access-Control-Allow-Methods": ALLOWED_METHODS,
            "Access-Control-Allow-Headers": CORS_ALLOWED_HEADERS,
            "Access-Control-Max-Age": CORS_MAX_AGE,
        },
    )
