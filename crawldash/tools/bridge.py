"""``crawldash bitnodes-status``: bitnodes' live crawler status, from Redis to status.json.

bitnodes keeps its crawler's state in Redis: ``crawl:master:state`` (a string), ``pending``
(a set: its size is the queue), ``height`` (a string) and ``elapsed`` (a list of JSON
``[unix_seconds, seconds]``, newest first; older versions keep a plain number). This reads
them every ``interval`` seconds and writes ``status.json`` atomically. While Redis cannot be
reached it logs, retries with back-off and stops rewriting the file, so that crawldash's
stuck-crawler alarm fires.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path

import msgspec
import redis

from ..crawl.files import write_atomically
from ..models import CrawlerStatus

log = logging.getLogger(__name__)
MAX_BACKOFF = 60.0


def read_status(client: redis.Redis, now: float) -> CrawlerStatus:
    pipe = client.pipeline(transaction=False)
    pipe.get("crawl:master:state")
    pipe.scard("pending")
    pipe.get("height")
    pipe.type("elapsed")
    state, pending, height, elapsed_type = pipe.execute()
    return CrawlerStatus(
        state=state.decode() if state else "unknown",
        queue_size=int(pending),
        height=int(height) if height else None,
        last_elapsed=_last_elapsed(client, elapsed_type),
        updated_at=int(now),
    )


def _last_elapsed(client: redis.Redis, kind: bytes) -> float | None:
    if kind == b"list":
        newest = client.lindex("elapsed", 0)
        return float(json.loads(newest)[1]) if newest else None
    if kind == b"string":
        value = client.get("elapsed")
        return float(value) if value else None
    return None


def run(url: str, out: Path, interval: float, stop: threading.Event) -> None:
    """Rewrite ``out`` every ``interval`` seconds until ``stop`` is set."""
    client = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)
    wait, failing = interval, False
    log.info("bitnodes status bridge started redis=%s out=%s interval=%s", url, out, interval)
    while not stop.is_set():
        try:
            status = read_status(client, time.time())
        except (redis.RedisError, ValueError, IndexError) as exc:
            wait = min(max(wait * 2, interval), MAX_BACKOFF)
            log.warning(
                "redis read failed reason=%s: %s; status.json not rewritten; retrying in %.1f s",
                type(exc).__name__,
                exc,
                wait,
            )
            failing = True
        else:
            write_atomically(out, msgspec.json.encode(status))
            if failing:
                log.info("redis reachable again; status.json rewritten")
            wait, failing = interval, False
        stop.wait(wait)
