"""The scenarios of ``make bench``, in the order they run: each takes the run's Bench and
returns its rows (bench.rows); bench.report turns them into text."""

from __future__ import annotations

from collections.abc import Callable

from bench.context import Bench
from bench.rows import Row
from bench.scenarios import (
    access_log,
    busy_cores,
    cold_history,
    endpoints,
    freshness,
    heavy_queries,
    memory,
    naive,
    networks,
    presence,
    propagation,
    snapshot_vs_nginx,
    startup,
    trends,
    workers,
)

Scenario = Callable[[Bench], list[Row]]

SCENARIOS: dict[str, Scenario] = {
    "endpoints": endpoints.run,
    "access-log": access_log.run,
    "heavy-queries": heavy_queries.run,
    "naive": naive.run,
    "nginx": snapshot_vs_nginx.run,
    "startup": startup.warm,
    "freshness": freshness.run,
    "cold-start": startup.cold,
    "memory": memory.run,
    "presence": presence.run,
    "workers": workers.run,
    "busy-cores": busy_cores.run,
    "cold-history": cold_history.run,
    "trends": trends.run,
    "bridge-propagation": propagation.run,
    "networks": networks.run,
}
