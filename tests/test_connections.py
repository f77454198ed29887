"""Connection-level robustness, over real sockets to a real server."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from crawldash.app import create_app
from crawldash.settings.serve import Settings

from .conftest import Client, eventually
from .factories import export_body, rows, write_snapshot

pytestmark = pytest.mark.slow

REQUEST = b"GET /api/status HTTP/1.1\r\nHost: crawldash\r\n\r\n"


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    return status, await reader.readexactly(length)


async def make_client(aiohttp_client, tmp_path: Path, **options: float) -> Client:
    data_dir = tmp_path / "data"
    write_snapshot(data_dir, 1_700_000_000, export_body(rows(20_000)))
    settings = Settings(data_dir=data_dir, state_dir=tmp_path / "s", **options)  # type: ignore[arg-type]
    client: Client = await aiohttp_client(create_app(settings))
    return client


async def test_a_thousand_concurrent_keepalive_connections(aiohttp_client, tmp_path):
    client = await make_client(aiohttp_client, tmp_path)
    host, port = client.server.host, client.server.port

    async def two_requests_on_one_connection() -> list[int]:
        reader, writer = await asyncio.open_connection(host, port)
        statuses = []
        for _ in range(2):
            writer.write(REQUEST)
            statuses.append((await read_response(reader))[0])
        writer.close()
        return statuses

    results = await asyncio.wait_for(
        asyncio.gather(*(two_requests_on_one_connection() for _ in range(1000))), 60
    )
    assert results == [[200, 200]] * 1000


async def closed_by_server(reader: asyncio.StreamReader) -> bool:
    """True once the server has closed the connection: an end of stream, or a reset when
    the client had sent bytes the closed socket never read (the dripping client's)."""
    try:
        return await asyncio.wait_for(reader.read(), 30) == b""
    except ConnectionResetError:
        return True


async def test_slow_and_silent_clients_are_timed_out_without_holding_up_others(
    aiohttp_client, tmp_path
):
    client = await make_client(aiohttp_client, tmp_path, keepalive_timeout=1.0)
    host, port = client.server.host, client.server.port
    silent_reader, silent = await asyncio.open_connection(host, port)
    slow_reader, slow = await asyncio.open_connection(host, port)

    async def drip() -> None:
        for byte in REQUEST[:-4]:  # never finishes its headers
            slow.write(bytes([byte]))
            await asyncio.sleep(0.05)

    dripping = asyncio.create_task(drip())
    try:
        for _ in range(5):  # everyone else is answered meanwhile
            assert (await client.get("/api/status")).status == 200
        assert await closed_by_server(silent_reader)
        assert await closed_by_server(slow_reader)
    finally:
        dripping.cancel()
        silent.close()
        slow.close()


async def test_disconnect_mid_download_leaves_no_error_or_connection(
    aiohttp_client, tmp_path, caplog
):
    client = await make_client(aiohttp_client, tmp_path)
    host, port = client.server.host, client.server.port
    for _ in range(5):
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(b"GET /api/snapshot HTTP/1.1\r\nHost: crawldash\r\n\r\n")
        await reader.readexactly(65536)  # a part of a ~3 MB answer
        writer.transport.abort()
    assert (await client.get("/api/snapshot")).status == 200
    await client.session.close()  # drop the test client's own keep-alive connection
    server = client.server.runner.server  # type: ignore[union-attr]
    assert server is not None

    async def all_closed() -> bool:
        return not server.connections

    await eventually(all_closed)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
