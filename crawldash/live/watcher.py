"""The supervised watchfiles task that keeps the state fresh.

It refreshes once when it starts, then on every batch of changes in the data folder. If it
fails it logs why and starts again with back-off; if the folder cannot be watched natively
(no inotify, too many watches), it falls back to polling.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import watchfiles

from ..crawl.files import is_crawler_file
from .refresher import Refresher

log = logging.getLogger(__name__)
MAX_BACKOFF = 60.0
TICK_MS = 500  # how often an idle watcher wakes: to close the start-up race, to recheck files


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
        """Watch until ``stop`` is set, restarting with back-off after any failure."""
        backoff = 1.0
        polling = self.force_polling
        while not stop.is_set():
            try:
                await self._watch(stop, polling)
            except Exception as exc:
                if self.watching:  # it had been working: back off from the start again
                    backoff = 1.0
                self.alive = self.watching = False
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

    async def _watch(self, stop: asyncio.Event, polling: bool) -> None:
        changes = self.awatch(
            self.data_dir,
            watch_filter=crawler_files,
            stop_event=stop,
            debounce=self.debounce_ms,
            step=50,
            rust_timeout=TICK_MS,
            yield_on_timeout=True,
            force_polling=polling,
            recursive=False,
        )
        self.alive, self.watching = True, False
        await self.refresher.refresh()
        async for batch in changes:  # the first answer means watching has begun
            if not self.watching:  # list the whole folder: catch what came before
                await self.refresher.refresh()
            elif batch or self.refresher.rejected.unsettled:
                await self.refresher.refresh(changed={Path(path).name for _, path in batch})
            self.watching = True


async def _wait(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
