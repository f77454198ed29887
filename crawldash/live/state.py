"""What crawldash serves, held in memory with its answers encoded once per refresh.

No aiohttp here: handlers ask this module for bytes and wrap them in responses.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence

import msgspec

from ..crawl.count import AddressChanges
from ..crawl.files import FileVersion
from ..models import CrawlerStatus, StatusBody
from .answers.changes import Changes
from .answers.checks import CheckAnswers
from .answers.profiles import Profiles
from .answers.trends import Trends
from .answers.unique import UniqueCounts
from .bodies import Representation, release_files, represent
from .snapshot.prepared import FirstAnswers, PreparedSnapshot
from .stores.earlier_crawls import OlderCrawls
from .stores.history import History, HistoryEntry
from .stores.presence import Presence

_encoder = msgspec.json.Encoder()


RUNNING = "running"  # any other state reported for too long means the crawler is stuck
MIN_STALE_AFTER = 1800  # the derived staleness threshold is never below 30 minutes


class State:
    """The latest snapshot, the crawler's status, the history of crawls, and their alarms."""

    def __init__(
        self,
        *,
        history_size: int,
        stale_after: int | None = None,
        stuck_after: int = 3600,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.snapshot: PreparedSnapshot | None = None
        self.first: FirstAnswers | None = None  # a newer crawl's, while the rest is made
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

    @property
    def newest(self) -> PreparedSnapshot | FirstAnswers | None:
        """The newest crawl served: its first answers, until the whole of it is."""
        return self.first or self.snapshot

    def set_first(self, first: FirstAnswers) -> None:
        """Serve a crawl newer than the one served by its first answers (its plain snapshot
        and its status), while the rest of it is made. Listeners hear of the crawl once it
        is served whole (``announce_snapshot``): its first answers are no event."""
        if self.snapshot is None or first.timestamp > self.snapshot.timestamp:
            self.first = first
            self._status_body = None

    def drop_first(self) -> None:
        """The crawl whose first answers are served could not be loaded whole after all."""
        if self.first is not None:
            self.first = None
            self._status_body = None

    def snapshot_body(self, coding: str, identity_ok: bool) -> Representation | None:
        """The newest crawl's ``/api/snapshot`` body in ``coding``; in identity while only its
        first answers are served (its other codings are made with the rest), if the client
        takes identity (``identity_ok``). None: no crawl served yet."""
        if self.first is not None and identity_ok:
            return self.first.identity
        return self.snapshot.representations[coding] if self.snapshot else None

    def set_snapshot(self, snapshot: PreparedSnapshot) -> None:
        before, self.snapshot = self.snapshot, snapshot
        if before is not None and before is not snapshot:
            release_files(before.representations.values())
        self.first = None
        self._status_body = None

    def announce_snapshot(self) -> None:
        """Tell listeners of the crawl served, once every answer about it is (its history
        point, presence, profile changes and check evidence are taken in after
        ``set_snapshot``): a dashboard asks again for all of them on these events."""
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

    def set_status(self, status: CrawlerStatus, written_at: float) -> None:
        """A new status.json, written at ``written_at`` (its file's time). An ``updated_at``
        ahead of this machine's clock is taken as the moment it was read, and flagged."""
        read_at = self._clock()
        written_at = min(written_at, read_at)
        self.status_ahead = status.updated_at is not None and status.updated_at > read_at + 60
        if self.status_ahead or status.updated_at is None:
            self._status_updated = written_at
        else:
            self._status_updated = float(status.updated_at)
        if self.status is None or status.state != self.status.state:
            self._state_since = written_at
        self.status = status
        self._status_body = None
        self._tell("status")

    def status_body(self) -> Representation:
        """The ``/api/status`` answer; it holds an age, so it is encoded at most once a second."""
        now = int(self._clock())
        if self._status_body is None or self._status_body[0] != now:
            self._status_body = (now, represent(_encoder.encode(self.status_at(now)), now))
        return self._status_body[1]

    def next_crawl_expected(self) -> int | None:
        """The latest crawl's time plus the median interval; None if unknown. The crawl
        served whole: answers still about it must not be cached as if about a newer one."""
        interval = self.history.median_interval()
        if self.snapshot is None or interval is None:
            return None
        return self.snapshot.timestamp + interval

    def seconds_to_next_crawl(self) -> int | None:
        """Worked out once a second per snapshot and history (it is in many answers). Never
        more than one crawl interval: a crawl named ahead of the clock must not have caches
        hold it for longer than the crawler takes to write the next."""
        now, changes, snapshot = int(self._clock()), self.history.changes, self.snapshot
        second, seen_changes, seen_snapshot, seconds = self._to_next_crawl
        if now != second or changes != seen_changes or snapshot is not seen_snapshot:
            expected, interval = self.next_crawl_expected(), self.history.median_interval()
            if expected is None or interval is None:
                seconds = None
            else:
                seconds = min(max(0, expected - now), interval)
            self._to_next_crawl = now, changes, snapshot, seconds
        return seconds

    def effective_stale_after(self) -> int:
        if self.stale_after is not None:
            return self.stale_after
        interval = self.history.median_interval()
        return max(MIN_STALE_AFTER, 3 * interval) if interval else MIN_STALE_AFTER

    def is_stale(self, now: float) -> bool:
        """No snapshot, or the latest is older than the staleness threshold."""
        newest = self.newest
        return newest is None or now - newest.timestamp > self.effective_stale_after()

    def is_stuck(self, now: float) -> bool:
        return self.stuck_reason(now) is not None

    def stuck_reason(self, now: float) -> str | None:
        """Why the crawler looks stuck: ``no_update`` (status.json not rewritten for too
        long: the bridge or the crawler is gone) or ``state`` (one non-running state for too
        long); None if it does not."""
        status = self.status
        if status is None:
            return None
        if now - self._status_updated > self.stuck_after:
            return "no_update"
        if status.state != RUNNING and now - self._state_since > self.stuck_after:
            return "state"
        return None

    def status_at(self, now: int) -> StatusBody:
        snapshot, status = self.newest, self.status
        age = max(0, now - snapshot.timestamp) if snapshot else None
        fallback_height = snapshot.latest_height if snapshot else None
        reason = self.stuck_reason(now)
        return StatusBody(
            state=status.state if status else "unknown",
            queue_size=status.queue_size if status else None,
            reached=status.reached if status else None,
            height=status.height if status and status.height is not None else fallback_height,
            last_elapsed=status.last_elapsed if status else None,
            last_crawl_at=status.last_crawl_at if status else None,
            updated_at=status.updated_at if status else None,
            snapshot_timestamp=snapshot.timestamp if snapshot else None,
            snapshot_age=age,
            stale=self.is_stale(now),
            stuck=reason is not None,
            stuck_reason=reason,
            updated_at_ahead=self.status_ahead,
            next_crawl_expected=self.next_crawl_expected(),
            history_complete=self.history_complete,
            degraded=self.loader_trouble,
        )
