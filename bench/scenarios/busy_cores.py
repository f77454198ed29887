"""Written -> served with every core busy: one CPU-bound process per core at nice 0
(``while True: pass``) while crawls are written into the served folder. crawldash and its
loader process may use either core, as on a machine where nothing is pinned."""

from __future__ import annotations

import os
import time

from bench.context import Bench
from bench.rows import Measure, Row, Section, Shape, Unit
from bench.scenarios.writing import written_to_served
from bench.servers import BOTH_CORES, spinners, wait_history

LOADER_STARTED = 2.0  # seconds after start-up by which the loader process runs
MEDIAN_LIMIT, WORST_LIMIT = 1.5, 3.0  # seconds


def run(bench: Bench) -> list[Row]:
    config = bench.config
    crawls = bench.take(config.tries)
    cores = os.cpu_count() or 1
    with bench.crawldash(bench.ready_state(), cores=BOTH_CORES) as running:
        wait_history(running.base)
        time.sleep(LOADER_STARTED)
        with spinners(cores):
            delays = written_to_served(running.base, bench.data.data15k, crawls, config.wait_limit)
    details = [
        f"{cores} `while True: pass` processes at nice 0 in a session of their own (as a "
        f"crawler service), crawldash on cores {BOTH_CORES}"
    ]
    return [
        Measure(
            Section.TARGETS,
            "new 15,000-node snapshot written -> served with every core busy, median / worst "
            f"of {config.tries}",
            (delays.median, delays.worst),
            Unit.S,
            2,
            Shape.SLASHED,
            limits=(MEDIAN_LIMIT, WORST_LIMIT),
            details="; ".join(filter(None, [*details, delays.note()])),
        )
    ]
