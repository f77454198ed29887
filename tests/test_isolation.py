"""One bad, odd or unreadable entry of the folder is that entry's problem: the newest good
crawl stays in service, the reason is logged once, and the folder itself is watched."""

from __future__ import annotations

import logging
import os
import shutil
import time
from functools import partial
from pathlib import Path

from crawldash.app import NETWORKS, create_app
from crawldash.crawl.files import read_file
from crawldash.live.stores.history import HistoryEntry
from crawldash.live.stores.index_files import HistoryStore
from crawldash.ops.watching import REJECTION_KINDS
from crawldash.settings.serve import Settings

from .conftest import Client, eventually, watching
from .factories import export_body, rows, write_snapshot, write_status
from .test_operations import key, scrape

NOW = int(time.time()) // 600 * 600
FUTURE = 4_102_444_800  # 2100-01-01


async def served(client: Client) -> int | None:
    response = await client.get("/api/snapshot")
    return (await response.json())["timestamp"] if response.status == 200 else None


def odd_entries(data_dir: Path, newest: int) -> dict[str, str]:
    """Every kind of entry that is not a usable crawl, named as the newest crawls; by kind."""
    names = {kind: f"{newest + 600 * (i + 1)}.json" for i, kind in enumerate(KINDS)}
    (data_dir / names["folder"]).mkdir()
    os.mkfifo(data_dir / names["fifo"])
    (data_dir / names["loop"]).symlink_to(data_dir / names["loop"])
    (data_dir / names["dangling"]).symlink_to(data_dir / "nowhere.json")
    (data_dir / names["nested"]).write_bytes(b"[" * 200_000 + b"]" * 200_000)
    (data_dir / names["empty_crawl"]).write_bytes(b"[]")
    settled = time.time() - 60  # written a minute ago: not a file still being written
    for name in names.values():
        os.utime(data_dir / name, (settled, settled), follow_symlinks=False)
    return names


KINDS = ("folder", "fifo", "loop", "dangling", "nested", "empty_crawl")


async def test_odd_entries_never_stop_the_newest_good_crawl(serve, data_dir, caplog):
    caplog.set_level(logging.WARNING, "crawldash")
    # Named before they were written, as a crawler names crawls (misnamed() passes over one
    # named long after its writing once a later-written crawl is there).
    write_snapshot(data_dir, NOW - 7200, export_body(rows(3)))
    names = odd_entries(data_dir, NOW - 7200)
    client = await serve()
    assert await served(client) == NOW - 7200  # at start-up, whatever else is there
    await watching(client)
    write_snapshot(data_dir, NOW - 3000, export_body(rows(4)))  # newer than all the odd

    async def newest() -> bool:
        return await served(client) == NOW - 3000

    await eventually(newest)
    await client.app[NETWORKS][0].refresher.refresh()
    rejected = [r.getMessage() for r in caplog.records if "file rejected" in r.getMessage()]
    for kind, name in names.items():
        said = [line for line in rejected if f"name={name} " in line]
        assert len(said) == 1, (kind, rejected)  # once each, however often it is refreshed
    metrics = await scrape(client)
    kinds = {
        dict(labels)["kind"]: value
        for (name, labels), value in metrics.items()
        if name == "crawldash_files_rejected_total"
    }
    rejected_now = {"not_a_file": 2, "unreadable": 2, "decode": 1, "empty": 1}
    assert kinds == {**dict.fromkeys(REJECTION_KINDS, 0), **rejected_now}  # the rest at 0
    assert (await client.get("/healthz")).status == 200


async def test_a_bad_status_file_never_delays_a_snapshot(serve, data_dir):
    write_snapshot(data_dir, NOW - 600, export_body(rows(3)))
    os.mkfifo(data_dir / "status.json")  # opened the usual way, this would block for good
    client = await serve()
    await watching(client)
    write_snapshot(data_dir, NOW, export_body(rows(5)))

    async def newest() -> bool:
        return await served(client) == NOW

    await eventually(newest)
    (data_dir / "status.json").unlink()
    (data_dir / "status.json").write_bytes(b'{"state":' * 100_000)  # deep enough to recurse
    write_snapshot(data_dir, NOW + 1, export_body(rows(6)))

    async def newer() -> bool:
        return await served(client) == NOW + 1

    await eventually(newer)
    write_status(data_dir, state="running", updated_at=NOW)

    async def status_read() -> bool:
        return bool((await (await client.get("/api/status")).json())["state"] == "running")

    await eventually(status_read)


