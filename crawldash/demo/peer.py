"""crawldash demo's own peer: a listener on loopback that answers a Bitcoin handshake, so
that the demo's "Check now" has a node to check on this machine (the demo's crawls are
made up: their addresses are strangers' or no one's).

It reads the checker's ``version``, answers with its own ``version`` (its user agent
names it as the demo's) and ``verack``, and closes once the checker's ``verack`` comes or
a few seconds pass. Its messages are made by the live check's own wire code
(``checknode/wire.py``); it runs on an event loop of its own, in a daemon thread beside
the server, and reads at most a handshake's bytes from a client.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import socket
import threading
import time

from ..checknode import wire

log = logging.getLogger(__name__)
HOST = "127.0.0.1"
USER_AGENT = "/crawldash-demo-peer:1.0/"  # showcase.PEER_AGENT
SERVICES = 1033  # NODE_NETWORK, NODE_WITNESS, NODE_NETWORK_LIMITED
MAX_PAYLOAD = 1024  # a version message is about a hundred bytes
PATIENCE = 5.0  # seconds a client has to send each message


class DemoPeer:
    """The peer: ``start`` binds and returns its port, then it serves until the process ends."""

    def __init__(self, magic: bytes, height: int) -> None:
        self.magic, self.height = magic, height
        self.handshakes = 0
        self._socket: socket.socket | None = None

    def start(self) -> int:
        """Bind a free port on loopback and serve from a daemon thread; its port."""
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind((HOST, 0))
        listener.listen(16)
        self._socket = listener
        threading.Thread(target=asyncio.run, args=(self._serve(),), daemon=True).start()
        port: int = listener.getsockname()[1]
        return port

    async def _serve(self) -> None:
        server = await asyncio.start_server(self._handshake, sock=self._socket)
        async with server:
            await server.serve_forever()

    async def _handshake(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            if await self._message(reader) != "version":
                return
            ours = wire.Version(
                wire.PROTOCOL_VERSION,
                SERVICES,
                int(time.time()),
                wire.NetworkAddress(),
                wire.NetworkAddress(SERVICES, HOST, 0),
                secrets.randbits(64),
                USER_AGENT,
                self.height,
            )
            writer.write(wire.version_message(self.magic, ours) + wire.verack(self.magic))
            await writer.drain()
            self.handshakes += 1
            with contextlib.suppress(wire.WireError, TimeoutError):
                await self._message(reader)  # the checker's verack, or its leaving
        except (OSError, asyncio.IncompleteReadError, TimeoutError, wire.WireError):
            pass  # a client that left or sent something else: nothing to answer
        finally:
            writer.close()

    async def _message(self, reader: asyncio.StreamReader) -> str:
        """The command of the next message (its payload read and dropped)."""
        header = wire.parse_header(
            await asyncio.wait_for(reader.readexactly(wire.HEADER_SIZE), PATIENCE)
        )
        if header.magic != self.magic or header.length > MAX_PAYLOAD:
            raise wire.WireError("not this network's message, or too long for a handshake")
        await asyncio.wait_for(reader.readexactly(header.length), PATIENCE)
        return header.command
