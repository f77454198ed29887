"""Writing the archive: a crawl's part file as it arrives, and the compaction of each
complete day into one file. Every write holds the network's lock and first looks at what
is archived, so a crawl is never archived twice, whichever writer (the server's loader,
a backfill, both) comes first.

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

from ..crawl.decode import Snapshot
from ..crawl.files import write_atomically
from . import parquet
from .columns import columns_of
from .layout import (
    DAY_FILE,
    MANIFEST,
    PART,
    STAGING,
    Contents,
    CrawlFile,
    day_manifest,
    day_of,
    locked,
    look,
    manifest_body,
    part_path,
)

AT_FDCWD = -100
RENAME_EXCHANGE = 2


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
    with locked(archive_dir, network):
        contents = look(archive_dir, network)
        written = snapshot.timestamp not in contents.files
        if written:
            write_part(archive_dir, network, snapshot, crawl)
            contents.files[snapshot.timestamp] = part_path(archive_dir, network, snapshot.timestamp)
            contents.days.setdefault(day_of(snapshot.timestamp), []).append(snapshot.timestamp)
        compact_complete_days(archive_dir, network, contents)
    return written


def write_part(archive_dir: Path, network: str, snapshot: Snapshot, crawl: CrawlFile) -> None:
    path = part_path(archive_dir, network, snapshot.timestamp)
    path.parent.mkdir(parents=True, exist_ok=True)
    table = parquet.table_of(columns_of(snapshot, network))
    parquet.write(table, path, {snapshot.timestamp: crawl}, parquet.PART_ZSTD_LEVEL)


def compact_complete_days(archive_dir: Path, network: str, contents: Contents) -> int:
    """Compact every day with part files that a crawl of a later day makes complete.

    Returns:
        The days compacted.
    """
    newest = contents.newest
    if newest is None:
        return 0
    compacted = 0
    for day in sorted(contents.days):
        if day >= day_of(newest):
            break
        folder = archive_dir / f"network={network}" / f"date={day}"
        if any(PART.fullmatch(name) for name in _names(folder)):
            compact_day(folder)
            compacted += 1
    return compacted


def _names(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except FileNotFoundError:
        return []


def compact_day(folder: Path) -> None:
    """Replace a day's folder by one holding its crawls in one file (with the lock held)."""
    parts = sorted(folder / name for name in _names(folder) if PART.fullmatch(name))
    sources = parts + ([folder / DAY_FILE] if (folder / DAY_FILE).exists() else [])
    crawls = day_manifest(folder)
    for part in parts:
        crawls.update(parquet.crawls_in(part))
    table = pa.concat_tables([parquet.read(path) for path in sources])
    staging = folder.parent / f"{STAGING}{folder.name}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    parquet.write(table, staging / DAY_FILE, crawls)
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