async def test_a_crawl_named_from_the_future_pins_nothing(
    aiohttp_client, settings, data_dir, caplog
):
    state_dir = settings.resolved_state_dir
    store = HistoryStore.for_data_dir(state_dir, data_dir)
    store.save([HistoryEntry(NOW - 1200, 7), HistoryEntry(FUTURE, 9)])  # from an older version
    write_snapshot(data_dir, NOW - 600, export_body(rows(3)))
    write_snapshot(data_dir, FUTURE, export_body(rows(2)))
    caplog.set_level(logging.WARNING, "crawldash")
    client = await aiohttp_client(create_app(settings))
    assert await served(client) == NOW - 600  # the file named from the future is not served
    history = await (await client.get("/api/history")).json()
    # A point already held is kept, whatever the clock says (it may be the clock that is
    # wrong), and that is said once.
    assert [p["timestamp"] for p in history] == [NOW - 1200, NOW - 600, FUTURE]
    assert caplog.text.count("ahead of this machine's clock (the latest by") == 1
    snapshot = await client.get("/api/snapshot")
    max_age = int(snapshot.headers["Cache-Control"].rpartition("=")[2])
    assert max_age <= 600  # never more than one crawl interval
    await watching(client)
    write_snapshot(data_dir, NOW, export_body(rows(5)))

    async def newest() -> bool:
        return await served(client) == NOW

    await eventually(newest)
    metrics = await scrape(client)
    assert metrics[key("crawldash_files_rejected_total", kind="future")] == 1
    await client.app[NETWORKS][0].refresher.saver.flush()
    assert FUTURE in [entry.timestamp for entry in store.load()]  # kept, not erased


async def test_deleting_the_served_crawl_serves_the_newest_left(serve, data_dir):
    write_snapshot(data_dir, NOW - 1200, export_body(rows(3)))
    write_snapshot(data_dir, NOW - 600, export_body(rows(4)))
    client = await serve()
    assert await served(client) == NOW - 600
    await watching(client)
    (data_dir / f"{NOW - 600}.json").unlink()

    async def older() -> bool:
        return await served(client) == NOW - 1200

    await eventually(older)
    (data_dir / f"{NOW - 1200}.json").unlink()
    await client.app[NETWORKS][0].refresher.refresh()
    assert await served(client) == NOW - 1200  # nothing usable is left: memory keeps it


async def test_a_removed_or_replaced_data_folder_is_watched_anew(serve, data_dir, caplog):
    write_snapshot(data_dir, NOW - 600, export_body(rows(3)))
    client = await serve()
    await watching(client)
    shutil.rmtree(data_dir)

    async def missing() -> bool:
        response = await client.get("/readyz")
        code = (await response.json()).get("error", {}).get("code")
        return bool(response.status == 503 and code == "no_data_dir")

    await eventually(missing)
    assert any(
        "removed or replaced" in r.getMessage() and r.levelno == logging.WARNING
        for r in caplog.records
    )
    health = await client.get("/healthz")
    assert health.status == 200
    assert "does not exist yet" in (await health.json())["warnings"][0]
    assert await served(client) == NOW - 600  # the last good crawl stays in service
    data_dir.mkdir()
    write_snapshot(data_dir, NOW, export_body(rows(5)))

    async def back() -> bool:
        return await served(client) == NOW

    await eventually(back)
    moved = data_dir.with_name("moved")
    data_dir.rename(moved)  # renamed away, and a new folder in its place
    data_dir.mkdir()

    async def replaced_twice() -> bool:
        return sum("removed or replaced" in r.getMessage() for r in caplog.records) == 2

    await eventually(replaced_twice)  # the new folder is the one watched from now on
    write_snapshot(data_dir, NOW + 600, export_body(rows(6)))

    async def after_rename() -> bool:
        return await served(client) == NOW + 600

    await eventually(after_rename)
    assert (await client.get("/readyz")).status in (200, 503)
    assert (await (await client.get("/readyz")).json()).get("error", {}).get(
        "code"
    ) != "no_data_dir"


