"""The newest crawl is loaded in the loader process while the server starts: the first
load takes that result, once, and only if it is the same call on the same file version."""

from __future__ import annotations

import os
import time
from pathlib import Path

from crawldash.app import LOADER, create_app
from crawldash.crawl.decode import Rules
from crawldash.live.loader.client import LoaderClient
from crawldash.live.loader.head_start import newest_snapshot, start_newest_load
from crawldash.settings.serve import Settings

from .conftest import eventually
from .factories import export_body, rows, write_snapshot
from .loader_jobs import count_calls, die_the_first_time, fail_the_first_time

TS = 1_700_000_000


async def test_the_next_run_of_the_same_call_takes_the_head_start(tmp_path: Path):
    loader = LoaderClient()
    tally = str(tmp_path / "tally")
    loader.head_start(count_calls, tally)
    try:
        assert await loader.run(count_calls, tally) == 1  # the head start's own result
        assert await loader.run(count_calls, tally) == 2  # taken once: this one is called
    finally:
        await loader.close()


async def test_a_head_start_on_another_call_is_dropped(tmp_path: Path):
    loader = LoaderClient()
    first, other = str(tmp_path / "first"), str(tmp_path / "other")
    loader.head_start(count_calls, first)
    assert loader._ahead is not None
    head_start = loader._ahead[2]
    try:
        assert await loader.run(count_calls, other) == 1
        assert head_start.result(timeout=20)[1] == 1  # (its parts, its result)
        assert await loader.run(count_calls, first) == 2  # the head start's was dropped
    finally:
        await loader.close()


async def test_a_head_start_that_failed_or_died_is_called_again(tmp_path: Path):
    loader = LoaderClient()
    loader.start()
    try:
        for job in (fail_the_first_time, die_the_first_time):
            marker = str(tmp_path / job.__name__)
            loader.head_start(job, marker)
            assert await loader.run(job, marker) not in (None, os.getpid())
        assert loader.deaths == 1
    finally:
        await loader.close()


def test_the_newest_snapshot_is_named_by_its_timestamp_not_ahead_of_the_clock(tmp_path: Path):
    for name in ("1700000000.json", "1700000600.json", "status.json", "9999999999.json"):
        (tmp_path / name).write_text("{}")
    (tmp_path / "1800000000.txt").write_text("{}")
    (tmp_path / "01700001200.json").write_text("{}")  # a leading zero: not a crawl's name
    assert newest_snapshot(tmp_path, 1_700_000_000, 3600) == tmp_path / "1700000600.json"
    assert newest_snapshot(tmp_path / "missing", 1_700_000_000, 3600) is None
    assert newest_snapshot(tmp_path, 1_000_000_000, 3600) is None


async def test_a_crawl_rewritten_after_its_head_start_is_read_again(
    aiohttp_client, settings: Settings, data_dir: Path
):
    """The first load serves what the head start read, as the version it read: the file
    rewritten since (the crawler writes in place) is loaded again, not taken as served."""
    path = write_snapshot(data_dir, TS, export_body(rows(3)))
    loader = LoaderClient()
    assert start_newest_load(loader, data_dir, Rules.of(settings)) == path
    assert loader._ahead is not None
    loader._ahead[2].result(timeout=20)  # read and prepared: 3 nodes
    write_snapshot(data_dir, TS, export_body(rows(4)))
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))
    client = await aiohttp_client(create_app(settings, loader))
    assert client.app[LOADER] is loader

    async def rewritten() -> bool:
        body = await (await client.get("/api/snapshot")).json()
        return bool(body["total_nodes"] == 4)

    await eventually(rewritten)
    assert loader.runs >= 2  # the head start, and the load of the file rewritten
