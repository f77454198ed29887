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

from ..crawl.files import is_crawl_time

PART = re.compile(r"part-([0-9]{1,12})\.parquet")
DAY_FILE = "day.parquet"
MANIFEST = "_crawls.json"
PARTS = "_parts.json"  # the crawls of a day's part files, in a manifest's form
LOCK = ".lock"
STAGING = ".compacting-"  # a day being compacted, beside the day's folder


@dataclass(frozen=True)
class CrawlFile:
    """What the archive knows of a crawl's file as it was read: its size and modification
    time (for Last-Modified, as before the file was pruned), and of the crawl its nodes and
    consensus height (to list it once the history no longer holds it; None: not known)."""

    size: int
    mtime_ns: int
    nodes: int | None = None
    height: int | None = None


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
    """``_crawls.json``, ``_parts.json`` and each file's ``crawldash.crawls`` metadata: its
    crawls, each as ``[size, mtime_ns, nodes, height]``."""
    listed = {str(t): [c.size, c.mtime_ns, c.nodes, c.height] for t, c in sorted(crawls.items())}
    return json.dumps({"crawls": listed}, separators=(",", ":")).encode()


def manifest_crawls(body: bytes) -> dict[int, CrawlFile]:
    """The crawls of ``manifest_body()`` (those of an archive written before the nodes and
    height were kept have two fields: those are None)."""
    listed = json.loads(body)["crawls"]
    return {int(t): _crawl_file(*fields) for t, fields in listed.items()}


def _crawl_file(
    size: int, mtime_ns: int, nodes: int | None = None, height: int | None = None
) -> CrawlFile:
    return CrawlFile(
        int(size),
        int(mtime_ns),
        None if nodes is None else int(nodes),
        None if height is None else int(height),
    )


@dataclass
class Contents:
    """One network's archive at one look: where each crawl is, and the bytes of its files."""

    files: dict[int, Path] = field(default_factory=dict)  # crawl -> the file holding it
    bytes: int = 0  # of every data file (parquet, manifests)
    days: dict[str, list[int]] = field(default_factory=dict)  # day -> its crawls
    counts: dict[int, tuple[int, int | None]] = field(default_factory=dict)  # nodes, height

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
        if day.name.startswith("date=") and day.is_dir():
            _look_at_day(Path(day.path), contents)
    return contents


def _look_at_day(folder: Path, contents: Contents) -> None:
    """Add a day's crawls, their files, bytes and counts (where known) to ``contents``."""
    crawls = contents.days.setdefault(folder.name[5:], [])
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    known: dict[int, CrawlFile] = {}
    for entry in entries:
        if entry.name.startswith(".") or not entry.is_file():
            continue
        contents.bytes += entry.stat().st_size
        match = PART.fullmatch(entry.name)
        if match is not None:
            contents.files[int(match.group(1))] = Path(entry.path)
            crawls.append(int(match.group(1)))
        elif entry.name == MANIFEST:
            compacted = read_manifest(Path(entry.path))
            known |= compacted
            for timestamp in compacted:
                contents.files.setdefault(timestamp, folder / DAY_FILE)
                crawls.append(timestamp)
        elif entry.name == PARTS:
            known = read_manifest(Path(entry.path)) | known
    for timestamp, crawl in known.items():
        if crawl.nodes is not None and timestamp in contents.files:
            contents.counts[timestamp] = (crawl.nodes, crawl.height)
    for timestamp in [t for t in crawls if not is_crawl_time(t)]:
        # archived by an earlier version from a name that is no crawl's now (``0.json``):
        # left on disk, but not listed, served or counted as a crawl
        crawls.remove(timestamp)
        contents.files.pop(timestamp, None)
        contents.counts.pop(timestamp, None)


def read_manifest(path: Path) -> dict[int, CrawlFile]:
    """The crawls of a manifest (``_crawls.json``, ``_parts.json``); none if unreadable."""
    try:
        return manifest_crawls(path.read_bytes())
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def holds(archive_dir: Path, network: str, timestamp: int) -> bool:
    """Whether a crawl is archived: its part file, or its day's manifest naming it (a
    look at one folder, not the archive's: what a writer asks with the lock held)."""
    part = part_path(archive_dir, network, timestamp)
    return part.exists() or timestamp in day_manifest(part.parent)


def day_manifest(folder: Path) -> dict[int, CrawlFile]:
    """The crawls a day folder's compacted file holds (none if not compacted)."""
    return read_manifest(folder / MANIFEST)


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
