"""The watcher's supervision, with a fake awatch; the real one is used by the other tests."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from crawldash.crawl.decode import Rules
from crawldash.live.loader.client import LoaderClient
from crawldash.live.refreshing.refresher import Refresher
from crawldash.live.refreshing.watcher import Watcher, crawler_files
from crawldash.live.state import State
from crawldash.live.stores.index_files import HistoryStore, PresenceStore

from .conftest import eventually
from .factories import export_body, rows, write_snapshot
from .process import PATIENCE

TS = 1_700_000_000


class FakeAwatch:
    """Stands in for watchfiles.awatch: each call plays the next script of batches or errors."""

    def __init__(self, *scripts: list[Any]) -> None:
        self.scripts = list(scripts)
        self.calls: list[dict[str, Any]] = []

    def __call__(self, *paths: Path, **options: Any) -> AsyncIterator[set[tuple[Any, str]]]:
        self.calls.append(options)
        return self._play(self.scripts.pop(0) if self.scripts else [], options["stop_event"])

    async def _play(self, script: list[Any], stop: asyncio.Event) -> AsyncIterator[set[Any]]:
        for item in script:
            await asyncio.sleep(0)
            if isinstance(item, BaseException):
                raise item
            yield item
        await stop.wait()


def make_watcher(data_dir: Path, tmp_path: Path, awatch: FakeAwatch) -> tuple[Watcher, State]:
    state = State(history_size=100, stale_after=3600)
    store = HistoryStore(tmp_path / "index.json")
    refresher = Refresher(
        state,
        store,
        PresenceStore(tmp_path / "presence.msgpack"),
        LoaderClient(),
        data_dir=data_dir,
        rules=Rules(1 << 20),
    )
    return Watcher(refresher, data_dir, awatch=awatch), state


async def test_failing_watcher_is_restarted_and_falls_back_to_polling(data_dir, tmp_path, caplog):
    awatch = FakeAwatch([OSError(28, "inotify watch limit reached")], [set()])
    watcher, state = make_watcher(data_dir, tmp_path, awatch)
    stop = asyncio.Event()
    task = asyncio.create_task(watcher.run(stop))
    await eventually(lambda: _true(watcher.restarts == 1))
    write_snapshot(data_dir, TS, export_body(rows(3)))
    await eventually(lambda: _true(watcher.watching))
    assert state.snapshot is not None
    assert state.snapshot.timestamp == TS
    assert [call["force_polling"] for call in awatch.calls] == [False, True]
    assert any("inotify watch limit" in r.getMessage() for r in caplog.records)
    stop.set()
    await asyncio.wait_for(task, PATIENCE)
    assert not watcher.alive


async def test_missing_folder_is_waited_for_not_a_failure(tmp_path, caplog):
    data_dir = tmp_path / "later"
    awatch = FakeAwatch([set()], [set()])
    watcher, state = make_watcher(data_dir, tmp_path, awatch)
    stop = asyncio.Event()
    task = asyncio.create_task(watcher.run(stop))
    await eventually(lambda: _true(state.data_dir_problem is not None))
    assert "does not exist yet; waiting for it" in (state.data_dir_problem or "")
    waiting = [r for r in caplog.records if "waiting for it" in r.getMessage()]
    assert [r.levelno for r in waiting] == [logging.WARNING]
    write_snapshot(data_dir, TS, export_body(rows(2)))
    await eventually(lambda: _true(state.snapshot is not None))
    assert state.data_dir_problem is None
    assert watcher.restarts == 0
    assert len([r for r in caplog.records if "waiting for it" in r.getMessage()]) == 1
    assert all(not call["force_polling"] for call in awatch.calls)
    stop.set()
    await asyncio.wait_for(task, PATIENCE)


async def test_each_batch_of_changes_refreshes(data_dir, tmp_path):
    write_snapshot(data_dir, TS, export_body(rows(3)))
    gate = asyncio.Event()

    class Gated(FakeAwatch):
        async def _play(self, script: list[Any], stop: asyncio.Event) -> AsyncIterator[set[Any]]:
            yield set()  # watching has begun
            await gate.wait()
            yield {(2, str(data_dir / f"{TS + 600}.json"))}
            await stop.wait()

    watcher, state = make_watcher(data_dir, tmp_path, Gated([]))
    stop = asyncio.Event()
    task = asyncio.create_task(watcher.run(stop))
    await eventually(lambda: _true(watcher.watching))
    write_snapshot(data_dir, TS + 600, export_body(rows(5)))
    assert state.snapshot is not None
    assert state.snapshot.timestamp == TS  # nothing told the watcher yet
    gate.set()
    await eventually(lambda: _true(state.snapshot is not None and state.snapshot.timestamp > TS))
    stop.set()
    await asyncio.wait_for(task, PATIENCE)


@pytest.mark.parametrize(
    ("name", "wanted"),
    [
        ("1700000000.json", True),
        ("status.json", True),
        (".1700000000.json.tmp", False),
        ("1700000000.json.tmp", False),
        ("latest.json", False),
        ("17000.txt", False),
    ],
)
def test_only_crawler_files_wake_the_watcher(name: str, wanted: bool):
    assert crawler_files(1, f"/data/{name}") is wanted  # type: ignore[arg-type]


async def _true(value: bool) -> bool:
    return value
