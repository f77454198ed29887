"""Request handlers: each reads pre-encoded bytes from the state and answers."""

from __future__ import annotations

import re

from aiohttp import web

from .address import AddressError, parse_address
from .conditional import negotiate, not_acceptable, respond
from .errors import error_response, method_not_allowed, no_snapshot
from .typedefs import OPENAPI, SETTINGS, STATE

DEFAULT_HISTORY_LIMIT = 144
_WHOLE_NUMBER = re.compile(r"[0-9]+")
_MAX_LIMIT_DIGITS = 18  # more digits than this is more crawls than any history holds
_HUGE_LIMIT = 1_000_000_000_000_000_000


def json_response(body: bytes) -> web.Response:
    return web.Response(body=body, content_type="application/json")


def until_next_crawl(app: web.Application) -> str:
    """Cache-Control for data that changes with the next crawl."""
    max_age = app[SETTINGS].cache_max_age
    if max_age is None:
        max_age = app[STATE].seconds_to_next_crawl()
    return "no-cache" if max_age is None else f"public, max-age={max_age}"


async def snapshot(request: web.Request) -> web.Response:
    served = request.app[STATE].snapshot
    if served is None:
        return no_snapshot()
    coding = negotiate(request.headers.get("Accept-Encoding"))
    if coding is None:
        return not_acceptable()
    cache_control = until_next_crawl(request.app)
    return respond(request, served.representations[coding], cache_control, vary=True)


async def status(request: web.Request) -> web.Response:
    return respond(request, request.app[STATE].status_body(), "no-cache")


async def history(request: web.Request) -> web.Response:
    state = request.app[STATE]
    values = request.query.getall("limit", [str(DEFAULT_HISTORY_LIMIT)])
    limit = _whole_number(values[0]) if len(values) == 1 else None
    if limit is None:
        return error_response(
            400,
            "invalid_limit",
            f"limit must be given once, as a whole number of at least 1 (default "
            f"{DEFAULT_HISTORY_LIMIT}; at most {state.history.capacity} points are held)",
        )
    by = request.query.getall("by", [])
    if by not in ([], ["network"]):
        return error_response(
            400, "invalid_by", "by must be given once, as by=network (counts per network)"
        )
    body = state.history.body(limit, by_network=bool(by))
    return respond(request, body, until_next_crawl(request.app))


def _whole_number(text: str) -> int | None:
    """A whole number of at least 1, or None; absurdly long ones count as very large."""
    if not _WHOLE_NUMBER.fullmatch(text):
        return None
    digits = text.lstrip("0")
    if len(digits) > _MAX_LIMIT_DIGITS:
        return _HUGE_LIMIT
    return int(digits) if digits else None


async def check(request: web.Request) -> web.Response:
    values = request.query.getall("address", [])
    if not values or not values[0]:
        return error_response(
            400, "missing_address", "give the peer as ?address=host:port, e.g. 203.0.113.5:8333"
        )
    if len(values) > 1:
        return error_response(400, "invalid_address", "address must be given once")
    try:
        address = parse_address(values[0])
    except AddressError as exc:
        return error_response(400, "invalid_address", str(exc))
    served = request.app[STATE].snapshot
    return no_snapshot() if served is None else json_response(served.check_body(address))


async def openapi(request: web.Request) -> web.Response:
    return respond(request, request.app[OPENAPI], "public, max-age=3600")


async def not_allowed(request: web.Request) -> web.Response:
    return method_not_allowed(request.method)


async def not_found(request: web.Request) -> web.Response:
    if request.method not in ("GET", "HEAD"):
        return method_not_allowed(request.method)
    return error_response(
        404, "not_found", f"no such endpoint: {request.path}; see the README for the API"
    )
