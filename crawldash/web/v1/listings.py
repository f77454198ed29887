"""The bitnodes.io API v1 routes that a crawler's own files can answer, in its shapes, so
that a client written for bitnodes.io changes only its base URL (docs/api.md, "bitnodes.io
API v1" lists what is served and what is not)."""

from __future__ import annotations

from collections.abc import Callable, Collection

import msgspec
from aiohttp import hdrs, web

from ...crawl.files import crawl_time
from ...live.answers.checks import node_row
from ...live.snapshot.past_crawls import Archive, ArchiveBusy
from ...live.snapshot.prepared import PreparedSnapshot
from ...live.state import State
from ...models import V1SnapshotList, V1SnapshotRef
from ..errors import ApiError, no_snapshot
from ..latest import coding_for
from ..links import Links
from ..nodes import Searches
from ..responses import plain, respond, takes_identity
from .queries import (
    Page,
    field_query,
    node_address,
    nodes_page_query,
    snapshot_timestamp,
    snapshots_query,
)

IMMUTABLE = "public, max-age=31536000, immutable"  # a crawl never changes once written
MAX_PAGES_KEPT = 256
PAGE_PARAMETERS = ("limit",)  # what a list page is made from, but its number
NODES_PARAMETERS = ("limit", "country", "q")
_encoder = msgspec.json.Encoder()