async def test_empty_crawls_are_rejected_unless_allowed(aiohttp_client, tmp_path, data_dir):
    write_snapshot(data_dir, NOW - 600, export_body(rows(3)))
    write_snapshot(data_dir, NOW, b"[]")
    strict = Settings(data_dir=data_dir, state_dir=tmp_path / "a")
    client = await aiohttp_client(create_app(strict))
    assert await served(client) == NOW - 600
    await client.close()
    allowing = Settings(data_dir=data_dir, state_dir=tmp_path / "b", allow_empty_crawls=True)
    client = await aiohttp_client(create_app(allowing))
    snapshot = await (await client.get("/api/snapshot")).json()
    assert (snapshot["timestamp"], snapshot["total_nodes"]) == (NOW, 0)


async def test_only_crawls_the_loader_accepts_get_points(serve, data_dir):
    """A broken row costs that row, in the loader as in the count: its crawl gets a point
    with its other rows. A crawl the loader refuses whole gets none."""
    write_snapshot(data_dir, NOW - 2400, export_body(rows(3)))
    bad_height = export_body(rows(2)).replace(b"900000", b'"high"', 1)  # one row broken
    write_snapshot(data_dir, NOW - 1800, bad_height)
    write_snapshot(data_dir, NOW - 1200, export_body(rows(2))[:-20])  # cut short
    write_snapshot(data_dir, NOW - 600, b"[]")
    write_snapshot(data_dir, NOW, export_body(rows(4)))
    for _ in range(2):  # at start-up and after a restart from the index
        client = await serve()
        await eventually(partial(history_complete, client))
        history = await (await client.get("/api/history")).json()
        assert [(p["timestamp"], p["reachable"]) for p in history] == [
            (NOW - 2400, 3),
            (NOW - 1800, 1),
            (NOW, 4),
        ]
        await client.close()


async def history_complete(client: Client) -> bool:
    return bool((await (await client.get("/api/status")).json())["history_complete"])


async def test_history_is_complete_only_when_every_crawl_has_a_point(serve, data_dir):
    write_snapshot(data_dir, NOW - 600 * 400, export_body(rows(2)))
    client = await serve()
    await watching(client)
    for i in range(1, 201):  # 200 crawls in a burst
        write_snapshot(data_dir, NOW - 600 * 400 + 600 * i, export_body(rows(2 + i % 3)))

    async def newest_served() -> bool:
        return await served(client) == NOW - 600 * 200

    await eventually(newest_served)  # the watcher has seen the burst

    async def all_counted() -> bool:
        status = await (await client.get("/api/status")).json()
        history = await (await client.get("/api/history?limit=1000")).json()
        if status["history_complete"]:
            assert len(history) == 201  # never complete with points missing
        return bool(status["history_complete"]) and len(history) == 201

    await eventually(all_counted)


async def test_a_status_from_the_future_is_flagged_and_still_goes_stuck(serve, data_dir):
    write_snapshot(data_dir, NOW, export_body(rows(3)))
    status = write_status(data_dir, state="running", updated_at=FUTURE)
    old = time.time() - 7200
    os.utime(status, (old, old))  # written two hours ago, whatever it claims
    client = await serve(stuck_after=3600)
    body = await (await client.get("/api/status")).json()
    assert body["updated_at_ahead"] is True
    assert (body["stuck"], body["stuck_reason"]) == (True, "no_update")
    readyz = await (await client.get("/readyz")).json()
    assert "status.json has not been updated" in readyz["error"]["message"]


def test_reading_never_allocates_the_limit_up_front(tmp_path: Path):
    """A limit far beyond memory reads a small file as it is (no MemoryError), and a file
    that grows while it is read is read in steps, up to the limit."""
    path = tmp_path / "1700000000.json"
    path.write_bytes(export_body(rows(3)))
    data, _ = read_file(path, 10**15)
    assert data == path.read_bytes()
