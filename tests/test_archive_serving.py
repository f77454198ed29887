"""Crawls pruned from the data folder, served from the archive: `/api/v1/snapshots/` still
lists them, and `/api/v1/snapshots/<ts>/` answers each with the bytes and validators it
had before the prune, over a real socket."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import brotli

from crawldash.app import LOADER, NETWORKS
from crawldash.archive.layout import look
from crawldash.archive.pruned import load_pruned
from crawldash.crawl.decode import Snapshot, decode_snapshot
from crawldash.live.snapshot.past_crawls import Archive
from tests.conftest import Client, Serve, eventually, patiently, until_served, watching
from tests.test_archive import END, run_archive, write_crawls

HEADERS = ("ETag", "Last-Modified", "Content-Type", "Content-Encoding")


async def answers(client: Client, timestamps: list[int]) -> dict[tuple[int, str], Any]:
    """Every crawl's whole snapshot, and its user agents, in identity and br."""
    got = {}
    for timestamp in timestamps:
        for form in ("", "?field=user_agents"):
            for coding in ("identity", "br"):
                response = await patiently(
                    client,
                    f"/api/v1/snapshots/{timestamp}/{form}",
                    headers={"Accept-Encoding": coding},
                    auto_decompress=False,
                )
                assert response.status == 200, await response.text()
                headers = tuple(response.headers.get(name) for name in HEADERS)
                got[timestamp, form + coding] = (await response.read(), headers)
    return got


async def listing(client: Client) -> list[Any]:
    """Every page of ``/api/v1/snapshots/``."""
    results: list[Any] = []
    page = 1
    while True:
        response = await client.get(f"/api/v1/snapshots/?limit=100&page={page}")
        assert response.status == 200
        body = await response.json()
        results += body["results"]
        if body["next"] is None:
            assert body["count"] == len(results)
            return results
        page += 1


async def test_pruned_crawls_are_listed_and_served_byte_for_byte(
    serve: Serve, data_dir: Path, tmp_path: Path
) -> None:
    archive = tmp_path / "archive"
    counts = write_crawls(data_dir, crawls=24)  # over a day boundary: a day compacted
    run_archive(data_dir, archive)
    assert len(look(archive, "main").days) == 2
    client = await serve(archive_dir=archive, history_size=1000)
    await until_served(client, END)
    await watching(client)

    async def counted() -> bool:
        status = await (await client.get("/api/status")).json()
        return bool(status["history_complete"])

    await eventually(counted, within=60)
    older = sorted(counts)[:-1]
    before, listed = await answers(client, older), await listing(client)
    assert len(listed) == len(counts)
    for timestamp in older:
        (data_dir / f"{timestamp}.json").unlink()

    async def pruned() -> bool:
        return client.app[NETWORKS][0].state.crawl_files == [END]

    await eventually(pruned)
    runs = client.app[LOADER].runs
    after = await answers(client, older)
    assert after == before
    assert await listing(client) == listed
    loads = client.app[LOADER].runs - runs
    assert loads >= 1
    again = await answers(client, older[-3:])  # the last few asked for are cached
    assert client.app[LOADER].runs - runs == loads
    assert again == {key: before[key] for key in again}


async def test_archived_crawls_older_than_the_history_are_listed_and_served(
    serve: Serve, data_dir: Path, tmp_path: Path
) -> None:
    archive = tmp_path / "archive"
    write_crawls(data_dir, crawls=24)
    decoded = decoded_crawls(data_dir)
    run_archive(data_dir, archive)
    for timestamp in sorted(decoded)[:-1]:  # pruned: only the newest crawl's file stays
        (data_dir / f"{timestamp}.json").unlink()
    client = await serve(archive_dir=archive, history_size=3)
    await until_served(client, END)

    async def all_listed() -> bool:
        return len(await listing(client)) == len(decoded)

    await eventually(all_listed)  # the server's look at the archive
    listed = {ref["timestamp"]: ref for ref in await listing(client)}
    assert list(listed) == sorted(decoded, reverse=True)  # newest first
    for timestamp, snapshot in decoded.items():
        assert listed[timestamp]["total_nodes"] == len(snapshot.nodes)
        assert listed[timestamp]["latest_height"] == snapshot.latest_height
    oldest = min(decoded)  # far older than the 3 crawls the history holds
    path = f"/api/v1/snapshots/{oldest}/"
    assert listed[oldest]["url"].endswith(path)
    response = await patiently(client, path)
    assert response.status == 200, await response.text()
    body = await response.json()
    assert body["total_nodes"] == len(decoded[oldest].nodes)
    assert list(body["nodes"]) == list(decoded[oldest].nodes)  # in the file's order


def decoded_crawls(folder: Path) -> dict[int, Snapshot]:
    """Every crawl of ``folder``, decoded as crawldash serves it."""
    return {
        int(path.stem): decode_snapshot(path.read_bytes(), int(path.stem))
        for path in folder.glob("*.json")
    }


async def test_a_crawl_neither_in_the_folder_nor_archived_is_404(
    serve: Serve, data_dir: Path, tmp_path: Path
) -> None:
    archive = tmp_path / "archive"
    write_crawls(data_dir, crawls=3)
    run_archive(data_dir, archive)
    client = await serve(archive_dir=archive)
    await until_served(client, END)
    response = await client.get(f"/api/v1/snapshots/{END - 86_400}/")
    assert response.status == 404
    assert (await response.json())["error"]["code"] == "snapshot_not_found"


async def test_a_pruned_crawl_is_compressed_in_a_coding_on_its_first_request_only(
    data_dir: Path, tmp_path: Path
) -> None:
    archive = tmp_path / "archive"
    counts = write_crawls(data_dir, crawls=3)
    run_archive(data_dir, archive)
    archived = load_pruned(archive, "main", min(counts))
    assert archived is not None
    assert archived.coded == {}  # read back, encoded, and compressed in no coding yet
    older = Archive(data_dir, load=None)  # type: ignore[arg-type]  # nothing to load here
    identity = archived.forms[None]
    br = await older.representation(archived, None, "br")
    assert brotli.decompress(br.body) == identity.body
    assert br.etag == identity.etag[:-1] + '-br"'
    assert br.headers["Content-Encoding"] == "br"
    assert set(archived.coded) == {(None, "br")}  # the coding asked for, and no other
    assert await older.representation(archived, None, "br") is br  # kept, not made again
    assert await older.representation(archived, None, "identity") is identity
    agents = await older.representation(archived, "user_agents", "gzip")
    assert gzip.decompress(agents.body) == archived.forms["user_agents"].body
    assert set(archived.coded) == {(None, "br"), ("user_agents", "gzip")}


async def test_without_an_archive_the_crawls_the_history_lacks_are_not_listed(
    serve: Serve, data_dir: Path
) -> None:
    # A folder may hold many more crawls than the history keeps: only those it counted are
    # listed (and their count is the page's), newest first, each with its nodes and height.
    write_crawls(data_dir, crawls=6)
    decoded = decoded_crawls(data_dir)
    client = await serve(history_size=3)
    await until_served(client, END)

    async def counted() -> bool:
        status = await (await client.get("/api/status")).json()
        return bool(status["history_complete"])

    await eventually(counted, within=60)
    newest = sorted(decoded, reverse=True)[:3]
    listed = [(r["timestamp"], r["total_nodes"], r["latest_height"]) for r in await listing(client)]
    assert listed == [(t, len(decoded[t].nodes), decoded[t].latest_height) for t in newest]
