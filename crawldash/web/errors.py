"""The one JSON error shape, ``{"error": {"status", "code", "message"}}``, raised anywhere
in a handler as ``ApiError`` and sent by aiohttp as it is (no middleware); and the answers
for unknown paths and methods."""

from __future__ import annotations

from collections.abc import Mapping

import msgspec
from aiohttp import hdrs, web

from ..models import ErrorBody, ErrorDetail
from .responses import JSON, headers_for

_encoder = msgspec.json.Encoder()
ALLOWED_METHODS = "GET, HEAD"


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
