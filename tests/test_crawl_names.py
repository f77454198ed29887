"""Which file names are crawls, one rule for every reader of the folder: a timestamp in
decimal with no leading zero, from 1 to the end of year 9999. A folder holding other names
that look like crawls (``0.json``, ``253402300800.json``, ``0<timestamp>.json``) beside
good crawls is served, listed and archived as if they were not there: by a real server over
a socket, and by ``crawldash archive`` as a process."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from crawldash.archive.layout import look
from crawldash.crawl.files import snapshot_timestamp
from tests.conftest import Client, Serve, eventually, until_served, watching
from tests.factories import export_body, rows, write_snapshot
from tests.test_archive import END, metric, rows_per_crawl, run_archive, write_crawls
from tests.test_archive_serving import listing

YEAR_10000 = 253_402_300_800  # 10000-01-01T00:00:00Z: no date names its day


def not_crawls(folder: Path, like: int, newer: int) -> list[str]:
    """Files named like crawls but not crawls, each a copy of the good crawl ``like``: the
    year 10000, the time 0, and a newer crawl (and ``like`` itself) with a leading zero."""
    names = ["0.json", f"{YEAR_10000}.json", f"0{newer}.json", f"0{like}.json"]
    for name in names:
        shutil.copy(folder / f"{like}.json", folder / name)
    return names


@pytest.mark.parametrize(
    ("name", "timestamp"),
    [
        ("1795650000.json", 1795650000),
        ("1.json", 1),
        (f"{YEAR_10000 - 1}.json", YEAR_10000 - 1),
        ("01795650000.json", None),
        ("0.json", None),
        ("00.json", None),
        (f"{YEAR_10000}.json", None),
        ("999999999999.json", None),
        ("+1795650000.json", None),
        ("1795650000.JSON", None),
        ("١٧٩٥٦٥٠٠٠٠.json", None),  # Arabic-Indic digits: int() would take them
    ],
    ids=[
        "crawl",
        "one",
        "last-of-9999",
        "leading-zero",
        "zero",
        "zeros",
        "year-10000",
        "twelve-nines",
        "plus",
        "upper-case",
        "other-digits",
    ],
)
def test_the_rule(name: str, timestamp: int | None) -> None:
    assert snapshot_timestamp(name) == timestamp


async def snapshot_status(client: Client, path: str) -> tuple[int, Any]:
    response = await client.get(f"/api/v1/snapshots/{path}/")
    return response.status, await response.json()


async def test_serve_lists_and_serves_only_the_crawls(serve: Serve, data_dir: Path) -> None:
    counts = write_crawls(data_dir, crawls=3, end=END - 1200)
    good = sorted(counts)
    names = not_crawls(data_dir, good[0], newer=END - 600)
    client = await serve()
    await until_served(client, good[-1])  # not END - 600, named with a leading zero
    await watching(client)

    async def counted() -> bool:
        status = await (await client.get("/api/status")).json()
        return bool(status["history_complete"])

    await eventually(counted)
    assert [r["timestamp"] for r in await listing(client)] == good[::-1]
    for timestamp in good:
        status, body = await snapshot_status(client, str(timestamp))
        assert (status, body["total_nodes"]) == (200, counts[timestamp])
    for path in ["0", str(YEAR_10000), str(END - 600), f"0{good[0]}", f"0{good[-1]}"]:
        status, body = await snapshot_status(client, path)
        assert (status, body["error"]["code"]) == (404, "snapshot_not_found"), path
    history = await (await client.get("/api/history")).json()
    assert [point["timestamp"] for point in history] == good

    # the watcher's names follow the rule too: a leading-zero crawl written now is passed
    # over, and the next good crawl is served and listed after the others
    (data_dir / ".zero.tmp").write_bytes(export_body(rows(7)))
    os.replace(data_dir / ".zero.tmp", data_dir / f"0{END - 300}.json")
    write_snapshot(data_dir, END, export_body(rows(5)))
    await until_served(client, END)
    await eventually(counted)
    assert [r["timestamp"] for r in await listing(client)] == [END, *good[::-1]]
    assert (await snapshot_status(client, str(END - 300)))[0] == 404
    assert all((data_dir / name).exists() for name in names)  # passed over, not removed


def test_archive_archives_the_crawls_and_exits_0(tmp_path: Path) -> None:
    data, archive = tmp_path / "data", tmp_path / "archive"
    counts = write_crawls(data, crawls=30, interval=3600)  # complete days, built whole
    good = sorted(counts)
    not_crawls(data, good[0], newer=good[-1] + 600)
    stderr = run_archive(data, archive)  # exits 0, no traceback
    assert f"archived {len(counts)} crawls" in stderr
    assert rows_per_crawl(archive) == counts
    run_archive(data, archive)  # a rerun archives nothing twice
    assert rows_per_crawl(archive) == counts
    # a part an earlier version archived from 0.json is no crawl's: not listed, not served
    day = archive / "network=main" / "date=1970-01-01"
    day.mkdir()
    shutil.copy(next(archive.rglob("*.parquet")), day / "part-0.parquet")
    assert look(archive, "main").files.keys() == counts.keys()
    run_archive(data, archive)


async def test_serve_s_catch_up_archives_the_crawls(
    serve: Serve, data_dir: Path, tmp_path: Path
) -> None:
    archive = tmp_path / "archive"
    counts = write_crawls(data_dir, crawls=4, end=END - 600)
    not_crawls(data_dir, min(counts), newer=min(counts) - 600)  # older: not served first
    client = await serve(archive_dir=archive)
    await until_served(client, max(counts))
    await watching(client)
    counts |= write_crawls(data_dir, crawls=1, end=END)  # its load archives, then catches up
    await until_served(client, END)

    async def all_archived() -> bool:
        return look(archive, "main").files.keys() == counts.keys()

    async def shown() -> bool:
        metrics = await (await client.get("/metrics")).text()
        return metric(metrics, "crawldash_archive_crawls") == len(counts)

    await eventually(all_archived)
    await eventually(shown)
    metrics = await (await client.get("/metrics")).text()
    assert metric(metrics, "crawldash_archive_failing") == 0
    assert rows_per_crawl(archive) == counts
