"""The network over time: ``/api/history`` (every shape, JSON or CSV) and ``/api/unique``,
answered from the history and presence kept in the state."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from aiohttp import hdrs, web

from ..live.bodies import Representation
from ..live.state import State
from .errors import not_acceptable
from .queries import history_query, unique_query
from .responses import JSON, negotiate, respond

# History bodies kept by (query, Accept-Encoding): monitors repeat a few; a client asking
# for every length in turn makes it start over (each body may be the whole history).
MAX_HISTORY_ANSWERS = 32
CSV = "text/csv; charset=utf-8"
# A history answer: its body, Content-Type, and any other headers (a CSV's file name).
Answer = tuple[Representation, str, Mapping[str, str] | None]


class HistoryRoutes:
    """``/api/history`` and ``/api/unique``."""

    def __init__(self, state: State, cache_control: Callable[[], str]) -> None:
        self.state = state
        self.cache_control = cache_control  # Cache-Control for data of the latest crawl
        # (query, Accept-Encoding) -> (the history's change count, answer): monitors repeat
        # theirs, so a request costs one lookup, not a parse, a negotiation and a slice.
        self._history_answers: dict[tuple[str, str | None], tuple[int, Answer]] = {}

    async def history(self, request: web.Request) -> web.Response:
        asked = request.rel_url.raw_query_string, request.headers.get(hdrs.ACCEPT_ENCODING)
        kept = self._history_answers.get(asked)
        if kept is None or kept[0] != self.state.history.changes:
            kept = self._history_answer(asked)
        body, content_type, extra = kept[1]
        return respond(
            request,
            body,
            self.cache_control(),
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
        return respond(request, body, self.cache_control())
