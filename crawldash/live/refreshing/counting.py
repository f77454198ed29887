"""Counting crawls into the history: the newest few at each refresh, the rest in batches
in the background, newest first, alongside the refreshes.

A batch is read ahead: its crawls are counted in runs of consecutive ones (on every core,
by the counting processes) while the ones already counted are recorded, in order, newest
first, so that each is added next to the crawls already known. A run's crawls after the
first come back as the changes of their addresses from the one before: the presence takes
those without a pass over each crawl's 15,000 addresses on the event loop. Once a batch
has no more runs to start, the first runs of the next one are read: the counting processes
never wait for a batch's last crawls to be recorded and published.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import NamedTuple

from ...crawl.count import CrawlCount
from ...crawl.files import FileVersion, Listing
from ..state import State
from ..stores.earlier_crawls import OlderCrawls
from ..stores.history import HistoryEntry
from .rejections import Rejections

SKIPPED_FIRST = 144  # skipped crawls counted before the one served (a day of 10-minute ones)
READ_AHEAD = 16  # crawls counted ahead of the one being recorded, per counting process
RUN_LENGTH = 8  # consecutive crawls a counting process counts at once, in a batch
OLDER_AT_ONCE = 32  # older crawls published into the presence together
# Reads a crawl's count; the flag says it is one of many (a batch), which the counting
# processes read faster than the loader process does one at a time.
CountFile = Callable[[str, FileVersion, bool], Awaitable[CrawlCount | None]]
# Reads consecutive crawls' counts as one run (``Reader.count_run``).
CountRun = Callable[[Sequence[tuple[str, FileVersion]]], Awaitable[list[CrawlCount | None]]]


class _Read(NamedTuple):
    """A crawl as read for the history: its count (None if refused or gone), its
    addresses, and the crawl its count's ``changes`` are from (None: it has none)."""

    timestamp: int
    version: FileVersion
    counted: CrawlCount | None
    addresses: list[str] | set[str]
    base: int | None


class _Run(NamedTuple):
    """Consecutive crawls being read as one run, from these files."""

    timestamps: list[int]
    files: list[tuple[str, FileVersion]]
    read: asyncio.Future[list[CrawlCount | None]]


