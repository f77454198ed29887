"""The dashboard page: files shipped inside the package, read and tagged once at start-up."""

from __future__ import annotations

import time
from importlib import resources

from aiohttp import web

from .conditional import respond
from .errors import error_response
from .representation import Representation, represent

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
}
# Everything the page loads comes from crawldash itself: it works on an offline network.
CSP = (
    "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)


class Page:
    def __init__(self) -> None:
        root = resources.files("crawldash") / "static"
        started = time.time()
        self.files: dict[str, tuple[Representation, str]] = {}
        for path in (
            "index.html",
            "app.js",
            "style.css",
            "vendor/uPlot.iife.min.js",
            "vendor/uPlot.min.css",
        ):
            suffix = path[path.rindex(".") :]
            body = (root / path).read_bytes()
            self.files[path] = (represent(body, started), CONTENT_TYPES[suffix])

    def response(self, request: web.Request, name: str) -> web.Response:
        found = self.files.get(name)
        if found is None:
            return error_response(404, "not_found", f"no such file: /static/{name}")
        representation, content_type = found
        response = respond(request, representation, "no-cache", content_type=content_type)
        response.headers["Content-Security-Policy"] = CSP
        return response


PAGE = web.AppKey("page", Page)


async def index(request: web.Request) -> web.Response:
    return request.app[PAGE].response(request, "index.html")


async def static(request: web.Request) -> web.Response:
    return request.app[PAGE].response(request, request.match_info["name"])
