"""Liveness and readiness, for process supervisors and load balancers."""

from __future__ import annotations

import time
from typing import Protocol

import msgspec
from aiohttp import web

from ..live.state import State
from ..web.errors import ApiError, no_snapshot
from ..web.responses import plain

_OK = msgspec.json.encode({"status": "ok"})
_READY = msgspec.json.encode({"status": "ready"})


class Liveness(Protocol):
    """What health and metrics read of the file watcher."""

    @property
    def alive(self) -> bool: ...

    @property
    def restarts(self) -> int: ...


class Health:
    """``/healthz`` and ``/readyz``, bound to the state and the watcher's liveness."""

    def __init__(self, state: State, watcher: Liveness) -> None:
        self.state = state
        self.watcher = watcher

    async def healthz(self, request: web.Request) -> web.Response:
        """200 while the process and its watcher run; 503 if the watcher is down."""
        if not self.watcher.alive:
            raise ApiError(
                503, "watcher_down", "the file watcher is not running; see the log for why"
            )
        return plain(_OK)

    async def readyz(self, request: web.Request) -> web.Response:
        """200 when a fresh snapshot is served and the crawler is not stuck; else 503."""
        state, now = self.state, time.time()
        if state.snapshot is None:
            raise no_snapshot()
        if state.is_stale(now):
            age = int(now - state.snapshot.timestamp)
            raise ApiError(
                503,
                "stale",
                f"the latest snapshot is {age} s old, over the {state.effective_stale_after()} s "
                "stale threshold",
            )
        if state.is_stuck(now):
            reported = state.status.state if state.status else "unknown"
            raise ApiError(
                503,
                "crawler_stuck",
                f"the crawler has reported {reported!r} without running, or status.json has "
                f"not been updated, for over {state.stuck_after} s",
            )
        return plain(_READY)
