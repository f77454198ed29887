"""Faults of the loader and of the clock, made for real: a loader process stopped with
SIGSTOP, a clock hours behind, a crawl named ahead of its writing."""

from __future__ import annotations

import logging
import os
import signal
import time
from pathlib import Path

import pytest

from crawldash.app import LOADER, NETWORKS, create_app
from crawldash.crawl.decode import Rules
from crawldash.crawl.files import FileVersion, LoadError
from crawldash.live.loader.client import LoaderClient
from crawldash.live.refreshing import rejections
from crawldash.live.refreshing.refresher import Refresher
from crawldash.live.refreshing.rejections import Rejections
from crawldash.live.snapshot import past_crawls
from crawldash.live.state import State
from crawldash.live.stores.history import HistoryEntry
from crawldash.live.stores.index_files import HistoryStore, PresenceStore

from .conftest import Client, eventually, served_timestamp, until_served, watching
from .factories import export_body, rows, write_snapshot, write_status
from .test_operations import key, scrape

NOW = int(time.time()) // 600 * 600


async def status_of(client: Client) -> dict[str, object]:
    return dict(await (await client.get("/api/status")).json())


@pytest.mark.slow  # waits out a load timeout and a retry
async def test_a_stopped_loader_is_killed_said_and_the_load_tried_again(
    serve, data_dir, monkeypatch, caplog
):
    # Long enough to look at it, on a busy machine too
    monkeypatch.setattr(rejections, "RETRY_FIRST", 15.0)
    monkeypatch.setattr(past_crawls, "ARCHIVE_WAIT", 0.5)
    write_snapshot(data_dir, NOW - 1200, export_body(rows(3)))
    write_snapshot(data_dir, NOW - 600, export_body(rows(4)))
    write_status(data_dir, state="running")
    client = await serve(load_timeout=8.0)  # a fresh loader's load, on a busy machine
    await watching(client)
    loader = client.app[LOADER]
    await loader.warm_up()
    assert loader.pid is not None
    os.kill(loader.pid, signal.SIGSTOP)  # hung, as far as anyone can tell
    write_snapshot(data_dir, NOW, export_body(rows(5)))
    write_status(data_dir, state="starting")

    async def status_followed() -> bool:
        return (await status_of(client))["state"] == "starting"

    await eventually(status_followed)  # the status never waits behind a load

    async def crawl_loading() -> bool:  # the new crawl's load is the one the hung loader
        return bool(loader._one_call.locked())  # holds (on a busy machine, it may come late)

    await eventually(crawl_loading)
    older = await client.get(f"/api/v1/snapshots/{NOW - 1200}/")  # waits on the loader
    assert older.status == 503
    assert (await older.json())["error"]["code"] == "loader_busy"
    assert older.headers["Retry-After"] == "5"

    async def degraded() -> bool:
        return (await status_of(client))["degraded"] is not None

    await eventually(degraded)
    health = await (await client.get("/healthz")).json()
    assert health["status"] == "degraded"
    assert any(f"{NOW}.json" in warning for warning in health["warnings"])
    metrics = await scrape(client)
    assert metrics[key("crawldash_files_rejected_total", kind="timeout")] == 1
    assert metrics[key("crawldash_loader_degraded")] == 1
    assert "the loader process was killed" in caplog.text
    await until_served(client, NOW)  # tried again, in a new loader process
    assert (await status_of(client))["degraded"] is None
    assert (await (await client.get("/healthz")).json()) == {"status": "ok"}
    assert (await scrape(client))[key("crawldash_loader_degraded")] == 0


def test_a_passing_fault_is_tried_again_with_back_off_then_given_up():
    now = [1000.0]
    rejected = Rejections(clock=lambda: now[0])
    version = FileVersion(10, 1)
    for tries in range(1, rejections.TRIES + 1):
        rejected.add("1.json", version, LoadError("loader_died", "died"))
        assert rejected.known("1.json", version)
        if tries < rejections.TRIES:
            assert rejected.retrying("1.json", version)
            now[0] += rejections.RETRY_FIRST * 2 ** (tries - 1) - 0.01
            assert rejected.known("1.json", version)  # not yet
            now[0] += 0.02
            assert rejected.retry_due()
            assert not rejected.known("1.json", version)  # due: read it again
    assert not rejected.retrying("1.json", version)  # given up until the file changes
    now[0] += 10**6
    assert rejected.known("1.json", version)
    assert not rejected.known("1.json", FileVersion(11, 2))
    rejected.add("2.json", version, LoadError("decode", "bad"))
    assert not rejected.retrying("2.json", version)  # its content: never a passing fault


