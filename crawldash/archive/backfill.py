"""``crawldash archive``: the crawls of a data folder put into the archive, oldest first,
each one that is not archived yet.

Every core works: processes read and decode crawls and make their rows (``prepare``), and
this process writes them in the crawls' order. A complete day none of whose crawls is
archived (what a backfill mostly meets) is built here as one day file, a window of crawls
at a time, and written once, whole: no part files to write and read back, no compaction.
Any other crawl (of the newest day, or of a day another writer began) is written as its
part, with the lock held and only if it is not archived yet; a day complete is compacted
by a process of the pool.

Resumable by construction: what is archived is read from the archive itself (the part
files and day manifests), so a run killed at any point leaves whole files only (a day
being built is in memory: it is built again), and the next run skips what they hold.
"""

from __future__ import annotations

import contextlib
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

import pyarrow as pa

from ..crawl.decode import Rules
from ..crawl.files import list_data_dir, named_ahead
from ..live.loader.orphans import end_with_parent
from . import parquet
from .layout import PART, Contents, CrawlFile, day_of, locked, look
from .preparing import Prepared, prepare
from .writing import compact, write_day, write_part

log = logging.getLogger(__name__)
AHEAD = 4  # crawls prepared ahead of the writes, per process: a few parts' bytes each


@dataclass
class Backfilled:
    """What a run did."""

    archived: list[int] = field(default_factory=list)  # crawls written
    skipped: int = 0  # crawls archived before
    refused: dict[int, str] = field(default_factory=dict)  # crawls not archived, and why
    seconds: float = 0.0


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
    # A crawl named ahead of the clock is left for a later run, as the server leaves it:
    # archived, it would be a day to come, and every day before it complete.
    now, new = time.time(), [t for t in listing.snapshots if t not in contents.files]
    for timestamp in new:
        if error := named_ahead(timestamp, now, rules.max_clock_skew):
            done.refused[timestamp] = str(error)
    wanted = sorted(t for t in new if t not in done.refused)
    done.skipped = len(listing.snapshots) - len(new)
    # days with parts, compacted once a crawl of a later day is archived
    loose = {day_of(t) for t, path in contents.files.items() if PART.fullmatch(path.name)}
    newest = contents.newest
    whole = _whole_days(wanted, contents)
    paths = {t: data_dir / listing.snapshots[t][0] for t in wanted}
    jobs = [(paths[t], t, rules, network, day_of(t) in whole) for t in wanted]
    days = _Days(archive_dir, network, rules, paths, done)
    with _Pool(processes or every_core()) as pool:
        compactions = [
            pool.submit(compact, archive_dir, network, day) for day in _complete(loose, newest)
        ]
        for prepared in pool.in_order(prepare, jobs):
            if stop():
                days.building = None  # not written: built again by the next run
                break
            days.close_before(day_of(prepared.timestamp))
            if prepared.crawl is None:
                done.refused[prepared.timestamp] = prepared.refused or "not read"
                continue
            if prepared.rows is not None:
                days.add(prepared.timestamp, prepared.crawl, prepared.rows)
            elif write_part(
                archive_dir, network, prepared.timestamp, prepared.crawl, prepared.body
            ):
                done.archived.append(prepared.timestamp)
            else:  # archived by another writer since the look
                done.skipped += 1
            if prepared.rows is None:  # a part: its day compacted once complete
                loose.add(day_of(prepared.timestamp))
            newest = max(newest or 0, prepared.timestamp)
            compactions += [
                pool.submit(compact, archive_dir, network, day) for day in _complete(loose, newest)
            ]
        days.close_before(None)
        for compacted in compactions:
            compacted.result()
    done.seconds = time.perf_counter() - started
    return done


def _whole_days(wanted: list[int], contents: Contents) -> set[str]:
    """The days of ``wanted`` built whole: complete (a later crawl is known, in the folder
    or the archive) and none of whose crawls is archived yet."""
    known = max([*wanted, *contents.files], default=None)
    if known is None:
        return set()
    return {day_of(t) for t in wanted} - {day_of(known)} - set(contents.days)


class _Days:
    """The day being built whole (``parquet.DayWriter``), written once a crawl of a later
    day comes; if another writer began the day meanwhile, its crawls are archived one by
    one instead, as parts, then compacted."""

    def __init__(
        self,
        archive_dir: Path,
        network: str,
        rules: Rules,
        paths: dict[int, Path],
        done: Backfilled,
    ) -> None:
        self.archive_dir, self.network, self.rules = archive_dir, network, rules
        self.paths, self.done = paths, done
        self.building: tuple[str, parquet.DayWriter] | None = None

    def add(self, timestamp: int, crawl: CrawlFile, rows: pa.Table) -> None:
        if self.building is None:
            self.building = (day_of(timestamp), parquet.DayWriter())
        self.building[1].add(timestamp, crawl, rows)

    def close_before(self, day: str | None) -> None:
        """Write the day being built unless ``day`` is its (None: the run's end)."""
        if self.building is None or self.building[0] == day:
            return
        (built, writer), self.building = self.building, None
        body = writer.finish()
        if write_day(self.archive_dir, self.network, built, writer.crawls, body):
            self.done.archived += sorted(writer.crawls)
            return
        for timestamp in sorted(writer.crawls):
            again = prepare(self.paths[timestamp], timestamp, self.rules, self.network)
            if again.crawl is None:
                self.done.refused[timestamp] = again.refused or "not read"
            elif write_part(self.archive_dir, self.network, timestamp, again.crawl, again.body):
                self.done.archived.append(timestamp)
            else:  # archived by the other writer
                self.done.skipped += 1
        compact(self.archive_dir, self.network, built)


def _complete(loose: set[str], newest: int | None) -> list[str]:
    """The days of ``loose`` before the newest crawl's, taken out of it."""
    if newest is None:
        return []
    complete = sorted(day for day in loose if day < day_of(newest))
    loose.difference_update(complete)
    return complete


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
    """In each process of the pool: ended with the run, however it ends; Ctrl-C is the
    run's to handle, not each process's."""
    end_with_parent()
    with contextlib.suppress(ValueError):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
