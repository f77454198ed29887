"""The bitnodes.io API v1 routes, driven by a client written against bitnodes.io's
documented shapes, over a real socket, against crawl files on disk."""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from yarl import URL

from crawldash.app import NETWORKS
from crawldash.crawl.decode import Rules
from crawldash.crawl.files import FileVersion
from crawldash.live.snapshot.past_crawls import Archive, ArchivedSnapshot, load_archived
from crawldash.settings.serve import Settings
from tests.conftest import Client, eventually, started, until_complete, watching
from tests.factories import ONION, api_body, export_body, row, write_snapshot
from tests.helpers import write_crawls

# The tests that only read the module's server (the crawled fixture) run in its loop.
READS = pytest.mark.asyncio(loop_scope="module")
TS = 1_700_000_000
CRAWLS = 12  # 600 s apart
IPV6 = "2001:db8::7"


def crawl_rows(index: int) -> list[list[Any]]:
    """Crawl ``index``: a steady node, a German one, IPv6, a Tor node in the odd crawls."""
    german = row("192.0.2.44", agent=f"/Satoshi:{26 + index % 2}.0.0/")
    german[9:13] = ["DE", 52.52, 13.405, "Europe/Berlin"]
    german[7] = "node.example.de"
    rows = [row("203.0.113.5", height=900_000 + index), german, row(IPV6, 8334)]
    if index % 2:
        rows.append(row(ONION, tor=True))
    return rows


class BitnodesV1:
    """What a script written for https://bitnodes.io/api/v1/ does, with its base URL."""

    def __init__(self, session: aiohttp.ClientSession, base: str) -> None:
        self.session, self.base = session, base.rstrip("/") + "/api/v1/"

    async def _get(self, url: str) -> Any:
        async with self.session.get(url) as response:
            response.raise_for_status()
            return await response.json()

    async def all_snapshots(self) -> list[dict[str, Any]]:
        """Every snapshot, following ``next`` from page to page."""
        found: list[dict[str, Any]] = []
        url: str | None = self.base + "snapshots/?limit=5"
        while url is not None:
            page = await self._get(url)
            found += page["results"]
            url = page["next"]
        return found

    async def snapshot(self, timestamp: int | str) -> dict[str, Any]:
        return await self._get(f"{self.base}snapshots/{timestamp}/")  # type: ignore[no-any-return]

    async def node(self, address: str, port: int) -> dict[str, Any]:
        return await self._get(f"{self.base}nodes/{address}-{port}/")  # type: ignore[no-any-return]


async def filled(client: Client, data_dir: Path) -> Client:
    """``client``'s server once it serves the CRAWLS crawls, each with its point."""
    write_crawls(data_dir, crawl_rows, CRAWLS, TS)
    await client.app[NETWORKS][0].refresher.refresh()
    await until_complete(client)
    return client


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def crawled(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Client]:
    """One server over the crawls, shared by this module's tests that only read it (each
    marked READS, to run in the module's event loop)."""
    folder = tmp_path_factory.mktemp("v1")
    data_dir = folder / "data"
    data_dir.mkdir()
    settings = Settings(data_dir=data_dir, state_dir=folder / "state", debounce_ms=50)
    async with started(settings) as client:
        yield await filled(client, data_dir)


@pytest.fixture
async def crawled_here(client: Client, data_dir: Path) -> Client:
    """The same, the test's own: for the tests that change the folder."""
    return await filled(client, data_dir)


@READS
async def test_a_bitnodes_client_walks_list_latest_timestamp_and_node(crawled: Client):
    async with aiohttp.ClientSession() as session:
        v1 = BitnodesV1(session, str(crawled.make_url("/")))
        listed = await v1.all_snapshots()
        assert [s["timestamp"] for s in listed] == [TS + 600 * i for i in reversed(range(CRAWLS))]
        newest = listed[0]
        assert newest["total_nodes"] == 4  # the last crawl is odd: Tor is in it
        assert newest["latest_height"] == 900_000  # the consensus: most nodes' height
        latest = await v1.snapshot("latest")
        assert latest["timestamp"] == newest["timestamp"]
        assert latest["total_nodes"] == len(latest["nodes"]) == newest["total_nodes"]
        first = listed[-1]
        older = await session.get(first["url"])  # the absolute URL as listed
        assert older.status == 200
        body = await older.json()
        assert body["timestamp"] == TS
        assert body["total_nodes"] == 3
        assert body["nodes"]["203.0.113.5:8333"] == crawl_rows(0)[0][2:]
        assert set(body["nodes"]) == {"203.0.113.5:8333", "192.0.2.44:8333", f"[{IPV6}]:8334"}
        node = await v1.node("203.0.113.5", 8333)
        assert node["status"] == "UP"
        assert node["address"] == "203.0.113.5"
        assert node["data"] == crawl_rows(CRAWLS - 1)[0][2:]
        gone = await v1.node("192.0.2.200", 8333)
        assert gone["status"] == "DOWN"
        assert gone["data"] is None


