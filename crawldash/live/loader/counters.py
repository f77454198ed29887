"""Counting older crawls on every core: processes that read and count crawl files for the
history (``crawl/count.py``), started when there is a backlog to count and stopped once it
is counted, so that nothing of them stays at rest.

They run at a lower priority than the server and the loader process (nice COUNTER_NICENESS,
SCHED_BATCH): a new crawl's load, and answering, go first on a busy core, while on an idle
one counting takes every core.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import TypeVar

from ...crawl.count import CrawlCount, read_count, read_counts
from ...crawl.decode import Rules
from ...crawl.files import LoadError
from .orphans import end_with_parent

log = logging.getLogger(__name__)
T = TypeVar("T")
R = TypeVar("R")
COUNTER_NICENESS = 10


def counters_wanted() -> int:
    """One counting process per core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


class Counters:
    """A pool of counting processes, made when first needed and ended by ``stop()``."""

    def __init__(self, workers: int | None = None, niceness: int = COUNTER_NICENESS) -> None:
        self.workers = workers if workers is not None else counters_wanted()
        self.niceness = niceness
        self.deaths = 0  # counts during which a counting process died
        self._pool: ProcessPoolExecutor | None = None
        self._counting = 0  # counts under way, of every network sharing the pool

    @property
    def running(self) -> bool:
        return self._pool is not None

    async def count(self, path: Path, rules: Rules) -> CrawlCount:
        """``read_count(path, rules)`` in a counting process.

        Args:
            path: the crawl file.
            rules: what a crawl must be to be counted.

        Returns:
            The crawl's count; a LoadError as ``read_count`` raises it, or of kind
            ``loader_died`` if the process counting it died.
        """
        return await self._run(read_count, path, rules)

    async def count_run(
        self, paths: Sequence[Path], rules: Rules
    ) -> list[CrawlCount | LoadError | None]:
        """``read_counts(paths, rules)`` in a counting process: consecutive crawls, each
        after the first sent back as the changes of its addresses.

        Args:
            paths: the crawl files, each next to the one before it in time.
            rules: what a crawl must be to be counted.

        Returns:
            Per path, as ``read_counts`` returns; a LoadError of kind ``loader_died`` if the
            process counting them died.
        """
        return await self._run(read_counts, list(paths), rules)

    async def _run(self, counter: Callable[[T, Rules], R], what: T, rules: Rules) -> R:
        pool = self._started()
        self._counting += 1
        try:
            return await asyncio.wrap_future(pool.submit(counter, what, rules))
        except BrokenProcessPool:
            self.deaths += 1
            self._discard(pool)
            raise LoadError("loader_died", "the process counting it died") from None
        finally:
            self._counting -= 1

    def rest(self) -> None:
        """End the counting processes if no count is under way: one network's backlog is
        counted, another's may not be."""
        if self._counting == 0:
            self.stop()

    def stop(self) -> None:
        """End the counting processes; counts under way end with them."""
        if self._pool is not None:
            self._discard(self._pool)

    def _started(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                self.workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_lower_priority,
                initargs=(self.niceness,),
            )
        return self._pool

    def _discard(self, pool: ProcessPoolExecutor) -> None:
        if self._pool is pool:
            self._pool = None
        with contextlib.suppress(Exception):
            pool.shutdown(wait=False, cancel_futures=True)


def _lower_priority(niceness: int) -> None:
    """In each counting process: behind the server and the loader on a busy core, and
    ended with the server, however it ends."""
    end_with_parent()
    os.nice(niceness)
    with contextlib.suppress(AttributeError, OSError):  # not Linux, or refused
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
