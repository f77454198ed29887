"""Prometheus metrics: what the data and the crawler look like, and how requests go."""

from __future__ import annotations

import itertools
import time
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence

from aiohttp import web
from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

from ..crawl.address import NETWORKS
from ..live.refreshing.rejections import Rejections
from ..live.state import State
from ..web.responses import plain
from .health import IndexHealth, Liveness

LATENCY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25, 1.0)


class RequestStats(Collector):
    """Request counts and latency histograms kept as plain numbers: a request costs one
    dictionary lookup and two list updates, and the collector turns them into Prometheus
    series at scrape time. Requests are labelled by the route's path; anything else (a 404)
    is ``other``."""

    def __init__(self) -> None:
        self.routes: frozenset[str] = frozenset()  # paths counted under their own label
        # (path, status) -> [requests per latency bucket (the last is +Inf)..., seconds];
        # other paths share their status's cell without a key of their own.
        self.cells: dict[tuple[str, int], list[float]] = {}

    def label_routes(self, paths: Iterable[str]) -> None:
        self.routes = frozenset(path for path in paths if "{" not in path)

    def record(self, path: str, status: int, seconds: float) -> None:
        cell = self.cells.get((path, status)) or self._cell(path, status)
        cell[bisect_left(LATENCY_BUCKETS, seconds)] += 1
        cell[-1] += seconds

    def _cell(self, path: str, status: int) -> list[float]:
        route = path if path in self.routes else "other"
        cell = self.cells.get((route, status))
        if cell is None:
            cell = self.cells[route, status] = [0.0] * (len(LATENCY_BUCKETS) + 2)
        return cell

    def collect(self) -> Iterator[Metric]:
        buckets: dict[str, list[float]] = defaultdict(lambda: [0.0] * (len(LATENCY_BUCKETS) + 2))
        requests = CounterMetricFamily(
            "crawldash_http_requests",
            "HTTP requests answered, by route and status.",
            labels=["route", "status"],
        )
        for (route, status), cell in sorted(self.cells.items()):
            requests.add_metric([route, str(status)], int(sum(cell[:-1])))
            buckets[route] = [a + b for a, b in zip(buckets[route], cell, strict=True)]
        yield requests
        latency = HistogramMetricFamily(
            "crawldash_http_request_duration_seconds",
            "Time to answer a request, by route.",
            labels=["route"],
        )
        bounds = [*map(str, LATENCY_BUCKETS), "+Inf"]
        for route, cell in sorted(buckets.items()):
            cumulative = list(zip(bounds, itertools.accumulate(cell[:-1]), strict=True))
            latency.add_metric([route], cumulative, cell[-1])
        yield latency


class Metrics:
    """One registry per application, so that several apps never share series."""

    def __init__(
        self,
        state: State,
        rejected: Rejections,
        watcher: Liveness,
        indexes: Sequence[IndexHealth],
        requests: RequestStats,
        breakdowns: bool = False,
    ) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.registry.register(DataCollector(state, rejected, watcher, indexes))
        if breakdowns:
            self.registry.register(BreakdownCollector(state))
        self.registry.register(requests)
        self.refresh = Histogram(
            "crawldash_refresh_duration_seconds",
            "Time to bring the state up to date.",
            registry=self.registry,
            buckets=(0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10),
        )

    async def handle(self, request: web.Request) -> web.Response:
        """``GET /metrics``: the Prometheus text format."""
        return plain(generate_latest(self.registry), CONTENT_TYPE_LATEST)


