"""bitnodes' Peer Index (PIX), the formula its leaderboard published, as pure functions.

PIX = ((VI + SI + HI + AI + PI + DLI + DUI + WLI + WUI + MLI + MUI + NSI + NI + BI) / 14) x 10,
each index between 0.0 and 1.0, so PIX between 0.0 and 10.0:

- VI, SI: 1 / r, r the rank of the node's protocol version (services) in the crawl, the
  most common ranked 1; SI is 0.0 without NODE_NETWORK (bit 0);
- HI: h / H, the node's height over the consensus height;
- AI: ln(N / n) / ln(N), N the crawl's reachable nodes, n those of them in the node's ASN;
- PI: 1.0 on the network's usual port, 0.0 on another;
- DLI, WLI, MLI: the mean round-trip time over a day, a week and 30 days, in tiers of
  100 ms: 1.0 up to 300 ms, 0.1 less for each 100 ms begun above it, 0.0 above 1,200 ms;
- DUI, WUI, MUI: t / T, the ticks of a day, a week and 30 days the node answered in, over
  the ticks;
- NSI (network speed), NI (addresses the node returns) and BI (whether it returns a block
  asked for): measures of bitnodes.io's own that no crawler's file or Redis holds.

What crawldash gives each index, and from which data, is in docs/api.md ("The leaderboard").
An index whose input is missing is 0.0, as bitnodes.io gave a node it had not measured:
never a value made up. ``window_means`` reads the DLI, WLI and MLI inputs from the
bridge's kept latency cells; the rest knows nothing of where its inputs come from.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import msgspec

from .propagation import BUCKET_UNITS, BUCKETS_SHOWN

INDEXES = (
    "vi",
    "si",
    "hi",
    "ai",
    "pi",
    "dli",
    "dui",
    "wli",
    "wui",
    "mli",
    "mui",
    "nsi",
    "ni",
    "bi",
)
NOT_MEASURED = ("nsi", "ni", "bi")  # bitnodes.io's own measures: always 0.0 here
NODE_NETWORK = 1  # service bit 0
BEST_LATENCY, LATENCY_STEP = 300, 100  # ms: the first tier's bound, and each tier's width
WINDOWS = (144, 1008, 4320)  # ticks: a day, a week, 30 days of 10-minute crawls
DECIMALS = 4  # bitnodes.io's: "0.9907", "9.2082"
K = TypeVar("K", bound=Hashable)
_encoder = msgspec.json.Encoder()
Means = tuple[float | None, float | None, float | None]  # ms: a day, a week, 30 days


@dataclass(frozen=True)
class Inputs:
    """What PIX is made of for one node (None where crawldash does not know it)."""

    version: int | None
    services: int
    height: int
    asn: str | None
    port: int
    latency: tuple[float | None, float | None, float | None]  # mean ms: day, week, 30 days
    uptime: tuple[tuple[int, int], tuple[int, int], tuple[int, int]]  # (t, T) of each


@dataclass(frozen=True)
class CrawlFigures:
    """What every node's indexes are measured against: the crawl's ranks and counts."""

    version_ranks: dict[int, int]
    services_ranks: dict[int, int]
    consensus: int  # height
    asns: Counter[str]  # nodes per ASN
    reachable: int  # N
    port: int  # the network's usual port

    @classmethod
    def of(
        cls,
        versions: Iterable[int | None],
        services: Iterable[int],
        asns: Iterable[str | None],
        ports: Iterable[int],
        consensus: int,
    ) -> CrawlFigures:
        """The figures of a crawl, from every reachable node's values (each node once)."""
        counted = Counter(a for a in asns if a is not None)
        port_counts = Counter(ports)
        reachable = sum(port_counts.values())
        return cls(
            ranks(Counter(v for v in versions if v is not None)),
            ranks(Counter(services)),
            consensus,
            counted,
            reachable,
            usual(port_counts),
        )


def ranks(counts: Counter[K]) -> dict[K, int]:
    """Each value's rank by how many have it, the most common 1; values with as many share
    a rank (dense: 1, 1, 2), so that the order of a tie changes no index."""
    ranked: dict[K, int] = {}
    rank, before = 0, None
    for value, count in sorted(counts.items(), key=lambda item: -item[1]):
        if count != before:
            rank, before = rank + 1, count
        ranked[value] = rank
    return ranked


