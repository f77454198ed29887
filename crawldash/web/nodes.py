"""What the network is made of: ``/api/breakdown`` and ``/api/nodes`` (JSON pages, CSV or
a list of addresses), answered from what the loader process prepared for the crawl.

A search reads every node of the crawl, and a page can hold a thousand: both are made in
steps (generators that yield between two), run by ``Searches``."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator, Sequence
from typing import TypeVar

from aiohttp import hdrs, web

from ..live.snapshot.catalog import CSV_HEADER, STEP, Steps
from ..live.snapshot.prepared import PreparedSnapshot
from ..live.state import State
from .errors import no_snapshot
from .latest import coding_for
from .links import Links
from .queries import NodesQuery, breakdown_query, nodes_query
from .responses import headers_for, plain, respond

CSV_ROWS_PER_WRITE = 1000
ROWS_PER_STEP = 500  # JSON rows of a page made in one step
TEXT = "text/plain; charset=utf-8"
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

    def _served(self) -> PreparedSnapshot:
        served = self.state.snapshot
        if served is None:
            raise no_snapshot()
        return served

    async def breakdown(self, request: web.Request) -> web.Response:
        by, limit = breakdown_query(request.rel_url.raw_query_string)
        body = self._served().breakdowns[by].body(limit, coding_for(request))
        return respond(request, body, self.cache_control(), vary=True)

    async def nodes(self, request: web.Request) -> web.StreamResponse:
        query = nodes_query(request.rel_url.raw_query_string)
        served = self._served()
        found = served.catalog.matching_steps(query.wanted, query.sort, query.descending)
        if query.format == "csv":
            return await _csv(request, served, await self.searches.run(found))
        if query.format == "addresses":
            return plain(await self.searches.run(_addresses(served, found)), TEXT)
        page = _page(request, self.links, served, found, query)
        return plain(await self.searches.run(page))


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


def _addresses(served: PreparedSnapshot, matching: Steps) -> Generator[None, None, bytes]:
    found = yield from matching
    addresses, line = served.catalog.addresses, "{}\n".format
    return (yield from _joined(lambda i: line(addresses[i]).encode(), found, STEP))


def _page(
    request: web.Request,
    links: Links,
    served: PreparedSnapshot,
    matching: Steps,
    query: NodesQuery,
) -> Generator[None, None, bytes]:
    found = yield from matching
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


async def _csv(
    request: web.Request, served: PreparedSnapshot, found: list[int]
) -> web.StreamResponse:
    """Every match as CSV, written in steps from each node's prepared line."""
    name = f"crawldash-nodes-{served.timestamp}.csv"
    extra: dict[str, str] = {hdrs.CONTENT_DISPOSITION: f'attachment; filename="{name}"'}
    headers = headers_for("text/csv; charset=utf-8", extra)
    if request.method == "HEAD":
        return web.Response(headers=headers)
    response = web.StreamResponse(headers=headers)
    await response.prepare(request)
    record = served.catalog.csv_record
    await response.write(CSV_HEADER)
    for start in range(0, len(found), CSV_ROWS_PER_WRITE):
        await response.write(b"".join(map(record, found[start : start + CSV_ROWS_PER_WRITE])))
        await asyncio.sleep(0)  # a write returns at once while the socket takes it all
    await response.write_eof()
    return response
