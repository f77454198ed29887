"""The indexes on disk: versioned, never fatal when unreadable, every save watched, and
found again after their data folder moves."""

from __future__ import annotations

import json
import logging
import shutil
from dataclasses import replace
from pathlib import Path

import msgspec
import pytest

from crawldash.app import NETWORKS, create_app
from crawldash.live.stores.history import HistoryEntry
from crawldash.live.stores.index_codec import encode_presence
from crawldash.live.stores.index_files import HistoryStore, PresenceStore
from crawldash.live.stores.presence import Presence
from crawldash.live.stores.saved_history import HISTORY_FORMAT, Folder, decode_history
from crawldash.settings.serve import Settings

from .conftest import Client, ClientFactory, eventually
from .factories import export_body, rows, write_snapshot
from .test_operations import key, scrape

TS = 1_700_000_000
COUNTS = [1, 2, 3, 4, 5]
ENTRY = [TS - 600, 15, 0, 0, COUNTS, 900_000]  # as today's files hold them


def logged(caplog: pytest.LogCaptureFixture, text: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if text in r.getMessage()]


# Index files another version might write, or a damaged one: each is rebuilt, never fatal.
UNREADABLE = {
    "six counts": json.dumps([[TS - 600, 15, 0, 0, [*COUNTS, 6], 900_000]]),
    "two counts": json.dumps([[TS - 600, 15, 0, 0, [1, 2], 900_000]]),
    "wrong type": json.dumps([[TS - 600, "15"]]),
    "unknown format": json.dumps({"format": 99, "entries": {"new": "shape"}}),
    "format without entries": json.dumps({"format": HISTORY_FORMAT, "folder": None}),
    "no format": json.dumps({"entries": [ENTRY]}),
    "garbage": "\x00\x01{torn",
    "a number": "42",
}


@pytest.mark.parametrize("damage", UNREADABLE.values(), ids=UNREADABLE.keys())
def test_an_unreadable_history_index_is_set_aside_and_said_once(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
):
    store = HistoryStore.for_data_dir(tmp_path / "state", tmp_path / "data")
    store.path.parent.mkdir()
    store.path.write_text(damage)
    assert store.load() == []
    [said] = logged(caplog, "is unusable, rebuilding it from files")
    assert said.levelno == logging.WARNING
    assert said.exc_info is None  # no traceback
    assert "\n" not in said.getMessage()  # one line
    aside = store.path.with_name(store.path.name + ".unreadable")
    assert aside.read_text() == damage  # kept for whoever wants it back
    assert not store.path.exists()


async def test_an_index_of_another_shape_does_not_stop_the_start(
    aiohttp_client: ClientFactory, settings: Settings, data_dir: Path
):
    store = HistoryStore.for_data_dir(settings.resolved_state_dir, data_dir)
    store.path.parent.mkdir(parents=True)
    store.path.write_text(UNREADABLE["two counts"])
    write_snapshot(data_dir, TS, export_body(rows(3)))
    client = await aiohttp_client(create_app(settings))
    history = await (await client.get("/api/history?by=network")).json()
    assert [p["timestamp"] for p in history] == [TS]
    await client.app[NETWORKS][0].refresher.saver.flush()
    assert [e.timestamp for e in store.load()] == [TS]  # written again, in this shape


def test_todays_index_files_are_read_and_written_again_with_their_format_and_folder(
    tmp_path: Path,
):
    data = tmp_path / "data"
    data.mkdir()
    store = HistoryStore.for_data_dir(tmp_path / "state", data)
    store.path.parent.mkdir()
    store.path.write_text(json.dumps([ENTRY, [TS, 20]]))  # format 1: a bare array
    expected = [HistoryEntry(TS - 600, 15, 0, 0, tuple(COUNTS), 900_000), HistoryEntry(TS, 20)]
    assert store.load() == expected
    saved = json.loads(store.path.read_bytes())
    assert saved["format"] == HISTORY_FORMAT
    info = data.stat()
    assert saved["folder"] == {
        "path": str(data.resolve()),
        "device": info.st_dev,
        "inode": info.st_ino,
    }
    assert decode_history(store.path.read_bytes()) == (Folder.of(data), expected)
    assert store.load() == expected


@pytest.mark.parametrize(
    "damage",
    [
        msgspec.msgpack.encode([2, 0, [], [], []]),  # a newer format
        msgspec.msgpack.encode([1, 5, [TS], ["x"], [b""]]),  # an empty bitmap
        msgspec.msgpack.encode([1, -1, [], [], []]),  # slots out of range
        msgspec.msgpack.encode({"format": 1}),
    ],
)
def test_an_unreadable_presence_index_is_set_aside(
    tmp_path: Path, damage: bytes, caplog: pytest.LogCaptureFixture
):
    store = PresenceStore(tmp_path / "presence.msgpack")
    store.path.write_bytes(damage)
    assert len(store.load()) == 0
    [said] = logged(caplog, "is unusable, rebuilding it from files")
    assert said.exc_info is None
    assert (tmp_path / "presence.msgpack.unreadable").read_bytes() == damage


def test_a_presence_index_of_a_newer_format_says_so(tmp_path: Path, caplog):
    store = PresenceStore(tmp_path / "presence.msgpack")
    store.path.write_bytes(msgspec.msgpack.encode([7, "whatever", {"it": "holds"}]))
    assert len(store.load()) == 0
    assert "unknown format version 7" in caplog.text
    store.save(encode_presence(Presence()))
    assert len(store.load()) == 0


