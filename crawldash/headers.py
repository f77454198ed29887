"""Headers every response carries, and CORS when the operator names origins."""

from __future__ import annotations

from aiohttp import web

from .typedefs import SETTINGS

# Built into every response where it is made (no per-response hook: that costs every request).
COMMON_HEADERS = {"X-Content-Type-Options": "nosniff"}
CORS_MAX_AGE = "86400"
# Request headers a cross-origin GET may send beyond the simple ones: for revalidation.
CORS_ALLOWED_HEADERS = "If-None-Match, If-Modified-Since, Last-Event-ID"
CORS_EXPOSED_HEADERS = "ETag, Last-Modified"


async def add_cors_headers(request: web.Request, response: web.StreamResponse) -> None:
    """``on_response_prepare``, installed only when CORS origins are configured."""
    origin = allowed_origin(request.app[SETTINGS].cors_origins, request.headers.get("Origin"))
    response.headers.add("Vary", "Origin")
    if origin is not None:
        response.headers["Access-Control-Allow-Origin"] = origin
        response.headers["Access-Control-Expose-Headers"] = CORS_EXPOSED_HEADERS


def allowed_origin(origins: tuple[str, ...], origin: str | None) -> str | None:
    if origin is None:
        return None
    if "*" in origins:
        return "*"
    return origin if origin in origins else None
