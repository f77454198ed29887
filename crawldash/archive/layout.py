"""Where the archive keeps what: its folders and file names, the day manifests, the lock
its writers share, and what a look at the folders says is archived. No pyarrow here: the
server reads only names, sizes and manifests.

One network's archive is ``network=NAME/``; in it each UTC day is ``date=YYYY-MM-DD/``,
holding ``part-<timestamp>.parquet`` files (one crawl each, written as crawls arrive) and,
once the day is complete and compacted, ``day.parquet`` with ``_crawls.json`` (the crawls
it holds). Names starting with ``.`` or ``_`` are not data to DuckDB's, ClickHouse's or
Spark's globs (``*/*/*.parquet``): temporary files and folders start with ``.``.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

PART = re.compile(r"part-([0-9]{1,12})\.parquet")
DAY_FILE = "day.parquet"
MANIFEST = "_crawls.json"
LOCK = ".lock"
STAGING = ".compacting-"  # a day being compacted, beside the day's folder


@dataclass(frozen=True)
class CrawlFile:
    """What the archive knows of a crawl's file as it was read: its size and modification
    time (for Last-Modified, as before the file was pruned)."""

    size: int
    mtime_ns: int


def network_dir(archive_dir: Path, network: str) -> Path:
    return archive_dir / f"network={network}"


def day_of(timestamp: int) -> str:
    """The UTC day of a crawl, as its partition names it: ``2026-11-26``."""
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d")


def day_dir(archive_dir: Path, network: str, timestamp: int) -> Path:
    return network_dir(archive_dir, network) / f"date={day_of(timestamp)}"


def part_path(archive_dir: Path, network: str, timestamp: int) -> Path:
    return day_dir(archive_dir, network, timestamp) / f"part-{timestamp}.parquet"


def manifest_body(crawls: dict[int, CrawlFile]) -> bytes:
    """``_crawls.json`` (and each file's ``crawldash.crawls`` metadata): its crawls."""
    listed = {str(t): [c.size, c.mtime_ns] for t, c in sorted(crawls.items())}
    return json.dumps({"crawls": listed}, separators=(",", ":")).encode()


def manifest_crawls(body: bytes) -> dict[int, CrawlFile]:
    listed = json.loads(body)["crawls"]
    return {int(t): CrawlFile(int(size), int(mtime)) for t, (size, mtime) in listed.items()}


@dataclass
class Contents:
    """One network's archive at one look: where each crawl is, and the bytes of its files."""

    files: dict[int, Path] = field(default_factory=dict)  # crawl -> the file holding it
    bytes: int = 0  # of every data file (parquet, manifests)
    days: dict[str, list[int]] = field(default_factory=dict)  # day -> its crawls

    @property
    def newest(self) -> int | None:
        return max(self.files) if self.files else None


def look(archive_dir: Path, network: str) -> Contents:
    """What is archived for ``network``: a crawl is in a part file named for it or in a
    compacted day file's manifest. Unreadable folders and manifests count as empty.

    Args:
        archive_dir: the archive's root (``--archive-dir``).
        network: the network's name.

    Returns:
        Each crawl's file, and the total bytes.
    """
    contents = Contents()
    try:
        days = sorted(os.scandir(network_dir(archive_dir, network)), key=lambda e: e.name)
    except OSError:
        return contents
    for day in days:
        if not day.name.startswith("date=") or not day.is_dir():
            continue
        crawls = contents.days.setdefault(day.name[5:], [])
        try:
            entries = list(os.scandir(day.path))
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith(".") or not entry.is_file():
                continue
            contents.bytes += entry.stat().st_size
            match = PART.fullmatch(entry.name)
            if match is not None:
                contents.files[int(match.group(1))] = Path(entry.path)
                crawls.append(int(match.group(1)))
            elif entry.name == MANIFEST:
                for timestamp in _read_manifest(Path(entry.path)):
                    contents.files.setdefault(timestamp, Path(day.path) / DAY_FILE)
                    crawls.append(timestamp)
    return contents


def _read_manifest(path: Path) -> dict[int, CrawlFile]:
    try:
        return manifest_crawls(path.read_bytes())
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def day_manifest(folder: Path) -> dict[int, CrawlFile]:
    """The crawls a day folder's compacted file holds (none if not compacted)."""
    return _read_manifest(folder / MANIFEST)


@contextmanager
def locked(archive_dir: Path, network: str) -> Iterator[Path]:
    """Hold the network's write lock (every writer of it, in any process, takes it), after
    removing what a writer killed mid-way left: temporary files and staging folders."""
    folder = network_dir(archive_dir, network)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            _remove_leftovers(folder)
            yield folder
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _remove_leftovers(folder: Path) -> None:
    for entry in os.scandir(folder):
        if entry.name.startswith(STAGING):
            shutil.rmtree(entry.path, ignore_errors=True)
        elif entry.name.startswith("date=") and entry.is_dir():
            for inner in os.scandir(entry.path):
                if inner.name.startswith(".") and inner.name.endswith(".tmp"):
                    Path(inner.path).unlink(missing_ok=True)
