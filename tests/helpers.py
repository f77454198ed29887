"""What several test files share: a real server's answers read as a client would, a history
of crawls written to a folder, and the bitnodes bridge run as a real process."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import redis

from crawldash.crawl.decode import decode_snapshot
from crawldash.demo.fake_crawler import generate_crawls

from .factories import export_body, write_snapshot
from .process import PATIENCE, wait_until

# Answers ----------------------------------------------------------------------------------


def get(url: str) -> Any:
    """The JSON of a 200 answer; any other status raises urllib's HTTPError (closed: a
    caller that waits past it, as ``wait_until`` does, leaves no connection open)."""
    try:
        with urllib.request.urlopen(url, timeout=PATIENCE) as response:
            return json.load(response)
    except urllib.error.HTTPError as error:
        error.close()
        raise


def answer(url: str, data: bytes | None = None) -> tuple[int, Any]:
    """The status and JSON of an answer, an error's as well; ``data``: POSTed as a form."""
    try:
        with urllib.request.urlopen(url, data=data, timeout=PATIENCE) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        with error:  # its connection is closed, not left to the collector
            return error.code, json.load(error)


def error_of(url: str) -> dict[str, Any]:
    """The ``error`` object of an answer that must be an error."""
    status, body = answer(url)
    assert status >= 400, status
    error: dict[str, Any] = body["error"]
    return error


def fetch(url: str) -> tuple[int, dict[str, str], bytes]:
    """The status, headers and body of an answer, an error's as well."""
    try:
        with urllib.request.urlopen(url, timeout=PATIENCE) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, dict(error.headers), error.read()


# Crawls -----------------------------------------------------------------------------------

Rows = list[list[Any]]


def write_crawls(
    folder: Path, crawl_rows: Callable[[int], Rows], count: int, first: int, interval: int = 600
) -> list[Path]:
    """Crawls 0 to ``count - 1`` in the export form, ``interval`` seconds apart from
    ``first``; ``crawl_rows(index)`` gives each crawl's rows."""
    return [
        write_snapshot(folder, first + interval * index, export_body(crawl_rows(index)))
        for index in range(count)
    ]


def write_generated(
    folder: Path, *, crawls: int, end: int, nodes: int = 120, interval: int = 600
) -> dict[int, int]:
    """Real-shaped crawls (the demo generator: churn, a fresh order each crawl, varied user
    agents, Tor rows at 0.0, 0.0) written to ``folder``, each file's time its crawl's;
    each crawl's unique nodes."""
    counts = {}
    for crawl in generate_crawls(nodes=nodes, crawls=crawls, interval=interval, end=end):
        body = crawl.body()
        path = write_snapshot(folder, crawl.timestamp, body)
        os.utime(path, (crawl.timestamp, crawl.timestamp))
        counts[crawl.timestamp] = len(decode_snapshot(body, crawl.timestamp).nodes)
    return counts


# The bitnodes bridge ----------------------------------------------------------------------


def bridge_command(
    *options: str, python: str = sys.executable, prefix: Sequence[str] = ()
) -> list[str]:
    """``crawldash bitnodes-status OPTIONS`` (behind ``prefix``: setpriv)."""
    return [*prefix, python, "-m", "crawldash", "bitnodes-status", *options]


@contextmanager
def bridge(
    *options: str,
    python: str = sys.executable,
    prefix: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    log: Path | None = None,
) -> Iterator[subprocess.Popen[str]]:
    """The bridge run with ``options``, its standard error piped, or written to ``log``
    for a test to read as it goes (``said``); on leaving, stopped with SIGTERM if it still
    runs (a test that failed first), so that no process outlives its test."""
    with open(log or os.devnull, "w") as written:
        process = subprocess.Popen(
            bridge_command(*options, python=python, prefix=prefix),
            stderr=subprocess.PIPE if log is None else written,
            text=True,
            env=None if env is None else {**os.environ, **env},
        )
        try:
            yield process
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
            process.communicate(timeout=PATIENCE)


def stopped(process: subprocess.Popen[str], log: Path | None = None) -> str:
    """Its standard error (or ``log``, where it went), once it has ended on SIGTERM as a
    clean exit."""
    assert process.poll() is None, process.communicate()[1]  # still running
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=PATIENCE)
    if log is not None:
        stderr = log.read_text()
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr, stderr
    return stderr


def redis_calls(client: redis.Redis, command: str) -> int:
    """How many times Redis has run ``command`` since it started (INFO commandstats)."""
    stats = client.info("commandstats")
    return int(stats.get(f"cmdstat_{command}", {}).get("calls", 0))


def propagation_passes(client: redis.Redis, count: int = 3) -> None:
    """Wait until the bridge's propagation collector has made ``count`` passes more over
    ``client``'s Redis, as Redis counts them: each pass SCANs the keys twice (for binv:
    and for rtt: keys), in a SCAN per thousand keys. The crawl attempts' collector scans
    too, once a crawl: then fewer passes are seen, never none."""
    per_pass = 2 * math.ceil((client.dbsize() + 1) / 1000)
    wanted = redis_calls(client, "scan") + per_pass * count
    wait_until(lambda: redis_calls(client, "scan") >= wanted)


def status_passes(client: redis.Redis, count: int = 3) -> None:
    """Wait until the bridge has made ``count`` status passes more over ``client``'s
    Redis, as Redis counts them: each pass reads the crawler's state with one GETRANGE,
    then writes the status (or fails to, and tries again)."""
    wanted = redis_calls(client, "getrange") + count
    wait_until(lambda: redis_calls(client, "getrange") >= wanted)
