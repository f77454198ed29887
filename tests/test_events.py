"""The event stream and history by network, over real sockets."""

from __future__ import annotations

import asyncio
import json
import time

from crawldash.app import NETWORKS, create_app
from crawldash.live.answers.profiles import Profiles
from crawldash.live.stores.history import HistoryEntry
from crawldash.live.stores.index_files import HistoryStore
from crawldash.web.events import QUEUE_SIZE

from .conftest import Client, eventually, watching
from .factories import I2P, ONION, export_body, row, rows, write_snapshot, write_status
from .process import PATIENCE

TS = 1_700_000_000


async def read_event(stream: asyncio.StreamReader) -> tuple[str, dict[str, object]]:
    """The next named event (skipping comments and retry lines)."""
    fields: dict[str, str] = {}
    while True:
        line = (await stream.readline()).decode().rstrip("\n")
        if line == "" and "event" in fields:
            return fields["event"], json.loads(fields["data"])
        if line and not line.startswith(":"):
            key, _, value = line.partition(": ")
            fields[key] = value


async def subscribe(client: Client) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection(client.server.host, client.server.port)
    writer.write(b"GET /api/events HTTP/1.1\r\nHost: c\r\nLast-Event-ID: 3\r\n\r\n")
    head = await reader.readuntil(b"\r\n\r\n")
    assert b" 200 " in head.split(b"\r\n")[0]
    assert b"text/event-stream" in head
    assert b"X-Content-Type-Options: nosniff" in head
    return reader, writer


async def dechunk(reader: asyncio.StreamReader) -> asyncio.StreamReader:
    """aiohttp streams the body chunked: undo it, so lines can be read."""
    out = asyncio.StreamReader()

    async def pump() -> None:
        while (line := (await reader.readline()).strip()) and (size := int(line, 16)):
            out.feed_data(await reader.readexactly(size))
            await reader.readline()
        out.feed_eof()  # the server ended the stream, or closed the connection

    task = asyncio.create_task(pump())
    out._pump = task  # type: ignore[attr-defined]  # keep the task alive with the stream
    return out


async def test_subscriber_gets_current_state_then_a_new_snapshot(serve, data_dir):
    write_snapshot(data_dir, TS, export_body(rows(5)))
    write_status(data_dir, state="running", queue_size=3)
    client = await serve()
    await watching(client)
    reader, writer = await subscribe(client)
    stream = await dechunk(reader)
    first = [await read_event(stream) for _ in range(2)]
    assert first[0] == ("snapshot", {"timestamp": TS, "total_nodes": 5, "latest_height": 900_000})
    assert first[1][0] == "status"
    assert first[1][1]["state"] == "running"
    write_snapshot(data_dir, TS + 600, export_body(rows(8)))
    event, data = await asyncio.wait_for(read_event(stream), PATIENCE)
    assert (event, data["timestamp"], data["total_nodes"]) == ("snapshot", TS + 600, 8)
    served = await (await client.get("/api/snapshot")).json()
    assert served["timestamp"] == TS + 600  # the event came once it was served
    writer.close()


async def test_on_the_snapshot_event_every_answer_is_about_the_new_crawl(
    serve, data_dir, monkeypatch
):
    """A dashboard asks again for everything on the event: the crawl's history point,
    presence, profile changes and check evidence are taken in after it is served, so the
    event waits for them. The profile comparison is slowed to make the wait certain."""
    compare = Profiles.compare

    def slow_compare(profiles: Profiles, *crawls: object) -> object:
        time.sleep(0.3)
        return compare(profiles, *crawls)  # type: ignore[arg-type]

    monkeypatch.setattr(Profiles, "compare", slow_compare)
    write_snapshot(data_dir, TS, export_body([row("203.0.113.1"), row("203.0.113.2")]))
    client = await serve()
    await watching(client)
    reader, writer = await subscribe(client)
    stream = await dechunk(reader)
    for _ in range(2):  # the current snapshot and status
        await read_event(stream)
    upgraded = row("203.0.113.1", agent="/Satoshi:28.0.0/")
    write_snapshot(data_dir, TS + 600, export_body([upgraded, row("198.51.100.9")]))
    event, data = await asyncio.wait_for(read_event(stream), PATIENCE)
    assert (event, data["timestamp"]) == ("snapshot", TS + 600)
    profile = await client.get("/api/profile", params={"address": "203.0.113.1:8333"})
    history = await (await client.get("/api/history")).json()
    writer.close()
    assert len((await profile.json())["changes"]) == 1
    assert history[-1]["timestamp"] == TS + 600


