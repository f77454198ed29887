"""The data folder: which crawler files it holds now, and reading each kind of them.

Everything here blocks (file I/O, decoding); the refresher runs it in a worker thread.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from .loader import (
    STATUS_NAME,
    FileVersion,
    count_nodes,
    decode_snapshot,
    decode_status,
    read_file,
    snapshot_timestamp,
)
from .models import CrawlerStatus
from .state import ServedSnapshot


@dataclass(frozen=True)
class Listing:
    """The data folder at one moment: snapshot files by timestamp, and status.json, with
    what the refresher asks of them worked out here, off the event loop."""

    snapshots: dict[int, tuple[str, FileVersion]]
    status: FileVersion | None
    newest_first: list[int]  # snapshot timestamps, newest first
    names: frozenset[str]  # every file name listed
    changed: frozenset[int]  # timestamps new or rewritten since the previous listing


def list_data_dir(
    data_dir: Path, previous: Listing | None = None, only: Collection[str] | None = None
) -> Listing:
    """The folder's crawler files. With ``previous`` and ``only`` (names that changed, as
    the watcher saw them), only those names are looked at again, not the whole folder."""
    if previous is None or only is None:
        snapshots, status = _scan(data_dir)
    else:
        snapshots, status = dict(previous.snapshots), previous.status
        for name in only:
            timestamp = snapshot_timestamp(name)
            if timestamp is None and name != STATUS_NAME:
                continue
            version = _version(data_dir / name)
            if timestamp is None:
                status = version
            elif version is None:
                snapshots.pop(timestamp, None)
            else:
                snapshots[timestamp] = (name, version)
    before = previous.snapshots if previous is not None else {}
    return Listing(
        snapshots,
        status,
        newest_first=sorted(snapshots, reverse=True),
        names=frozenset(name for name, _ in snapshots.values()) | {STATUS_NAME},
        changed=frozenset(t for t, seen in snapshots.items() if before.get(t) != seen),
    )


def _scan(data_dir: Path) -> tuple[dict[int, tuple[str, FileVersion]], FileVersion | None]:
    snapshots: dict[int, tuple[str, FileVersion]] = {}
    status = None
    with os.scandir(data_dir) as entries:
        for entry in entries:
            timestamp = snapshot_timestamp(entry.name)
            if timestamp is None and entry.name != STATUS_NAME:
                continue
            try:
                info = entry.stat()
            except FileNotFoundError:
                continue
            version = FileVersion(info.st_size, info.st_mtime_ns)
            if timestamp is None:
                status = version
            else:
                snapshots[timestamp] = (entry.name, version)
    return snapshots, status


def _version(path: Path) -> FileVersion | None:
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    return FileVersion(info.st_size, info.st_mtime_ns)


def read_status(path: Path, max_size: int) -> CrawlerStatus:
    return decode_status(read_file(path, max_size)[0])


def read_count(path: Path, max_size: int) -> tuple[int, tuple[int, ...]]:
    return count_nodes(read_file(path, max_size)[0])


def read_snapshot(path: Path, max_size: int) -> ServedSnapshot:
    """Decode a snapshot file and encode its response, ready to serve."""
    timestamp = snapshot_timestamp(path.name)
    if timestamp is None:
        raise ValueError(f"{path.name} is not a snapshot file name")
    data, version = read_file(path, max_size)
    return ServedSnapshot.prepare(decode_snapshot(data, timestamp), version.mtime_ns / 1e9)
