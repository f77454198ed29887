"""What crawldash serves, held in memory with its answers encoded once per refresh.

No aiohttp here: handlers ask this module for bytes and wrap them in responses.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import msgspec

from .history import History
from .loader import Snapshot
from .models import ApiSnapshot, CheckBody, CrawlerStatus, NodeRow, StatusBody
from .representation import Representation, compressed, represent

_encoder = msgspec.json.Encoder()


@dataclass(frozen=True)
class ServedSnapshot:
    """The latest snapshot, its response in every encoding, and its nodes by address."""

    timestamp: int
    total_nodes: int
    latest_height: int
    representations: dict[str, Representation]  # by content coding: identity, gzip, br
    nodes: dict[str, NodeRow]

    @property
    def body(self) -> bytes:
        return self.representations["identity"].body

    @classmethod
    def prepare(cls, snapshot: Snapshot, modified: float) -> ServedSnapshot:
        """Encode and compress the response; slow for a large snapshot: run it off the loop."""
        total = len(snapshot.nodes)
        api = ApiSnapshot(snapshot.timestamp, total, snapshot.latest_height, snapshot.nodes)
        encodings = compressed(represent(_encoder.encode(api), modified))
        return cls(snapshot.timestamp, total, snapshot.latest_height, encodings, snapshot.nodes)

    def check_body(self, address: str) -> bytes:
        """The ``/api/check`` answer for a canonical address."""
        row = self.nodes.get(address)
        node = row.named() if row is not None else None
        return _encoder.encode(CheckBody(address, row is not None, self.timestamp, node))


class State:
    """The latest snapshot, the crawler's status and the history of crawls."""

    def __init__(
        self, *, history_size: int, stale_after: int, clock: Callable[[], float] = time.time
    ) -> None:
        self.snapshot: ServedSnapshot | None = None
        self.status: CrawlerStatus | None = None
        self.history = History(history_size)
        self.stale_after = stale_after
        self._clock = clock
        self._status_body: tuple[int, Representation] | None = None

    def set_snapshot(self, snapshot: ServedSnapshot) -> None:
        self.snapshot = snapshot
        self._status_body = None

    def set_status(self, status: CrawlerStatus) -> None:
        self.status = status
        self._status_body = None

    def status_body(self) -> Representation:
        """The ``/api/status`` answer; it holds an age, so it is encoded at most once a second."""
        now = int(self._clock())
        if self._status_body is None or self._status_body[0] != now:
            self._status_body = (now, represent(_encoder.encode(self.status_at(now)), now))
        return self._status_body[1]

    def seconds_to_next_crawl(self) -> int | None:
        """Seconds until the next crawl is expected, from the median interval; None if unknown."""
        interval = self.history.median_interval()
        if self.snapshot is None or interval is None:
            return None
        return max(0, self.snapshot.timestamp + interval - int(self._clock()))

    def status_at(self, now: int) -> StatusBody:
        snapshot, status = self.snapshot, self.status
        age = max(0, now - snapshot.timestamp) if snapshot else None
        fallback_height = snapshot.latest_height if snapshot else None
        return StatusBody(
            state=status.state if status else "unknown",
            queue_size=status.queue_size if status else None,
            height=status.height if status else fallback_height,
            last_elapsed=status.last_elapsed if status else None,
            updated_at=status.updated_at if status else None,
            snapshot_timestamp=snapshot.timestamp if snapshot else None,
            snapshot_age=age,
            stale=age is None or age > self.stale_after,
        )
