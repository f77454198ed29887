"""Prometheus metrics: how requests go (counted here), what each network's data looks
like (``gauges.py``) and what came of watching its folder (``watching.py``).
``/metrics`` shows every network; ``/n/NAME/metrics`` only NAME's."""

from __future__ import annotations

import itertools
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence

from aiohttp import web
from aiohttp.web_urldispatcher import AbstractResource, UrlMappingMatchInfo
from prometheus_client import CollectorRegistry, Info, generate_latest
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

from .. import __version__
from ..web.links import NETWORK_PATH, network_prefix
from ..web.responses import plain
from .check_metrics import LiveCheckCollector
from .gauges import BreakdownCollector, DataCollector, WatchedNetwork
from .watching import WatchingCollector

LATENCY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25, 1.0)
OTHER = "other"  # the route label of a request to no route (a 404)


class RequestStats:
    """Request counts and latency histograms kept as plain numbers; ``RequestSeries`` turns
    them into Prometheus series at scrape time. Requests are labelled by the route that
    answered them, as it was declared (``/api/v1/inv/{inv_hash}/``), a network's prefix
    (``/n/NAME``) taken off into the ``network`` label; a request no route answered (a 404)
    is ``other``, of no network.

    An answered request is only noted in ``answered``; ``fold`` counts the noted ones, once
    FOLD_AT are noted and before every scrape. Counting them together keeps the request
    path to one append and runs the counting while its tables are warm."""

    FOLD_AT = 256

    def __init__(self, first_network: str = "main") -> None:
        self.first_network = first_network  # the one the unprefixed routes serve
        self.routes: frozenset[str] = frozenset()  # routes counted under their own label
        # (the match of the request's route, or None if none matched, status, seconds)
        self.answered: list[tuple[UrlMappingMatchInfo | None, int, float]] = []
        # (label, status) -> [requests per latency bucket (the last is +Inf)..., seconds]
        self.cells: dict[tuple[str, int], list[float]] = {}
        # (resource, status) -> its label's cell: the catch-alls' and None's are other's.
        # Keyed by resource, which lives as long as the app, not by route: aiohttp makes a
        # new route for each request it answers 404 itself (``OPTIONS *``).
        self._cell_of: dict[tuple[AbstractResource | None, int], list[float]] = {}

    def label_routes(self, routes: Iterable[str]) -> None:
        self.routes = frozenset(routes)

    def fold(self) -> None:
        """Count the requests noted in ``answered`` since the last fold."""
        cell_of = self._cell_of
        for match, status, seconds in self.answered:
            resource = None if match is None else match.route.resource
            cell = cell_of.get((resource, status)) or self._cell(resource, status)
            cell[bisect_left(LATENCY_BUCKETS, seconds)] += 1
            cell[-1] += seconds
        self.answered.clear()

    def _cell(self, resource: AbstractResource | None, status: int) -> list[float]:
        declared = None if resource is None else resource.canonical
        label = declared if declared in self.routes else OTHER
        cell = self.cells.get((label, status))
        if cell is None:
            cell = self.cells[label, status] = [0.0] * (len(LATENCY_BUCKETS) + 2)
        self._cell_of[resource, status] = cell
        return cell

    def network_of(self, path: str) -> tuple[str, str]:
        """(network, route) of a counted path."""
        if path == OTHER:
            return "", OTHER
        prefix = network_prefix(path)
        if prefix:
            return prefix.removeprefix(NETWORK_PATH), path.removeprefix(prefix)
        return self.first_network, path


class RequestSeries(Collector):
    """The request counts of some networks (None: all), as Prometheus series."""

    def __init__(self, stats: RequestStats, networks: frozenset[str] | None = None) -> None:
        self.stats = stats
        self.networks = networks

    def collect(self) -> Iterator[Metric]:
        self.stats.fold()
        size = len(LATENCY_BUCKETS) + 2
        buckets: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0] * size)
        requests = CounterMetricFamily(
            "crawldash_http_requests",
            "HTTP requests answered, by network, route and status.",
            labels=["network", "route", "status"],
        )
        for (path, status), cell in sorted(self.stats.cells.items()):
            network, route = self.stats.network_of(path)
            if self.networks is not None and network not in self.networks:
                continue
            requests.add_metric([network, route, str(status)], int(sum(cell[:-1])))
            key = network, route
            buckets[key] = [a + b for a, b in zip(buckets[key], cell, strict=True)]
        yield requests
        latency = HistogramMetricFamily(
            "crawldash_http_request_duration_seconds",
            "Time to answer a request, by network and route.",
            labels=["network", "route"],
        )
        bounds = [*map(str, LATENCY_BUCKETS), "+Inf"]
        for (network, route), cell in sorted(buckets.items()):
            cumulative = list(zip(bounds, itertools.accumulate(cell[:-1]), strict=True))
            latency.add_metric([network, route], cumulative, cell[-1])
        yield latency


class Metrics:
    """``/metrics`` of some networks: a registry of their own, so that views never
    share series."""

    def __init__(
        self,
        networks: Sequence[WatchedNetwork],
        requests: RequestSeries,
        breakdowns: bool = False,
    ) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        build = Info("crawldash_build", "The running crawldash's version.", registry=self.registry)
        build.info({"version": __version__})
        self.registry.register(DataCollector(networks))
        self.registry.register(WatchingCollector(networks))
        self.registry.register(LiveCheckCollector(networks))
        if breakdowns:
            self.registry.register(BreakdownCollector(networks))
        self.registry.register(requests)

    async def handle(self, request: web.Request) -> web.Response:
        """``GET /metrics``: the Prometheus text format."""
        return plain(generate_latest(self.registry), CONTENT_TYPE_LATEST)
