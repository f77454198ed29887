"""``crawldash bitnodes-status``: bitnodes' live crawler status, from Redis to status.json.

bitnodes keeps its crawler's state in Redis: ``crawl:master:state`` (a string), ``pending``
(a set: its size is the queue), ``up`` (a set: the nodes reached so far in this crawl),
``height`` (a string) and ``elapsed`` (a list of JSON ``[unix_seconds, seconds]``, newest
first, one per finished crawl; older versions keep a plain number). This reads them every
``interval`` seconds and writes ``status.json`` atomically. A value it cannot read is
logged once and written as null. While Redis cannot be reached it logs, retries with
back-off and stops rewriting the file, so that crawldash's stuck-crawler alarm fires.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import msgspec
import redis
from redis.connection import parse_url

from ..crawl.atomic import write_atomically
from ..crawl.files import snapshot_timestamp
from ..models import CrawlerStatus
from ..settings.bridge import BridgeSettings
from .attempts import AttemptsCollector
from .checked import CheckedCollector
from .propagation import Collector
from .redis_values import MAX_ELAPSED_BYTES, Skips, elapsed_entry, text, whole
from .schedule import Schedule

log = logging.getLogger(__name__)
T = TypeVar("T")
MAX_BACKOFF = 60.0
MAX_STATE = 64  # characters of crawl:master:state copied: bitnodes' states are a word
MAX_HEIGHT = 2**31 - 1  # a block height, as Bitcoin Core keeps it


def connect(url: str, password_file: Path | None = None) -> redis.Redis:
    """A client for ``url``; bitnodes' own ``REDIS_SOCKET`` (a unix socket, instead of the
    URL's host and port) and ``REDIS_PASSWORD`` are honoured as bitnodes reads them, and
    ``password_file`` wins over both passwords. ValueError for a malformed URL."""
    options: dict[str, Any] = parse_url(url)  # type: ignore[no-untyped-call]
    if socket_path := os.environ.get("REDIS_SOCKET"):
        options = {k: v for k, v in options.items() if k not in ("host", "port", "ssl")}
        options |= {"path": socket_path, "connection_class": redis.UnixDomainSocketConnection}
    if password_file is not None:
        options["password"] = password_file.read_text().strip()
    elif password := os.environ.get("REDIS_PASSWORD"):
        options["password"] = password
    pool = redis.ConnectionPool(socket_timeout=5, socket_connect_timeout=5, **options)
    return redis.Redis(connection_pool=pool)


def described(url: str) -> str:
    """What the bridge connects to, for logs: bitnodes' ``REDIS_SOCKET`` where it is set
    (it wins over the URL's host and port), with the URL's database; else the URL, its
    password replaced by ``***``."""
    if socket_path := os.environ.get("REDIS_SOCKET"):
        database = urlsplit(url).path.strip("/") or "0"
        return f"unix://{socket_path}?db={database}"
    return redacted(url)


def redacted(url: str) -> str:
    """The URL with any password replaced by ``***``, for logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


class StatusReader:
    """Reads the status from Redis; a value out of bounds is written as null (the state
    cut to ``MAX_STATE`` characters), and each such value is logged once."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self.skips = Skips(log)

    def read(self, now: float) -> CrawlerStatus:
        """The status as of ``now`` (unix seconds). RedisError when Redis cannot be read.

        Args:
            now: the time written as ``updated_at``.

        Returns:
            The status to write.
        """
        pipe = self.client.pipeline(transaction=False)
        pipe.getrange("crawl:master:state", 0, 4 * MAX_STATE)  # a string's start, at most
        pipe.scard("pending")
        pipe.scard("up")
        pipe.get("height")
        pipe.type("elapsed")
        replies = [None if isinstance(r, Exception) else r for r in pipe.execute(False)]
        state, pending, up, height, elapsed_type = replies
        ended, elapsed = self._elapsed(self._newest_elapsed(elapsed_type))
        status = CrawlerStatus(
            state=text(state, MAX_STATE) or "unknown",
            queue_size=self._checked("pending", pending, whole(pending, 0, 2**63)) or 0,
            height=self._checked("height", height, whole(height, 0, MAX_HEIGHT)),
            last_elapsed=elapsed,
            updated_at=int(now),
            reached=self._checked("up", up, whole(up, 0, 2**63)),
            last_crawl_at=ended,
        )
        self.skips.report()
        return status

    def _newest_elapsed(self, kind: object) -> bytes | None:
        if kind == b"list":
            value = self.client.lindex("elapsed", 0)
        elif kind == b"string":
            value = self.client.getrange("elapsed", 0, MAX_ELAPSED_BYTES)
        else:
            return None
        return value.encode() if isinstance(value, str) else value

    def _elapsed(self, newest: bytes | None) -> tuple[int | None, float | None]:
        """(when the newest crawl ended, how long it took), from ``[ts, seconds]`` or a
        plain number of seconds."""
        if newest is None:
            return None, None
        ended, seconds = elapsed_entry(newest)
        return ended, self._checked("elapsed", newest, seconds)

    def _checked(self, key: str, raw: object, value: T | None) -> T | None:
        """``value``, and ``raw`` said once if it gave none."""
        if raw is not None and value is None:
            cause = f"redis key {key} holds no value in bounds; written as null"
            self.skips.skip(cause, raw)
        return value


def run_until_signalled(client: redis.Redis, settings: BridgeSettings) -> None:
    """``crawldash bitnodes-status`` once connected: the status, the propagation and each
    crawl's attempts, until SIGINT or SIGTERM.

    Args:
        client: bitnodes' Redis.
        settings: the command's settings (``--out`` given: the command line checked it).
    """
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    assert settings.out is not None
    schedules = [propagation_schedule(client, settings), attempts_schedule(client, settings)]
    if settings.check_handoff_dir is not None:
        schedules.append(checked_schedule(client, settings.check_handoff_dir, settings))
    run(client, described(settings.redis), settings.out, settings.interval, stop, schedules)


def run(
    client: redis.Redis,
    url: str,
    out: Path,
    interval: float,
    stop: threading.Event,
    schedules: Sequence[Schedule] = (),
) -> None:
    """Rewrite ``out`` every ``interval`` seconds until ``stop`` is set, while each of
    ``schedules`` (propagation, crawl attempts) runs on a thread of its own, so that no
    collection delays the status. A Redis that cannot be read, or a file that cannot be
    written (a read-only or full disk), is logged when it starts failing and when it
    recovers, and retried with back-off; neither ends the bridge."""
    reader = StatusReader(client)
    wait, failing = interval, ""
    log.info("bitnodes status bridge started redis=%s out=%s interval=%s", url, out, interval)
    _warn_if_globbed(out)
    for schedule in schedules:
        schedule.start(stop)
    while not stop.is_set():
        try:
            write_atomically(out, msgspec.json.encode(reader.read(time.time())))
        except (redis.RedisError, OSError) as exc:
            wait = min(max(wait * 2, interval), MAX_BACKOFF)
            what = "redis read" if isinstance(exc, redis.RedisError) else f"writing {out}"
            if failing != what:
                log.warning(
                    "%s failed reason=%s: %s; status not rewritten; retrying with back-off",
                    what,
                    type(exc).__name__,
                    exc,
                )
            failing = what
        else:
            if failing:
                log.info("%s works again; status rewritten", failing)
            wait, failing = interval, ""
        stop.wait(wait)
    for schedule in schedules:
        schedule.stop()


def _warn_if_globbed(out: Path) -> None:
    """bitnodes' seeder and ping pick their input as ``max(glob('<folder>/*.json'))``: a
    status file among crawl files sorts after them and is read as a crawl."""
    if out.suffix == ".json" and any(snapshot_timestamp(p.name) for p in out.parent.glob("*.json")):
        log.warning(
            "%s is in a folder of crawl files: bitnodes' seeder.py and ping.py would read it "
            "as the newest crawl; write it elsewhere and give crawldash serve --status-file",
            out,
        )


def propagation_schedule(client: redis.Redis, settings: BridgeSettings) -> Schedule:
    """The collector of block propagation and node latency, run every
    ``--propagation-interval`` seconds beside the status (``bridge/propagation.py``)."""
    folder = settings.resolved_propagation_dir
    collector = Collector(client, folder, settings.keep_days, settings.max_blocks)
    log.info("keeping block propagation and node latency in %s", folder)
    return Schedule(collector, settings.propagation_interval)


def attempts_schedule(client: redis.Redis, settings: BridgeSettings) -> Schedule:
    """The record of each crawl's attempts, looked at on every status pass and kept beside
    the propagation (``bridge/attempts.py``)."""
    folder = settings.resolved_propagation_dir
    collector = AttemptsCollector(client, folder, settings.keep_days)
    log.info("keeping each crawl's attempts in %s", folder)
    return Schedule(collector, settings.interval, "attempts")


def checked_schedule(client: redis.Redis, folder: Path, settings: BridgeSettings) -> Schedule:
    """The hand-off of serve's successful live checks to bitnodes' ``check`` set
    (``bridge/checked.py``), every ``--check-handoff-interval`` seconds."""
    log.info("handing live checks left in %s to bitnodes' check set", folder)
    return Schedule(CheckedCollector(client, folder), settings.check_handoff_interval, "checks")
