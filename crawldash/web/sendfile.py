"""Large bodies sent from their memory file (``live.bodies.BodyFile``) with ``os.sendfile``
to a peer on another machine, and middling ones to a peer on this machine too.

Written as bytes, a body is copied by aiohttp (on Python before 3.12.9 it joins the headers
and the body into one new buffer), again by asyncio for what the socket does not take at
once, and by the kernel into the socket. From a memory file the kernel hands its pages to
the socket: the headers go first, then as much of the file as the socket takes in one
system call, and only what is left, if anything, through the transport as bytes. The
event loop never waits on the file: it is read only inside that one call.

A peer on this machine (over loopback: a reverse proxy in front, or a benchmark's client)
is sent the memory file too for a body up to LOOPBACK_FILE_MAX, and a larger one as bytes
after its headers: measured over loopback, the file cost the server and the
peer together less than bytes up to about that size, and more past it, where the peer
reads bytes the kernel has just copied into the socket more cheaply than the pages of a
file. A peer on a Unix socket gets bytes.
"""

from __future__ import annotations

import os
from typing import Any

from aiohttp import payload
from aiohttp.abc import AbstractStreamWriter

from ..live.bodies import BodyFile

# The largest body a peer on this machine is sent from its memory file (see above).
LOOPBACK_FILE_MAX = 256 * 1024


class SentFile(payload.Payload):
    """A response body sent from its memory file where the connection allows it: plain TCP
    to another machine, with an empty write buffer; otherwise, and for the rest of a body
    the socket did not take at once, as bytes."""

    def __init__(self, body: BodyFile, content_type: str) -> None:
        super().__init__(body.body, content_type=content_type)
        self._size = len(body.body)
        self._body = body  # holds the file open while this payload is sent

    def decode(self, encoding: str = "utf-8", errors: str = "strict") -> str:
        text: str = self._body.body.decode(encoding, errors)
        return text

    async def write(self, writer: AbstractStreamWriter) -> None:
        body = self._body.body
        fd = self._body.fd() if _takes_files(writer.transport, len(body)) else None
        sent = 0
        if fd is not None:  # asked now: None if the file was closed since (close())
            writer.send_headers()  # they go out before the file: the buffer is empty
            sent = _sendfile(writer.transport, fd, len(body))
            writer.output_size += sent  # the access log's body size
        if not sent:  # as bytes: the headers first, so that the body is not copied to
            writer.send_headers()  # join them (aiohttp does, before Python 3.12.9)
            await writer.write(body)
        elif sent < len(body):
            await writer.write(memoryview(body)[sent:])


def _takes_files(transport: Any, size: int) -> bool:
    """True for a plain TCP connection with an empty write buffer, to a peer on another
    machine, or on this one for a body of at most LOOPBACK_FILE_MAX bytes (see the module's
    docstring); TLS encrypts in the process, and bytes not yet sent must go first."""
    if transport is None or transport.is_closing() or transport.get_write_buffer_size():
        return False
    if transport.get_extra_info("sslcontext") is not None:
        return False
    peer = transport.get_extra_info("peername")
    if not isinstance(peer, tuple):  # a Unix socket's peer is a path, or empty
        return False
    host = str(peer[0])
    local = host.startswith(("127.", "::ffff:127.")) or host == "::1"
    return not local or size <= LOOPBACK_FILE_MAX


def _sendfile(transport: Any, fd: int, size: int) -> int:
    """Bytes of the file sent straight to the socket: 0 if it has no socket, or the socket
    takes none now."""
    sock: Any = transport.get_extra_info("socket")
    if sock is None:
        return 0
    try:
        return os.sendfile(sock.fileno(), fd, 0, size)
    except OSError:  # full (EAGAIN), or the peer left: the transport's write says so
        return 0


def file_body(body: BodyFile, content_type: str) -> bytes | SentFile:
    """What to give ``web.Response(body=...)``: the memory file's payload if the body is
    large enough to have one, else its bytes. The file is made on the first send to a
    peer on another machine: a server only reverse-proxied never holds a body twice."""
    return SentFile(body, content_type) if body.large() else body.body
