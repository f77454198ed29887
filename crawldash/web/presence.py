"""Every node's history: ``/api/check`` (is an address in the latest crawl, and in how many
of those held), ``/api/presence`` (runs of crawls with and without an address) and
``/api/changes`` (who joined and left), and ``/api/profile`` (what the crawls said of a
node, and when that changed), answered from what the state keeps."""

from __future__ import annotations

from aiohttp import web

from ..live.state import State
from .errors import ApiError, no_snapshot
from .queries import changes_query, check_query, presence_query
from .responses import plain


class Presences:
    """``/api/check``, ``/api/presence``, ``/api/changes`` and ``/api/profile``."""

    def __init__(self, state: State) -> None:
        self.state = state

    async def check(self, request: web.Request) -> web.Response:
        address = check_query(request.rel_url.raw_query_string)
        served = self.state.snapshot
        if served is None:
            raise no_snapshot()
        return plain(self.state.checks.check(served, address))

    async def presence(self, request: web.Request) -> web.Response:
        query = request.rel_url.raw_query_string
        address, limit = presence_query(query, self.state.history.capacity)
        return plain(self.state.checks.runs(address, limit))

    async def profile(self, request: web.Request) -> web.Response:
        address = check_query(request.rel_url.raw_query_string)
        await self.state.profiles.settled()  # a crawl's changes are found once it is served
        return plain(self.state.profiles.body(address))

    async def changes(self, request: web.Request) -> web.Response:
        since = changes_query(request.rel_url.raw_query_string)
        served = self.state.snapshot
        if served is None:
            raise no_snapshot()
        body = self.state.changes.body(served.timestamp, since)
        if body is None:
            oldest = self.state.presence.timestamps()[:1]
            raise ApiError(
                400,
                "invalid_since",
                f"no crawl at or before {since} is held"
                + (f"; the oldest held is {oldest[0]}" if oldest else ""),
            )
        return plain(body)
