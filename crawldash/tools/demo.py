"""``crawldash demo``: write a realistic data folder, as a crawler and crawldash leave it."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from ..crawl.files import STATUS_NAME, snapshot_timestamp, write_atomically
from ..live.memory.history import HistoryEntry
from ..live.memory.index_files import HistoryStore, PresenceStore
from ..live.memory.presence import Presence
from ..live.memory.presence_codec import encode_presence
from .demo_data import generate_crawls, status_json, tip_height

log = logging.getLogger(__name__)
INTERVAL = 600


def write_demo(
    directory: Path,
    *,
    nodes: int,
    crawls: int,
    keep_files: int,
    seed: int,
    end: int | None = None,
) -> tuple[Path, Path]:
    """Write ``crawls`` crawls ending now; keep the newest ``keep_files`` as files.

    The older crawls go into the history and presence indexes in ``state/``, as if the
    crawler had pruned their files while crawldash was running. Returns the data and state
    folders.
    """
    data_dir, state_dir = directory / "data", directory / "state"
    data_dir.mkdir(parents=True, exist_ok=True)
    _remove_old_crawls(data_dir)
    end = end if end is not None else int(time.time()) // INTERVAL * INTERVAL
    started = time.monotonic()
    pruned: list[HistoryEntry] = []
    presence = Presence()
    for index, crawl in enumerate(
        generate_crawls(nodes=nodes, crawls=crawls, interval=INTERVAL, end=end, seed=seed)
    ):
        if index < crawls - keep_files:
            height = tip_height(crawl.timestamp)  # the generator's consensus height
            pruned.append(
                HistoryEntry(crawl.timestamp, crawl.reachable, 0, 0, crawl.networks(), height)
            )
            presence.add(crawl.timestamp, crawl.addresses())
            continue
        path = data_dir / f"{crawl.timestamp}.json"
        write_atomically(path, crawl.body())
        os.utime(path, (crawl.timestamp, crawl.timestamp))
    HistoryStore.for_data_dir(state_dir, data_dir).save(pruned)
    PresenceStore.for_data_dir(state_dir, data_dir).save(encode_presence(presence))
    write_atomically(data_dir / STATUS_NAME, status_json(end=end, seed=seed))
    log.info(
        "demo written dir=%s crawls=%d files=%d nodes=%d seconds=%.1f",
        directory,
        crawls,
        min(crawls, keep_files),
        nodes,
        time.monotonic() - started,
    )
    return data_dir, state_dir


def _remove_old_crawls(data_dir: Path) -> None:
    for path in data_dir.iterdir():
        if snapshot_timestamp(path.name) is not None:
            path.unlink()
