"""Memory with one large crawl served (100,000 nodes; fewer when quick)."""

from __future__ import annotations

from bench.context import Bench, emptied
from bench.load import pss_mib, rss_mib
from bench.rows import Row, Unit, fact
from bench.servers import wait_history


def run(bench: Bench) -> list[Row]:
    nodes = f"{bench.data.big_nodes:,}"
    state = emptied(bench.config.root / "state-big")
    with bench.crawldash(state, data_dir=bench.data.big) as running:
        wait_history(running.base)
        return [
            fact(
                f"RSS (server + its child processes), {nodes}-node snapshot",
                rss_mib(running.pid),
                Unit.MIB,
                1,
            ),
            fact(
                f"PSS, {nodes}-node snapshot (shared pages counted once)",
                pss_mib(running.pid),
                Unit.MIB,
                1,
            ),
        ]
