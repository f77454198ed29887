"""The bounded history, its answers, and its index across restarts."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import msgspec
import pytest

from crawldash.app import NETWORKS, create_app
from crawldash.crawl.decode import Rules
from crawldash.crawl.files import list_data_dir
from crawldash.live import bodies
from crawldash.live.loader.client import LoaderClient
from crawldash.live.refreshing.refresher import Refresher
from crawldash.live.refreshing.watcher import Watcher
from crawldash.live.state import State
from crawldash.live.stores import history as history_module
from crawldash.live.stores.history import History, HistoryEntry
from crawldash.live.stores.index_files import HistoryStore, PresenceStore
from crawldash.settings.serve import Settings

from .conftest import eventually
from .factories import export_body, rows, write_snapshot
from .process import PATIENCE

TS = 1_700_000_000


def points(history: History, limit: int = 1000) -> list[tuple[int, int]]:
    return [(p["timestamp"], p["reachable"]) for p in msgspec.json.decode(history.body(limit).body)]


def test_history_is_bounded_sorted_and_replaces_by_timestamp():
    history = History(3)
    for timestamp in (30, 10, 20, 40):
        history.record(HistoryEntry(timestamp, timestamp))
    assert points(history) == [(20, 20), (30, 30), (40, 40)]
    assert not history.record(HistoryEntry(5, 5))  # older than all while full: dropped
    assert history.record(HistoryEntry(25, 1))  # inside the window: the oldest makes room
    assert points(history) == [(25, 1), (30, 30), (40, 40)]
    assert history.record(HistoryEntry(30, 99))
    assert points(history, 2) == [(30, 99), (40, 40)]
    assert not history.record(HistoryEntry(30, 99))
    assert len(history) == 3


def test_history_body_is_encoded_once_per_change():
    history = History(10)
    history.record(HistoryEntry(1, 1))
    first = history.body(144)
    assert history.body(144) is first
    history.record(HistoryEntry(2, 2))
    assert history.body(144) is not first
    assert points(history) == [(1, 1), (2, 2)]


def test_store_round_trips_and_is_per_data_dir(tmp_path: Path):
    a = HistoryStore.for_data_dir(tmp_path / "state", tmp_path / "a")
    b = HistoryStore.for_data_dir(tmp_path / "state", tmp_path / "b")
    assert a.path != b.path
    entries = [HistoryEntry(1, 10, 100, 5), HistoryEntry(2, 20)]
    a.save(entries)
    assert a.load() == entries
    assert b.load() == []
    assert not list((tmp_path / "state").glob(".*tmp"))  # no temporary files left behind


def test_unreadable_index_is_rebuilt_and_unwritable_one_raises(tmp_path: Path):
    store = HistoryStore(tmp_path / "index.json")
    store.path.write_bytes(b"{torn")
    assert store.load() == []
    blocked = HistoryStore(tmp_path / "a-file" / "index.json")
    (tmp_path / "a-file").write_text("not a folder")
    with pytest.raises(FileExistsError):
        blocked.save([HistoryEntry(1, 1)])


async def test_points_of_pruned_files_survive_a_restart(aiohttp_client, settings, data_dir):
    for i in range(4):
        write_snapshot(data_dir, TS + 600 * i, export_body(rows(10 + i)))
    app = create_app(settings)
    client = await aiohttp_client(app)
    first = await (await client.get("/api/history")).json()
    assert [p["reachable"] for p in first] == [10, 11, 12, 13]
    await client.close()
    for i in range(3):  # the crawler prunes its older files
        (data_dir / f"{TS + 600 * i}.json").unlink()
    client = await aiohttp_client(create_app(settings))
    assert await (await client.get("/api/history")).json() == first


async def test_unwritable_state_dir_runs_from_memory(aiohttp_client, tmp_path, data_dir, caplog):
    (tmp_path / "blocked").write_text("a file where the state folder should be")
    settings = Settings(data_dir=data_dir, state_dir=tmp_path / "blocked" / "state")
    write_snapshot(data_dir, TS, export_body(rows(3)))
    write_snapshot(data_dir, TS + 600, export_body(rows(4)))
    client = await aiohttp_client(create_app(settings))
    history = await (await client.get("/api/history")).json()
    assert [p["reachable"] for p in history] == [3, 4]

    async def failing() -> bool:
        return client.app[NETWORKS][0].refresher.saver.error is not None

    await eventually(failing)
    health = await (await client.get("/healthz")).json()
    assert "the history index cannot be written" in health["warnings"][0]
    await client.close()
    said = [r for r in caplog.records if "cannot write the index" in r.getMessage()]
    # Once per index (history, presence): the retries within 10 s are not logged again.
    assert len(said) == 2
    assert [("/history-" in r.getMessage(), "/presence-" in r.getMessage()) for r in said] in (
        [(True, False), (False, True)],
        [(False, True), (True, False)],
    )
    assert {r.levelno for r in said} == {logging.WARNING}


async def test_rewritten_file_is_counted_again_at_start(aiohttp_client, settings, data_dir):
    write_snapshot(data_dir, TS, export_body(rows(3)))
    write_snapshot(data_dir, TS + 600, export_body(rows(4)))
    client = await aiohttp_client(create_app(settings))
    await client.close()
    write_snapshot(data_dir, TS, export_body(rows(8)))
    client = await aiohttp_client(create_app(settings))
    history = await (await client.get("/api/history")).json()
    assert [p["reachable"] for p in history] == [8, 4]


def test_a_listing_names_only_the_crawls_that_changed(data_dir: Path):
    for i in range(3):
        write_snapshot(data_dir, 1_700_000_000 + 600 * i, export_body(rows(2)))
    first = list_data_dir(data_dir)
    assert first.changed == set(first.snapshots)
    assert list_data_dir(data_dir, first).changed == set()
    write_snapshot(data_dir, 1_700_000_000, export_body(rows(5)))  # rewritten
    write_snapshot(data_dir, 1_700_003_000, export_body(rows(1)))  # new
    assert list_data_dir(data_dir, first).changed == {1_700_000_000, 1_700_003_000}


async def test_refreshes_count_new_and_rewritten_older_crawls(serve, data_dir, monkeypatch):
    monkeypatch.setattr("crawldash.app.BACKFILL_DELAY", 60)  # only this test's refreshes
    monkeypatch.setattr(Watcher, "run", _idle)  # count here: the watcher's would race them
    newest = 1_700_006_000
    write_snapshot(data_dir, newest, export_body(rows(9)))
    client = await serve()
    refresher = client.app[NETWORKS][0].refresher
    for i in range(3):  # older crawls appear after start-up
        write_snapshot(data_dir, newest - 600 * (i + 1), export_body(rows(i + 1)))
    history = client.app[NETWORKS][0].state.history
    await refresher.refresh(count_budget=2)  # a backlog: left to the counting processes'
    assert len(history) == 1  # batches, so that no refresh (a new crawl's) waits behind it
    await refresher.refresh(count_budget=3)  # a few: counted by the refresh itself
    assert len(history) == 4
    write_snapshot(data_dir, newest - 1800, export_body(rows(7)))  # an older crawl rewritten
    await refresher.refresh()
    points = await (await client.get("/api/history")).json()
    assert [p["reachable"] for p in points] == [7, 2, 1, 9]


async def _idle(_watcher: Watcher, stop: asyncio.Event) -> None:
    await stop.wait()


def test_a_listing_can_look_again_at_named_files_only(data_dir: Path):
    for i in range(3):
        write_snapshot(data_dir, 1_700_000_000 + 600 * i, export_body(rows(2)))
    first = list_data_dir(data_dir)
    write_snapshot(data_dir, 1_700_000_000, export_body(rows(5)))  # rewritten, not named
    write_snapshot(data_dir, 1_700_003_000, export_body(rows(1)))  # new, named
    (data_dir / "1700000600.json").unlink()  # deleted, named
    names = ["1700003000.json", "1700000600.json", "notes.txt"]
    second = list_data_dir(data_dir, first, only=names)
    assert second.changed == {1_700_003_000}
    assert second.newest_first == [1_700_003_000, 1_700_001_200, 1_700_000_000]
    assert second.snapshots[1_700_000_000] == first.snapshots[1_700_000_000]
    assert list_data_dir(data_dir, second).changed == {1_700_000_000}  # a whole listing


def test_a_listing_of_named_files_agrees_with_a_whole_listing(data_dir: Path):
    for i in range(0, 10, 2):
        write_snapshot(data_dir, 1_700_000_000 + 600 * i, export_body(rows(2)))
    first = list_data_dir(data_dir)
    changes = {
        1_700_000_600: rows(1),  # new, between two
        1_700_009_000: rows(1),  # new, the newest
        1_699_999_400: rows(1),  # new, the oldest
        1_700_002_400: rows(3),  # rewritten
    }
    for timestamp, body in changes.items():
        write_snapshot(data_dir, timestamp, export_body(body))
    (data_dir / "1700001200.json").unlink()
    named = [f"{t}.json" for t in changes] + ["1700001200.json"]
    second = list_data_dir(data_dir, first, only=named)
    whole = list_data_dir(data_dir)
    assert second.newest_first == whole.newest_first
    assert second.names == whole.names
    assert second.snapshots == whole.snapshots
    assert second.changed == set(changes)
    assert list_data_dir(data_dir, second, only=["1700000000.json"]).newest_first is (
        second.newest_first
    )  # nothing added or removed: the order is reused, not sorted again


def refresher_over(data_dir: Path, tmp_path: Path) -> Refresher:
    """A refresher of a fresh state over ``data_dir``, its indexes in ``tmp_path``."""
    return Refresher(
        State(history_size=10),
        HistoryStore(tmp_path / "history.json"),
        PresenceStore(tmp_path / "presence.msgpack"),
        LoaderClient(),
        data_dir=data_dir,
        rules=Rules(10**7),
    )


async def test_refreshes_list_the_whole_folder_now_and_then(tmp_path, data_dir, monkeypatch):
    write_snapshot(data_dir, 1_700_000_000, export_body(rows(3)))
    refresher = refresher_over(data_dir, tmp_path)
    state = refresher.state
    await refresher.refresh()
    write_snapshot(data_dir, 1_700_000_600, export_body(rows(4)))
    await refresher.refresh(changed={"status.json"})  # the new crawl went unseen
    assert state.snapshot is not None
    assert state.snapshot.timestamp == 1_700_000_000
    monkeypatch.setattr("crawldash.live.refreshing.refresher.FULL_LISTING_SECONDS", 0.0)
    await refresher.refresh(changed={"status.json"})
    assert state.snapshot.timestamp == 1_700_000_600
    await refresher.saver.flush()


async def test_the_index_is_written_at_most_once_a_minute_unless_flushed(tmp_path, data_dir):
    """Crawls arriving in a burst cost one save, not one each; flush() and shutdown write
    what waits at once."""

    def on_disk() -> list[int]:
        return [e.timestamp for e in store.load()]

    refresher = refresher_over(data_dir, tmp_path)
    state, store = refresher.state, refresher.store
    saver = refresher.saver
    write_snapshot(data_dir, TS, export_body(rows(3)))
    await refresher.refresh()

    async def saved() -> bool:
        return saver.saved_at is not None

    await eventually(saved)  # the first change is written at once
    assert on_disk() == [TS]
    for i in (1, 2):
        write_snapshot(data_dir, TS + 600 * i, export_body(rows(3 + i)))
        await refresher.refresh()
    assert len(state.history) == 3
    assert saver.waiting  # the burst waits out the minute
    assert on_disk() == [TS]
    await asyncio.wait_for(saver.flush(), PATIENCE)
    assert on_disk() == [TS, TS + 600, TS + 1200]
    write_snapshot(data_dir, TS + 1800, export_body(rows(6)))
    await refresher.refresh()
    assert saver.waiting
    assert on_disk() == [TS, TS + 600, TS + 1200]
    await asyncio.wait_for(saver.close(), PATIENCE)  # shutdown writes what waits
    assert on_disk() == [TS, TS + 600, TS + 1200, TS + 1800]
    await refresher.presence_saver.close()


async def test_a_refresh_can_count_only_as_many_bytes_of_crawls_as_allowed(tmp_path, data_dir):
    """At start-up only a few small older crawls are counted before the server listens."""
    for i in range(4):
        write_snapshot(data_dir, 1_700_000_000 + 600 * i, export_body(rows(20)))
    size = (data_dir / "1700000000.json").stat().st_size
    refresher = refresher_over(data_dir, tmp_path)
    state = refresher.state
    await refresher.refresh(count_bytes=2 * size)
    assert [e.timestamp for e in state.history.entries()] == [
        1_700_000_600,
        1_700_001_200,
        1_700_001_800,
    ]  # the newest, served, then the two newest older crawls that fit
    await refresher.refresh()
    assert len(state.history) == 4
    await refresher.saver.flush()


async def test_distinct_limits_cost_no_more_compression_than_a_handful(
    aiohttp_client, settings, data_dir, monkeypatch
):
    """Cycling 1,000 limit values with br and gzip compresses only the few standard lengths
    (a day, a week, a month, all) once each; every answer is still right."""
    store = HistoryStore.for_data_dir(settings.resolved_state_dir, data_dir)
    store.save([HistoryEntry(TS - 600 * i, 100 + i % 7) for i in range(5000, 0, -1)])
    write_snapshot(data_dir, TS, export_body(rows(3)))
    compressions: list[str] = []
    encoded = bodies.encoded

    def counting(identity, coding):
        compressions.append(coding)
        return encoded(identity, coding)

    monkeypatch.setattr(history_module, "encoded", counting)
    client = await aiohttp_client(create_app(settings))
    for limit in [*range(1, 1001), 144, 1008, 4320, 10**9]:
        for coding in ("br", "gzip"):
            response = await client.get(
                f"/api/history?limit={limit}", headers={"Accept-Encoding": coding}
            )
            points = await response.json()
            assert len(points) == min(limit, 5001)
    assert len(compressions) <= 8, compressions  # 4 lengths x 2 codings, once each


async def test_a_failing_index_save_is_retried_and_reported(aiohttp_client, settings, data_dir):
    state_dir = settings.resolved_state_dir
    state_dir.parent.mkdir(parents=True, exist_ok=True)
    state_dir.write_text("a file where the state folder should be")
    write_snapshot(data_dir, TS, export_body(rows(3)))
    client = await aiohttp_client(create_app(settings))
    saver = client.app[NETWORKS][0].refresher.saver

    async def failed() -> bool:
        return bool(saver.failures >= 1)

    await eventually(failed)
    metrics = await (await client.get("/metrics")).text()
    assert (
        'crawldash_history_index_save_failures_total{network="main"} 1.0' in metrics
        or saver.failures > 1
    )
    state_dir.unlink()  # the disk has room again, say

    async def saved() -> bool:
        return saver.saved_at is not None and saver.error is None

    await eventually(saved)  # retried with back-off, not given up
    presence_saver = client.app[NETWORKS][0].refresher.presence_saver

    async def presence_saved() -> bool:  # it failed beside the history, and is retried too
        return presence_saver.error is None

    await eventually(presence_saved)
    assert [e.timestamp for e in HistoryStore.for_data_dir(state_dir, data_dir).load()] == [TS]
    metrics = await (await client.get("/metrics")).text()
    assert "crawldash_history_index_saved_timestamp_seconds" in metrics
    assert "warnings" not in await (await client.get("/healthz")).json()
