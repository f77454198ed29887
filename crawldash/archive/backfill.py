"""``crawldash archive``: the crawls of a data folder put into the archive, oldest first,
each one that is not archived yet; complete days compacted as the run passes them.

Resumable by construction: what is archived is read from the archive itself (the part
files and day manifests), so a run killed at any point leaves whole files only, and the
next run skips what they hold.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..crawl.decode import Rules, decode_snapshot
from ..crawl.files import LoadError, list_data_dir, read_file
from .layout import CrawlFile, day_of, locked, look
from .writing import compact_complete_days, write_part

log = logging.getLogger(__name__)


@dataclass
class Backfilled:
    """What a run did."""

    archived: list[int] = field(default_factory=list)  # crawls written
    skipped: int = 0  # crawls archived before
    refused: dict[int, str] = field(default_factory=dict)  # crawls that cannot be read
    seconds: float = 0.0


def backfill(
    data_dir: Path,
    archive_dir: Path,
    network: str,
    rules: Rules,
    *,
    stop: Callable[[], bool] = lambda: False,
) -> Backfilled:
    """Archive every crawl of ``data_dir`` that is not archived yet.

    Args:
        data_dir: the crawler's folder.
        archive_dir: the archive's root.
        network: the network's name.
        rules: what a crawl file must be (the server's rules: size limit, empty crawls).
        stop: asked between crawls; True ends the run early (what it wrote stays).

    Returns:
        The crawls archived, skipped and refused.
    """
    started, done = time.perf_counter(), Backfilled()
    listing = list_data_dir(data_dir)
    with locked(archive_dir, network):
        archived = set(look(archive_dir, network).files)
    for timestamp in reversed(listing.newest_first):
        if stop():
            break
        if timestamp in archived:
            done.skipped += 1
            continue
        name = listing.snapshots[timestamp][0]
        try:
            data, version = read_file(data_dir / name, rules.max_file_size)
            snapshot = decode_snapshot(data, timestamp, rules.allow_empty)
        except (LoadError, FileNotFoundError) as exc:
            done.refused[timestamp] = str(exc)
            continue
        with locked(archive_dir, network):
            contents = look(archive_dir, network)
            if timestamp not in contents.files:  # another writer may have come first
                write_part(
                    archive_dir, network, snapshot, CrawlFile(version.size, version.mtime_ns)
                )
                done.archived.append(timestamp)
                contents.files[timestamp] = data_dir  # only its presence counts here
                contents.days.setdefault(day_of(timestamp), []).append(timestamp)
            compact_complete_days(archive_dir, network, contents)
    done.seconds = time.perf_counter() - started
    return done
