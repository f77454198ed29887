"""How soon a crawl written is served, and what loading crawls costs /api/check's p99;
crawldash started on both cores, then its server process pinned to core 1."""

from __future__ import annotations

import statistics
import subprocess
import threading
import time

from bench.context import Bench, Running
from bench.load import children, wrk
from bench.rows import Measure, Row, Section, Shape, Unit
from bench.scenarios.writing import first_node, keep_looking, keep_writing, written_to_served
from bench.servers import BOTH_CORES, SERVER_CORE, status, wait_history

LOADER_STARTED = 2.0  # seconds after start-up by which the loader process runs


def run(bench: Bench) -> list[Row]:
    config = bench.config
    loads = config.runs * config.loading_seconds  # crawls written while check is run
    crawls = bench.take(config.tries + 2 * loads)
    folder = bench.data.data15k
    # Started on both cores so that its loader process may use either (as on a machine
    # where nothing is pinned); once it runs, the server process itself is pinned to core 1.
    with bench.crawldash(bench.ready_state(), cores=BOTH_CORES) as running:
        wait_history(running.base)
        time.sleep(LOADER_STARTED)
        pin(running.pid, threads=True)
        delays = written_to_served(running.base, folder, crawls[: config.tries], config.wait_limit)
        rows: list[Row] = [
            Measure(
                Section.FRESHNESS,
                f"new 15,000-node snapshot written -> served, median / worst of {config.tries}",
                (delays.median * 1000, delays.worst * 1000),
                Unit.MS,
                0,
                Shape.SLASHED,
                details=delays.note(),
            )
        ]
        url = f"{running.base}/api/check?address={first_node(running.base)}"
        loading = crawls[config.tries : config.tries + loads]
        rows.append(
            p99_while_loading(
                "check p99 idle / while snapshots load (one per second), loader on either core",
                bench,
                running,
                url,
                loading,
            )
        )
        for kid in children(running.pid)[1:]:  # now the loader shares the server's core too
            pin(kid, threads=False)
        rows.append(
            p99_while_loading(
                "check p99 idle / while snapshots load, loader on the server's core",
                bench,
                running,
                url,
                crawls[config.tries + loads :],
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
    name: str, bench: Bench, running: Running, url: str, crawls: list[tuple[int, bytes]]
) -> Measure:
    """check's p99 idle and while a crawl is written every second, in ``runs`` pairs of
    runs (idle, then loading): a shared machine's speed drifts between runs further apart.
    Also how many crawls were taken over meanwhile (a load that starts once another ends
    serves the newest written)."""
    config, folder = bench.config, bench.data.data15k
    first = status(running.base).snapshot_timestamp
    served: set[int] = set()
    idle, loading = [], []
    length = config.loading_seconds
    for round_ in range(config.runs):
        idle.append(wrk(url, running.pid, length, {}).p99)
        stop = threading.Event()
        these = crawls[round_ * length : (round_ + 1) * length]
        threads = [
            threading.Thread(target=keep_writing, args=(folder, these, stop)),
            threading.Thread(target=keep_looking, args=(running.base, served, stop)),
        ]
        for thread in threads:
            thread.start()
        loading.append(wrk(url, running.pid, length, {}).p99)
        stop.set()
        for thread in threads:
            thread.join()
        time.sleep(1)  # the last crawl's load ends before the next idle run
    taken = len(served - {first})
    return Measure(
        Section.FRESHNESS,
        name,
        (statistics.median(idle) * 1000, statistics.median(loading) * 1000),
        Unit.MS,
        2,
        Shape.VERSUS,
        details=f"{taken} crawls taken over meanwhile",
    )
