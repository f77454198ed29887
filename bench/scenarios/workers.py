"""Scaling: crawldash with ``--workers 2`` across both cores (shared with wrk), against one
worker on core 1 (the status row of the endpoints scenario)."""

from __future__ import annotations

import time

from bench.context import Bench
from bench.rows import Row, Workers
from bench.servers import BOTH_CORES, measure

WORKERS_STARTED = 2.0  # seconds after the first answer by which every worker answers


def run(bench: Bench) -> list[Row]:
    config = bench.config
    with bench.crawldash(bench.ready_state(), "--workers", "2", cores=BOTH_CORES) as running:
        time.sleep(WORKERS_STARTED)
        samples = measure(
            running.base + "/api/status", running.pid, {}, config.runs, config.seconds
        )
    return [Workers(2, "0,1 (shared with wrk)", tuple(samples))]
