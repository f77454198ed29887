"""Writing the archive: a crawl's part file as it arrives, and the compaction of each
complete day into one file. Every write holds the network's lock and first looks at what
is archived, so a crawl is never archived twice, whichever writer (the server's loader,
a backfill, both) comes first. What takes time (encoding a part, reading and encoding a
day) is done before the lock is taken: writers wait for each other only to write.

A compacted day replaces its folder in one step: the new folder (the day file and its
manifest) is made beside it, under a name no reader globs, and the two are exchanged
(``renameat2(RENAME_EXCHANGE)``); the old one is removed after. A reader listing the day
sees the parts or the day file, never both, so never counts a crawl twice; one that listed
the parts just before may find them gone, and asks again.
"""

from __future__ import annotations

import ctypes
import os
import shutil
from pathlib import Path

import pyarrow as pa

from ..crawl.atomic import write_atomically
from ..crawl.decode import Snapshot
from . import parquet
from .columns import columns_of
from .layout import (
    DAY_FILE,
    MANIFEST,
    PART,
    PARTS,
    STAGING,
    Contents,
    CrawlFile,
    day_manifest,
    day_of,
    holds,
    locked,
    look,
    manifest_body,
    network_dir,
    part_path,
    read_manifest,
)

AT_FDCWD = -100
RENAME_EXCHANGE = 2
ATTEMPTS = 3  # a day's compaction redone when its folder changed while it was read


def archive_crawl(archive_dir: Path, network: str, snapshot: Snapshot, crawl: CrawlFile) -> bool:
    """Archive one decoded crawl (unless it is already), then compact the days it made
    complete.

    Args:
        archive_dir: the archive's root.
        network: the network's name.
        snapshot: the crawl, as decoded.
        crawl: its file's size and modification time.

    Returns:
        Whether it was written now (False: it was archived before).

    Raises:
        OSError: the archive cannot be written (unwritable, a full disk).
    """
    crawl, body = encode_part(snapshot, network, crawl)
    written = write_part(archive_dir, network, snapshot.timestamp, crawl, body)
    with locked(archive_dir, network):
        contents = look(archive_dir, network)
    compact_complete_days(archive_dir, network, contents)
    return written


def encode_part(snapshot: Snapshot, network: str, file: CrawlFile) -> tuple[CrawlFile, bytes]:
    """A crawl's part file, as bytes (no lock needed: nothing is written), and what the
    archive keeps of the crawl: its file's, with its nodes and height."""
    crawl = archived_as(snapshot, file)
    table = parquet.table_of(columns_of(snapshot, network))
    return crawl, parquet.encode(table, {snapshot.timestamp: crawl}, parquet.PART_ZSTD_LEVEL)


def archived_as(snapshot: Snapshot, file: CrawlFile) -> CrawlFile:
    """What the archive keeps of a crawl: its file's size and time, its nodes and height."""
    return CrawlFile(file.size, file.mtime_ns, len(snapshot.nodes), snapshot.latest_height)


def write_part(
    archive_dir: Path, network: str, timestamp: int, crawl: CrawlFile, body: bytes
) -> bool:
    """Write a crawl's part (``encode_part``) unless the crawl is archived already; the
    day's ``_parts.json`` names it first (a name without its part is never read).

    Returns:
        Whether it was written now.
    """
    with locked(archive_dir, network):
        if holds(archive_dir, network, timestamp):
            return False
        path = part_path(archive_dir, network, timestamp)
        path.parent.mkdir(parents=True, exist_ok=True)
        parts = read_manifest(path.parent / PARTS)
        parts[timestamp] = crawl
        write_atomically(path.parent / PARTS, manifest_body(parts))
        parquet.write_bytes(path, body)
        return True


def write_day(
    archive_dir: Path, network: str, day: str, crawls: dict[int, CrawlFile], body: bytes
) -> bool:
    """Write a complete day's file (``parquet.DayWriter``) and manifest, made with no lock
    held, unless the day's folder holds any crawl by now (another writer began the day):
    then nothing is written, and the day's crawls are archived one by one.

    Returns:
        Whether it was written now.
    """
    folder = network_dir(archive_dir, network) / f"date={day}"
    with locked(archive_dir, network):
        if any(PART.fullmatch(name) or name in (DAY_FILE, MANIFEST) for name in _names(folder)):
            return False
        folder.mkdir(exist_ok=True)
        _exchange(folder, crawls, body)
        return True


