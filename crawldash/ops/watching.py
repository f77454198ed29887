"""The watching side of ``/metrics``: what came of watching each network's folder, the
crawler files rejected (by kind), the watcher, the refreshes and the index saves.

Every kind of rejection is there from the start, at 0. Prometheus reads a counter that
first appears at 1 as no increase (``increase()`` needs a sample before the change), so a
kind that first appeared with its first file would raise no alert for that file: the
shipped ``CrawlFilesRejected`` would wait for the second."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from prometheus_client.core import HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from .gauges import Families, WatchedNetwork

# Every kind a crawler file version is rejected as (``LoadError.kind``): each one's reason
# is in docs/operating.md's Metrics table, and tests/test_first_rejection.py keeps this list
# whole against the code that raises them.
REJECTION_KINDS = (
    "empty",
    "too_large",
    "not_json",
    "decode",
    "no_usable_rows",
    "not_a_file",
    "unreadable",
    "future",
    "misnamed",
    "loader_died",
    "timeout",
    "unprepared",
)


class WatchingCollector(Collector):
    """Each network's rejections, watcher, refreshes and index saves."""

    def __init__(self, networks: Sequence[WatchedNetwork]) -> None:
        self.networks = networks

    def collect(self) -> Iterator[Metric]:
        families = Families()
        refreshes = HistogramMetricFamily(
            "crawldash_refresh_duration_seconds",
            "Time to bring the state up to date.",
            labels=["network"],
        )
        for network in self.networks:
            _describe_watching(families, network)
            refreshes.add_metric(
                [network.name], network.refreshes.cumulative(), network.refreshes.total
            )
        yield from families.by_name.values()
        yield refreshes


def _describe_watching(families: Families, network: WatchedNetwork) -> None:
    name, watcher = network.name, network.watcher
    counts = {**dict.fromkeys(REJECTION_KINDS, 0), **network.rejected.counts}
    for kind, count in counts.items():
        families.counter(
            "files_rejected", "Crawler file versions rejected, by kind.", name, count, kind=kind
        )
    families.counter("watcher_restarts", "Times the watcher restarted.", name, watcher.restarts)
    families.gauge("watcher_up", "1 while the watcher runs.", name, int(watcher.alive))
    families.gauge(
        "watcher_watching",
        "1 once the watcher sees changes to the data folder as they happen.",
        name,
        int(watcher.watching),
    )
    for index in network.indexes:
        families.gauge(
            "index_saved_timestamp_seconds",
            "When each index was last written.",
            name,
            index.saved_at,
            index=index.name,
        )
        families.counter(
            "index_save_failures",
            "Saves of each index that failed.",
            name,
            index.failures,
            index=index.name,
        )
        families.gauge(
            "index_save_failing",
            "1 while the latest save of each index failed (it is retried with back-off).",
            name,
            int(index.error is not None),
            index=index.name,
        )
        if index.name == "history":  # also under its older names, which alert rules may use
            families.gauge(
                "history_index_saved_timestamp_seconds",
                "When the history index was last written.",
                name,
                index.saved_at,
            )
            families.counter(
                "history_index_save_failures",
                "Saves of the history index that failed.",
                name,
                index.failures,
            )