class Counting:
    """Which crawls present still need a point, and counting them."""

    def __init__(
        self,
        state: State,
        rejected: Rejections,
        count_file: CountFile,
        read_ahead: int = 1,
        count_run: CountRun | None = None,
    ) -> None:
        self.state = state
        self.rejected = rejected
        self.count_file = count_file
        self.count_run = count_run  # None: a batch's crawls are read one by one
        self.read_ahead = read_ahead  # crawls counted at once in a batch
        # Crawls that may still need counting: a refresh looks at these and at files that
        # changed, not at every file in the folder.
        self.uncounted: set[int] = set()
        self.retrying: set[int] = set()  # refused for a passing fault, to be tried again
        self._ahead: list[_Run] = []  # the first runs of the next batch, read before it

    def update(self, listing: Listing, among: Iterable[int]) -> list[int]:
        """Those of ``uncounted`` and ``among`` whose count or membership the state lacks or
        holds for an older version, among the crawls it has room for, newest first."""
        history, presence = self.state.history, self.state.presence
        newest, capacity = listing.newest_first, history.capacity
        oldest_kept = newest[capacity - 1] if len(newest) > capacity else -1
        pending, retrying = [], set()
        for timestamp in self.uncounted.union(self.retrying, among):
            found = listing.snapshots.get(timestamp)
            if found is None or timestamp < oldest_kept:
                continue
            name, version = found
            entry = history.get(timestamp)
            if (
                entry is not None
                and entry.counted_from(version)
                and entry.counts is not None  # else counted before counts were kept
                and presence.has(timestamp)
            ):
                continue
            if not self.rejected.known(name, version):
                pending.append(timestamp)
            elif self.rejected.retrying(name, version):
                retrying.add(timestamp)  # a passing fault: counted once it is tried again
        self.uncounted, self.retrying = set(pending), retrying
        return sorted(pending, reverse=True)

    async def count_skipped(self, listing: Listing, served: int) -> bool:
        """Count first, oldest first, the crawls between the newest whose membership is
        known and the one now served: skipped while another loaded, or written while
        crawldash was stopped. Each is then added after the newest known, as the served
        crawl is next; counted after it, each would be inserted between two known crawls,
        a pass over every address on the event loop (tens of ms with 15,000 nodes). At
        most SKIPPED_FIRST of them, the newest: older ones are counted later as usual.
        True if the history changed."""
        newest_known = self.state.presence.newest()
        if newest_known is None:
            return False
        pending = self.update(listing, ())
        skipped = [t for t in pending if newest_known < t < served][:SKIPPED_FIRST]
        return await self.count(listing, skipped[::-1])

    async def count(
        self,
        listing: Listing,
        timestamps: list[int],
        lock: asyncio.Lock | None = None,
    ) -> bool:
        """Count these crawls into the history, in this order; True if it changed.

        Args:
            listing: the folder as listed, which names each crawl's file and version.
            timestamps: the crawls to count.
            lock: held while each crawl is recorded (not while it is read), so that a
                refresh waits for one record at most, never for a batch.
        """
        changed = False
        older = OlderCrawls(self.state.presence)  # a run of the next older crawls
        async for read in self._read_in_order(listing, timestamps):
            timestamp, version, counted = read.timestamp, read.version, read.counted
            self.uncounted.discard(timestamp)
            if counted is None:
                continue
            entry = HistoryEntry(
                timestamp,
                counted.nodes,
                version.size,
                version.mtime_ns,
                counted.networks,
                counted.latest_height,
                self.state.history.values.pack(
                    {key: values.items() for key, values in counted.tallies.items()}
                ),
            )
            async with lock if lock is not None else contextlib.nullcontext():
                if not older.takes(timestamp) or len(older) == OLDER_AT_ONCE:
                    changed |= await self._publish(older)
                    older = OlderCrawls(self.state.presence)
                if older.takes(timestamp):
                    changed |= self._record_older(entry, read, older)
                else:
                    changed |= await self.state.record_crawl(entry, list(read.addresses))
        async with lock if lock is not None else contextlib.nullcontext():
            changed |= await self._publish(older)
        return changed

    def _record_older(self, entry: HistoryEntry, read: _Read, older: OlderCrawls) -> bool:
        """``State.record_older``, with the crawl's ``changes`` when they are from the
        crawl ``older`` was given last (not after a publish in the middle of a run)."""
        given_last = older.timestamps[-1] if older.timestamps else None
        counted = read.counted
        changes = counted.changes if counted is not None and read.base == given_last else None
        return self.state.record_older(entry, read.addresses, older, changes)

    async def _publish(self, older: OlderCrawls) -> bool:
        """Publish a run of older crawls; if the presence refused it (another count added
        older crawls, or the oldest were forgotten, since the run began), its crawls have
        a point but no membership: they are counted again, as ``publish`` promises."""
        if await older.publish(self.state.history.holds):
            return True
        self.uncounted.update(older.timestamps)  # update() drops those known or not kept
        return False

    async def _read_in_order(self, listing: Listing, timestamps: list[int]) -> AsyncIterator[_Read]:
        """Each crawl as read, in the order given, with up to ``read_ahead`` being read: in
        runs of RUN_LENGTH when they are a batch and ``count_run`` is given."""
        batch = len(timestamps) > 1
        in_runs = batch and self.count_run is not None
        length = RUN_LENGTH if in_runs else 1
        in_flight = max(1, self.read_ahead // length if batch else 1)
        runs = [timestamps[at : at + length] for at in range(0, len(timestamps), length)]
        reads = self._adopted(listing, runs) if in_runs else []
        waiting = iter(runs[len(reads) :])
        try:
            while True:
                while len(reads) < in_flight:
                    run = next(waiting, None)
                    if run is None:
                        break
                    reads.append(self._start(listing, run, batch))
                if in_runs:
                    self._read_next(listing, timestamps, in_flight - len(reads))
                if not reads:
                    return
                read = reads.pop(0)
                for item in _in_full(read.timestamps, await read.read, listing):
                    yield item
        finally:
            for read in reads:
                read.read.cancel()

    def _start(self, listing: Listing, run: list[int], batch: bool) -> _Run:
        files = [listing.snapshots[timestamp] for timestamp in run]
        return _Run(run, files, asyncio.ensure_future(self._read_run(files, batch)))

    def _adopted(self, listing: Listing, runs: list[list[int]]) -> list[_Run]:
        """The runs read ahead that begin this batch: the same crawls, read from the files
        listed now. The others are cancelled: what they read is no longer asked for."""
        ahead, self._ahead = self._ahead, []
        adopted: list[_Run] = []
        for run, read in zip(runs, ahead, strict=False):
            if read.timestamps != run or read.files != [listing.snapshots[t] for t in run]:
                break
            adopted.append(read)
        for read in ahead[len(adopted) :]:
            read.read.cancel()
        return adopted

    def _read_next(self, listing: Listing, batch: list[int], room: int) -> None:
        """Start reading the first runs of the batch that will follow this one, in ``room``
        runs: the crawls still uncounted, newest first, in runs, as ``update`` will give
        them (a guess: a run it does not give next is cancelled, never recorded)."""
        room -= len(self._ahead)
        if room <= 0:
            return
        taken = set(batch).union(*(read.timestamps for read in self._ahead))
        following = sorted(
            (t for t in self.uncounted if t not in taken and t in listing.snapshots),
            reverse=True,
        )[: room * RUN_LENGTH]
        for at in range(0, len(following), RUN_LENGTH):
            self._ahead.append(self._start(listing, following[at : at + RUN_LENGTH], True))

    async def _read_run(
        self, files: list[tuple[str, FileVersion]], batch: bool
    ) -> list[CrawlCount | None]:
        if len(files) == 1 or self.count_run is None:
            return [await self.count_file(name, version, batch) for name, version in files]
        return await self.count_run(files)


def _in_full(run: list[int], counts: list[CrawlCount | None], listing: Listing) -> list[_Read]:
    """A run's crawls as read, each with its addresses: a count given as ``changes`` has
    them from the one before it in the run that was counted (a set, changed in a copy)."""
    reads: list[_Read] = []
    last: tuple[int, set[str]] | None = None
    for timestamp, counted in zip(run, counts, strict=True):
        version = listing.snapshots[timestamp][1]
        if counted is None:
            reads.append(_Read(timestamp, version, None, [], None))
            continue
        if counted.changes is None:
            addresses: list[str] | set[str] = counted.addresses
            if len(run) > 1:  # the next may be changes from it
                addresses = set(addresses)
            base = None
        elif last is not None:
            base, addresses = last[0], last[1].copy()
            addresses.difference_update(counted.changes.removed)
            addresses.update(counted.changes.added)
        else:
            raise ValueError(f"changes of the crawl {timestamp} from none counted before it")
        if isinstance(addresses, set):
            last = (timestamp, addresses)
        reads.append(_Read(timestamp, version, counted, addresses, base))
    return reads