class V1:
    """``/api/v1/snapshots/``, ``/api/v1/snapshots/<timestamp>/``, ``/api/v1/nodes/`` and
    ``/api/v1/nodes/<address>-<port>/``."""

    def __init__(
        self,
        state: State,
        archive: Archive,
        cache_control: Callable[[], str],
        *,
        links: Links | None = None,
    ) -> None:
        self.state, self.archive = state, archive
        self.cache_control = cache_control  # Cache-Control for data of the latest crawl
        self.links = links if links is not None else Links(None)
        self._pages: dict[tuple[object, ...], bytes] = {}  # list pages, until a change
        self._pages_for: tuple[object, int, str, int] | None = None  # files, history,
        # snapshot, archive
        self._listed: list[int] | None = None  # the crawls listed, until a change
        self.searches = Searches()

    async def snapshots(self, request: web.Request) -> web.Response:
        page = snapshots_query(request.rel_url.raw_query_string)
        base = self.links.base(request)  # pages differ by where they were asked for
        key = ("snapshots", page, base)
        body = self._page(key)
        if body is None:
            counted = self._counted()
            shown = filter(None, map(self._point, counted[page.start : page.start + page.limit]))
            refs = [
                V1SnapshotRef(f"{base}/api/v1/snapshots/{timestamp}/", timestamp, nodes, height)
                for timestamp, nodes, height in shown
            ]
            next_, previous = self._links(request, page, len(counted), PAGE_PARAMETERS)
            body = self._keep(
                key, _encoder.encode(V1SnapshotList(len(counted), next_, previous, refs))
            )
        return plain(body)

    async def snapshot(self, request: web.Request) -> web.Response:
        text = request.match_info["timestamp"]
        timestamp = snapshot_timestamp(text)
        if timestamp is not None and crawl_time(text) is None:  # a crawl has one name
            raise ApiError(
                404,
                "snapshot_not_found",
                f"{text[:40]!r} is not a crawl's timestamp as /api/v1/snapshots/ gives it",
            )
        field = field_query(request.rel_url.raw_query_string)
        served = self.state.snapshot
        latest = served is not None and timestamp in (None, served.timestamp)
        if timestamp is None and served is None:
            raise no_snapshot()
        if latest and field is None:
            accepted = takes_identity(request.headers.get(hdrs.ACCEPT_ENCODING))
            body = await self.state.snapshot_in(coding_for(request), accepted)
            if body is None:
                raise no_snapshot()
            return respond(request, body, self.cache_control(), vary=True)
        wanted = served.timestamp if latest and served is not None else timestamp
        assert wanted is not None
        try:
            archived = await self.archive.get(wanted, self.state.crawl_versions)
        except ArchiveBusy as busy:
            raise ApiError(
                503,
                "loader_busy",
                f"{busy}; ask again in a few seconds",
                headers={"Retry-After": "5"},
            ) from None
        if archived is None:
            raise ApiError(
                404,
                "snapshot_not_found",
                f"no usable crawl file for {wanted} is in the data folder; "
                "/api/v1/snapshots/ lists those that are",
            )
        body = await self.archive.representation(archived, field, coding_for(request))
        return respond(request, body, self.cache_control() if latest else IMMUTABLE, vary=True)

    async def node(self, request: web.Request) -> web.Response:
        address = node_address(request.match_info["node"])
        return plain(self.state.checks.v1_status(self._served(), address))

    async def nodes(self, request: web.Request) -> web.Response:
        wanted, page = nodes_page_query(request.rel_url.raw_query_string)
        served = self._served()
        key = ("nodes", wanted, page, self.links.base(request))
        body = self._page(key)
        if body is None:
            found = await self.searches.run(served.catalog.matching_steps(wanted))
            addresses, nodes = served.catalog.addresses, served.nodes
            results = b",".join(
                b'{"address":"%s","data":%s}' % (addresses[i].encode(), node_row(nodes.at(i)))
                for i in found[page.start : page.start + page.limit]
            )
            links = self._links(request, page, len(found), NODES_PARAMETERS)
            next_, previous = (_json_link(link) for link in links)
            body = b'{"timestamp":%d,"count":%d,"next":%s,"previous":%s,"results":[%s]}' % (
                served.timestamp,
                len(found),
                next_,
                previous,
                results,
            )
            if self.state.snapshot is served:  # not a page of a crawl replaced meanwhile
                self._keep(key, body)
        return plain(body)

    def _links(
        self, request: web.Request, page: Page, count: int, keep: Collection[str]
    ) -> tuple[str | None, str | None]:
        """The URLs of the next and previous pages, None where there is none; of the
        request's parameters only ``keep`` (those the page was made from) stay."""
        after = page.start + page.limit < count
        before = page.page > 1 and page.start - page.limit < count

        def link(number: int) -> str:
            return self.links.this(request, keep, page=str(number))

        return (link(page.page + 1) if after else None, link(page.page - 1) if before else None)

    def _counted(self) -> list[int]:
        """Every crawl listed, newest first: those of the folder the history has counted,
        and those of the archive (counted as they were archived, however old). Made once
        per change (``_page`` forgets it), not per request, by a lookup of each timestamp
        in C: a folder may hold many more crawls than the history keeps, and a first page
        after a new crawl is among the answers a client asks for together. Only a page's
        crawls are read (``_point``)."""
        if self._listed is None:
            timestamps = self.archive.listed(self.state.crawl_files)
            listed = self.state.history.held(timestamps)
            if self.archive.kept is not None and len(listed) < len(timestamps):
                listed = [t for t in timestamps if self._point(t) is not None]
            self._listed = listed
        return self._listed

    def _point(self, timestamp: int) -> tuple[int, int, int | None] | None:
        """A crawl's timestamp, nodes and height, from the history or else the archive;
        None where neither counted it."""
        entry = self.state.history.get(timestamp)
        if entry is not None:
            return timestamp, entry.reachable, entry.height
        counted = self.archive.counted(timestamp)
        return None if counted is None else (timestamp, *counted)

    def _served(self) -> PreparedSnapshot:
        served = self.state.snapshot
        if served is None:
            raise no_snapshot()
        return served

    def _page(self, key: tuple[object, ...]) -> bytes | None:
        """A list page made before, unless the files, the history or the crawl changed."""
        served = self.state.snapshot
        made_for = (
            self.state.crawl_files,
            self.state.history.changes,
            served.representations["identity"].etag if served is not None else "",
            self.archive.kept.changes if self.archive.kept is not None else 0,
        )
        previous = self._pages_for
        if previous is None or previous[0] is not made_for[0] or previous[1:] != made_for[1:]:
            self._pages.clear()
            self._pages_for = made_for
            self._listed = None
        return self._pages.get(key)

    def _keep(self, key: tuple[object, ...], body: bytes) -> bytes:
        if len(self._pages) >= MAX_PAGES_KEPT:
            self._pages.clear()
        self._pages[key] = body
        return body


def _json_link(link: str | None) -> bytes:
    return b"null" if link is None else _encoder.encode(link)
