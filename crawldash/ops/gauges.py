"""The data's side of ``/metrics``: what each network's crawls, crawler, watched nodes and
archive look like, read from its state at scrape time (cheap fields, nothing scanned).
Every series carries the ``network`` it describes. What came of watching its folder (the
files rejected, the watcher, the refreshes, the index saves) is ``watching.py``'s."""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ..archive.view import ArchiveView
from ..checknode.checker import LiveCheck
from ..crawl.address import NETWORKS
from ..live.refreshing.rejections import Rejections
from ..live.state import State
from .health import IndexHealth, Liveness

REFRESH_BUCKETS = (0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)


@dataclass
class Durations:
    """A histogram kept as plain numbers: requests per bucket (the last is +Inf), and
    their sum."""

    bounds: tuple[float, ...]
    counts: list[int] = field(init=False)
    total: float = 0.0

    def __post_init__(self) -> None:
        self.counts = [0] * (len(self.bounds) + 1)

    def observe(self, seconds: float) -> None:
        self.counts[bisect_left(self.bounds, seconds)] += 1
        self.total += seconds

    def cumulative(self) -> list[tuple[str, float]]:
        running, pairs = 0, []
        for bound, count in zip([*map(str, self.bounds), "+Inf"], self.counts, strict=True):
            running += count
            pairs.append((bound, float(running)))
        return pairs


@dataclass
class WatchedNetwork:
    """What ``/metrics`` reads of one network."""

    name: str
    state: State
    rejected: Rejections
    watcher: Liveness
    indexes: Sequence[IndexHealth]
    refreshes: Durations = field(default_factory=lambda: Durations(REFRESH_BUCKETS))
    watches: tuple[str, ...] = ()  # canonical addresses, --watch
    live_check: LiveCheck | None = None  # counted by ops/check_metrics.py
    archive: ArchiveView | None = None  # the Parquet archive, with --archive-dir


class Families:
    """Metric families by name, each gathering one sample per network."""

    def __init__(self) -> None:
        self.by_name: dict[str, Metric] = {}

    def gauge(
        self, name: str, documentation: str, network: str, value: float | None, **labels: str
    ) -> None:
        family = self._family(GaugeMetricFamily, name, documentation, labels)
        if value is not None:
            family.add_metric([network, *labels.values()], value)  # type: ignore[attr-defined]

    def counter(
        self, name: str, documentation: str, network: str, value: float, **labels: str
    ) -> None:
        family = self._family(CounterMetricFamily, name, documentation, labels)
        family.add_metric([network, *labels.values()], value)  # type: ignore[attr-defined]

    def _family(
        self, kind: type[Metric], name: str, documentation: str, labels: dict[str, str]
    ) -> Metric:
        full = f"crawldash_{name}"
        family = self.by_name.get(full)
        if family is None:
            made = kind(full, documentation, labels=["network", *labels])  # type: ignore[call-arg]
            family = self.by_name[full] = made
        return family


class DataCollector(Collector):
    """Each network's gauges and counters, in one family per name."""

    def __init__(self, networks: Sequence[WatchedNetwork]) -> None:
        self.networks = networks

    def collect(self) -> Iterator[Metric]:
        families, now = Families(), time.time()
        for network in self.networks:
            _describe_data(families, network.name, network.state, now)
            _describe_watches(families, network)
            if network.archive is not None:
                _describe_archive(families, network.name, network.archive)
        yield from families.by_name.values()


def _describe_archive(families: Families, name: str, archive: ArchiveView) -> None:
    """The Parquet archive as last looked at (every few seconds, off the loop)."""
    contents, outcome = archive.contents, archive.outcome
    families.gauge("archive_bytes", "Bytes of the archive's files.", name, contents.bytes)
    families.gauge("archive_crawls", "Crawls in the archive.", name, len(contents.files))
    families.gauge(
        "archive_newest_crawl_timestamp_seconds",
        "Time of the newest crawl in the archive.",
        name,
        contents.newest,
    )
    families.gauge(
        "archive_failing",
        "1 while archiving fails (the reason is logged once); it is tried with each crawl.",
        name,
        int(outcome.failing > 0),
    )
    families.counter("archive_failures", "Archive writes that failed.", name, outcome.failures)


