"""``GET /api/events``: Server-Sent Events for each new snapshot and status change.

A subscriber first receives the current snapshot and status, then each change. Each one
has a bounded queue: a reader too slow to keep up is disconnected (its EventSource
reconnects and is sent the current state again), so no reader makes the server buffer
without bound. Clients that disconnect are dropped at once (the handler is cancelled).
Every kind of event, and its data, is described in ``schema/events.py``: only those kinds
are sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

import msgspec
from aiohttp import web

from ..live.state import State
from ..models import SnapshotEvent
from .errors import ApiError
from .responses import headers_for
from .schema.events import EVENT_KINDS

QUEUE_SIZE = 16
EVENT_STREAM = "text/event-stream"
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
        data = self._data(event)
        if data is None:  # nothing the stream describes: no event
            return
        self._last_id += 1
        frame = b"id: %d\nevent: %s\ndata: %s\n\n" % (self._last_id, event.encode(), data)
        self._latest[event] = frame
        for queue in list(self.subscribers):
            try:
                queue.put_nowait(frame)
            except asyncio.QueueFull:  # too slow: end its stream, it will reconnect
                self.subscribers.discard(queue)
                queue.get_nowait()
                queue.put_nowait(None)

    def _data(self, event: str) -> bytes | None:
        """The event's data, of the type EVENT_KINDS names for it; None for a kind it does
        not name, or a snapshot event with no snapshot."""
        if event == "status":
            return _encoder.encode(self.state.status_at(int(time.time())))
        snapshot = self.state.snapshot
        if event == "snapshot" and snapshot is not None:
            body = SnapshotEvent(snapshot.timestamp, snapshot.total_nodes, snapshot.latest_height)
            return _encoder.encode(body)
        return None

    async def end_streams(self, _app: web.Application) -> None:
        """``on_shutdown``: end every stream now; each EventSource reconnects to the next
        instance, and the server need not wait for them."""
        for queue in self.subscribers:
            with contextlib.suppress(asyncio.QueueEmpty):
                while queue.full():
                    queue.get_nowait()
            queue.put_nowait(None)
        self.subscribers.clear()

    def current(self) -> list[bytes]:
        return [self._latest[e] for e in EVENT_KINDS if e in self._latest]

    async def stream(self, request: web.Request) -> web.StreamResponse:
        """The handler: the stream's headers, then frames until the client goes away."""
        headers = headers_for(EVENT_STREAM, {"Cache-Control": "no-cache"})
        if request.method == "HEAD":  # the headers alone: no body, no subscriber slot
            return web.Response(headers=headers)
        if len(self.subscribers) >= self.max_subscribers:
            raise ApiError(
                503,
                "too_many_subscribers",
                f"the event stream already has {self.max_subscribers} subscribers; retry later",
            )
        queue: asyncio.Queue[bytes | None] = asyncio.Queue(QUEUE_SIZE)
        self.subscribers.add(queue)
        response = web.StreamResponse(headers=headers)
        try:
            await response.prepare(request)
            await response.write(b"retry: 2000\n\n" + b"".join(self.current()))
            while (frame := await _next(queue, self.heartbeat)) is not None:
                await response.write(frame)
        except ConnectionResetError:
            pass
        finally:
            self.subscribers.discard(queue)
        return response


async def _next(queue: asyncio.Queue[bytes | None], heartbeat: float) -> bytes | None:
    with contextlib.suppress(TimeoutError):
        return await asyncio.wait_for(queue.get(), heartbeat)
    return b": heartbeat\n\n"
