"""``/api/networks``: the networks one crawldash serves, with their newest crawl and its
freshness; and the answers for ``/n/NAME`` paths of no network."""

from __future__ import annotations

import time
from collections.abc import Sequence
from operator import is_not

import msgspec
from aiohttp import hdrs, web

from ..live.bodies import Representation, represent
from ..live.state import State
from ..models import NetworkRow, NetworksBody
from .errors import ApiError, method_not_allowed, not_found
from .responses import headers_for, respond

_encoder = msgspec.json.Encoder()


class Networks:
    """The list, encoded at most once a second (it holds ages) and again as soon as a
    network serves a new crawl (an answer never names an older crawl than one before it),
    and the ``/n/`` catch-all."""

    def __init__(
        self, networks: Sequence[tuple[str, State]], live_checks: frozenset[str] = frozenset()
    ) -> None:
        self.networks = networks
        self.live_checks = live_checks  # the networks whose live check is on
        self.names = frozenset(name for name, _ in networks)
        # The second it was made in, each network's crawl served then, and the listing.
        self._body: tuple[int, list[object], Representation] | None = None

    async def listing(self, request: web.Request) -> web.Response:
        now = int(time.time())
        served: list[object] = [state.snapshot for _, state in self.networks]
        made = self._body
        if made is None or made[0] != now or any(map(is_not, made[1], served)):
            made = self._body = (now, served, represent(_encoder.encode(self.body(now)), now))
        return respond(request, made[2], "no-cache")

    def body(self, now: int) -> NetworksBody:
        rows = []
        for name, state in self.networks:
            snapshot = state.snapshot
            rows.append(
                NetworkRow(
                    name=name,
                    path=f"n/{name}/",
                    snapshot_timestamp=snapshot.timestamp if snapshot else None,
                    snapshot_age=now - snapshot.timestamp if snapshot else None,
                    nodes=snapshot.total_nodes if snapshot else None,
                    stale=state.is_stale(now),
                    stuck=state.is_stuck(now),
                    live_check=name in self.live_checks,
                )
            )
        return NetworksBody(rows)

    async def unknown(self, request: web.Request) -> web.Response:
        """``/n/NAME`` and below, of a path no route has: a network's page without its
        slash is sent to it (relatively, so that it works behind a proxy at any path);
        a name of no network is 404 ``network_not_found``."""
        if request.method not in ("GET", "HEAD"):
            raise method_not_allowed(request.method)
        name, tail = request.match_info["network"], request.match_info["tail"]
        if name not in self.names:
            served = ", ".join(name for name, _ in self.networks)
            raise ApiError(
                404, "network_not_found", f"no network named {name!r}; the networks: {served}"
            )
        if not tail:
            moved = headers_for(extra={hdrs.CACHE_CONTROL: "public, max-age=3600"})
            raise web.HTTPPermanentRedirect(f"{name}/", headers=moved)
        return await not_found(request)
