"""Start-up with the state index present: the time to a first answer, and until the
history is complete (``cold_start`` measures the same without one)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path

from bench.context import Bench
from bench.rows import Measure, Row, Section, Shape, Unit, fact
from bench.servers import BOTH_CORES, wait_history


def run(bench: Bench) -> list[Row]:
    state = bench.ready_state()
    rows: list[Row] = [
        first_answers(
            f"first answer after start (state index present), median of {bench.config.starts} "
            "starts",
            bench,
            lambda: state,
        )
    ]
    with bench.crawldash(state, cores=BOTH_CORES) as running:
        rows.append(
            fact(
                "history complete after start (state index present)",
                wait_history(running.base),
                Unit.S,
            )
        )
    return rows


def first_answers(name: str, bench: Bench, state: Callable[[], Path]) -> Measure:
    """The median and range of ``starts`` start-ups' times to a first answer, on both
    cores; each from the state folder ``state()`` gives."""
    times = []
    for _ in range(bench.config.starts):
        folder = state()
        started = time.monotonic()
        with bench.crawldash(folder, cores=BOTH_CORES):
            times.append(time.monotonic() - started)
    return Measure(
        Section.FRESHNESS,
        name,
        (statistics.median(times), min(times), max(times)),
        Unit.S,
        2,
        Shape.SPREAD,
    )
