"""Large bodies sent from memory files (issue 45): the snapshot in each coding and a kept
``/api/nodes`` CSV reach a client on another address byte for byte, over a real socket,
also when the socket takes only part of the file at once; a memory file is made once per
body and closed when its crawl or answer is let go (ResourceWarnings are errors here). A
client on loopback gets the same bytes: from a memory file up to LOOPBACK_FILE_MAX, past
it written, and no file is made for it.

"Another address" is this machine's own address on its default route, which the server
is bound to: its connections do not come from loopback."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import gzip
import os
import socket
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from crawldash.app import NETWORKS, create_app
from crawldash.live import bodies
from crawldash.live.bodies import BodyFile
from crawldash.settings.serve import Settings
from crawldash.web import sendfile

from .conftest import Client, ClientFactory, Serve, until_served
from .factories import export_body, rows, write_snapshot

pytestmark = pytest.mark.filterwarnings("error::ResourceWarning")

TS = 1_700_000_000
SMALL_MIN = 512  # SENDFILE_MIN for tests: their crawls are small, and compress well
CSV_PATH = "/api/nodes?format=csv"


@pytest.fixture
def serve_far(aiohttp_client: ClientFactory, settings: Settings) -> Serve:
    """``serve``, bound to this machine's own address instead of loopback."""
    host = own_address()

    async def start(**options: Any) -> Client:
        app = create_app(replace(settings, **options))
        return await aiohttp_client(app, server_kwargs={"host": host})

    return start


def own_address() -> str:
    """This machine's IPv4 address on its default route (a datagram socket's connect sends
    nothing)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("198.51.100.1", 9))
        except OSError:
            pytest.skip("this machine has no address but loopback")
        address: str = probe.getsockname()[0]
    assert not address.startswith("127.")
    return address


@pytest.fixture
def small_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bodies, "SENDFILE_MIN", SMALL_MIN)


def memory_files() -> int:
    """Descriptors of memory files open in this process (the server runs in it)."""
    count = 0
    for fd in _fds():
        with contextlib.suppress(OSError):  # closed meanwhile, e.g. a client's socket
            count += os.readlink(f"/proc/self/fd/{fd}").startswith("/memfd:crawldash-body")
    return count


def memory_file_inodes() -> set[int]:
    """Which memory files are open in this process, by inode (a descriptor closed may be
    reused by another file; an inode names one file)."""
    found = set()
    for fd in _fds():
        with contextlib.suppress(OSError):  # closed meanwhile
            if os.readlink(f"/proc/self/fd/{fd}").startswith("/memfd:crawldash-body"):
                found.add(os.stat(f"/proc/self/fd/{fd}").st_ino)
    return found


def _fds() -> list[str]:
    found = []
    for fd in os.listdir("/proc/self/fd"):
        if os.path.exists(f"/proc/self/fd/{fd}"):  # the listing's own descriptor is gone
            found.append(fd)
    return found


async def fetch(
    client: Client, path: str, coding: str = "identity", *, method: str = "GET", slow: bool = False
) -> tuple[dict[str, str], bytes]:
    """One request on a raw socket: the headers and the body exactly as sent. ``slow``: a
    tiny receive buffer, not read for a while, so that the server's socket fills."""
    sock = socket.socket()
    if slow:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    await loop.sock_connect(sock, (str(client.host), int(client.port or 0)))
    reader, writer = await asyncio.open_connection(sock=sock)
    try:
        request = f"{method} {path} HTTP/1.1\r\nHost: x\r\nAccept-Encoding: {coding}\r\n\r\n"
        writer.write(request.encode())
        if slow:
            await asyncio.sleep(0.5)
        head = (await reader.readuntil(b"\r\n\r\n")).decode()
        headers = dict(line.split(": ", 1) for line in head.split("\r\n")[1:] if line)
        length = 0 if method == "HEAD" else int(headers["Content-Length"])
        return headers, await reader.readexactly(length)
    finally:
        writer.close()
        await writer.wait_closed()


async def serving(serve: Serve, data_dir: Path, count: int, ts: int = TS) -> Client:
    write_snapshot(data_dir, ts, export_body(rows(count)))
    client = await serve()
    await until_served(client, ts, within=60)
    return client


def representation(client: Client, coding: str) -> bytes:
    served = client.app[NETWORKS][0].state.snapshot
    assert served is not None
    return served.representations[coding].body


async def test_each_coding_of_the_snapshot_is_sent_whole_from_a_memory_file(
    serve_far, data_dir, small_files
):
    client = await serving(serve_far, data_dir, 1000)
    for coding in ("identity", "gzip", "br"):
        for _ in range(2):  # the second from the same file
            headers, body = await fetch(client, "/api/snapshot", coding)
            assert body == representation(client, coding)
            assert headers.get("Content-Encoding", "identity") == coding
    assert gzip.decompress(representation(client, "gzip")) == representation(client, "identity")
    assert memory_files() == 3  # one per coding, kept with the crawl


async def test_a_head_request_gets_the_length_and_no_body(serve_far, data_dir, small_files):
    client = await serving(serve_far, data_dir, 1000)
    headers, body = await fetch(client, "/api/snapshot", method="HEAD")
    assert int(headers["Content-Length"]) == len(representation(client, "identity"))
    assert body == b""
    headers, body = await fetch(client, "/api/snapshot")  # the connection's next answer
    assert body == representation(client, "identity")