@READS
async def test_latest_is_the_same_bytes_as_api_snapshot(crawled: Client):
    for coding in ("identity", "gzip", "br"):
        headers = {"Accept-Encoding": coding}
        v1 = await crawled.get("/api/v1/snapshots/latest/", headers=headers, auto_decompress=False)
        ours = await crawled.get("/api/snapshot", headers=headers, auto_decompress=False)
        assert await v1.read() == await ours.read()
        assert v1.headers["ETag"] == ours.headers["ETag"]
        assert v1.headers["Cache-Control"] == ours.headers["Cache-Control"]
    again = await crawled.get(
        "/api/v1/snapshots/latest/", headers={"If-None-Match": ours.headers["ETag"]}
    )
    assert again.status == 304


@READS
async def test_an_older_crawl_is_immutable_coded_and_revalidated(crawled: Client):
    path = f"/api/v1/snapshots/{TS + 600}/"
    first = await crawled.get(path, headers={"Accept-Encoding": "gzip"}, auto_decompress=False)
    assert first.status == 200
    assert first.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    assert first.headers["Content-Encoding"] == "gzip"
    assert first.headers["Vary"] == "Accept-Encoding"
    decoded = json.loads(gzip.decompress(await first.read()))
    assert decoded["timestamp"] == TS + 600
    assert f"{ONION}:8333" in decoded["nodes"]  # crawl 1 is odd
    again = await crawled.get(path, headers={"If-None-Match": first.headers["ETag"]})
    assert again.status == 304


async def test_a_crawl_file_gone_or_rewritten_is_seen(crawled_here: Client, data_dir: Path):
    await watching(crawled_here)
    path = f"/api/v1/snapshots/{TS + 1200}/"
    assert (await crawled_here.get(path)).status == 200
    write_snapshot(data_dir, TS + 1200, export_body([row("198.51.100.99")]))

    async def rewritten() -> bool:
        body = await (await crawled_here.get(path)).json()
        return list(body.get("nodes", {})) == ["198.51.100.99:8333"]

    await eventually(rewritten)
    (data_dir / f"{TS + 1200}.json").unlink()

    async def gone() -> bool:
        return (await crawled_here.get(path)).status == 404

    await eventually(gone)
    answer = await (await crawled_here.get(path)).json()
    assert answer["error"]["code"] == "snapshot_not_found"
    listed = await (await crawled_here.get("/api/v1/snapshots/?limit=100")).json()
    assert TS + 1200 not in [s["timestamp"] for s in listed["results"]]


async def test_an_unusable_crawl_file_is_404_and_logged_once(
    client: Client, data_dir: Path, caplog: pytest.LogCaptureFixture
):
    write_snapshot(data_dir, TS, export_body(crawl_rows(0)))
    write_snapshot(data_dir, TS + 600, export_body(crawl_rows(1)))
    (data_dir / f"{TS - 600}.json").write_bytes(b'[["203.0.113.5", 8333, 7')  # torn
    await client.app[NETWORKS][0].refresher.refresh()
    with caplog.at_level(logging.WARNING, logger="crawldash.live.snapshot.past_crawls"):
        for _ in range(3):
            answer = await client.get(f"/api/v1/snapshots/{TS - 600}/")
            assert answer.status == 404
            assert (await answer.json())["error"]["code"] == "snapshot_not_found"
    logged = [r for r in caplog.records if r.name == "crawldash.live.snapshot.past_crawls"]
    assert len(logged) == 1
    assert "does not decode" in logged[0].getMessage()
    assert (await client.get(f"/api/v1/snapshots/{TS}/")).status == 200  # the others serve


