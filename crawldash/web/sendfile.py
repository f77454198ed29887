"""Large bodies sent from their memory file (``live.bodies.BodyFile``) with ``os.sendfile``.

Written as bytes, a body is copied by aiohttp (on Python before 3.12.9 it joins the headers
and the body into one new buffer), again by asyncio for what the socket does not take at
once, and by the kernel into the socket. From a memory file the kernel hands its pages to
the socket: the headers go first, then as much of the file as the socket takes in one
system call, and only what is left, if anything, through the transport as bytes. The
event loop never waits on the file: it is read only inside that one call.
"""

from __future__ import annotations

import os
from typing import Any

from aiohttp import payload
from aiohttp.abc import AbstractStreamWriter

from ..live.bodies import BodyFile


class SentFile(payload.Payload):
    """A response body sent from its memory file where the connection allows it: a plain
    TCP or Unix socket whose write buffer is empty; otherwise, and for the rest of a body
    the socket did not take at once, as bytes."""

    def __init__(self, body: BodyFile, content_type: str) -> None:
        super().__init__(body.body, content_type=content_type)
        self._size = len(body.body)
        self._body = body  # holds the file open while this payload is sent

    def decode(self, encoding: str = "utf-8", errors: str = "strict") -> str:
        text: str = self._body.body.decode(encoding, errors)
        return text

    async def write(self, writer: AbstractStreamWriter) -> None:
        writer.send_headers()  # they go out before the file: the transport's buffer is empty
        fd = self._body.fd()  # asked now: None if the file was closed since (close())
        sent = 0 if fd is None else _sendfile(writer, fd, len(self._body.body))
        writer.output_size += sent  # the access log's body size
        if sent < len(self._body.body):
            await writer.write(memoryview(self._body.body)[sent:])


def _sendfile(writer: AbstractStreamWriter, fd: int, size: int) -> int:
    """Bytes of the file sent straight to the socket: 0 if the transport holds bytes not
    yet sent (they go first), encrypts (TLS), is closing, or the socket takes none now."""
    transport = writer.transport
    if transport is None or transport.is_closing() or transport.get_write_buffer_size():
        return 0
    if transport.get_extra_info("sslcontext") is not None:
        return 0
    sock: Any = transport.get_extra_info("socket")
    if sock is None:
        return 0
    try:
        return os.sendfile(sock.fileno(), fd, 0, size)
    except OSError:  # full (EAGAIN), or the peer left: the transport's write says so
        return 0


def file_body(body: BodyFile, content_type: str) -> bytes | SentFile:
    """What to give ``web.Response(body=...)``: the memory file's payload if the body is
    large enough to have one, else its bytes."""
    return body.body if body.fd() is None else SentFile(body, content_type)
