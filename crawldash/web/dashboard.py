"""The dashboard page: files shipped inside the package, read and tagged once at start-up."""

from __future__ import annotations

import time
from importlib import resources

from aiohttp import web

from ..live.answers.propagation import Propagation
from ..live.bodies import Representation, represent
from .errors import ApiError
from .responses import respond
from .v1.queries import node_address

FILES = (
    "index.html",
    "app.js",
    "trends.js",
    "presence.js",
    "networks.js",
    "main.js",
    "style.css",
    "node.html",
    "node.js",
    "vendor/uPlot.iife.min.js",
    "vendor/uPlot.min.css",
    "map.js",
    "propagation.js",
    "checknow.js",
    "json.js",
    "leaderboard.js",
    "vendor/countries-110m.json",
    "vendor/iso-3166-codes.json",
)
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
}
# Everything the page loads comes from crawldash itself: it works on an offline network.
CSP = {
    "Content-Security-Policy": "default-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
}


class Dashboard:
    """``/`` and ``/static/{name}``, from the package's ``static`` folder."""

    def __init__(self) -> None:
        root = resources.files("crawldash") / "static"
        started = time.time()
        self.files: dict[str, tuple[Representation, str]] = {}
        for path in FILES:
            body = (root / path).read_bytes()
            self.files[path] = (represent(body, started), CONTENT_TYPES[path[path.rindex(".") :]])

    async def index(self, request: web.Request) -> web.Response:
        return self._file(request, "index.html")

    async def static(self, request: web.Request) -> web.Response:
        return self._file(request, request.match_info["name"])

    def _file(self, request: web.Request, name: str) -> web.Response:
        found = self.files.get(name)
        if found is None:
            raise ApiError(404, "not_found", f"no such file: /static/{name}")
        representation, content_type = found
        return respond(request, representation, "no-cache", content_type=content_type, extra=CSP)


# node.html's marker of a node whose latency the bridge keeps. A 404 from fetch is logged as
# an error in the browser's console, so the page asks for the latency only where marked.
NO_LATENCY = b'data-latency="none"'
LATENCY_KEPT = b'data-latency="kept"'


class NodePage:
    """``/nodes/{address}-{port}/``: the page of one node (node.html), marked with whether
    its latency is kept; the node is checked as ``/api/v1/nodes/{node}/`` checks it. And
    ``/nodes/leaderboard/`` (leaderboard.html)."""

    def __init__(self, propagation: Propagation) -> None:
        self.propagation = propagation
        static = resources.files("crawldash") / "static"
        body = (static / "node.html").read_bytes()
        started = time.time()
        self.pages = {
            False: represent(body, started),
            True: represent(body.replace(NO_LATENCY, LATENCY_KEPT), started),
        }
        self.leaderboard = represent((static / "leaderboard.html").read_bytes(), started)

    async def node(self, request: web.Request) -> web.Response:
        """A node's page; ``/nodes/leaderboard/`` is the leaderboard's, where bitnodes.io
        had it (no node is named so: a node is ``<address>-<port>``)."""
        if request.match_info["node"] == "leaderboard":
            page = self.leaderboard
        else:
            address = node_address(request.match_info["node"])  # 400 invalid_address
            page = self.pages[self.propagation.latency_of(address) is not None]
        return respond(request, page, "no-cache", content_type=CONTENT_TYPES[".html"], extra=CSP)
