"""Start-up with no state index (an empty state folder): the time to a first answer, and
until the history is complete."""

from __future__ import annotations

from bench.context import Bench, emptied
from bench.rows import Row, Unit, fact
from bench.scenarios.startup import first_answers
from bench.servers import wait_history


def run(bench: Bench) -> list[Row]:
    folder = bench.config.root / "cold"
    rows: list[Row] = [
        first_answers(
            f"first answer after start (cold, no state index), median of {bench.config.starts} "
            "starts",
            bench,
            lambda: emptied(folder),
        )
    ]
    with bench.crawldash(emptied(folder)) as running:
        rows.append(
            fact(
                "history complete after start (cold, no state index)",
                wait_history(running.base),
                Unit.S,
            )
        )
    return rows
