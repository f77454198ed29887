"""The scenarios of ``make bench``, in the order they run: each module's ``run`` takes the
run's Bench and returns its rows (bench.rows); bench.report turns them into text. A
scenario's name (``python -m bench.run --only NAME``) is its module's, with hyphens."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

from bench.context import Bench
from bench.rows import Row
from bench.scenarios import (
    access_log,
    archive,
    attempts,
    bridge_propagation,
    busy_cores,
    checknode,
    cold_history,
    cold_start,
    endpoints,
    freshness,
    heavy_queries,
    leaderboard,
    map,
    memory,
    naive,
    networks,
    nginx,
    peer,
    presence,
    saturated,
    startup,
    trends,
    workers,
)

Scenario = Callable[[Bench], list[Row]]
ORDER: tuple[ModuleType, ...] = (
    endpoints,
    access_log,
    heavy_queries,
    naive,
    nginx,
    peer,
    startup,
    freshness,
    cold_start,
    memory,
    presence,
    workers,
    busy_cores,
    saturated,
    cold_history,
    trends,
    bridge_propagation,
    attempts,
    networks,
    map,
    leaderboard,
    checknode,
    archive,
)


def scenario_name(module: ModuleType) -> str:
    """A scenario's name: its module's, with hyphens (``cold_start`` -> ``cold-start``)."""
    return module.__name__.rpartition(".")[2].replace("_", "-")


SCENARIOS: dict[str, Scenario] = {scenario_name(module): module.run for module in ORDER}
