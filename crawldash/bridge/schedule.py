"""The bridge's collectors (propagation, crawl attempts), each run on a thread of its own
beside the status loop: however long a pass takes, the status is rewritten on its interval.

A collector's failures are logged once per streak: a Redis or a disk that fails is retried
on the next turn. Any other exception is a fault of the bridge, not of Redis' data (every
value read is bounded in ``redis_values.py``): it is logged with its traceback, once per
kind, and the collector runs again on its next turn rather than the thread ending.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Protocol

import redis

log = logging.getLogger(__name__)
JOIN_WITHIN = 30.0  # seconds a stopping bridge waits for a pass under way


class Collecting(Protocol):
    """What the bridge runs beside the status: one pass, and what is left as it stops."""

    def collect(self, now: float) -> None: ...

    def flush(self) -> None: ...


class Schedule:
    """When a collector runs, on its own thread, and its failures logged once per streak."""

    def __init__(self, collector: Collecting, every: float, name: str = "propagation") -> None:
        self.collector, self.every, self.name = collector, every, name
        self._failing = ""
        self._bugs: set[str] = set()  # kinds of unexpected exception logged
        self._thread: threading.Thread | None = None

    def start(self, stop: threading.Event) -> None:
        """Run a pass every ``every`` seconds, on a thread of its own, until ``stop``.

        Args:
            stop: set when the bridge stops.
        """
        self._thread = threading.Thread(
            target=self._loop, args=(stop,), name=f"{self.name} collection", daemon=True
        )
        self._thread.start()

    def _loop(self, stop: threading.Event) -> None:
        while not stop.is_set():
            started = time.monotonic()
            self.run_once(time.time())
            stop.wait(max(0.0, started + self.every - time.monotonic()))

    def run_once(self, now: float) -> None:
        """One pass of the collector; its failures logged, never raised.

        Args:
            now: the pass's time, unix seconds.
        """
        try:
            self.collector.collect(now)
        except (redis.RedisError, OSError) as exc:
            what = "redis read" if isinstance(exc, redis.RedisError) else "writing"
            if self._failing != what:
                log.warning(
                    "%s collection failed (%s) reason=%s: %s; kept data unchanged; retrying",
                    self.name,
                    what,
                    type(exc).__name__,
                    exc,
                )
            self._failing = what
        except Exception as exc:  # a bug: the thread must outlive it, as the status does
            if type(exc).__name__ not in self._bugs:
                self._bugs.add(type(exc).__name__)
                log.exception("%s collection failed unexpectedly; retrying", self.name)
        else:
            if self._failing:
                log.info("%s collection works again", self.name)
            self._failing = ""

    def stop(self) -> None:
        """As the bridge stops (its ``stop`` set): wait for a pass under way, then write
        what the collector has left unwritten."""
        if self._thread is not None:
            self._thread.join(JOIN_WITHIN)
            if self._thread.is_alive():
                log.warning("%s: a pass still under way as the bridge stops", self.name)
                return
        try:
            self.collector.flush()
        except OSError as exc:
            log.warning("%s: what was left not written as the bridge stops: %s", self.name, exc)
