"""The one JSON error shape, ``{"error": {"status", "code", "message"}}``, raised anywhere
in a handler as ``ApiError`` and sent by aiohttp as it is (no middleware); the same shape
for the answers aiohttp makes itself (``http_error``); and the answers for unknown paths
and methods, and for a route's path without its final slash."""

from __future__ import annotations

from collections.abc import Mapping
from http import HTTPStatus

import msgspec
from aiohttp import hdrs, web

from ..models import ErrorBody, ErrorDetail
from .responses import JSON, headers_for

_encoder = msgspec.json.Encoder()
ALLOWED_METHODS = "GET, HEAD"
MAX_REASON = 200  # characters of aiohttp's reason kept: it may quote the client's bytes
# The answers aiohttp makes before (or instead of) a handler, by status: code, message.
HTTP_ERRORS = {
    400: ("bad_request", "the request is not valid HTTP"),
    404: ("not_found", "no such endpoint; see docs/api.md for the API"),
    405: ("method_not_allowed", "crawldash is read-only and answers GET and HEAD"),
    413: ("payload_too_large", "the request's body is too large"),
    417: ("expectation_failed", "of Expect, only 100-continue is understood"),
    431: ("headers_too_large", "the request's headers are too large"),
    500: ("internal_error", "the server failed to answer; its log says why"),
    504: ("timeout", "the answer took too long"),
}


class ApiError(web.HTTPException):
    """An error answer: its status, a stable ``code`` and a message for a person."""

    def __init__(
        self, status: int, code: str, message: str, headers: Mapping[str, str] | None = None
    ) -> None:
        self.status_code = status
        super().__init__(headers=headers_for(JSON, headers))
        self.code = code
        self.body = _encoder.encode(ErrorBody(ErrorDetail(status, code, message)))
        self.headers[hdrs.CONTENT_TYPE] = JSON  # the body is set after aiohttp's text


def http_error(status: int, reason: str | None = None) -> web.Response:
    """An answer of aiohttp's own (a malformed request, a handler that failed) in the one
    shape, with the common headers; the connection is closed after it, as aiohttp does.

    Args:
        status: the status aiohttp chose.
        reason: aiohttp's reason, for a client's error; its first line ends the message.

    Returns:
        The response to send instead of aiohttp's plain text.
    """
    code, message = HTTP_ERRORS.get(status, ("http_error", _phrase(status)))
    if reason and status < 500:
        message += ": " + reason.strip().split("\n", 1)[0][:MAX_REASON]
    body = _encoder.encode(ErrorBody(ErrorDetail(status, code, message)))
    response = web.Response(status=status, body=body, headers=headers_for(JSON))
    response.force_close()
    return response


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return f"HTTP status {status}"


def no_snapshot() -> ApiError:
    return ApiError(503, "no_snapshot", "no crawl snapshot has been loaded yet")


def not_acceptable() -> ApiError:
    return ApiError(
        406, "not_acceptable", "Accept-Encoding refuses every coding offered: br, gzip and identity"
    )


def method_not_allowed(method: str) -> ApiError:
    return ApiError(
        405,
        "method_not_allowed",
        f"{method} is not allowed: crawldash is read-only and answers GET and HEAD",
        headers={hdrs.ALLOW: ALLOWED_METHODS},
    )


async def not_allowed(request: web.Request) -> web.Response:
    """Any method but GET and HEAD (and a preflight, under CORS) on a known path."""
    raise method_not_allowed(request.method)


async def not_found(request: web.Request) -> web.Response:
    if request.method not in ("GET", "HEAD"):
        raise method_not_allowed(request.method)
    raise ApiError(
        404, "not_found", f"no such endpoint: {request.path}; see docs/api.md for the API"
    )


async def to_slashed(request: web.Request) -> web.Response:
    """A route's path without its final slash (``/api/v1/snapshots``): sent to the path
    with it, query and all, by a 308, which keeps the method and body (a POST stays a
    POST). The Location is relative (``./snapshots/``), so that it holds behind a proxy at
    any path; the ``./`` keeps a last segment with a colon (an IPv6 node) from reading as
    a scheme."""
    url = request.rel_url
    target = "./" + url.raw_path.rsplit("/", 1)[1] + "/"
    if url.raw_query_string:
        target += "?" + url.raw_query_string
    moved = headers_for(extra={hdrs.CACHE_CONTROL: "public, max-age=3600"})
    raise web.HTTPPermanentRedirect(target, headers=moved)
