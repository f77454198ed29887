"""What a scenario returns: typed rows. Only bench.report turns them into text."""

from __future__ import annotations

import enum
import statistics
from dataclasses import dataclass

from bench.load import Sample


class Server(enum.Enum):
    CRAWLDASH = "crawldash"
    NAIVE = "naive"
    NGINX = "nginx, default access log"
    NGINX_OFF = "nginx, access_log off"


class Section(enum.Enum):
    """The measure tables, in the order BENCHMARKS.md shows them."""

    SWITCH = (
        "One switch: a new 15,000-node crawl written -> answered about on each endpoint, "
        "and polls while crawls load, beside alt-bitnodes in the same run (with targets)"
    )
    FRESHNESS = "Freshness, start-up and memory"
    PRESENCE = "Presence at full size (`python -m bench.studies.presence`, in its own process)"
    TARGETS = "Every core busy, and a cold history of real-size crawls (with targets)"
    PEER = "Beside alt-bitnodes (the same files and Redis; one uvicorn worker, as its service runs)"


class Unit(enum.Enum):
    S = "s"
    MS = "ms"
    MIB = "MiB"
    MB = "MB"
    RATIO = "x"


class Shape(enum.Enum):
    """How a measure's values read: ``7.30 s``; ``448 ms / 560 ms`` (e.g. median / worst);
    ``0.51 s [0.50-0.56]`` (median [min-max]); ``1.86 ms / 3.54 ms (x1.90; details)``
    (before / after, and their ratio)."""

    ONE = "one"
    SLASHED = "slashed"
    SPREAD = "spread"
    VERSUS = "versus"


@dataclass(frozen=True)
class Requests:
    """wrk runs against one endpoint of one server."""

    endpoint: str  # e.g. "check hit"
    server: Server
    samples: tuple[Sample, ...]
    # aiohttp's ceiling, run for run alternately with ``samples``; none for rows measured
    # alone (the snapshot's, and every server but crawldash)
    ceiling: tuple[Sample, ...] = ()
    access_log: bool = False  # crawldash with --access-log
    floor: float | None = None  # the target: the least to_ceiling() to reach

    def to_ceiling(self) -> float:
        """The median of the ratios of req/s of each run to the ceiling's run after it;
        NaN for a row measured alone."""
        if not self.ceiling:
            return float("nan")
        pairs = zip(self.samples, self.ceiling, strict=True)
        return float(
            statistics.median(ours.rps / (theirs.rps or float("nan")) for ours, theirs in pairs)
        )

    @property
    def met(self) -> bool | None:
        """Whether to_ceiling() reaches the floor; None without a target."""
        return None if self.floor is None else self.to_ceiling() >= self.floor


@dataclass(frozen=True)
class Workers:
    """The status endpoint, crawldash started with ``--workers``."""

    workers: int
    cores: str
    samples: tuple[Sample, ...]


@dataclass(frozen=True)
class Measure:
    """One measured quantity (or a few of one kind, read together by ``shape``)."""

    section: Section
    name: str
    values: tuple[float, ...]  # in ``unit``: one, or e.g. median and worst
    unit: Unit
    digits: int = 2  # decimals shown
    shape: Shape = Shape.ONE
    limits: tuple[float | None, ...] = ()  # the target: upper limits on ``values``, in order
    details: str = ""

    @property
    def value(self) -> float:
        return self.values[0]

    @property
    def met(self) -> bool | None:
        """Whether every value is within its limit; None without a target."""
        if not self.limits:
            return None
        pairs = zip(self.values, self.limits, strict=False)
        return all(limit is None or value <= limit for value, limit in pairs)


@dataclass(frozen=True)
class Versus:
    """One thing both crawldash and a peer answer, each on its own route, measured on each
    in turn (the target: crawldash ahead)."""

    what: str  # e.g. "one node"
    ours: str  # crawldash's request, e.g. "/api/v1/nodes/<node>/"
    theirs: str  # the peer's
    crawldash: tuple[Sample, ...]
    peer: tuple[Sample, ...]

    def ratio(self) -> float:
        """crawldash's median req/s over the peer's."""
        theirs = statistics.median(s.rps for s in self.peer)
        return float(statistics.median(s.rps for s in self.crawldash) / (theirs or float("nan")))

    @property
    def met(self) -> bool:
        return self.ratio() > 1.0


@dataclass(frozen=True)
class Note:
    """A line said about the run, such as a server missing."""

    text: str


Row = Requests | Workers | Measure | Versus | Note


def fact(name: str, value: float, unit: Unit, digits: int = 2) -> Measure:
    """A measure of the Freshness, start-up and memory table."""
    return Measure(Section.FRESHNESS, name, (value,), unit, digits)
