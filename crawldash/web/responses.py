"""Every response goes out through here: common headers, conditional GET and content-coding
negotiation (CORS headers are added by ``cors.py``).

The request path's caches live here too, each bounded, each saving per-request work:

- ``_header_sets``: finished 200 and 304 header sets per body and Cache-Control value, so a
  response copies one prepared multidict instead of assembling five headers (read-only:
  ``web.Response`` copies the headers it is given, so they are handed over as they are);
- ``_plain_headers``: the same for answers without validators, per Content-Type (and an
  attachment's file name);
- ``negotiate``: the coding chosen per distinct ``Accept-Encoding`` value (clients send a
  handful), instead of parsing q-values per request;
- ``matches`` and ``_http_date``: ``If-None-Match`` and ``If-Modified-Since`` per distinct
  value, instead of splitting tag lists and parsing dates per revalidation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from email.utils import parsedate_to_datetime
from functools import lru_cache

from aiohttp import hdrs, web
from multidict import CIMultiDict, CIMultiDictProxy

from ..live.bodies import BodyFile, Representation
from .sendfile import file_body

# On every response, set only here; the Server header names no versions.
COMMON_HEADERS = {"X-Content-Type-Options": "nosniff", "Server": "crawldash"}
JSON = "application/json"
SERVER_PREFERENCE = ("br", "gzip", "identity")  # smallest first, on a tie of q-values

# (ETag, Last-Modified, Cache-Control, Vary, Content-Type) -> (200 headers, 304 headers).
_HeaderKey = tuple[str, int, str, bool, str]
_HeaderSet = tuple[CIMultiDictProxy[str], CIMultiDictProxy[str]]
_header_sets: dict[_HeaderKey, _HeaderSet] = {}
_MAX_HEADER_SETS = 256  # a few bodies, each with a Cache-Control that changes every second
# By Content-Type and an attachment's file name
_plain_headers: dict[tuple[str, str | None], CIMultiDictProxy[str]] = {}


def headers_for(
    content_type: str | None = None, extra: Mapping[str, str] | None = None
) -> CIMultiDict[str]:
    """The common headers, a Content-Type and any others: for responses built elsewhere
    (error answers, the event stream)."""
    headers = CIMultiDict(COMMON_HEADERS)
    if content_type is not None:
        headers[hdrs.CONTENT_TYPE] = content_type
    if extra:
        headers.update(extra)
    return headers


def plain(
    body: bytes | BodyFile, content_type: str = JSON, *, filename: str | None = None
) -> web.Response:
    """200 with a body that has no validators (check answers, health, metrics, node lists),
    sent from its memory file if it is a large ``BodyFile``; ``filename``: an attachment's
    (Content-Disposition)."""
    key = (content_type, filename)
    headers = _plain_headers.get(key) or _build_plain_headers(key)
    if isinstance(body, BodyFile):
        return web.Response(body=file_body(body, content_type), headers=headers)
    return web.Response(body=body, headers=headers)


def _build_plain_headers(key: tuple[str, str | None]) -> CIMultiDictProxy[str]:
    content_type, filename = key
    extra: dict[str, str] = {}
    if filename is not None:
        extra[hdrs.CONTENT_DISPOSITION] = f'attachment; filename="{filename}"'
    if len(_plain_headers) >= _MAX_HEADER_SETS:  # a file name per crawl
        _plain_headers.clear()
    headers = _plain_headers[key] = CIMultiDictProxy(headers_for(content_type, extra))
    return headers


def respond(
    request: web.Request,
    representation: Representation,
    cache_control: str,
    *,
    vary: bool = False,
    content_type: str = JSON,
    extra: Mapping[str, str] | None = None,
    from_file: bool = False,
) -> web.Response:
    """200 with the body, or 304 with the same headers and no body if the client has it.
    ``from_file``: a large body is sent from its memory file (``sendfile``), which lives
    as long as the representation: for bodies held one per crawl, such as the snapshot."""
    key = (representation.etag, representation.modified, cache_control, vary, content_type)
    header_set = _header_sets.get(key) or _build_header_set(key, representation)
    if is_fresh(request, representation):
        response = web.Response(status=304, headers=header_set[1])
    else:
        body = representation.body
        sent = file_body(representation.file, content_type) if from_file else body
        response = web.Response(body=sent, headers=header_set[0])
    if extra:
        response.headers.update(extra)
    return response


def _build_header_set(key: _HeaderKey, representation: Representation) -> _HeaderSet:
    _, _, cache_control, vary, content_type = key
    not_modified = headers_for(extra=representation.headers)
    not_modified[hdrs.CACHE_CONTROL] = cache_control
    if vary:
        not_modified[hdrs.VARY] = hdrs.ACCEPT_ENCODING
    ok = not_modified.copy()
    ok[hdrs.CONTENT_TYPE] = content_type
    if len(_header_sets) >= _MAX_HEADER_SETS:
        _header_sets.clear()
    header_set = _header_sets[key] = CIMultiDictProxy(ok), CIMultiDictProxy(not_modified)
    return header_set


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
    """Weak comparison of ``etag`` with any tag listed; ``*`` matches anything. A body's
    codings share the tag before ``-``, so any of them revalidates the others."""
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
    weight = _weights(accept_encoding)
    best = max(SERVER_PREFERENCE, key=lambda c: (weight(c), -SERVER_PREFERENCE.index(c)))
    return best if weight(best) > 0 else None


@lru_cache(maxsize=256)
def takes_identity(accept_encoding: str | None) -> bool:
    """Whether a client takes a body in no content coding: unless it refuses it
    (``identity;q=0``, or ``*;q=0`` without naming identity)."""
    return accept_encoding is None or _weights(accept_encoding)("identity") > 0


def _weights(accept_encoding: str) -> Callable[[str], float]:
    """Each content coding's q-value in an Accept-Encoding value."""
    weights: dict[str, float] = {}
    for item in accept_encoding.split(","):
        name, _, params = item.strip().partition(";")
        weights[name.strip().lower()] = _q(params)
    star = weights.get("*")

    def weight(coding: str) -> float:
        default = 0.001 if coding == "identity" else 0.0  # acceptable unless refused, last
        return weights.get(coding, star if star is not None else default)

    return weight


def _q(params: str) -> float:
    for param in params.split(";"):
        key, _, value = param.strip().partition("=")
        if key.strip().lower() == "q":
            try:
                return min(1.0, max(0.0, float(value)))
            except ValueError:
                return 0.0
    return 1.0
