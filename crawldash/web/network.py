"""What the network is made of: ``/api/breakdown`` and ``/api/nodes`` (JSON pages, CSV or
a list of addresses), answered from what the loader process prepared for the crawl."""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import hdrs, web

from ..live.loading.catalog import CSV_HEADER
from ..live.loading.prepared import PreparedSnapshot
from ..live.state import State
from .api import coding_for
from .errors import no_snapshot
from .queries import NodesQuery, breakdown_query, nodes_query
from .responses import headers_for, plain, respond

CSV_ROWS_PER_WRITE = 1000
TEXT = "text/plain; charset=utf-8"


class Network:
    """The breakdowns and the filtered node list of the latest crawl."""

    def __init__(self, state: State, cache_control: Callable[[], str]) -> None:
        self.state = state
        self.cache_control = cache_control  # Cache-Control for data of the latest crawl

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
        found = served.catalog.matching(query.wanted, query.sort, query.descending)
        if query.format == "csv":
            return await _csv(request, served, found)
        addresses = served.catalog.addresses
        if query.format == "addresses":
            return plain("".join(f"{addresses[i]}\n" for i in found).encode(), TEXT)
        return plain(_page(request, served, found, query))


def _page(
    request: web.Request, served: PreparedSnapshot, found: list[int], query: NodesQuery
) -> bytes:
    start = (query.page - 1) * query.limit
    addresses, nodes = served.catalog.addresses, served.nodes
    results = b",".join(
        b'{"address":"%s",%s' % (addresses[i].encode(), nodes.at(i)[1:])
        for i in found[start : start + query.limit]
    )
    after = start + query.limit < len(found)
    before = query.page > 1 and start - query.limit < len(found)
    return b'{"timestamp":%d,"count":%d,"next":%s,"previous":%s,"results":[%s]}' % (
        served.timestamp,
        len(found),
        _link(request, query.page + 1) if after else b"null",
        _link(request, query.page - 1) if before else b"null",
        results,
    )


def _link(request: web.Request, page: int) -> bytes:
    return b'"%s"' % str(request.url.update_query(page=str(page))).encode()


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
    await response.write_eof()
    return response
