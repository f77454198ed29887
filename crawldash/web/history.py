"""The network over time: ``/api/history`` (every shape, JSON or CSV) and ``/api/unique``,
answered from the history and presence kept in the state.

An answer by value, or matching a text, reads every crawl asked for: it is made in steps,
run by ``Searches`` as ``/api/nodes``'s searches are, so that cheap requests are answered
between two steps. Answers are kept until the history changes, within a budget of bytes."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from aiohttp import hdrs, web

from ..live.answers.kept import KeptAnswers, Steps
from ..live.answers.trends import DEFAULT_MAX_BYTES
from ..live.bodies import Representation
from ..live.state import State
from .errors import not_acceptable
from .nodes import Searches
from .queries import history_query, unique_query
from .responses import JSON, negotiate, respond

CSV = "text/csv; charset=utf-8"
# A history answer: its body, Content-Type, and any other headers (a CSV's file name).
Answer = tuple[Representation, str, Mapping[str, str] | None]


class HistoryRoutes:
    """``/api/history`` and ``/api/unique``."""

    def __init__(
        self,
        state: State,
        cache_control: Callable[[], str],
        *,
        max_bytes: int = 2 * DEFAULT_MAX_BYTES,
    ) -> None:
        """The routes of ``state``'s history.

        Args:
            state: what is served.
            cache_control: the Cache-Control of data of the latest crawl.
            max_bytes: the bytes of answers kept. Half go to the answers by value (kept
                by what they answer), half to the bodies kept by query string (mostly the
                same bodies): what is held stays within ``max_bytes`` either way.
        """
        self.state = state
        self.cache_control = cache_control  # Cache-Control for data of the latest crawl
        state.trends.keep_at_most(max_bytes // 2)
        # (query, Accept-Encoding) -> answer: monitors repeat theirs, so a request costs
        # one lookup, not a parse, a negotiation and a slice.
        self._history_answers = KeptAnswers[Answer](max_bytes // 2, _answer_size)
        self.searches = Searches()

    async def history(self, request: web.Request) -> web.Response:
        asked = request.rel_url.raw_query_string, request.headers.get(hdrs.ACCEPT_ENCODING)
        changes = self.state.history.changes
        kept = self._history_answers.get(asked, changes)
        if kept is None:
            kept = await self._made(self._history_answer(asked))
            self._history_answers.put(asked, changes, kept)
        body, content_type, extra = kept
        return respond(
            request,
            body,
            self.cache_control(),
            vary=True,
            content_type=content_type,
            extra=extra,
        )

    async def _made(self, steps: Steps[Answer]) -> Answer:
        """What ``steps`` returns. Its first step is taken at once: a bad query, an answer
        kept or one as cheap as a slice of the points needs no turn behind answers being
        made; the rest waits its turn."""
        try:
            next(steps)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        return await self.searches.run(steps)

    def _history_answer(self, asked: tuple[str, str | None]) -> Steps[Answer]:
        """The answer to a query and an Accept-Encoding, made in steps; a 400 or a 406 is
        raised at the first."""
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
            table = yield from trends.csv_steps(q.by, q.top, q.match, q.limit)
            answer = table, CSV, disposition
        elif q.match is not None:
            answer = (yield from trends.matched_steps(q.match, q.limit)), JSON, None
        elif q.by is None or q.by == "network":
            answer = history.body(q.limit, q.by == "network", coding), JSON, None
        else:
            answer = (yield from trends.counts_steps(q.by, q.top, q.limit, coding)), JSON, None
        return answer

    async def unique(self, request: web.Request) -> web.Response:
        body = self.state.unique.body(unique_query(request.rel_url.raw_query_string))
        return respond(request, body, self.cache_control())


def _answer_size(answer: Answer) -> int:
    return len(answer[0].body)
