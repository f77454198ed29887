"""The history index on disk: one file per data folder, replaced whole by atomic renames,
and the background saver that keeps it up to date, retrying with back-off after failures."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

from ..crawl.files import write_atomically
from .history import HistoryEntry

log = logging.getLogger(__name__)
_entries_decoder = msgspec.json.Decoder(list[HistoryEntry])
_encoder = msgspec.json.Encoder()
MAX_BACKOFF = 60.0
LOG_EVERY = 10.0  # seconds between warnings while saving keeps failing


class HistoryStore:
    """The history index file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def for_data_dir(cls, state_dir: Path, data_dir: Path) -> HistoryStore:
        """One index per data folder, so that instances over different folders never mix."""
        digest = hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:16]
        return cls(state_dir / f"history-{digest}.json")

    def load(self) -> list[HistoryEntry]:
        try:
            return _entries_decoder.decode(self.path.read_bytes())
        except FileNotFoundError:
            return []
        except (OSError, msgspec.DecodeError) as exc:
            log.warning(
                "history index %s is unusable, rebuilding it from files: %s", self.path, exc
            )
            return []

    def save(self, entries: list[HistoryEntry]) -> None:
        """Replace the index with ``entries``; OSError if it cannot be written."""
        write_atomically(self.path, _encoder.encode(entries))


class IndexSaver:
    """Saves the history index in the background after each change. A failed save (a full
    disk, no file descriptors left, a read-only folder) is retried with back-off up to a
    minute, for as long as it fails; meanwhile the history is kept in memory."""

    def __init__(
        self,
        store: HistoryStore,
        entries: Callable[[], list[HistoryEntry]],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.entries = entries
        self.clock = clock
        self.saved_at: float | None = None  # when the index was last written
        self.failures = 0  # saves that failed, in all
        self.error: str | None = None  # why the latest save failed, while it fails
        self._dirty = False
        self._task: asyncio.Task[None] | None = None
        self._logged_at = -LOG_EVERY  # when a failure was last logged
        self._unlogged = 0  # failures since then

    def schedule(self) -> None:
        self._dirty = True
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._save_while_dirty(), name="crawldash-index")

    async def flush(self) -> None:
        """Wait until the index on disk holds what memory holds, or a save has failed."""
        while self._task is not None and not self._task.done() and self.error is None:
            await asyncio.wait({self._task}, timeout=0.05)

    async def close(self) -> None:
        """At shutdown: let a save under way finish; if saving fails, one last try."""
        task = self._task
        if task is not None and not task.done():
            if self.error is None:
                await asyncio.wait({task})
            else:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                await self._save_once()

    async def _save_while_dirty(self) -> None:
        backoff = 1.0
        while self._dirty:
            self._dirty = False
            if await self._save_once():
                backoff = 1.0
                continue
            self._dirty = True
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF)

    async def _save_once(self) -> bool:
        try:
            await asyncio.to_thread(self.store.save, self.entries())
        except OSError as exc:
            self.failures += 1
            self.error = str(exc)
            self._warn(exc)
            return False
        if self.error is not None:
            log.info("history index %s written again", self.store.path)
        self.saved_at, self.error = self.clock(), None
        return True

    def _warn(self, error: OSError) -> None:
        """At most one warning per LOG_EVERY seconds, saying how many were left out."""
        now = time.monotonic()
        if now - self._logged_at < LOG_EVERY:
            self._unlogged += 1
            return
        more = f" ({self._unlogged} more failures not logged)" if self._unlogged else ""
        self._logged_at, self._unlogged = now, 0
        log.warning(
            "cannot write the history index %s (%s); retrying with back-off, and the "
            "history is kept in memory meanwhile%s",
            self.store.path,
            error,
            more,
        )