class DataCollector(Collector):
    """Gauges read from the state at scrape time: cheap fields, nothing scanned."""

    def __init__(
        self,
        state: State,
        rejected: Rejections,
        watcher: Liveness,
        indexes: Sequence[IndexHealth],
    ) -> None:
        self.state = state
        self.rejected = rejected
        self.watcher = watcher
        self.indexes = indexes

    def collect(self) -> Iterator[Metric]:
        state, now = self.state, time.time()
        snapshot, status = state.snapshot, state.status
        yield gauge(
            "snapshot_timestamp_seconds",
            "Time of the latest crawl served.",
            snapshot.timestamp if snapshot else None,
        )
        yield gauge(
            "snapshot_age_seconds",
            "Age of the latest crawl served.",
            now - snapshot.timestamp if snapshot else None,
        )
        yield gauge(
            "snapshot_nodes",
            "Reachable nodes in the latest crawl.",
            snapshot.total_nodes if snapshot else None,
        )
        by_network = GaugeMetricFamily(
            "crawldash_snapshot_nodes_by_network",
            "Reachable nodes in the latest crawl, by network.",
            labels=["network"],
        )
        for network, count in zip(NETWORKS, snapshot.networks if snapshot else (), strict=False):
            by_network.add_metric([network], count)
        yield by_network
        yield gauge(
            "consensus_height",
            "Most common height in the latest crawl.",
            snapshot.latest_height if snapshot else None,
        )
        crawler = GaugeMetricFamily(
            "crawldash_crawler_state", "1 for the state status.json reports.", labels=["state"]
        )
        crawler.add_metric([status.state if status else "unknown"], 1)
        yield crawler
        yield gauge(
            "crawler_queue_size",
            "Nodes waiting in the crawler's queue.",
            status.queue_size if status else None,
        )
        yield gauge(
            "crawler_last_elapsed_seconds",
            "Duration of the crawler's last crawl.",
            status.last_elapsed if status else None,
        )
        yield gauge("history_points", "Crawls held in the history.", len(state.history))
        yield gauge(
            "stale",
            "1 when the latest crawl is older than the stale threshold.",
            int(state.is_stale(now)),
        )
        yield gauge(
            "stale_after_seconds", "The stale threshold in force.", state.effective_stale_after()
        )
        yield gauge("stuck", "1 when the crawler looks stuck.", int(state.is_stuck(now)))
        yield gauge(
            "loader_degraded",
            "1 while new crawls cannot be loaded (the loader hangs or dies; see /healthz).",
            int(state.loader_trouble is not None),
        )
        yield from self._watching()

    def _watching(self) -> Iterator[Metric]:
        rejected = CounterMetricFamily(
            "crawldash_files_rejected", "Crawler file versions rejected, by kind.", labels=["kind"]
        )
        for kind, count in self.rejected.counts.items():
            rejected.add_metric([kind], count)
        yield rejected
        yield CounterMetricFamily(
            "crawldash_watcher_restarts",
            "Times the watcher restarted.",
            value=self.watcher.restarts,
        )
        yield gauge("watcher_up", "1 while the watcher runs.", int(self.watcher.alive))
        yield gauge(
            "watcher_watching",
            "1 once the watcher sees changes to the data folder as they happen.",
            int(self.watcher.watching),
        )
        yield from self._indexes()
        yield gauge(
            "data_dir_missing",
            "1 while the data folder cannot be listed.",
            int(self.state.data_dir_problem is not None),
        )

    def _indexes(self) -> Iterator[Metric]:
        """Each index's saving, by name; the history's also under its older names, which
        alert rules may use."""
        saved = GaugeMetricFamily(
            "crawldash_index_saved_timestamp_seconds",
            "When each index was last written.",
            labels=["index"],
        )
        failures = CounterMetricFamily(
            "crawldash_index_save_failures",
            "Saves of each index that failed.",
            labels=["index"],
        )
        failing = GaugeMetricFamily(
            "crawldash_index_save_failing",
            "1 while the latest save of each index failed (it is retried with back-off).",
            labels=["index"],
        )
        for index in self.indexes:
            if index.saved_at is not None:
                saved.add_metric([index.name], index.saved_at)
            failures.add_metric([index.name], index.failures)
            failing.add_metric([index.name], int(index.error is not None))
        yield from (saved, failures, failing)
        for index in self.indexes:
            if index.name == "history":
                yield gauge(
                    "history_index_saved_timestamp_seconds",
                    "When the history index was last written.",
                    index.saved_at,
                )
                yield CounterMetricFamily(
                    "crawldash_history_index_save_failures",
                    "Saves of the history index that failed.",
                    value=index.failures,
                )


class BreakdownCollector(Collector):
    """``--metrics-breakdowns``: the latest crawl's nodes by country and by user agent."""

    def __init__(self, state: State) -> None:
        self.state = state

    def collect(self) -> Iterator[Metric]:
        snapshot = self.state.snapshot
        for by, label in (("country", "country"), ("user_agent", "user_agent")):
            family = GaugeMetricFamily(
                f"crawldash_snapshot_nodes_by_{by}",
                f"Reachable nodes in the latest crawl, by {label.replace('_', ' ')}.",
                labels=[label],
            )
            for value, count in snapshot.breakdowns[by].counted if snapshot else ():
                family.add_metric(["" if value is None else str(value)], count)
            yield family


def gauge(name: str, documentation: str, value: float | None) -> GaugeMetricFamily:
    family = GaugeMetricFamily(f"crawldash_{name}", documentation)
    if value is not None:
        family.add_metric([], value)
    return family
