"""The live check's side of ``/metrics``: checks answered by outcome (and whether the
answer was a repeat of a check made within the minute), and requests refused by cause,
each outcome and cause from the start at 0 (one that first appeared at 1 would read to
Prometheus as no increase)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ..checknode.checker import OUTCOMES, REFUSAL_CAUSES
from .gauges import WatchedNetwork

# (outcome, cached): an address of no network the check reaches is never checked, so
# never answered from a check of the minute before.
OUTCOME_CELLS = tuple(
    (outcome, cached)
    for outcome in OUTCOMES
    for cached in ((False,) if outcome == "not_checkable" else (False, True))
)


class LiveCheckCollector(Collector):
    """The counts of each network whose live check is on (no series for the others)."""

    def __init__(self, networks: Sequence[WatchedNetwork]) -> None:
        self.networks = networks

    def collect(self) -> Iterator[Metric]:
        checks = CounterMetricFamily(
            "crawldash_live_checks",
            "Live checks (POST /api/v1/checknode/) answered, by network, outcome (success "
            "or the reason) and whether the answer repeated a check of the last minute.",
            labels=["network", "outcome", "cached"],
        )
        refusals = CounterMetricFamily(
            "crawldash_live_check_refusals",
            "Live checks refused, by network and cause (rate_limited, busy, host_name, "
            "loopback, private, ... invalid).",
            labels=["network", "cause"],
        )
        in_flight = GaugeMetricFamily(
            "crawldash_live_checks_in_flight", "Live checks under way.", labels=["network"]
        )
        for network in self.networks:
            live = network.live_check
            if live is None:
                continue
            outcomes = {**dict.fromkeys(OUTCOME_CELLS, 0), **live.outcomes}
            for (outcome, cached), count in sorted(outcomes.items()):
                checks.add_metric([network.name, outcome, str(cached).lower()], count)
            causes = {**dict.fromkeys(REFUSAL_CAUSES, 0), **live.refusals}
            for cause, count in sorted(causes.items()):
                refusals.add_metric([network.name, cause], count)
            in_flight.add_metric([network.name], live.in_flight.running)
        yield checks
        yield refusals
        yield in_flight
