"""Headers every response carries, and CORS when the operator names origins."""

from __future__ import annotations

from aiohttp import web

from .errors import ALLOWED_METHODS, method_not_allowed
from .typedefs import SETTINGS

CORS_MAX_AGE = "86400"
# Request headers a cross-origin GET may send beyond the simple ones: for revalidation.
CORS_ALLOWED_HEADERS = "If-None-Match, If-Modified-Since, Last-Event-ID"
CORS_EXPOSED_HEADERS = "ETag, Last-Modified"


async def add_headers(request: web.Request, response: web.StreamResponse) -> None:
    """``on_response_prepare``: nosniff always; CORS headers for an allowed Origin."""
    response.headers["X-Content-Type-Options"] = "nosniff"
    origins = request.app[SETTINGS].cors_origins
    if origins:
        origin = allowed_origin(origins, request.headers.get("Origin"))
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
            "Access-Control-Allow-Methods": ALLOWED_METHODS,
            "Access-Control-Allow-Headers": CORS_ALLOWED_HEADERS,
            "Access-Control-Max-Age": CORS_MAX_AGE,
        },
    )
