"""``crawldash archive``: the crawls of a data folder put into the archive, oldest first,
each one that is not archived yet; complete days compacted as the run passes them.

Every core works: processes read, decode and encode crawls (``prepared``), and this
process writes their parts in the crawls' order, each with the lock held and only if the
crawl is not archived yet; a day complete is compacted by a process of the pool too.

Resumable by construction: what is archived is read from the archive itself (the part
files and day manifests), so a run killed at any point leaves whole files only, and the
next run skips what they hold.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import multiprocessing
import os
import signal
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ..crawl.decode import Rules, decode_snapshot
from ..crawl.files import LoadError, list_data_dir, read_file
from .layout import PART, CrawlFile, day_of, locked, look
from .writing import compact, encode_part, write_part

log = logging.getLogger(__name__)
AHEAD = 4  # crawls prepared ahead of the writes, per process: a few parts' bytes each


@dataclass
class Backfilled:
    """What a run did."""

    archived: list[int] = field(default_factory=list)  # crawls written
    skipped: int = 0  # crawls archived before
    refused: dict[int, str] = field(default_factory=dict)  # crawls that cannot be read
    seconds: float = 0.0


@dataclass(frozen=True)
class Prepared:
    """A crawl read, decoded and encoded as its part file, or why it cannot be."""

    timestamp: int
    crawl: CrawlFile | None = None
    body: bytes = b""
    refused: str | None = None


def every_core() -> int:
    """The processes a backfill runs by default: one per core it may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def backfill(
    data_dir: Path,
    archive_dir: Path,
    network: str,
    rules: Rules,
    *,
    stop: Callable[[], bool] = lambda: False,
    processes: int | None = None,
) -> Backfilled:
    """Archive every crawl of ``data_dir`` that is not archived yet.

    Args:
        data_dir: the crawler's folder.
        archive_dir: the archive's root.
        network: the network's name.
        rules: what a crawl file must be (the server's rules: size limit, empty crawls).
        stop: asked between crawls; True ends the run early (what it wrote stays).
        processes: how many prepare crawls (None: one per core; 1: this process alone).

    Returns:
        The crawls archived, skipped and refused.
    """
    started, done = time.perf_counter(), Backfilled()
    listing = list_data_dir(data_dir)
    with locked(archive_dir, network):
        contents = look(archive_dir, network)
    wanted = sorted(t for t in listing.snapshots if t not in contents.files)
    done.skipped = len(listing.snapshots) - len(wanted)
    # days with parts, compacted once a crawl of a later day is archived
    loose = {day_of(t) for t, path in contents.files.items() if PART.fullmatch(path.name)}
    newest = contents.newest
    jobs = [(data_dir / listing.snapshots[t][0], t, rules, network) for t in wanted]
    with _Pool(processes or every_core()) as pool:
        compactions = [
            pool.submit(compact, archive_dir, network, day) for day in _complete(loose, newest)
        ]
        for prepared in pool.in_order(prepare, jobs):
            if stop():
                break
            if prepared.crawl is None:
                done.refused[prepared.timestamp] = prepared.refused or "not read"
                continue
            if write_part(archive_dir, network, prepared.timestamp, prepared.crawl, prepared.body):
                done.archived.append(prepared.timestamp)
            else:  # archived by another writer since the look
                done.skipped += 1
            loose.add(day_of(prepared.timestamp))
            newest = max(newest or 0, prepared.timestamp)
            compactions += [
                pool.submit(compact, archive_dir, network, day) for day in _complete(loose, newest)
            ]
        for compacted in compactions:
            compacted.result()
    done.seconds = time.perf_counter() - started
    return done


def _complete(loose: set[str], newest: int | None) -> list[str]:
    """The days of ``loose`` before the newest crawl's, taken out of it."""
    if newest is None:
        return []
    complete = sorted(day for day in loose if day < day_of(newest))
    loose.difference_update(complete)
    return complete


def prepare(path: Path, timestamp: int, rules: Rules, network: str) -> Prepared:
    """A crawl file read, decoded and encoded as its part (in a process of the pool).
    Without the cyclic garbage collector: a crawl's objects make no cycles, and its
    passes over them took a fifth of the time."""
    with _no_collector():
        try:
            data, version = read_file(path, rules.max_file_size)
            snapshot = decode_snapshot(data, timestamp, rules.allow_empty)
        except (LoadError, FileNotFoundError) as exc:
            return Prepared(timestamp, refused=str(exc))
        file = CrawlFile(version.size, version.mtime_ns)
        crawl, body = encode_part(snapshot, network, file)
        return Prepared(timestamp, crawl, body)


@contextlib.contextmanager
def _no_collector() -> Iterator[None]:
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


class _Pool:
    """The processes of a run (none for one: this process does it all)."""

    def __init__(self, processes: int) -> None:
        self.processes = processes
        self.pool: ProcessPoolExecutor | None = None
        if processes > 1:
            self.pool = ProcessPoolExecutor(
                processes, mp_context=multiprocessing.get_context("spawn"), initializer=_worker
            )

    def __enter__(self) -> _Pool:
        return self

    def __exit__(self, *_: object) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)

    def submit(self, function: Callable[..., bool], *args: object) -> Future[bool]:
        if self.pool is not None:
            return self.pool.submit(function, *args)
        future: Future[bool] = Future()
        future.set_result(function(*args))
        return future

    def in_order(
        self, function: Callable[..., Prepared], jobs: Iterable[tuple[object, ...]]
    ) -> Iterator[Prepared]:
        """``function`` of each job, in the jobs' order, a few ahead at most."""
        if self.pool is None:
            yield from (function(*job) for job in jobs)
            return
        ahead: deque[Future[Prepared]] = deque()
        for job in jobs:
            ahead.append(self.pool.submit(function, *job))
            if len(ahead) >= AHEAD * self.processes:
                yield ahead.popleft().result()
        while ahead:
            yield ahead.popleft().result()


def _worker() -> None:
    """In each process of the pool: Ctrl-C is the run's to handle, not each process's."""
    with contextlib.suppress(ValueError):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