@READS
async def test_field_summaries_of_latest_and_older(crawled: Client):
    coordinates = await (await crawled.get("/api/v1/snapshots/latest/?field=coordinates")).json()
    assert coordinates["timestamp"] == TS + 600 * (CRAWLS - 1)
    assert coordinates["coordinates"] == [[0.0, 0.0], [52.52, 13.405], [59.8983, 30.2618]]
    agents = await (await crawled.get(f"/api/v1/snapshots/{TS}/?field=user_agents")).json()
    assert agents["user_agents"] == ["/Satoshi:26.0.0/", "/Satoshi:27.0.0/"]
    assert agents["total_nodes"] == 3
    assert "nodes" not in agents
    bad = await crawled.get("/api/v1/snapshots/latest/?field=nodes")
    assert bad.status == 400
    assert (await bad.json())["error"]["code"] == "invalid_field"


@READS
@pytest.mark.parametrize(
    "spelled", [f"{IPV6}-8334", "[2001:DB8:0::7]-8334", "2001:0db8:0:0:0:0:0:7-8334"]
)
async def test_node_status_takes_ipv6_in_any_spelling(crawled: Client, spelled: str):
    answer = await (await crawled.get(f"/api/v1/nodes/{spelled}/")).json()
    assert answer["address"] == IPV6
    assert answer["port"] == 8334
    assert answer["status"] == "UP"
    assert answer["presence"] == {
        "crawls": CRAWLS,
        "seen": CRAWLS,
        "first_seen": TS,
        "last_seen": TS + 600 * (CRAWLS - 1),
    }


@READS
async def test_node_status_presence_matches_check_for_a_tor_node(crawled: Client):
    answer = await (await crawled.get(f"/api/v1/nodes/{ONION.upper()}-8333/")).json()
    check = await (await crawled.get("/api/check", params={"address": f"{ONION}:8333"})).json()
    assert answer["status"] == "UP"
    assert answer["address"] == ONION
    assert answer["presence"] == check["presence"]
    assert answer["presence"]["seen"] == CRAWLS // 2
    assert answer["data"][12] == "Tor network"


@READS
async def test_node_list_filters_and_pages(crawled: Client):
    german = await (await crawled.get("/api/v1/nodes/?country=de")).json()
    assert german["count"] == 1
    assert german["results"][0]["address"] == "192.0.2.44:8333"
    assert german["results"][0]["data"][7] == "DE"
    searched = await (await crawled.get("/api/v1/nodes/?q=EXAMPLE.DE")).json()
    assert [r["address"] for r in searched["results"]] == ["192.0.2.44:8333"]
    first = await (await crawled.get("/api/v1/nodes/?limit=3")).json()
    assert first["count"] == 4
    assert len(first["results"]) == 3
    assert first["previous"] is None
    assert first["next"] == str(crawled.make_url("/api/v1/nodes/?limit=3&page=2"))  # absolute
    second = await (await crawled.get(URL(first["next"]).path_qs)).json()
    assert len(second["results"]) == 1
    assert second["next"] is None
    assert second["previous"].endswith("page=1")
    every = [r["address"] for r in first["results"] + second["results"]]
    assert every == sorted(every)  # by address, as in the catalog


async def test_the_list_pages_follow_new_crawls(crawled_here: Client, data_dir: Path):
    await watching(crawled_here)
    newest = TS + 600 * CRAWLS
    nodes = {"203.0.113.5:8333": row("203.0.113.5")[2:], "192.0.2.1:8333": row("192.0.2.1")[2:]}
    write_snapshot(data_dir, newest, api_body(newest, nodes))  # the v1 form, as bitnodes.io

    async def listed() -> bool:
        page = await (await crawled_here.get("/api/v1/snapshots/?limit=1")).json()
        return bool(page["results"][0]["timestamp"] == newest)

    await eventually(listed)
    page = await (await crawled_here.get("/api/v1/snapshots/?limit=1")).json()
    assert page["count"] == CRAWLS + 1
    assert page["results"][0]["total_nodes"] == 2


async def test_a_crawl_file_removed_after_it_was_listed_is_not_found(tmp_path: Path):
    async def load(path: Path, timestamp: int) -> ArchivedSnapshot:
        return await asyncio.to_thread(load_archived, path, timestamp, Rules(10**8))

    archive = Archive(tmp_path, load)
    listed = {TS: (f"{TS}.json", FileVersion(size=10, mtime_ns=1))}  # listed, then removed
    assert await archive.get(TS, listed) is None
    write_snapshot(tmp_path, TS, export_body(crawl_rows(0)))
    version = FileVersion.of((tmp_path / f"{TS}.json").stat())
    found = await archive.get(TS, {TS: (f"{TS}.json", version)})
    assert found is not None
    assert found.version == version
