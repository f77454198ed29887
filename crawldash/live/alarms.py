"""The crawler's status as crawldash answers it (``/api/status``), and its alarms: the data
stale, the crawler stuck; a part of the state (``state.py``), kept apart."""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from ..models import CrawlerStatus, StatusBody
from .bodies import Representation, represent
from .snapshot.prepared import PreparedSnapshot
from .stores.history import History

_encoder = msgspec.json.Encoder()
RUNNING = "running"  # any other state reported for too long means the crawler is stuck
MIN_STALE_AFTER = 1800  # the derived staleness threshold is never below 30 minutes


class Alarms:
    """What the state says of the crawler and of its data, from the status, the crawl
    served and the history (``State`` sets each of these)."""

    snapshot: PreparedSnapshot | None
    status: CrawlerStatus | None
    history: History
    stale_after: int | None  # None: three times the median crawl interval
    stuck_after: int
    status_ahead: bool  # its updated_at is ahead of this machine's clock
    history_complete: bool
    loader_trouble: str | None
    _clock: Callable[[], float]
    _status_updated: float  # when status.json was last updated, as far as is known
    _state_since: float  # since when it has reported its current state
    _status_body: tuple[int, Representation] | None
    # (second, history changes, snapshot, seconds to the next crawl) last worked out
    _to_next_crawl: tuple[int, int, object, int | None]

    def _tell(self, event: str) -> None:
        raise NotImplementedError

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
        served = self.snapshot
        return served is None or now - served.timestamp > self.effective_stale_after()

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
        snapshot, status = self.snapshot, self.status
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
