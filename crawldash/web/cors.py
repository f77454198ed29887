"""CORS, only when the operator names origins: headers on every response, and preflights."""

from __future__ import annotations

from aiohttp import hdrs, web

from .errors import ALLOWED_METHODS, method_not_allowed
from .responses import headers_for

CORS_MAX_AGE = "86400"
# Request headers a cross-origin GET may send beyond the simple ones: for revalidation.
CORS_ALLOWED_HEADERS = "If-None-Match, If-Modified-Since, Last-Event-ID"
CORS_EXPOSED_HEADERS = "ETag, Last-Modified"


class Cors:
    """The origins allowed to read from a browser (``*`` for any)."""

    def __init__(self, origins: tuple[str, ...]) -> None:
        self.origins = origins

    def allowed(self, origin: str | None) -> str | None:
        """The ``Access-Control-Allow-Origin`` value for a request's Origin, or None."""
        if origin is None:
            return None
        if "*" in self.origins:
            return "*"
        return origin if origin in self.origins else None

    async def add_headers(self, request: web.Request, response: web.StreamResponse) -> None:
        """``on_response_prepare``: every answer varies by Origin, so that a shared cache
        never hands one origin's permission to another."""
        response.headers.add(hdrs.VARY, hdrs.ORIGIN)
        origin = self.allowed(request.headers.get(hdrs.ORIGIN))
        if origin is not None:
            response.headers[hdrs.ACCESS_CONTROL_ALLOW_ORIGIN] = origin
            response.headers[hdrs.ACCESS_CONTROL_EXPOSE_HEADERS] = CORS_EXPOSED_HEADERS

    async def preflight(self, request: web.Request) -> web.Response:
        """``OPTIONS``: a preflight for GET from an allowed origin; otherwise 405."""
        wanted = request.headers.get(hdrs.ACCESS_CONTROL_REQUEST_METHOD, "")
        if self.allowed(request.headers.get(hdrs.ORIGIN)) is None or wanted not in ("GET", "HEAD"):
            raise method_not_allowed(request.method)
        headers: dict[str, str] = {
            hdrs.ACCESS_CONTROL_ALLOW_METHODS: ALLOWED_METHODS,
            hdrs.ACCESS_CONTROL_ALLOW_HEADERS: CORS_ALLOWED_HEADERS,
            hdrs.ACCESS_CONTROL_MAX_AGE: CORS_MAX_AGE,
        }
        return web.Response(status=204, headers=headers_for(extra=headers))
