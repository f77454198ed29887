"""Prometheus metrics: what the data and the crawler look like, and how requests go."""

from __future__ import annotations

import bisect
import itertools
import time
from collections.abc import Awaitable, Callable, Iterator

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

from .address import NETWORKS
from .typedefs import REFRESHER, STATE, WATCHER

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


LATENCY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25, 1.0)


class RequestStats(Collector):
    """Request counts and latency histograms kept as plain numbers: a request costs two
    dictionary updates, and the collector turns them into Prometheus series at scrape time."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str], int] = {}
        self.buckets: dict[str, list[int]] = {}  # per route: one count per bucket, then +Inf
        self.sums: dict[str, float] = {}

    def record(self, route: str, status: int, seconds: float) -> None:
        key = (route, str(status))
        self.counts[key] = self.counts.get(key, 0) + 1
        buckets = self.buckets.get(route)
        if buckets is None:
            buckets = self.buckets[route] = [0] * (len(LATENCY_BUCKETS) + 1)
            self.sums[route] = 0.0
        buckets[bisect.bisect_left(LATENCY_BUCKETS, seconds)] += 1
        self.sums[route] += seconds

    def collect(self) -> Iterator[Metric]:
        requests = CounterMetricFamily(
            "crawldash_http_requests",
            "HTTP requests answered, by route and status.",
            labels=["route", "status"],
        )
        for (route, status), count in sorted(self.counts.items()):
            requests.add_metric([route, status], count)
        yield requests
        latency = HistogramMetricFamily(
            "crawldash_http_request_duration_seconds",
            "Time to answer a request, by route.",
            labels=["route"],
        )
        for route, counts in sorted(self.buckets.items()):
            bounds = [*map(str, LATENCY_BUCKETS), "+Inf"]
            cumulative = list(zip(bounds, itertools.accumulate(counts), strict=True))
            latency.add_metric([route], cumulative, self.sums[route])
        yield latency


class Metrics:
    """One registry per application, so that several apps never share series."""

    def __init__(self, app: web.Application) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.registry.register(DataCollector(app))
        self.requests = RequestStats()
        self.registry.register(self.requests)
        self.refresh = Histogram(
            "crawldash_refresh_duration_seconds",
            "Time to bring the state up to date.",
            registry=self.registry,
            buckets=(0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10),
        )


METRICS = web.AppKey("metrics", Metrics)


class DataCollector(Collector):
    """Gauges read from the state at scrape time: cheap fields, nothing scanned."""

    def __init__(self, app: web.Application) -> None:
        self.app = app

    def collect(self) -> Iterator[Metric]:
        state, now = self.app[STATE], time.time()
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
        yield from self._watching()

    def _watching(self) -> Iterator[Metric]:
        refresher, watcher = self.app.get(REFRESHER), self.app.get(WATCHER)
        rejected = CounterMetricFamily(
            "crawldash_files_rejected", "Crawler file versions rejected, by kind.", labels=["kind"]
        )
        for kind, count in refresher.rejected.counts.items() if refresher else ():
            rejected.add_metric([kind], count)
        yield rejected
        yield CounterMetricFamily(
            "crawldash_watcher_restarts",
            "Times the watcher restarted.",
            value=watcher.restarts if watcher else 0,
        )
        yield gauge("watcher_up", "1 while the watcher runs.", int(bool(watcher and watcher.alive)))


def gauge(name: str, documentation: str, value: float | None) -> GaugeMetricFamily:
    family = GaugeMetricFamily(f"crawldash_{name}", documentation)
    if value is not None:
        family.add_metric([], value)
    return family


@web.middleware
async def observe_requests(request: web.Request, handler: Handler) -> web.StreamResponse:
    started = time.perf_counter()
    response = await handler(request)
    resource = request.match_info.route.resource
    route = resource.canonical if resource is not None else "other"
    route = "other" if "{" in route else route
    request.app[METRICS].requests.record(route, response.status, time.perf_counter() - started)
    return response


async def metrics_view(request: web.Request) -> web.Response:
    body = generate_latest(request.app[METRICS].registry)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})
