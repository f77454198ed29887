"""``/api/map``: the latest crawl's nodes grouped by place, answered from what the loader
process prepared for the crawl (``live/snapshot/map.py``)."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from aiohttp import hdrs, web

from ..live.state import State
from .errors import ApiError, no_snapshot
from .latest import coding_for
from .queries import MAX_MATCH, one_value, parse_query
from .responses import respond, takes_identity


class MapRoutes:
    """The map of the latest crawl; ``cache_control`` is that of its other answers."""

    def __init__(self, state: State, cache_control: Callable[[], str]) -> None:
        self.state = state
        self.cache_control = cache_control

    async def map(self, request: web.Request) -> web.Response:
        match = map_query(request.rel_url.raw_query_string)
        served = self.state.snapshot
        if served is None:
            raise no_snapshot()
        accepted = takes_identity(request.headers.get(hdrs.ACCEPT_ENCODING))
        body = served.map.body(match, coding_for(request), accepted)
        return respond(request, body, self.cache_control(), vary=True)


@lru_cache(maxsize=1024)
def map_query(raw_query: str) -> str | None:
    """``match`` of ``/api/map``: a text the user agents counted hold, or None."""
    try:
        match = one_value(parse_query(raw_query), "match")
    except ApiError:
        match = ""  # given twice: refused below, with the rule
    if match is not None and not 1 <= len(match) <= MAX_MATCH:
        raise ApiError(
            400, "invalid_match", f"match must be given once, as 1 to {MAX_MATCH} characters"
        )
    return match