def usual(ports: Counter[int]) -> int:
    """The port most nodes listen on (the lower on a tie): 8333 on mainnet, where the
    crawl does not name its network's default."""
    if not ports:
        return 0
    return min(ports.items(), key=lambda item: (-item[1], item[0]))[0]


def latency_index(mean_ms: float | None) -> float:
    """DLI, WLI or MLI of a mean round-trip time; 0.0 where no time was kept."""
    if mean_ms is None:
        return 0.0
    if mean_ms <= BEST_LATENCY:
        return 1.0
    tiers = math.ceil((mean_ms - BEST_LATENCY) / LATENCY_STEP)
    return max(0, 10 - tiers) / 10


def share(ticks: tuple[int, int]) -> float:
    """t / T; 0.0 for no tick."""
    answered, total = ticks
    return answered / total if total > 0 else 0.0


def asn_index(asn: str | None, figures: CrawlFigures) -> float:
    """AI: ln(N / n) / ln(N); 0.0 for a node without an ASN, or a crawl of one node."""
    n, big_n = figures.asns.get(asn, 0) if asn is not None else 0, figures.reachable
    if n == 0 or big_n <= 1:
        return 0.0
    return math.log(big_n / n) / math.log(big_n)


def indexes(node: Inputs, figures: CrawlFigures) -> tuple[float, ...]:
    """The node's 14 indexes, in INDEXES order."""
    version_rank = figures.version_ranks.get(node.version) if node.version is not None else None
    services_rank = figures.services_ranks.get(node.services)
    consensus = figures.consensus
    day, week, month = node.latency
    up_day, up_week, up_month = node.uptime
    return (
        1 / version_rank if version_rank else 0.0,
        1 / services_rank if services_rank and node.services & NODE_NETWORK else 0.0,
        min(1.0, max(0, node.height) / consensus) if consensus > 0 else 0.0,
        asn_index(node.asn, figures),
        1.0 if node.port == figures.port else 0.0,
        latency_index(day),
        share(up_day),
        latency_index(week),
        share(up_week),
        latency_index(month),
        share(up_month),
        0.0,  # NSI
        0.0,  # NI
        0.0,  # BI
    )


def peer_index(values: Sequence[float]) -> float:
    """PIX of the 14 indexes (each as shown, to DECIMALS places)."""
    return sum(round(v, DECIMALS) for v in values) / len(INDEXES) * 10


def window_means(packed: bytes, as_of: int) -> Means:
    """A node's mean round-trip time over each span /latency/'s views cover (its daily,
    weekly and monthly), every time kept weighing the same: the sums of the kept cells'
    times over the sums of their counts; None for a span without a time. Sums over slices
    of the cells (sorted by bucket), in C: a crawl has thousands of nodes to work out."""
    values = array("i")
    values.frombytes(packed)
    buckets, counts, totals = values[0::3], values[1::3], values[2::3]
    found: list[float | None] = []
    for view, units in BUCKET_UNITS.items():
        last = as_of - as_of % units
        first = last - (BUCKETS_SHOWN[view] - 1) * units
        low, high = bisect_left(buckets, first), bisect_right(buckets, last + units - 1)
        count = sum(counts[low:high])
        found.append(sum(totals[low:high]) / count if count > 0 else None)
    return found[0], found[1], found[2]


def row_json(
    address: str,
    values: Sequence[float],
    pix: float,
    rank: int,
    user_agent: str | None,
    country: str | None,
) -> bytes:
    """A row as bitnodes.io's API gives it: each index and PIX as text of 4 decimals, the
    rank; and crawldash's additions, the user agent and country the crawl gives."""
    node, agent, where = (_encoder.encode(text).decode() for text in (address, user_agent, country))
    return _ROW.format(node, *values, pix, rank, agent, where).encode()


# A row's JSON, made per node of every crawl: one format string rather than a dict encoded.
_ROW = (
    '{{"node":{},'
    + ",".join(f'"{name}":"{{:.{DECIMALS}f}}"' for name in INDEXES)
    + f',"peer_index":"{{:.{DECIMALS}f}}","rank":{{}},"user_agent":{{}},"country":{{}}}}}}'
)
