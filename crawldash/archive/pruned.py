"""A crawl whose JSON file was pruned, read back from the archive and encoded exactly as
it was served from its file (``past_crawls.archived_of``): what the loader runs."""

from __future__ import annotations

from pathlib import Path

from ..crawl.decode import Snapshot, consensus_height
from ..crawl.files import FileVersion
from ..live.snapshot.past_crawls import ArchivedSnapshot, archived_of
from .columns import nodes_of
from .layout import look

ATTEMPTS = 2  # a day compacted between the look and the read: look again


def load_pruned(archive_dir: Path, network: str, timestamp: int) -> ArchivedSnapshot | None:
    """The archived crawl of ``timestamp`` in every served form, or None if not archived.

    Args:
        archive_dir: the archive's root.
        network: the network's name.
        timestamp: the crawl's.

    Returns:
        The crawl as ``/api/v1/snapshots/<timestamp>/`` serves it.
    """
    from . import parquet  # pyarrow: in the loader's child only

    for attempt in range(ATTEMPTS):
        path = look(archive_dir, network).files.get(timestamp)
        if path is None:
            return None
        try:
            crawl = parquet.crawls_in(path)[timestamp]
            rows = parquet.crawl_rows(path, timestamp)
        except (FileNotFoundError, KeyError):
            if attempt + 1 == ATTEMPTS:
                raise
            continue
        nodes = nodes_of(rows)
        snapshot = Snapshot(timestamp, nodes, consensus_height(nodes.values()), 0)
        return archived_of(snapshot, FileVersion(crawl.size, crawl.mtime_ns))
    return None
