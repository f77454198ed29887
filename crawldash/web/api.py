"""The JSON endpoints: methods bound to the state they answer from, each a few lines that
pick pre-encoded bytes and hand them to ``responses``."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

from aiohttp import hdrs, web

from ..live.bodies import Representation
from ..live.state import State
from .errors import no_snapshot, not_acceptable
from .queries import check_query, history_query, unique_query
from .responses import JSON, negotiate, plain, respond

# History bodies kept by (query, Accept-Encoding): monitors repeat a few; a client asking
# for every length in turn makes it start over (each body may be the whole history).
MAX_HISTORY_ANSWERS = 32
CSV = "text/csv; charset=utf-8"
# A history answer: its body, Content-Type, and any other headers (a CSV's file name).
Answer = tuple[Representation, str, Mapping[str, str] | None]


class Api:
    """``/api/snapshot``, ``/api/status``, ``/api/history``, ``/api/unique``, ``/api/check``
    and the schema."""

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
        # (query, Accept-Encoding) -> (the history's change count, answer): monitors repeat
        # theirs, so a request costs one lookup, not a parse, a negotiation and a slice.
        self._history_answers: dict[tuple[str, str | None], tuple[int, Answer]] = {}

    async def snapshot(self, request: web.Request) -> web.Response:
        served = self.state.snapshot
        if served is None:
            raise no_snapshot()
        body = served.representations[coding_for(request)]
        return respond(request, body, self.until_next_crawl(), vary=True)

    async def status(self, request: web.Request) -> web.Response:
        return respond(request, self.state.status_body(), "no-cache")

    async def history(self, request: web.Request) -> web.Response:
        asked = request.rel_url.raw_query_string, request.headers.get(hdrs.ACCEPT_ENCODING)
        kept = self._history_answers.get(asked)
        if kept is None or kept[0] != self.state.history.changes:
            kept = self._history_answer(asked)
        body, content_type, extra = kept[1]
        return respond(
            request,
            body,
            self.until_next_crawl(),
            vary=True,
            content_type=content_type,
            extra=extra,
        )

    def _history_answer(self, asked: tuple[str, str | None]) -> tuple[int, Answer]:
        """The answer to a query and an Accept-Encoding, kept until the history changes."""
        query, accept_encoding = asked
        history = self.state.history
        q = history_query(query, history.capacity)
        coding = negotiate(accept_encoding)
        if coding is None:
            raise not_acceptable()
        trends = self.state.trends
        answer: Answer
        if q.format == "csv":
            name = f"crawldash-history-{q.by or 'reachable'}.csv"
            disposition = {"Content-Disposition": f'attachment; filename="{name}"'}
            answer = trends.csv(q.by, q.top, q.match, q.limit), CSV, disposition
        elif q.match is not None:
            answer = trends.matched(q.match, q.limit), JSON, None
        elif q.by is None or q.by == "network":
            answer = history.body(q.limit, q.by == "network", coding), JSON, None
        else:
            answer = trends.counts(q.by, q.top, q.limit, coding), JSON, None
        if len(self._history_answers) >= MAX_HISTORY_ANSWERS:
            self._history_answers.clear()
        self._history_answers[asked] = history.changes, answer
        return history.changes, answer

    async def unique(self, request: web.Request) -> web.Response:
        body = self.state.unique.body(unique_query(request.rel_url.raw_query_string))
        return respond(request, body, self.until_next_crawl())

    async def check(self, request: web.Request) -> web.Response:
        address = check_query(request.rel_url.raw_query_string)
        served = self.state.snapshot
        if served is None:
            raise no_snapshot()
        return plain(self.state.checks.check(served, address))

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
