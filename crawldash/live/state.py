"""What crawldash serves, held in memory with its answers encoded once per refresh.

No aiohttp here: handlers ask this module for bytes and wrap them in responses.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Collection, Mapping, Sequence

import msgspec

from ..crawl.count import AddressChanges
from ..crawl.files import FileVersion
from ..models import CrawlerStatus
from .alarms import Alarms
from .answers.changes import Changes
from .answers.checks import CheckAnswers
from .answers.profiles import Profiles
from .answers.reasons import Evidence
from .answers.trends import Trends
from .answers.unique import UniqueCounts
from .bodies import MadeOnce, Representation, made_or_identity, release_files
from .snapshot.prepared import Later, PreparedSnapshot
from .stores.earlier_crawls import OlderCrawls
from .stores.history import History, HistoryEntry
from .stores.presence import Presence

_encoder = msgspec.json.Encoder()


class State(Alarms):
    """The latest snapshot, the crawler's status, the history of crawls, and their alarms."""

    def __init__(
        self,
        *,
        history_size: int,
        stale_after: int | None = None,
        stuck_after: int = 3600,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.snapshot: PreparedSnapshot | None = None  # the crawl served: switch_to
        self._whole = asyncio.Event()  # set once what follows the crawl served is in
        self.status: CrawlerStatus | None = None
        self.history = History(history_size)
        self.presence = Presence()  # which addresses each crawl of the history had
        self.checks = CheckAnswers(self.presence)
        self.changes = Changes(self.presence)
        self.profiles = Profiles()  # what the crawls said of each node, as they were served
        self.trends = Trends(self.history)  # the history by value, and as CSV
        self.unique = UniqueCounts(self.presence)
        self.crawl_files: list[int] = []  # timestamps of the crawl files present, newest first
        self.crawl_versions: Mapping[int, tuple[str, FileVersion]] = {}  # their names, versions
        self.stale_after = stale_after  # None: three times the median crawl interval
        self.stuck_after = stuck_after
        self._clock = clock
        self._status_updated = 0.0  # when status.json was last updated, as far as is known
        self.status_ahead = False  # its updated_at is ahead of this machine's clock
        self._state_since = 0.0  # since when it has reported its current state
        self._status_body: tuple[int, Representation] | None = None
        # (second, history changes, snapshot, seconds to the next crawl) last worked out
        self._to_next_crawl: tuple[int, int, object, int | None] = (-1, -1, None, None)
        self.listeners: list[Callable[[str], None]] = []  # told "snapshot" or "status"
        self.history_complete = False  # every usable crawl file present has a point
        self.data_dir_problem: str | None = None  # why the data folder cannot be watched
        self.loader_trouble: str | None = None  # why the last load failed, till one succeeds
        self._codings = MadeOnce()  # the snapshot's, made on request before its own come

    @property
    def first(self) -> PreparedSnapshot | None:
        """The crawl served while what follows it (the compressed codings of its bodies,
        its CSV records) is still being made; None once it is in, or no crawl is served."""
        served = self.snapshot
        return served if served is not None and not served.whole() else None

    def snapshot_body(self, coding: str, identity_ok: bool) -> Representation | None:
        """The served crawl's ``/api/snapshot`` body in ``coding`` if it is made, else in
        identity if the client takes it (``identity_ok``): the codings follow the crawl, and
        until they come nothing of an older crawl is served. None: no crawl served, or the
        coding is still to be made (``snapshot_in`` makes it)."""
        served = self.snapshot
        if served is None:
            return None
        return made_or_identity(served.representations, coding, identity_ok)

    async def snapshot_in(self, coding: str, identity_ok: bool) -> Representation | None:
        """``snapshot_body``, the coding made now (in a thread) for a client that refuses
        identity when it is not made yet. None: no crawl served."""
        served = self.snapshot
        body = self.snapshot_body(coding, identity_ok)
        if body is None and served is not None:
            body = await self._codings.made(served.identity, coding)
            # Kept with its crawl only while that is served: once it is not, its files are
            # released, and one made for this later would stay open until collected.
            if served is self.snapshot:
                body = served.representations.setdefault(coding, body)
        return body

    async def switch_to(
        self,
        served: PreparedSnapshot,
        entry: HistoryEntry,
        with_it: Callable[[], None] | None = None,
    ) -> bool:
        """Serve ``served``, whose history point is ``entry``, every answer about it from
        one moment on. What takes time is done first without being shown (the presence's
        bits for the crawl are set in slices, unpublished, and each address's newest slot
        read for ``/api/unique``); then, in one step on the event loop, the presence
        publishes the crawl, the history takes its point, the crawl is served, ``with_it``
        changes what else must change with it, and listeners are told: no answer given
        after that step is about an older crawl, and none before it about this one.

        Returns:
            Whether the history or the presence changed.
        """
        before = self.history.get(entry.timestamp)
        same_file = (
            before is not None
            and entry.mtime_ns != 0  # 0: not counted from a file
            and (before.size, before.mtime_ns) == (entry.size, entry.mtime_ns)
        )
        recorded: list[bool] = []

        def switch() -> None:
            recorded.append(self.history.record(entry))
            self._serve(served, with_it)

        timestamp = entry.timestamp
        # Known from the same file (counted again for what an older index lacks), the
        # crawl keeps its membership: setting it again is a pass over every address.
        if not self.presence.has(timestamp) or (before != entry and not same_file):
            addresses = served.nodes.addresses
            await self.presence.update(
                timestamp, addresses, self.history.holds, switch, self.unique.prepare
            )
            return True
        switch()
        if recorded[0]:
            async with self.presence.lock:
                self.presence.retain(self.history.holds)
        return recorded[0]

    def take_later(self, later: Later) -> bool:
        """What follows the crawl served (its codings and CSV records), if it is its.

        Returns:
            Whether it was taken.
        """
        served = self.snapshot
        if served is None or not later.add_to(served):
            return False
        self._whole.set()
        return True

    async def until_whole(self, served: PreparedSnapshot) -> None:
        """Wait until what follows ``served`` is in, or another crawl is served."""
        while served is self.snapshot and not served.whole():
            taken = self._whole
            if taken.is_set():
                return
            await taken.wait()

    def _serve(self, served: PreparedSnapshot, with_it: Callable[[], None] | None) -> None:
        """The switch's step itself (on the event loop, with nothing awaited)."""
        if not self._whole.is_set():
            self._whole.set()  # those waiting for the crawl served before look again
        self._whole = asyncio.Event()
        before, self.snapshot = self.snapshot, served
        if before is not None and before is not served:
            release_files(before.representations.values())
        self.checks.set_evidence(Evidence())  # of the crawl paired with the one before
        if with_it is not None:
            with_it()
        self._status_body = None
        self._tell("snapshot")
        self._tell("status")

    async def record_crawl(self, entry: HistoryEntry, addresses: Sequence[str] | None) -> bool:
        """A crawl's history point and, if given, which addresses it had; True if the
        history or the presence changed. The presence follows the history: crawls it lets
        go are forgotten. A crawl whose membership is known from the same file (counted
        again for what an older index lacks) keeps it: setting it again is a pass over
        every address."""
        before = self.history.get(entry.timestamp)
        changed = self.history.record(entry)
        held = self.history.get(entry.timestamp) == entry  # not older than all it keeps
        known = self.presence.has(entry.timestamp)
        same_file = (
            before is not None
            and entry.mtime_ns != 0  # 0: not counted from a file
            and (before.size, before.mtime_ns) == (entry.size, entry.mtime_ns)
        )
        if addresses is not None and held and (not known or (changed and not same_file)):
            await self.presence.update(entry.timestamp, addresses, self.history.holds)
            return True
        if changed:
            async with self.presence.lock:
                self.presence.retain(self.history.holds)
        return changed

    def record_older(
        self,
        entry: HistoryEntry,
        addresses: Collection[str],
        older: OlderCrawls,
        changes: AddressChanges | None = None,
    ) -> bool:
        """The point of a crawl older than all whose membership is known; its addresses go
        into ``older``, for the presence once ``older`` is published, with ``changes`` if
        they are from the crawl ``older`` was given last (``OlderCrawls.add``). True if the
        history changed or the crawl is to be published."""
        changed = self.history.record(entry)
        if self.history.get(entry.timestamp) != entry:  # older than all the history keeps
            return changed
        older.add(entry.timestamp, addresses, changes)
        return True

    def replace_presence(self, presence: Presence) -> None:
        """The presence restored from its index, less the crawls the history lacks."""
        presence.retain(self.history.holds)
        self.presence = self.checks.presence = self.changes.presence = presence
        self.unique.presence = presence

    def _tell(self, event: str) -> None:
        for listener in self.listeners:
            listener(event)
