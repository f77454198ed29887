"""The supervised watchfiles task that keeps the state fresh.

It refreshes once when it starts, then on every batch of changes in the data folder. If it
fails it logs why and starts again with back-off; if the folder cannot be watched natively
(no inotify, too many watches), it falls back to polling.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import watchfiles

from ...crawl.files import is_crawler_file
from .refresher import Refresher

log = logging.getLogger(__name__)
MAX_BACKOFF = 60.0
TICK_MS = 500  # how often an idle watcher wakes: to close the start-up race, to recheck files
# How often the watcher looks for changes: they are taken once a look finds no file
# changed that the one before had not, so a new crawl waits one to two of these (each is
# a wake-up of the watcher's thread, idle or not). A file still being written then is
# read torn, refused as such, and read again when its writing changes it.
STEP_MS = 10
FOLDER_POLL_SECONDS = 0.25  # how often a missing data folder is looked for


class AWatch(Protocol):
    def __call__(
        self,
        *paths: Path,
        watch_filter: Callable[[watchfiles.Change, str], bool] | None,
        stop_event: asyncio.Event,
        debounce: int,
        step: int,
        rust_timeout: int,
        yield_on_timeout: bool,
        force_polling: bool,
        recursive: bool,
    ) -> AsyncIterator[set[tuple[watchfiles.Change, str]]]: ...


def crawler_files(_change: watchfiles.Change, path: str) -> bool:
    """The watch filter: only crawler files' changes wake the watcher."""
    return is_crawler_file(Path(path).name)


@dataclass
class Watcher:
    refresher: Refresher
    data_dir: Path
    debounce_ms: int = 300
    force_polling: bool = False
    awatch: AWatch = watchfiles.awatch
    restarts: int = 0
    alive: bool = False  # running, though perhaps not yet watching
    watching: bool = False  # changes from now on will be seen

    async def run(self, stop: asyncio.Event) -> None:
        """Watch until ``stop`` is set, restarting with back-off after any failure. A data
        folder that is missing, or removed or replaced while watched, is waited for, and
        watched anew when it is there: that is not a failure."""
        backoff = 1.0
        polling = self.force_polling
        while not stop.is_set():
            folder = await self._wait_for_folder(stop)
            if folder is None:
                break
            try:
                await self._watch(stop, polling, folder)
            except Exception as exc:
                if self.watching:  # it had been working: back off from the start again
                    backoff = 1.0
                self.alive = self.watching = False
                if _identity(self.data_dir) != folder:
                    continue  # the folder went away under the watch: wait for it again
                self.restarts += 1
                if not polling and not isinstance(exc, FileNotFoundError):
                    polling = True
                    log.warning(
                        "watcher falling back to polling after %s: %s", type(exc).__name__, exc
                    )
                log.error(
                    "watcher failed reason=%s: %s; restarting in %.0f s",
                    type(exc).__name__,
                    exc,
                    backoff,
                )
                await _wait(stop, backoff)
                backoff = min(backoff * 2, MAX_BACKOFF)
        self.alive = self.watching = False

    async def _wait_for_folder(self, stop: asyncio.Event) -> tuple[int, int] | None:
        """The data folder's identity once it can be listed; None if stopped first."""
        state = self.refresher.state
        self.alive, self.watching = True, False
        if (folder := _identity(self.data_dir)) is None:
            reason = _problem(self.data_dir)
            state.data_dir_problem = f"data folder {self.data_dir}: {reason}; waiting for it"
            log.warning("%s", state.data_dir_problem)
        while folder is None and not stop.is_set():
            await _wait(stop, FOLDER_POLL_SECONDS)
            folder = _identity(self.data_dir)
        if folder is not None and state.data_dir_problem is not None:
            log.info("data folder %s is there; watching it", self.data_dir)
            state.data_dir_problem = None
        return folder

    async def _watch(self, stop: asyncio.Event, polling: bool, folder: tuple[int, int]) -> None:
        """Refresh on every batch of changes, until stopped or the folder is not ``folder``
        any more (removed, renamed or replaced: looked at on every tick)."""
        changes = self.awatch(
            self.data_dir,
            watch_filter=crawler_files,
            stop_event=stop,
            debounce=self.debounce_ms,
            step=STEP_MS,
            rust_timeout=TICK_MS,
            yield_on_timeout=True,
            force_polling=polling,
            recursive=False,
        )
        await self.refresher.refresh()
        async for batch in changes:  # the first answer means watching has begun
            if _replaced(self.data_dir, folder):
                log.warning("data folder %s was removed or replaced", self.data_dir)
                return
            if not self.watching:  # list the whole folder: catch what came before
                await self.refresher.refresh()
            elif batch or self.refresher.rejected.unsettled or self.refresher.rejected.retry_due():
                await self.refresher.refresh(changed={Path(path).name for _, path in batch})
            self.watching = True


def _replaced(folder: Path, identity: tuple[int, int]) -> bool:
    """True if the path no longer names that folder; False if that cannot be told now
    (no file descriptors left, say): a passing trouble is no reason to stop watching."""
    try:
        info = folder.stat()
    except (FileNotFoundError, NotADirectoryError):
        return True
    except OSError:
        return False
    return (info.st_dev, info.st_ino) != identity


def _identity(folder: Path) -> tuple[int, int] | None:
    """Which folder the path names now (device, inode), if it can be listed."""
    try:
        with os.scandir(folder):
            info = folder.stat()
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _problem(folder: Path) -> str:
    try:
        os.scandir(folder).close()
    except FileNotFoundError:
        return "does not exist yet"
    except OSError as exc:
        return f"cannot be listed ({exc.strerror or exc})"
    return "was replaced"


async def _wait(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
