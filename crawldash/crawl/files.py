"""The data folder: which names are crawler files, their versions, listing and reading.

Everything here blocks (file I/O); the refresher runs it in a worker thread.
"""

from __future__ import annotations

import bisect
import errno
import io
import os
import re
import stat
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

STATUS_NAME = "status.json"
NAME_SLACK = 600  # seconds a crawl may be named after its file was written (misnamed())
_STEP = 1 << 20  # bytes read at a time from a file that grows while it is read
MAX_CLOCK_SKEW = 3600  # seconds a crawl may be named ahead of the clock, by default
CRAWLS_END = 253_402_300_800  # 10000-01-01T00:00:00Z: no date (an archive's day) names it
_CRAWL_TIME = re.compile(r"[1-9][0-9]{0,11}")  # no leading zero: a crawl has one name


class LoadError(Exception):
    """A crawler file that must not be served; the message says why, ``kind`` names it."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind

    def __reduce__(self) -> tuple[type[LoadError], tuple[str, str]]:
        return LoadError, (self.kind, str(self))  # it crosses from the loader process

    @property
    def of_the_loader(self) -> bool:
        """Whether the loader failed (hung and killed, or died) rather than the file: the
        file is tried again, not refused."""
        return self.kind in LOADER_FAULTS


LOADER_FAULTS = ("timeout", "loader_died")  # LoadError kinds of the loader, not of the file


@dataclass(frozen=True)
class FileVersion:
    """What identifies one version of a file: it changes whenever the file is rewritten."""

    size: int
    mtime_ns: int

    @classmethod
    def of(cls, info: os.stat_result) -> FileVersion:
        return cls(info.st_size, info.st_mtime_ns)


def snapshot_timestamp(name: str) -> int | None:
    """The crawl timestamp a file name stands for, or None if it is not a crawl's: the one
    rule of which names are crawls, for every reader of the folder (the watcher, refresher
    and counting, the history's adoption, the archive, the v1 routes). A crawl is
    ``<timestamp>.json``, in decimal without a leading zero, from 1 to the end of year 9999
    in UTC; any other name is passed over as any other file is."""
    return crawl_time(name[:-5]) if name.endswith(".json") else None


def crawl_time(text: str) -> int | None:
    """``snapshot_timestamp`` of a name without its ``.json``: what a path naming a crawl
    must be too, so that a crawl has one URL."""
    timestamp = int(text) if _CRAWL_TIME.fullmatch(text) else 0
    return timestamp if is_crawl_time(timestamp) else None


def is_crawl_time(timestamp: int) -> bool:
    """Whether a crawl may be named ``timestamp`` (one read from an archive's manifest)."""
    return 0 < timestamp < CRAWLS_END


def named_ahead(timestamp: int, now: float, max_clock_skew: int) -> LoadError | None:
    """Why a crawl named ``timestamp`` is refused for now (more than ``max_clock_skew``
    seconds ahead of ``now``), or None."""
    if timestamp <= now + max_clock_skew:
        return None
    return LoadError(
        "future",
        f"named {int(timestamp - now)} s ahead of this machine's clock (more than "
        f"--max-clock-skew {max_clock_skew} s); it is tried again when that is no longer so",
    )


def is_crawler_file(name: str) -> bool:
    return name == STATUS_NAME or snapshot_timestamp(name) is not None


@dataclass(frozen=True)
class Listing:
    """The data folder at one moment: snapshot files by timestamp, and status.json, with
    what the refresher asks of them worked out here, off the event loop."""

    snapshots: dict[int, tuple[str, FileVersion]]
    status: FileVersion | None
    newest_first: list[int]  # snapshot timestamps, newest first
    names: frozenset[str]  # every file name listed
    changed: frozenset[int]  # timestamps new or rewritten since the previous listing


def misnamed(listing: Listing, timestamp: int) -> LoadError | None:
    """Why the crawl named ``timestamp`` is passed over, or None. A crawler names a crawl
    after its time and writes it then or later, so a crawl named more than NAME_SLACK
    seconds after its own file was written is misnamed; it is served only until a crawl
    with a plausible name is written after it (a misnamed file must not hold the service
    on one crawl while the real ones arrive under earlier names)."""
    version = listing.snapshots[timestamp][1]
    written = version.mtime_ns / 1e9
    if timestamp <= written + NAME_SLACK:
        return None
    for later, (_, other) in listing.snapshots.items():
        other_written = other.mtime_ns / 1e9
        if other_written > written and later <= other_written + NAME_SLACK:
            return LoadError(
                "misnamed",
                f"named {int(timestamp - written)} s after it was written, and a crawl "
                f"written later ({later}) has a plausible name",
            )
    return None


def list_data_dir(
    data_dir: Path, previous: Listing | None = None, only: Collection[str] | None = None
) -> Listing:
    """The folder's crawler files. With ``previous`` and ``only`` (names that changed, as
    the watcher saw them), only those names are looked at again, not the whole folder."""
    if previous is None or only is None:
        snapshots, status = _scan(data_dir)
        looked_at: Collection[int] = snapshots
        names = frozenset(name for name, _ in snapshots.values()) | {STATUS_NAME}
    else:  # the work is in proportion to the names that changed, not to the folder
        snapshots, status = dict(previous.snapshots), previous.status
        looked_at, gone, added = [], set(), set()
        for name in only:
            timestamp = snapshot_timestamp(name)
            if timestamp is None and name != STATUS_NAME:
                continue
            version = file_version(data_dir / name)
            if timestamp is None:
                status = version
                continue
            looked_at.append(timestamp)
            if timestamp in snapshots:
                gone.add(snapshots[timestamp][0])
            if version is None:
                snapshots.pop(timestamp, None)
            else:
                snapshots[timestamp] = (name, version)
                added.add(name)
        names = previous.names if gone == added else previous.names.difference(gone) | added
    before = previous.snapshots if previous is not None else {}
    return Listing(
        snapshots,
        status,
        newest_first=_newest_first(snapshots, previous, looked_at),
        names=names,
        changed=frozenset(t for t in looked_at if t in snapshots and before.get(t) != snapshots[t]),
    )


def _newest_first(
    snapshots: dict[int, tuple[str, FileVersion]],
    previous: Listing | None,
    looked_at: Collection[int],
) -> list[int]:
    """The timestamps newest first: from the previous listing's order when only a few
    were looked at (sorting a large folder's timestamps anew takes milliseconds)."""
    if previous is None or looked_at is snapshots:
        return sorted(snapshots, reverse=True)
    before = previous.snapshots
    removed = {t for t in looked_at if t in before and t not in snapshots}
    added = sorted({t for t in looked_at if t in snapshots and t not in before})
    if not removed and not added:
        return previous.newest_first
    order = (
        [t for t in previous.newest_first if t not in removed]
        if removed
        else [*previous.newest_first]
    )
    for timestamp in added:
        bisect.insort(order, timestamp, key=lambda t: -t)
    return order


def _scan(data_dir: Path) -> tuple[dict[int, tuple[str, FileVersion]], FileVersion | None]:
    """Every crawler file with its version: each name matched once, stat'ed through its
    directory entry (8,640 crawls are listed before the first answer)."""
    snapshots: dict[int, tuple[str, FileVersion]] = {}
    status = None
    with os.scandir(data_dir) as entries:
        for entry in entries:
            name = entry.name
            timestamp = snapshot_timestamp(name)
            if timestamp is None and name != STATUS_NAME:
                continue
            try:
                info = entry.stat()
                version: FileVersion | None = FileVersion(info.st_size, info.st_mtime_ns)
            except OSError:  # a link that cannot be followed: the name's own version
                version = file_version(Path(entry.path))
            if version is None:
                continue
            if timestamp is None:
                status = version
            else:
                snapshots[timestamp] = (name, version)
    return snapshots, status


def file_version(path: Path) -> FileVersion | None:
    """The version of what the name stands for; of the name itself where that cannot be
    followed (a link in a loop, to nothing, or out of reach): reading it is then refused,
    as that entry's problem. None if the name is gone."""
    try:
        return FileVersion.of(path.stat())
    except OSError:
        try:
            return FileVersion.of(path.lstat())
        except FileNotFoundError:
            return None


def read_file(path: Path, max_size: int) -> tuple[bytes, FileVersion]:
    """Read a whole regular file, refusing empty, over-large and unreadable ones; never
    blocks on a FIFO or a device, never allocates more than the file holds.
    FileNotFoundError passes through: the file was removed since it was listed."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        if os.path.lexists(path):
            raise LoadError("unreadable", "a symbolic link to nothing") from None
        raise
    except OSError as exc:
        raise LoadError("unreadable", _reason(exc)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise LoadError("not_a_file", "not a regular file (a folder, FIFO, socket or device)")
        if info.st_size > max_size:
            raise LoadError(
                "too_large", f"{info.st_size} bytes is over the limit of {max_size} bytes"
            )
        with open(fd, "rb", buffering=0, closefd=False) as handle:
            data = _read_bounded(handle, info.st_size, max_size)
    except OSError as exc:
        raise LoadError("unreadable", _reason(exc)) from None
    finally:
        os.close(fd)
    if len(data) > max_size:
        raise LoadError("too_large", f"grew past the limit of {max_size} bytes while being read")
    if not data or data.isspace():  # not strip(): that copies the whole file
        raise LoadError("empty", "the file is empty")
    return data, FileVersion.of(info)


def _read_bounded(handle: io.FileIO, size: int, max_size: int) -> bytes:
    """What the file holds, reading at most ``max_size + 1`` bytes; a file that grows while
    it is read is read on in steps, so nothing is allocated for bytes that are not there."""
    parts = [handle.read(size + 1) or b""]
    total = len(parts[0])
    while total > size and total <= max_size and (part := handle.read(_STEP)):
        parts.append(part)
        total += len(part)
    return b"".join(parts)


def _reason(error: OSError) -> str:
    name = errno.errorcode.get(error.errno or 0, "error")
    return f"{error.strerror or error} ({name})"
