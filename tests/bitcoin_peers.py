"""Peers on loopback for the live check's tests: real sockets, and Bitcoin's wire messages
made and read by python-bitcoinlib (a library no one here wrote), not by crawldash."""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

from aiohttp import web
from bitcoin.messages import MsgSerializable, msg_verack, msg_version

from .process import free_port

MAINNET = bytes.fromhex("f9beb4d9")
TESTNET3 = bytes.fromhex("0b110907")


def with_magic(message: bytes, magic: bytes) -> bytes:
    """python-bitcoinlib's message (made with mainnet's magic) under another network's."""
    return magic + message[4:]


def peer_version(user_agent: str, height: int, services: int) -> msg_version:
    version = msg_version()
    version.strSubVer = user_agent.encode()
    version.nStartingHeight = height
    version.nServices = services
    return version


async def read_message(reader: asyncio.StreamReader, magic: bytes = MAINNET) -> MsgSerializable:
    """One message from the stream, read by python-bitcoinlib (whose magic is mainnet's:
    one under ``magic`` is read as if it were mainnet's)."""
    return await read_after(await reader.readexactly(24), reader, magic)


async def read_after(
    header: bytes, reader: asyncio.StreamReader, magic: bytes = MAINNET
) -> MsgSerializable:
    """The message whose 24-byte ``header`` was read already."""
    if header[:4] == magic:
        header = with_magic(header, MAINNET)
    payload = await reader.readexactly(int.from_bytes(header[16:20], "little"))
    return MsgSerializable.stream_deserialize(io.BytesIO(header + payload))


@dataclass
class Peer:
    """A listening TCP server and what it saw: connections and the messages read."""

    port: int = 0
    connections: int = 0
    open_now: int = 0
    most_open: int = 0
    received: list[MsgSerializable] = field(default_factory=list)


Behaviour = Callable[[Peer, asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@contextlib.asynccontextmanager
async def listening(
    behaviour: Behaviour, host: str = "127.0.0.1", port: int = 0
) -> AsyncIterator[Peer]:
    """A server on ``host`` (127.0.0.1, or an address of a test's own network namespace)
    that runs ``behaviour`` for each connection."""
    peer = Peer()
    handlers: set[asyncio.Task[None]] = set()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handlers.add(task)
        peer.connections += 1
        peer.open_now += 1
        peer.most_open = max(peer.most_open, peer.open_now)
        try:
            await behaviour(peer, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            peer.open_now -= 1
            writer.transport.abort()
            handlers.discard(task)

    server = await asyncio.start_server(serve, host, port)
    peer.port = server.sockets[0].getsockname()[1]
    try:
        yield peer
    finally:
        server.close()
        for task in list(handlers):
            task.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)


def bitcoin_node(
    user_agent: str = "/Satoshi:27.1.0/",
    height: int = 905_123,
    services: int = 1033,
    magic: bytes = MAINNET,
    close_after_version: bool = False,
    delay: float = 0.0,
    speaks_first: bool = False,
) -> Behaviour:
    """A node: reads the checker's version, answers version (and verack unless told to
    close after its version), then keeps reading until the checker goes.

    As a real node (Bitcoin Core and its forks) does, it waits for the checker's version
    and reads a message in another network's magic as garbage: it closes without a word.
    Only with ``speaks_first`` (a peer that writes its version on connecting, before it
    reads anything, as no real node does on an inbound connection) does a node of another
    network answer in its own magic."""
    mine = with_magic(peer_version(user_agent, height, services).to_bytes(), magic)

    async def behave(
        peer: Peer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        if speaks_first:
            writer.write(mine)
        header = await reader.readexactly(24)
        if header[:4] != magic:
            return  # another network's message start: closed without a word
        peer.received.append(await read_after(header, reader, magic))
        await asyncio.sleep(delay)
        if not speaks_first:
            writer.write(mine)
        if close_after_version:
            await writer.drain()
            return
        writer.write(with_magic(msg_verack().to_bytes(), magic))
        while True:
            peer.received.append(await read_message(reader, magic))

    return behave


async def silent(peer: Peer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Accepts, reads, says nothing."""
    while await reader.read(4096):
        pass


def closed_port() -> int:
    """A loopback port nothing listens on (nor will: no other test is given it)."""
    return free_port()


@contextlib.asynccontextmanager
async def http_server() -> AsyncIterator[int]:
    """An aiohttp web server on loopback: its port."""

    async def hello(_: web.Request) -> web.Response:
        return web.Response(text="hello")

    app = web.Application()
    app.router.add_get("/", hello)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    server = site._server
    assert isinstance(server, asyncio.Server)
    try:
        yield int(server.sockets[0].getsockname()[1])
    finally:
        await runner.cleanup()


async def connected_and_relayed(
    port: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """A SOCKS5 proxy's CONNECT, once asked for: connect to the node listening on ``port``,
    answer success, then relay bytes both ways until either side closes."""
    upstream_reader, upstream = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"\x05\x00\x00\x01" + bytes(6))

    async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        while data := await source.read(4096):
            sink.write(data)

    try:
        await asyncio.gather(pipe(reader, upstream), pipe(upstream_reader, writer))
    finally:
        upstream.transport.abort()
