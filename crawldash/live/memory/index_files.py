"""The indexes on disk (the history, and which addresses each crawl had): one file each per
data folder, replaced whole by atomic renames, and the background saver that keeps each up
to date, retrying with back-off after failures."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import inspect
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Generic, Protocol, TypeVar

import msgspec

from ...crawl.files import write_atomically
from .history import HistoryEntry
from .presence import Presence
from .presence_codec import decode_presence

log = logging.getLogger(__name__)
_entries_decoder = msgspec.json.Decoder(list[HistoryEntry])
_encoder = msgspec.json.Encoder()
MAX_BACKOFF = 60.0
LOG_EVERY = 10.0  # seconds between warnings while saving keeps failing
T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)


def index_path(state_dir: Path, data_dir: Path, name: str) -> Path:
    """One index per data folder, so that instances over different folders never mix:
    ``name`` with a digest of the folder's path before its suffix."""
    digest = hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:16]
    stem, _, suffix = name.partition(".")
    return state_dir / f"{stem}-{digest}.{suffix}"


class HistoryStore:
    """The history index file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def for_data_dir(cls, state_dir: Path, data_dir: Path) -> HistoryStore:
        return cls(index_path(state_dir, data_dir, "history.json"))

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


class PresenceStore:
    """The presence index file: which addresses each crawl held had (binary, msgpack)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def for_data_dir(cls, state_dir: Path, data_dir: Path) -> PresenceStore:
        return cls(index_path(state_dir, data_dir, "presence.msgpack"))

    def load(self) -> Presence:
        try:
            return decode_presence(self.path.read_bytes())
        except FileNotFoundError:
            return Presence()
        except (OSError, ValueError) as exc:
            log.warning(
                "presence index %s is unusable, rebuilding it from files: %s", self.path, exc
            )
            return Presence()

    def save(self, data: bytes) -> None:
        """Replace the index with ``data`` (``encode_presence``); OSError if it cannot."""
        write_atomically(self.path, data)


class Store(Protocol[T_contra]):
    path: Path

    def save(self, entries: T_contra, /) -> None: ...


class IndexSaver(Generic[T]):
    """Saves an index in the background after each change: what ``entries`` returns (on
    the loop) is written by ``store`` in a worker thread, at most once per ``every``
    seconds (``flush()`` cuts that wait short), and at shutdown. A failed save (a full
    disk, no file descriptors left, a read-only folder) is retried with back-off up to a
    minute, for as long as it fails; meanwhile the data is kept in memory."""

    def __init__(
        self,
        store: Store[T],
        entries: Callable[[], T | Awaitable[T]],
        clock: Callable[[], float] = time.time,
        every: float = 0.0,
    ) -> None:
        self.store = store
        self.entries = entries
        self.clock = clock
        self.every = every
        self.saved_at: float | None = None  # when the index was last written
        self.failures = 0  # saves that failed, in all
        self.error: str | None = None  # why the latest save failed, while it fails
        self._dirty = False
        self._resting = False  # waiting out ``every`` after a save
        self._hurry = asyncio.Event()  # ends the wait: flush() wants what is pending saved
        self._task: asyncio.Task[None] | None = None
        self._logged_at = -LOG_EVERY  # when a failure was last logged
        self._unlogged = 0  # failures since then

    @property
    def waiting(self) -> bool:
        """True while a change waits out ``every`` before it is written."""
        return self._resting and self._dirty

    def schedule(self) -> None:
        self._dirty = True
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._save_while_dirty(), name="crawldash-index")

    async def flush(self) -> None:
        """Wait until the index on disk holds what memory holds, or a save has failed; a
        change waiting out ``every`` is saved now."""
        while self._task is not None and not self._task.done() and self.error is None:
            if self._resting and not self._dirty:
                return  # saved; nothing waits
            self._hurry.set()
            await asyncio.wait({self._task}, timeout=0.05)

    async def close(self) -> None:
        """At shutdown: let a save under way finish; then, if memory holds more than the
        index on disk (saving failed, or it was waiting out ``every``), one last try."""
        task = self._task
        while task is not None and not task.done():
            if self.error is not None or self._resting:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                break
            await asyncio.wait({task}, timeout=0.05)
        if self._dirty:
            self._dirty = False
            await self._save_once()

    async def _save_while_dirty(self) -> None:
        backoff = 1.0
        while self._dirty:
            self._dirty = False
            if await self._save_once():
                backoff = 1.0
                if self.every:
                    await self._rest()
                continue
            self._dirty = True
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF)

    async def _rest(self) -> None:
        """Wait out ``every`` seconds, or until ``flush()`` hurries a pending change."""
        self._resting = True
        self._hurry.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._hurry.wait(), self.every)
        self._resting = False

    async def _save_once(self) -> bool:
        try:
            entries = self.entries()
            if inspect.isawaitable(entries):
                entries = await entries
            await asyncio.to_thread(self.store.save, entries)
        except OSError as exc:
            self.failures += 1
            self.error = str(exc)
            self._warn(exc)
            return False
        if self.error is not None:
            log.info("index %s written again", self.store.path)
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
            "cannot write the index %s (%s); retrying with back-off, and its data is kept "
            "in memory meanwhile%s",
            self.store.path,
            error,
            more,
        )
