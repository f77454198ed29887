"""The application on a listening socket: open-file and connection limits, signals, and a
stop in seconds; aiohttp's own answers (to malformed HTTP) in the one error shape.
Start-up failures become one ``StartupError`` line for the operator."""

from __future__ import annotations

import asyncio
import signal
import socket
import sys
from collections.abc import Callable
from typing import Any

import msgspec
from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from ..models import ErrorBody, ErrorDetail
from ..settings.serve import StartupError
from .errors import ApiError, http_error
from .responses import COMMON_HEADERS

STOP_SECONDS = 3.0  # how long requests under way may take to finish at shutdown
# How long a thread may hold the GIL while another waits for it (Python's default: 5 ms).
# A worker thread that unpickles a load's reply would otherwise keep the event loop, and
# every request in flight, waiting that long each time; threads other than the loop's
# run only while a load's reply is read, or a file listed, so the switches cost nothing
# at rest.
SWITCH_INTERVAL = 0.001


def _refusal() -> bytes:
    detail = ErrorDetail(
        503, "too_many_connections", "too many open connections; retry in a moment"
    )
    body = msgspec.json.encode(ErrorBody(detail))
    headers = {
        **COMMON_HEADERS,
        "Content-Type": "application/json",
        "Content-Length": str(len(body)),
        "Retry-After": "1",
        "Connection": "close",
    }
    head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    return f"HTTP/1.1 503 Service Unavailable\r\n{head}\r\n".encode() + body


REFUSAL = _refusal()


class _Refused(asyncio.Protocol):
    """A connection past the limit: answered 503 and closed at once, reading nothing."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        transport.write(REFUSAL)
        transport.close()


class _OneShape(RequestHandler):
    """aiohttp's handler of a connection, whose own answers (to a malformed request, a
    handler that raised, a target the router refused) take the one JSON shape and the
    common headers instead of aiohttp's plain text."""

    __slots__ = ()

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        # aiohttp's own still runs: it logs (ops/logs.py makes a client's error one line)
        # and refuses if an answer is already under way.
        super().handle_error(request, status, exc, message)
        return http_error(status, message)

    async def shutdown(self, timeout: float | None = 15.0) -> None:  # noqa: ASYNC109 (aiohttp's)
        # aiohttp gives a request under way ``timeout``, then as long again to end once
        # cancelled (an answer waiting on a reader that reads nothing never ends): the stop
        # gives it ``timeout`` in all, then closes its connection.
        try:
            async with asyncio.timeout(timeout):
                await super().shutdown(timeout)
        except TimeoutError:
            self.force_close()

    async def finish_response(
        self, request: web.BaseRequest, resp: web.StreamResponse, start_time: float | None
    ) -> tuple[web.StreamResponse, bool]:
        # An HTTPException but an ApiError is aiohttp's (its router's, its Expect check).
        exception = isinstance(resp, web.HTTPException) and not isinstance(resp, ApiError)
        if exception and resp.status >= 400:
            resp = http_error(resp.status)
        return await super().finish_response(request, resp, start_time)


class _LimitedRunner(web.AppRunner):
    """aiohttp's runner, whose listening sockets refuse connections past a limit."""

    def __init__(self, app: web.Application, max_connections: int, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self.max_connections = max_connections

    @property
    def server(self) -> Any:
        server = super().server
        return None if server is None else _ConnectionLimit(server, self.max_connections)


class _ConnectionLimit:
    """The listening socket's protocol factory: aiohttp's request handler while fewer than
    ``limit`` connections are open, a refusal past it. Counted when accepted (a burst of
    accepts makes every handler before any connection is registered), uncounted when
    aiohttp's server is told a connection was lost."""

    def __init__(self, server: web.Server, limit: int) -> None:
        self.server = server
        self.limit = limit
        self.open = 0
        self._lost = server.connection_lost
        server.connection_lost = self._connection_lost  # type: ignore[method-assign]

    def __call__(self) -> asyncio.BaseProtocol:
        if self.open >= self.limit:
            return _Refused()
        self.open += 1
        # As web.Server makes its handlers, with the same arguments (the app's limits).
        return _OneShape(self.server, loop=asyncio.get_running_loop(), **self.server._kwargs)

    def _connection_lost(self, handler: Any, exc: BaseException | None = None) -> None:
        self.open -= 1
        self._lost(handler, exc)


class _Loop(asyncio.SelectorEventLoop):
    """asyncio's event loop, with one mend. When accept() finds no descriptor free, asyncio
    (before CPython gh-151615) schedules a retry of its listening socket for each turn left
    in its accept loop, so up to ``backlog`` retries wait a second; those that come due
    after the server closed the socket (a stop while descriptors ran out) each raised
    ValueError in the loop and logged a traceback. A retry for a closed socket is dropped."""

    def _start_serving(self, protocol_factory: Any, sock: Any, *args: Any, **kwargs: Any) -> None:
        if sock.fileno() != -1:
            super()._start_serving(protocol_factory, sock, *args, **kwargs)  # type: ignore[misc]


def run(
    app: web.Application,
    *,
    host: str,
    port: int,
    max_connections: int,
    reuse_port: bool,
    on_listening: Callable[[], None] = lambda: None,
) -> None:
    """Serve ``app`` until SIGINT or SIGTERM; StartupError if it cannot listen.
    ``on_listening`` is called once the socket listens (the app has started by then)."""
    sys.setswitchinterval(SWITCH_INTERVAL)
    with asyncio.Runner(loop_factory=_Loop) as runner:
        runner.run(_serve(app, host, port, max_connections, reuse_port, on_listening))


async def _serve(
    app: web.Application,
    host: str,
    port: int,
    max_connections: int,
    reuse_port: bool,
    on_listening: Callable[[], None],
) -> None:
    runner = _LimitedRunner(
        app,
        max_connections,
        handler_cancellation=True,  # a client that goes away ends its request at once
        shutdown_timeout=STOP_SECONDS,
    )
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port, backlog=1024, reuse_port=reuse_port or None)
        try:
            await site.start()
        except socket.gaierror as exc:
            raise StartupError(f"cannot resolve --host {host!r}: {exc.strerror}") from None
        except OSError as exc:
            raise StartupError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
        on_listening()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        await stop.wait()
    finally:
        await runner.cleanup()
