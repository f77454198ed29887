"""What crawldash serves, held in memory with its answers encoded once per refresh.

No aiohttp here: handlers ask this module for bytes and wrap them in responses.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import msgspec

from ..models import CrawlerStatus, StatusBody
from .bodies import Representation, represent
from .history import History
from .prepared import PreparedSnapshot

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
        self.status: CrawlerStatus | None = None
        self.history = History(history_size)
        self.stale_after = stale_after  # None: three times the median crawl interval
        self.stuck_after = stuck_after
        self._clock = clock
        self._status_written = 0.0  # when status.json was last written
        self._state_since = 0.0  # since when it has reported its current state
        self._status_body: tuple[int, Representation] | None = None
        self.listeners: list[Callable[[str], None]] = []  # told "snapshot" or "status"
        self.history_complete = False  # every crawl file present has been counted

    def set_snapshot(self, snapshot: PreparedSnapshot) -> None:
        self.snapshot = snapshot
        self._status_body = None
        self._tell("snapshot")
        self._tell("status")

    def _tell(self, event: str) -> None:
        for listener in self.listeners:
            listener(event)

    def set_status(self, status: CrawlerStatus, written_at: float) -> None:
        if self.status is None or status.state != self.status.state:
            self._state_since = written_at
        self.status, self._status_written = status, written_at
        self._status_body = None
        self._tell("status")

    def status_body(self) -> Representation:
        """The ``/api/status`` answer; it holds an age, so it is encoded at most once a second."""
        now = int(self._clock())
        if self._status_body is None or self._status_body[0] != now:
            self._status_body = (now, represent(_encoder.encode(self.status_at(now)), now))
        return self._status_body[1]

    def next_crawl_expected(self) -> int | None:
        """The latest crawl's time plus the median interval; None if unknown."""
        interval = self.history.median_interval()
        if self.snapshot is None or interval is None:
            return None
        return self.snapshot.timestamp + interval

    def seconds_to_next_crawl(self) -> int | None:
        expected = self.next_crawl_expected()
        return None if expected is None else max(0, expected - int(self._clock()))

    def effective_stale_after(self) -> int:
        if self.stale_after is not None:
            return self.stale_after
        interval = self.history.median_interval()
        return max(MIN_STALE_AFTER, 3 * interval) if interval else MIN_STALE_AFTER

    def is_stale(self, now: float) -> bool:
        """No snapshot, or the latest is older than the staleness threshold."""
        snapshot = self.snapshot
        return snapshot is None or now - snapshot.timestamp > self.effective_stale_after()

    def is_stuck(self, now: float) -> bool:
        """status.json has not been updated, or has reported one non-running state, too long."""
        status = self.status
        if status is None:
            return False
        updated = status.updated_at if status.updated_at is not None else self._status_written
        if now - updated > self.stuck_after:
            return True
        return status.state != RUNNING and now - self._state_since > self.stuck_after

    def status_at(self, now: int) -> StatusBody:
        snapshot, status = self.snapshot, self.status
        age = max(0, now - snapshot.timestamp) if snapshot else None
        fallback_height = snapshot.latest_height if snapshot else None
        return StatusBody(
            state=status.state if status else "unknown",
            queue_size=status.queue_size if status else None,
            height=status.height if status and status.height is not None else fallback_height,
            last_elapsed=status.last_elapsed if status else None,
            updated_at=status.updated_at if status else None,
            snapshot_timestamp=snapshot.timestamp if snapshot else None,
            snapshot_age=age,
            stale=self.is_stale(now),
            stuck=self.is_stuck(now),
            next_crawl_expected=self.next_crawl_expected(),
            history_complete=self.history_complete,
        )
