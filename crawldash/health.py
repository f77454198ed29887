"""Liveness and readiness, for process supervisors and load balancers."""

from __future__ import annotations

import time

import msgspec
from aiohttp import web

from .errors import error_response, no_snapshot
from .headers import COMMON_HEADERS
from .typedefs import STATE, WATCHER

_OK = msgspec.json.encode({"status": "ok"})
_READY = msgspec.json.encode({"status": "ready"})


async def healthz(request: web.Request) -> web.Response:
    """200 while the process and its watcher run; 503 if the watcher is down."""
    watcher = request.app.get(WATCHER)
    if watcher is None or not watcher.alive:
        return error_response(
            503, "watcher_down", "the file watcher is not running; see the log for why"
        )
    return web.Response(body=_OK, content_type="application/json", headers=COMMON_HEADERS)


async def readyz(request: web.Request) -> web.Response:
    """200 when a fresh snapshot is served and the crawler is not stuck; else 503 and why."""
    state, now = request.app[STATE], time.time()
    if state.snapshot is None:
        return no_snapshot()
    if state.is_stale(now):
        age = int(now - state.snapshot.timestamp)
        return error_response(
            503,
            "stale",
            f"the latest snapshot is {age} s old, over the {state.effective_stale_after()} s "
            "stale threshold",
        )
    if state.is_stuck(now):
        reported = state.status.state if state.status else "unknown"
        return error_response(
            503,
            "crawler_stuck",
            f"the crawler has reported {reported!r} without running, or status.json has not "
            f"been updated, for over {state.stuck_after} s",
        )
    return web.Response(body=_READY, content_type="application/json", headers=COMMON_HEADERS)
