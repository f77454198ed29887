"""How soon a crawl written is answered about on every endpoint, how far apart endpoints
switch to it, and what loading crawls costs the p99 of /api/status and /api/check;
crawldash started on both cores, then its server process pinned to core 1 (its loader
free to use either core), then the loader pinned to core 1 too (everything on one core).

Each crawl is written once the one before is answered about everywhere (its CSV records,
which follow it, included) and a moment more, as a crawl ten minutes after the one before
finds crawldash; every endpoint is asked again and again from the write on
(``bench.polling``), with If-None-Match where the answer has a validator, so that asking
costs the server little.
"""

from __future__ import annotations

import statistics
import subprocess
import threading
import time

from bench.context import Bench, Running
from bench.data import write_crawl
from bench.load import children, wrk
from bench.polling import (
    PAUSE,
    Endpoint,
    Switches,
    crawldash_endpoints,
    median_and_worst,
    switches,
)
from bench.rows import Measure, Row, Section, Unit
from bench.scenarios.writing import SETTLE, keep_looking, keep_writing, steady_node
from bench.servers import BOTH_CORES, SERVER_CORE, status, wait_history

LOADER_STARTED = 2.0  # seconds after start-up by which the loader process runs
SERVED_LIMIT = 100.0  # ms: each endpoint's median written -> answered about
GAP_LIMIT = 10.0  # ms: the median of each crawl's largest gap between two endpoints
P99_LIMIT = 2.0  # a p99 while crawls load over the p99 idle
POLLED = ("status", "check")


def run(bench: Bench) -> list[Row]:
    config = bench.config
    loads = config.runs * config.loading_seconds  # crawls written while one URL is run
    crawls = bench.take(config.tries + 2 * len(POLLED) * loads)
    # Started on both cores so that its loader process may use either (as on a machine
    # where nothing is pinned); once it runs, the server process itself is pinned to core 1.
    with bench.crawldash(bench.ready_state(), cores=BOTH_CORES) as running:
        wait_history(running.base)
        time.sleep(LOADER_STARTED)
        pin(running.pid, threads=True)
        node = steady_node(running.base, crawls)
        endpoints = crawldash_endpoints(node)
        found = written_everywhere(bench, running.base, endpoints, crawls[: config.tries])
        rows: list[Row] = switch_rows("crawldash", endpoints, found, config.wait_limit)
        urls = {"status": "/api/status", "check": f"/api/check?address={node}"}
        loading = iter(
            crawls[config.tries + i * loads : config.tries + (i + 1) * loads]
            for i in range(2 * len(POLLED))
        )
        for where in ("loader on either core", "loader on the server's core"):
            if where == "loader on the server's core":
                for kid in children(running.pid)[1:]:  # the loader shares the core now
                    pin(kid, threads=False)
            for name in POLLED:
                url = running.base + urls[name]
                rows.append(
                    p99_while_loading(f"{name}, {where}", bench, running, url, next(loading))
                )
    return rows


def written_everywhere(
    bench: Bench, base: str, endpoints: list[Endpoint], crawls: list[tuple[int, bytes]]
) -> list[Switches]:
    """Each crawl written in turn, once the one before is answered about everywhere."""
    folder, found = bench.data.data15k, []
    for timestamp, body in crawls:

        def write(timestamp: int = timestamp, body: bytes = body) -> None:
            write_crawl(folder, timestamp, body)

        found.append(switches(base, endpoints, timestamp, write, bench.config.wait_limit))
        time.sleep(SETTLE)
    return found


