"""The latest crawl and the crawler's state: ``/api/snapshot``, ``/api/status`` and the
OpenAPI document, each a few lines that pick pre-encoded bytes and hand them to
``responses``."""

from __future__ import annotations

from functools import lru_cache

from aiohttp import hdrs, web

from ..live.bodies import Representation
from ..live.state import State
from .errors import no_snapshot, not_acceptable
from .responses import negotiate, respond, takes_identity


class Latest:
    """``/api/snapshot``, ``/api/status`` and ``/api/openapi.json``; ``until_next_crawl`` is
    the Cache-Control of every answer about the latest crawl."""

    def __init__(
        self,
        state: State,
        openapi: tuple[Representation, Representation],
        cache_max_age: int | None,
    ) -> None:
        self.state = state
        # The schema as served at the root and under the network's /n/NAME (its servers)
        self.openapi_at_root, self.openapi_under_prefix = openapi
        self.cache_max_age = cache_max_age  # None: until the next crawl is due

    async def snapshot(self, request: web.Request) -> web.Response:
        accepted = request.headers.get(hdrs.ACCEPT_ENCODING)
        body = await self.state.snapshot_in(coding_for(request), takes_identity(accepted))
        if body is None:
            raise no_snapshot()
        return respond(request, body, self.until_next_crawl(), vary=True, from_file=True)

    async def status(self, request: web.Request) -> web.Response:
        return respond(request, self.state.status_body(), "no-cache")

    async def openapi(self, request: web.Request) -> web.Response:
        prefixed = request.path.startswith("/n/")
        body = self.openapi_under_prefix if prefixed else self.openapi_at_root
        return respond(request, body, "public, max-age=3600")

    def until_next_crawl(self) -> str:
        """Cache-Control for data that changes with the next crawl."""
        max_age = self.cache_max_age
        if max_age is None:
            max_age = self.state.seconds_to_next_crawl()
        return _cache_control(max_age)


@lru_cache(maxsize=1024)  # max-age is at most the crawl interval: a few hundred values
def _cache_control(max_age: int | None) -> str:
    return "no-cache" if max_age is None else f"public, max-age={max_age}"


def coding_for(request: web.Request) -> str:
    """The content coding to answer in; 406 if the client refuses all three."""
    coding = negotiate(request.headers.get(hdrs.ACCEPT_ENCODING))
    if coding is None:
        raise not_acceptable()
    return coding
