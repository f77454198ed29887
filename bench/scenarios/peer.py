"""alt-bitnodes (bench.peer_server) beside crawldash, on the same folder of crawl files and
a Redis filled as bitnodes fills it: each thing both answer, measured on each in turn,
both servers idle before every run (alt-bitnodes goes on answering requests wrk has left
behind).

Both servers run on core 1 and wrk on core 0, as in the other scenarios; alt-bitnodes as
its service file runs it (one uvicorn worker), after its window-stats job has run once as
its timer runs it. Then, alt-bitnodes alone, what it answers about a crawl written (the
routes that name the newest crawl, asked as scenario freshness asks crawldash's) and the
p99 of its routes like /api/status and /api/check while crawls are written. Skipped,
saying why, where its source, its virtualenv or redis-server cannot be had.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass

from bench import peer_server
from bench.context import Bench, Running, emptied
from bench.load import Sample, free_port
from bench.peer_server import Unavailable
from bench.polling import peer_endpoints
from bench.rows import Note, Row, Versus
from bench.scenarios.freshness import p99_while_loading, switch_rows, written_everywhere
from bench.servers import get, measure, measure_slow, server, wait_idle

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
    loads = config.runs * config.loading_seconds  # crawls written while one URL is run
    crawls = bench.take(config.tries + 2 * loads)  # the peer's written -> served, its p99s
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
                # Alone now, as crawldash was in scenario freshness: what it answers about a
                # crawl written, and its polls while crawls are written.
                endpoints = peer_endpoints()
                found = written_everywhere(bench, alt, endpoints, crawls[: config.tries])
                rows += switch_rows("alt-bitnodes", endpoints, found, LATE)
                running = Running(alt, peer)
                asked = {
                    "`/api/v1/snapshots/?limit=1` (as status)": "/api/v1/snapshots/?limit=1",
                    f"`/api/v1/nodes/{node}/` (as check)": f"/api/v1/nodes/{node}/",
                }
                for at, (name, path) in enumerate(asked.items()):
                    these = crawls[config.tries + at * loads : config.tries + (at + 1) * loads]
                    rows.append(
                        p99_while_loading(name, bench, running, alt + path, these, "alt-bitnodes")
                    )
    except Unavailable as why:
        return [Note(f"peer (alt-bitnodes): skipped: {why}")]
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
