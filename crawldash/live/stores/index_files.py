"""The indexes on disk (the history, and which addresses each crawl had): one file each per
data folder, replaced whole by atomic renames, and the background saver that keeps each up
to date, retrying with back-off after failures.

Each file says its format version. An index that cannot be read (damaged, of another
shape, of a format this version does not know) is set aside beside it, logged in one line,
and rebuilt from the crawl files: never fatal. Where each file lives, and how a moved
folder's indexes are adopted, is ``index_paths.py``."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from ...crawl.atomic import write_atomically
from .history import HistoryEntry, Kept
from .index_codec import decode_presence
from .index_paths import HISTORY_NAME, PRESENCE_NAME, adopt_orphan, index_path
from .presence import Presence
from .saved_history import EncodedKept, Folder, decode_kept, history_parts

log = logging.getLogger(__name__)
MAX_BACKOFF = 60.0
LOG_EVERY = 10.0  # seconds between warnings while saving keeps failing
T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)
SET_ASIDE = ".unreadable"  # suffix of an unreadable index kept for inspection


def _read(what: str, path: Path, decode: Callable[[bytes], T]) -> T | None:
    """``decode`` of an index file's bytes; None if there is none or it cannot be read,
    said in one line. One that does not decode is kept beside (another version's data may
    be worth having); the caller starts from nothing, rebuilt from the crawl files."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.warning("%s index %s is unusable, rebuilding it from files: %s", what, path, exc)
        return None
    try:
        return decode(data)
    except ValueError as exc:  # Unusable, or the presence codec's
        aside = path.with_name(path.name + SET_ASIDE)
        try:
            os.replace(path, aside)
            kept = f" (the file is kept as {aside.name})"
        except OSError:
            kept = ""
        unusable = f"{exc}{kept}"
        log.warning("%s index %s is unusable, rebuilding it from files: %s", what, path, unusable)
        return None


class HistoryStore:
    """The history index file, recording ``data_dir`` (if given) as the folder it is for."""

    name = "history"

    def __init__(self, path: Path, data_dir: Path | None = None) -> None:
        self.path = path
        self.data_dir = data_dir
        self._folder: Folder | None = None  # the data folder, as last seen

    @classmethod
    def for_data_dir(cls, state_dir: Path, data_dir: Path) -> HistoryStore:
        return cls(index_path(state_dir, data_dir, HISTORY_NAME), data_dir)

    def load(self) -> list[HistoryEntry]:
        """The entries on disk (``load_kept``, without the values their counts name)."""
        return self.load_kept().entries

    def load_kept(self) -> Kept:
        """The entries on disk and the values their counts name; none if there is no
        index or it cannot be read (then it is set aside and said). With no index of its
        own, a moved folder's is adopted first. An index in format 1, or adopted, is
        written again at once with this folder."""
        if self.data_dir is not None and not self.path.exists():
            with contextlib.suppress(OSError):
                adopt_orphan(self.path.parent, self.data_dir)
        read = _read("history", self.path, decode_kept)
        if read is None:
            return Kept([], [])
        folder, kept = read
        current = self._current_folder()
        if current is not None and folder != current:
            with contextlib.suppress(OSError):  # if not now, at the next save
                self.save(kept)
        return kept

    def save(self, entries: list[HistoryEntry] | Kept | EncodedKept) -> None:
        """Replace the index with ``entries`` (and the values their counts name, if
        given); OSError if it cannot be written."""
        write_atomically(self.path, *history_parts(entries, self._current_folder()))

    def _current_folder(self) -> Folder | None:
        if self.data_dir is not None:
            self._folder = Folder.of(self.data_dir) or self._folder
        return self._folder


class PresenceStore:
    """The presence index file: which addresses each crawl held had (binary, msgpack)."""

    name = "presence"

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def for_data_dir(cls, state_dir: Path, data_dir: Path) -> PresenceStore:
        return cls(index_path(state_dir, data_dir, PRESENCE_NAME))

    def load(self) -> Presence:
        """The presence on disk; empty if there is none or it cannot be read (then it is
        set aside and said)."""
        presence = _read("presence", self.path, decode_presence)
        return Presence() if presence is None else presence

    def save(self, data: bytes) -> None:
        """Replace the index with ``data`` (``encode_presence``); OSError if it cannot."""
        write_atomically(self.path, data)


class Store(Protocol[T_contra]):
    name: str  # which index: history, presence
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
        self.name = store.name
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