async def test_a_presence_index_that_cannot_be_saved_is_counted_and_warned_until_saved(
    aiohttp_client: ClientFactory, settings: Settings, data_dir: Path
):
    """A full disk for the presence index shows as much as one for the history's: here the
    obstacle is a folder where its file goes (root may write anywhere)."""
    obstacle = PresenceStore.for_data_dir(settings.resolved_state_dir, data_dir).path
    obstacle.mkdir(parents=True)
    write_snapshot(data_dir, TS, export_body(rows(3)))
    client = await aiohttp_client(create_app(settings))
    refresher = client.app[NETWORKS][0].refresher

    async def failed() -> bool:
        return refresher.presence_saver.failures >= 1

    await eventually(failed)
    metrics = await scrape(client)
    presence, history = {"index": "presence"}, {"index": "history"}
    assert metrics[key("crawldash_index_save_failures_total", **presence)] >= 1
    assert metrics[key("crawldash_index_save_failing", **presence)] == 1
    await refresher.saver.flush()
    metrics = await scrape(client)
    assert metrics[key("crawldash_index_save_failures_total", **history)] == 0
    assert metrics[key("crawldash_index_save_failing", **history)] == 0
    assert key("crawldash_index_saved_timestamp_seconds", **history) in metrics
    assert metrics[key("crawldash_history_index_save_failures_total")] == 0  # older names
    assert key("crawldash_history_index_saved_timestamp_seconds") in metrics
    health = await (await client.get("/healthz")).json()
    assert len(health["warnings"]) == 1
    assert health["warnings"][0].startswith("the presence index cannot be written: ")

    obstacle.rmdir()  # the disk has room again, say

    async def saved() -> bool:
        return refresher.presence_saver.error is None and obstacle.is_file()

    await eventually(saved)  # retried with back-off, not given up
    metrics = await scrape(client)
    assert metrics[key("crawldash_index_save_failing", **presence)] == 0
    assert key("crawldash_index_saved_timestamp_seconds", **presence) in metrics
    assert "warnings" not in await (await client.get("/healthz")).json()


async def write_and_count(client: Client, crawls: int) -> None:
    async def complete() -> bool:
        status = await (await client.get("/api/status")).json()
        return bool(status["history_complete"]) and len(await history(client)) == crawls

    await eventually(complete)
    await client.app[NETWORKS][0].refresher.saver.flush()
    await client.app[NETWORKS][0].refresher.presence_saver.flush()


async def history(client: Client) -> list[int]:
    return [p["timestamp"] for p in await (await client.get("/api/history")).json()]


async def seen(client: Client, address: str) -> int:
    answer = await (await client.get("/api/check", params={"address": address})).json()
    return int(answer["presence"]["crawls"])


def serve_pruned_then_move(data: Path, moved: Path, *, copy: bool) -> None:
    for index in range(3):  # the crawler pruned its older files before the move
        (data / f"{TS + 600 * index}.json").unlink()
    if copy:  # to another file system, say: another inode, the files' times kept
        shutil.copytree(data, moved)
        shutil.rmtree(data)
    else:
        data.rename(moved)


@pytest.mark.parametrize("copy", [False, True], ids=["renamed", "copied-elsewhere"])
async def test_the_history_follows_its_data_folder_when_it_moves(
    aiohttp_client: ClientFactory,
    settings: Settings,
    data_dir: Path,
    caplog: pytest.LogCaptureFixture,
    copy: bool,
):
    for index in range(8):
        write_snapshot(data_dir, TS + 600 * index, export_body(rows(10 + index)))
    client = await aiohttp_client(create_app(settings))
    await write_and_count(client, 8)
    before = await history(client)
    await client.close()
    moved = data_dir.with_name("data2")
    serve_pruned_then_move(data_dir, moved, copy=copy)
    caplog.clear()
    client = await aiohttp_client(create_app(replace(settings, data_dir=moved)))
    assert await history(client) == before  # every point, those pruned before the move too
    assert await seen(client, "198.0.0.1:8333") == 8  # and which addresses each crawl had
    [said] = logged(caplog, "adopted the history of")
    assert said.getMessage() == f"adopted the history of {data_dir} for {moved.resolve()}"
    state_dir = settings.resolved_state_dir
    assert sorted(p.name for p in state_dir.iterdir()) == sorted(
        [
            HistoryStore.for_data_dir(state_dir, moved).path.name,
            PresenceStore.for_data_dir(state_dir, moved).path.name,
        ]
    )  # renamed, nothing left behind
    await client.app[NETWORKS][0].refresher.saver.flush()
    folder, _ = decode_history(HistoryStore.for_data_dir(state_dir, moved).path.read_bytes())
    assert folder == Folder.of(moved)


async def test_the_history_of_a_folder_still_in_place_is_not_taken(
    aiohttp_client: ClientFactory,
    settings: Settings,
    data_dir: Path,
    caplog: pytest.LogCaptureFixture,
):
    """A copy of a folder that is still served starts a history of its own."""
    for index in range(3):
        write_snapshot(data_dir, TS + 600 * index, export_body(rows(10 + index)))
    client = await aiohttp_client(create_app(settings))
    await write_and_count(client, 3)
    await client.close()
    (data_dir / f"{TS}.json").unlink()
    copy = data_dir.with_name("copy")
    shutil.copytree(data_dir, copy)
    client = await aiohttp_client(create_app(replace(settings, data_dir=copy)))
    assert await history(client) == [TS + 600, TS + 1200]
    assert not logged(caplog, "adopted")
    await client.close()
    client = await aiohttp_client(create_app(settings))
    assert await history(client) == [TS, TS + 600, TS + 1200]  # the original keeps its own
