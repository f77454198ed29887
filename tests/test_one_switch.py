"""One switch: a new crawl becomes visible on every endpoint at once. A client that polls
every endpoint in turn, and reads the event stream, while crawls are written, never gets an
answer about an older crawl than one it had received before asking."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .conftest import Client, until_served, watching
from .factories import export_body, row, rows, write_snapshot

WATCHED = "203.0.113.9"  # in every crawl written: its check, presence and v1 status name it
CRAWLS = 5  # written one after the other, each once the one before is served everywhere
NODES = 20_000  # enough that preparing a crawl takes a while, where answers could drift
PATIENCE = 120.0  # seconds for every endpoint to name a crawl, on a machine busy or not

About = Callable[[Any], int | None]  # the oldest crawl an answer is about, if it names one


def _last(points: list[dict[str, Any]], key: str) -> int | None:
    return int(points[-1][key]) if points else None


def _oldest(*timestamps: int | None) -> int | None:
    named = [t for t in timestamps if t is not None]
    return min(named) if named else None


# Each endpoint, and how to tell the crawl its answer is about. An answer that mixes two
# crawls (a check whose presence lags its snapshot) is about the older one.
ENDPOINTS: dict[str, About] = {
    "/api/status": lambda a: a["snapshot_timestamp"],
    "/api/snapshot": lambda a: a["timestamp"],
    "/api/history?limit=1": lambda a: _last(a, "timestamp"),
    f"/api/check?address={WATCHED}:8333": lambda a: _oldest(
        a["snapshot_timestamp"], a["presence"]["last_seen"]
    ),
    f"/api/presence?address={WATCHED}:8333&limit=3": lambda a: _last(a, "to"),
    "/api/unique?window=86400": lambda a: a["to"],
    "/api/changes": lambda a: a["to"],
    "/api/breakdown?by=country": lambda a: a["timestamp"],
    "/api/nodes?limit=1": lambda a: a["timestamp"],
    "/api/nodes?limit=1&format=csv": lambda a: a,  # the crawl its file name gives
    "/api/map": lambda a: a["timestamp"],
    "/api/v1/snapshots/?limit=1": lambda a: a["results"][0]["timestamp"],
    "/api/v1/snapshots/latest/": lambda a: a["timestamp"],
    "/api/v1/nodes/?limit=1": lambda a: a["timestamp"],
    f"/api/v1/nodes/{WATCHED}-8333/": lambda a: a["presence"]["last_seen"],
    # Its user agent changes with every crawl: its newest change is the crawl's.
    f"/api/profile?address={WATCHED}:8333": lambda a: (
        a["changes"][0]["crawl"] if a["changes"] else None
    ),
}


@dataclass
class Received:
    """Every answer in the order the client received it: what it was, the crawl it is
    about, and how many answers had been received when it was asked for."""

    answers: list[tuple[str, int, int]] = field(default_factory=list)
    named: dict[str, int] = field(default_factory=dict)  # the newest crawl each has named

    def take(self, what: str, crawl: int | None, asked_after: int) -> None:
        if crawl is not None:
            self.answers.append((what, crawl, asked_after))
            self.named[what] = max(crawl, self.named.get(what, 0))

    def older_than_before(self) -> list[str]:
        """Each answer about an older crawl than an answer received before it was asked."""
        found: list[str] = []
        newest: list[int] = []  # newest[i]: the newest crawl among the first i + 1 answers
        for what, crawl, asked_after in self.answers:
            before = newest[asked_after - 1] if asked_after else 0
            if crawl < before:
                found.append(f"{what} named {crawl} after {before} had been received")
            newest.append(max(crawl, newest[-1] if newest else 0))
        return found


async def poll(client: Client, received: Received, stop: asyncio.Event) -> None:
    """Ask every endpoint in turn, one request at a time, until stopped."""
    while not stop.is_set():
        for path, about in ENDPOINTS.items():
            asked_after = len(received.answers)
            response = await client.get(path, headers={"Accept-Encoding": "gzip, br"})
            assert response.status == 200, (path, response.status, await response.text())
            if "format=csv" in path:
                disposition = response.headers["Content-Disposition"]
                answer: Any = int(disposition.rpartition("-")[2].split(".")[0])
                await response.read()
            else:
                answer = json.loads(await response.read())
            received.take(path, about(answer), asked_after)


async def listen(client: Client, received: Received, stop: asyncio.Event) -> None:
    """The event stream: each snapshot event names its crawl, each status event the crawl
    the status names."""
    response = await client.get("/api/events")
    kind = None
    async for line in response.content:
        text = line.decode().strip()
        if text.startswith("event: "):
            kind = text.removeprefix("event: ")
        elif text.startswith("data: ") and kind in ("snapshot", "status"):
            data = json.loads(text.removeprefix("data: "))
            crawl = data["timestamp"] if kind == "snapshot" else data["snapshot_timestamp"]
            received.take(f"event {kind}", crawl, len(received.answers))
        if stop.is_set():
            break
    response.close()


def crawl(count: int, index: int) -> bytes:
    watched = row(WATCHED, agent=f"/Satoshi:{27 + index}.0.0/")
    return export_body([watched, *rows(count, first_octet=10 + index)])


async def test_no_answer_is_about_an_older_crawl_than_one_received_before(serve, data_dir: Path):
    start = int(time.time()) - 600 * (CRAWLS + 1)
    write_snapshot(data_dir, start, crawl(NODES, 0))
    client = await serve()
    await until_served(client, start)
    await watching(client)
    received, stop = Received(), asyncio.Event()
    tasks = [
        asyncio.create_task(poll(client, received, stop)),
        asyncio.create_task(listen(client, received, stop)),
    ]
    try:
        for index in range(1, CRAWLS + 1):
            timestamp = start + 600 * index
            write_snapshot(data_dir, timestamp, crawl(NODES + index, index))
            deadline = time.monotonic() + PATIENCE
            while not all(received.named.get(p) == timestamp for p in ENDPOINTS):
                assert time.monotonic() < deadline, f"{timestamp} not named by all: {received}"
                for task in tasks:
                    if task.done():
                        task.result()  # a failed request fails the test now
                await asyncio.sleep(0.02)
    finally:
        stop.set()
        await asyncio.gather(*tasks[:1])
        tasks[1].cancel()
    assert received.named["event snapshot"] == start + 600 * CRAWLS
    assert received.older_than_before() == []
