"""HTTP caching: conditional requests, content-coding negotiation and cache headers."""

from __future__ import annotations

from email.utils import parsedate_to_datetime
from functools import lru_cache

from aiohttp import hdrs, web
from multidict import CIMultiDict

from .errors import error_response
from .headers import COMMON_HEADERS
from .representation import Representation

SERVER_PREFERENCE = ("br", "gzip", "identity")  # smallest first, on a tie of q-values
JSON = "application/json"

# Finished header sets, built once per body and Cache-Control value rather than per request:
# (ETag, Last-Modified, Cache-Control, Vary, Content-Type) -> (200 headers, 304 headers).
_HeaderKey = tuple[str, int, str, bool, str]
_header_sets: dict[_HeaderKey, tuple[CIMultiDict[str], CIMultiDict[str]]] = {}
_MAX_HEADER_SETS = 256  # a few bodies, each with a Cache-Control that changes every second


def respond(
    request: web.Request,
    representation: Representation,
    cache_control: str,
    *,
    vary: bool = False,
    content_type: str = JSON,
) -> web.Response:
    """200 with the body, or 304 with the same headers and no body if the client has it."""
    key = (representation.etag, representation.modified, cache_control, vary, content_type)
    header_set = _header_sets.get(key) or _build_header_set(key, representation)
    if is_fresh(request, representation):
        return web.Response(status=304, headers=header_set[1].copy())
    return web.Response(body=representation.body, headers=header_set[0].copy())


def _build_header_set(
    key: _HeaderKey, representation: Representation
) -> tuple[CIMultiDict[str], CIMultiDict[str]]:
    _, _, cache_control, vary, content_type = key
    not_modified = CIMultiDict(COMMON_HEADERS)
    not_modified.update(representation.headers)
    not_modified["Cache-Control"] = cache_control
    if vary:
        not_modified["Vary"] = "Accept-Encoding"
    ok = not_modified.copy()
    ok["Content-Type"] = content_type
    if len(_header_sets) >= _MAX_HEADER_SETS:
        _header_sets.clear()
    _header_sets[key] = ok, not_modified
    return ok, not_modified


def is_fresh(request: web.Request, representation: Representation) -> bool:
    """True if the client's copy is current (RFC 9110 13.1.2 and 13.1.3, GET and HEAD)."""
    if_none_match = request.headers.get(hdrs.IF_NONE_MATCH)
    if if_none_match is not None:
        return matches(if_none_match, representation.etag)
    if_modified_since = request.headers.get(hdrs.IF_MODIFIED_SINCE)
    if if_modified_since is None:
        return False
    since = _http_date(if_modified_since)
    return since is not None and since >= representation.modified


@lru_cache(maxsize=256)
def matches(if_none_match: str, etag: str) -> bool:
    """Weak comparison of ``etag`` with any tag listed; ``*`` matches anything."""
    if if_none_match.strip() == "*":
        return True
    base = etag.strip('"').split("-")[0]
    for tag in if_none_match.split(","):
        candidate = tag.strip().removeprefix("W/").strip('"')
        if candidate and candidate.split("-")[0] == base:
            return True
    return False


@lru_cache(maxsize=256)
def _http_date(text: str) -> float | None:
    try:
        return parsedate_to_datetime(text).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


@lru_cache(maxsize=256)
def negotiate(accept_encoding: str | None) -> str | None:
    """The content coding to send for an Accept-Encoding value; None if none is acceptable."""
    if accept_encoding is None:
        return "identity"
    weights: dict[str, float] = {}
    for item in accept_encoding.split(","):
        name, _, params = item.strip().partition(";")
        weights[name.strip().lower()] = _q(params)
    star = weights.get("*")

    def weight(coding: str) -> float:
        default = 0.001 if coding == "identity" else 0.0  # acceptable unless refused, last
        return weights.get(coding, star if star is not None else default)

    best = max(SERVER_PREFERENCE, key=lambda c: (weight(c), -SERVER_PREFERENCE.index(c)))
    return best if weight(best) > 0 else None


def _q(params: str) -> float:
    for param in params.split(";"):
        key, _, value = param.strip().partition("=")
        if key.strip().lower() == "q":
            try:
                return min(1.0, max(0.0, float(value)))
            except ValueError:
                return 0.0
    return 1.0


def not_acceptable() -> web.Response:
    return error_response(
        406,
        "not_acceptable",
        "Accept-Encoding refuses every coding offered: br, gzip and identity",
    )
