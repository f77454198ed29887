"""Writing crawls into a served folder, as the crawler does, and timing until crawldash
serves them."""

from __future__ import annotations

import json
import statistics
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import msgspec

from bench.data import write_crawl
from bench.servers import get, status, wait_served, wait_whole

SETTLE = 0.3  # seconds left after a crawl is served before the next is written


@dataclass(frozen=True)
class Delays:
    """Seconds from each write to the crawl being served; those not served within
    ``limit`` count as ``limit``."""

    seconds: tuple[float, ...]
    late: int
    limit: float

    @property
    def median(self) -> float:
        return float(statistics.median(self.seconds))

    @property
    def worst(self) -> float:
        return max(self.seconds)

    def note(self) -> str:
        if not self.late:
            return ""
        tries, limit = len(self.seconds), f"{self.limit:.0f} s"
        return f"{self.late} of {tries} not served within {limit}, counted as {limit}"


def written_to_served(
    base: str, folder: Path, crawls: list[tuple[int, bytes]], limit: float
) -> Delays:
    """Each crawl written in turn, once the one before is served whole, as a crawl 10
    minutes after the one before finds crawldash (or ``limit`` passed), and SETTLE more."""
    seconds, late = [], 0
    for timestamp, body in crawls:
        write_crawl(folder, timestamp, body)
        served = wait_served(base, timestamp, time.monotonic(), limit)
        late += served is None
        seconds.append(limit if served is None else served)
        wait_whole(base, timestamp, limit)
        time.sleep(SETTLE)
    return Delays(tuple(seconds), late, limit)


def keep_writing(folder: Path, crawls: list[tuple[int, bytes]], stop: threading.Event) -> None:
    """One crawl a second until ``stop``, or until all are written."""
    for timestamp, body in crawls:
        if stop.wait(1.0):
            return
        write_crawl(folder, timestamp, body)


def keep_looking(base: str, served: set[int], stop: threading.Event) -> None:
    """The snapshot timestamps /api/status names, every 0.1 s, until ``stop``."""
    while not stop.wait(0.1):
        timestamp = status(base).snapshot_timestamp
        if timestamp is not None:
            served.add(timestamp)


class _Where(msgspec.Struct, array_like=True, forbid_unknown_fields=False):
    """An export row's address and port, the rest left undecoded."""

    host: str
    port: int


def steady_node(base: str, crawls: list[tuple[int, bytes]]) -> str:
    """An address of the crawl served that every crawl of ``crawls`` holds too: the answers
    about one node (check, presence, v1's node) then name each crawl written. A node that
    left a crawl would never name it (a varied history's crawls each hold 85-99% of the
    nodes), and its endpoints would wait out the run's limit."""
    served = json.loads(get(base + "/api/snapshot")[1])["nodes"]
    held = set(served)
    for _, body in crawls:  # IPv6 hosts left out: the snapshot spells them canonically
        held &= {f"{row.host}:{row.port}" for row in _rows.decode(body) if ":" not in row.host}
    steady = [address for address in served if address in held]
    if not steady:
        raise RuntimeError("no node of the crawl served is in every crawl to be written")
    return str(steady[0])


_rows = msgspec.json.Decoder(list[_Where])
