"""Benchmark data in a real bitnodes export's shape (bench.export_shape: the demo
generator's churn, each crawl's rows in a fresh order, a real export's spread of user
agents, ASNs and hosts, half the rows onion at 0.0, 0.0).

Crawl files are at the real export's size (15,000 nodes, about 2.7 MB, bitnodes export rows
of 15 fields). A real history of 8,640 of them would be ~23 GB: the older files are
hardlinks of a day's distinct crawls (144) under other timestamps' names, linked in turn,
so that consecutive files differ in order and content as real ones do. Hardlinks share
their pages in the page cache, so every file is read from memory, where a real history's
would come from disk past what the cache holds.
"""

from __future__ import annotations

import gzip
import multiprocessing
import os
import random
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from bench.export_shape import ShapedCrawl, shaped_crawls
from crawldash.demo.fake_crawler import status_json

INTERVAL = 600
NODES = 15_000
PAGE_CACHE_NOTE = (
    "older files are hardlinks of {distinct} distinct real-size crawls in bitnodes' shape "
    "(bench.export_shape): they share page cache, so all are read from memory"
)


@dataclass(frozen=True)
class Dataset:
    data15k: Path  # the served folder: real-size history, status.json
    big: Path  # one crawl of big_nodes nodes
    static: Path  # the served snapshot as nginx would serve it (once written)
    newest: int  # timestamp of data15k's newest crawl
    history_files: int
    distinct: int  # real-size crawls the older files are hardlinks of
    big_nodes: int


def make(
    root: Path, history_files: int, distinct: int, big_nodes: int, later: int
) -> tuple[Dataset, Iterator[ShapedCrawl]]:
    """data15k/: ``history_files`` real-size crawls (hardlinks but for the newest
    ``distinct``); big/: one ``big_nodes``-node crawl; static/: empty until
    ``static_snapshot``. Also the ``later`` crawls that follow the newest, one INTERVAL
    apart, for the run to write (the newest present is ``later`` intervals old, so that
    none written is from the future, which crawldash rejects)."""
    end = int(time.time()) // INTERVAL * INTERVAL - later * INTERVAL
    data15k, big, static = root / "data15k", root / "big", root / "static"
    for path in (data15k, big, static):  # fresh every run: the run itself writes new crawls
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
    following = real_size_history(data15k, history_files, distinct, end, later)
    (data15k / "status.json").write_bytes(status_json(end=end))
    huge = next(shaped_crawls(nodes=big_nodes, crawls=1, end=end, seed=3))
    write(big / f"{end}.json", huge.body(), end)
    dataset = Dataset(data15k, big, static, end, history_files, distinct, big_nodes)
    return dataset, following


def real_size_history(
    folder: Path, files: int, distinct: int, end: int, later: int, seed: int = 2
) -> Iterator[ShapedCrawl]:
    """``files`` crawl files, one INTERVAL apart, the newest at ``end``: the newest
    ``distinct`` are consecutive crawls of NODES nodes in bitnodes' shape, with the demo
    generator's churn between them and each in a fresh order; each older one is a hardlink
    of one of those, in turn. Returns the next ``later`` crawls, after ``end``, rendered
    when taken."""
    crawls = shaped_crawls(
        nodes=NODES, crawls=distinct + later, end=end + later * INTERVAL, seed=seed
    )
    originals = write_all(folder, list(islice(crawls, min(distinct, files))))
    first = end - (files - 1) * INTERVAL
    for index in range(files - len(originals)):
        os.link(originals[index % len(originals)], folder / f"{first + index * INTERVAL}.json")
    return crawls


def varied_history(
    folder: Path, files: int, end: int, later: int, seed: int = 4
) -> Iterator[ShapedCrawl]:
    """``files`` crawl files, one INTERVAL apart, the newest at ``end``, every one distinct
    as a real history's are: each an independent sample of 85-99% of one export's rows
    (bench.export_shape), in a fresh order, so that consecutive crawls differ by hundreds
    to thousands of nodes, and a node's presence over the history comes in many stretches.
    Returns the next ``later`` crawls, drawn alike, rendered when taken."""
    export = next(shaped_crawls(nodes=NODES, crawls=1, end=end, seed=seed))
    rng = random.Random(seed)
    first = end - (files - 1) * INTERVAL

    def drawn(timestamp: int) -> ShapedCrawl:
        kept = rng.sample(export.members, round(len(export.members) * rng.uniform(0.85, 0.99)))
        return ShapedCrawl(timestamp, tuple(kept), export.pool, seed)

    write_all(folder, [drawn(first + index * INTERVAL) for index in range(files)])
    return (drawn(end + (index + 1) * INTERVAL) for index in range(later))


def write_all(folder: Path, crawls: list[ShapedCrawl]) -> list[Path]:
    """Each crawl's file, rendered by a process per core (a real-size crawl takes a tenth
    of a second to render: a history of distinct ones takes minutes)."""
    global _rendering
    _rendering = folder, crawls
    with multiprocessing.get_context("fork").Pool(os.cpu_count()) as pool:
        paths = pool.map(_render, range(len(crawls)), chunksize=8)
    _rendering = None
    return paths


_rendering: tuple[Path, list[ShapedCrawl]] | None = None  # what the forked renderers share


def _render(index: int) -> Path:
    assert _rendering is not None
    folder, crawls = _rendering
    crawl = crawls[index]
    path = folder / f"{crawl.timestamp}.json"
    write(path, crawl.body(), crawl.timestamp)
    return path


def write(path: Path, body: bytes, timestamp: int) -> None:
    path.write_bytes(body)
    os.utime(path, (timestamp, timestamp))


def write_crawl(folder: Path, timestamp: int, body: bytes) -> None:
    """Written to a temporary name, then renamed into place, so that a written -> served
    figure starts at one moment. bitnodes' export writes in place instead (``open`` then
    ``json.dump``), which crawldash serves no later: the watcher waits for the writes to
    go quiet, and a half-written file is never served (``tests/test_freshness.py``)."""
    temp = folder / f".{timestamp}.tmp"
    temp.write_bytes(body)
    os.replace(temp, folder / f"{timestamp}.json")


def crawl_files(folder: Path) -> list[Path]:
    return [p for p in folder.glob("*.json") if p.stem.isdigit()]


def static_snapshot(directory: Path, body: bytes) -> None:
    """The served snapshot body, and its .gz beside it for nginx's gzip_static."""
    (directory / "snapshot.json").write_bytes(body)
    (directory / "snapshot.json.gz").write_bytes(gzip.compress(body, 6, mtime=0))
