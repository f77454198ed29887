"""bitnodes' crawl files (``data/crawl/<magic>/<ts>.json``, written by its ``crawl.py``):
which addresses completed a version handshake in a crawl. An export (the folder crawldash
serves) is taken a little after its crawl, from the connections ``ping.py`` holds; a node
in the crawl file but not in the export was reached and not held.

Each export is paired with the newest crawl file not named after it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .count import count_nodes
from .files import FileVersion, read_file, snapshot_timestamp


@dataclass(frozen=True)
class Reached:
    """One crawl file's addresses: those the crawler reached in that crawl."""

    timestamp: int  # the crawl's, from its file's name
    version: FileVersion  # of the file as it was read
    addresses: frozenset[str]  # canonical host:port


def sibling_crawl_dir(export_dir: Path) -> Path | None:
    """bitnodes' crawl folder beside an export folder (``data/export/<magic>`` ->
    ``data/crawl/<magic>``), if the export folder is laid out so and the other exists.

    Args:
        export_dir: the data folder crawldash serves.

    Returns:
        The crawl folder, or None.
    """
    if export_dir.parent.name != "export":
        return None
    crawl_dir = export_dir.parent.parent / "crawl" / export_dir.name
    return crawl_dir if crawl_dir.is_dir() else None


def newest_not_after(crawl_dir: Path, timestamp: int) -> tuple[int, Path] | None:
    """The crawl file of ``crawl_dir`` named with the newest timestamp not after
    ``timestamp``, by name alone.

    Args:
        crawl_dir: bitnodes' crawl folder.
        timestamp: the export's.

    Returns:
        Its timestamp and path, or None if there is none. Raises OSError if the folder
        cannot be listed.
    """
    best: tuple[int, str] | None = None
    with os.scandir(crawl_dir) as entries:
        for entry in entries:
            named = snapshot_timestamp(entry.name)
            if named is not None and named <= timestamp and (best is None or named > best[0]):
                best = (named, entry.name)
    return None if best is None else (best[0], crawl_dir / best[1])


def read_reached(path: Path, timestamp: int, max_size: int) -> Reached:
    """A crawl file's addresses, decoded as a crawl is counted (either form of row).

    Args:
        path: the crawl file.
        timestamp: its timestamp.
        max_size: the largest file read.

    Returns:
        What it says. Raises LoadError or OSError if it cannot be used.
    """
    data, version = read_file(path, max_size)
    return Reached(timestamp, version, frozenset(count_nodes(data, allow_empty=True).addresses))