async def test_subscribers_are_limited_and_dropped_when_gone(serve, data_dir):
    write_snapshot(data_dir, TS, export_body(rows(2)))
    client = await serve(max_subscribers=2)
    broadcaster = client.app[NETWORKS][0].events
    connections = [await subscribe(client) for _ in range(2)]
    assert len(broadcaster.subscribers) == 2
    refused = await client.get("/api/events")
    assert refused.status == 503
    assert (await refused.json())["error"]["code"] == "too_many_subscribers"
    for _, writer in connections:
        writer.transport.abort()

    async def dropped() -> bool:
        return not broadcaster.subscribers

    await eventually(dropped)


async def test_slow_reader_is_disconnected_not_buffered(serve, data_dir):
    write_snapshot(data_dir, TS, export_body(rows(2)))
    client = await serve()
    broadcaster = client.app[NETWORKS][0].events
    queue: asyncio.Queue[bytes | None] = asyncio.Queue(QUEUE_SIZE)
    broadcaster.subscribers.add(queue)  # a subscriber that never reads
    for _ in range(QUEUE_SIZE + 5):
        broadcaster.publish("status")
    assert queue not in broadcaster.subscribers
    frames = [queue.get_nowait() for _ in range(queue.qsize())]
    assert frames[-1] is None  # told to end its stream
    assert len(frames) == QUEUE_SIZE


async def test_history_by_network(serve, data_dir):
    write_snapshot(data_dir, TS, export_body(rows(3)))
    write_snapshot(
        data_dir,
        TS + 600,
        export_body(
            [*rows(2), row("2001:db8::1"), row("fc00::5"), row(ONION, tor=True), row(I2P, tor=True)]
        ),
    )
    client = await serve()
    points = await (await client.get("/api/history?by=network")).json()
    assert points == [
        {
            "timestamp": TS,
            "reachable": 3,
            "networks": {"ipv4": 3, "ipv6": 0, "onion": 0, "i2p": 0, "cjdns": 0},
        },
        {
            "timestamp": TS + 600,
            "reachable": 6,
            "networks": {"ipv4": 2, "ipv6": 1, "onion": 1, "i2p": 1, "cjdns": 1},
        },
    ]
    plain = await (await client.get("/api/history")).json()
    assert plain == [{"timestamp": TS, "reachable": 3}, {"timestamp": TS + 600, "reachable": 6}]


async def test_points_from_an_old_index_stay_plain(aiohttp_client, settings, data_dir):
    HistoryStore.for_data_dir(settings.resolved_state_dir, data_dir).save(
        [HistoryEntry(TS - 600, 7)]
    )
    write_snapshot(data_dir, TS, export_body(rows(3)))
    client = await aiohttp_client(create_app(settings))
    points = await (await client.get("/api/history?by=network")).json()
    assert points[0] == {"timestamp": TS - 600, "reachable": 7}
    assert points[1]["networks"]["ipv4"] == 3


async def test_page_and_its_files_are_served_from_the_package(client: Client):
    page = await client.get("/")
    assert page.status == 200
    assert page.headers["Content-Type"] == "text/html; charset=utf-8"
    assert "default-src 'self'" in page.headers["Content-Security-Policy"]
    html = await page.text()
    for src in ("static/app.js", "static/style.css", "static/vendor/uPlot.iife.min.js"):
        assert f'="{src}"' in html  # relative: the page works at /n/NAME/ and behind a proxy
        response = await client.get("/" + src)
        assert response.status == 200, src
    assert ' src="/' not in html
    assert ' href="/' not in html
    assert "http://" not in html  # nothing from the internet
    assert "https://" not in html


async def test_head_of_the_event_stream_is_headers_alone(serve, data_dir):
    """HEAD gets the stream's headers, no body, and takes no subscriber slot: with one slot,
    a HEAD then a GET over one keep-alive connection both succeed."""
    write_snapshot(data_dir, TS, export_body(rows(2)))
    client = await serve(max_subscribers=1)
    reader, writer = await asyncio.open_connection(client.server.host, client.server.port)
    writer.write(b"HEAD /api/events HTTP/1.1\r\nHost: c\r\n\r\n")
    head = await reader.readuntil(b"\r\n\r\n")
    assert b" 200 " in head.split(b"\r\n")[0]
    assert b"text/event-stream" in head
    assert not client.app[NETWORKS][0].events.subscribers
    writer.write(b"GET /api/status HTTP/1.1\r\nHost: c\r\n\r\n")
    answer = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), PATIENCE)
    assert answer.startswith(b"HTTP/1.1 200 "), answer  # not a stray stream frame first
    writer.close()
    streamed = await subscribe(client)  # the one slot is free
    streamed[1].close()