async def test_history_is_not_complete_while_a_crawl_waits_to_be_tried_again(tmp_path: Path):
    data_dir = tmp_path / "data"
    for index in range(3):
        write_snapshot(data_dir, NOW + 600 * index, export_body(rows(3 + index)))
    loader = LoaderClient(timeout=8.0)  # a fresh loader's load, on a busy machine
    loader.start()
    now = [time.time()]
    refresher = Refresher(
        State(history_size=10),
        HistoryStore(tmp_path / "history.json"),
        PresenceStore(tmp_path / "presence.msgpack"),
        loader,
        data_dir=data_dir,
        rules=Rules(10**7),
        clock=lambda: now[0],
    )
    try:
        await loader.warm_up()
        assert loader.pid is not None
        os.kill(loader.pid, signal.SIGSTOP)
        await refresher.refresh()  # the newest times out; the next loads in a new process
        state = refresher.state
        assert state.snapshot is not None
        assert state.snapshot.timestamp == NOW + 600
        assert not state.history_complete  # a crawl present has no point yet
        assert refresher.counting.retrying == {NOW + 1200}
        await refresher.refresh(changed=())
        assert state.snapshot.timestamp == NOW + 600  # not due yet: not tried again
        now[0] += rejections.RETRY_FIRST
        assert refresher.rejected.retry_due()
        await refresher.refresh(changed=())  # as the watcher does when a retry is due
        assert state.snapshot is not None
        assert state.snapshot.timestamp == NOW + 1200
        assert state.history_complete
        assert state.loader_trouble is None
    finally:
        await loader.close()


async def test_a_clock_hours_behind_erases_no_history(tmp_path: Path, data_dir: Path, caplog):
    caplog.set_level(logging.WARNING, "crawldash")
    store = HistoryStore(tmp_path / "history.json")
    store.save([HistoryEntry(NOW - 600 * i, 10 + i) for i in range(30, -1, -1)])
    write_snapshot(data_dir, NOW - 600 * 30, export_body(rows(3)))  # the rest were pruned
    behind = NOW - 3 * 3600
    refresher = Refresher(
        State(history_size=100, clock=lambda: behind),
        store,
        PresenceStore(tmp_path / "presence.msgpack"),
        LoaderClient(),
        data_dir=data_dir,
        rules=Rules(10**7),
        clock=lambda: behind,
    )
    refresher.restore_history()
    assert len(refresher.state.history) == 31  # none dropped as "future"
    assert caplog.text.count("history points are named more than --max-clock-skew") == 1
    assert "the latest by 10800 s" in caplog.text


async def test_a_crawl_named_ahead_of_its_writing_gives_way_to_later_ones(
    aiohttp_client, settings, data_dir, caplog
):
    caplog.set_level(logging.WARNING, "crawldash")
    earlier = write_snapshot(data_dir, NOW - 600, export_body(rows(3)))
    ahead = write_snapshot(data_dir, NOW + 3000, export_body(rows(4)))  # within the skew
    for path, seconds_ago in ((earlier, 300), (ahead, 120)):
        written = time.time() - seconds_ago
        os.utime(path, (written, written))
    client = await aiohttp_client(create_app(settings))
    assert await served_timestamp(client) == NOW + 3000  # nothing better yet
    await watching(client)
    write_snapshot(data_dir, NOW, export_body(rows(5)))  # a real crawl, written later
    await until_served(client, NOW)
    assert "kind=misnamed" in caplog.text
    snapshot = await client.get("/api/snapshot")
    max_age = int(snapshot.headers["Cache-Control"].rpartition("=")[2])
    assert max_age <= 600
    await client.app[NETWORKS][0].refresher.refresh()
    assert await served_timestamp(client) == NOW  # it stays passed over
    assert caplog.text.count("kind=misnamed") == 1