def compact_complete_days(archive_dir: Path, network: str, contents: Contents) -> int:
    """Compact every day with part files that a crawl of a later day makes complete.

    Returns:
        The days compacted.
    """
    newest = contents.newest
    if newest is None:
        return 0
    last_day = day_of(newest)
    loose = {day_of(t) for t, path in contents.files.items() if PART.fullmatch(path.name)}
    return sum(compact(archive_dir, network, day) for day in sorted(loose) if day < last_day)


def compact(archive_dir: Path, network: str, day: str) -> bool:
    """Compact one day's folder into one file if it holds parts. The files are read and
    encoded without the lock, then exchanged with it, unless the folder changed meanwhile
    (another writer added a part, or compacted it first): then again, and at the last
    attempt all with the lock held.

    Returns:
        Whether the day was compacted now.
    """
    folder = archive_dir / f"network={network}" / f"date={day}"
    for attempt in range(ATTEMPTS):
        with locked(archive_dir, network):
            sources = _sources(folder)
            if not sources[0]:
                return False
            if attempt + 1 == ATTEMPTS:
                _exchange(folder, *_compacted(folder, sources))
                return True
        try:
            compacted = _compacted(folder, sources)
        except FileNotFoundError:  # compacted meanwhile by another writer
            continue
        with locked(archive_dir, network):
            if _sources(folder) == sources:
                _exchange(folder, *compacted)
                return True
    return False


Sources = tuple[list[str], tuple[int, int, int] | None]


def _sources(folder: Path) -> Sources:
    """A day folder's parts, and its day file's identity (inode, size, time) if any."""
    parts = sorted(name for name in _names(folder) if PART.fullmatch(name))
    try:
        info = (folder / DAY_FILE).stat()
    except FileNotFoundError:
        return parts, None
    return parts, (info.st_ino, info.st_size, info.st_mtime_ns)


def _compacted(folder: Path, sources: Sources) -> tuple[dict[int, CrawlFile], bytes]:
    """The day's crawls (its parts and day file) as one file: its manifest and bytes."""
    parts = [folder / name for name in sources[0]]
    crawls = day_manifest(folder)
    for part in parts:
        crawls.update(parquet.crawls_in(part))
    day_file = [folder / DAY_FILE] if sources[1] is not None else []
    table = pa.concat_tables([parquet.read(path) for path in parts + day_file])
    return crawls, parquet.encode(table, crawls)


def _names(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except FileNotFoundError:
        return []


def _exchange(folder: Path, crawls: dict[int, CrawlFile], body: bytes) -> None:
    """Replace a day's folder by one holding ``body`` (with the lock held)."""
    parts = [folder / name for name in _names(folder) if PART.fullmatch(name)]
    staging = folder.parent / f"{STAGING}{folder.name}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    parquet.write_bytes(staging / DAY_FILE, body)
    write_atomically(staging / MANIFEST, manifest_body(crawls))
    _fsync_dir(staging)
    _replace_dir(staging, folder, parts)
    shutil.rmtree(staging, ignore_errors=True)
    _fsync_dir(folder.parent)


def _replace_dir(staging: Path, folder: Path, parts: list[Path]) -> None:
    """Exchange the two folders in one step; where the kernel cannot, move the day file
    and manifest in, then remove the parts (a reader may then count a crawl twice for
    the moment between: docs/archive.md)."""
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is not None:
        done = renameat2(
            AT_FDCWD, os.fsencode(staging), AT_FDCWD, os.fsencode(folder), RENAME_EXCHANGE
        )
        if done == 0:
            return
    os.replace(staging / DAY_FILE, folder / DAY_FILE)
    os.replace(staging / MANIFEST, folder / MANIFEST)
    for part in parts:
        part.unlink(missing_ok=True)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
