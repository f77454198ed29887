"""``GET /api/events``: Server-Sent Events for each new snapshot and status change.

A subscriber first receives the current snapshot and status, then each change. Each one
has a bounded queue: a reader too slow to keep up is disconnected (its EventSource
reconnects and is sent the current state again), so no reader makes the server buffer
without bound. Clients that disconnect are dropped at once (the handler is cancelled).
"""

from __future__ import annotations

import asyncio
import contextlib
import time

import msgspec
from aiohttp import web

from .errors import error_response
from .headers import COMMON_HEADERS
from .models import SnapshotEvent
from .state import State

QUEUE_SIZE = 16
_encoder = msgspec.json.Encoder()


class Broadcaster:
    """Turns state changes into SSE frames and hands them to every subscriber."""

    def __init__(self, state: State, *, max_subscribers: int, heartbeat: float) -> None:
        self.state = state
        self.max_subscribers = max_subscribers
        self.heartbeat = heartbeat
        self.subscribers: set[asyncio.Queue[bytes | None]] = set()
        self._last_id = 0
        self._latest: dict[str, bytes] = {}
        state.listeners.append(self.publish)

    def publish(self, event: str) -> None:
        """Called by the state on the event loop: ``snapshot`` or ``status``."""
        self._last_id += 1
        data = self._data(event)
        frame = b"id: %d\nevent: %s\ndata: %s\n\n" % (self._last_id, event.encode(), data)
        self._latest[event] = frame
        for queue in list(self.subscribers):
            try:
                queue.put_nowait(frame)
            except asyncio.QueueFull:  # too slow: end its stream, it will reconnect
                self.subscribers.discard(queue)
                queue.get_nowait()
                queue.put_nowait(None)

    def _data(self, event: str) -> bytes:
        snapshot = self.state.snapshot
        if event == "snapshot" and snapshot is not None:
            body = SnapshotEvent(snapshot.timestamp, snapshot.total_nodes, snapshot.latest_height)
            return _encoder.encode(body)
        return _encoder.encode(self.state.status_at(int(time.time())))

    def current(self) -> list[bytes]:
        return [self._latest[e] for e in ("snapshot", "status") if e in self._latest]


EVENTS = web.AppKey("events", Broadcaster)


async def events(request: web.Request) -> web.StreamResponse:
    broadcaster = request.app[EVENTS]
    if len(broadcaster.subscribers) >= broadcaster.max_subscribers:
        return error_response(
            503,
            "too_many_subscribers",
            f"the event stream already has {broadcaster.max_subscribers} subscribers; retry later",
        )
    queue: asyncio.Queue[bytes | None] = asyncio.Queue(QUEUE_SIZE)
    broadcaster.subscribers.add(queue)
    response = web.StreamResponse(
        headers={
            **COMMON_HEADERS,
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-cache",
        }
    )
    try:
        await response.prepare(request)
        await response.write(b"retry: 2000\n\n" + b"".join(broadcaster.current()))
        while (frame := await _next(queue, broadcaster.heartbeat)) is not None:
            await response.write(frame)
    except ConnectionResetError:
        pass
    finally:
        broadcaster.subscribers.discard(queue)
    return response


async def _next(queue: asyncio.Queue[bytes | None], heartbeat: float) -> bytes | None:
    with contextlib.suppress(TimeoutError):
        return await asyncio.wait_for(queue.get(), heartbeat)
    return b": heartbeat\n\n"
