"""The bitnodes.io API v1 routes of block propagation and node latency (``/api/v1/inv/``,
``/api/v1/inv/<hash>/``, ``/api/v1/nodes/<address>-<port>/latency/``), answered from what
the bitnodes bridge keeps; and the bitnodes.io routes crawldash does not serve, answered
``404 not_served`` so that a client learns that, not that its address was wrong."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from ...live.answers.propagation import Propagation
from ..errors import ApiError
from ..links import Links
from ..responses import plain
from .queries import inv_hash, node_address, snapshots_query

MAX_PAGES_KEPT = 256
NOT_SERVED = {  # path -> bitnodes.io's route, as its documentation names it
    "/api/v1/addresses/": "/api/v1/addresses/ (list addresses: every address ever seen)",
}


class V1Propagation:
    def __init__(self, propagation: Propagation, *, links: Links | None = None) -> None:
        self.propagation = propagation
        self.links = links if links is not None else Links(None)
        self._pages: dict[tuple[object, ...], bytes] = {}
        self._pages_for = -1  # the propagation's changes they were built from

    async def inv_list(self, request: web.Request) -> web.Response:
        """The blocks kept, newest first, paged as ``/api/v1/snapshots/``; rows are
        encoded once per change of the kept blocks, pages once per page asked for."""
        page = snapshots_query(request.rel_url.raw_query_string)
        if self._pages_for != self.propagation.changes or len(self._pages) >= MAX_PAGES_KEPT:
            self._pages.clear()
            self._pages_for = self.propagation.changes
        key = (page, self.links.base(request))  # pages differ by where they were asked for
        body = self._pages.get(key)
        if body is None:
            rows = self.propagation.blocks.rows
            count = len(rows)
            chosen = b",".join(rows[page.start : page.start + page.limit])
            after = page.start + page.limit < count
            before = page.page > 1 and page.start - page.limit < count

            def link(number: int) -> bytes:
                return b'"%s"' % self.links.this(request, ("limit",), page=str(number)).encode()

            next_ = link(page.page + 1) if after else b"null"
            previous = link(page.page - 1) if before else b"null"
            body = self._pages[key] = b'{"count":%d,"next":%s,"previous":%s,"results":[%s]}' % (
                count,
                next_,
                previous,
                chosen,
            )
        return plain(body)

    async def inv(self, request: web.Request) -> web.Response:
        wanted = inv_hash(request.match_info["inv_hash"])
        body = self.propagation.blocks.bodies.get(wanted)
        if body is None:
            raise ApiError(
                404,
                "inv_not_found",
                f"no propagation of block {wanted} is kept; /api/v1/inv/ lists those that are",
            )
        return plain(body)

    async def latency(self, request: web.Request) -> web.Response:
        address = node_address(request.match_info["node"])
        body = self.propagation.latency_of(address)
        if body is None:
            raise ApiError(
                404,
                "node_not_found",
                f"no latency of {address} is kept: the bitnodes bridge has seen no round-trip "
                "time of it, nor bitnodes' ping.py holding it, in the last 30 days",
            )
        return plain(body)


def not_served(route: str) -> Callable[[web.Request], Awaitable[web.Response]]:
    """The handler of one bitnodes.io route that crawldash does not serve."""

    async def handler(request: web.Request) -> web.Response:
        raise ApiError(
            404,
            "not_served",
            f"bitnodes.io's {route} is not served by crawldash: a crawler's files and Redis "
            "cannot answer it; see docs/api.md",
        )

    return handler