def _describe_watches(families: Families, network: WatchedNetwork) -> None:
    """Each watched node: 1 while it is in the newest export, else 0, with the reason."""
    documentation = "A watched node (--watch): 1 if in the newest export, else 0; reason says why."
    families.gauge("node_up", documentation, network.name, None, address="", reason="")
    state = network.state
    for address in network.watches:
        reason = state.checks.reason(state.snapshot, address)
        up = 1.0 if reason.code == "up" else 0.0
        families.gauge(
            "node_up", documentation, network.name, up, address=address, reason=reason.code
        )


def _describe_data(families: Families, name: str, state: State, now: float) -> None:
    snapshot, status = state.snapshot, state.status
    gauge = families.gauge
    gauge(
        "snapshot_timestamp_seconds",
        "Time of the latest crawl served.",
        name,
        snapshot.timestamp if snapshot else None,
    )
    gauge(
        "snapshot_age_seconds",
        "Age of the latest crawl served.",
        name,
        now - snapshot.timestamp if snapshot else None,
    )
    gauge(
        "snapshot_nodes",
        "Reachable nodes in the latest crawl.",
        name,
        snapshot.total_nodes if snapshot else None,
    )
    for address_type, count in zip(NETWORKS, snapshot.networks if snapshot else (), strict=False):
        gauge(
            "snapshot_nodes_by_address_type",
            "Reachable nodes in the latest crawl, by address type (ipv4, ipv6, onion...).",
            name,
            count,
            address_type=address_type,
        )
    gauge(
        "consensus_height",
        "Most common height in the latest crawl.",
        name,
        snapshot.latest_height if snapshot else None,
    )
    crawler_state = status.state if status else "unknown"
    gauge("crawler_state", "1 for the state the status file reports.", name, 1, state=crawler_state)
    gauge(
        "crawler_queue_size",
        "Nodes waiting in the crawler's queue.",
        name,
        status.queue_size if status else None,
    )
    gauge(
        "crawler_last_elapsed_seconds",
        "Duration of the crawler's last crawl.",
        name,
        status.last_elapsed if status else None,
    )
    gauge("history_points", "Crawls held in the history.", name, len(state.history))
    gauge(
        "stale",
        "1 when the latest crawl is older than the stale threshold.",
        name,
        int(state.is_stale(now)),
    )
    gauge(
        "stale_after_seconds", "The stale threshold in force.", name, state.effective_stale_after()
    )
    gauge("stuck", "1 when the crawler looks stuck.", name, int(state.is_stuck(now)))
    gauge(
        "loader_degraded",
        "1 while new crawls cannot be loaded (the loader hangs or dies; see /healthz).",
        name,
        int(state.loader_trouble is not None),
    )
    gauge(
        "data_dir_missing",
        "1 while the data folder cannot be listed.",
        name,
        int(state.data_dir_problem is not None),
    )


class BreakdownCollector(Collector):
    """``--metrics-breakdowns``: each network's latest crawl by country and by user agent."""

    def __init__(self, networks: Sequence[WatchedNetwork]) -> None:
        self.networks = networks

    def collect(self) -> Iterator[Metric]:
        families = Families()
        for by in ("country", "user_agent"):
            documentation = f"Reachable nodes in the latest crawl, by {by.replace('_', ' ')}."
            families.gauge(f"snapshot_nodes_by_{by}", documentation, "", None, **{by: ""})
            for network in self.networks:
                snapshot = network.state.snapshot
                for value, count in snapshot.breakdowns[by].counted if snapshot else ():
                    label = "" if value is None else str(value)
                    families.gauge(
                        f"snapshot_nodes_by_{by}", documentation, network.name, count, **{by: label}
                    )
        yield from families.by_name.values()
