"""bitnodes.io's leaderboard routes: ``/api/v1/nodes/leaderboard/`` (the reachable IPv4/IPv6
nodes of the newest crawl by Peer Index, paged, searchable by ``q``) and
``/api/v1/nodes/leaderboard/<address>-<port>/`` (one node's ranking), answered from the
board built once per crawl (``live/answers/leaderboard.py``)."""

from __future__ import annotations

import msgspec
from aiohttp import web

from ...crawl.pix import NOT_MEASURED
from ...live.answers.leaderboard import Board, Leaderboard
from ..errors import ApiError, no_snapshot
from ..links import Links
from ..responses import plain
from .queries import leaderboard_query, node_address

MAX_PAGES_KEPT = 256
PARAMETERS = ("limit", "q")  # what a page is made from, but its number
_NOT_MEASURED = msgspec.json.encode(NOT_MEASURED)


class V1Leaderboard:
    def __init__(self, leaderboard: Leaderboard, *, links: Links | None = None) -> None:
        self.leaderboard = leaderboard
        self.links = links if links is not None else Links(None)
        self._pages: dict[tuple[object, ...], bytes] = {}
        self._pages_for: Board | None = None
        self._found: dict[str | None, list[int]] = {}  # rows matching each q, of that board

    async def board(self) -> Board:
        try:
            board = await self.leaderboard.current()
        except RuntimeError as exc:
            raise ApiError(500, "internal_error", str(exc)) from None
        if board is None:
            raise no_snapshot()
        return board

    async def leaderboard_list(self, request: web.Request) -> web.Response:
        """A page of the board: bitnodes.io's ``{"count", "next", "previous", "results"}``,
        with crawldash's ``timestamp`` (the crawl ranked) and ``not_measured``."""
        q, page = leaderboard_query(request.rel_url.raw_query_string)
        board = await self.board()
        if board is not self._pages_for or len(self._pages) >= MAX_PAGES_KEPT:
            self._pages.clear()
            if board is not self._pages_for:
                self._found.clear()
            self._pages_for = board
        key = (q, page, self.links.base(request))  # pages differ by where they were asked for
        body = self._pages.get(key)
        if body is None:
            found = self._found.get(q)
            if found is None:
                if len(self._found) >= MAX_PAGES_KEPT:
                    self._found.clear()
                found = self._found[q] = board.matching(q)
            count = len(found)
            chosen = b",".join(board.rows[i] for i in found[page.start : page.start + page.limit])
            after = page.start + page.limit < count
            before = page.page > 1 and page.start - page.limit < count

            def link(number: int) -> bytes:
                url = self.links.this(request, PARAMETERS, page=str(number))
                return msgspec.json.encode(url)

            body = b'{"timestamp":%d,"count":%d,"next":%s,"previous":%s,' % (
                board.timestamp,
                count,
                link(page.page + 1) if after else b"null",
                link(page.page - 1) if before else b"null",
            )
            body += b'"not_measured":%s,"results":[%s]}' % (_NOT_MEASURED, chosen)
            self._pages[key] = body
        return plain(body)

    async def ranking(self, request: web.Request) -> web.Response:
        """One node's row: its indexes, PIX and rank, as in the list."""
        address = node_address(request.match_info["node"])
        board = await self.board()
        row = board.row_of(address)
        if row is None:
            raise ApiError(
                404,
                "node_not_ranked",
                f"{address} is not on the leaderboard of the crawl of {board.timestamp}: it "
                "ranks the reachable IPv4 and IPv6 nodes of the newest crawl",
            )
        return plain(row)
