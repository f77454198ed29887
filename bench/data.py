"""Benchmark data, made with crawldash's own demo generator."""

from __future__ import annotations

import gzip
import os
import shutil
import time
from pathlib import Path

from crawldash.tools.demo_data import generate_crawls, status_json

INTERVAL = 600
HISTORY_FILES = 8640
SMALL_NODES = 100  # older history files are small crawls: 8,640 full ones would be ~22 GB
WRITTEN_LATER = 50  # crawls the run writes one interval apart after the newest: up to now


def make(root: Path) -> dict[str, Path]:
    """data15k/: 8,638 small older crawls + the two newest of 15,000 nodes; data100k/: one
    100,000-node crawl; static/: the 15,000-node snapshot as nginx would serve it."""
    # The newest crawl is WRITTEN_LATER intervals old, so that the crawls the run writes
    # after it are not from the future (crawldash rejects those).
    end = int(time.time()) // INTERVAL * INTERVAL - WRITTEN_LATER * INTERVAL
    paths = {"data15k": root / "data15k", "data100k": root / "data100k", "static": root / "static"}
    for path in paths.values():  # fresh every run: the run itself writes new crawls
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
    small = generate_crawls(nodes=SMALL_NODES, crawls=HISTORY_FILES - 2, end=end - 2 * INTERVAL)
    for crawl in small:
        write(paths["data15k"] / f"{crawl.timestamp}.json", crawl.body(), crawl.timestamp)
    for big in generate_crawls(nodes=15_000, crawls=2, end=end, seed=2):  # with their churn
        write(paths["data15k"] / f"{big.timestamp}.json", big.body(), big.timestamp)
    (paths["data15k"] / "status.json").write_bytes(status_json(end=end))
    huge = next(iter(generate_crawls(nodes=100_000, crawls=1, end=end, seed=3)))
    write(paths["data100k"] / f"{end}.json", huge.body(), end)
    return paths


def write(path: Path, body: bytes, timestamp: int) -> None:
    path.write_bytes(body)
    os.utime(path, (timestamp, timestamp))


def static_snapshot(directory: Path, body: bytes) -> None:
    """The served snapshot body, and its .gz beside it for nginx's gzip_static."""
    (directory / "snapshot.json").write_bytes(body)
    (directory / "snapshot.json.gz").write_bytes(gzip.compress(body, 6, mtime=0))