async def test_a_socket_that_takes_part_of_the_file_gets_the_rest(serve_far, data_dir):
    # Larger than the most a socket buffers (4 MB), at the default SENDFILE_MIN.
    client = await serving(serve_far, data_dir, 30_000)
    expected = representation(client, "identity")
    assert len(expected) > 4 * 1024 * 1024
    results = await asyncio.gather(*(fetch(client, "/api/snapshot", slow=True) for _ in range(3)))
    for _, body in results:
        assert body == expected
    assert memory_files() == 1


async def test_small_bodies_are_sent_as_bytes(serve, data_dir):
    client = await serving(serve, data_dir, 20)
    assert len(representation(client, "identity")) < bodies.SENDFILE_MIN
    before = memory_files()
    _, body = await fetch(client, "/api/snapshot")
    assert body == representation(client, "identity")
    assert memory_files() == before


async def test_a_client_on_loopback_gets_larger_bodies_as_bytes_and_no_memory_file(
    serve, data_dir, small_files, monkeypatch
):
    monkeypatch.setattr(sendfile, "LOOPBACK_FILE_MAX", SMALL_MIN)
    client = await serving(serve, data_dir, 1000)
    assert str(client.host).startswith("127.")
    before = memory_files()
    for coding in ("identity", "gzip", "br"):
        headers, body = await fetch(client, "/api/snapshot", coding)
        assert len(body) > SMALL_MIN
        assert body == representation(client, coding)
        assert headers.get("Content-Encoding", "identity") == coding
    _, csv = await fetch(client, CSV_PATH)
    assert csv.count(b"\r\n") == 1001
    _, slow = await fetch(client, "/api/snapshot", slow=True)  # the socket fills meanwhile
    assert slow == representation(client, "identity")
    assert memory_files() == before


async def test_a_client_on_loopback_gets_a_middling_body_from_a_memory_file(
    serve, data_dir, small_files
):
    client = await serving(serve, data_dir, 1000)
    assert str(client.host).startswith("127.")
    before = memory_file_inodes()
    _, first = await fetch(client, CSV_PATH)
    assert SMALL_MIN < len(first) <= sendfile.LOOPBACK_FILE_MAX
    _, again = await fetch(client, CSV_PATH)
    assert again == first
    assert first.count(b"\r\n") == 1001
    assert len(memory_file_inodes() - before) == 1  # made once, sent twice
    _, slow = await fetch(client, CSV_PATH, slow=True)  # the socket fills meanwhile
    assert slow == first


async def test_memory_files_are_closed_with_the_crawl_they_belong_to(
    serve_far, data_dir, small_files
):
    client = await serving(serve_far, data_dir, 1000)
    for crawl in range(4):
        if crawl:
            before = served_files(client)
            write_snapshot(data_dir, TS + crawl, export_body(rows(1000 + crawl)))
            await until_served(client, TS + crawl)
            assert [file.fd() for file in before] == [None] * 3  # closed as it was replaced
        for coding in ("identity", "gzip", "br"):
            _, body = await fetch(client, "/api/snapshot", coding)
            assert body == representation(client, coding)
        assert memory_files() == 3  # one per coding of the crawl served, made once


def served_files(client: Client) -> list[BodyFile]:
    """The memory files of the bodies of the crawl served (each made on its first send)."""
    served = client.app[NETWORKS][0].state.snapshot
    assert served is not None
    return [served.representations[coding].file for coding in ("identity", "gzip", "br")]


async def test_a_kept_csv_export_is_sent_from_a_memory_file(serve_far, data_dir, small_files):
    client = await serving(serve_far, data_dir, 1000)
    before = memory_file_inodes()
    first_headers, first = await fetch(client, CSV_PATH)
    headers, again = await fetch(client, CSV_PATH)
    assert again == first
    assert first.count(b"\r\n") == 1001  # the header and every node
    assert headers["Content-Type"] == "text/csv; charset=utf-8"
    disposition = f'attachment; filename="crawldash-nodes-{TS}.csv"'
    assert first_headers["Content-Disposition"] == headers["Content-Disposition"] == disposition
    kept = memory_file_inodes() - before
    assert len(kept) == 1  # made once, sent twice
    write_snapshot(data_dir, TS + 1, export_body(rows(1001)))
    # Waiting, the test asks for the snapshot, whose codings are files of their own: only
    # the CSV's file is followed.
    await until_served(client, TS + 1)
    gc.disable()  # the older crawl's file is closed as its answer is given up, not by the
    try:  # collector, which on a busy machine may not come for minutes
        _, newer = await fetch(client, CSV_PATH)
        assert newer.count(b"\r\n") == 1002
        assert kept.isdisjoint(memory_file_inodes())
    finally:
        gc.enable()


def test_a_body_file_travels_without_its_descriptor(small_files):
    import pickle

    body = BodyFile(b"x" * SMALL_MIN)
    fd = body.fd()
    assert fd is not None
    copy = pickle.loads(pickle.dumps(body))
    assert copy.body == body.body
    assert copy.fd() not in (None, fd)  # its own file
    body.close()
    copy.close()
    assert body.fd() is None
    assert not os.path.exists(f"/proc/self/fd/{fd}")
