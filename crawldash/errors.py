"""The one JSON error shape: ``{"error": {"status", "code", "message"}}``."""

from __future__ import annotations

from collections.abc import Mapping

import msgspec
from aiohttp import web

from .headers import COMMON_HEADERS
from .models import ErrorBody, ErrorDetail

_encoder = msgspec.json.Encoder()
ALLOWED_METHODS = "GET, HEAD"


def error_body(status: int, code: str, message: str) -> bytes:
    return _encoder.encode(ErrorBody(ErrorDetail(status, code, message)))


def error_response(
    status: int, code: str, message: str, headers: Mapping[str, str] | None = None
) -> web.Response:
    return web.Response(
        status=status,
        body=error_body(status, code, message),
        content_type="application/json",
        headers={**COMMON_HEADERS, **headers} if headers else COMMON_HEADERS,
    )


def no_snapshot() -> web.Response:
    return error_response(503, "no_snapshot", "no crawl snapshot has been loaded yet")


def method_not_allowed(method: str) -> web.Response:
    return error_response(
        405,
        "method_not_allowed",
        f"{method} is not allowed: crawldash is read-only and answers GET and HEAD",
        headers={"Allow": ALLOWED_METHODS},
    )