def switch_rows(
    who: str, endpoints: list[Endpoint], found: list[Switches], limit: float
) -> list[Row]:
    """A row per endpoint (median and worst of the crawls written), and the gap's; with
    targets for crawldash."""
    ours = who == "crawldash"
    rows: list[Row] = []
    for endpoint in endpoints:
        median, worst = median_and_worst([f.seconds[endpoint.name] for f in found], limit)
        late = sum(f.seconds[endpoint.name] is None for f in found)
        rows.append(
            Measure(
                Section.SWITCH,
                f"{who}: `{endpoint.path}` written -> answered about, median / worst of "
                f"{len(found)}",
                (median * 1000, worst * 1000),
                Unit.MS,
                0,
                limits=(SERVED_LIMIT, None) if ours and not endpoint.follows else (),
                details="; ".join(
                    filter(
                        None,
                        [
                            "made after the switch, and answered once made" * endpoint.follows,
                            f"{late} not within {limit:.0f} s" if late else "",
                        ],
                    )
                ),
            )
        )
    if len(endpoints) > 1:
        gaps = [limit if f.gap is None else f.gap for f in found]
        rows.append(
            Measure(
                Section.SWITCH,
                f"{who}: the largest gap between two endpoints' switches to a crawl, median / "
                f"worst of {len(found)}",
                (statistics.median(gaps) * 1000, max(gaps) * 1000),
                Unit.MS,
                1,
                limits=(GAP_LIMIT, None) if ours else (),
                details=f"each endpoint asked every {PAUSE * 1000:.0f} ms (bench.polling.PAUSE), "
                "and every other at once when one names the crawl; the CSV, made after, "
                "left out",
            )
        )
        proven = [limit if f.proven_gap is None else f.proven_gap for f in found]
        rows.append(
            Measure(
                Section.SWITCH,
                f"{who}: the least gap between two endpoints' switches that the answers "
                f"prove, median / worst of {len(found)}",
                (statistics.median(proven) * 1000, max(proven) * 1000),
                Unit.MS,
                1,
                details="how long after one endpoint had named the crawl another was still "
                "asked and answered about an older one (0: every endpoint may have switched "
                "at one moment); the gap above adds how long the asks made at once took",
            )
        )
    return rows


def pin(pid: int, threads: bool) -> None:
    """The process (``threads``: and every thread of it) to the servers' core."""
    flags = ["-a", "-p"] if threads else ["-p"]
    subprocess.run(
        ["taskset", *flags, "-c", SERVER_CORE, str(pid)], check=True, capture_output=True
    )


def p99_while_loading(
    name: str,
    bench: Bench,
    running: Running,
    url: str,
    crawls: list[tuple[int, bytes]],
    who: str = "crawldash",
) -> Measure:
    """A URL's p99 idle and while a crawl is written every second, in ``runs`` pairs of
    runs (idle, then loading): a shared machine's speed drifts between runs further apart.
    Also how many crawls were taken over meanwhile (a load that starts once another ends
    serves the newest written)."""
    config, folder = bench.config, bench.data.data15k
    ours = who == "crawldash"
    first = status(running.base).snapshot_timestamp if ours else None
    served: set[int] = set()
    idle, loading = [], []
    length = config.loading_seconds
    for round_ in range(config.runs):
        idle.append(wrk(url, running.pid, length, {}).p99)
        stop = threading.Event()
        these = crawls[round_ * length : (round_ + 1) * length]
        threads = [threading.Thread(target=keep_writing, args=(folder, these, stop))]
        if ours:
            threads.append(threading.Thread(target=keep_looking, args=(running.base, served, stop)))
        for thread in threads:
            thread.start()
        loading.append(wrk(url, running.pid, length, {}).p99)
        stop.set()
        for thread in threads:
            thread.join()
        time.sleep(1)  # the last crawl's load ends before the next idle run
    before, during = statistics.median(idle) * 1000, statistics.median(loading) * 1000
    taken = f"; {len(served - {first})} crawls taken over meanwhile" if ours else ""
    return Measure(
        Section.SWITCH,
        f"{who}: {name}: p99 while crawls load (one a second) / p99 idle",
        (during / before if before else float("nan"),),
        Unit.RATIO,
        limits=(P99_LIMIT,) if ours else (),
        details=f"p99 {before:.2f} ms idle, {during:.2f} ms loading{taken}",
    )
