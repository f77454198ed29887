"""A fault that lasts is logged once per cause and 10 seconds, not on every tick of the task
that meets it: a data folder replaced by a file, a symlink loop or a FIFO."""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from crawldash.crawl.files import FileVersion, file_version
from crawldash.ops.repeats import Repeats

from .conftest import Serve, eventually, until_served
from .factories import export_body, rows, write_snapshot

TS = 1_700_000_000
POLLS = 40  # polls of the status file while the folder is broken, about 40 ticks' worth


def as_file(path: Path) -> None:
    path.write_text("not a folder")


def as_loop(path: Path) -> None:
    path.symlink_to(path.name)  # a link to itself: ELOOP


def as_fifo(path: Path) -> None:
    os.mkfifo(path)


@pytest.mark.parametrize("replace", [as_file, as_loop, as_fifo])
async def test_a_broken_data_folder_is_logged_once_not_every_poll(
    serve: Serve,
    data_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    replace: Callable[[Path], None],
):
    monkeypatch.setattr("crawldash.app.STATUS_POLL_SECONDS", 0.01)
    polled = 0

    def counted(path: Path) -> FileVersion | None:
        nonlocal polled
        polled += 1
        return file_version(path)

    monkeypatch.setattr("crawldash.live.refreshing.refresher.file_version", counted)
    write_snapshot(data_dir, TS, export_body(rows(3)))
    client = await serve()
    await until_served(client, TS)
    shutil.rmtree(data_dir)
    replace(data_dir)
    with caplog.at_level(logging.WARNING, logger="crawldash.app"):
        start = polled

        async def enough() -> bool:
            return polled - start >= POLLS

        await eventually(enough)
    failed = [r for r in caplog.records if "poll_status failed" in r.getMessage()]
    assert len(failed) == 1, [r.getMessage() for r in failed]
    assert (await client.get("/api/snapshot")).status == 200  # the last good crawl stays


def test_a_cause_is_logged_again_after_the_interval_with_a_count_of_those_left_out(
    caplog: pytest.LogCaptureFixture,
):
    now = [0.0]
    repeats = Repeats(logging.getLogger("test.repeats"), every=10.0, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="test.repeats"):
        assert repeats.warn("ENOTDIR", "failed: %s", "a")
        for _ in range(5):
            now[0] += 1.0
            assert not repeats.warn("ENOTDIR", "failed: %s", "a")
        assert repeats.warn("ELOOP", "failed: %s", "b")  # another cause is its own
        now[0] += 5.0
        assert repeats.warn("ENOTDIR", "failed: %s", "a")
    assert [r.getMessage() for r in caplog.records] == [
        "failed: a",
        "failed: b",
        "failed: a (5 more like it not logged)",
    ]
