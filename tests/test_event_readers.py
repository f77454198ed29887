"""Event-stream readers that never read cannot keep the stream from others (issue 51, case
5): a real server, raw TCP clients on loopback that send their request and never read,
each with a small receive buffer so that the kernel's buffers fill quickly, and then a
new reader from another address, which must get its stream and its first event."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterator

import pytest

from crawldash.app import NETWORKS

from .conftest import Client, Serve, eventually
from .factories import export_body, rows, write_snapshot
from .process import PATIENCE
from .test_events import TS, dechunk, read_event

RECEIVE_BUFFER = 4096  # each silent reader's: the kernel's least, so buffers fill at once
NEWCOMER = "127.0.0.2"  # the reader that must get in, from an address of its own
# Bytes of events sent to each silent reader at most: far more than a stream's small send
# buffer and a 4 KiB receive buffer hold, and far less than the megabytes Linux's own
# autotuned buffers take in on loopback (before this fix, a silent reader's writes never
# waited while those filled).
BUDGET = 400 * 1024


@pytest.fixture
def sockets() -> Iterator[list[socket.socket]]:
    opened: list[socket.socket] = []
    yield opened
    for sock in opened:
        sock.close()


async def silent_reader(client: Client, source: str, opened: list[socket.socket]) -> socket.socket:
    """A connection from ``source`` that asks for the stream and never reads."""
    sock = socket.socket()
    opened.append(sock)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)
    sock.bind((source, 0))
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    await loop.sock_connect(sock, (client.server.host, client.server.port))
    await loop.sock_sendall(sock, b"GET /api/events HTTP/1.1\r\nHost: c\r\n\r\n")
    return sock


def status_of(sock: socket.socket) -> int | None:
    """The status of the answer a silent reader was sent, read without taking it from the
    receive buffer (MSG_PEEK): None until it comes."""
    try:
        head = sock.recv(16, socket.MSG_PEEK)
    except BlockingIOError:
        return None
    return int(head.split()[1]) if len(head) >= 12 else None


async def statuses(readers: list[socket.socket]) -> list[int]:
    """Each silent reader's status, once every one has been answered."""

    async def answered() -> bool:
        return all(status_of(sock) is not None for sock in readers)

    await eventually(answered)
    return [status_of(sock) or 0 for sock in readers]


async def newcomer(client: Client) -> tuple[int, dict[str, object] | None]:
    """A reader from NEWCOMER: its status, and its first event when that is 200."""
    reader, writer = await asyncio.open_connection(
        client.server.host, client.server.port, local_addr=(NEWCOMER, 0)
    )
    try:
        writer.write(b"GET /api/events HTTP/1.1\r\nHost: c\r\n\r\n")
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), PATIENCE)
        status = int(head.split()[1])
        if status != 200:
            return status, None
        event, data = await asyncio.wait_for(read_event(await dechunk(reader)), PATIENCE)
        return status, {"event": event, **data}
    finally:
        writer.close()


def read_to_the_end(sock: socket.socket) -> None:
    """Read what a silent reader was sent, until the connection's end."""
    while sock.recv(65536, socket.MSG_DONTWAIT):
        pass


async def test_one_address_cannot_take_every_stream(serve: Serve, data_dir, sockets):
    """100 readers from one address that never read; before, they held all 20 slots and a
    reader from elsewhere got 503 for as long as they stayed."""
    write_snapshot(data_dir, TS, export_body(rows(3)))
    client = await serve(max_subscribers=20)
    readers = [await silent_reader(client, "127.0.0.1", sockets) for _ in range(100)]
    found = await statuses(readers)
    status, first = await newcomer(client)
    assert status == 200
    assert first is not None
    assert first["event"] == "snapshot"
    assert first["timestamp"] == TS
    assert found.count(200) == 8  # the default --max-subscribers-per-client
    assert set(found) == {200, 429}


async def test_a_reader_that_stops_reading_is_dropped(serve: Serve, data_dir, sockets):
    """Readers from ten addresses fill every slot and never read. Events go out to them, a
    few at a time, well within what an EventSource that reads takes: once the kernel's
    buffers for them are full, each is dropped after --event-drain-timeout, and a reader
    from another address gets in. Before, they kept every slot."""
    write_snapshot(data_dir, TS, export_body(rows(3)))
    client = await serve(max_subscribers=10, event_drain_timeout=1.0)
    broadcaster = client.app[NETWORKS][0].events
    readers = [await silent_reader(client, f"127.0.1.{i}", sockets) for i in range(1, 11)]
    assert await statuses(readers) == [200] * 10
    assert (await newcomer(client))[0] == 503

    async def taken() -> bool:  # each stream has written what it was given, or is gone
        return all(queue.empty() for queue in broadcaster.subscribers)

    sent = 0
    while broadcaster.subscribers and sent < BUDGET:
        broadcaster.publish("status")
        sent += len(broadcaster.current()[-1])
        await eventually(taken)
    status, first = await newcomer(client)
    assert status == 200, f"the silent readers still hold every slot after {sent} bytes each"
    assert first is not None
    assert first["event"] == "snapshot"
    for sock in readers:  # each silent reader's connection was reset, its bytes dropped
        with pytest.raises(ConnectionResetError):
            read_to_the_end(sock)


async def test_an_ipv6_client_is_counted_by_its_prefix(serve: Serve, data_dir):
    """Behind a trusted proxy, readers from two addresses of one /64 are one client, as
    for the live check: a host holds a whole /64, and could otherwise open streams from
    as many addresses as it likes. Another /64 is another client."""
    write_snapshot(data_dir, TS, export_body(rows(3)))
    client = await serve(
        trusted_proxies=(ipaddress.ip_network("127.0.0.1/32"),), max_subscribers_per_client=1
    )
    held = []
    for forwarded, expected in (("2001:db8::1", 200), ("2001:db8::2", 429), ("2001:db8:1::1", 200)):
        reader, writer = await asyncio.open_connection(client.server.host, client.server.port)
        held.append(writer)
        request = f"GET /api/events HTTP/1.1\r\nHost: c\r\nX-Forwarded-For: {forwarded}\r\n\r\n"
        writer.write(request.encode())
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), PATIENCE)
        assert int(head.split()[1]) == expected, forwarded
    for writer in held:
        writer.close()
