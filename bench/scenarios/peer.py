"""alt-bitnodes (bench.peer_server) beside crawldash, on the same folder of crawl files and
a Redis filled as bitnodes fills it: each thing both answer, measured on each in turn,
both servers idle before every run (alt-bitnodes goes on answering requests wrk has left
behind); then how soon a crawl written is served by each, one server running at a time.

Both servers run on core 1 and wrk on core 0, as in the other scenarios; alt-bitnodes as
its service file runs it (one uvicorn worker), after its window-stats job has run once as
its timer runs it. Skipped, saying why, where its source, its virtualenv or redis-server
cannot be had.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import msgspec

from bench import peer_server
from bench.context import Bench, emptied
from bench.data import write_crawl
from bench.load import Sample, free_port
from bench.peer_server import Unavailable
from bench.rows import Measure, Note, Row, Section, Shape, Unit, Versus
from bench.scenarios.writing import SETTLE
from bench.servers import POLL, get, measure, measure_slow, server, status, wait_idle, wait_whole

WINDOW = 691_200  # seconds: alt-bitnodes' widest window (8 days)
LATE = 30.0  # seconds after which a crawl written counts as not served
SHORTEST = 3  # seconds of a run: alt-bitnodes rebuilds its node index from Redis every 10 s


@dataclass(frozen=True)
class Route:
    what: str
    ours: str
    theirs: str
    headers: dict[str, str]
    slow: bool = False  # the peer takes tens of milliseconds or more per request


def routes(node: str) -> list[Route]:
    latest = "/api/v1/snapshots/latest/"
    return [
        Route("latest snapshot (identity)", latest, latest, {"Accept-Encoding": "identity"}, True),
        Route(
            "latest snapshot (gzip; alt-bitnodes sends identity)",
            latest,
            latest,
            {"Accept-Encoding": "gzip"},
            True,
        ),
        Route("one node", f"/api/v1/nodes/{node}/", f"/api/v1/nodes/{node}/", {}),
        Route("country rankings", "/api/breakdown?by=country", "/api/v1/rankings/countries/", {}),
        Route("window stats", f"/api/unique?window={WINDOW}", "/api/v1/stats/window", {}),
        Route("snapshots list", "/api/v1/snapshots/", "/api/v1/snapshots/", {}),
    ]


def run(bench: Bench) -> list[Row]:
    try:
        checkout = peer_server.source(os.environ)
        bin_dir = peer_server.virtualenv(checkout, os.environ)
    except Unavailable as why:
        return [Note(f"peer (alt-bitnodes): skipped: {why}")]
    config, folder = bench.config, bench.data.data15k
    host, _, port = bench.hit().rpartition(":")
    node = f"{host.strip('[]')}-{port}"
    crawls = bench.take(2 * config.tries)  # in time order: crawldash's, then the peer's
    first, then = crawls[: config.tries], crawls[config.tries :]
    work = emptied(config.root / "alt-bitnodes")
    redis_port, alt_port = free_port(), free_port()
    env = peer_server.environment(folder, redis_port, work)
    alt = f"http://127.0.0.1:{alt_port}"
    newest = max(int(p.stem) for p in folder.glob("[0-9]*.json"))
    rows: list[Row] = []
    try:
        with peer_server.redis_server(work, redis_port):
            filled = peer_server.fill_redis(redis_port, (folder / f"{newest}.json").read_bytes())
            window_job = [str(bin_dir / "python"), "window_stats.py"]
            subprocess.run(window_job, cwd=checkout, env=env, check=True, capture_output=True)
            command = peer_server.command(bin_dir, alt_port)
            with server(command, alt + "/api/snapshots", bench.log, cwd=checkout, env=env) as peer:
                with bench.crawldash(bench.ready_state()) as ours:
                    rows += versus(bench, ours.base, ours.pid, alt, peer.pid, routes(node))
                    mine = [written_to_served(folder, *c, ours.base, _ours) for c in first]
                theirs = [written_to_served(folder, *c, alt, _theirs) for c in then]
    except Unavailable as why:
        return [Note(f"peer (alt-bitnodes): skipped: {why}")]
    rows.append(served_row("crawldash", mine))
    rows.append(served_row("alt-bitnodes", theirs))
    rows.append(Note(f"peer: alt-bitnodes from {checkout}; its Redis holds {filled:,} nodes"))
    return rows


def versus(
    bench: Bench, ours: str, our_pid: int, theirs: str, their_pid: int, asked: list[Route]
) -> list[Row]:
    """Each route on each server in turn, in rounds over the routes, both idle first."""
    config = bench.config
    seconds = max(config.seconds, SHORTEST)
    for route in asked:  # the first answer of each is made once; measure the rest
        get(ours + route.ours, route.headers)
        get(theirs + route.theirs, route.headers)
    found: list[tuple[list[Sample], list[Sample]]] = [([], []) for _ in asked]
    for _ in range(config.runs):
        for route, (mine, peer) in zip(asked, found, strict=True):
            wait_idle(our_pid), wait_idle(their_pid)
            mine += measure(ours + route.ours, our_pid, route.headers, 1, seconds)
            wait_idle(our_pid), wait_idle(their_pid)
            url, pid = theirs + route.theirs, their_pid
            if route.slow:
                peer += measure_slow(url, pid, route.headers, 1, seconds, config.quick)
            else:
                peer += measure(url, pid, route.headers, 1, seconds)
    return [
        Versus(route.what, route.ours, route.theirs, tuple(mine), tuple(peer))
        for route, (mine, peer) in zip(asked, found, strict=True)
    ]


def served_row(who: str, delays: list[float | None]) -> Measure:
    late = sum(delay is None for delay in delays)
    seconds = [LATE if delay is None else delay for delay in delays]
    return Measure(
        Section.PEER,
        f"{who}: a new crawl written -> served, median / worst of {len(delays)}",
        (statistics.median(seconds) * 1000, max(seconds) * 1000),
        Unit.MS,
        0,
        Shape.SLASHED,
        details=f"{late} not served within {LATE:.0f} s" if late else "",
    )


class _Newest(msgspec.Struct):
    timestamp: int


class _Listed(msgspec.Struct):
    results: list[_Newest]


def _ours(base: str) -> int | None:
    return status(base).snapshot_timestamp


def _theirs(base: str) -> int | None:
    """The newest crawl alt-bitnodes lists (its v1 list, newest first)."""
    listed = msgspec.json.decode(get(base + "/api/v1/snapshots/?limit=1")[1], type=_Listed)
    return listed.results[0].timestamp if listed.results else None


def written_to_served(
    folder: Path, timestamp: int, body: bytes, base: str, newest: Callable[[str], int | None]
) -> float | None:
    """Seconds from writing the crawl until ``newest(base)`` names it; None past 30 s.
    Then, for crawldash, until it is served whole (the next is written to an idle
    loader, as a crawl 10 minutes later finds it)."""
    write_crawl(folder, timestamp, body)
    started = time.monotonic()
    while newest(base) != timestamp:
        if time.monotonic() - started > LATE:
            return None
        time.sleep(POLL)
    took = time.monotonic() - started
    if newest is _ours:
        wait_whole(base, timestamp, LATE)
    time.sleep(SETTLE)
    return took
