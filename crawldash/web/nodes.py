"""What the network is made of: ``/api/breakdown`` and ``/api/nodes`` (JSON pages, CSV or
a list of addresses), answered from what the loader process prepared for the crawl.

A search reads every node of the crawl, and a page can hold a thousand: both are made in
steps (generators that yield between two), run by ``Searches``; what they made is kept
for the crawl (``node_answers``), so that a query asked again costs a lookup."""

from __future__ import annotations

import asyncio
from array import array
from collections.abc import Callable, Generator, Sequence
from typing import TypeVar

from aiohttp import web

from ..live.bodies import BodyFile
from ..live.snapshot.catalog import STEP
from ..live.snapshot.csv_records import CSV_HEADER
from ..live.snapshot.prepared import PreparedSnapshot
from ..live.state import State
from .errors import no_snapshot
from .latest import coding_for
from .links import Links
from .node_answers import NodeAnswers
from .queries import NodesQuery, breakdown_query, nodes_query
from .responses import JSON, plain, respond

CSV_ROWS_PER_STEP = 1000
ROWS_PER_STEP = 500  # JSON rows of a page made in one step
TEXT = "text/plain; charset=utf-8"
CSV = "text/csv; charset=utf-8"
T = TypeVar("T")


class Searches:
    """Runs the steps of searches and of their pages, one request's at a time, with the
    event loop free between two steps: a cheap request is answered after one step of one
    search, not after whole searches, nor after a step of each of however many are asked
    for at once. Searches wait their turn in order."""

    def __init__(self) -> None:
        self._turn = asyncio.Semaphore(1)

    async def run(self, steps: Generator[None, None, T]) -> T:
        """What ``steps`` returns."""
        async with self._turn:
            while True:
                try:
                    next(steps)
                except StopIteration as done:
                    return done.value  # type: ignore[no-any-return]
                await asyncio.sleep(0)


class NodeRoutes:
    """The breakdowns and the filtered node list of the latest crawl."""

    def __init__(
        self, state: State, cache_control: Callable[[], str], *, links: Links | None = None
    ) -> None:
        self.state = state
        self.links = links if links is not None else Links(None)
        self.cache_control = cache_control  # Cache-Control for data of the latest crawl
        self.searches = Searches()
        self.kept = NodeAnswers()

    def _served(self) -> PreparedSnapshot:
        served = self.state.snapshot
        if served is None:
            raise no_snapshot()
        return served

    async def breakdown(self, request: web.Request) -> web.Response:
        by, limit = breakdown_query(request.rel_url.raw_query_string)
        body = self._served().breakdowns[by].body(limit, coding_for(request))
        return respond(request, body, self.cache_control(), vary=True)

    async def nodes(self, request: web.Request) -> web.Response:
        raw = request.rel_url.raw_query_string
        query = nodes_query(raw)
        served = self._served()
        while query.format == "csv" and not served.catalog.records.made:
            await self.state.until_whole(served)  # a new crawl's records follow it
            served = self._served()
        ask = (raw, self.links.base(request))  # links differ by where they were asked for
        kept = self.kept.get(served, ask)
        answer: bytes | BodyFile
        if isinstance(kept, BodyFile):
            answer = kept
        else:
            found = await self._found(served, query)
            if query.format == "csv":
                made = _csv(served, found)
            elif query.format == "addresses":
                made = _addresses(served, found)
            else:
                made = _page(request, self.links, served, found, query)
            made_now = BodyFile(await self.searches.run(made))
            # Kept, it is sent from a memory file; not kept, as bytes (a file costs a copy)
            answer = made_now if self.kept.put(served, ask, made_now) else made_now.body
        if query.format == "csv":
            return plain(answer, CSV, filename=f"crawldash-nodes-{served.timestamp}.csv")
        return plain(answer, TEXT if query.format == "addresses" else JSON)

    async def _found(self, served: PreparedSnapshot, query: NodesQuery) -> Sequence[int]:
        """Positions of the nodes the query's filters match, in its order: kept per filter
        and order, which every page and format of them share."""
        ask = (query.wanted, query.sort, query.descending)
        found = self.kept.get(served, ask)
        if isinstance(found, memoryview):
            return found
        steps = served.catalog.matching_steps(query.wanted, query.sort, query.descending)
        positions = memoryview(array("I", await self.searches.run(steps)))
        self.kept.put(served, ask, positions)
        return positions


def _joined(
    render: Callable[[int], bytes], found: Sequence[int], per_step: int, separator: bytes = b""
) -> Generator[None, None, bytes]:
    """``separator.join(map(render, found))``, rendered ``per_step`` at a time."""
    parts = []
    for start in range(0, len(found), per_step):
        if start:
            yield
        parts.append(separator.join(map(render, found[start : start + per_step])))
    return separator.join(parts)


def _addresses(served: PreparedSnapshot, found: Sequence[int]) -> Generator[None, None, bytes]:
    addresses, line = served.catalog.addresses, "{}\n".format
    return (yield from _joined(lambda i: line(addresses[i]).encode(), found, STEP))


def _page(
    request: web.Request,
    links: Links,
    served: PreparedSnapshot,
    found: Sequence[int],
    query: NodesQuery,
) -> Generator[None, None, bytes]:
    start = (query.page - 1) * query.limit
    addresses, nodes = served.catalog.addresses, served.nodes
    results = yield from _joined(
        lambda i: b'{"address":"%s",%s' % (addresses[i].encode(), nodes.at(i)[1:]),
        found[start : start + query.limit],
        ROWS_PER_STEP,
        b",",
    )
    after = start + query.limit < len(found)
    before = query.page > 1 and start - query.limit < len(found)
    return b'{"timestamp":%d,"count":%d,"next":%s,"previous":%s,"results":[%s]}' % (
        served.timestamp,
        len(found),
        _link(links, request, query.page + 1) if after else b"null",
        _link(links, request, query.page - 1) if before else b"null",
        results,
    )


def _link(links: Links, request: web.Request, page: int) -> bytes:
    return b'"%s"' % links.this(request, page=str(page)).encode()


def _csv(served: PreparedSnapshot, found: Sequence[int]) -> Generator[None, None, bytes]:
    """Every match as CSV, from each node's prepared record."""
    rows = yield from _joined(served.catalog.csv_record, found, CSV_ROWS_PER_STEP)
    return CSV_HEADER + rows
