"""``GET /api/events``: Server-Sent Events for each new snapshot and status change.

A subscriber first receives the current snapshot and status, then each change. No reader
makes the server hold its slot or buffer without bound:

- each subscriber has a bounded queue: a reader too slow to keep up is disconnected (its
  EventSource reconnects and is sent the current state again);
- a reader that stops reading is dropped once the kernel's buffers for it are full and a
  write has waited ``drain_timeout`` seconds: its stream's socket keeps a small send
  buffer, so this comes after tens of kilobytes, not the megabytes Linux would otherwise
  let a silent reader take (hours of events);
- one client holds at most ``per_client`` streams, so that a few hosts cannot take every
  slot. The client is found as the live check finds it: the address ``X-Forwarded-For``
  names when the peer is a trusted proxy, and an IPv6 client by its prefix.

Clients that disconnect are dropped at once (the handler is cancelled). Every kind of
event, and its data, is described in ``schema/events.py``: only those kinds are sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import time
from collections import Counter

import msgspec
from aiohttp import web

from ..checknode.bounds import client_address
from ..live.state import State
from ..models import SnapshotEvent
from ..settings.addresses import IPNetwork
from .errors import ApiError
from .responses import headers_for
from .schema.events import EVENT_KINDS

QUEUE_SIZE = 16
EVENT_STREAM = "text/event-stream"
# The kernel's send buffer of a stream's socket (Linux doubles it): a minute or more of
# events. Left to autotuning, a reader that never reads takes megabytes before a write
# waits at all, and so keeps its slot for hours.
SEND_BUFFER = 16 * 1024
# How often a write that waits for its reader looks again: the transport tells no one when
# its buffer empties below its high-water mark.
DRAIN_POLL = 0.05
_encoder = msgspec.json.Encoder()


class Broadcaster:
    """Turns state changes into SSE frames and hands them to every subscriber."""

    def __init__(
        self,
        state: State,
        *,
        max_subscribers: int,
        heartbeat: float,
        per_client: int = 8,
        drain_timeout: float = 5.0,
        trusted: tuple[IPNetwork, ...] = (),
        ipv6_prefix: int | None = None,
    ) -> None:
        self.state = state
        self.max_subscribers, self.per_client = max_subscribers, per_client
        self.heartbeat, self.drain_timeout = heartbeat, drain_timeout
        self.trusted, self.ipv6_prefix = trusted, ipv6_prefix
        self.subscribers: set[asyncio.Queue[bytes | None]] = set()
        self.clients: Counter[str] = Counter()  # streams open by client address
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
        client = self._client(request)
        self._admit(client)
        response = web.StreamResponse(headers=headers)
        # The socket's small send buffer is the stream's alone: a later request on the
        # same connection would be held to it too.
        response.force_close()
        queue: asyncio.Queue[bytes | None] = asyncio.Queue(QUEUE_SIZE)
        self.subscribers.add(queue)
        self.clients[client] += 1
        try:
            await response.prepare(request)
            _small_send_buffer(request)
            await self._send(request, response, b"retry: 2000\n\n" + b"".join(self.current()))
            while (frame := await _next(queue, self.heartbeat)) is not None:
                await self._send(request, response, frame)
        except ConnectionResetError:
            pass
        except TimeoutError:  # the reader stopped reading: free its slot and its buffers
            _reset(request)
        finally:
            self.subscribers.discard(queue)
            self.clients[client] -= 1
            if not self.clients[client]:
                del self.clients[client]
        return response

    def _client(self, request: web.Request) -> str:
        forwarded = request.headers.getall("X-Forwarded-For", [])
        return client_address(request.remote, forwarded, self.trusted, self.ipv6_prefix)

    def _admit(self, client: str) -> None:
        if len(self.subscribers) >= self.max_subscribers:
            raise ApiError(
                503,
                "too_many_subscribers",
                f"the event stream already has {self.max_subscribers} subscribers; retry later",
            )
        if self.clients[client] >= self.per_client:
            raise ApiError(
                429,
                "too_many_streams",
                f"at most {self.per_client} event streams per client; close one and retry",
            )

    async def _send(self, request: web.Request, response: web.StreamResponse, data: bytes) -> None:
        """Write ``data``, and wait until the kernel has taken all of it: TimeoutError if
        that takes over ``drain_timeout`` (aiohttp's write returns at once while its
        buffer is below its high-water mark, so the wait is here)."""
        async with asyncio.timeout(self.drain_timeout):
            await response.write(data)
            while (transport := request.transport) is not None:
                if not transport.get_write_buffer_size():
                    return
                await asyncio.sleep(DRAIN_POLL)


def _small_send_buffer(request: web.Request) -> None:
    sock = request.transport.get_extra_info("socket") if request.transport else None
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)


def _reset(request: web.Request) -> None:
    """Close the connection at once, unsent bytes dropped (a reset): closed the usual way,
    it would stay open until its reader took them, which it does not."""
    transport = request.transport
    if transport is None:
        return
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()


async def _next(queue: asyncio.Queue[bytes | None], heartbeat: float) -> bytes | None:
    with contextlib.suppress(TimeoutError):
        return await asyncio.wait_for(queue.get(), heartbeat)
    return b": heartbeat\n\n"
