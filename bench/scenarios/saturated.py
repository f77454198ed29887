"""Written -> served on a crawler's machine at its worst: every core runs a CPU-bound
process at nice 0 in a session of its own (as a crawler service), and wrk keeps
crawldash's server saturated with ``/api/status`` meanwhile. The loader then competes with
a server that never idles, in the server's own session."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator

from bench.context import Bench
from bench.load import WRK_CORE
from bench.rows import Measure, Row, Section, Shape, Unit
from bench.scenarios.writing import written_to_served
from bench.servers import BOTH_CORES, spinners, wait_history

LOADER_STARTED = 2.0  # seconds after start-up by which the loader process runs
MEDIAN_LIMIT = 3.0  # seconds: issue 45's bound for a busy machine and a saturated server
CONNECTIONS = 32


def run(bench: Bench) -> list[Row]:
    config = bench.config
    crawls = bench.take(config.tries)
    cores = os.cpu_count() or 1
    with bench.crawldash(bench.ready_state(), cores=BOTH_CORES) as running:
        wait_history(running.base)
        time.sleep(LOADER_STARTED)
        with spinners(cores), saturating(f"{running.base}/api/status"):
            delays = written_to_served(running.base, bench.data.data15k, crawls, config.wait_limit)
    details = [
        f"{cores} `while True: pass` processes at nice 0 in a session of their own, and wrk "
        f"(1 thread, {CONNECTIONS} connections, core {WRK_CORE}) on /api/status throughout; "
        f"crawldash on cores {BOTH_CORES}"
    ]
    return [
        Measure(
            Section.TARGETS,
            "new 15,000-node snapshot written -> served with every core busy and the server "
            f"saturated, median / worst of {config.tries}",
            (delays.median, delays.worst),
            Unit.S,
            2,
            Shape.SLASHED,
            limits=(MEDIAN_LIMIT, None),
            details="; ".join(filter(None, [*details, delays.note()])),
        )
    ]


@contextlib.contextmanager
def saturating(url: str) -> Iterator[None]:
    """wrk asking ``url`` as fast as the server answers, until the block ends."""
    command = ["taskset", "-c", WRK_CORE, "wrk", "-t1", f"-c{CONNECTIONS}", "-d3600s", url]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)  # its connections open before the first crawl is written
        yield
    finally:
        process.kill()
        process.wait()
