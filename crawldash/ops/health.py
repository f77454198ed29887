"""Liveness and readiness, for process supervisors and load balancers."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Protocol

import msgspec
from aiohttp import web

from ..live.state import State
from ..web.errors import ApiError, no_snapshot
from ..web.responses import plain

_encoder = msgspec.json.Encoder()
_OK = _encoder.encode({"status": "ok"})
_READY = msgspec.json.encode({"status": "ready"})


class Liveness(Protocol):
    """What health and metrics read of the file watcher."""

    @property
    def alive(self) -> bool: ...

    @property
    def watching(self) -> bool: ...

    @property
    def restarts(self) -> int: ...


class IndexHealth(Protocol):
    """What health and metrics read of an index's saving (``IndexSaver``)."""

    @property
    def name(self) -> str: ...  # which index: history, presence

    @property
    def error(self) -> str | None: ...

    @property
    def failures(self) -> int: ...

    @property
    def saved_at(self) -> float | None: ...


class Health:
    """``/healthz`` and ``/readyz``, bound to the state, the watcher and the savers of
    every index."""

    def __init__(self, state: State, watcher: Liveness, indexes: Sequence[IndexHealth]) -> None:
        self.state = state
        self.watcher = watcher
        self.indexes = indexes

    async def healthz(self, request: web.Request) -> web.Response:
        """200 while the process and its watcher run, with what needs an operator's eye;
        503 if the watcher is down."""
        if not self.watcher.alive:
            raise ApiError(
                503, "watcher_down", "the file watcher is not running; see the log for why"
            )
        warnings = self.warnings()
        if not warnings:
            return plain(_OK)
        degraded = self.state.loader_trouble is not None
        status = "degraded" if degraded else "ok"
        return plain(_encoder.encode({"status": status, "warnings": warnings}))

    def warnings(self) -> list[str]:
        """Trouble that does not stop serving: a missing data folder, an index whose
        latest save failed (until one succeeds), loads that fail (until one succeeds)."""
        found = []
        if self.state.data_dir_problem is not None:
            found.append(self.state.data_dir_problem)
        if self.state.loader_trouble is not None:
            found.append(f"new crawls cannot be loaded: {self.state.loader_trouble}")
        for index in self.indexes:
            if index.error is not None:
                found.append(f"the {index.name} index cannot be written: {index.error}")
        return found

    async def readyz(self, request: web.Request) -> web.Response:
        """200 when a fresh snapshot is served and the crawler is not stuck; else 503."""
        state, now = self.state, time.time()
        if state.data_dir_problem is not None:
            raise ApiError(503, "no_data_dir", state.data_dir_problem)
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
        reason = state.stuck_reason(now)
        if reason == "no_update":
            raise ApiError(
                503,
                "crawler_stuck",
                f"status.json has not been updated for over {state.stuck_after} s: the "
                "crawler, or the bridge that writes its status, is not running",
            )
        if reason == "state" and state.status is not None:
            raise ApiError(
                503,
                "crawler_stuck",
                f"the crawler has reported {state.status.state!r} for over "
                f"{state.stuck_after} s without running",
            )
        return plain(_READY)
