"""The newest crawl, loaded while the server starts.

Before the server imports its HTTP code (about half of its start-up), the loader process
is started and given the newest snapshot file in the folder; the refresher's first load
takes that result if it asks for the same file, and serves it as the version that was
read (a file rewritten meanwhile is read again at the next refresh). Both cores work on
the first answer: the server's imports on one, the load on the other.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from ...crawl.decode import Rules
from ...crawl.files import named_ahead, snapshot_timestamp
from .client import LoaderClient
from .new_crawl import load_new_crawl


def start_newest_load(loader: LoaderClient, data_dir: Path, rules: Rules) -> Path | None:
    """Give ``loader`` a head start on the newest snapshot file of ``data_dir``.

    Args:
        loader: the server's loader process (started by this).
        data_dir: the crawler's folder.
        rules: what a crawl must be to be served (how far ahead of this machine's clock
            it may be named too), as the refresher applies them.

    Returns:
        The file being loaded, or None if the folder has none (or cannot be listed).
    """
    newest = newest_snapshot(data_dir, time.time(), rules.max_clock_skew)
    if newest is not None:
        loader.head_start(load_new_crawl, newest, rules)
    return newest


def newest_snapshot(data_dir: Path, now: float, max_clock_skew: int) -> Path | None:
    """The snapshot file of ``data_dir`` with the newest timestamp not refused as named
    ahead of ``now``, by name alone (nothing is read or stat'ed)."""
    try:
        with os.scandir(data_dir) as entries:
            names = [(snapshot_timestamp(entry.name), entry.name) for entry in entries]
    except OSError:
        return None
    usable = [
        (timestamp, name)
        for timestamp, name in names
        if timestamp is not None and named_ahead(timestamp, now, max_clock_skew) is None
    ]
    return data_dir / max(usable)[1] if usable else None
